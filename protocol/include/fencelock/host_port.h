// Network addresses as fencelock writes them everywhere — lock nodes, the token master, the listen
// address, the SDK's endpoints: "HOST:PORT" or "[IPV6]:PORT". One parser for all of them.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fencelock/basic_result.h"

namespace fencelock {

struct HostPort {
  std::string host;  // a numeric IPv4 or IPv6 address (no brackets)
  std::uint16_t port = 0;

  std::string to_string() const;  // "127.0.0.1:6379", "[::1]:6379"
};

// Parses "HOST:PORT" or "[IPV6]:PORT". "localhost" becomes 127.0.0.1; other host names are
// refused (resolving them would block an event loop). Returns the address, or what is wrong with
// `text` ("port must be 1..65535"); the caller names the text.
BasicResult<HostPort, std::string> parse_host_port(std::string_view text);

}  // namespace fencelock
