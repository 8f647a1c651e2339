// The handlers of API v1, independent of HTTP framing: dispatch() routes a request through the
// route table (method + path → handler, the one place that maps them; router.h), answers 404, 405,
// a bad name and HEAD itself, and runs the handler: parse → validate → call the lock engine or the
// token source → map errors. Every answer, error or not, carries the API's envelope.
//
// Lease proofs appear only in the acquire and extend answers, never in logs or read endpoints.
// Lock sets (POST/DELETE /v1/locks, POST /v1/locks:extend) carry their names in the body; a key
// needs its right on every one. A lock set counts as one lock per name against a key's
// max_locks, a permit as one lock; a waiting acquire of either as one waiter.
// Threading: dispatch() may be called from any thread; `reply` runs on the engine's strand or the
// token source's thread and must only post work back to the connection.
// ApiHandlers is the HTTP layer's RequestHandler (http/exchange.h).
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/api_error.h"
#include "api/request_body.h"
#include "api/request_query.h"
#include "auth/authorizer.h"
#include "base/route.h"
#include "fencelock/storage/lock_engine.h"
#include "fencelock/storage/token_source.h"
#include "http/exchange.h"
#include "http/router.h"

namespace fencelock::service {

// The /metrics text, rendered at scrape time.
using MetricsRenderer = std::function<std::string()>;

class ApiHandlers final : public RequestHandler {
 public:
  // `tokens`: what /v1/tokens draws from; /readyz reports its backend and readiness (TokenSource
  // traits() and ready()). `authorizer`: who may call (nullptr: anyone; auth/authorizer.h). It
  // must outlive this.
  ApiHandlers(storage::LockEngine& engine, std::shared_ptr<storage::TokenSource> tokens,
              MetricsRenderer metrics, const Authorizer* authorizer = nullptr);

  // Routes and authenticates a request on its head (`authorization`: its Authorization header,
  // "" if none): the key's right, the name in the path and the key's rate. A request refused here
  // costs no body memory and touches no engine and no token source.
  Screened screen(Method method, std::string_view target,
                  std::string_view authorization) const override;

  // Handles a screened request (one without an answer) with its body: if the keys were reloaded
  // since screen(), the key is checked again (a revoked key is refused); the names in a lock set's
  // body are checked against the key; then the handler runs. `reply` is called once, also after a
  // cancel (then with kClientGone, or with an answer whose `undelivered` must run); an exception
  // from a handler becomes a 500 and a log line — and, if the handler had already handed `reply`
  // on, possibly a second answer later, which the caller must drop (running its `undelivered`).
  Dispatched dispatch(const Screened& screened, std::string_view body, Reply reply) override;

  // screen() and then dispatch(): one request whose head and body are both at hand.
  Dispatched dispatch(Method method, std::string_view target, std::string_view body,
                      std::string_view authorization, Reply reply);

  // Acquires with a wait (wait_ms > 0) that have not been answered yet: waiting for a held lock,
  // or still on their first attempt. Thread-safe.
  std::size_t waiting_acquires() const noexcept {
    return waiting_acquires_.load(std::memory_order_relaxed);
  }

  // Watches of a lock (GET /v1/locks/{name}?after_token=T) not answered yet. Thread-safe.
  std::size_t waiting_watches() const noexcept {
    return waiting_watches_.load(std::memory_order_relaxed);
  }

  // What /readyz decides: it answers 200 when both hold. Thread-safe.
  struct ReadyState {
    bool nodes_ok = false;   // a quorum of lock nodes votes
    bool tokens_ok = false;  // the token source is ready and nothing refuses grants
    std::size_t voting = 0;
    std::size_t total = 0;
    std::size_t quorum = 0;
    std::optional<std::string> refusal;  // why grants are refused, if they are
    bool ready() const noexcept { return nodes_ok && tokens_ok; }
    // One line for people: "ready: 5 of 5 lock nodes vote", or what is missing.
    std::string summary() const;
  };
  ReadyState ready_state() const;

  // One authorized request as a handler sees it.
  struct Call {
    std::string_view name;  // the {name} of the route, "" for routes without one
    std::string_view body;
    std::string_view owner;  // the caller's API key id ("" without keys): leases are bound to it
    std::shared_ptr<KeyUsage> usage;  // the key's caps and counters, if it has caps
    std::string_view query{};         // the target's query, after '?' ("" if none)
    // Who calls, for a route whose names are only known in the answer (a listing); valid during
    // the handler's call only, null without keys.
    const Authorizer::Decision* decision = nullptr;
  };
  using Handler = Cancel (ApiHandlers::*)(const Call& call, Reply reply);

  // The route table (router.h): every route of API v1 once, kNotFound aside.
  using RouteEntryType = RouteEntry<Handler>;
  using RouteTable = std::array<RouteEntryType, kRouteCount - 1>;
  static const RouteTable& routes();
  // `route`'s row; nullptr for kNotFound.
  static const RouteEntryType* route_entry(Route route) noexcept;
  // Whether a request is a probe (health, readiness, metrics): served over the connection cap.
  static bool is_probe(Method method, std::string_view target) noexcept;

  bool probe(Method method, std::string_view target) const noexcept override {
    return is_probe(method, target);
  }

 private:
  Cancel acquire(const Call& call, Reply reply);
  Cancel extend(const Call& call, Reply reply);
  Cancel revoke(const Call& call, Reply reply);
  // The listings (list_handlers.cpp): held locks, semaphores, read/write locks.
  Cancel list_locks(const Call& call, Reply reply);
  Cancel list_semaphores(const Call& call, Reply reply);
  Cancel list_rwlocks(const Call& call, Reply reply);
  // acquire and revoke once their bodies are read: the engine's verb, the key's caps, the answer.
  Cancel take_lock(const Call& call, const AcquireBody& body, bool revoke, Reply reply);
  Cancel release(const Call& call, Reply reply);
  Cancel lock_status(const Call& call, Reply reply);  // watch_handler.cpp, with the watch
  Cancel watch_lock(const Call& call, const WatchQuery& query, Reply reply);
  Cancel next_token(const Call& call, Reply reply);
  Cancel current_token(const Call& call, Reply reply);
  Cancel healthz(const Call& call, Reply reply);
  Cancel readyz(const Call& call, Reply reply);
  Cancel metrics(const Call& call, Reply reply);
  Cancel openapi(const Call& call, Reply reply);
  // Lock sets (set_handlers.cpp) and semaphores (semaphore_handlers.cpp).
  Cancel acquire_set(const Call& call, Reply reply);
  Cancel extend_set(const Call& call, Reply reply);
  Cancel release_set(const Call& call, Reply reply);
  Cancel acquire_permit(const Call& call, Reply reply);
  Cancel extend_permit(const Call& call, Reply reply);
  Cancel release_permit(const Call& call, Reply reply);
  Cancel semaphore_status(const Call& call, Reply reply);
  // Read/write locks (rw_handlers.cpp).
  Cancel acquire_rw(const Call& call, Reply reply);
  Cancel extend_rw(const Call& call, Reply reply);
  Cancel release_rw(const Call& call, Reply reply);
  Cancel rwlock_status(const Call& call, Reply reply);

  storage::LockEngine& engine_;
  std::shared_ptr<storage::TokenSource> tokens_;
  std::string token_backend_;
  MetricsRenderer metrics_;
  const Authorizer* authorizer_;
  BodyLimits limits_;
  std::atomic<std::size_t> waiting_acquires_{0};
  std::atomic<std::size_t> waiting_watches_{0};
};

}  // namespace fencelock::service
