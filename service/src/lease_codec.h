// The lease string clients hold: "<token>.<proof>", e.g.
// "42.9f86d081884c7d65a2feaa0c55ad0157e3f1a2b4c6d8e0f1".
//
// The proof (48 hex digits, lease_secret.h) is bound to the token: release and extend hand both to
// the engine, and every node checks that the proof was made for that token, so a lease string whose
// token was changed is refused and fencelockd never answers a token it has not verified. Clients
// treat the string as opaque. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fencelock/storage/lease.h"

namespace fencelock::service {

std::string encode_lease(std::uint64_t token, std::string_view proof);

// nullopt unless `lease` is a positive decimal token (no leading zeros, fits 64 bits), a '.' and
// a well-formed proof.
std::optional<storage::LeaseClaim> decode_lease(std::string_view lease);

}  // namespace fencelock::service
