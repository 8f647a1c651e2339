// Network addresses as fencelock writes them everywhere — lock nodes, the token master, the listen
// address, the SDK's endpoints: "HOST:PORT" or "[IPV6]:PORT". Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fencelock/basic_result.h"

namespace fencelock {

struct HostPort {
  // The host as written: an IP literal (IPv6 without brackets) or a DNS name, lower-cased, a
  // trailing dot kept.
  std::string host;
  std::uint16_t port = 0;

  std::string to_string() const;  // "127.0.0.1:6379", "[::1]:6379", "redis-0.redis:6379"
  // True when `host` is a numeric IPv4 or IPv6 address: connecting needs no name resolution.
  bool is_literal() const;
  // The name a certificate must carry and SNI sends: `host` without a trailing dot.
  std::string tls_name() const;
  // Two addresses are the same text when their hosts match without a trailing dot and their
  // ports match ("Redis-0.:6379" and "redis-0:6379"). Different text may still reach one server.
  bool same_text(const HostPort& other) const;
};

// Parses "HOST:PORT" or "[IPV6]:PORT", HOST an IP address or a DNS name (RFC 1123: dot-separated
// labels of 1..63 letters, digits and '-', not starting or ending with '-', at most 253 bytes,
// an optional trailing dot; the last label not all digits). Names are lower-cased and kept as
// written — "localhost" too; resolving them is the caller's job. Returns the address, or what is
// wrong with `text` ("port must be 1..65535"); the caller names the text.
BasicResult<HostPort, std::string> parse_address(std::string_view text);

// The narrower form for callers that connect or bind without resolving a name: like
// parse_address(), but the host must be an IP address or "localhost", which becomes 127.0.0.1.
BasicResult<HostPort, std::string> parse_host_port(std::string_view text);

}  // namespace fencelock
