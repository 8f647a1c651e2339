// The SDK's lock set and semaphore calls on the wire, against a canned fencelockd (a loopback
// HTTP server answering the bodies docs/api.md shows): what each call sends, and how it reads
// each answer. No engine needed; client_sets_permits_test.cpp runs them against the real service.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "fencelock/client.h"
#include "loopback.h"

using namespace fencelock;
using namespace fencelock::testing;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

struct Canned {
  unsigned status = 200;
  std::string body;
};

struct Seen {
  std::string method;
  std::string target;
  json body;
};

// Answers "METHOD target" with its canned reply (404 otherwise) on keep-alive connections, one
// connection at a time, until destroyed. Every wait is bounded by poll timeouts.
class CannedService {
 public:
  explicit CannedService(std::map<std::string, Canned> replies) : replies_(std::move(replies)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address = loopback_address(0);
    REQUIRE(::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
    REQUIRE(::listen(listener_, 8) == 0);
    socklen_t length = sizeof address;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~CannedService() {
    stop_ = true;
    thread_.join();
    ::close(listener_);
  }

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Seen> seen() {
    std::lock_guard<std::mutex> lock(mutex_);
    return seen_;
  }
  // The next `count` requests are read and recorded, then their connection is closed unanswered:
  // an answer lost after the service may have acted on it.
  void lose_answers(int count) { lose_ = count; }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int connection = ::accept(listener_, nullptr, nullptr);
      if (connection < 0) continue;
      std::string buffer;
      while (!stop_ && answer_one(connection, buffer)) {
      }
      ::close(connection);
    }
  }

  // Reads one request from `connection` and answers it; false once the connection is done.
  bool answer_one(int connection, std::string& buffer) {
    std::size_t header_end = std::string::npos;
    std::size_t content_length = 0;
    for (int polls = 0; polls < 500 && !stop_; ++polls) {  // at most ~10 s per request
      header_end = buffer.find("\r\n\r\n");
      if (header_end != std::string::npos) {
        const std::string headers = buffer.substr(0, header_end);
        std::string lower = headers;
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (const auto at = lower.find("content-length:"); at != std::string::npos)
          content_length = std::stoul(lower.substr(at + 15));
        if (buffer.size() >= header_end + 4 + content_length) break;
      }
      pollfd p{connection, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      char chunk[4096];
      const ssize_t got = ::read(connection, chunk, sizeof chunk);
      if (got <= 0) return false;
      buffer.append(chunk, static_cast<std::size_t>(got));
    }
    if (header_end == std::string::npos) return false;
    const std::string request_line = buffer.substr(0, buffer.find("\r\n"));
    const std::string method = request_line.substr(0, request_line.find(' '));
    const std::size_t target_start = method.size() + 1;
    const std::string target =
        request_line.substr(target_start, request_line.find(' ', target_start) - target_start);
    const std::string body = buffer.substr(header_end + 4, content_length);
    buffer.erase(0, header_end + 4 + content_length);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      seen_.push_back({method, target, json::parse(body, nullptr, false)});
    }
    if (lose_ > 0) {
      --lose_;
      return false;
    }
    const auto found = replies_.find(method + " " + target);
    const Canned reply = found != replies_.end()
                             ? found->second
                             : Canned{404, R"({"error":{"code":"not_found","message":"no"}})"};
    const std::string answer = "HTTP/1.1 " + std::to_string(reply.status) +
                               " X\r\nContent-Type: application/json\r\nContent-Length: " +
                               std::to_string(reply.body.size()) + "\r\n\r\n" + reply.body;
    return ::write(connection, answer.data(), answer.size()) == static_cast<ssize_t>(answer.size());
  }

  std::map<std::string, Canned> replies_;
  int listener_ = -1;
  std::uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> lose_{0};
  std::mutex mutex_;
  std::vector<Seen> seen_;
  std::thread thread_;
};

Client client_for(const CannedService& service) {
  ClientOptions options;
  options.endpoints = {service.endpoint()};
  options.max_retries = 0;
  return Client::create(options).value();
}

}  // namespace

