// The JSON the CLI prints for a lease it acquired, extended or holds — one shape per kind:
//   a lock:    {"name","token",...}
//   a set:     {"names":["a","b"],"tokens":{"a":17,"b":4},...}   (sorted by name)
//   a permit:  {"name","permits","slot","token",...}
// Pure; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "fencelock/lease.h"

namespace fencelock::cli {

// What names the lease: {"name"} for a lock, {"names"} for a set, {"name","permits","slot"} for
// a permit.
nlohmann::json lease_identity_json(const Lease& lease);

// The identity, the tokens and "ttl_ms": what `run` without a command prints (never the lease).
nlohmann::json held_json(const Lease& lease);

// held_json plus "lease" (the secret, for a script to extend and release with) and
// "validity_ms" (time left until the lease's deadline): what `acquire` prints.
nlohmann::json acquired_json(const Lease& lease);

}  // namespace fencelock::cli
