// One request and its answer as the HTTP layer hands them over, and RequestHandler, what the HTTP
// layer calls: screen() on a request's head, dispatch() with its body. The HTTP layer owns this
// interface and only reads, frames and writes; ApiHandlers (api/api_handlers.h) implements it.
// The answers the HTTP layer words itself (a request it could not read, a refused browser) use
// error_response() and refuse(), the same envelope every handler answers with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "auth/authorizer.h"
#include "base/route.h"
#include "fencelock/wire_error.h"
#include "http/router.h"

namespace fencelock::service {

// What the request log says about an answer besides its route and status. Never a secret: no
// lease, no proof, no API key secret.
struct AnswerLog {
  std::string_view error;              // the wire error code (wire_code()), "" for a success
  std::optional<std::uint64_t> token;  // the fencing token granted, extended or drawn
  std::string owner;                   // an acquire's "owner" text, as the client sent it
  std::string key;                     // the id of the API key that called, "" without keys
  bool repeated = false;  // the answer repeats an earlier grant (an acquire's request_id)
};

struct ApiResponse {
  unsigned status = 200;
  std::string body;
  std::string_view content_type = "application/json";
  std::string allow;                          // the Allow header of a 405
  std::optional<std::int64_t> retry_after_s;  // the Retry-After header of a 429
  bool authenticate = false;                  // a 401: add WWW-Authenticate: Bearer
  AnswerLog log;                              // for the request log
  bool close = false;                         // close the connection after this answer (HEAD)
  // Runs if the answer cannot reach the client (it went away first): undoes what the answer hands
  // out — an acquire's grant is released at once instead of holding the name for its whole ttl.
  std::function<void()> undelivered;
};

// Why a request could not even be read as one; the session tells, refuse() words the answer.
enum class RequestFault {
  kBodyTooLarge,
  kMalformed,
  kUnsupportedTransferEncoding,
  kBadHost,     // no Host header in HTTP/1.1, or two
  kOverloaded,  // a connection or memory cap: 503 with Retry-After (the detail says which)
};

class RequestHandler {
 public:
  using Reply = std::function<void(ApiResponse)>;
  // Stops a request that is still being worked on, because its client went away. Empty for
  // requests that answer promptly anyway.
  using Cancel = std::function<void()>;

  // What dispatch() did with a request: the route it took (kNotFound for 404/405/HEAD; a bad
  // {name} keeps the route it was meant for), the {name} it named (a view into the target; empty
  // if bad), and how to cancel it while it waits.
  struct Dispatched {
    Route route = Route::kNotFound;
    std::string_view name;
    Cancel cancel;
  };

  // A request as its head decides it, before any of its body is read (screen()).
  struct Screened {
    Route route = Route::kNotFound;  // as Dispatched::route
    std::string_view name;           // as Dispatched::name: a view into the target
    std::string_view query;          // the target's query, after '?': a view into the target
    // Set when the head alone answers the request: HEAD, 404, 405, a bad name, 401, 403, 429.
    // Nothing of the body is needed (nor should it be read or held in memory).
    std::optional<ApiResponse> answer;
    std::size_t entry = 0;           // the route's row
    Authorizer::Decision decision;   // who calls (allowed)
    std::string_view authorization;  // the head's Authorization: decided again after a reload
  };

  virtual ~RequestHandler() = default;

  // Routes and authenticates a request on its head (`authorization`: its Authorization header,
  // "" if none). A request refused here costs no body memory.
  virtual Screened screen(Method method, std::string_view target,
                          std::string_view authorization) const = 0;
  // Handles a screened request (one without an answer) with its body. `reply` is called once,
  // also after a cancel; a second answer may follow an exception in a handler, and the caller
  // drops it (running its `undelivered`).
  virtual Dispatched dispatch(const Screened& screened, std::string_view body, Reply reply) = 0;
  // Whether a request is a probe (health, readiness, metrics): served over the connection cap.
  virtual bool probe(Method method, std::string_view target) const noexcept = 0;

  // {"error": {"code": ..., "message": ...}} with the error's status.
  static ApiResponse error_response(WireError error, std::string_view message,
                                    std::optional<std::int64_t> retry_after_ms = std::nullopt);
  // The answer to a request that could not be read as one (`body_limit` words the 413).
  static ApiResponse refuse(RequestFault fault, std::size_t body_limit,
                            std::string_view detail = {});
};

}  // namespace fencelock::service
