#include "http/http_session.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <cerrno>
#include <string>
#include <string_view>

#include "base/append_decimal.h"
#include "http/connection_facts.h"
#include "http/router.h"
#include "ops/log.h"

namespace fencelock::service {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;

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

// The client closed the connection, it timed out, or the TLS layer broke: nothing to answer.
bool is_gone(const beast::error_code& ec) {
  return ec == http::error::end_of_stream || ec == beast::error::timeout ||
         ec == asio::error::operation_aborted || ec == asio::error::connection_reset ||
         ec == asio::error::eof || ec == ssl::error::stream_truncated ||
         ec.category() == asio::error::get_ssl_category();
}

// The value of a request header, "" if absent.
template <class Header, class Name>
std::string_view header_value(const Header& header, Name name) {
  const auto found = header.find(name);
  return found == header.end() ? std::string_view() : std::string_view(found->value());
}

// browser_guard.h's checks on a request head. A HEAD is not checked: screen() answers it 405
// without a body, whatever else it carries.
template <class Header>
std::optional<ApiResponse> screen_browser_head(const BrowserGuardOptions& options,
                                               const Header& header, bool has_body) {
  if (header.method() == http::verb::head) return std::nullopt;
  return screen_browser(
      options,
      RequestHead{header_value(header, http::field::host),
                  header_value(header, http::field::origin), header_value(header, "Sec-Fetch-Site"),
                  header_value(header, http::field::content_type), has_body,
                  header.count(http::field::origin) > 1 || header.count("Sec-Fetch-Site") > 1});
}

}  // namespace

void write_answer_head(std::string& head, const ApiResponse& response, std::string_view request_id,
                       bool keep_alive) {
  head.clear();
  head += "HTTP/1.1 ";
  append_decimal(head, response.status);
  head += ' ';
  head += http::obsolete_reason(static_cast<http::status>(response.status));
  head += "\r\nServer: fencelockd\r\nContent-Type: ";
  head += response.content_type;
  head += "\r\nCache-Control: no-store\r\nX-Request-Id: ";
  head += request_id;
  head += "\r\n";
  if (!response.allow.empty()) {
    head += "Allow: ";
    head += response.allow;
    head += "\r\n";
  }
  if (response.retry_after_s) {
    head += "Retry-After: ";
    append_decimal(head,
                   static_cast<std::uint64_t>(std::max<std::int64_t>(*response.retry_after_s, 0)));
    head += "\r\n";
  }
  if (response.authenticate) head += "WWW-Authenticate: Bearer realm=\"fencelock\"\r\n";
  if (!keep_alive) head += "Connection: close\r\n";
  head += "Content-Length: ";
  append_decimal(head, response.body.size());
  head += "\r\n\r\n";
}

template <class Stream>
Stream HttpSession<Stream>::make_stream(asio::ip::tcp::socket&& socket, ssl::context* context) {
  if constexpr (kTls) {
    return Stream(std::move(socket), *context);
  } else {
    return Stream(std::move(socket));
  }
}

template <class Stream>
HttpSession<Stream>::HttpSession(asio::ip::tcp::socket&& socket, std::shared_ptr<SessionHost> host,
                                 std::shared_ptr<ssl::context> context)
    : context_(std::move(context)),
      stream_(make_stream(std::move(socket), context_.get())),
      buffer_(host->options().header_limit + host->options().body_limit + kFramingSlack),
      host_(std::move(host)) {}

template <class Stream>
std::size_t HttpSession<Stream>::room(std::size_t wanted) const {
  return std::min(wanted, buffer_.max_size() - buffer_.size());
}

template <class Stream>
HttpSession<Stream>::~HttpSession() {
  release_body();
  host_->forget(this);
}

template <class Stream>
void HttpSession<Stream>::run(Admission admission) {
  asio::dispatch(tcp().get_executor(), [self = this->shared_from_this(), admission] {
    self->peer_ = peer_of(self->tcp().socket());
    if constexpr (kTls) {
      // A refused connection is not recorded by the host: a handshake would hold its descriptor
      // (and an SSL object) uncounted for as long as the client likes. Closed at once, it is what
      // the client would see of any failed handshake; the refusal is counted
      // (fencelock_http_connections_refused_total).
      if (admission == Admission::kRefuseClient || admission == Admission::kRefuseCapped)
        return self->close();
      self->do_handshake(admission);
    } else {
      self->serve(admission);
    }
  });
}

