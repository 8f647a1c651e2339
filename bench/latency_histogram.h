// Latency recording for benchmarks: log-linear buckets (1 µs resolution below 1 ms, ~1.6% relative
// error above), fixed memory, O(1) record, mergeable. Not thread-safe: one per recording thread.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>

namespace fencelock::bench {

class LatencyHistogram {
 public:
  void record(std::chrono::nanoseconds latency) noexcept;
  void merge(const LatencyHistogram& other) noexcept;

  std::uint64_t count() const noexcept { return count_; }
  // The latency at quantile q (0..1), as the upper edge of its bucket. Zero when empty.
  std::chrono::microseconds quantile(double q) const noexcept;

 private:
  static constexpr int kSubBuckets = 64;  // per power of two above 1024 µs
  static constexpr int kLinear = 1024;    // 1 µs buckets below 1024 µs
  static constexpr int kOctaves = 24;     // up to ~4.7 hours
  static std::size_t bucket_of(std::uint64_t micros) noexcept;
  static std::uint64_t upper_edge(std::size_t bucket) noexcept;

  std::array<std::uint64_t, kLinear + kOctaves * kSubBuckets> buckets_{};
  std::uint64_t count_ = 0;
};

}  // namespace fencelock::bench
