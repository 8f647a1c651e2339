// API keys (docs/operations.md, "Securing fencelock"): who may call fencelockd, with which rights,
// on which names, how often. Read from the --auth-file, a JSON object:
//   {"keys": [{"id": "billing", "secret_sha256": "<64 hex>", "names": ["billing.*"],
//              "rights": ["lock", "read"], "rate": 50, "burst": 100,
//              "max_locks": 1000, "max_waiters": 100}]}
// The file holds only the SHA-256 of each secret, never a secret. Parsing is strict: an unknown
// field, a duplicate id or secret, a malformed pattern or an out-of-range number is an error that
// names the key and the field, and nothing of the file is used. Pure; thread-safe once built.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/service_result.h"

namespace fencelock::service {

// What a key may do. kLock: acquire, extend, release; kRead: lock status and current token;
// kToken: draw a token without holding the lock (POST /v1/tokens, the hazard in docs/api.md);
// kAdmin: revoke a lock whoever holds it (POST /v1/locks/{name}/revoke).
enum Right : std::uint8_t { kRightLock = 1, kRightRead = 2, kRightToken = 4, kRightAdmin = 8 };
inline constexpr Right kAllRights[] = {kRightLock, kRightRead, kRightToken, kRightAdmin};
std::string_view right_name(Right right) noexcept;  // "lock", "read", "token", "admin"
// "lock,read" → kRightLock | kRightRead; nullopt for an unknown or empty entry.
std::optional<std::uint8_t> parse_rights(std::string_view comma_separated);

// Limits on the file a client cannot influence but an operator could get wrong.
inline constexpr std::size_t kMaxKeys = 10'000;
inline constexpr std::size_t kMaxPatternsPerKey = 100;
inline constexpr std::size_t kMaxAuthFileBytes = std::size_t{4} * 1024 * 1024;
inline constexpr double kMaxRate = 1'000'000;

struct ApiKey {
  std::string id;             // [A-Za-z0-9._-]{1,64}: logged, bound to the key's leases
  std::string secret_sha256;  // 64 lower-case hex digits
  // Lock-name patterns: a name matches if it matches any. '*' matches any run of characters
  // (also none, also '.'); every other character matches itself. "*" is every name.
  std::vector<std::string> names;
  std::uint8_t rights = 0;
  std::optional<double> rate;  // requests per second (token bucket); none = unlimited
  double burst = 0;            // bucket size; defaults to max(1, rate)
  // Caps per fencelockd instance (auth/key_usage.h); none = unlimited. 1 .. 1,000,000.
  std::optional<std::size_t> max_locks;    // leases held at once
  std::optional<std::size_t> max_waiters;  // acquires waiting (wait_ms > 0) at once
};

// True iff `name` matches the glob `pattern` (see ApiKey::names).
bool name_matches(std::string_view pattern, std::string_view name) noexcept;

// True iff `id` is a valid key id: 1 to storage::kMaxLeaseOwnerLength (64) characters of
// [A-Za-z0-9._-], the rule for lease owners, since a key id owns its key's leases.
bool is_valid_key_id(std::string_view id) noexcept;

class KeySet {
 public:
  static ServiceResult<KeySet> parse(std::string_view json_text);
  static ServiceResult<KeySet> load(const std::filesystem::path& path);
  // load() on a thread of its own, waited for at most `deadline`: a read that blocks (a hung
  // mount; a path that is not a regular file is refused at once, without reading) answers
  // an error after it and is left behind; while kMaxStuckReads such reads are still blocked,
  // a new one is not started (an error at once). Thread-safe.
  static constexpr std::size_t kMaxStuckReads = 4;
  static ServiceResult<KeySet> load_within(const std::filesystem::path& path,
                                           std::chrono::milliseconds deadline);

  // The key whose secret hashes to `secret_sha256`, or nullptr.
  const ApiKey* find_by_secret_hash(std::string_view secret_sha256) const;
  const std::vector<ApiKey>& keys() const noexcept { return keys_; }

 private:
  std::vector<ApiKey> keys_;
  std::unordered_map<std::string, std::size_t> by_hash_;
};

}  // namespace fencelock::service