template <class Stream>
void HttpSession<Stream>::do_handshake(Admission admission) {
  if constexpr (kTls) {
    // The handshake is a round trip or two: it gets a short deadline of its own, like a request's
    // headers get the request timeout, so a client that connects and says nothing lets go soon.
    tcp().expires_after(
        std::min(host_->options().handshake_timeout, host_->options().request_timeout));
    stream_.async_handshake(ssl::stream_base::server,
                            [self = this->shared_from_this(), admission](beast::error_code ec) {
                              self->on_handshake(ec, admission);
                            });
  }
}

template <class Stream>
void HttpSession<Stream>::on_handshake(beast::error_code ec, Admission admission) {
  if (!ec) {
    handshake_done_ = true;
    if constexpr (kTls) client_ = certificate_subject(stream_.native_handle());
    return serve(admission);
  }
  const bool plain_http =
      ec.category() == asio::error::get_ssl_category() &&
      ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_HTTP_REQUEST;
  if (!host_->draining()) {  // plain HTTP on this port shows as "http request"
    host_->count_tls_handshake_failure();
    std::uint64_t unlogged = 0;
    if (host_->log_tls_handshake_failure(unlogged)) {
      const std::string reason =
          ec == beast::error::timeout ? std::string("timed out") : one_line(ec.message());
      std::string_view verify;
      std::string subject;
      if constexpr (kTls) {
        verify = certificate_problem(stream_.native_handle());
        subject = certificate_subject(stream_.native_handle());
      }
      log_event(LogLevel::kInfo, "tls_handshake_failed",
                {{"peer", peer_},
                 {"reason", reason},
                 LogField::if_present("verify", verify),
                 LogField::if_present("client", subject),
                 LogField::if_present("not_logged_before", unlogged)});
    }
  }
  if (plain_http && !host_->draining()) return answer_plain_http();
  close();
}

template <class Stream>
void HttpSession<Stream>::answer_plain_http() {
  host_->new_request_id(request_id_);
  auto answer = std::make_shared<const std::string>(plain_http_answer(request_id_.view()));
  // OpenSSL read the request's first bytes as a TLS record; the answer goes on the bare socket.
  tcp().expires_after(kPlainHttpLinger);
  asio::async_write(tcp(), asio::buffer(*answer),
                    [self = this->shared_from_this(), answer](beast::error_code ec, std::size_t) {
                      if (ec) return self->close();
                      beast::error_code ignored;
                      self->tcp().socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
                      self->discard_until_closed();
                    });
}

// Closing with the client's unread bytes still queued would send a reset, which can destroy the
// answer before the client reads it: read them until the client closes or kPlainHttpLinger ends.
template <class Stream>
void HttpSession<Stream>::discard_until_closed(std::size_t budget) {
  buffer_.clear();
  tcp().async_read_some(buffer_.prepare(kFirstRead), [self = this->shared_from_this(), budget](
                                                         beast::error_code ec, std::size_t bytes) {
    if (ec || bytes >= budget) return self->close();
    self->discard_until_closed(budget - bytes);
  });
}

template <class Stream>
void HttpSession<Stream>::serve(Admission admission) {
  switch (admission) {
    case Admission::kServe:
      break;
    case Admission::kHealthOnly:
      health_only_ = true;
      break;
    case Admission::kRefuseCapped:
    case Admission::kRefuseClient:
      return refuse_connection(admission);
  }
  do_read();
}

template <class Stream>
void HttpSession<Stream>::refuse_connection(Admission admission) {
  // Answered without reading anything: a client over a cap learns why and when to come back,
  // instead of a silent close. The request it may have sent is never read.
  begin_request();
  keep_alive_ = false;
  respond_and_close(RequestHandler::refuse(
      RequestFault::kOverloaded, 0,
      admission == Admission::kRefuseClient
          ? "too many open connections from this address (--max-connections-per-client)"
          : "too many open connections (--max-connections)"));
}

template <class Stream>
void HttpSession<Stream>::release_body() {
  if (body_reserved_ == 0) return;
  host_->release_body(body_reserved_);
  body_reserved_ = 0;
}

template <class Stream>
void HttpSession<Stream>::drain() {
  asio::post(tcp().get_executor(), [self = this->shared_from_this()] {
    // A busy session answers with Connection: close (it checks draining()) and closes after.
    if (self->busy_ || self->closed_) return;
    if constexpr (kTls) {
      // Its read (or handshake) must end before the TLS shutdown starts: stop it, and its handler
      // closes.
      self->tcp().cancel();
    } else {
      self->close();
    }
  });
}

