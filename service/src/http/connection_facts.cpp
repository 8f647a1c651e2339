#include "http/connection_facts.h"

#include <openssl/x509.h>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <sstream>

#include "http/exchange.h"
#include "ops/log.h"

namespace fencelock::service {

namespace beast = boost::beast;
namespace http = beast::http;

namespace {

// A certificate subject or an OpenSSL reason in a log field: at most this many bytes.
constexpr std::size_t kMaxLoggedSubject = 200;

}  // namespace

std::string peer_of(const boost::asio::ip::tcp::socket& socket) {
  beast::error_code ec;
  const auto endpoint = socket.remote_endpoint(ec);
  return ec ? std::string("?") : endpoint.address().to_string();
}

std::string certificate_subject(SSL* ssl) {
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr) return {};
  char subject[256] = {};
  X509_NAME_oneline(X509_get_subject_name(cert), subject, sizeof subject);
  return one_line(subject, kMaxLoggedSubject);
}

std::string_view certificate_problem(SSL* ssl) {
  const long verify = SSL_get_verify_result(ssl);
  return verify != X509_V_OK ? X509_verify_cert_error_string(verify) : std::string_view();
}

std::string plain_http_answer(std::string_view request_id) {
  const ApiResponse error = RequestHandler::error_response(
      WireError::kPlainHttpOnTlsPort, "plain HTTP request sent to a TLS-only port: use https://");
  http::response<http::string_body> response{static_cast<http::status>(error.status), 11};
  response.set(http::field::server, "fencelockd");
  response.set(http::field::content_type, error.content_type);
  response.set(http::field::cache_control, "no-store");
  response.set(kRequestIdHeader, beast::string_view(request_id.data(), request_id.size()));
  response.keep_alive(false);
  response.body() = error.body;
  response.prepare_payload();
  std::ostringstream text;
  text << response;
  return text.str();
}

}  // namespace fencelock::service
