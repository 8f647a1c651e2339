#include "fencelock/host_port.h"

#include <arpa/inet.h>

#include <algorithm>
#include <charconv>

namespace fencelock {

namespace {

constexpr std::string_view kHostProblem = "host must be an IP address or a DNS name";

bool is_numeric_host(const std::string& host) {
  unsigned char scratch[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), scratch) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), scratch) == 1;
}

bool is_label_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}

// RFC 1123 host name syntax. A last label of digits only is refused: getaddrinfo would read
// "127.1" or "10.1.2" as an IPv4 address (inet_aton's shorthand) instead of looking it up.
bool is_dns_name(std::string_view name) {
  if (name.ends_with('.')) name.remove_suffix(1);
  if (name.empty() || name.size() > 253 || name.ends_with('.')) return false;
  std::string_view last;
  while (!name.empty()) {
    const std::size_t dot = name.find('.');
    const std::string_view label = name.substr(0, dot);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-' ||
        !std::all_of(label.begin(), label.end(), is_label_char)) {
      return false;
    }
    last = label;
    name.remove_prefix(dot == std::string_view::npos ? name.size() : dot + 1);
  }
  return !std::all_of(last.begin(), last.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string lower_case(std::string_view text) {
  std::string lowered(text);
  for (char& c : lowered) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return lowered;
}

}  // namespace

std::string HostPort::to_string() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

bool HostPort::is_literal() const {
  return is_numeric_host(host);
}

std::string HostPort::tls_name() const {
  return host.ends_with('.') ? host.substr(0, host.size() - 1) : host;
}

bool HostPort::same_text(const HostPort& other) const {
  return port == other.port && tls_name() == other.tls_name();
}

BasicResult<HostPort, std::string> parse_address(std::string_view text) {
  std::string_view host;
  std::string_view port_text;
  const bool bracketed = text.starts_with('[');
  if (bracketed) {
    const std::size_t close = text.find("]:");
    if (close == std::string_view::npos) return std::string("expected [IPV6]:PORT");
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return std::string("expected HOST:PORT");
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos)
      return std::string("write IPv6 addresses as [IPV6]:PORT");
  }
  unsigned port = 0;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 ||
      port > 65535) {
    return std::string("port must be 1..65535");
  }
  HostPort address{std::string(host), static_cast<std::uint16_t>(port)};
  if (address.is_literal()) return address;
  if (bracketed || !is_dns_name(host)) return std::string(kHostProblem);
  address.host = lower_case(host);
  return address;
}

BasicResult<HostPort, std::string> parse_host_port(std::string_view text) {
  constexpr std::string_view kNumericOnly = "host must be a numeric IP address or localhost";
  auto parsed = parse_address(text);
  if (!parsed && parsed.error() != kHostProblem) return parsed;
  if (!parsed) return std::string(kNumericOnly);
  HostPort address = std::move(parsed).value();
  if (address.tls_name() == "localhost") address.host = "127.0.0.1";
  if (!address.is_literal()) return std::string(kNumericOnly);
  return address;
}

}  // namespace fencelock
