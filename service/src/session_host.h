// What the HTTP sessions of one server share: their settings, the handlers, the request observer,
// and the registry that caps and drains them. Each session holds the host by shared_ptr and reports
// its end through it, so a session that outlives the server (its last handler discarded when the
// io_context is torn down) never calls into a destroyed server; the server detaches its drain
// callback when it goes.
// Thread-safe: sessions on many strands add and forget themselves concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "api_handlers.h"
#include "fencelock/storage/engine_options.h"
#include "route.h"

namespace fencelock::service {

class HttpSession;

struct HttpServerOptions {
  storage::NodeAddress listen{"127.0.0.1", 8080};
  std::size_t body_limit = std::size_t{64} * 1024;  // bytes of request body; more → 413
  std::size_t header_limit =
      std::size_t{8} * 1024;             // bytes of request line + headers; more → 431-ish 400
  std::size_t max_connections = 10'000;  // further connections are closed at once
  std::chrono::milliseconds idle_timeout{60'000};  // waiting for (the rest of) a request
  std::chrono::milliseconds write_timeout{30'000};
};

// What the request log and the metrics learn about each answered request.
struct RequestRecord {
  std::string_view method;
  Route route;
  std::string_view name;  // empty for routes without one
  unsigned status;
  std::chrono::steady_clock::duration duration;
  std::string_view detail;  // ApiResponse::log_detail
};
using RequestObserver = std::function<void(const RequestRecord&)>;

class SessionHost {
 public:
  SessionHost(HttpServerOptions options, ApiHandlers& handlers, RequestObserver observer)
      : options_(std::move(options)), handlers_(handlers), observer_(std::move(observer)) {}

  const HttpServerOptions& options() const noexcept { return options_; }
  ApiHandlers& handlers() noexcept { return handlers_; }
  void observe(const RequestRecord& record) const {
    if (observer_) observer_(record);
  }
  bool draining() const noexcept { return draining_.load(std::memory_order_relaxed); }
  std::size_t open_connections() const noexcept { return open_.load(std::memory_order_relaxed); }

  // A session began; false (and nothing recorded) when the connection cap is reached.
  bool add(const std::shared_ptr<HttpSession>& session);
  // A session ended (its destructor).
  void forget(HttpSession* session);

  // Starts draining: returns the live sessions (to be told to drain) and runs `drained` once none
  // is left (at once if none is).
  std::vector<std::shared_ptr<HttpSession>> drain(std::function<void()> drained);
  // Takes back the drained callback, if it has not run: for the grace timeout and for the server's
  // destruction. Returns it (empty if it already ran).
  std::function<void()> take_drained();

 private:
  void check_drained();

  const HttpServerOptions options_;
  ApiHandlers& handlers_;
  RequestObserver observer_;
  std::atomic<std::size_t> open_{0};
  std::atomic<bool> draining_{false};
  std::mutex mutex_;  // guards sessions_ and drained_
  std::unordered_map<HttpSession*, std::weak_ptr<HttpSession>> sessions_;
  std::function<void()> drained_;
};

}  // namespace fencelock::service
