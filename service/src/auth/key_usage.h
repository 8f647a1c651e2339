// What one API key holds through this fencelockd right now, against its caps (auth/api_keys.h:
// max_locks, max_waiters). Each instance counts its own: behind a load balancer with k instances
// a key may hold up to k × max_locks (docs/operations.md). A lease counts until it is released
// through this instance or its ttl (as last granted or extended here) has passed — an upper
// bound, never an undercount. Acquires in flight hold a reservation, so concurrent acquires
// cannot overshoot the cap. Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace fencelock::service {

class KeyUsage {
 public:
  using Clock = std::chrono::steady_clock;

  KeyUsage(std::optional<std::size_t> max_locks, std::optional<std::size_t> max_waiters);
  void reconfigure(std::optional<std::size_t> max_locks, std::optional<std::size_t> max_waiters);

  // A waiting acquire begins (false: max_waiters are waiting already) / ends.
  bool begin_wait();
  void end_wait();

  // `count` locks for an acquire in flight — a lock set reserves one per name (false: held + in
  // flight would pass max_locks). Every reserved lock ends in hold() (granted; one call per lock)
  // or in cancel_reservation() with the same count.
  bool reserve_lock(Clock::time_point now, std::size_t count = 1);
  void cancel_reservation(std::size_t count = 1);
  // `lease`: name and token, unique per grant.
  void hold(const std::string& lease, Clock::time_point until);
  void renew(const std::string& lease, Clock::time_point until);  // an extend
  void drop(const std::string& lease);                            // a release

  std::optional<std::size_t> max_locks() const;
  std::optional<std::size_t> max_waiters() const;
  std::size_t held(Clock::time_point now);  // leases not yet past their ttl (purges the rest)

 private:
  std::size_t purge(Clock::time_point now);  // under mutex_

  mutable std::mutex mutex_;
  std::optional<std::size_t> max_locks_;
  std::optional<std::size_t> max_waiters_;
  std::unordered_map<std::string, Clock::time_point> held_;
  std::size_t reserved_ = 0;
  std::size_t waiting_ = 0;
};

}  // namespace fencelock::service
