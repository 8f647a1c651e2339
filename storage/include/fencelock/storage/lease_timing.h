// Lease timing: how long a Redlock lease may be trusted, and how long to back off between tries.
//
// A lease granted at the end of an operation that took `elapsed` (measured on steady_clock from
// before the first Redis request until the fencing token arrived) may be used for
//     validity = ttl − elapsed − (ttl · drift_factor + 2 ms)
// The drift term allows for the Redis nodes' clocks running faster than ours; the 2 ms covers the
// millisecond granularity of Redis's expiry. A lease with no positive validity is never granted.
// All functions are pure; safe from any thread.
#pragma once

#include <chrono>
#include <random>

namespace fencelock::storage {

// ttl · drift_factor + 2 ms, rounded up to the microsecond.
// Precondition: ttl > 0, 0 <= drift_factor < 1.
std::chrono::microseconds drift_allowance(std::chrono::milliseconds ttl, double drift_factor);

// ttl − elapsed − drift_allowance(ttl, drift_factor); negative when the lease is already unusable.
std::chrono::microseconds remaining_validity(std::chrono::milliseconds ttl,
                                             std::chrono::steady_clock::duration elapsed,
                                             double drift_factor);

// What a client is told: the validity rounded *down* to whole milliseconds, so it never
// overstates. A grant requires the result to be at least 1 ms.
std::chrono::milliseconds reportable_validity(std::chrono::microseconds validity);

// A retry delay drawn uniformly from [delay − jitter, delay + jitter] (clamped at zero), so that
// competing clients do not retry in lockstep. `rng` is any UniformRandomBitGenerator; tests pass a
// seeded engine. Precondition: delay >= 0, jitter >= 0.
template <class Rng>
std::chrono::milliseconds retry_delay(std::chrono::milliseconds delay,
                                      std::chrono::milliseconds jitter, Rng& rng) {
  using Rep = std::chrono::milliseconds::rep;
  const Rep low = delay.count() > jitter.count() ? delay.count() - jitter.count() : 0;
  const Rep high = delay.count() + jitter.count();
  std::uniform_int_distribution<Rep> pick(low, high);
  return std::chrono::milliseconds(pick(rng));
}

}  // namespace fencelock::storage
