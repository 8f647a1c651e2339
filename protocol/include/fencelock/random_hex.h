// Fresh random ids and secrets for every layer: lease values, token-store identities, API key
// secrets, the SDK's request ids — one source, the kernel's CSPRNG (getrandom(2)).
#pragma once

#include <cstddef>
#include <string>

#include "fencelock/basic_result.h"

namespace fencelock {

// The most random_hex() draws at once.
inline constexpr std::size_t kMaxRandomBytes = 256;

// Why no randomness could be had: getrandom(2) failed other than EINTR, or too many bytes asked.
struct RandomFailure {
  std::string message;
};

// 2 · bytes lower-case hex digits from getrandom(2). Precondition: bytes <= kMaxRandomBytes.
// Thread-safe; blocks only before the kernel's pool is seeded (early boot).
BasicResult<std::string, RandomFailure> random_hex(std::size_t bytes);

}  // namespace fencelock
