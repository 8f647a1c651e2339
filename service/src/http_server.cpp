#include "http_server.h"

#include <boost/asio/strand.hpp>

#include "http_session.h"
#include "log.h"

namespace fencelock::service {

namespace asio = boost::asio;
using asio::ip::tcp;

HttpServer::HttpServer(asio::io_context& io, HttpServerOptions options, ApiHandlers& handlers,
                       RequestObserver observer)
    : io_(io),
      options_(std::move(options)),
      handlers_(handlers),
      observer_(std::move(observer)),
      acceptor_(asio::make_strand(io)),
      accept_retry_(acceptor_.get_executor()),
      grace_timer_(io) {}

HttpServer::~HttpServer() { *alive_ = false; }

storage::Status HttpServer::listen() {
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(options_.listen.host, ec);
  if (ec) return storage::make_error(storage::ErrorCode::kInvalidArgument, "listen address: " + ec.message());
  const tcp::endpoint endpoint(address, options_.listen.port);
  const std::string where = options_.listen.to_string();
  if (acceptor_.open(endpoint.protocol(), ec); ec) {
    return storage::make_error(storage::ErrorCode::kUnavailable, "cannot open " + where + ": " + ec.message());
  }
  acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (acceptor_.bind(endpoint, ec); ec) {
    return storage::make_error(storage::ErrorCode::kUnavailable, "cannot listen on " + where + ": " + ec.message());
  }
  if (acceptor_.listen(asio::socket_base::max_listen_connections, ec); ec) {
    return storage::make_error(storage::ErrorCode::kUnavailable, "cannot listen on " + where + ": " + ec.message());
  }
  port_ = acceptor_.local_endpoint().port();
  return storage::Done{};
}

void HttpServer::start_accepting() { do_accept(); }

void HttpServer::do_accept() {
  acceptor_.async_accept(asio::make_strand(io_), [this](boost::system::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (ec) {
      // Out of file descriptors (or similar): the listening socket stays readable, so accepting
      // again at once would spin. Pause, say so, and try again.
      log_event(LogLevel::kWarning, "accept_failed", "error=\"" + ec.message() + "\" retry_in_ms=100");
      accept_later();
      return;
    }
    if (open_.load(std::memory_order_relaxed) >= options_.max_connections) {
      boost::system::error_code ignored;
      socket.close(ignored);  // over the limit: refuse by closing, before reading anything
    } else {
      socket.set_option(tcp::no_delay(true), ec);
      auto session = std::make_shared<HttpSession>(std::move(socket), *this);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        sessions_.emplace(session.get(), session);
      }
      open_.fetch_add(1, std::memory_order_relaxed);
      session->run();
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

void HttpServer::observe(const RequestRecord& record) const {
  if (observer_) observer_(record);
}

void HttpServer::forget(HttpSession* session) {
  open_.fetch_sub(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sessions_.erase(session);
  }
  check_drained();
}

void HttpServer::shutdown(std::chrono::milliseconds grace, std::function<void()> done) {
  draining_ = true;
  asio::post(acceptor_.get_executor(), [this] {  // the acceptor is only touched on its strand
    boost::system::error_code ignored;
    accept_retry_.cancel();
    acceptor_.close(ignored);
  });
  std::vector<std::shared_ptr<HttpSession>> live;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    drained_ = std::move(done);
    for (auto& [raw, weak] : sessions_) {
      if (auto session = weak.lock()) live.push_back(std::move(session));
    }
  }
  for (auto& session : live) session->drain();
  live.clear();
  grace_timer_.expires_after(grace);
  grace_timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec == asio::error::operation_aborted) return;
    std::function<void()> finish;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      finish = std::move(drained_);
      drained_ = nullptr;
    }
    if (finish) {
      log_event(LogLevel::kWarning, "shutdown_grace_expired",
                "open_connections=" + std::to_string(open_connections()));
      finish();
    }
  });
  check_drained();
}

void HttpServer::check_drained() {
  std::function<void()> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!draining_ || !sessions_.empty() || !drained_) return;
    done = std::move(drained_);
    drained_ = nullptr;
  }
  asio::post(io_, [this] { grace_timer_.cancel(); });
  done();
}

}  // namespace fencelock::service
