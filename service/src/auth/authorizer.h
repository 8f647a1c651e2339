// Who is calling, and whether they may: the one check between the route table and the handlers
// (ApiHandlers::dispatch). Without an auth file every request is allowed, anonymously (the
// startup log says so). With one, a request needs `Authorization: Bearer <secret>` whose SHA-256
// names a key (401 unauthenticated otherwise), the key needs the route's right and a pattern that
// matches the name (403 forbidden), and a key with a rate gets a token from its bucket (429
// rate_limited, with when to retry). A refused request reaches neither engine nor token source.
// Thread-safe: check() from any thread, replace() (a reload) from any other.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "api_error.h"
#include "auth/api_keys.h"
#include "auth/key_usage.h"
#include "auth/rate_limiter.h"

namespace fencelock::service {

class Authorizer {
 public:
  using Clock = std::chrono::steady_clock;

  struct Decision {
    bool allowed = false;
    std::string key_id;  // the caller's key when allowed with keys; "" when open
    ApiError error = ApiError::kUnauthenticated;           // when refused
    std::string message;                                   // when refused; never holds a secret
    std::optional<std::chrono::milliseconds> retry_after;  // kRateLimited
    // When allowed with a key that has max_locks or max_waiters: its counters (shared by all its
    // requests, kept across reloads).
    std::shared_ptr<KeyUsage> usage;
  };

  Authorizer() = default;  // open: no keys
  explicit Authorizer(KeySet keys);

  // Uses `keys` from now on (a reloaded file). Rate buckets of keys that stay are kept by id.
  void replace(KeySet keys);

  bool enabled() const;
  std::size_t key_count() const;

  // `right` 0: the route needs none (health, readiness, metrics) and is allowed without a key.
  Decision check(std::uint8_t right, std::string_view name, std::string_view authorization,
                 Clock::time_point now) const;
  // The same for a request on several names (a lock set): the key needs `right` on EVERY name
  // (403 names the first it may not use); one request takes one token from the key's rate.
  // Precondition: names is not empty.
  Decision check(std::uint8_t right, std::span<const std::string> names,
                 std::string_view authorization, Clock::time_point now) const;

 private:
  struct State {
    KeySet keys;
    std::vector<std::shared_ptr<TokenBucket>> buckets;  // by key index; null without a rate
    std::vector<std::shared_ptr<KeyUsage>> usages;      // by key index; null without caps
  };
  std::shared_ptr<const State> state() const;
  template <class Names>
  Decision check_names(std::uint8_t right, const Names& names, std::string_view authorization,
                       Clock::time_point now) const;

  mutable std::mutex mutex_;  // guards state_ (the pointer, not what it points to)
  std::shared_ptr<const State> state_;
};

}  // namespace fencelock::service
