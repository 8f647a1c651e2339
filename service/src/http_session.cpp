#include "http_session.h"

#include <sys/socket.h>

#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <cerrno>

#include "log.h"
#include "router.h"

namespace fencelock::service {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

Method method_of(http::verb verb) {
  switch (verb) {
    case http::verb::get:
      return Method::kGet;
    case http::verb::post:
      return Method::kPost;
    case http::verb::delete_:
      return Method::kDelete;
    case http::verb::head:
      return Method::kHead;
    default:
      return Method::kOther;
  }
}

// Bytes read while waiting for a request's first byte.
constexpr std::size_t kFirstRead = 4096;

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// Health, readiness and metrics: what a connection over the cap may still ask.
bool is_probe(http::verb verb, std::string_view target) {
  const std::string_view path = origin_path(target);
  return verb == http::verb::get && (path == "/healthz" || path == "/readyz" || path == "/metrics");
}

}  // namespace

HttpSession::HttpSession(asio::ip::tcp::socket&& socket, std::shared_ptr<SessionHost> host)
    : stream_(std::move(socket)), host_(std::move(host)) {}

HttpSession::~HttpSession() {
  release_body();
  host_->forget(this);
}

void HttpSession::run(Admission admission) {
  switch (admission) {
    case Admission::kServe:
      break;
    case Admission::kHealthOnly:
      health_only_ = true;
      break;
    case Admission::kRefuseCapped:
    case Admission::kRefuseClient:
      return asio::dispatch(stream_.get_executor(), [self = shared_from_this(), admission] {
        self->refuse_connection(admission);
      });
  }
  asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->do_read(); });
}

void HttpSession::refuse_connection(Admission admission) {
  // Answered without reading anything: a client over a cap learns why and when to come back,
  // instead of a silent close. The request it may have sent is never read.
  begin_request();
  keep_alive_ = false;
  respond_and_close(ApiHandlers::refuse(
      RequestFault::kOverloaded, 0,
      admission == Admission::kRefuseClient
          ? "too many open connections from this address (--max-connections-per-client)"
          : "too many open connections (--max-connections)"));
}

void HttpSession::release_body() {
  if (body_reserved_ == 0) return;
  host_->release_body(body_reserved_);
  body_reserved_ = 0;
}

void HttpSession::drain() {
  asio::post(stream_.get_executor(), [self = shared_from_this()] {
    if (!self->busy_) self->close();
    // A busy session answers with Connection: close (it checks draining()) and closes after.
  });
}

void HttpSession::do_read() {
  if (closed_) return;
  if (host_->draining()) return close();
  parser_.emplace();
  parser_->body_limit(host_->options().body_limit);
  parser_->header_limit(static_cast<std::uint32_t>(host_->options().header_limit));
  if (buffer_.size() > 0) return read_header();  // a pipelined request is already here
  // Idle: wait for the first byte as long as a keep-alive connection may idle; from then on the
  // whole request must arrive within the request timeout (a byte a second holds nothing).
  stream_.expires_after(host_->options().idle_timeout);
  stream_.async_read_some(buffer_.prepare(kFirstRead),
                          [self = shared_from_this()](beast::error_code ec, std::size_t bytes) {
                            self->buffer_.commit(bytes);
                            if (ec) return self->close();
                            self->read_header();
                          });
}

void HttpSession::read_header() {
  stream_.expires_after(host_->options().request_timeout);
  http::async_read_header(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_header(ec); });
}

void HttpSession::begin_request() {
  started_ = std::chrono::steady_clock::now();
  busy_ = true;
  ++request_seq_;
  answered_ = false;
  route_ = Route::kNotFound;
  name_ = {};
}

void HttpSession::on_header(beast::error_code ec) {
  if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
      ec == asio::error::operation_aborted || ec == asio::error::connection_reset ||
      ec == asio::error::eof) {
    return close();
  }
  begin_request();
  if (ec == http::error::body_limit) {
    return respond_and_close(
        ApiHandlers::refuse(RequestFault::kBodyTooLarge, host_->options().body_limit));
  }
  if (ec) return respond_and_close(ApiHandlers::refuse(RequestFault::kMalformed, 0, ec.message()));
  const auto& header = parser_->get();
  // Transfer-Encoding other than exactly "chunked" cannot be framed ("gzip, chunked" would be
  // read as plain chunks): refuse it rather than read what follows as another request (RFC 9112
  // §6.1; request smuggling behind a proxy otherwise).
  if (const auto te = header.find(http::field::transfer_encoding); te != header.end()) {
    if (!parser_->chunked() || !beast::iequals(trimmed(te->value()), "chunked") ||
        header.count(http::field::transfer_encoding) != 1) {
      return respond_and_close(ApiHandlers::refuse(RequestFault::kUnsupportedTransferEncoding, 0));
    }
  }
  // RFC 9112 §3.2: an HTTP/1.1 request has exactly one Host; HTTP/1.0 at most one.
  const std::size_t hosts = header.count(http::field::host);
  if (hosts > 1 || (hosts == 0 && header.version() >= 11)) {
    return respond_and_close(ApiHandlers::refuse(RequestFault::kBadHost, 0));
  }
  // The body's memory comes from one budget shared by every connection: a chunked body may grow
  // to the limit, so it reserves the limit.
  std::size_t body = 0;
  if (parser_->chunked()) {
    body = host_->options().body_limit;
  } else if (const auto length = parser_->content_length()) {
    body = static_cast<std::size_t>(std::min<std::uint64_t>(*length, host_->options().body_limit));
  }
  if (body > 0) {
    if (!host_->reserve_body(body)) {
      return respond_and_close(ApiHandlers::refuse(RequestFault::kOverloaded, 0,
                                                   "request bodies in progress use the memory "
                                                   "budget (--body-memory)"));
    }
    body_reserved_ = body;
  }
  http::async_read(stream_, buffer_, *parser_,
                   [self = shared_from_this()](beast::error_code read_ec, std::size_t) {
                     self->on_body(read_ec);
                   });
}

