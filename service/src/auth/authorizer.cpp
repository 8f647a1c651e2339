#include "auth/authorizer.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <unordered_map>

#include "auth/api_secret.h"

namespace fencelock::service {

namespace {

Authorizer::Decision refuse(WireError error, std::string message) {
  Authorizer::Decision decision;
  decision.error = error;
  decision.message = std::move(message);
  return decision;
}

// The secret of "Bearer <secret>" (the scheme is case-insensitive), or nullopt.
std::optional<std::string_view> bearer_secret(std::string_view header) {
  constexpr std::string_view kScheme = "bearer ";
  if (header.size() <= kScheme.size()) return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return std::nullopt;
  }
  std::string_view secret = header.substr(kScheme.size());
  while (!secret.empty() && secret.front() == ' ') secret.remove_prefix(1);
  while (!secret.empty() && secret.back() == ' ') secret.remove_suffix(1);
  if (secret.empty()) return std::nullopt;
  return secret;
}

std::string rights_text(std::uint8_t rights) {
  std::string text;
  for (const Right right : kAllRights) {
    if ((rights & right) == 0) continue;
    if (!text.empty()) text += ", ";
    text += right_name(right);
  }
  return text;
}

}  // namespace

Authorizer::Authorizer(KeySet keys) {
  replace(std::move(keys));
}

void Authorizer::replace(KeySet keys) {
  auto next = std::make_shared<State>();
  next->keys = std::move(keys);
  const auto previous = state();
  const auto now = Clock::now();
  std::unordered_map<std::string_view, std::size_t> previous_index;
  if (previous) {
    for (std::size_t i = 0; i < previous->keys.keys().size(); ++i)
      previous_index.emplace(previous->keys.keys()[i].id, i);
  }
  for (const ApiKey& key : next->keys.keys()) {
    // The same key id before the reload, if any: its bucket and counters carry over.
    std::optional<std::size_t> before;
    if (const auto found = previous_index.find(key.id); found != previous_index.end())
      before = found->second;
    std::shared_ptr<KeyUsage> usage;
    if (key.max_locks || key.max_waiters) {
      if (before) usage = previous->usages[*before];
      if (usage) {
        usage->reconfigure(key.max_locks, key.max_waiters);
      } else {
        usage = std::make_shared<KeyUsage>(key.max_locks, key.max_waiters);
      }
    }
    next->usages.push_back(std::move(usage));
    std::shared_ptr<TokenBucket> bucket;
    if (key.rate) {
      if (before) bucket = previous->buckets[*before];
      if (bucket) {
        bucket->reconfigure(*key.rate, key.burst);
      } else {
        bucket = std::make_shared<TokenBucket>(*key.rate, key.burst, now);
      }
    }
    next->buckets.push_back(std::move(bucket));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  state_ = std::move(next);
}

std::shared_ptr<const Authorizer::State> Authorizer::state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_;
}

bool Authorizer::enabled() const {
  return state() != nullptr;
}

std::size_t Authorizer::key_count() const {
  const auto current = state();
  return current ? current->keys.keys().size() : 0;
}

Authorizer::Decision Authorizer::check(std::uint8_t right, std::string_view name,
                                       std::string_view authorization,
                                       Clock::time_point now) const {
  Decision known = identify(right, authorization);
  if (!known.allowed || !known.key) return known;
  known = names_allowed(std::move(known), std::array<std::string_view, 1>{name});
  return known.allowed ? take_rate(std::move(known), now) : known;
}

Authorizer::Decision Authorizer::check(std::uint8_t right, std::span<const std::string> names,
                                       std::string_view authorization,
                                       Clock::time_point now) const {
  Decision known = identify(right, authorization);
  if (!known.allowed || !known.key) return known;
  known = names_allowed(std::move(known), names);
  return known.allowed ? take_rate(std::move(known), now) : known;
}

Authorizer::Decision Authorizer::authenticate(std::uint8_t right, std::string_view authorization,
                                              Clock::time_point now) const {
  Decision known = identify(right, authorization);
  if (!known.allowed || !known.key) return known;
  return take_rate(std::move(known), now);
}

Authorizer::Decision Authorizer::check_names(const Decision& admitted,
                                             std::span<const std::string> names) {
  if (!admitted.allowed || !admitted.key) return admitted;
  return names_allowed(admitted, names);
}

Authorizer::Decision Authorizer::check_name(const Decision& admitted, std::string_view name) {
  if (!admitted.allowed || !admitted.key) return admitted;
  return names_allowed(admitted, std::array<std::string_view, 1>{name});
}

bool Authorizer::replaced_since(const Decision& admitted) const {
  return admitted.state != nullptr && admitted.state != state();
}

Authorizer::Decision Authorizer::identify(std::uint8_t right,
                                          std::string_view authorization) const {
  auto current = state();
  if (!current || right == 0) {
    Decision open;
    open.allowed = true;
    return open;
  }
  if (authorization.empty()) {
    return refuse(WireError::kUnauthenticated,
                  "this fencelockd requires an API key: send \"Authorization: Bearer <secret>\"");
  }
  const auto secret = bearer_secret(authorization);
  if (!secret) {
    return refuse(WireError::kUnauthenticated,
                  "the Authorization header must be \"Bearer <secret>\"");
  }
  // Keys are found by the SHA-256 of the presented secret: a lookup's timing depends only on that
  // digest, which tells an attacker nothing about any stored one.
  const ApiKey* key = secret->size() <= kMaxApiSecretLength
                          ? current->keys.find_by_secret_hash(sha256_hex(*secret))
                          : nullptr;
  if (key == nullptr) return refuse(WireError::kUnauthenticated, "unknown API key");
  if ((key->rights & right) == 0) {
    Decision forbidden =
        refuse(WireError::kForbidden, "key '" + key->id + "' lacks the right '" +
                                          std::string(right_name(static_cast<Right>(right))) +
                                          "' (it has: " + rights_text(key->rights) + ")");
    forbidden.key_id = key->id;
    return forbidden;
  }
  const auto index = static_cast<std::size_t>(key - current->keys.keys().data());
  Decision known;
  known.allowed = true;
  known.key_id = key->id;
  known.usage = current->usages[index];
  known.key = key;
  known.state = std::move(current);
  return known;
}

Authorizer::Decision Authorizer::take_rate(Decision known, Clock::time_point now) {
  const auto index = static_cast<std::size_t>(known.key - known.state->keys.keys().data());
  if (const auto& bucket = known.state->buckets[index]) {
    if (const auto wait = bucket->take(now)) {
      Decision limited = refuse(WireError::kRateLimited, "key '" + known.key->id +
                                                             "' is over its rate of requests "
                                                             "per second");
      limited.retry_after = *wait;
      limited.key_id = known.key->id;
      return limited;
    }
  }
  return known;
}

template <class Names>
Authorizer::Decision Authorizer::names_allowed(Decision admitted, const Names& names) {
  const ApiKey& key = *admitted.key;
  for (const auto& name : names) {
    const bool name_allowed = std::any_of(key.names.begin(), key.names.end(),
                                          [&](const auto& p) { return name_matches(p, name); });
    if (!name_allowed) {
      Decision forbidden =
          refuse(WireError::kForbidden,
                 "key '" + key.id + "' may not use the name '" + std::string(name) + "'");
      forbidden.key_id = key.id;
      return forbidden;
    }
  }
  return admitted;
}

}  // namespace fencelock::service
