// Hostile input against the real fencelockd over raw loopback sockets (issue #14): request
// smuggling, malformed framing, oversized parts, slow clients and a JSON corpus. Each must get the
// right 4xx (or a closed connection where HTTP cannot answer), never crash the service, never write
// anything on a lock node, and leave memory, descriptors and other clients' service unharmed.
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "raw_socket.h"
#include "service_under_test.h"
#include "sync_redis.h"

using namespace fencelock::testing;
using namespace std::chrono_literals;
using namespace std::string_literals;
using nlohmann::json;

namespace {

json body_of(const std::string& bytes) {
  const auto start = bytes.find("\r\n\r\n");
  if (start == std::string::npos) return json();
  return json::parse(bytes.substr(start + 4), nullptr, false);
}

std::int64_t keys_on_nodes(ServiceUnderTest& service,
                           std::string_view pattern = "fencelock:lock:*") {
  std::int64_t total = 0;
  for (std::size_t i = 0; i < service.cluster.size(); ++i) {
    SyncRedis redis(service.cluster.node(i).port());
    total += redis.count_keys(pattern);
  }
  return total;
}

struct RawCase {
  const char* what;
  std::string bytes;
};

}  // namespace

TEST_CASE("hostile: malformed framing gets a 4xx or a closed connection and writes nothing",
          "[service][redis][hostile]") {
  ServiceUnderTest service({"--idle-timeout", "1s", "--request-timeout", "1s"});
  const pid_t pid = service.daemon->pid();
  const std::int64_t descriptors_before = open_descriptors(pid);
  const std::int64_t rss_before = resident_kib(pid);
  const std::string acquire =
      "POST /v1/locks/victim HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";
  const std::string body = R"({"ttl_ms":10000})";
  const std::vector<RawCase> cases = {
      {"Content-Length and Transfer-Encoding together (CL.TE smuggling)",
       acquire + "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + acquire +
           "Content-Length: 16\r\n\r\n" + body},
      {"two different Content-Length headers",
       acquire + "Content-Length: 16\r\nContent-Length: 17\r\n\r\n" + body + " "},
      {"a chunk size that is not hex",
       acquire + "Transfer-Encoding: chunked\r\n\r\nzz\r\n" + body + "\r\n0\r\n\r\n"},
      {"a Transfer-Encoding that is not chunked",
       acquire + "Transfer-Encoding: gzip\r\n\r\n" + body},
      {"a NUL in the request target", "POST /v1/locks/vic\0tim HTTP/1.1\r\nHost: x\r\n\r\n"s},
      {"a NUL in a header value",
       "POST /v1/locks/victim HTTP/1.1\r\nHost: x\0y\r\nContent-Length: 16\r\n\r\n"s + body},
      {"bare LF line endings",
       "POST /v1/locks/victim HTTP/1.1\nHost: 127.0.0.1\nContent-Length: 16\n\n" + body},
      {"an HTTP/2 connection preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"},
      {"a header of 100 KiB", acquire + "X-Pad: " + std::string(100 * 1024, 'a') + "\r\n\r\n"},
      {"Content-Length 2^62", acquire + "Content-Length: 4611686018427387904\r\n\r\n" + body},
      {"a negative Content-Length", acquire + "Content-Length: -16\r\n\r\n" + body},
      // (An absolute-form target is routed by its path, as RFC 9112 §3.2.2 asks: see "Host rules,
      // transfer codings and absolute-form targets" below.)
      {"a request line of garbage",
       "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 TLS hello\r\n\r\n"},
  };
  for (const RawCase& c : cases) {
    INFO(c.what);
    RawSocket socket(service.port());
    REQUIRE(socket.ok());
    socket.send(c.bytes);
    const std::string answer = socket.read_until_closed(3s);
    const unsigned status = first_status(answer);
    INFO("answer: " << answer.substr(0, 300));
    // An answer is a 4xx with the JSON error envelope; otherwise the connection was closed.
    if (status != 0) {
      CHECK(status >= 400);
      CHECK(status < 500);
      const json error = body_of(answer);
      CHECK(error.is_object());
      CHECK(error.contains("error"));
    } else {
      CHECK(socket.closed());
    }
    CHECK(count_responses(answer) <= 1);  // nothing smuggled behind the first request
    CHECK(keys_on_nodes(service) == 0);
  }

  SECTION("an endless chunked body is cut off at the body limit") {
    RawSocket socket(service.port());
    REQUIRE(socket.ok());
    socket.send(acquire + "Transfer-Encoding: chunked\r\n\r\n");
    const std::string chunk = "400\r\n" + std::string(1024, ' ') + "\r\n";
    bool open = true;
    for (int i = 0; i < 1024 && open; ++i) open = socket.send(chunk);  // at most 1 MiB
    const std::string answer = socket.read_until_closed(3s);
    const unsigned status = first_status(answer);
    CHECK((status == 413 || (status == 0 && socket.closed())));
    CHECK(keys_on_nodes(service) == 0);
  }

  CHECK(service.client().get("/healthz").status == 200);
  std::this_thread::sleep_for(1500ms);  // idle connections time out
  CHECK(open_descriptors(pid) <= descriptors_before + 5);
  CHECK(resident_kib(pid) <= rss_before + 64 * 1024);
}

