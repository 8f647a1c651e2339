#include "ops/latency_buckets.h"

#include <algorithm>

namespace fencelock::service {
namespace {

struct Bound {
  std::int64_t nanoseconds;
  std::string_view label;
};

// Labels are spelled out rather than formatted so they are byte-for-byte stable across scrapes
// and match what the Prometheus client libraries print for the same bounds.
constexpr std::array<Bound, LatencyBuckets::kBoundCount> kBounds{{
    {100'000, "0.0001"},
    {250'000, "0.00025"},
    {500'000, "0.0005"},
    {1'000'000, "0.001"},
    {2'500'000, "0.0025"},
    {5'000'000, "0.005"},
    {10'000'000, "0.01"},
    {25'000'000, "0.025"},
    {50'000'000, "0.05"},
    {100'000'000, "0.1"},
    {250'000'000, "0.25"},
    {500'000'000, "0.5"},
    {1'000'000'000, "1"},
    {2'500'000'000, "2.5"},
    {5'000'000'000, "5"},
    {10'000'000'000, "10"},
}};

constexpr std::string_view kInfLabel = "+Inf";

}  // namespace

std::chrono::nanoseconds LatencyBuckets::upper_bound(std::size_t i) noexcept {
  return std::chrono::nanoseconds(kBounds[i].nanoseconds);
}

std::string_view LatencyBuckets::le_label(std::size_t i) noexcept {
  return i < kBoundCount ? kBounds[i].label : kInfLabel;
}

void LatencyBuckets::observe(std::chrono::nanoseconds elapsed) noexcept {
  const std::int64_t ns = std::max<std::int64_t>(elapsed.count(), 0);
  const auto* bucket =
      std::lower_bound(kBounds.begin(), kBounds.end(), ns,
                       [](const Bound& b, std::int64_t v) { return b.nanoseconds < v; });
  const auto index = static_cast<std::size_t>(bucket - kBounds.begin());
  // Relaxed is enough: each counter is only ever added to, and readers need no ordering between
  // counters (a scrape is a sample, not a transaction).
  counts_[index].fetch_add(1, std::memory_order_relaxed);
  sum_nanoseconds_.fetch_add(static_cast<std::uint64_t>(ns), std::memory_order_relaxed);
}

LatencyBuckets::Snapshot LatencyBuckets::snapshot() const noexcept {
  Snapshot s;
  std::uint64_t running = 0;
  for (std::size_t i = 0; i < kBucketCount; ++i) {
    running += counts_[i].load(std::memory_order_relaxed);
    s.cumulative[i] = running;
  }
  // _count is the +Inf bucket by definition, so the two can never disagree in one scrape.
  s.count = running;
  s.sum_seconds = static_cast<double>(sum_nanoseconds_.load(std::memory_order_relaxed)) / 1e9;
  return s;
}

}  // namespace fencelock::service
