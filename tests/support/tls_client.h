// A blocking HTTPS client for tests: one TLS connection to a loopback server, with the knobs a test
// needs to be a good or a bad client — which CA it trusts, a client certificate, the newest TLS
// version it offers — and a view of the server's certificate. Every step is bounded by the
// timeout. Not thread-safe.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "http_client.h"

namespace fencelock::testing {

struct TlsClientOptions {
  std::filesystem::path ca;    // the CAs it trusts; empty: it checks nothing (a probe)
  std::filesystem::path cert;  // a client certificate and its key (mutual TLS); empty: none
  std::filesystem::path key;
  int max_version = 0;  // the newest version it offers (TLS1_1_VERSION, ...); 0: OpenSSL's
  std::chrono::milliseconds timeout{10'000};
  unsigned source_host = 0;  // 1..254: connect from 127.0.0.<source_host>; 0: the kernel picks
};

class TlsClient {
 public:
  explicit TlsClient(std::uint16_t port, TlsClientOptions options = {});
  ~TlsClient();
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;

  // Connects and handshakes (again, if connected): "" on success, else what failed ("certificate
  // verify failed (unable to get local issuer certificate)", "timed out", ...).
  std::string connect();
  bool connected() const noexcept { return stream_.has_value(); }

  // Of the server's certificate on the current connection; nullopt/"" when not connected.
  std::optional<long> peer_serial();
  std::string peer_subject();

  // One request on the connection (connecting first when there is none): status 0 and the
  // connection dropped when no answer came (error() says why).
  HttpAnswer request(const std::string& method, const std::string& target,
                     const std::string& body = {},
                     const std::map<std::string, std::string>& headers = {});
  HttpAnswer get(const std::string& target) { return request("GET", target); }
  HttpAnswer post(const std::string& target, const nlohmann::json& body) {
    return request("POST", target, body.dump());
  }
  HttpAnswer del(const std::string& target, const nlohmann::json& body) {
    return request("DELETE", target, body.dump());
  }

  // Writes `bytes` over TLS without reading an answer. False if not connected or it failed.
  bool send(const std::string& bytes);
  // Ends the connection: after a TLS close_notify when `notify`, else by closing the socket only.
  void close(bool notify);

  const std::string& error() const noexcept { return error_; }

 private:
  template <class Start>
  boost::system::error_code run(Start start);
  void drop();

  std::uint16_t port_;
  TlsClientOptions options_;
  boost::asio::io_context io_;
  boost::asio::ssl::context context_;
  std::optional<boost::asio::ssl::stream<boost::asio::ip::tcp::socket>> stream_;
  boost::beast::flat_buffer buffer_;
  std::string error_;
};

}  // namespace fencelock::testing
