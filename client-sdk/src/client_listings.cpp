// The listing calls of Client: a page of the held locks (GET /v1/locks?prefix=P&limit=N&cursor=C,
// docs/api.md), read off the service's answer.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "client_impl.h"
#include "fencelock/api_paths.h"
#include "fencelock/client.h"
#include "fencelock/names.h"

namespace fencelock {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

}  // namespace

Result<LockListing> Client::list_locks(std::string_view prefix, std::size_t limit,
                                       std::string_view cursor) {
  if (limit < 1 || limit > 1000)
    return make(ErrorCode::kInvalidArgument, "limit must be from 1 to 1000");
  for (const char c : std::string(prefix) + std::string(cursor)) {
    if (!is_lock_name_char(c))
      return make(ErrorCode::kInvalidArgument, "prefix and cursor hold only [A-Za-z0-9._:-]");
  }
  std::string target = std::string(api_paths::kLockSet) + "?limit=" + std::to_string(limit);
  if (!prefix.empty()) target.append("&prefix=").append(prefix);
  if (!cursor.empty()) target.append("&cursor=").append(cursor);
  Clock::time_point sent_at;
  auto parsed = expect_object(
      impl_->call("GET", target, {}, Impl::Retry::kSafe, milliseconds(0), std::nullopt, sent_at));
  if (!parsed.ok()) return std::move(parsed).error();
  const json& locks = parsed.value()["locks"];
  if (!locks.is_array()) return make(ErrorCode::kInternal, "the listing has no locks array");
  LockListing listing;
  for (const json& lock : locks) {
    if (!lock.is_object() || !lock["name"].is_string() ||
        !lock["remaining_ms"].is_number_unsigned())
      return make(ErrorCode::kInternal, "a listed lock lacks its name or remaining_ms");
    HeldLock held{lock["name"].get<std::string>(), std::nullopt, std::nullopt,
                  milliseconds(lock["remaining_ms"].get<std::int64_t>())};
    if (lock["token"].is_number_unsigned()) held.token = lock["token"].get<std::uint64_t>();
    if (lock["owner"].is_string()) held.owner = lock["owner"].get<std::string>();
    listing.locks.push_back(std::move(held));
  }
  if (parsed.value()["next"].is_string()) listing.next = parsed.value()["next"].get<std::string>();
  return listing;
}

}  // namespace fencelock
