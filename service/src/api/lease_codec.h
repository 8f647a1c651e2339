// The lease string clients hold: "<token>.<proof>", e.g.
// "42.9f86d081884c7d65a2feaa0c55ad0157e3f1a2b4c6d8e0f1".
//
// The proof (48 hex digits, lease_secret.h) is bound to the token: release and extend hand both to
// the engine, and every node checks that the proof was made for that token, so a lease string whose
// token was changed is refused and fencelockd never answers a token it has not verified. Clients
// treat the string as opaque. Pure functions; thread-safe.
//
// A lock set's lease: "<t1>,<t2>,...,<tk>.<proof>", the tokens in the canonical (sorted) order of
// its names; the proof binds the whole list. A permit's lease: "<token>.<proof>.<permits>.<slot>",
// the semaphore's permit count and the slot it holds (the nodes check the proof, which binds the
// token; permits and slot only say which slot key to look at, so a lease whose slot was changed
// names a slot the proof does not hold). A read/write lock grant's lease: "<token>.<proof>.r" or
// ".w" (the proof binds the mode too).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fencelock/storage/lease.h"

namespace fencelock::service {

std::string encode_lease(std::uint64_t token, std::string_view proof);

// nullopt unless `lease` is a positive decimal token (no leading zeros, fits 64 bits), a '.' and
// a well-formed proof.
std::optional<storage::LeaseClaim> decode_lease(std::string_view lease);

// Precondition: tokens is not empty.
std::string encode_set_lease(const std::vector<std::uint64_t>& tokens, std::string_view proof);

// nullopt unless `lease` is exactly `names` comma-separated positive decimal tokens (as
// decode_lease's), a '.' and a well-formed proof. The claim's owner is left empty.
std::optional<storage::LockSetClaim> decode_set_lease(std::string_view lease, std::size_t names);

// A permit lease taken apart: the claim (owner left empty), the permits and the slot.
struct PermitClaim {
  storage::LeaseClaim claim;
  std::uint32_t permits = 0;
  std::uint32_t slot = 0;
};

std::string encode_permit_lease(std::uint64_t token, std::string_view proof, std::uint32_t permits,
                                std::uint32_t slot);

// nullopt unless `lease` is a lease (decode_lease), '.', permits in 1..kMaxPermits, '.', a slot
// below permits — both decimal without leading zeros.
std::optional<PermitClaim> decode_permit_lease(std::string_view lease);

// A read/write lock grant's lease taken apart: the claim (owner left empty) and the mode.
struct RwClaim {
  storage::LeaseClaim claim;
  storage::RwMode mode = storage::RwMode::kRead;
};

std::string encode_rw_lease(std::uint64_t token, std::string_view proof, storage::RwMode mode);

// nullopt unless `lease` is a lease (decode_lease), then ".r" or ".w".
std::optional<RwClaim> decode_rw_lease(std::string_view lease);

}  // namespace fencelock::service
