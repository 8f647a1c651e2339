#include "tokens/etcd_connection.h"

#include <boost/asio/ip/address.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace fencelock::storage::etcd {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

Connection::Connection(const boost::asio::any_io_executor& strand, NodeAddress endpoint)
    : endpoint_(std::move(endpoint)), stream_(strand), resolver_(strand) {}

void Connection::post(std::string_view target, std::string body, std::chrono::milliseconds deadline,
                      Handler done) {
  done_ = std::move(done);
  deadline_ = deadline;
  request_ = {http::verb::post, target, 11};
  request_.set(http::field::host, endpoint_.to_string());
  request_.set(http::field::content_type, "application/json");
  request_.keep_alive(true);
  request_.body() = std::move(body);
  request_.prepare_payload();
  stream_.expires_after(deadline_);
  if (connected_) {
    send();
    return;
  }
  // Weak: the resolver this connection owns holds the handler; nobody waits once it is gone.
  resolver_.resolve(endpoint_, deadline_,
                    [weak = weak_from_this()](Result<AddressResolver::Endpoints> resolved) {
                      if (const auto self = weak.lock()) self->on_resolved(std::move(resolved));
                    });
}

void Connection::on_resolved(Result<AddressResolver::Endpoints> resolved) {
  if (!resolved) {
    fail_with(resolved.error().message);
    return;
  }
  // Every address in turn, within what is left of the request's deadline (expires_after above).
  stream_.async_connect(
      resolved.value(),
      [self = shared_from_this()](const boost::system::error_code& error, const tcp::endpoint&) {
        if (error) return self->fail("connect", error);
        self->connected_ = true;
        self->send();
      });
}

void Connection::send() {
  http::async_write(
      stream_, request_,
      [self = shared_from_this()](const boost::system::error_code& error, std::size_t) {
        if (error) return self->fail("write", error);
        self->parser_ = std::make_unique<http::response_parser<http::string_body>>();
        self->parser_->body_limit(kMaxAnswerBytes);
        http::async_read(self->stream_, self->buffer_, *self->parser_,
                         [self](const boost::system::error_code& read_error, std::size_t) {
                           if (read_error) return self->fail("read", read_error);
                           auto response = self->parser_->release();
                           if (!response.keep_alive()) self->close();
                           Answer answer{response.result_int(), std::move(response.body())};
                           auto done = std::move(self->done_);
                           done(std::move(answer));
                         });
      });
}

void Connection::fail(const std::string& what, const boost::system::error_code& ec) {
  fail_with(what + ": " +
            (ec == beast::error::timeout
                 ? "no answer within " + std::to_string(deadline_.count()) + " ms"
                 : ec.message()));
}

void Connection::fail_with(const std::string& why) {
  close();
  auto done = std::move(done_);
  done(make_error(ErrorCode::kUnavailable, "etcd member " + endpoint_.to_string() + ": " + why));
}

void Connection::close() {
  connected_ = false;
  buffer_.clear();
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.close();
}

}  // namespace fencelock::storage::etcd
