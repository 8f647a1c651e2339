#include "fuzz_targets.h"

#include <hiredis/hiredis.h>

#include <boost/beast/http.hpp>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "api_handlers.h"
#include "in_memory_engine.h"
#include "lease_codec.h"
#include "redis/node_reply.h"
#include "request_body.h"

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
  service::ApiHandlers handlers{engine, tokens, "memory", [] { return true; },
                                [] { return std::string("# metrics\n"); }};
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
  if (name == "request_body") return request_body;
  if (name == "lease") return lease;
  if (name == "resp") return resp;
  return nullptr;
}

}  // namespace fencelock::fuzz
