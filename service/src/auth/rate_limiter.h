// A token bucket: `rate` requests per second on average, bursts of up to `burst`. Each API key
// with a rate has one, shared by every connection and thread that uses the key, so one key's
// burst is refused at its own bucket and never queues another key's requests. Thread-safe.
#pragma once

#include <chrono>
#include <mutex>
#include <optional>

namespace fencelock::service {

class TokenBucket {
 public:
  using Clock = std::chrono::steady_clock;

  TokenBucket(double rate, double burst, Clock::time_point now);

  // Takes one token: nullopt if there was one, else how long until there will be (> 0).
  std::optional<std::chrono::milliseconds> take(Clock::time_point now);

  // New limits (a reloaded auth file); the tokens on hand are kept, capped at the new burst.
  void reconfigure(double rate, double burst);

 private:
  std::mutex mutex_;
  double rate_;
  double burst_;
  double tokens_;
  Clock::time_point last_;
};

}  // namespace fencelock::service
