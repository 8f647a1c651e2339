// One HTTP/1.1 connection: read a request (body limit, idle timeout) → route → handle → write the
// answer → read the next, until the client closes, a timeout, an unrecoverable request, or
// shutdown. Each async step is a do_x/on_x pair on the connection's strand; the session lives as
// long as an async operation holds its shared_from_this().
//
// While a request that may wait (an acquire with wait_ms) is being handled, the session watches
// the socket: if the client closes it (EOF or reset; pipelined bytes end the watch), the request
// is cancelled, and an answer that still arrives is not written — its `undelivered` step runs
// instead (a grant is released at once) and the request is logged with status 499.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "api_handlers.h"
#include "route.h"
#include "session_host.h"

namespace fencelock::service {

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(boost::asio::ip::tcp::socket&& socket, std::shared_ptr<SessionHost> host);
  ~HttpSession();

  // Starts serving as the host admitted it (session_host.h): reads requests, reads requests from
  // a health-only connection, or answers 503 at once and closes.
  void run(Admission admission);
  // Shutdown: close now if waiting for a request; otherwise finish the current one and close.
  void drain();

 private:
  void do_read();
  void read_header();
  void on_header(boost::beast::error_code ec);
  void on_body(boost::beast::error_code ec);
  void begin_request();
  void refuse_connection(Admission admission);
  void release_body();
  void watch_for_disconnect();
  void on_readable(boost::beast::error_code ec, std::uint64_t request);
  void on_response(std::uint64_t request, ApiResponse response);
  void do_write();
  void on_write(boost::beast::error_code ec, std::size_t bytes);
  void respond_and_close(ApiResponse response);
  void close();

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  std::shared_ptr<SessionHost> host_;  // outlives this session, whatever happens to the server
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  boost::beast::http::request<boost::beast::http::string_body> request_;
  boost::beast::http::response<boost::beast::http::string_body> response_;
  Route route_ = Route::kNotFound;
  std::string_view name_;  // the route's {name}: a view into request_'s target
  std::string detail_;
  std::chrono::steady_clock::time_point started_;
  bool keep_alive_ = true;
  bool health_only_ = false;       // admitted over the cap: probes only, then closed
  std::size_t body_reserved_ = 0;  // of the host's body budget, for the current request
  bool busy_ = false;              // a request is being handled or answered
  bool closed_ = false;
  std::uint64_t request_seq_ = 0;  // numbers requests, so a stale disconnect watch is ignored
  ApiHandlers::Cancel cancel_;     // of the request being handled, while it may wait
  bool watching_ = false;          // a disconnect watch is pending on the socket
  bool client_gone_ = false;       // the client closed while its request was being handled
  bool answered_ = false;          // the current request has its answer (later ones are dropped)
  std::function<void()> undelivered_;  // of the answer being written
};

}  // namespace fencelock::service
