// The handlers of API v1, independent of HTTP framing: each takes the route's {name} and the
// request body, and answers asynchronously with a status and a JSON body. Parse → validate → call
// the engine or the token source → map errors, for every route.
//
// Lease secrets appear only in the acquire and extend answers, never in logs or read endpoints.
// Threading: handle() may be called from any thread; `reply` runs on the engine's strand or the
// token source's thread and must only post work back to the connection.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "api_error.h"
#include "fencelock/storage/redlock_engine.h"
#include "fencelock/storage/token_source.h"
#include "request_body.h"
#include "route.h"

namespace fencelock::service {

struct ApiResponse {
  unsigned status = 200;
  std::string body;
  std::string_view content_type = "application/json";
  std::string_view allow;  // the Allow header of a 405
  std::string log_detail;  // extra key=value pairs for the request log (never a secret)
  // Runs if the answer cannot reach the client (it went away first): undoes what the answer hands
  // out — an acquire's grant is released at once instead of holding the name for its whole ttl.
  std::function<void()> undelivered;
};

// Whether the token source can draw right now, for /readyz.
using TokenReadiness = std::function<bool()>;
// The /metrics text, rendered at scrape time.
using MetricsRenderer = std::function<std::string()>;

class ApiHandlers {
 public:
  using Reply = std::function<void(ApiResponse)>;
  // Stops a request that is still being worked on, because its client went away. Empty for
  // requests that answer promptly anyway; only a waiting acquire returns one.
  using Cancel = std::function<void()>;

  ApiHandlers(storage::RedlockEngine& engine, std::shared_ptr<storage::TokenSource> tokens,
              std::string token_backend, TokenReadiness token_ready, MetricsRenderer metrics);

  // Runs `route` (never kNotFound). `name` is a valid lock name for the routes that have one.
  // `reply` is called exactly once, also after a cancel (then with kClientGone, or with an answer
  // whose `undelivered` must run).
  Cancel handle(Route route, std::string_view name, std::string_view body, Reply reply);

  // {"error": {"code": ..., "message": ...}} with the error's status.
  static ApiResponse error_response(ApiError error, std::string_view message,
                                    std::optional<std::int64_t> retry_after_ms = std::nullopt);

 private:
  Cancel acquire(std::string name, std::string_view body, Reply reply);
  void extend(std::string name, std::string_view body, Reply reply);
  void release(std::string name, std::string_view body, Reply reply);
  void lock_status(std::string name, Reply reply);
  void next_token(std::string name, Reply reply);
  void current_token(std::string name, Reply reply);
  ApiResponse readiness() const;

  storage::RedlockEngine& engine_;
  std::shared_ptr<storage::TokenSource> tokens_;
  std::string token_backend_;
  TokenReadiness token_ready_;
  MetricsRenderer metrics_;
  BodyLimits limits_;
};

}  // namespace fencelock::service
