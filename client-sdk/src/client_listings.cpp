// The listing calls of Client: a page of the held locks, the semaphores with a permit held or the
// read/write locks with a grant held (GET /v1/locks, /v1/semaphores, /v1/rwlocks
// ?prefix=P&limit=N&cursor=C; docs/api.md). The three share one query, one paging and one error
// mapping; each kind is a row (ListingKind) saying where it is asked, which field holds its
// entries and how one entry is read.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client_impl.h"
#include "fencelock/api_paths.h"
#include "fencelock/client.h"
#include "fencelock/names.h"

namespace fencelock {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// `object[key]`, or null when `object` has no `key` (a const json must not be indexed by a key it
// lacks).
const json& member(const json& object, const char* key) {
  static const json null;
  const auto found = object.find(key);
  return found == object.end() ? null : *found;
}

// An entry's name: every kind's entries carry one.
Result<std::string> name_of(const json& entry) {
  if (!entry.is_object() || !member(entry, "name").is_string())
    return make(ErrorCode::kInternal, "a listed entry lacks its name");
  return entry["name"].get<std::string>();
}

Result<HeldLock> held_lock_of(const json& lock) {
  if (!lock.is_object() || !member(lock, "name").is_string() ||
      !member(lock, "remaining_ms").is_number_unsigned())
    return make(ErrorCode::kInternal, "a listed lock lacks its name or remaining_ms");
  HeldLock held{lock["name"].get<std::string>(), std::nullopt, std::nullopt,
                milliseconds(lock["remaining_ms"].get<std::int64_t>())};
  if (member(lock, "token").is_number_unsigned()) held.token = lock["token"].get<std::uint64_t>();
  if (member(lock, "owner").is_string()) held.owner = lock["owner"].get<std::string>();
  return held;
}

Result<ListedSemaphore> listed_semaphore_of(const json& entry) {
  auto name = name_of(entry);
  if (!name.ok()) return std::move(name).error();
  auto status = semaphore_status_of(entry);
  if (!status.ok()) return std::move(status).error();
  return ListedSemaphore{std::move(name).value(), status.value()};
}

Result<ListedRwLock> listed_rwlock_of(const json& entry) {
  auto name = name_of(entry);
  if (!name.ok()) return std::move(name).error();
  auto status = rwlock_status_of(entry);
  if (!status.ok()) return std::move(status).error();
  return ListedRwLock{std::move(name).value(), std::move(status).value()};
}

// One kind of listing: its path, the field of the answer that holds its entries, where a Listing
// keeps them and how one entry is read.
template <class Listing, class Entry>
struct ListingKind {
  std::string_view path;
  const char* field = nullptr;
  std::vector<Entry> Listing::*entries = nullptr;
  Result<Entry> (*read)(const json& entry) = nullptr;
};

constexpr ListingKind<LockListing, HeldLock> kLocks{api_paths::kLockSet, "locks",
                                                    &LockListing::locks, held_lock_of};
constexpr ListingKind<SemaphoreListing, ListedSemaphore> kSemaphores{
    api_paths::kSemaphoreList, "semaphores", &SemaphoreListing::semaphores, listed_semaphore_of};
constexpr ListingKind<RwLockListing, ListedRwLock> kRwLocks{
    api_paths::kRwLockList, "rwlocks", &RwLockListing::rwlocks, listed_rwlock_of};

// One page of `kind`. The query is checked before anything is sent; the call is safe to repeat.
// An entry that cannot be read fails the page (kInternal).
template <class Listing, class Entry>
Result<Listing> list_page(Client::Impl& impl, const ListingKind<Listing, Entry>& kind,
                          std::string_view prefix, std::size_t limit, std::string_view cursor) {
  if (limit < 1 || limit > 1000)
    return make(ErrorCode::kInvalidArgument, "limit must be from 1 to 1000");
  for (const char c : std::string(prefix) + std::string(cursor)) {
    if (!is_lock_name_char(c))
      return make(ErrorCode::kInvalidArgument, "prefix and cursor hold only [A-Za-z0-9._:-]");
  }
  std::string target = std::string(kind.path) + "?limit=" + std::to_string(limit);
  if (!prefix.empty()) target.append("&prefix=").append(prefix);
  if (!cursor.empty()) target.append("&cursor=").append(cursor);
  Clock::time_point sent_at;
  auto parsed = expect_object(impl.call("GET", target, {}, Client::Impl::Retry::kSafe,
                                        milliseconds(0), std::nullopt, sent_at));
  if (!parsed.ok()) return std::move(parsed).error();
  const json& page = parsed.value();
  if (!member(page, kind.field).is_array())
    return make(ErrorCode::kInternal, std::string("the listing has no ") + kind.field + " array");
  Listing listing;
  for (const json& one : page[kind.field]) {
    auto entry = kind.read(one);
    if (!entry.ok()) return std::move(entry).error();
    (listing.*kind.entries).push_back(std::move(entry).value());
  }
  if (member(page, "next").is_string()) listing.next = page["next"].get<std::string>();
  return listing;
}

}  // namespace

Result<LockListing> Client::list_locks(std::string_view prefix, std::size_t limit,
                                       std::string_view cursor) {
  return list_page(*impl_, kLocks, prefix, limit, cursor);
}

Result<SemaphoreListing> Client::list_semaphores(std::string_view prefix, std::size_t limit,
                                                 std::string_view cursor) {
  return list_page(*impl_, kSemaphores, prefix, limit, cursor);
}

Result<RwLockListing> Client::list_rwlocks(std::string_view prefix, std::size_t limit,
                                           std::string_view cursor) {
  return list_page(*impl_, kRwLocks, prefix, limit, cursor);
}

}  // namespace fencelock
