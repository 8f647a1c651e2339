#include "auth/api_keys.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <fstream>
#include <iterator>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <unordered_set>

#include "fencelock/names.h"
#include "fencelock/storage/lease_secret.h"

namespace fencelock::service {

namespace {

using nlohmann::json;

ServiceError bad(const std::string& where, const std::string& what) {
  return service_error("auth file: " + where + ": " + what);
}

bool is_lower_hex(std::string_view text) noexcept {
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// A pattern is a lock name in which '*' may also appear.
bool is_valid_pattern(std::string_view pattern) {
  if (pattern.empty() || pattern.size() > kMaxNameLength) return false;
  for (const char c : pattern) {
    if (c != '*' && !is_lock_name_char(c)) return false;
  }
  return true;
}

ServiceResult<ApiKey> parse_key(const json& entry, std::size_t index) {
  std::string where = "keys[" + std::to_string(index) + "]";
  if (!entry.is_object()) return bad(where, "must be an object");
  ApiKey key;
  for (const auto& [field, value] : entry.items()) {
    if (field == "id") {
      if (!value.is_string() || !is_valid_key_id(value.get<std::string>()))
        return bad(where, "id must be 1 to 64 characters of [A-Za-z0-9._-]");
      key.id = value.get<std::string>();
      where = "key '" + key.id + "'";
    } else if (field == "secret_sha256") {
      if (!value.is_string() || value.get<std::string>().size() != 64 ||
          !is_lower_hex(value.get<std::string>()))
        return bad(where,
                   "secret_sha256 must be 64 lower-case hex digits (the SHA-256 of the "
                   "secret; `fencelockd keys new` prints it)");
      key.secret_sha256 = value.get<std::string>();
    } else if (field == "names") {
      if (!value.is_array() || value.empty() || value.size() > kMaxPatternsPerKey)
        return bad(where, "names must be a list of 1 to " + std::to_string(kMaxPatternsPerKey) +
                              " patterns");
      for (const json& pattern : value) {
        if (!pattern.is_string() || !is_valid_pattern(pattern.get<std::string>()))
          return bad(where,
                     "each name pattern is a lock name in which '*' matches any run of "
                     "characters");
        key.names.push_back(pattern.get<std::string>());
      }
    } else if (field == "rights") {
      if (!value.is_array() || value.empty()) return bad(where, "rights must be a non-empty list");
      for (const json& right : value) {
        const auto parsed = right.is_string() ? parse_rights(right.get<std::string>())
                                              : std::optional<std::uint8_t>();
        if (!parsed) return bad(where, "each right is one of lock, read, token, admin");
        key.rights |= *parsed;
      }
    } else if (field == "max_locks" || field == "max_waiters") {
      if (!value.is_number_integer() || value.get<std::int64_t>() < 1 ||
          value.get<std::int64_t>() > 1'000'000)
        return bad(where, field + " must be a whole number from 1 to 1000000");
      (field == "max_locks" ? key.max_locks : key.max_waiters) =
          static_cast<std::size_t>(value.get<std::int64_t>());
    } else if (field == "rate" || field == "burst") {
      if (!value.is_number() || value.get<double>() <= 0 || value.get<double>() > kMaxRate)
        return bad(where, field + " must be a number above 0 and at most 1000000");
      (field == "rate" ? key.rate.emplace(0) : key.burst) = value.get<double>();
    } else {
      return bad(where, "unknown field '" + field + "'");
    }
  }
  if (key.id.empty()) return bad(where, "id is missing");
  if (key.secret_sha256.empty()) return bad(where, "secret_sha256 is missing");
  if (key.names.empty()) return bad(where, "names is missing");
  if (key.rights == 0) return bad(where, "rights is missing");
  if (key.burst > 0 && !key.rate) return bad(where, "burst needs a rate");
  if (key.rate && key.burst == 0) key.burst = std::max(1.0, *key.rate);
  return key;
}

}  // namespace

std::string_view right_name(Right right) noexcept {
  switch (right) {
    case kRightLock:
      return "lock";
    case kRightRead:
      return "read";
    case kRightToken:
      return "token";
    case kRightAdmin:
      return "admin";
  }
  return "?";
}

std::optional<std::uint8_t> parse_rights(std::string_view text) {
  std::uint8_t rights = 0;
  while (true) {
    const auto comma = text.find(',');
    const std::string_view one = text.substr(0, comma);
    const auto* const known = std::find_if(std::begin(kAllRights), std::end(kAllRights),
                                           [&](Right right) { return right_name(right) == one; });
    if (known == std::end(kAllRights)) return std::nullopt;
    rights = static_cast<std::uint8_t>(rights | *known);
    if (comma == std::string_view::npos) return rights;
    text.remove_prefix(comma + 1);
  }
}

bool name_matches(std::string_view pattern, std::string_view name) noexcept {
  // Greedy glob with one backtrack point (the last '*'): linear in practice, never exponential.
  std::size_t p = 0, n = 0, star = std::string_view::npos, resume = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool is_valid_key_id(std::string_view id) noexcept {
  // A key id owns the leases its key takes: the lease-owner rule, and never empty.
  return !id.empty() && storage::is_valid_lease_owner(id);
}

ServiceResult<KeySet> KeySet::parse(std::string_view json_text) {
  const json document = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (document.is_discarded()) return bad("the file", "is not valid JSON");
  if (!document.is_object()) return bad("the file", "must be a JSON object with a \"keys\" list");
  for (const auto& [field, value] : document.items()) {
    if (field != "keys") return bad("the file", "unknown field '" + field + "'");
  }
  if (!document.contains("keys") || !document["keys"].is_array())
    return bad("the file", "must have a \"keys\" list");
  const json& entries = document["keys"];
  if (entries.size() > kMaxKeys)
    return bad("the file", "holds more than " + std::to_string(kMaxKeys) + " keys");
  KeySet set;
  std::unordered_set<std::string> ids;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    auto key = parse_key(entries[i], i);
    if (!key.ok()) return std::move(key).error();
    if (!ids.insert(key->id).second) return bad("key '" + key->id + "'", "the id is used twice");
    if (!set.by_hash_.emplace(key->secret_sha256, set.keys_.size()).second)
      return bad("key '" + key->id + "'", "its secret is another key's too");
    set.keys_.push_back(std::move(key).value());
  }
  return set;
}

ServiceResult<KeySet> KeySet::load(const std::filesystem::path& path) {
  // A FIFO or a device would block the read, or never end it.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return bad(path.string(), "is not a regular file (or cannot be reached)");
  std::ifstream in(path, std::ios::binary);
  if (!in) return bad(path.string(), "cannot be read");
  std::string text;
  text.resize(kMaxAuthFileBytes + 1);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  if (text.size() > kMaxAuthFileBytes) return bad(path.string(), "is larger than 4 MiB");
  auto set = parse(text);
  if (!set.ok()) return service_error(path.string() + ": " + set.error().message);
  return set;
}

ServiceResult<KeySet> KeySet::load_within(const std::filesystem::path& path,
                                          std::chrono::milliseconds deadline) {
  // What the reading thread and its waiter share; the thread may outlive the waiter.
  struct Read {
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    bool abandoned = false;  // the waiter gave up: the read counts as stuck until it ends
    std::optional<ServiceResult<KeySet>> result;
  };
  static std::atomic<std::size_t> stuck{0};
  if (stuck.load() >= kMaxStuckReads) {
    return service_error(path.string() + ": " + std::to_string(kMaxStuckReads) +
                         " earlier reads of it are still blocked; not reading it again");
  }
  auto read = std::make_shared<Read>();
  std::thread([read, path] {
    auto loaded = load(path);
    std::lock_guard<std::mutex> lock(read->mutex);
    read->result.emplace(std::move(loaded));
    read->done = true;
    if (read->abandoned) --stuck;
    read->done_cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(read->mutex);
  if (!read->done_cv.wait_for(lock, deadline, [&] { return read->done; })) {
    read->abandoned = true;
    ++stuck;
    return service_error(path.string() + ": reading it did not finish within " +
                         std::to_string(deadline.count()) +
                         " ms (a FIFO, a hung mount?); it is left behind");
  }
  return std::move(*read->result);
}

const ApiKey* KeySet::find_by_secret_hash(std::string_view secret_sha256) const {
  const auto found = by_hash_.find(std::string(secret_sha256));
  return found == by_hash_.end() ? nullptr : &keys_[found->second];
}

}  // namespace fencelock::service
