#include "fencelock/host_port.h"

#include <arpa/inet.h>

#include <charconv>

namespace fencelock {

namespace {

bool is_numeric_host(const std::string& host) {
  unsigned char scratch[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), scratch) == 1 ||
         ::inet_pton(AF_INET6, host.c_str(), scratch) == 1;
}

}  // namespace

std::string HostPort::to_string() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

BasicResult<HostPort, std::string> parse_host_port(std::string_view text) {
  std::string_view host;
  std::string_view port_text;
  if (text.starts_with('[')) {
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
  std::string host_string(host == "localhost" ? std::string_view("127.0.0.1") : host);
  if (!is_numeric_host(host_string))
    return std::string("host must be a numeric IP address or localhost");
  return HostPort{std::move(host_string), static_cast<std::uint16_t>(port)};
}

}  // namespace fencelock
