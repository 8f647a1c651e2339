#include "fencelock/storage/engine_options.h"

#include <arpa/inet.h>

#include <charconv>

#include "fencelock/storage/lease_timing.h"

namespace fencelock::storage {

namespace {

using std::chrono::milliseconds;

Error invalid(std::string message) { return make_error(ErrorCode::kInvalidArgument, std::move(message)); }

bool in_range(milliseconds value, milliseconds low, milliseconds high) {
  return value >= low && value <= high;
}

bool is_numeric_host(const std::string& host) {
  unsigned char scratch[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), scratch) == 1 || ::inet_pton(AF_INET6, host.c_str(), scratch) == 1;
}

std::string bound_message(const char* field, milliseconds low, milliseconds high) {
  return std::string(field) + " must be between " + std::to_string(low.count()) + " ms and " +
         std::to_string(high.count()) + " ms";
}

}  // namespace

std::string NodeAddress::to_string() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<NodeAddress> parse_node_address(std::string_view text) {
  std::string_view host;
  std::string_view port_text;
  if (text.starts_with('[')) {
    const std::size_t close = text.find("]:");
    if (close == std::string_view::npos) return invalid("node address '" + std::string(text) + "': expected [IPV6]:PORT");
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    const std::size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) return invalid("node address '" + std::string(text) + "': expected HOST:PORT");
    host = text.substr(0, colon);
    port_text = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos) {
      return invalid("node address '" + std::string(text) + "': write IPv6 addresses as [IPV6]:PORT");
    }
  }
  unsigned port = 0;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 || port > 65535) {
    return invalid("node address '" + std::string(text) + "': port must be 1..65535");
  }
  std::string host_string(host == "localhost" ? std::string_view("127.0.0.1") : host);
  if (!is_numeric_host(host_string)) {
    return invalid("node address '" + std::string(text) +
                   "': host must be a numeric IP address or localhost");
  }
  return NodeAddress{std::move(host_string), static_cast<std::uint16_t>(port)};
}

Status validate_engine_options(const EngineOptions& o) {
  if (o.nodes.empty() || o.nodes.size() > kMaxLockNodes) {
    return invalid("nodes: need 1 to " + std::to_string(kMaxLockNodes) + " Redis nodes, got " +
                   std::to_string(o.nodes.size()));
  }
  for (std::size_t i = 0; i < o.nodes.size(); ++i) {
    if (!is_numeric_host(o.nodes[i].host) || o.nodes[i].port == 0) {
      return invalid("nodes: '" + o.nodes[i].to_string() +
                     "' needs a numeric IP address and a port (names would block the event loop)");
    }
    for (std::size_t j = i + 1; j < o.nodes.size(); ++j) {
      if (o.nodes[i].host == o.nodes[j].host && o.nodes[i].port == o.nodes[j].port) {
        return invalid("nodes: " + o.nodes[i].to_string() + " is listed twice");
      }
    }
  }
  if (!in_range(o.node_timeout, milliseconds(1), milliseconds(10'000))) {
    return invalid(bound_message("node_timeout", milliseconds(1), milliseconds(10'000)));
  }
  if (!in_range(o.connect_timeout, milliseconds(1), milliseconds(60'000))) {
    return invalid(bound_message("connect_timeout", milliseconds(1), milliseconds(60'000)));
  }
  if (!in_range(o.reconnect_min, milliseconds(1), milliseconds(60'000)) ||
      !in_range(o.reconnect_max, o.reconnect_min, milliseconds(60'000))) {
    return invalid("reconnect_min/reconnect_max must satisfy 1 ms <= min <= max <= 60000 ms");
  }
  if (!(o.drift_factor >= 0.0 && o.drift_factor <= 0.5)) {
    return invalid("drift_factor must be between 0 and 0.5");
  }
  if (!in_range(o.retry_delay, milliseconds(0), milliseconds(60'000))) {
    return invalid(bound_message("retry_delay", milliseconds(0), milliseconds(60'000)));
  }
  if (!in_range(o.retry_jitter, milliseconds(0), milliseconds(60'000))) {
    return invalid(bound_message("retry_jitter", milliseconds(0), milliseconds(60'000)));
  }
  if (!in_range(o.min_ttl, milliseconds(1), milliseconds(86'400'000)) ||
      !in_range(o.max_ttl, o.min_ttl, milliseconds(86'400'000))) {
    return invalid("min_ttl/max_ttl must satisfy 1 ms <= min_ttl <= max_ttl <= 86400000 ms");
  }
  if (!in_range(o.max_wait, milliseconds(0), milliseconds(3'600'000))) {
    return invalid(bound_message("max_wait", milliseconds(0), milliseconds(3'600'000)));
  }
  if (o.key_prefix.size() > 64) return invalid("key_prefix must be at most 64 bytes");
  if (o.exclusive_tokens.size() > 128 || o.exclusive_tokens.find(' ') != std::string::npos) {
    return invalid("exclusive_tokens must be at most 128 bytes without spaces");
  }
  return Done{};
}

}  // namespace fencelock::storage
