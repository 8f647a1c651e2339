#include "fuzz_targets.h"

#include <hiredis/hiredis.h>
#include <sys/socket.h>

#include <boost/beast/http.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "api/api_handlers.h"
#include "api/flat_json.h"
#include "api/lease_codec.h"
#include "api/request_body.h"
#include "http/http_session.h"
#include "http/session_host.h"
#include "in_memory_engine.h"
#include "redis/node_reply.h"

namespace fencelock::fuzz {

namespace {

namespace http = boost::beast::http;

void require(bool condition) {
  if (!condition) __builtin_trap();
}

service::Method method_of(http::verb verb) {
  switch (verb) {
    case http::verb::get:
      return service::Method::kGet;
    case http::verb::post:
      return service::Method::kPost;
    case http::verb::delete_:
      return service::Method::kDelete;
    case http::verb::head:
      return service::Method::kHead;
    default:
      return service::Method::kOther;
  }
}

bool known_status(unsigned status) {
  switch (status) {
    case 200:
    case 400:
    case 404:
    case 405:
    case 409:
    case 413:
    case 415:
    case 421:
    case 503:
      return true;
    default:
      return false;
  }
}

}  // namespace

void http_request(const std::uint8_t* data, std::size_t size) {
  http::request_parser<http::string_body> parser;
  parser.header_limit(8 * 1024);  // fencelockd's limits (session_host.h)
  parser.body_limit(64 * 1024);
  parser.eager(true);
  boost::beast::error_code ec;
  const std::size_t used = parser.put(boost::asio::buffer(data, size), ec);
  require(used <= size);
  // End of input as the session sees it when the client closes (put_eof wants some bytes first).
  if (ec == http::error::need_more && parser.got_some()) parser.put_eof(ec);
  if (ec || !parser.is_done()) return;

  auto tokens = std::make_shared<testing::InMemoryTokens>();
  testing::InMemoryEngine engine{tokens};
  service::ApiHandlers handlers{engine, tokens, [] { return std::string("# metrics\n"); }};
  const auto& request = parser.get();
  int answers = 0;
  std::optional<service::ApiResponse> answer;
  handlers.dispatch(method_of(request.method()), request.target(), request.body(), "",
                    [&](service::ApiResponse response) {
                      ++answers;
                      answer = std::move(response);
                    });
  engine.run_pending();
  require(answers == 1);
  require(known_status(answer->status));
  if (answer->content_type == "application/json" && !answer->body.empty()) {
    require(!nlohmann::json::parse(answer->body, nullptr, false).is_discarded());
  }
}

void http_session(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return;
  const std::string_view prefix(reinterpret_cast<const char*>(data) + 2, size - 2);
  const std::string_view tail =
      prefix.substr(prefix.size() - std::min<std::size_t>(prefix.size(), 64));
  // The repeated part, in blocks of up to 64 KiB: `repeats` copies of the tail in all.
  const std::size_t repeats = tail.empty() ? 0 : (std::size_t{data[0]} << 8 | data[1]) * 4;
  std::string block;
  for (std::size_t i = 0; i < repeats && block.size() + tail.size() <= 64 * 1024; ++i)
    block.append(tail);
  const std::size_t stream_size = prefix.size() + repeats * tail.size();

  namespace asio = boost::asio;
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, {asio::ip::make_address("127.0.0.1"), 0});
  asio::ip::tcp::socket client(io);
  client.connect(acceptor.local_endpoint());
  asio::ip::tcp::socket server(io);
  acceptor.accept(server);

  auto tokens = std::make_shared<testing::InMemoryTokens>();
  testing::InMemoryEngine engine{tokens};
  service::ApiHandlers handlers{engine, tokens, [] { return std::string("# metrics\n"); }};
  service::HttpServerOptions options;  // fencelockd's defaults
  options.request_timeout = std::chrono::milliseconds(2000);
  auto host = std::make_shared<service::SessionHost>(options, handlers, nullptr);
  std::make_shared<service::HttpSession<service::PlainStream>>(std::move(server), host)
      ->run(service::Admission::kServe);

  // The client writes on a thread of its own (blocking, as a peer would) and then half-closes.
  std::size_t sent = 0;
  std::thread writer([&] {
    const int fd = client.native_handle();
    auto send_all = [&](std::string_view bytes) {
      while (!bytes.empty()) {
        const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n <= 0) return false;
        sent += static_cast<std::size_t>(n);
        bytes.remove_prefix(static_cast<std::size_t>(n));
      }
      return true;
    };
    bool open = send_all(prefix);
    for (std::size_t left = repeats * tail.size(); open && left > 0;) {
      const std::size_t now = std::min(left, block.size());
      open = send_all(std::string_view(block).substr(0, now));
      left -= now;
    }
    ::shutdown(fd, SHUT_WR);
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < deadline) {
    io.restart();
    io.run_for(std::chrono::milliseconds(2));
    if (io.stopped() && !engine.has_pending()) break;  // the session has closed
    engine.run_pending();
  }
  ::shutdown(client.native_handle(), SHUT_RDWR);  // a writer blocked on a full socket returns
  writer.join();
  io.restart();
  io.run_for(std::chrono::milliseconds(50));

