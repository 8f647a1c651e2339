// One keep-alive HTTP/1.1 connection to one etcd member's JSON gateway, for the etcd token source.
// One request at a time (the caller queues); each has a deadline that covers connecting, writing
// and reading — and resolving the member's name first, for a new connection (net/
// address_resolver.h: never blocking the loop; every address is tried). Any failure closes the
// connection; the next request resolves and connects again, so a member that moved is found.
// Threading: use it on one strand (the one it was made with); handlers run there.
#pragma once

#include <boost/asio/any_io_executor.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "fencelock/storage/node_address.h"
#include "fencelock/storage/result.h"
#include "net/address_resolver.h"

namespace fencelock::storage::etcd {

struct Answer {
  unsigned status = 0;
  std::string body;
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using Handler = std::function<void(Result<Answer>)>;

  // A response larger than this is refused (kUnavailable) and the connection closed.
  static constexpr std::size_t kMaxAnswerBytes = 1 << 20;

  Connection(const boost::asio::any_io_executor& strand, NodeAddress endpoint);

  // POSTs `body` (JSON) to `target`. Errors: kUnavailable (cannot resolve or connect, closed,
  // slower than `deadline`, or an oversized answer), naming the endpoint.
  void post(std::string_view target, std::string body, std::chrono::milliseconds deadline,
            Handler done);
  void close();
  const NodeAddress& endpoint() const noexcept { return endpoint_; }

 private:
  void on_resolved(Result<AddressResolver::Endpoints> resolved);
  void send();
  void fail(const std::string& what, const boost::system::error_code& ec);
  void fail_with(const std::string& why);

  NodeAddress endpoint_;
  boost::beast::tcp_stream stream_;
  AddressResolver resolver_;
  boost::beast::flat_buffer buffer_;
  bool connected_ = false;
  std::chrono::milliseconds deadline_{};
  boost::beast::http::request<boost::beast::http::string_body> request_;
  std::unique_ptr<boost::beast::http::response_parser<boost::beast::http::string_body>> parser_;
  Handler done_;
};

}  // namespace fencelock::storage::etcd
