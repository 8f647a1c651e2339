// Lease secrets: the random value a lease writes into its lock key on every node.
//
// Release and extend are compare-and-set on this value, so it must be unguessable and unique
// across every client of every fencelockd: 128 bits from the kernel's CSPRNG (getrandom(2)),
// never from a userspace PRNG. A secret is never logged and never returned by a read endpoint.
#pragma once

#include <string>
#include <string_view>

#include "fencelock/storage/result.h"

namespace fencelock::storage {

inline constexpr std::size_t kLeaseSecretBytes = 16;                   // 128 bits
inline constexpr std::size_t kLeaseSecretLength = 2 * kLeaseSecretBytes;  // lower-case hex

// Returns 32 lower-case hex characters drawn from getrandom(2).
// Errors: kInternal if the kernel cannot supply randomness (getrandom fails other than EINTR).
// Thread safety: safe to call from any thread; blocks only before the kernel's pool is seeded
// (early boot), never afterwards.
Result<std::string> generate_lease_secret();

// True iff `text` has the shape generate_lease_secret() produces. Cheap; used to refuse
// malformed leases before any node is asked.
bool is_well_formed_lease_secret(std::string_view text) noexcept;

}  // namespace fencelock::storage