  // What the session answered: each answer a status line with a known status.
  std::string answers;
  boost::system::error_code ec;
  char buffer[4096];
  client.non_blocking(true);
  for (std::size_t n; (n = client.read_some(asio::buffer(buffer), ec)) > 0 && !ec;)
    answers.append(buffer, n);
  // Answer after answer: a status line, headers, Content-Length bytes of body (an answer cut off
  // by the connection's end is not checked).
  for (std::size_t at = 0; at + 12 <= answers.size();) {
    require(answers.compare(at, 9, "HTTP/1.1 ") == 0);
    unsigned status = 0;
    for (const char c : std::string_view(answers).substr(at + 9, 3))
      status = status * 10 + static_cast<unsigned>(c - '0');
    require(known_status(status) || status == 401 || status == 403 || status == 429 ||
            status == 500);
    const std::size_t head_end = answers.find("\r\n\r\n", at);
    if (head_end == std::string::npos) break;
    const std::size_t length_at = answers.find("Content-Length: ", at);
    require(length_at != std::string::npos && length_at < head_end);
    const std::size_t length = std::stoul(answers.substr(length_at + 16, 12));
    at = head_end + 4 + length;
  }
  // A stream far over the limits was not read whole: the session answered and closed first (a
  // repeated tail of 64 bytes cannot make requests whose answers are smaller than they are, so
  // reading it all would mean the client read as much back, which it does not).
  if (stream_size > std::size_t{8} * 1024 * 1024) require(sent < stream_size);
}

void request_body(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const service::BodyLimits limits;
  if (auto acquire = service::parse_acquire_body(body, limits); acquire.ok()) {
    require(acquire.value().ttl >= limits.min_ttl && acquire.value().ttl <= limits.max_ttl);
    require(acquire.value().wait.count() >= 0 && acquire.value().wait <= limits.max_wait);
    require(acquire.value().owner.size() <= service::kMaxOwnerLength * 4);  // UTF-8 characters
  }
  if (auto extend = service::parse_extend_body(body, limits); extend.ok()) {
    require(extend.value().lease.size() <= service::kMaxLeaseLength);
    require(extend.value().ttl >= limits.min_ttl && extend.value().ttl <= limits.max_ttl);
  }
  if (auto release = service::parse_release_body(body); release.ok()) {
    require(release.value().lease.size() <= service::kMaxLeaseLength);
  }
}

void flat_json(const std::uint8_t* data, std::size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const auto flat = service::FlatJsonObject::parse(body);
  if (!flat) return;  // declined: the caller falls back to nlohmann, which decides
  // Accepted: nlohmann must read the same object, field by field (flat_json.h's contract).
  const nlohmann::json dom = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  require(dom.is_object() && dom.size() == flat->size());
  for (std::size_t i = 0; i < flat->size(); ++i) {
    const std::string key(flat->key(i));
    require(dom.contains(key));
    const nlohmann::json& expected = dom.at(key);
    const service::FlatJsonValue* value = flat->find(key);
    require(value != nullptr);
    using Kind = service::FlatJsonValue::Kind;
    switch (value->kind) {
      case Kind::kNull:
        require(expected.is_null());
        break;
      case Kind::kBool:
        require(expected.is_boolean() && expected.get<bool>() == value->flag);
        break;
      case Kind::kUnsigned:
        require(expected.is_number_unsigned() &&
                expected.get<std::uint64_t>() == value->unsigned_value);
        break;
      case Kind::kSigned:
        require(expected.is_number_integer() && !expected.is_number_unsigned() &&
                expected.get<std::int64_t>() == value->signed_value);
        break;
      case Kind::kString:
        require(expected.is_string() && expected.get_ref<const std::string&>() == value->text);
        break;
    }
  }
}

void lease(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto claim = service::decode_lease(text);
  if (!claim) return;
  require(claim->token > 0);
  require(service::encode_lease(claim->token, claim->proof) == text);
}

void resp(const std::uint8_t* data, std::size_t size) {
  const std::unique_ptr<redisReader, void (*)(redisReader*)> reader(redisReaderCreate(),
                                                                    redisReaderFree);
  if (!reader) return;
  if (redisReaderFeed(reader.get(), reinterpret_cast<const char*>(data), size) != REDIS_OK) return;
  for (int replies = 0; replies < 1000; ++replies) {
    void* raw = nullptr;
    if (redisReaderGetReply(reader.get(), &raw) != REDIS_OK || raw == nullptr) return;
    const auto* reply = static_cast<const redisReply*>(raw);
    const storage::NodeReply copy = storage::NodeReply::from_hiredis(reply);
    require(copy.kind != storage::NodeReply::Kind::kTimeout);
    freeReplyObject(raw);
  }
}

Target target_named(std::string_view name) {
  if (name == "http_request") return http_request;
  if (name == "http_session") return http_session;
  if (name == "request_body") return request_body;
  if (name == "flat_json") return flat_json;
  if (name == "lease") return lease;
  if (name == "resp") return resp;
  return nullptr;
}

}  // namespace fencelock::fuzz