void HttpSession::on_body(beast::error_code ec) {
  if (ec == beast::error::timeout || ec == asio::error::operation_aborted ||
      ec == asio::error::connection_reset || ec == asio::error::eof ||
      ec == http::error::end_of_stream || ec == http::error::partial_message) {
    busy_ = false;
    return close();
  }
  if (ec == http::error::body_limit) {
    return respond_and_close(
        ApiHandlers::refuse(RequestFault::kBodyTooLarge, host_->options().body_limit));
  }
  if (ec) return respond_and_close(ApiHandlers::refuse(RequestFault::kMalformed, 0, ec.message()));
  request_ = parser_->release();
  keep_alive_ = request_.keep_alive() && !health_only_;
  if (health_only_ && !is_probe(request_.method(), request_.target())) {
    return respond_and_close(ApiHandlers::refuse(RequestFault::kOverloaded, 0,
                                                 "too many open connections (--max-connections)"));
  }
  const auto authorization = request_.find(http::field::authorization);
  ApiHandlers::Dispatched dispatched = host_->handlers().dispatch(
      method_of(request_.method()), request_.target(), request_.body(),
      authorization == request_.end() ? std::string_view() : authorization->value(),
      [self = shared_from_this(), request = request_seq_](ApiResponse response) {
        asio::post(self->stream_.get_executor(),
                   [self, request, response = std::move(response)]() mutable {
                     self->on_response(request, std::move(response));
                   });
      });
  route_ = dispatched.route;
  name_ = dispatched.name;
  cancel_ = std::move(dispatched.cancel);
  // The answer is always posted, so it cannot have arrived yet: watch while the request waits.
  if (cancel_) watch_for_disconnect();
}

void HttpSession::watch_for_disconnect() {
  watching_ = true;
  stream_.socket().async_wait(asio::ip::tcp::socket::wait_read,
                              [self = shared_from_this(), request = request_seq_](
                                  beast::error_code ec) { self->on_readable(ec, request); });
}

void HttpSession::on_readable(beast::error_code ec, std::uint64_t request) {
  if (request != request_seq_ || !cancel_ || closed_) return;  // answered meanwhile
  watching_ = false;
  if (ec) return;
  char byte = 0;
  const ssize_t got = ::recv(stream_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (got > 0) return;  // a pipelined request: the client is still there (and the watch ends)
  if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return watch_for_disconnect();
  // EOF or a reset: nobody will read the answer. Stop the request; its answer, when it comes,
  // is logged and undone instead of written.
  client_gone_ = true;
  const ApiHandlers::Cancel cancel = std::move(cancel_);
  cancel_ = nullptr;
  cancel();
}

void HttpSession::on_response(std::uint64_t request, ApiResponse response) {
  if (request != request_seq_ || answered_) {  // a second answer to one request: never written
    if (response.undelivered) response.undelivered();
    return;
  }
  answered_ = true;
  cancel_ = nullptr;
  if (watching_) {  // the request is answered: the watch has nothing more to tell
    watching_ = false;
    beast::error_code ignored;
    stream_.socket().cancel(ignored);
  }
  if (client_gone_) {
    client_gone_ = false;
    if (response.undelivered) response.undelivered();
    host_->observe(RequestRecord{request_.method_string(), route_, name_,
                                 http_status(ApiError::kClientGone),
                                 std::chrono::steady_clock::now() - started_,
                                 "error=" + std::string(wire_code(ApiError::kClientGone))});
    busy_ = false;
    return close();
  }
  if (closed_) {
    if (response.undelivered) response.undelivered();
    return;
  }
  undelivered_ = std::move(response.undelivered);
  if (response.close) keep_alive_ = false;
  const bool keep = keep_alive_ && !host_->draining();
  response_ = {};
  response_.version(11);
  response_.result(response.status);
  response_.set(http::field::server, "fencelockd");
  response_.set(http::field::content_type, response.content_type);
  response_.set(http::field::cache_control, "no-store");
  if (!response.allow.empty()) response_.set(http::field::allow, response.allow);
  if (response.retry_after_s)
    response_.set(http::field::retry_after, std::to_string(*response.retry_after_s));
  if (response.authenticate)
    response_.set(http::field::www_authenticate, "Bearer realm=\"fencelock\"");
  response_.keep_alive(keep);
  response_.body() = std::move(response.body);
  response_.prepare_payload();
  keep_alive_ = keep;
  detail_ = std::move(response.log_detail);
  do_write();
}

void HttpSession::respond_and_close(ApiResponse response) {
  keep_alive_ = false;
  on_response(request_seq_, std::move(response));
}

void HttpSession::do_write() {
  stream_.expires_after(host_->options().write_timeout);
  http::async_write(stream_, response_,
                    [self = shared_from_this()](beast::error_code ec, std::size_t bytes) {
                      self->on_write(ec, bytes);
                    });
}

void HttpSession::on_write(beast::error_code ec, std::size_t) {
  if (ec && undelivered_) undelivered_();  // the answer did not get out: undo what it hands out
  undelivered_ = nullptr;
  host_->observe(RequestRecord{request_.method_string(), route_, name_, response_.result_int(),
                               std::chrono::steady_clock::now() - started_, detail_});
  busy_ = false;
  request_ = {};
  release_body();
  if (ec || !keep_alive_) return close();
  do_read();
}

void HttpSession::close() {
  if (closed_) return;
  closed_ = true;
  beast::error_code ignored;
  stream_.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  stream_.close();
}

}  // namespace fencelock::service
