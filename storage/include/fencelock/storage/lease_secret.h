// Lease values and lease proofs: what a lease writes into its lock key, and what its holder gets
// to prove ownership — of the lease *and* of the fencing token it was granted with.
//
// The value written on every node is a 64-bit lease id followed by a 128-bit secret, 48 lower-case
// hex digits drawn from the kernel's CSPRNG (getrandom(2)). The secret never leaves fencelockd:
// the holder gets a *proof* instead, the lease id followed by the first 128 bits of
//     SHA-1("<token>:<value>")
// as 32 hex digits — or of SHA-1("<token>@<owner>:<value>") for a lease granted to an owner (an API
// key's id, AcquireRequest::owner), so that another owner's claim fails the same way an altered
// token does. Release and extend send the proof with the token; each node recomputes the
// digest from the value it holds (a Lua script, lua_scripts.h), so a proof is good for exactly the
// token it was granted with. A lease string whose token was changed ("58.<proof>" for a lease
// granted with 17) is refused on every node, and fencelockd never answers a token it has not
// verified. The id is not secret; it tells "this lease, with a token that is not its own" apart
// from "another lease holds the key".
// Why this construction: docs/architecture.md, "Lease values and proofs". Pure functions;
// thread-safe. A value or proof is never logged.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "fencelock/storage/lease.h"
#include "fencelock/storage/result.h"

namespace fencelock::storage {

inline constexpr std::size_t kLeaseIdLength = 16;      // 64 bits, hex
inline constexpr std::size_t kLeaseSecretLength = 32;  // 128 bits, hex
inline constexpr std::size_t kLeaseValueLength = kLeaseIdLength + kLeaseSecretLength;
inline constexpr std::size_t kLeaseProofLength = kLeaseIdLength + 32;  // id + 128-bit digest

// 128 random bits as 32 hex digits (fencelock/random_hex.h): a fresh secret or id. Errors:
// kInternal if the kernel cannot supply randomness.
Result<std::string> generate_lease_secret();

// A fresh lease value: kLeaseValueLength hex digits (id, then secret). Errors as
// generate_lease_secret().
Result<std::string> generate_lease_value();

// The longest owner a lease can be bound to (AcquireRequest::owner).
inline constexpr std::size_t kMaxLeaseOwnerLength = 64;

// True iff `owner` can own a lease: "" or up to kMaxLeaseOwnerLength characters of
// [A-Za-z0-9._-] (never ':' or '@', which frame the hashed text).
bool is_valid_lease_owner(std::string_view owner) noexcept;

// The proof for `value` (as generate_lease_value() makes it) granted with `token` to `owner`.
std::string lease_proof(std::string_view value, std::uint64_t token, std::string_view owner = {});

// The token text the scripts hash and the claim carries: "<token>" or "<token>@<owner>".
std::string claim_token_text(std::uint64_t token, std::string_view owner);
// A lock set's: every token in the canonical order of its names, then a digest of those names:
// "<t1>,<t2>,...#<16 hex digits of SHA-1 of the names joined by newlines>[@<owner>]". So a set's
// proof holds only for its own tokens *and* names: a release or extend naming other names (a
// subset, a superset, another set) is refused on every node before anything changes, and a set of
// one name cannot stand for the single lock of that name, nor the reverse.
std::string set_claim_text(std::span<const std::uint64_t> tokens,
                           std::span<const std::string> names, std::string_view owner);
// A permit's: "<token>/<permits>/<slot>[@<owner>]", so a permit's proof holds only for its own
// semaphore size and slot: a claim with another permit count cannot change the semaphore's count.
std::string permit_claim_text(std::uint64_t token, std::uint32_t permits, std::uint32_t slot,
                              std::string_view owner);
// A read/write lock grant's: "<token>/r" or "<token>/w", then "@<owner>" if any — so a read
// grant's proof never passes for a write grant's, nor for the lock of the same name.
std::string rw_claim_text(std::uint64_t token, RwMode mode, std::string_view owner);
// The proof for `value` over a claim text made by one of the functions above.
std::string lease_proof_of_text(std::string_view value, std::string text);

// True iff `text` has the shape lease_proof() produces. Cheap; used to refuse malformed leases
// before any node is asked.
bool is_well_formed_lease_proof(std::string_view text) noexcept;

}  // namespace fencelock::storage
