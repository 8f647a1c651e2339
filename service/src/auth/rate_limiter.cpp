#include "auth/rate_limiter.h"

#include <algorithm>
#include <cmath>

namespace fencelock::service {

TokenBucket::TokenBucket(double rate, double burst, Clock::time_point now)
    : rate_(rate), burst_(burst), tokens_(burst), last_(now) {}

std::optional<std::chrono::milliseconds> TokenBucket::take(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (now > last_) {
    const double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + elapsed * rate_);
    last_ = now;
  }
  if (tokens_ >= 1.0) {
    tokens_ -= 1.0;
    return std::nullopt;
  }
  const double wait_ms = std::ceil((1.0 - tokens_) / rate_ * 1000.0);
  return std::chrono::milliseconds(std::max<std::int64_t>(1, static_cast<std::int64_t>(wait_ms)));
}

void TokenBucket::reconfigure(double rate, double burst) {
  std::lock_guard<std::mutex> lock(mutex_);
  rate_ = rate;
  burst_ = burst;
  tokens_ = std::min(tokens_, burst_);
}

}  // namespace fencelock::service
