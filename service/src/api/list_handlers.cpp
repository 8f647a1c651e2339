// The listings (GET /v1/locks, /v1/semaphores, /v1/rwlocks ?prefix=P&limit=N&cursor=C): parse the
// query → the engine's list, list_semaphores or list_rwlocks (storage/src/engine/list_operation.h),
// which leaves out (and does not count) each name the caller's key may not read → {"locks" (or
// "semaphores", "rwlocks"): [...], "next": cursor or null}, each semaphore and read/write lock as
// its status route answers it. A page with few names (or none) still carries `next` until the
// listing is complete.
#include <nlohmann/json.hpp>
#include <string_view>

#include "api/api_handlers.h"
#include "api/handler_support.h"
#include "api/request_query.h"

namespace fencelock::service {

using nlohmann::json;
using namespace handler_support;

namespace {

// The call's listing request: its query, and the names its key may read.
ServiceResult<storage::ListRequest> listing_request(const ApiHandlers::Call& call) {
  auto request = parse_list_query(call.query);
  if (request.ok() && call.decision != nullptr) {  // the engine neither answers nor counts them
    request->visible = [key = *call.decision](std::string_view name) {
      return Authorizer::check_name(key, name).allowed;
    };
  }
  return request;
}

// {"<field>": entries, "next": ...}: a page of `Page` with its entries as `entry` words them.
template <class Page, class Entries, class Entry>
ApiResponse page_answer(const Page& page, const char* field, const Entries& entries, Entry entry) {
  json listed = json::array();
  for (const auto& one : entries) listed.push_back(entry(one));
  return ok(json{{field, std::move(listed)},
                 {"next", page.next.empty() ? json(nullptr) : json(page.next)}});
}

}  // namespace

ApiHandlers::Cancel ApiHandlers::list_locks(const Call& call, Reply reply) {
  auto request = listing_request(call);
  if (!request.ok()) return answer(reply, bad_request(request.error()));
  engine_.list(std::move(request).value(),
               [reply = std::move(reply)](EngineResult<storage::LockPage> page) {
                 if (!page.ok()) return reply(from_storage_error(page.error()));
                 reply(page_answer(*page, "locks", page->locks, [](const storage::HeldLock& held) {
                   json entry{{"name", held.name},
                              {"token", nullptr},
                              {"owner", nullptr},
                              {"remaining_ms", held.remaining.count()}};
                   if (held.token) entry["token"] = *held.token;
                   if (!held.holder.empty()) entry["owner"] = held.holder;
                   return entry;
                 }));
               });
  return {};
}

ApiHandlers::Cancel ApiHandlers::list_semaphores(const Call& call, Reply reply) {
  auto request = listing_request(call);
  if (!request.ok()) return answer(reply, bad_request(request.error()));
  engine_.list_semaphores(std::move(request).value(),
                          [reply = std::move(reply)](EngineResult<storage::SemaphorePage> page) {
                            if (!page.ok()) return reply(from_storage_error(page.error()));
                            reply(page_answer(*page, "semaphores", page->semaphores,
                                              [](const storage::ListedSemaphore& listed) {
                                                return semaphore_status_json(listed.name,
                                                                             listed.status);
                                              }));
                          });
  return {};
}

ApiHandlers::Cancel ApiHandlers::list_rwlocks(const Call& call, Reply reply) {
  auto request = listing_request(call);
  if (!request.ok()) return answer(reply, bad_request(request.error()));
  engine_.list_rwlocks(std::move(request).value(), [reply = std::move(reply)](
                                                       EngineResult<storage::RwLockPage> page) {
    if (!page.ok()) return reply(from_storage_error(page.error()));
    reply(page_answer(*page, "rwlocks", page->rwlocks, [](const storage::ListedRwLock& listed) {
      return rw_status_json(listed.name, listed.status);
    }));
  });
  return {};
}

}  // namespace fencelock::service
