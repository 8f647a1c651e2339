// One keep-alive HTTP/1.1 connection to one fencelockd, used by one thread at a time (the pool
// hands it out). Every step has a deadline: the connection owns a private io_context and runs it
// until the step completes or the deadline passes, then closes the socket. Private to the SDK.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "fencelock/result.h"

namespace fencelock {

struct HttpReply {
  unsigned status = 0;
  std::string body;
};

class HttpConnection {
 public:
  using Clock = std::chrono::steady_clock;

  // `authorization`: the Authorization header of every request ("" = none); never logged.
  HttpConnection(std::string host, std::uint16_t port, std::string authorization = {});

  // Connects if needed (by connect_deadline), sends, reads the answer (by deadline).
  // Errors: kTransport. `maybe_delivered` is set when the request may have reached the server
  // (it was written, at least partly), so a caller knows whether repeating it is safe.
  Result<HttpReply> round_trip(std::string_view method, std::string_view target,
                               std::string_view body, Clock::time_point connect_deadline,
                               Clock::time_point deadline, bool& maybe_delivered);

  bool is_open() const noexcept { return socket_.is_open(); }
  void close() noexcept;

 private:
  // Runs io_ until `done` or `deadline`; on timeout closes the socket. False on timeout.
  bool run_until(const bool& done, Clock::time_point deadline);

  std::string host_;
  std::uint16_t port_;
  std::string authorization_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
};

}  // namespace fencelock
