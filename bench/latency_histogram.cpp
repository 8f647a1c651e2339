#include "latency_histogram.h"

#include <bit>
#include <cmath>

namespace fencelock::bench {

std::size_t LatencyHistogram::bucket_of(std::uint64_t micros) noexcept {
  if (micros < kLinear) return static_cast<std::size_t>(micros);
  const int octave = static_cast<int>(std::bit_width(micros)) - 11;  // 1024..2047 → octave 0
  if (octave >= kOctaves) return kLinear + kOctaves * kSubBuckets - 1;
  const std::uint64_t base = std::uint64_t{1024} << static_cast<unsigned>(octave);
  const std::uint64_t sub = (micros - base) * kSubBuckets / base;
  return static_cast<std::size_t>(kLinear + octave * kSubBuckets) + static_cast<std::size_t>(sub);
}

std::uint64_t LatencyHistogram::upper_edge(std::size_t bucket) noexcept {
  if (bucket < kLinear) return bucket + 1;
  const std::size_t rest = bucket - kLinear;
  const std::uint64_t base = std::uint64_t{1024} << (rest / kSubBuckets);
  return base + base * (rest % kSubBuckets + 1) / kSubBuckets;
}

void LatencyHistogram::record(std::chrono::nanoseconds latency) noexcept {
  const auto micros = static_cast<std::uint64_t>(std::max<std::int64_t>(0, latency.count() / 1000));
  ++buckets_[bucket_of(micros)];
  ++count_;
}

void LatencyHistogram::merge(const LatencyHistogram& other) noexcept {
  for (std::size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += other.buckets_[i];
  count_ += other.count_;
}

std::chrono::microseconds LatencyHistogram::quantile(double q) const noexcept {
  if (count_ == 0) return std::chrono::microseconds(0);
  const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank && buckets_[i] != 0) return std::chrono::microseconds(upper_edge(i));
  }
  return std::chrono::microseconds(upper_edge(buckets_.size() - 1));
}

}  // namespace fencelock::bench
