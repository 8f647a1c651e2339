#include "http/http_server.h"

#include <boost/asio/strand.hpp>

#include "http/http_session.h"
#include "ops/log.h"

namespace fencelock::service {

namespace asio = boost::asio;
using asio::ip::tcp;

HttpServer::HttpServer(asio::io_context& io, HttpServerOptions options, RequestHandler& handlers,
                       RequestObserver observer, const TlsContext* tls)
    : io_(io),
      tls_(tls),
      host_(std::make_shared<SessionHost>(std::move(options), handlers, std::move(observer))),
      acceptor_(asio::make_strand(io)),
      accept_retry_(acceptor_.get_executor()),
      grace_timer_(io) {}

// Sessions may outlive the server (the io_context discards their handlers later): the drain
// callback, which calls into the server, must not run then.
HttpServer::~HttpServer() {
  host_->take_drained();
}

ServiceStatus HttpServer::listen() {
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(options().listen.host, ec);
  if (ec) return service_error("listen address: " + ec.message());
  const tcp::endpoint endpoint(address, options().listen.port);
  const std::string where = options().listen.to_string();
  if (acceptor_.open(endpoint.protocol(), ec); ec) {
    return service_error("cannot open " + where + ": " + ec.message());
  }
  acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (acceptor_.bind(endpoint, ec); ec) {
    return service_error("cannot listen on " + where + ": " + ec.message());
  }
  if (acceptor_.listen(asio::socket_base::max_listen_connections, ec); ec) {
    return service_error("cannot listen on " + where + ": " + ec.message());
  }
  port_ = acceptor_.local_endpoint().port();
  return Done{};
}

void HttpServer::start_accepting() {
  do_accept();
}

void HttpServer::do_accept() {
  acceptor_.async_accept(
      asio::make_strand(io_), [this](boost::system::error_code ec, tcp::socket socket) {
        if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
        if (ec) {
          // Out of file descriptors (or similar): the listening socket stays
          // readable, so accepting again at once would spin. Pause, say so, and
          // try again.
          log_event(LogLevel::kWarning, "accept_failed",
                    {{"error", ec.message()}, {"retry_in_ms", 100}});
          accept_later();
          return;
        }
        socket.set_option(tcp::no_delay(true), ec);
        const auto peer = socket.remote_endpoint(ec);
        const std::string client = ec ? std::string() : peer.address().to_string();
        // Over a cap, the session answers 503 without reading and closes (TLS: closes at once).
        if (tls_ != nullptr) {
          auto session =
              std::make_shared<HttpSession<TlsStream>>(std::move(socket), host_, tls_->current());
          session->run(host_->add(session, client));
        } else {
          auto session = std::make_shared<HttpSession<PlainStream>>(std::move(socket), host_);
          session->run(host_->add(session, client));
        }
        do_accept();
      });
}

void HttpServer::accept_later() {
  accept_retry_.expires_after(std::chrono::milliseconds(100));
  accept_retry_.async_wait([this](const boost::system::error_code& ec) {
    if (!ec && acceptor_.is_open()) do_accept();
  });
}

void HttpServer::shutdown(std::chrono::milliseconds grace, std::function<void()> done) {
  asio::post(acceptor_.get_executor(), [this] {  // the acceptor is only touched on its strand
    boost::system::error_code ignored;
    accept_retry_.cancel();
    acceptor_.close(ignored);
  });
  auto live = host_->drain([this, done = std::move(done)] {
    asio::post(io_, [this] { grace_timer_.cancel(); });
    done();
  });
  for (auto& session : live) session->drain();
  live.clear();
  grace_timer_.expires_after(grace);
  grace_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec == asio::error::operation_aborted) return;
    if (std::function<void()> finish = host_->take_drained()) {
      log_event(LogLevel::kWarning, "shutdown_grace_expired",
                {{"open_connections", open_connections()}});
      finish();
    }
  });
}

}  // namespace fencelock::service