TEST_CASE("sdk wire: an acquire names its request and asks again with it when the answer is lost",
          "[client]") {
  CannedService service({{"POST /v1/locks/job",
                          {200, R"({"name":"job","lease":"9.)" + std::string(48, 'a') +
                                    R"(","token":9,"ttl_ms":5000,"validity_ms":4990,)"
                                    R"("waited_ms":0,"repeated":true})"}}});
  ClientOptions options;
  options.endpoints = {service.endpoint()};
  options.max_retries = 1;
  options.retry_backoff = 1ms;
  Client client = Client::create(options).value();

  service.lose_answers(1);
  auto lease = client.acquire("job", 5s);
  REQUIRE(lease.ok());
  CHECK(lease->token() == 9);
  auto seen = service.seen();
  REQUIRE(seen.size() == 2);
  const std::string id = seen[0].body["request_id"].get<std::string>();
  CHECK(id.size() == 32);
  CHECK(seen[1].body["request_id"] == id);  // the same request, asked again

  REQUIRE(client.acquire("job", 5s).ok());  // another call, another request
  CHECK(service.seen().at(2).body["request_id"] != id);
  REQUIRE(client.acquire("job", 5s, 0ms, {}, "my-own-id").ok());
  CHECK(service.seen().at(3).body["request_id"] == "my-own-id");

  // A lock set's acquire names no request: a lost answer is not asked again.
  service.lose_answers(1);
  CHECK(client.acquire_set({"job"}, 5s).error().code == ErrorCode::kTransport);
  CHECK(service.seen().size() == 5);
  CHECK_FALSE(service.seen().at(4).body.contains("request_id"));
}

TEST_CASE("sdk wire: a lock set sends its names sorted and reads a token per name", "[client]") {
  CannedService service({
      {"POST /v1/locks",
       {200, R"({"names":["a","b"],"lease":"17,4.4f1c","tokens":{"a":17,"b":4},"ttl_ms":30000,)"
             R"("validity_ms":29690,"waited_ms":0})"}},
      {"POST /v1/locks:extend",
       {200, R"({"names":["a","b"],"lease":"17,4.4f1c","tokens":{"a":17,"b":4},"ttl_ms":60000,)"
             R"("validity_ms":59000})"}},
      {"DELETE /v1/locks", {200, R"({"names":["a","b"],"released":true})"}},
  });
  Client client = client_for(service);
  const auto sent = Lease::Clock::now();
  auto set = client.acquire_set({"b", "a"}, 30s, 2s, "me");
  REQUIRE(set.ok());
  CHECK(set->names() == std::vector<std::string>{"a", "b"});
  CHECK(set->token_of("a") == 17);
  CHECK(set->token_of("b") == 4);
  CHECK(set->lease_string() == "17,4.4f1c");
  CHECK(set->deadline() >= sent + 29690ms);
  CHECK(set->deadline() <= Lease::Clock::now() + 29690ms);
  REQUIRE(client.extend(set.value(), 60s).ok());
  CHECK(set->ttl() == 60s);
  CHECK(set->remaining() > 58s);
  CHECK(client.release(set.value()).value() == true);

  const auto seen = service.seen();
  REQUIRE(seen.size() == 3);
  CHECK(seen[0].body ==
        json{{"names", {"a", "b"}}, {"ttl_ms", 30000}, {"wait_ms", 2000}, {"owner", "me"}});
  CHECK(seen[1].body == json{{"names", {"a", "b"}}, {"lease", "17,4.4f1c"}, {"ttl_ms", 60000}});
  CHECK(seen[2].method == "DELETE");
  CHECK(seen[2].body == json{{"names", {"a", "b"}}, {"lease", "17,4.4f1c"}});
}

