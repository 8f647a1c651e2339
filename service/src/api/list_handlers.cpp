// The listing of held locks (GET /v1/locks?prefix=P&limit=N&cursor=C): parse the query → the
// engine's list (storage/src/engine/list_operation.h), which leaves out (and does not count) each
// name the caller's key may not read → {"locks": [...], "next": cursor or null}. A page with few
// names (or none) still carries `next` until the listing is complete.
#include <nlohmann/json.hpp>
#include <string_view>

#include "api/api_handlers.h"
#include "api/handler_support.h"
#include "api/request_query.h"

namespace fencelock::service {

using nlohmann::json;
using storage::Result;
using namespace handler_support;

ApiHandlers::Cancel ApiHandlers::list_locks(const Call& call, Reply reply) {
  auto request = parse_list_query(call.query);
  if (!request.ok()) return answer(reply, from_storage_error(request.error()));
  if (call.decision != nullptr) {  // the engine neither answers nor counts what it may not read
    request->visible = [key = *call.decision](std::string_view name) {
      return Authorizer::check_name(key, name).allowed;
    };
  }
  engine_.list(std::move(request).value(),
               [reply = std::move(reply)](Result<storage::LockPage> page) {
                 if (!page.ok()) return reply(from_storage_error(page.error()));
                 json locks = json::array();
                 for (const storage::HeldLock& held : page->locks) {
                   json entry{{"name", held.name},
                              {"token", nullptr},
                              {"owner", nullptr},
                              {"remaining_ms", held.remaining.count()}};
                   if (held.token) entry["token"] = *held.token;
                   if (!held.holder.empty()) entry["owner"] = held.holder;
                   locks.push_back(std::move(entry));
                 }
                 reply(ok(json{{"locks", std::move(locks)},
                               {"next", page->next.empty() ? json(nullptr) : json(page->next)}}));
               });
  return {};
}

}  // namespace fencelock::service