template <class Stream>
void HttpSession<Stream>::do_read() {
  if (closed_) return;
  if (host_->draining()) return close();
  parser_.emplace();
  parser_->body_limit(host_->options().body_limit);
  parser_->header_limit(static_cast<std::uint32_t>(host_->options().header_limit));
  if (buffer_.size() > 0) return read_header();  // a pipelined request is already here
  // Idle: wait for the first byte as long as a keep-alive connection may idle; from then on the
  // whole request must arrive within the request timeout (a byte a second holds nothing). A
  // connection over the cap has kOverCapHeaderTimeout for all of its head.
  tcp().expires_after(health_only_ ? kOverCapHeaderTimeout : host_->options().idle_timeout);
  stream_.async_read_some(
      buffer_.prepare(kFirstRead),
      [self = this->shared_from_this()](beast::error_code ec, std::size_t bytes) {
        self->buffer_.commit(bytes);
        if (ec) return self->close();
        self->read_header();
      });
}

template <class Stream>
void HttpSession<Stream>::read_header() {
  if (!health_only_) tcp().expires_after(host_->options().request_timeout);
  http::async_read_header(stream_, buffer_, *parser_,
                          [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                            self->on_header(ec);
                          });
}

template <class Stream>
void HttpSession<Stream>::begin_request() {
  started_ = std::chrono::steady_clock::now();
  busy_ = true;
  ++request_seq_;
  answered_ = false;
  route_ = Route::kNotFound;
  name_ = {};
  method_.clear();
  host_->new_request_id(request_id_);
}

template <class Stream>
void HttpSession<Stream>::client_hung_up(std::string_view stage) {
  host_->count_hang_up();
  log_event(LogLevel::kDebug, "client_hung_up", {{"peer", peer_}, {"stage", stage}});
}

template <class Stream>
void HttpSession<Stream>::observe(unsigned status, const AnswerLog* answer) {
  host_->observe(RequestRecord{method_, route_, name_, status,
                               std::chrono::steady_clock::now() - started_, answer, client_, peer_,
                               request_id_.view()});
}

template <class Stream>
void HttpSession<Stream>::on_header(beast::error_code ec) {
  if (is_gone(ec)) return close();
  if (ec == http::error::partial_message) {  // closed in the middle of the header: not a request
    client_hung_up("header");
    return close();
  }
  begin_request();
  if (ec == http::error::body_limit) {
    return respond_and_close(
        RequestHandler::refuse(RequestFault::kBodyTooLarge, host_->options().body_limit));
  }
  if (ec)
    return respond_and_close(RequestHandler::refuse(RequestFault::kMalformed, 0, ec.message()));
  const auto& header = parser_->get();
  method_.assign(header.method_string().data(), header.method_string().size());
  if (const auto id = header.find(kRequestIdHeader); id != header.end())
    request_id_.accept(id->value());
  // Transfer-Encoding other than exactly "chunked" cannot be framed ("gzip, chunked" would be
  // read as plain chunks): refuse it rather than read what follows as another request (RFC 9112
  // §6.1; request smuggling behind a proxy otherwise).
  if (const auto te = header.find(http::field::transfer_encoding); te != header.end()) {
    if (!parser_->chunked() || !beast::iequals(trimmed(te->value()), "chunked") ||
        header.count(http::field::transfer_encoding) != 1) {
      return respond_and_close(
          RequestHandler::refuse(RequestFault::kUnsupportedTransferEncoding, 0));
    }
  }
  // RFC 9112 §3.2: an HTTP/1.1 request has exactly one Host; HTTP/1.0 at most one.
  const std::size_t hosts = header.count(http::field::host);
  if (hosts > 1 || (hosts == 0 && header.version() >= 11)) {
    return respond_and_close(RequestHandler::refuse(RequestFault::kBadHost, 0));
  }
  // The body's memory comes from one budget shared by every connection: a chunked body may grow
  // to the limit, so it reserves the limit.
  std::size_t body = 0;
  if (parser_->chunked()) {
    body = host_->options().body_limit;
  } else if (const auto length = parser_->content_length()) {
    body = static_cast<std::size_t>(std::min<std::uint64_t>(*length, host_->options().body_limit));
  }
  const bool has_body = parser_->chunked() || body > 0;
  keep_alive_ = header.keep_alive() && !health_only_;
  if (health_only_ && !host_->handlers().probe(method_of(header.method()), header.target())) {
    host_->count_refused_request();
    return respond_and_close(RequestHandler::refuse(
        RequestFault::kOverloaded, 0, "too many open connections (--max-connections)"));
  }
  if (auto refused = screen_browser_head(host_->options().browser, header, has_body))
    return answer_head(std::move(*refused), has_body);
  // No GET takes a body: one that announces a body gets no share of the budget (the probes and
  // the public routes are GETs and need no key).
  if (has_body && header.method() == http::verb::get) {
    return respond_and_close(
        RequestHandler::refuse(RequestFault::kMalformed, 0, "a GET request takes no body"));
  }
  screened_ = host_->handlers().screen(method_of(header.method()), header.target(),
                                       header_value(header, http::field::authorization));
  route_ = screened_.route;
  name_ = screened_.name;
  if (screened_.answer) {
    ApiResponse answer = std::move(*screened_.answer);
    screened_.answer.reset();
    return answer_head(std::move(answer), has_body);
  }
  if (body > 0) {
    if (!host_->reserve_body(body)) {
      return respond_and_close(RequestHandler::refuse(RequestFault::kOverloaded, 0,
                                                      "request bodies in progress use the memory "
                                                      "budget (--body-memory)"));
    }
    body_reserved_ = body;
  }
  http::async_read(stream_, buffer_, *parser_,
                   [self = this->shared_from_this()](beast::error_code read_ec, std::size_t) {
                     self->on_body(read_ec);
                   });
}