TEST_CASE("sdk wire: a permit is acquired, extended, released and counted by its own routes",
          "[client]") {
  CannedService service({
      {"POST /v1/semaphores/pool",
       {200, R"({"name":"pool","permits":3,"slot":1,"lease":"17.4f1c.3.1","token":17,)"
             R"("ttl_ms":30000,"validity_ms":29690,"waited_ms":0})"}},
      {"POST /v1/semaphores/pool/extend",
       {200, R"({"name":"pool","permits":3,"slot":1,"lease":"17.4f1c.3.1","token":17,)"
             R"("ttl_ms":30000,"validity_ms":29000})"}},
      {"DELETE /v1/semaphores/pool", {200, R"({"name":"pool","released":false})"}},
      {"GET /v1/semaphores/pool", {200, R"({"name":"pool","permits":3,"held":2})"}},
  });
  Client client = client_for(service);
  auto permit = client.acquire_permit("pool", 3, 30s);
  REQUIRE(permit.ok());
  CHECK(permit->kind() == LeaseKind::kPermit);
  CHECK(permit->token() == 17);
  CHECK(permit->slot() == 1);
  CHECK(permit->permits() == 3);
  REQUIRE(client.extend(permit.value(), 30s).ok());
  CHECK(client.release(permit.value()).value() == false);
  auto status = client.semaphore_status("pool");
  REQUIRE(status.ok());
  CHECK(status->permits == 3);
  CHECK(status->held == 2);

  const auto seen = service.seen();
  REQUIRE(seen.size() == 4);
  CHECK(seen[0].body == json{{"permits", 3}, {"ttl_ms", 30000}});
  CHECK(seen[1].body == json{{"lease", "17.4f1c.3.1"}, {"ttl_ms", 30000}});
  CHECK(seen[2].body == json{{"lease", "17.4f1c.3.1"}});
}

TEST_CASE("sdk wire: the service's refusals of sets and permits become their error codes",
          "[client]") {
  CannedService service({
      {"POST /v1/semaphores/pool",
       {409, R"({"error":{"code":"permits_mismatch","message":"the semaphore has 5 permits",)"
             R"("permits":5}})"}},
      {"POST /v1/semaphores/full",
       {409, R"({"error":{"code":"locked","message":"every permit is held",)"
             R"("retry_after_ms":1200}})"}},
      {"POST /v1/locks",
       {409, R"({"error":{"code":"locked","message":"held","retry_after_ms":800}})"}},
      {"POST /v1/locks:extend", {409, R"({"error":{"code":"not_held","message":"gone"}})"}},
  });
  Client client = client_for(service);
  auto mismatch = client.acquire_permit("pool", 3, 30s);
  REQUIRE_FALSE(mismatch.ok());
  CHECK(mismatch.error().code == ErrorCode::kPermitsMismatch);
  CHECK_THAT(mismatch.error().message, Catch::Contains("5 permits"));
  auto full = client.acquire_permit("full", 3, 30s);
  REQUIRE_FALSE(full.ok());
  CHECK(full.error().code == ErrorCode::kLocked);
  CHECK(full.error().retry_after == 1200ms);
  auto set = client.acquire_set({"a", "b"}, 30s);
  REQUIRE_FALSE(set.ok());
  CHECK(set.error().code == ErrorCode::kLocked);
  CHECK(set.error().retry_after == 800ms);
  auto gone = Lease::lock_set({"a", "b"}, {1, 2}, "1,2.ab", 1s, Lease::Clock::now());
  CHECK(client.extend(gone, 1s).error().code == ErrorCode::kNotHeld);
}

TEST_CASE("sdk wire: a set answer without a token for one of its names is an internal error",
          "[client]") {
  CannedService service({
      {"POST /v1/locks",
       {200, R"({"names":["a","b"],"lease":"17,4.4f","tokens":{"a":17},"validity_ms":100})"}},
  });
  Client client = client_for(service);
  auto set = client.acquire_set({"a", "b"}, 30s);
  REQUIRE_FALSE(set.ok());
  CHECK(set.error().code == ErrorCode::kInternal);
}

TEST_CASE("sdk wire: a lock status without its optional fields reads them as absent", "[client]") {
  CannedService service({
      {"GET /v1/locks/bare", {200, R"({"name":"bare","held":false,"last_token":3})"}},
      {"GET /v1/locks/old?after_token=3&wait_ms=10", {200, R"({"name":"old","held":false})"}},
  });
  Client client = client_for(service);
  auto status = client.status("bare");
  REQUIRE(status.ok());
  CHECK_FALSE(status->held);
  CHECK_FALSE(status->token);
  CHECK_FALSE(status->owner);
  CHECK_FALSE(status->remaining);
  CHECK(status->last_token == 3);
  auto watched = client.watch("old", 3, 10ms);  // a service older than watch: no "changed"
  REQUIRE_FALSE(watched.ok());
  CHECK(watched.error().code == ErrorCode::kInternal);
}
