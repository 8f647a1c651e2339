#include "http_client.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http.hpp>

#include "api_recorder.h"

namespace fencelock::testing {

namespace beast = boost::beast;
namespace http = beast::http;
using boost::asio::ip::tcp;

nlohmann::json HttpAnswer::json() const {
  return nlohmann::json::parse(body, nullptr, false);
}

std::string HttpAnswer::header(const std::string& lower_case_name) const {
  const auto it = headers.find(lower_case_name);
  return it == headers.end() ? std::string() : it->second;
}

std::string HttpAnswer::error_code() const {
  const auto parsed = json();
  if (parsed.is_object() && parsed.contains("error") && parsed["error"].is_object() &&
      parsed["error"].contains("code") && parsed["error"]["code"].is_string()) {
    return parsed["error"]["code"].get<std::string>();
  }
  return {};
}

HttpClient::HttpClient(std::uint16_t port, std::chrono::milliseconds timeout)
    : port_(port), timeout_(timeout) {}
HttpClient::~HttpClient() = default;

bool HttpClient::connect() {
  stream_.emplace(io_);
  beast::error_code ec;
  stream_->connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port_), ec);
  if (ec) {
    stream_.reset();
    return false;
  }
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(timeout_.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((timeout_.count() % 1000) * 1000);
  ::setsockopt(stream_->native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(stream_->native_handle(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  buffer_.clear();
  return true;
}

HttpAnswer HttpClient::request(const std::string& method, const std::string& target,
                               const std::string& body,
                               const std::map<std::string, std::string>& headers) {
  for (int attempt = 0; attempt < 2;
       ++attempt) {  // once more if a kept-alive connection was closed
    if (!stream_ && !connect()) return {};
    http::request<http::string_body> req(http::string_to_verb(method), target, 11);
    req.set(http::field::host, "127.0.0.1");
    if (!body.empty()) req.set(http::field::content_type, "application/json");
    for (const auto& [name, value] : headers) req.set(name, value);
    req.body() = body;
    req.prepare_payload();
    beast::error_code ec;
    http::write(*stream_, req, ec);
    http::response_parser<http::string_body> parser;
    parser.body_limit(64 * 1024 * 1024);
    if (!ec) http::read(*stream_, buffer_, parser, ec);
    if (ec) {
      stream_.reset();
      continue;
    }
    const auto& res = parser.get();
    HttpAnswer answer;
    answer.status = res.result_int();
    for (const auto& field : res) {
      std::string name(field.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      answer.headers[name] = std::string(field.value());
    }
    answer.body = res.body();
    if (!res.keep_alive()) stream_.reset();
    record_exchange("http", method, target, false, answer);
    return answer;
  }
  return {};
}

HttpAnswer HttpClient::raw(const std::string& bytes) {
  stream_.reset();
  if (!connect()) return {};
  beast::error_code ec;
  boost::asio::write(*stream_, boost::asio::buffer(bytes), ec);
  http::response_parser<http::string_body> parser;
  if (!ec) http::read(*stream_, buffer_, parser, ec);
  stream_.reset();
  if (ec && !parser.is_header_done()) return {};
  HttpAnswer answer;
  answer.status = parser.get().result_int();
  for (const auto& field : parser.get()) {
    std::string name(field.name_string());
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    answer.headers[name] = std::string(field.value());
  }
  answer.body = parser.get().body();
  const auto [method, target] = request_line_of(bytes);
  record_exchange("http", method, target, true, answer);
  return answer;
}

TakenAndReleased take_and_release(HttpClient& client, const std::string& name,
                                  const nlohmann::json& body) {
  const HttpAnswer granted = client.post("/v1/locks/" + name, body);
  if (granted.status != 200) return {granted.status, 0, false};
  const nlohmann::json lease = granted.json();
  const HttpAnswer released = client.del("/v1/locks/" + name, {{"lease", lease["lease"]}});
  return {granted.status, lease["token"].get<std::uint64_t>(),
          released.status == 200 && released.json().value("released", false)};
}

}  // namespace fencelock::testing
