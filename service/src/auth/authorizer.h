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

#include "auth/api_keys.h"
#include "auth/key_usage.h"
#include "auth/rate_limiter.h"
#include "fencelock/wire_error.h"

namespace fencelock::service {

class Authorizer {
 public:
  using Clock = std::chrono::steady_clock;

  struct State;
  struct Decision {
    bool allowed = false;
    std::string key_id;  // the caller's key when known (allowed, 403, 429); "" when open
    WireError error = WireError::kUnauthenticated;         // when refused
    std::string message;                                   // when refused; never holds a secret
    std::optional<std::chrono::milliseconds> retry_after;  // kRateLimited
    // When allowed with a key that has max_locks or max_waiters: its counters (shared by all its
    // requests, kept across reloads).
    std::shared_ptr<KeyUsage> usage;
    // The key set and key that allowed it (authenticate()), for check_names(); null when open.
    std::shared_ptr<const State> state;
    const ApiKey* key = nullptr;
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

  // The two halves of check() for a request whose names are in its body, so that the headers
  // alone decide who calls before any of the body is read: authenticate() finds the key, checks
  // the right and takes one token from the key's rate; check_names() then checks, without touching
  // the rate, that the key `admitted` (an allowed authenticate()) may use every one of `names`.
  Decision authenticate(std::uint8_t right, std::string_view authorization,
                        Clock::time_point now) const;
  static Decision check_names(const Decision& admitted, std::span<const std::string> names);
  static Decision check_name(const Decision& admitted, std::string_view name);

  // Whether the keys were replaced (a reload) after `admitted` was decided: a request screened
  // before a revocation must be decided again before it runs (identify(), then the names).
  bool replaced_since(const Decision& admitted) const;
  // The key `authorization` names, if it has `right`: allowed with its key, no name checked and
  // no rate taken; or the 401/403 refusal.
  Decision identify(std::uint8_t right, std::string_view authorization) const;

  struct State {
    KeySet keys;
    std::vector<std::shared_ptr<TokenBucket>> buckets;  // by key index; null without a rate
    std::vector<std::shared_ptr<KeyUsage>> usages;      // by key index; null without caps
  };

 private:
  std::shared_ptr<const State> state() const;
  template <class Names>
  static Decision names_allowed(Decision known, const Names& names);
  static Decision take_rate(Decision known, Clock::time_point now);

  mutable std::mutex mutex_;  // guards state_ (the pointer, not what it points to)
  std::shared_ptr<const State> state_;
};

}  // namespace fencelock::service
