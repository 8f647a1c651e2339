#include "tls_client.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/http.hpp>

#include "api_recorder.h"

namespace fencelock::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using asio::ip::tcp;

namespace {

std::string describe(const boost::system::error_code& ec, SSL* handle) {
  if (ec == asio::error::timed_out) return "timed out";
  std::string text = ec.message();
  if (handle != nullptr) {
    if (const long verified = SSL_get_verify_result(handle); verified != X509_V_OK)
      text += std::string(" (") + X509_verify_cert_error_string(verified) + ")";
  }
  return text;
}

}  // namespace

TlsClient::TlsClient(std::uint16_t port, TlsClientOptions options)
    : port_(port), options_(std::move(options)), context_(ssl::context::tls_client) {
  SSL_CTX* handle = context_.native_handle();
  if (options_.max_version != 0) {
    // An old client for real: OpenSSL 3 offers TLS 1.0/1.1 only at security level 0.
    SSL_CTX_set_security_level(handle, 0);
    SSL_CTX_set_cipher_list(handle, "DEFAULT:@SECLEVEL=0");
    SSL_CTX_set_min_proto_version(handle, TLS1_VERSION);
    SSL_CTX_set_max_proto_version(handle, options_.max_version);
  }
  if (!options_.ca.empty()) {
    context_.load_verify_file(options_.ca.string());
    context_.set_verify_mode(ssl::verify_peer);
  } else {
    context_.set_verify_mode(ssl::verify_none);
  }
  if (!options_.cert.empty()) {
    context_.use_certificate_chain_file(options_.cert.string());
    context_.use_private_key_file(options_.key.string(), ssl::context::pem);
  }
}

TlsClient::~TlsClient() {
  drop();
}

template <class Start>
boost::system::error_code TlsClient::run(Start start) {
  boost::system::error_code result;
  bool done = false;
  start([&](boost::system::error_code ec, auto&&...) {
    result = ec;
    done = true;
  });
  io_.restart();
  io_.run_for(options_.timeout);
  if (done) return result;
  boost::system::error_code ignored;
  stream_->lowest_layer().close(ignored);  // the operation ends; its handler must run here
  io_.restart();
  io_.run();
  return asio::error::timed_out;
}

void TlsClient::drop() {
  if (!stream_) return;
  boost::system::error_code ignored;
  stream_->lowest_layer().close(ignored);
  stream_.reset();
  buffer_.clear();
}

std::string TlsClient::connect() {
  drop();
  error_.clear();
  stream_.emplace(io_, context_);
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), port_);
  boost::system::error_code ec;
  if (options_.source_host != 0) {  // another client, as the server sees it
    auto& socket = stream_->lowest_layer();
    socket.open(tcp::v4(), ec);
    if (!ec) {
      socket.bind(
          tcp::endpoint(
              asio::ip::make_address_v4("127.0.0." + std::to_string(options_.source_host)), 0),
          ec);
    }
  }
  if (!ec)
    ec = run([&](auto handler) { stream_->lowest_layer().async_connect(endpoint, handler); });
  if (!ec) {
    if (!options_.ca.empty())
      X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(stream_->native_handle()), "127.0.0.1");
    ec = run([&](auto handler) { stream_->async_handshake(ssl::stream_base::client, handler); });
  }
  if (ec) {
    error_ = describe(ec, stream_->native_handle());
    drop();
  }
  return error_;
}

std::optional<long> TlsClient::peer_serial() {
  if (!stream_) return std::nullopt;
  X509* cert = SSL_get1_peer_certificate(stream_->native_handle());
  if (cert == nullptr) return std::nullopt;
  const long serial = ASN1_INTEGER_get(X509_get0_serialNumber(cert));
  X509_free(cert);
  return serial;
}

std::string TlsClient::peer_subject() {
  if (!stream_) return {};
  X509* cert = SSL_get1_peer_certificate(stream_->native_handle());
  if (cert == nullptr) return {};
  char* line = X509_NAME_oneline(X509_get_subject_name(cert), nullptr, 0);
  std::string subject = line != nullptr ? line : "";
  OPENSSL_free(line);
  X509_free(cert);
  return subject;
}

HttpAnswer TlsClient::request(const std::string& method, const std::string& target,
                              const std::string& body,
                              const std::map<std::string, std::string>& headers) {
  if (!stream_ && !connect().empty()) return {};
  http::request<http::string_body> req(http::string_to_verb(method), target, 11);
  req.set(http::field::host, "127.0.0.1");
  if (!body.empty()) req.set(http::field::content_type, "application/json");
  for (const auto& [name, value] : headers) req.set(name, value);
  req.body() = body;
  req.prepare_payload();
  auto ec = run([&](auto handler) { http::async_write(*stream_, req, handler); });
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024 * 1024);
  if (!ec) ec = run([&](auto handler) { http::async_read(*stream_, buffer_, parser, handler); });
  if (ec) {
    error_ = describe(ec, nullptr);
    drop();
    return {};
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
  if (!res.keep_alive()) drop();
  record_exchange("https", method, target, false, answer);
  return answer;
}

bool TlsClient::send(const std::string& bytes) {
  if (!stream_) return false;
  const auto ec =
      run([&](auto handler) { asio::async_write(*stream_, asio::buffer(bytes), handler); });
  if (ec) error_ = describe(ec, nullptr);
  return !ec;
}

void TlsClient::close(bool notify) {
  if (!stream_) return;
  if (notify) {
    // Our close_notify goes out; the server's answer, or its closing, ends the exchange.
    run([&](auto handler) { stream_->async_shutdown(handler); });
  }
  drop();
}

}  // namespace fencelock::testing
