// One HTTP/1.1 connection, plain (PlainStream) or TLS (TlsStream), on its own strand: read a
// request's head → screen it (framing, browser_guard.h, route, API key: refused before any of the
// body is read or reserved) → read the body (body limit, shared body budget) → handle → answer →
// read the next, until the client closes, a timeout, an unrecoverable request or shutdown.
// - Memory: the read buffer is bounded (header limit + body limit + kFramingSlack) whatever the
//   framing a client sends.
// - TLS: the handshake has its own timeout; a failed one is counted, logged (rate-limited) and
//   closed — plain HTTP on the TLS port first gets `400 plain_http_on_tls_port` in plain text; a
//   connection over a cap is closed before any handshake; the end is a bounded close_notify.
// - A request that may wait (an acquire with wait_ms) is cancelled when the client closes the
//   connection; an answer that still arrives is not written, its `undelivered` step runs instead
//   (a grant is released) and it is logged as 499.
// - Every request has an id (RequestId: the client's acceptable X-Request-Id or a new one), sent
//   back as X-Request-Id and named in the log.
// Why each rule: docs/architecture.md, "One connection".
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

#include "base/route.h"
#include "http/exchange.h"
#include "http/session.h"
#include "http/session_host.h"

namespace fencelock::service {

using PlainStream = boost::beast::tcp_stream;
using TlsStream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

// How long a TLS session waits for the client's close_notify after sending its own.
inline constexpr std::chrono::milliseconds kTlsShutdownTimeout{1000};
// Plain HTTP on the TLS port: how long writing the 400 and then reading (and dropping) what the
// client still sends may take before the socket is closed.
inline constexpr std::chrono::milliseconds kPlainHttpLinger{1000};
// A request answered on its head whose body was not read (plain TCP): how long, and for how many
// bytes, the unread body is read and dropped after the answer before the socket is closed.
inline constexpr std::chrono::milliseconds kUnreadBodyLinger{1000};
inline constexpr std::size_t kUnreadBodyDiscard = std::size_t{1} << 20;

template <class Stream>
class HttpSession final : public Session, public std::enable_shared_from_this<HttpSession<Stream>> {
 public:
  static constexpr bool kTls = std::is_same_v<Stream, TlsStream>;

  // TLS: handshakes with `context` (kept alive for the session's life: a reload does not touch
  // it), which must not be null. Plain: `context` is ignored.
  HttpSession(boost::asio::ip::tcp::socket&& socket, std::shared_ptr<SessionHost> host,
              std::shared_ptr<boost::asio::ssl::context> context = nullptr);
  ~HttpSession() override;
  HttpSession(const HttpSession&) = delete;
  HttpSession& operator=(const HttpSession&) = delete;

  // Starts serving as the host admitted it (session_host.h): reads requests, reads requests from
  // a health-only connection, or answers 503 at once and closes — over TLS, closes at once.
  void run(Admission admission);
  void drain() override;

 private:
  static Stream make_stream(boost::asio::ip::tcp::socket&& socket,
                            boost::asio::ssl::context* context);
  boost::beast::tcp_stream& tcp() { return boost::beast::get_lowest_layer(stream_); }
  void do_handshake(Admission admission);  // TLS only
  void on_handshake(boost::beast::error_code ec, Admission admission);
  void answer_plain_http();  // TLS only
  void discard_until_closed(std::size_t budget = SIZE_MAX);
  void linger();
  void serve(Admission admission);
  void do_read();
  void read_header();
  void on_header(boost::beast::error_code ec);
  void on_body(boost::beast::error_code ec);
  void answer_head(ApiResponse response, bool has_body);
  // Bytes a read may add to buffer_ now, at most `wanted`: 0 when the buffer is at its limit.
  std::size_t room(std::size_t wanted) const;
  void begin_request();
  void client_hung_up(std::string_view stage);
  void observe(unsigned status, const AnswerLog* answer);
  void refuse_connection(Admission admission);
  void release_body();
  void watch_for_disconnect();
  void on_readable(boost::beast::error_code ec, std::uint64_t request);
  void on_tls_watch(boost::beast::error_code ec, std::uint64_t request);
  void client_went_away();
  void on_response(std::uint64_t request, ApiResponse response);
  void deliver(ApiResponse response);
  void do_write();
  void on_write(boost::beast::error_code ec, std::size_t bytes);
  void respond_and_close(ApiResponse response);
  void close();
  void close_socket();

  std::shared_ptr<boost::asio::ssl::context> context_;  // TLS: before stream_, which uses it
  Stream stream_;
  boost::beast::flat_buffer buffer_;   // bounded: see above
  std::shared_ptr<SessionHost> host_;  // outlives this session, whatever happens to the server
  // The request being read or handled: its head, target and body stay in the parser until its
  // answer is written (views into them name the request).
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::string method_;                 // of the current request, for the log
  RequestHandler::Screened screened_;  // the current request as its head decided it
  std::string head_;  // of the answer being written: status line and headers (kept, reused)
  std::string body_;  // of the answer being written
  unsigned status_ = 0;
  Route route_ = Route::kNotFound;
  std::string_view name_;  // the route's {name}: a view into request_'s target
  AnswerLog answer_log_;   // of the answer being written
  std::string peer_;       // the client's address, for the request log
  RequestId request_id_;   // of the current request
  std::chrono::steady_clock::time_point started_;
  bool keep_alive_ = true;
  bool health_only_ = false;       // admitted over the cap: probes only, then closed
  std::size_t body_reserved_ = 0;  // of the host's body budget, for the current request
  bool busy_ = false;              // a request is being handled or answered
  bool closed_ = false;
  bool handshake_done_ = false;  // TLS: a close sends close_notify only after a handshake
  std::string client_;  // TLS: the client certificate's subject (mTLS), for the request log
  std::uint64_t request_seq_ = 0;  // numbers requests, so a stale disconnect watch is ignored
  RequestHandler::Cancel cancel_;  // of the request being handled, while it may wait
  bool watching_ = false;          // a disconnect watch is pending on the connection
  bool client_gone_ = false;       // the client closed while its request was being handled
  bool answered_ = false;          // the current request has its answer (later ones are dropped)
  bool unread_body_ = false;       // answered on its head: its body was never read
  std::optional<ApiResponse> parked_;  // TLS: an answer waiting for the watch's read to end
  std::function<void()> undelivered_;  // of the answer being written
};

// The status line and headers of an answer (what Beast's serializer wrote before, without an
// allocation per header): HTTP/1.1, Server, Content-Type, Cache-Control: no-store, X-Request-Id,
// Allow / Retry-After / WWW-Authenticate when the answer has them, Connection: close unless
// `keep_alive`, and Content-Length of the body; then the blank line. Replaces `head`'s contents.
// `request_id` must be fit for a header (RequestId makes sure); the other values come from code.
void write_answer_head(std::string& head, const ApiResponse& response, std::string_view request_id,
                       bool keep_alive);

extern template class HttpSession<PlainStream>;
extern template class HttpSession<TlsStream>;

}  // namespace fencelock::service
