// The HTTP/1.1 front of fencelockd: a listener that accepts connections and a registry of the
// sessions it spawned (http_session.h), so it can cap their number and drain them on shutdown.
//
// Every connection gets its own strand; a request is read with the body limit and the idle
// timeout, handled by ApiHandlers, answered, and the connection kept alive for the next one.
// No thread per connection: the io_context's few threads serve them all.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "api_handlers.h"
#include "fencelock/storage/engine_options.h"
#include "fencelock/storage/result.h"
#include "route.h"

namespace fencelock::service {

class HttpSession;

struct HttpServerOptions {
  storage::NodeAddress listen{"127.0.0.1", 8080};
  std::size_t body_limit = 64 * 1024;  // bytes of request body; more → 413
  std::size_t header_limit = 8 * 1024;  // bytes of request line + headers; more → 431-ish 400
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

class HttpServer {
 public:
  HttpServer(boost::asio::io_context& io, HttpServerOptions options, ApiHandlers& handlers,
             RequestObserver observer);
  ~HttpServer();

  // Binds and listens. Errors: kUnavailable (address in use, permission), with the address.
  storage::Status listen();
  void start_accepting();

  // Stops accepting and closes idle keep-alive connections; requests in flight are answered
  // (with Connection: close). `done` runs once no connection is left or after `grace`.
  void shutdown(std::chrono::milliseconds grace, std::function<void()> done);

  std::uint16_t port() const noexcept { return port_; }
  std::size_t open_connections() const noexcept { return open_.load(std::memory_order_relaxed); }
  bool draining() const noexcept { return draining_.load(std::memory_order_relaxed); }

  // For sessions.
  const HttpServerOptions& options() const noexcept { return options_; }
  ApiHandlers& handlers() noexcept { return handlers_; }
  void observe(const RequestRecord& record) const;
  void forget(HttpSession* session);
  // Shared with every session: false once the server is gone, so a session destroyed later (its
  // last handler discarded when the io_context is torn down) does not call into it.
  std::shared_ptr<const std::atomic<bool>> liveness() const noexcept { return alive_; }

 private:
  void do_accept();
  void accept_later();
  void check_drained();

  boost::asio::io_context& io_;
  HttpServerOptions options_;
  ApiHandlers& handlers_;
  RequestObserver observer_;
  boost::asio::ip::tcp::acceptor acceptor_;  // on its own strand: shutdown() posts to it
  boost::asio::steady_timer accept_retry_;      // pause after an accept error (EMFILE, ...)
  std::shared_ptr<std::atomic<bool>> alive_ = std::make_shared<std::atomic<bool>>(true);
  std::uint16_t port_ = 0;
  std::atomic<std::size_t> open_{0};
  std::atomic<bool> draining_{false};

  std::mutex mutex_;  // guards sessions_ and drained_
  std::unordered_map<HttpSession*, std::weak_ptr<HttpSession>> sessions_;
  std::function<void()> drained_;
  boost::asio::steady_timer grace_timer_;  // touched only from handlers posted to io_
};

}  // namespace fencelock::service
