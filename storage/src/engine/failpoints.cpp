#include "fencelock/storage/failpoints.h"

#include <atomic>
#include <csignal>
#include <cstdint>
#include <ctime>

namespace fencelock::storage::failpoints {

namespace {

// CLOCK_MONOTONIC in ns until which the pause is armed; 0 = not armed. clock_gettime is
// async-signal-safe; std::chrono is not promised to be.
std::atomic<std::int64_t> pause_armed_until_ns{0};
static_assert(std::atomic<std::int64_t>::is_always_lock_free);

std::int64_t monotonic_ns() noexcept {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

}  // namespace

void arm_pause_after_quorum(std::chrono::milliseconds window) noexcept {
  pause_armed_until_ns.store(monotonic_ns() + window.count() * 1'000'000,
                             std::memory_order_relaxed);
}

void on_grant_decided() noexcept {
  if (pause_armed_until_ns.load(std::memory_order_relaxed) == 0) return;
  const std::int64_t until = pause_armed_until_ns.exchange(0, std::memory_order_relaxed);
  if (until != 0 && monotonic_ns() < until) ::raise(SIGSTOP);
}

}  // namespace fencelock::storage::failpoints