// An answer decided by the request's head. Its body, if it has one, is never read: the
// connection closes after the answer (lingering, over plain TCP, so that the client reads it).
template <class Stream>
void HttpSession<Stream>::answer_head(ApiResponse response, bool has_body) {
  if (!has_body) return on_response(request_seq_, std::move(response));
  unread_body_ = true;
  respond_and_close(std::move(response));
}

template <class Stream>
void HttpSession<Stream>::on_body(beast::error_code ec) {
  if (is_gone(ec) || ec == http::error::partial_message) {
    if (ec != beast::error::timeout && ec != asio::error::operation_aborted) client_hung_up("body");
    busy_ = false;
    return close();
  }
  if (ec == http::error::body_limit) {
    return respond_and_close(
        RequestHandler::refuse(RequestFault::kBodyTooLarge, host_->options().body_limit));
  }
  if (ec == http::error::buffer_overflow) {  // chunk sizes, extensions or trailers without end
    return respond_and_close(
        RequestHandler::error_response(WireError::kPayloadTooLarge,
                                       "the request's chunked framing exceeds the connection's "
                                       "buffer of " +
                                           std::to_string(buffer_.max_size()) + " bytes"));
  }
  if (ec)
    return respond_and_close(RequestHandler::refuse(RequestFault::kMalformed, 0, ec.message()));
  RequestHandler::Dispatched dispatched = host_->handlers().dispatch(
      screened_, parser_->get().body(),
      [self = this->shared_from_this(), request = request_seq_](ApiResponse response) {
        asio::post(self->tcp().get_executor(),
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

template <class Stream>
void HttpSession<Stream>::watch_for_disconnect() {
  watching_ = true;
  if constexpr (kTls) {
    // Only reading the TLS stream tells a close_notify from data. Bytes read here stay in buffer_
    // for the next request; the read may last as long as the request waits.
    tcp().expires_never();
    // A buffer at its limit (pipelined bytes) cannot be read into: the client is there.
    if (room(kFirstRead) == 0) {
      watching_ = false;
      return;
    }
    stream_.async_read_some(buffer_.prepare(room(kFirstRead)),
                            [self = this->shared_from_this(), request = request_seq_](
                                beast::error_code ec, std::size_t bytes) {
                              self->buffer_.commit(bytes);
                              self->on_tls_watch(ec, request);
                            });
  } else {
    tcp().socket().async_wait(asio::ip::tcp::socket::wait_read,
                              [self = this->shared_from_this(), request = request_seq_](
                                  beast::error_code ec) { self->on_readable(ec, request); });
  }
}

template <class Stream>
void HttpSession<Stream>::on_readable(beast::error_code ec, std::uint64_t request) {
  if (request != request_seq_ || !cancel_ || closed_) return;  // answered meanwhile
  watching_ = false;
  if (ec) return;
  char byte = 0;
  const ssize_t got = ::recv(tcp().socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (got > 0) return;  // a pipelined request: the client is still there (and the watch ends)
  if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
    return watch_for_disconnect();
  client_went_away();
}

template <class Stream>
void HttpSession<Stream>::on_tls_watch(beast::error_code ec, std::uint64_t request) {
  watching_ = false;
  if (parked_) {  // answered while the read was pending: write the answer now
    ApiResponse response = std::move(*parked_);
    parked_.reset();
    return deliver(std::move(response));
  }
  if (request != request_seq_ || !cancel_ || closed_) return;
  if (!ec || ec == asio::error::operation_aborted) return;  // pipelined bytes: still there
  client_went_away();  // close_notify (eof), a reset, or a broken TLS stream
}

// EOF or a reset: nobody will read the answer. Stop the request; its answer, when it comes, is
// logged and undone instead of written.
template <class Stream>
void HttpSession<Stream>::client_went_away() {
  client_gone_ = true;
  const RequestHandler::Cancel cancel = std::move(cancel_);
  cancel_ = nullptr;
  cancel();
}

template <class Stream>
void HttpSession<Stream>::on_response(std::uint64_t request, ApiResponse response) {
  if (request != request_seq_ || answered_) {  // a second answer to one request: never written
    if (response.undelivered) response.undelivered();
    return;
  }
  answered_ = true;
  cancel_ = nullptr;
  if (watching_) {  // the request is answered: the watch has nothing more to tell
    beast::error_code ignored;
    if constexpr (kTls) {
      parked_.emplace(std::move(response));  // on_tls_watch() delivers it
      tcp().socket().cancel(ignored);
      return;
    }
    watching_ = false;
    tcp().socket().cancel(ignored);
  }
  deliver(std::move(response));
}

template <class Stream>
void HttpSession<Stream>::deliver(ApiResponse response) {
  if (client_gone_) {
    client_gone_ = false;
    if (response.undelivered) response.undelivered();
    AnswerLog gone;
    gone.error = wire_code(WireError::kClientGone);
    observe(http_status(WireError::kClientGone), &gone);
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
  status_ = response.status;
  write_answer_head(head_, response, request_id_.view(), keep);
  body_ = std::move(response.body);
  keep_alive_ = keep;
  answer_log_ = std::move(response.log);
  do_write();
}

template <class Stream>
void HttpSession<Stream>::respond_and_close(ApiResponse response) {
  keep_alive_ = false;
  on_response(request_seq_, std::move(response));
}

template <class Stream>
void HttpSession<Stream>::do_write() {
  tcp().expires_after(host_->options().write_timeout);
  // Plain TCP: head and body in one gathered write (one sendmsg), neither copied. TLS: one buffer
  // (the body appended to the head): Beast's TLS stream did not write a two-buffer answer whole.
  if constexpr (kTls) {
    head_.append(body_);
    body_.clear();
  }
  const std::array<asio::const_buffer, 2> answer{asio::buffer(head_), asio::buffer(body_)};
  asio::async_write(stream_, answer,
                    [self = this->shared_from_this()](beast::error_code ec, std::size_t bytes) {
                      self->on_write(ec, bytes);
                    });
}

template <class Stream>
void HttpSession<Stream>::on_write(beast::error_code ec, std::size_t) {
  if (ec && undelivered_) undelivered_();  // the answer did not get out: undo what it hands out
  undelivered_ = nullptr;
  body_.clear();
  observe(status_, &answer_log_);
  busy_ = false;
  parser_.reset();
  screened_ = {};
  release_body();
  if (!ec && unread_body_) {
    unread_body_ = false;
    if constexpr (!kTls) return linger();
  }
  if (ec || !keep_alive_) return close();
  do_read();
}

// The answer is out but the client may still be sending the body nobody reads: closing now would
// reset the connection and could destroy the answer before the client reads it. Stop sending,
// then read and drop what comes — never buffered — until the client closes, kUnreadBodyLinger
// passes or kUnreadBodyDiscard bytes were dropped.
template <class Stream>
void HttpSession<Stream>::linger() {
  beast::error_code ignored;
  tcp().socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  tcp().expires_after(kUnreadBodyLinger);
  discard_until_closed(kUnreadBodyDiscard);
}

// Over TLS after a handshake: close_notify both ways, bounded, then the socket. A client that
// went away makes the exchange fail at once. Never called with another operation in flight on
// the TLS stream (drain() cancels first; the watch delivers before anything else).
template <class Stream>
void HttpSession<Stream>::close() {
  if (closed_) return;
  closed_ = true;
  if constexpr (kTls) {
    if (handshake_done_ && tcp().socket().is_open()) {
      tcp().expires_after(kTlsShutdownTimeout);
      stream_.async_shutdown(
          [self = this->shared_from_this()](beast::error_code) { self->close_socket(); });
      return;
    }
  }
  close_socket();
}

template <class Stream>
void HttpSession<Stream>::close_socket() {
  beast::error_code ignored;
  tcp().socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  tcp().close();
}

template class HttpSession<PlainStream>;
template class HttpSession<TlsStream>;

}  // namespace fencelock::service
