#include "http_connection.h"

#include <boost/asio/connect.hpp>
#include <boost/beast/http.hpp>

namespace fencelock {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

namespace {

Error transport(std::string message) {
  return Error{ErrorCode::kTransport, std::move(message), 0, std::nullopt};
}

}  // namespace

HttpConnection::HttpConnection(std::string host, std::uint16_t port, std::string authorization)
    : host_(std::move(host)), port_(port), authorization_(std::move(authorization)), socket_(io_) {}

void HttpConnection::close() noexcept {
  boost::system::error_code ignored;
  socket_.close(ignored);
  buffer_.clear();
}

bool HttpConnection::run_until(const bool& done, Clock::time_point deadline) {
  io_.restart();
  while (!done && Clock::now() < deadline) {
    io_.run_one_until(deadline);
  }
  if (done) return true;
  close();  // cancels the operation; let its handler run before the buffers go away
  io_.restart();
  io_.run();
  return false;
}

Result<HttpReply> HttpConnection::round_trip(std::string_view method, std::string_view target,
                                             std::string_view body,
                                             Clock::time_point connect_deadline,
                                             Clock::time_point deadline, bool& maybe_delivered) {
  maybe_delivered = false;
  boost::system::error_code ec;
  if (!socket_.is_open()) {
    const auto address = asio::ip::make_address(host_, ec);
    if (ec) return transport("bad address " + host_);
    bool connected = false;
    socket_.async_connect(tcp::endpoint(address, port_), [&](boost::system::error_code e) {
      ec = e;
      connected = true;
    });
    if (!run_until(connected, std::min(connect_deadline, deadline))) {
      return transport("connecting to " + host_ + ":" + std::to_string(port_) + " timed out");
    }
    if (ec) {
      close();
      return transport("cannot connect to " + host_ + ":" + std::to_string(port_) + ": " +
                       ec.message());
    }
    socket_.set_option(tcp::no_delay(true), ec);
  }

  http::request<http::string_body> request(http::string_to_verb(method), target, 11);
  request.set(http::field::host, host_);
  request.set(http::field::user_agent, "fencelock-cpp-sdk");
  if (!authorization_.empty()) request.set(http::field::authorization, authorization_);
  if (!body.empty()) request.set(http::field::content_type, "application/json");
  request.body().assign(body);
  request.prepare_payload();

  bool written = false;
  maybe_delivered = true;
  http::async_write(socket_, request, [&](boost::system::error_code e, std::size_t) {
    ec = e;
    written = true;
  });
  if (!run_until(written, deadline)) return transport("sending the request timed out");
  if (ec) {
    close();
    return transport("sending the request failed: " + ec.message());
  }

  http::response_parser<http::string_body> parser;
  parser.body_limit(std::uint64_t{16} * 1024 * 1024);
  bool read = false;
  http::async_read(socket_, buffer_, parser, [&](boost::system::error_code e, std::size_t) {
    ec = e;
    read = true;
  });
  if (!run_until(read, deadline)) return transport("no answer before the request timeout");
  if (ec) {
    close();
    return transport("reading the answer failed: " + ec.message());
  }
  auto response = parser.release();
  if (!response.keep_alive()) close();
  return HttpReply{response.result_int(), std::move(response.body())};
}

}  // namespace fencelock
