// The one blocking call of the protocol library: getaddrinfo for a host name. Callers run it on a
// thread of their own, never on an event loop (the engine's AddressResolver, the SDK's
// connections). Thread-safe.
#pragma once

#include <string>
#include <vector>

#include "fencelock/basic_result.h"

namespace fencelock {

// The IPv4 and IPv6 addresses of `host` as numeric text ("10.0.0.7", "fe80::1%2" with its zone),
// in getaddrinfo's order (its preference). Errors say why, without the host: "Name or service not
// known", "no IPv4 or IPv6 address". May take as long as the system resolver's timeouts.
BasicResult<std::vector<std::string>, std::string> lookup_host(const std::string& host);

}  // namespace fencelock
