// A lock's status, and a watch of it (GET /v1/locks/{name}[?after_token=T&wait_ms=N]): the plain
// status inspects the nodes and reads the token counter at once; a watch waits in the engine
// (storage/src/engine/lock_watches.h) until the lock is no longer held with token T, or N ms, and
// answers the status with "changed" instead of "last_token". A watch counts as a waiting acquire
// against the key's max_waiters and in waiting_watches().
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api/api_handlers.h"
#include "api/handler_support.h"
#include "api/request_query.h"

namespace fencelock::service {

using nlohmann::json;
using namespace handler_support;

namespace {

// {"name", "held", "remaining_ms", "token", "owner"}: what both answers share.
json status_json(const std::string& name, const storage::LockStatus& status) {
  json body{{"name", name},
            {"held", status.held},
            {"remaining_ms", nullptr},
            {"token", nullptr},
            {"owner", nullptr}};
  if (status.remaining) body["remaining_ms"] = status.remaining->count();
  if (status.token) body["token"] = *status.token;
  if (!status.holder.empty()) body["owner"] = status.holder;
  return body;
}

}  // namespace

ApiHandlers::Cancel ApiHandlers::lock_status(const Call& call, Reply reply) {
  auto watch = parse_status_query(call.query, limits_.max_wait);
  if (!watch.ok()) return answer(reply, bad_request(watch.error()));
  if (*watch) return watch_lock(call, **watch, std::move(reply));
  const std::string name(call.name);
  // Inspect the nodes and read the token counter at once; answer when both are in.
  struct Join {
    std::mutex mutex;
    std::optional<EngineResult<storage::LockStatus>> status;
    std::optional<EngineResult<std::uint64_t>> token;
    Reply reply;
    std::string name;
    void finish_if_done() {
      if (!status || !token) return;
      if (!status->ok()) return reply(from_storage_error(status->error()));
      if (!token->ok()) return reply(from_storage_error(token->error()));
      json body = status_json(name, status->value());
      body["last_token"] = token->value();
      reply(ok(body));
    }
  };
  auto join = std::make_shared<Join>();
  join->reply = std::move(reply);
  join->name = name;
  engine_.inspect(name, [join](EngineResult<storage::LockStatus> status) {
    std::lock_guard<std::mutex> lock(join->mutex);
    join->status.emplace(std::move(status));
    join->finish_if_done();
  });
  tokens_->current(name,
                   [join, check = engine_.current_check()](EngineResult<std::uint64_t> token) {
                     if (token.ok()) {
                       if (auto refusal = check(token.value())) {
                         token = engine_unavailable(*refusal);
                       }
                     }
                     std::lock_guard<std::mutex> lock(join->mutex);
                     join->token.emplace(std::move(token));
                     join->finish_if_done();
                   });
  return {};
}

ApiHandlers::Cancel ApiHandlers::watch_lock(const Call& call, const WatchQuery& query,
                                            Reply reply) {
  const std::string name(call.name);
  if (call.usage && !call.usage->begin_wait()) {
    return answer(reply, quota_error("key '" + std::string(call.owner) + "' has " +
                                     std::to_string(*call.usage->max_waiters()) +
                                     " acquires or watches waiting already (max_waiters)"));
  }
  waiting_watches_.fetch_add(1, std::memory_order_relaxed);
  auto end_wait = [this, usage = call.usage] {
    waiting_watches_.fetch_sub(1, std::memory_order_relaxed);
    if (usage) usage->end_wait();
  };
  storage::AcquireTicket ticket;
  try {  // the handler runs exactly once, unless the call throws: then nothing runs it
    ticket = engine_.watch(name, query.after_token, query.wait,
                           [name, after = query.after_token, end_wait,
                            reply = std::move(reply)](EngineResult<storage::LockStatus> status) {
                             end_wait();
                             if (!status.ok()) return reply(from_storage_error(status.error()));
                             json body = status_json(name, status.value());
                             body["changed"] =
                                 !status->held || !status->token || *status->token != after;
                             reply(ok(body));
                           });
  } catch (...) {
    end_wait();
    throw;
  }
  return [ticket] { ticket.cancel(); };
}

}  // namespace fencelock::service
