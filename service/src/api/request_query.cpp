#include "api/request_query.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <functional>
#include <span>
#include <string>

namespace fencelock::service {

namespace {

// `text` with each %XX decoded; nullopt for a '%' not followed by two hex digits.
std::optional<std::string> percent_decoded(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '+') {
      out.push_back(' ');
    } else if (text[i] != '%') {
      out.push_back(text[i]);
    } else {
      unsigned value = 0;
      if (i + 2 >= text.size()) return std::nullopt;
      const auto [end, ec] = std::from_chars(text.data() + i + 1, text.data() + i + 3, value, 16);
      if (ec != std::errc() || end != text.data() + i + 3) return std::nullopt;
      out.push_back(static_cast<char>(value));
      i += 2;
    }
  }
  return out;
}

// Calls `take(index of the key in keys, decoded value)` for each "key=value" of `query`, in order;
// refuses a key not in `keys` (`takes` says which it takes: "a listing takes prefix, limit,
// cursor"), one given twice, and a value that is not percent-encoded.
ServiceStatus for_each_parameter(
    std::string_view query, std::span<const std::string_view> keys, std::string_view takes,
    const std::function<ServiceStatus(std::size_t, const std::string&)>& take) {
  std::vector<bool> seen(keys.size());
  while (!query.empty()) {
    const std::string_view pair = query.substr(0, query.find('&'));
    query.remove_prefix(std::min(query.size(), pair.size() + 1));
    if (pair.empty()) continue;
    const std::string_view raw_key = pair.substr(0, pair.find('='));
    const auto decoded_key = percent_decoded(raw_key);
    const std::string_view key = decoded_key ? std::string_view(*decoded_key) : raw_key;
    const auto value = percent_decoded(pair.substr(std::min(pair.size(), raw_key.size() + 1)));
    const auto known = std::find(keys.begin(), keys.end(), key);
    if (known == keys.end()) {
      return service_error("unknown query parameter '" + std::string(key.substr(0, 40)) + "'; " +
                           std::string(takes));
    }
    const auto index = static_cast<std::size_t>(known - keys.begin());
    if (seen[index] || !value) {
      return service_error(std::string(key) +
                           (seen[index] ? " is given twice" : " is not percent-encoded"));
    }
    seen[index] = true;
    if (auto taken = take(index, *value); !taken.ok()) return taken;
  }
  return Done{};
}

// A whole number from `low` to `high` written in decimal digits only.
std::optional<std::uint64_t> whole_number(const std::string& text, std::uint64_t low,
                                          std::uint64_t high) {
  std::uint64_t number = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), number);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty() || text[0] == '+' ||
      number < low || number > high) {
    return std::nullopt;
  }
  return number;
}

}  // namespace

ServiceResult<storage::ListRequest> parse_list_query(std::string_view query) {
  static constexpr std::array<std::string_view, 3> kKeys = {"prefix", "limit", "cursor"};
  storage::ListRequest request;
  auto parsed = for_each_parameter(
      query, kKeys, "a listing takes prefix, limit, cursor",
      [&](std::size_t key, const std::string& value) -> ServiceStatus {
        if (key == 0) {
          request.prefix = value;
        } else if (key == 2) {
          request.cursor = value;
        } else if (const auto limit = whole_number(value, 1, storage::kMaxListLimit)) {
          request.limit = static_cast<std::size_t>(*limit);
        } else {
          return service_error("limit must be a whole number from 1 to " +
                               std::to_string(storage::kMaxListLimit));
        }
        return Done{};
      });
  if (!parsed.ok()) return std::move(parsed).error();
  return request;
}

ServiceResult<std::optional<WatchQuery>> parse_status_query(std::string_view query,
                                                            std::chrono::milliseconds max_wait) {
  static constexpr std::array<std::string_view, 2> kKeys = {"after_token", "wait_ms"};
  std::optional<std::uint64_t> after;
  std::optional<std::chrono::milliseconds> wait;
  const auto longest = static_cast<std::uint64_t>(std::max<std::int64_t>(0, max_wait.count()));
  auto parsed = for_each_parameter(
      query, kKeys, "a lock's status takes after_token and wait_ms (a watch)",
      [&](std::size_t key, const std::string& value) -> ServiceStatus {
        const auto number = whole_number(value, 0, UINT64_MAX);
        if (!number) {
          return service_error(key == 0 ? "after_token must be a whole number (a fencing token)"
                                        : "wait_ms must be a whole number of milliseconds");
        }
        if (key == 0) {
          after = *number;
        } else {  // a longer wait is cut to the longest, as long polls are
          wait = std::chrono::milliseconds(static_cast<std::int64_t>(std::min(*number, longest)));
        }
        return Done{};
      });
  if (!parsed.ok()) return std::move(parsed).error();
  if (!after && wait) {
    return service_error(
        "wait_ms needs after_token: a watch waits for a change from the lock held "
        "with that token");
  }
  if (!after) return std::optional<WatchQuery>();
  return std::optional<WatchQuery>(
      WatchQuery{*after, wait.value_or(std::min(kDefaultWatchWait, max_wait))});
}

}  // namespace fencelock::service
