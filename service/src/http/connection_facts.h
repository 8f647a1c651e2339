// What a session says about its connection outside the request path: the client's address and
// certificate for the log, and the one answer plain HTTP on the TLS port gets. Each is called once
// per connection (or per refused handshake), never per request.
#pragma once

#include <openssl/ssl.h>

#include <boost/asio/ip/tcp.hpp>
#include <string>
#include <string_view>

namespace fencelock::service {

// The request header that carries a request's id, both ways.
inline constexpr const char* kRequestIdHeader = "X-Request-Id";

// The client's address ("127.0.0.1", "::1"); "?" if the socket has no peer any more.
std::string peer_of(const boost::asio::ip::tcp::socket& socket);

// The subject of the certificate the client presented, fit for a log field (one line, at most
// 200 bytes); "" if none.
std::string certificate_subject(SSL* ssl);

// For a failed handshake's log line: why the client's certificate was refused, "" when the client
// sent none or it was not checked.
std::string_view certificate_problem(SSL* ssl);

// The whole HTTP/1.1 answer to plain HTTP on the TLS port: 400 plain_http_on_tls_port, in the
// envelope and with the headers of every other answer (X-Request-Id included), then close.
std::string plain_http_answer(std::string_view request_id);

}  // namespace fencelock::service
