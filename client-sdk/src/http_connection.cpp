// A TLS connection is the same TCP socket with an ssl::stream over it, made anew for every TCP
// connection. Which name the server's certificate must carry is set on the SSL object before the
// handshake: a DNS name SAN (with SNI) for "localhost", an IP address SAN for an IP; never the CN.
// Errors of the TLS layer (OpenSSL's category) are kTls: retrying cannot mend a certificate.
//
// A host that is a DNS name is resolved for every new TCP connection (so an address change is
// seen at the next connect), by getaddrinfo on a thread of its own that the connection waits for
// until the connect deadline. getaddrinfo cannot be interrupted, and Asio's resolver would make
// this connection's io_context wait for it — when draining after a timeout, and when destroyed —
// for as long as the lookup takes (resolv.conf timeouts: ~10 s). A lookup that outlives its
// deadline only frees its shared state when it ends. Then every address is tried in order.
#include "http_connection.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "fencelock/host_lookup.h"

namespace fencelock {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using asio::ip::tcp;

namespace {

Error transport(std::string message) {
  return Error{ErrorCode::kTransport, std::move(message), 0, std::nullopt};
}

bool is_tls_error(const boost::system::error_code& ec) {
  return ec.category() == asio::error::get_ssl_category();
}

// kTls for the TLS layer's errors, kTransport for the rest.
Error failed(const boost::system::error_code& ec, const std::string& what) {
  return Error{is_tls_error(ec) ? ErrorCode::kTls : ErrorCode::kTransport,
               what + ": " + ec.message(), 0, std::nullopt};
}

// "host:port", an IPv6 address in brackets: for messages and the Host header.
std::string host_and_port(const std::string& host, std::uint16_t port) {
  const bool ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

// One getaddrinfo call, shared by the waiting connection and the thread that runs it.
struct Lookup {
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  std::string error;  // set when it failed
  std::vector<tcp::endpoint> endpoints;
};

void run_lookup(const std::shared_ptr<Lookup>& lookup, const std::string& host,
                std::uint16_t port) {
  auto found = lookup_host(host);
  std::vector<tcp::endpoint> endpoints;
  std::string error;
  if (!found) {
    error = std::move(found).error();
  } else {
    for (const std::string& text : found.value()) {
      boost::system::error_code ec;
      const auto address = asio::ip::make_address(text, ec);
      if (!ec) endpoints.emplace_back(address, port);
    }
    if (endpoints.empty()) error = "no IPv4 or IPv6 address";
  }
  const std::lock_guard<std::mutex> lock(lookup->mutex);
  lookup->error = std::move(error);
  lookup->endpoints = std::move(endpoints);
  lookup->done = true;
  lookup->finished.notify_all();
}

}  // namespace

HttpConnection::HttpConnection(ConnectionTarget target, std::string authorization)
    : target_(std::move(target)), authorization_(std::move(authorization)), socket_(io_) {}

void HttpConnection::close() noexcept {
  boost::system::error_code ignored;
  socket_.close(ignored);
  tls_.reset();
  buffer_.clear();
}

bool HttpConnection::run_until(const bool& done, Clock::time_point deadline) {
  io_.restart();
  while (!done && Clock::now() < deadline) {
    io_.run_one_until(deadline);
  }
  if (done) return true;
  boost::system::error_code ignored;
  socket_.close(ignored);  // cancels the operation; let its handler run before the buffers go away
  io_.restart();
  io_.run();
  close();
  return false;
}

Result<std::vector<tcp::endpoint>> HttpConnection::resolve(Clock::time_point deadline) {
  boost::system::error_code ec;
  const auto address = asio::ip::make_address(target_.host, ec);
  if (!ec) return std::vector<tcp::endpoint>{tcp::endpoint(address, target_.port)};
  auto lookup = std::make_shared<Lookup>();
  try {
    std::thread(run_lookup, lookup, target_.host, target_.port).detach();
  } catch (const std::system_error& e) {
    return transport("cannot resolve " + target_.host + ": no thread for the lookup: " + e.what());
  }
  std::unique_lock<std::mutex> lock(lookup->mutex);
  if (!lookup->finished.wait_until(lock, deadline, [&] { return lookup->done; }))
    return transport("resolving " + target_.host + " timed out");
  if (!lookup->error.empty())
    return transport("cannot resolve " + target_.host + ": " + lookup->error);
  return std::move(lookup->endpoints);
}

Status HttpConnection::connect(Clock::time_point deadline) {
  const std::string where = host_and_port(target_.host, target_.port);
  auto endpoints = resolve(deadline);
  if (!endpoints.ok()) return std::move(endpoints).error();
  boost::system::error_code ec;
  bool connected = false;
  asio::async_connect(socket_, endpoints.value(),
                      [&](boost::system::error_code e, const tcp::endpoint&) {
                        ec = e;
                        connected = true;
                      });
  if (!run_until(connected, deadline)) return transport("connecting to " + where + " timed out");
  if (ec) {
    close();
    return transport("cannot connect to " + where + ": " + ec.message());
  }
  socket_.set_option(tcp::no_delay(true), ec);
  if (target_.tls) return handshake(deadline);
  return Done{};
}

Status HttpConnection::handshake(Clock::time_point deadline) {
  const std::string where = host_and_port(target_.host, target_.port);
  tls_.emplace(socket_, *target_.tls);
  SSL* ssl_handle = tls_->native_handle();
  boost::system::error_code ec;
  asio::ip::make_address(target_.tls_name, ec);
  const bool by_address = !ec;
  // The certificate must name the host: an IP address SAN for an address, a DNS name SAN
  // otherwise (then also sent as SNI, which must not be an address). Never the subject's CN,
  // which OpenSSL would fall back to when there is no DNS SAN (RFC 6125 §6.4.4 deprecates it).
  SSL_set_hostflags(ssl_handle,
                    X509_CHECK_FLAG_NEVER_CHECK_SUBJECT | X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  const int named =
      by_address
          ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_handle), target_.tls_name.c_str())
          : SSL_set1_host(ssl_handle, target_.tls_name.c_str()) == 1 &&
                // SSL_set_tlsext_host_name() without its macro's C cast.
                SSL_ctrl(ssl_handle, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                         target_.tls_name.data()) == 1;
  if (named != 1) {
    close();
    return Error{ErrorCode::kTls, "cannot check the certificate's name " + target_.tls_name, 0,
                 std::nullopt};
  }
  bool done = false;
  tls_->async_handshake(ssl::stream_base::client, [&](boost::system::error_code e) {
    ec = e;
    done = true;
  });
  if (!run_until(done, deadline)) return transport("TLS handshake with " + where + " timed out");
  if (ec) {
    std::string message = "TLS handshake with " + where + " failed: " + ec.message();
    if (const long verified = SSL_get_verify_result(ssl_handle); verified != X509_V_OK)
      message += std::string(" (") + X509_verify_cert_error_string(verified) + ")";
    close();
    return Error{is_tls_error(ec) ? ErrorCode::kTls : ErrorCode::kTransport, std::move(message), 0,
                 std::nullopt};
  }
  return Done{};
}

Result<HttpReply> HttpConnection::round_trip(std::string_view method, std::string_view target,
                                             std::string_view body,
                                             Clock::time_point connect_deadline,
                                             Clock::time_point deadline, bool& maybe_delivered) {
  maybe_delivered = false;
  fresh_ = !socket_.is_open();
  if (fresh_) {
    if (auto connected = connect(std::min(connect_deadline, deadline)); !connected.ok())
      return std::move(connected).error();
  }
  if (tls_) return exchange(*tls_, method, target, body, deadline, maybe_delivered);
  return exchange(socket_, method, target, body, deadline, maybe_delivered);
}

template <class Stream>
Result<HttpReply> HttpConnection::exchange(Stream& stream, std::string_view method,
                                           std::string_view target, std::string_view body,
                                           Clock::time_point deadline, bool& maybe_delivered) {
  http::request<http::string_body> request(http::string_to_verb(method), target, 11);
  request.set(http::field::host, host_and_port(target_.host, target_.port));
  request.set(http::field::user_agent, "fencelock-cpp-sdk");
  if (!authorization_.empty()) request.set(http::field::authorization, authorization_);
  if (!body.empty()) request.set(http::field::content_type, "application/json");
  request.body().assign(body);
  request.prepare_payload();

  boost::system::error_code ec;
  bool written = false;
  maybe_delivered = true;
  http::async_write(stream, request, [&](boost::system::error_code e, std::size_t) {
    ec = e;
    written = true;
  });
  if (!run_until(written, deadline)) return transport("sending the request timed out");
  if (ec) {
    close();
    return failed(ec, "sending the request failed");
  }

  http::response_parser<http::string_body> parser;
  parser.body_limit(std::uint64_t{16} * 1024 * 1024);
  bool read = false;
  http::async_read(stream, buffer_, parser, [&](boost::system::error_code e, std::size_t) {
    ec = e;
    read = true;
  });
  if (!run_until(read, deadline)) return transport("no answer before the request timeout");
  if (ec) {
    close();
    Error error = failed(ec, "reading the answer failed");
    // A TLS-only server closes a plain connection at its first bytes (fencelockd answers 400
    // plain_http_on_tls_port only to what OpenSSL recognises as HTTP: GET, POST, HEAD, PUT).
    if (fresh_ && !target_.tls &&
        (ec == http::error::end_of_stream || ec == asio::error::connection_reset))
      error.message +=
          " (the server closed a new connection without answering: is it TLS-only? "
          "use https://)";
    return error;
  }
  auto response = parser.release();
  if (!response.keep_alive()) close();
  return HttpReply{response.result_int(), std::move(response.body())};
}

}  // namespace fencelock
