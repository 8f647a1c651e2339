// One HTTP/1.1 connection: read a request (body limit, idle timeout) → route → handle → write the
// answer → read the next, until the client closes, a timeout, an unrecoverable request, or
// shutdown. Each async step is a do_x/on_x pair on the connection's strand; the session lives as
// long as an async operation holds its shared_from_this().
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <atomic>
#include <memory>
#include <optional>

#include "api_handlers.h"
#include "route.h"

namespace fencelock::service {

class HttpServer;

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(boost::asio::ip::tcp::socket&& socket, HttpServer& server);
  ~HttpSession();

  void run();
  // Shutdown: close now if waiting for a request; otherwise finish the current one and close.
  void drain();

 private:
  void do_read();
  void on_read(boost::beast::error_code ec, std::size_t bytes);
  void on_response(ApiResponse response);
  void do_write();
  void on_write(boost::beast::error_code ec, std::size_t bytes);
  void respond_and_close(ApiResponse response);
  void close();

  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  HttpServer& server_;
  std::shared_ptr<const std::atomic<bool>> server_alive_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  boost::beast::http::request<boost::beast::http::string_body> request_;
  boost::beast::http::response<boost::beast::http::string_body> response_;
  Route route_ = Route::kNotFound;
  std::string name_;
  std::string detail_;
  std::chrono::steady_clock::time_point started_;
  bool keep_alive_ = true;
  bool busy_ = false;  // a request is being handled or answered
  bool closed_ = false;
};

}  // namespace fencelock::service
