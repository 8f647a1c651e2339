// A blocking HTTP/1.1 client for tests: one keep-alive connection to a loopback server, requests
// with a timeout, answers with status, headers and (parsed) JSON body.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace fencelock::testing {

struct HttpAnswer {
  unsigned status = 0;  // 0: no answer (connection refused, closed or timed out)
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  nlohmann::json json() const;  // the body parsed; discarded value if it is not JSON
  std::string header(const std::string& lower_case_name) const;  // "" if absent
  std::string error_code() const;                                // body's error.code, or ""
};

class HttpClient {
 public:
  explicit HttpClient(std::uint16_t port,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10));
  ~HttpClient();

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

  // Sends raw bytes on a fresh connection and returns whatever answer comes back.
  HttpAnswer raw(const std::string& bytes);

 private:
  bool connect();
  std::uint16_t port_;
  std::chrono::milliseconds timeout_;
  boost::asio::io_context io_;
  std::optional<boost::asio::ip::tcp::socket> stream_;  // SO_RCVTIMEO/SO_SNDTIMEO = timeout
  boost::beast::flat_buffer buffer_;
};

// One acquire of /v1/locks/<name> with `body` and, if it was granted, the release of its lease at
// once: the acquire's status, the granted token (0 if refused) and whether the release said
// released.
struct TakenAndReleased {
  unsigned status = 0;
  std::uint64_t token = 0;
  bool released = false;
};
TakenAndReleased take_and_release(HttpClient& http, const std::string& name,
                                  const nlohmann::json& body);

}  // namespace fencelock::testing
