// The HTTP/1.1 front of fencelockd: a listener that accepts connections and hands each to a
// session (http_session.h) — a TLS session when the server has a TLS context (tls_context.h),
// which then serves every connection of the port; the sessions' shared host (session_host.h) caps
// their number and drains them on shutdown.
//
// Every connection gets its own strand; a request is read with the body limit and the idle
// timeout, handled by RequestHandler, answered, and the connection kept alive for the next one.
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

#include "base/route.h"
#include "base/service_result.h"
#include "fencelock/storage/engine_options.h"
#include "http/exchange.h"
#include "http/session_host.h"
#include "http/tls_context.h"

namespace fencelock::service {

class HttpServer {
 public:
  // `tls`: null for plain HTTP; otherwise every connection is TLS with the context current when it
  // was accepted. It must outlive the server.
  HttpServer(boost::asio::io_context& io, HttpServerOptions options, RequestHandler& handlers,
             RequestObserver observer, const TlsContext* tls = nullptr);
  ~HttpServer();

  // Binds and listens. Errors (address in use, permission) name the address.
  ServiceStatus listen();
  void start_accepting();

  // Stops accepting and closes idle keep-alive connections; requests in flight are answered
  // (with Connection: close). `done` runs once no connection is left or after `grace`.
  void shutdown(std::chrono::milliseconds grace, std::function<void()> done);

  std::uint16_t port() const noexcept { return port_; }
  std::size_t open_connections() const noexcept { return host_->open_connections(); }
  std::uint64_t refused_connections() const noexcept { return host_->refused_connections(); }
  // Clients that closed in the middle of sending a request (SessionHost::hang_ups()).
  std::uint64_t hang_ups() const noexcept { return host_->hang_ups(); }
  std::size_t body_bytes_reserved() const noexcept { return host_->body_bytes_reserved(); }
  std::uint64_t tls_handshake_failures() const noexcept { return host_->tls_handshake_failures(); }
  bool tls() const noexcept { return tls_ != nullptr; }
  bool draining() const noexcept { return host_->draining(); }
  const HttpServerOptions& options() const noexcept { return host_->options(); }

 private:
  void do_accept();
  void accept_later();

  boost::asio::io_context& io_;
  const TlsContext* tls_;
  std::shared_ptr<SessionHost> host_;        // shared with every session
  boost::asio::ip::tcp::acceptor acceptor_;  // on its own strand: shutdown() posts to it
  boost::asio::steady_timer accept_retry_;   // pause after an accept error (EMFILE, ...)
  std::uint16_t port_ = 0;
  boost::asio::steady_timer grace_timer_;  // touched only from handlers posted to io_
};

}  // namespace fencelock::service
