// Pacing of reconnect attempts: exponential backoff from a minimum to a maximum with ±25% jitter,
// so that many engines (or many connections of one) do not reconnect in step. Pure; one per
// connection, used on that connection's strand.
#pragma once

#include <algorithm>
#include <chrono>
#include <random>

namespace fencelock::storage {

class ReconnectBackoff {
 public:
  ReconnectBackoff(std::chrono::milliseconds min, std::chrono::milliseconds max)
      : min_(min), max_(std::max(min, max)), next_(min), rng_(std::random_device{}()) {}

  // The delay before the next attempt; doubles the one after (up to the maximum).
  std::chrono::milliseconds next_delay() {
    const auto base = next_.count();
    std::uniform_int_distribution<long long> spread(base * 3 / 4, base * 5 / 4);
    next_ = std::min(next_ * 2, max_);
    return std::chrono::milliseconds(spread(rng_));
  }

  // A healthy connection: the next failure starts from the minimum again.
  void reset() noexcept { next_ = min_; }

 private:
  std::chrono::milliseconds min_;
  std::chrono::milliseconds max_;
  std::chrono::milliseconds next_;
  std::minstd_rand rng_;
};

}  // namespace fencelock::storage
