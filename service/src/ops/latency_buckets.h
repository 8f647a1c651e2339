// A fixed-bucket latency histogram that many threads can feed without a lock.
//
// The bounds are fixed at compile time (100 µs to 10 s, then +Inf), the same for every histogram
// fencelockd exports, so dashboards can compare them. Each observation does two relaxed atomic
// adds: one on the bucket it falls into and one on the running sum. Counts are stored per bucket
// and made cumulative only when read, so an observation never touches more than one bucket.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace fencelock::service {

class LatencyBuckets {
 public:
  // Finite upper bounds, ascending; a last, implicit +Inf bucket follows them.
  static constexpr std::size_t kBoundCount = 16;
  // Buckets including +Inf.
  static constexpr std::size_t kBucketCount = kBoundCount + 1;

  // The upper bound of bucket `i` (i < kBoundCount) as a duration.
  static std::chrono::nanoseconds upper_bound(std::size_t i) noexcept;
  // The `le` label value of bucket `i` (i < kBucketCount) in seconds: "0.0001", ..., "10", "+Inf".
  static std::string_view le_label(std::size_t i) noexcept;

  // A consistent-enough copy for rendering. `cumulative[i]` counts observations <= bound i;
  // cumulative[kBucketCount - 1] is the total count. Under concurrent observe() calls `sum_seconds`
  // may lag or lead the counts by the observations in flight; the counts are always monotonic.
  struct Snapshot {
    std::array<std::uint64_t, kBucketCount> cumulative{};
    std::uint64_t count = 0;
    double sum_seconds = 0.0;
  };

  LatencyBuckets() = default;
  LatencyBuckets(const LatencyBuckets&) = delete;
  LatencyBuckets& operator=(const LatencyBuckets&) = delete;

  // Counts one observation in the first bucket whose bound is >= `elapsed` (Prometheus `le`
  // semantics). A negative duration counts as zero. Thread-safe, lock-free, never blocks.
  void observe(std::chrono::nanoseconds elapsed) noexcept;

  // Reads every bucket and the sum. Thread-safe; may run concurrently with observe().
  Snapshot snapshot() const noexcept;

 private:
  std::array<std::atomic<std::uint64_t>, kBucketCount> counts_{};
  std::atomic<std::uint64_t> sum_nanoseconds_{0};
};

}  // namespace fencelock::service
