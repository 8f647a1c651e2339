// One keep-alive HTTP/1.1 connection to one fencelockd, plain or over TLS, used by one thread at a
// time (the pool hands it out). Every step has a deadline: the connection owns a private
// io_context and runs it until the step completes or the deadline passes, then closes the socket.
// Private to the SDK.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fencelock/result.h"

namespace fencelock {

struct HttpReply {
  unsigned status = 0;
  std::string body;
};

// Where a connection goes and how.
struct ConnectionTarget {
  std::string host;  // an IP address (IPv6 without brackets) or a DNS name, resolved per connect
  std::uint16_t port = 0;
  // TLS: the context (CA, client certificate) and the name the server's certificate must carry
  // (the endpoint's host as written, without a trailing dot: a DNS name, or the IP). Null
  // context: plain HTTP.
  std::shared_ptr<boost::asio::ssl::context> tls;
  std::string tls_name;
};

class HttpConnection {
 public:
  using Clock = std::chrono::steady_clock;

  // `authorization`: the Authorization header of every request ("" = none); never logged.
  explicit HttpConnection(ConnectionTarget target, std::string authorization = {});

  // Connects if needed (name resolution, TCP to each address in turn, then the TLS handshake, all
  // by connect_deadline), sends, reads the answer (by deadline). Errors: kTransport ("cannot
  // resolve NAME: …", "resolving NAME timed out", "cannot connect to HOST:PORT: …", …); kTls when
  // the TLS layer failed (the handshake, or the server refusing our certificate after it).
  // `maybe_delivered` is set when the request may have reached the server (it was written, at least
  // partly), so a caller knows whether repeating it is safe.
  Result<HttpReply> round_trip(std::string_view method, std::string_view target,
                               std::string_view body, Clock::time_point connect_deadline,
                               Clock::time_point deadline, bool& maybe_delivered);

  bool is_open() const noexcept { return socket_.is_open(); }
  void close() noexcept;

 private:
  // Runs io_ until `done` or `deadline`; on timeout closes the socket. False on timeout.
  bool run_until(const bool& done, Clock::time_point deadline);
  // The addresses of target_.host: itself if it is an IP address, else getaddrinfo's answer.
  Result<std::vector<boost::asio::ip::tcp::endpoint>> resolve(Clock::time_point deadline);
  Status connect(Clock::time_point deadline);
  Status handshake(Clock::time_point deadline);
  template <class Stream>
  Result<HttpReply> exchange(Stream& stream, std::string_view method, std::string_view target,
                             std::string_view body, Clock::time_point deadline,
                             bool& maybe_delivered);

  ConnectionTarget target_;
  std::string authorization_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  std::optional<boost::asio::ssl::stream<boost::asio::ip::tcp::socket&>> tls_;  // over socket_
  boost::beast::flat_buffer buffer_;
  bool fresh_ = false;  // the current request opened the connection (it was not kept alive)
};

}  // namespace fencelock
