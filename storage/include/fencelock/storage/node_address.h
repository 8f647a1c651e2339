// Where a lock node or a token store is and how to log in to it: the vocabulary the Redis
// transport, the engine, the token sources and the service share (engine_options.h uses it).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "fencelock/host_port.h"
#include "fencelock/storage/result.h"

namespace fencelock::storage {

// A lock node's (or a token source's) address: an IP address or a DNS name, and a port
// (fencelock/host_port.h). Names are resolved asynchronously at every (re)connect.
using NodeAddress = fencelock::HostPort;

// Parses "HOST:PORT" (an IPv4 address or a DNS name, "localhost" included) or "[IPV6]:PORT".
// Errors: kInvalidArgument, the message saying what is wrong ("port must be 1..65535"); the caller
// names the text.
Result<NodeAddress> parse_node_address(std::string_view text);

// The most addresses a list of lock nodes (or of etcd endpoints) may hold.
inline constexpr std::size_t kMaxLockNodes = 15;

// Credentials for a Redis server with `requirepass` or ACL users: sent as AUTH [username]
// password first on every connection. Empty password: no AUTH. Never logged; an AUTH refusal is
// reported with Redis's own message, which does not repeat them. (hiredis 0.14 has no TLS: keep
// lock nodes and the token master on a private network — docs/operations.md.)
struct RedisCredentials {
  std::string username;  // "" = the default user
  std::string password;
  bool empty() const noexcept { return password.empty(); }
};

}  // namespace fencelock::storage