TEST_CASE("hostile: a JSON corpus is refused with invalid_request and writes nothing",
          "[service][redis][hostile]") {
  ServiceUnderTest service;
  HttpClient http = service.client();
  const std::vector<std::string> bodies = {
      std::string(10'000, '['),
      std::string(10'000, '[') + std::string(10'000, ']'),
      R"({"ttl_ms": 1e400})",
      R"({"ttl_ms": 99999999999999999999999999})",
      R"({"ttl_ms": -1})",
      R"({"ttl_ms": 1000.5})",
      R"({"ttl_ms": "1000"})",
      R"({"ttl_ms": [1000]})",
      R"({"ttl_ms": {"value": 1000}})",
      R"({"ttl_ms": null})",
      R"({"ttl_ms": 1000, "wait_ms": true})",
      R"({"ttl_ms": 1000, "owner": 7})",
      R"({"ttl_ms": 1000, "owner": ")" + std::string(500, 'o') + R"("})",
      R"({"ttl_ms": 1000, "ttl_ms": "x"})",
      R"([{"ttl_ms": 1000}])",
      R"("ttl_ms")",
      "",
      "null",
      "{",
      R"({"ttl_ms": 1000} trailing)",
      "{\"ttl_ms\": 1000, \"owner\": \"\xff\xfe\"}",
  };
  for (const std::string& body : bodies) {
    INFO("body: " << body.substr(0, 80));
    const HttpAnswer answer = http.request("POST", "/v1/locks/victim", body);
    CHECK(answer.status == 400);
    CHECK(answer.error_code() == "invalid_request");
  }
  const std::vector<std::string> names = {
      "a%0D%0Ab", "%2A", "%7B%7D", "a%00b", "..", ".", "a/b", "%2E%2E", std::string(201, 'n')};
  for (const std::string& name : names) {
    INFO("name: " << name);
    const HttpAnswer answer = http.post("/v1/locks/" + name, {{"ttl_ms", 1000}});
    CHECK(answer.status >= 400);
    CHECK(answer.status < 500);
    CHECK(answer.json().is_object());
  }
  CHECK(keys_on_nodes(service) == 0);
  CHECK(http.get("/healthz").status == 200);
}

TEST_CASE("hostile: slow clients are cut off and never starve the others",
          "[service][redis][hostile]") {
  ServiceUnderTest service({"--request-timeout", "1s"});
  const pid_t pid = service.daemon->pid();
  constexpr int kSlowClients = 200;
  std::vector<std::unique_ptr<RawSocket>> slow;
  for (int i = 0; i < kSlowClients; ++i) {
    slow.push_back(std::make_unique<RawSocket>(service.port()));
    REQUIRE(slow.back()->ok());
    slow.back()->send("POST /v1/locks/slow HTTP/1.1\r\n");
  }
  // A byte per client every 200 ms for 3 s: a slowloris. Meanwhile others are served.
  HttpClient http = service.client();
  int served = 0;
  const auto until = std::chrono::steady_clock::now() + 3s;
  while (std::chrono::steady_clock::now() < until) {
    for (auto& socket : slow) socket->send("X");
    const json lease = http.post("/v1/locks/fast", {{"ttl_ms", 1000}}).json();
    if (lease.contains("lease")) {
      CHECK(http.del("/v1/locks/fast", {{"lease", lease["lease"]}}).json()["released"] == true);
      ++served;
    }
    std::this_thread::sleep_for(200ms);
  }
  CHECK(served >= 5);
  // Each slow request had a second to arrive whole (--request-timeout): all were closed.
  int closed = 0;
  for (auto& socket : slow) {
    socket->read_until_closed(1s);
    if (socket->closed()) ++closed;
  }
  CHECK(closed == kSlowClients);
  CHECK(keys_on_nodes(service) == 0);
  slow.clear();
  std::this_thread::sleep_for(200ms);
  CHECK(open_descriptors(pid) < 64);
}

// Review of #16: 300 slow sockets locked every other client out, probes included, and a client
// over the cap was closed with no answer at all.
TEST_CASE("hostile: connection caps answer 503, keep probes reachable and count the refusals",
          "[service][redis][hostile]") {
  ServiceUnderTest service({"--max-connections", "20", "--max-connections-per-client", "12"});
  auto slow_from = [&](unsigned host) {
    auto socket = std::make_unique<RawSocket>(service.port(), host);
    REQUIRE(socket->ok());
    socket->send("POST /v1/locks/slow HTTP/1.1\r\n");  // and never the rest
    return socket;
  };
  std::vector<std::unique_ptr<RawSocket>> held;
  for (int i = 0; i < 12; ++i) held.push_back(slow_from(2));
  // The 13th from the same address: 503 at once, with when to come back.
  RawSocket over_client(service.port(), 2);
  const std::string refused = over_client.read_until_closed(2s);
  CHECK_THAT(refused, Catch::StartsWith("HTTP/1.1 503"));
  CHECK_THAT(refused, Catch::Contains("Retry-After: 1"));
  CHECK_THAT(refused, Catch::Contains("max-connections-per-client"));
  CHECK(over_client.closed());
  for (int i = 0; i < 8; ++i) held.push_back(slow_from(3));  // the global cap (20) is full
  // Over the cap a probe still gets through; anything else gets 503.
  RawSocket probe(service.port(), 4);
  probe.send("GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  CHECK_THAT(probe.read_until_closed(2s), Catch::StartsWith("HTTP/1.1 200"));
  RawSocket work(service.port(), 4);
  work.send(
      "POST /v1/locks/w HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
      "application/json\r\nContent-Length: 15\r\n\r\n{\"ttl_ms\":1000}");
  const std::string busy = work.read_until_closed(2s);
  CHECK_THAT(busy, Catch::StartsWith("HTTP/1.1 503"));
  CHECK_THAT(busy, Catch::Contains("\"unavailable\""));
  CHECK(keys_on_nodes(service) == 0);
  held.clear();
  std::this_thread::sleep_for(300ms);
  HttpClient http = service.client();
  CHECK(http.post("/v1/locks/after", {{"ttl_ms", 1000}}).status == 200);
  const std::string metrics = http.get("/metrics").body;
  // The 13th connection from one address, and the request on a probes-only connection.
  CHECK_THAT(metrics, Catch::Contains("fencelock_http_connections_refused_total 2"));
  // The 20 slow clients hung up in the middle of their headers: no request, no 400.
  CHECK_THAT(metrics, Catch::Contains("fencelock_http_client_hang_ups_total 20"));
  CHECK_THAT(metrics, !Catch::Contains("status=\"400\""));
  REQUIRE(service.daemon->stop(SIGTERM) == std::optional<int>(0));  // the whole log, written
  CHECK_THAT(service.daemon->log(), !Catch::Contains("status=400"));
}

TEST_CASE("hostile: request bodies share one memory budget — over it a request gets 503 unread",
          "[service][redis][hostile]") {
  ServiceUnderTest service(
      {"--body-limit", "1048576", "--body-memory", "1048576", "--request-timeout", "2s"});
  RawSocket big(service.port());
  big.send(
      "POST /v1/locks/big HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
      "application/json\r\nContent-Length: 1048576\r\n\r\n{");
  std::this_thread::sleep_for(200ms);  // its header is read: the whole budget is reserved
  RawSocket small(service.port());
  small.send(
      "POST /v1/locks/small HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
      "application/json\r\nContent-Length: 15\r\n\r\n");
  const std::string busy = small.read_until_closed(2s);
  CHECK_THAT(busy, Catch::StartsWith("HTTP/1.1 503"));
  CHECK_THAT(busy, Catch::Contains("body-memory"));
  // Once the big request is gone (it never sends the rest: --request-timeout), the budget is back.
  HttpClient http = service.client();
  const auto deadline = std::chrono::steady_clock::now() + 15s;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    status = static_cast<int>(http.post("/v1/locks/small", {{"ttl_ms", 1000}}).status);
    if (status == 200) break;
    std::this_thread::sleep_for(100ms);
  }
  CHECK(status == 200);  // the big one timed out (--request-timeout) and gave its share back
  CHECK(keys_on_nodes(service, "fencelock:lock:big") == 0);
}

TEST_CASE("hostile: Host rules, transfer codings and absolute-form targets",
          "[service][redis][hostile]") {
  ServiceUnderTest service;
  auto answer = [&](const std::string& request) {
    RawSocket socket(service.port());
    socket.send(request);
    return socket.read_until_closed(1s);
  };
  CHECK_THAT(answer("GET /healthz HTTP/1.1\r\n\r\n"), Catch::StartsWith("HTTP/1.1 400"));
  CHECK_THAT(answer("GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"),
             Catch::StartsWith("HTTP/1.1 400"));
  CHECK_THAT(answer("GET /healthz HTTP/1.0\r\n\r\n"), Catch::StartsWith("HTTP/1.1 200"));
  CHECK_THAT(answer("POST /v1/locks/te HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, "
                    "chunked\r\n\r\n0\r\n\r\n"),
             Catch::StartsWith("HTTP/1.1 400"));
  CHECK_THAT(answer("GET http://localhost:8080/healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"),
             Catch::StartsWith("HTTP/1.1 200"));
  CHECK(keys_on_nodes(service) == 0);
}
