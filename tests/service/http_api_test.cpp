// fencelockd as users meet it: the real binary, real redis-servers, real HTTP over loopback.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <csignal>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "fencelock/wire_error.h"
#include "fencelockd_process.h"
#include "http_client.h"
#include "loopback.h"
#include "prometheus_text.h"
#include "redis_cluster.h"
#include "service_under_test.h"
#include "sync_redis.h"
#include "temp_dir.h"

using namespace fencelock::testing;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {
using Service = ServiceUnderTest;
std::string join(const std::vector<std::string>& parts) {
  return join_addresses(parts);
}

// A value from the daemon's /metrics, NaN if it is absent.
double metric(Service& s, const std::string& name, const Labels& labels = {}) {
  return parse(s.client().get("/metrics").body).value(name, labels);
}

// Polls a metric until `wanted` holds (every 10 ms, at most `limit`); whether it did.
template <class Wanted>
bool metric_reaches(Service& s, const std::string& name, Wanted wanted,
                    std::chrono::milliseconds limit = 5s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!wanted(metric(s, name))) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}
}  // namespace

TEST_CASE("http: acquire, refuse, extend, inspect and release a lock", "[service][redis]") {
  Service s;
  HttpClient http = s.client();

  const HttpAnswer first =
      http.post("/v1/locks/orders", {{"ttl_ms", 10000}, {"owner", "worker-1"}});
  REQUIRE(first.status == 200);
  CHECK(first.header("content-type") == "application/json");
  const json lease = first.json();
  CHECK(lease["name"] == "orders");
  CHECK(lease["token"].get<std::uint64_t>() >= 1);
  CHECK(lease["ttl_ms"] == 10000);
  CHECK(lease["validity_ms"].get<long>() >= 9000);
  CHECK(lease["validity_ms"].get<long>() <= 10000);
  const std::string lease_string = lease["lease"];

  const HttpAnswer second = http.post("/v1/locks/orders", {{"ttl_ms", 10000}});
  CHECK(second.status == 409);
  CHECK(second.error_code() == "locked");
  CHECK(second.json()["error"]["retry_after_ms"].get<long>() > 9000);

  const HttpAnswer extended =
      http.post("/v1/locks/orders/extend", {{"lease", lease_string}, {"ttl_ms", 20000}});
  REQUIRE(extended.status == 200);
  CHECK(extended.json()["token"] == lease["token"]);
  CHECK(extended.json()["lease"] == lease_string);
  CHECK(extended.json()["ttl_ms"] == 20000);

  const HttpAnswer status = http.get("/v1/locks/orders");
  REQUIRE(status.status == 200);
  CHECK(status.json()["held"] == true);
  CHECK(status.json()["remaining_ms"].get<long>() > 19000);
  CHECK(status.json()["token"] == lease["token"]);  // the holder's, from the lock nodes
  CHECK(status.json()["owner"] == "worker-1");
  // The refused acquire drew a token before the nodes said no (a gap): the current token is one up.
  CHECK(status.json()["last_token"] == lease["token"].get<std::uint64_t>() + 1);
  CHECK(status.body.find(lease_string.substr(lease_string.find('.') + 1)) == std::string::npos);

  const HttpAnswer released = http.del("/v1/locks/orders", {{"lease", lease_string}});
  REQUIRE(released.status == 200);
  CHECK(released.json() == json{{"name", "orders"}, {"released", true}});
  CHECK(http.del("/v1/locks/orders", {{"lease", lease_string}}).json()["released"] ==
        false);  // idempotent

  const HttpAnswer after = http.get("/v1/locks/orders");
  CHECK(after.json()["held"] == false);
  CHECK(after.json()["remaining_ms"].is_null());
  CHECK(after.json()["token"].is_null());
  CHECK(after.json()["owner"].is_null());

  const HttpAnswer again = http.post("/v1/locks/orders", {{"ttl_ms", 1000}});
  REQUIRE(again.status == 200);
  CHECK(again.json()["token"].get<std::uint64_t>() > lease["token"].get<std::uint64_t>());

  SECTION("the log has one line per request and never a lease secret") {
    // The log is written asynchronously: stopping writes all of it.
    REQUIRE(s.daemon->stop(SIGTERM) == std::optional<int>(0));
    const std::string log = s.daemon->log();
    CHECK(log.find(lease_string.substr(lease_string.find('.') + 1)) == std::string::npos);
    CHECK(log.find("route=acquire name=orders status=200") != std::string::npos);
    CHECK(log.find("owner=worker-1") != std::string::npos);
  }
}

TEST_CASE("http: GET /v1/locks lists held locks in pages, with token, owner and time left",
          "[service][redis]") {
  Service s;
  HttpClient http = s.client();
  std::set<std::string> held;
  for (int i = 0; i < 12; ++i) {
    const std::string name = "report:" + std::to_string(i);
    REQUIRE(
        http.post("/v1/locks/" + name, {{"ttl_ms", 30000}, {"owner", "host-1:" + name}}).status ==
        200);
    held.insert(name);
  }
  REQUIRE(http.post("/v1/locks/other", {{"ttl_ms", 30000}}).status == 200);
  std::set<std::string> listed;
  std::string target = "/v1/locks?prefix=report%3A&limit=5";
  for (int page = 0; page < 100; ++page) {
    const HttpAnswer answer = http.get(target);
    REQUIRE(answer.status == 200);
    const json body = answer.json();
    for (const json& lock : body["locks"]) {
      const std::string name = lock["name"];
      CHECK(listed.insert(name).second);
      CHECK(lock["token"].get<std::uint64_t>() >= 1);
      CHECK(lock["owner"] == "host-1:" + name);
      CHECK(lock["remaining_ms"].get<long>() > 20000);
    }
    if (answer.json()["next"].is_null()) break;
    target = "/v1/locks?prefix=report:&limit=5&cursor=" + answer.json()["next"].get<std::string>();
  }
  CHECK(listed == held);
  for (const char* bad : {"/v1/locks?limit=0", "/v1/locks?limit=1001", "/v1/locks?limt=5",
                          "/v1/locks?prefix=a&prefix=b", "/v1/locks?cursor=banana",
                          "/v1/locks?prefix=a%2", "/v1/locks?prefix=a/b"}) {
    INFO(bad);
    const HttpAnswer refused = http.get(bad);
    CHECK(refused.status == 400);
    CHECK(refused.error_code() == "invalid_request");
  }
}

TEST_CASE("http: tokens can be drawn and read without a lock", "[service][redis]") {
  Service s;
  HttpClient http = s.client();
  CHECK(http.get("/v1/tokens/batch").json() == json{{"name", "batch"}, {"token", 0}});
  CHECK(http.request("POST", "/v1/tokens/batch").json()["token"] == 1);
  CHECK(http.request("POST", "/v1/tokens/batch").json()["token"] == 2);
  CHECK(http.get("/v1/tokens/batch").json()["token"] == 2);
  CHECK(http.get("/v1/locks/batch").json()["last_token"] == 2);
}

TEST_CASE("http: a stale lease can neither extend nor release a newer holder's lock",
          "[service][redis]") {
  Service s;
  HttpClient http = s.client();
  // A ttl a loaded machine's grant fits in (200 ms once left no validity under ASan beside a
  // build).
  const json old_lease = http.post("/v1/locks/report", {{"ttl_ms", 1000}}).json();
  REQUIRE(old_lease.contains("lease"));
  std::this_thread::sleep_for(1100ms);
  const json new_lease = http.post("/v1/locks/report", {{"ttl_ms", 10000}}).json();
  REQUIRE(new_lease.contains("lease"));

  const HttpAnswer extend =
      http.post("/v1/locks/report/extend", {{"lease", old_lease["lease"]}, {"ttl_ms", 10000}});
  CHECK(extend.status == 409);
  CHECK(extend.error_code() == "not_held");
  CHECK(http.del("/v1/locks/report", {{"lease", old_lease["lease"]}}).json()["released"] == false);
  CHECK(http.get("/v1/locks/report").json()["held"] == true);
}

TEST_CASE("http: a lease whose token was changed is refused, and its token is never echoed",
          "[service][redis]") {
  Service s;
  HttpClient http = s.client();
  REQUIRE(http.request("POST", "/v1/tokens/doc").status == 200);  // the lease below gets token 2
  const json granted = http.post("/v1/locks/doc", {{"ttl_ms", 30000}}).json();
  const std::string lease = granted["lease"];
  const std::uint64_t token = granted["token"];
  const std::string forged = std::to_string(token + 41) + lease.substr(lease.find('.'));

  const HttpAnswer extend =
      http.post("/v1/locks/doc/extend", {{"lease", forged}, {"ttl_ms", 60000}});
  CHECK(extend.status == 400);
  CHECK(extend.error_code() == "invalid_request");
  CHECK(extend.body.find(std::to_string(token + 41)) == std::string::npos);
  const HttpAnswer release = http.del("/v1/locks/doc", {{"lease", forged}});
  CHECK(release.status == 400);
  CHECK(release.error_code() == "invalid_request");
  CHECK(http.get("/v1/locks/doc").json()["held"] == true);
  CHECK(http.get("/v1/locks/doc").json()["remaining_ms"].get<long>() <= 30000);

  const HttpAnswer real = http.post("/v1/locks/doc/extend", {{"lease", lease}, {"ttl_ms", 60000}});
  REQUIRE(real.status == 200);
  CHECK(real.json()["token"] == token);
  CHECK(real.json()["lease"] == lease);
}

TEST_CASE("http: every malformed request is refused with a stable code and changes nothing",
          "[service][redis]") {
  Service s;
  HttpClient http = s.client();
  const auto [method, target, body, status,
              code] = GENERATE(table<std::string, std::string, std::string, unsigned, std::string>({
      {"POST", "/v1/locks/x", "", 400, "invalid_request"},
      {"POST", "/v1/locks/x", "{", 400, "invalid_request"},
      {"POST", "/v1/locks/x", "[]", 400, "invalid_request"},
      {"POST", "/v1/locks/x", R"({})", 400, "invalid_request"},
      {"POST", "/v1/locks/x", R"({"ttl_ms": "1000"})", 400, "invalid_request"},
      {"POST", "/v1/locks/x", R"({"ttl_ms": 1.5})", 400, "invalid_request"},
      {"POST", "/v1/locks/x", R"({"ttl_ms": 9})", 400, "invalid_request"},
      {"POST", "/v1/locks/x", R"({"ttl_ms": 3600001})", 400, "invalid_request"},
      {"POST", "/v1/locks/x", R"({"ttl_ms": 1000, "wait_ms": 60001})", 400, "invalid_request"},
      {"POST", "/v1/locks/x", R"({"ttl_ms": 1000, "wait_ms": -1})", 400, "invalid_request"},
      {"POST", "/v1/locks/x", R"({"ttl_ms": 1000, "owner": false})", 400, "invalid_request"},
      {"POST", "/v1/locks/x", R"({"ttl_ms": 1000, "wiat_ms": 100})", 400, "invalid_request"},
      {"POST", "/v1/locks/bad%20name", R"({"ttl_ms": 1000})", 400, "invalid_request"},
      {"POST", "/v1/locks/" + std::string(201, 'n'), R"({"ttl_ms": 1000})", 400, "invalid_request"},
      {"POST", "/v1/locks/.", R"({"ttl_ms": 1000})", 400, "invalid_request"},
      {"POST", "/v1/locks/..", R"({"ttl_ms": 1000})", 400, "invalid_request"},
      {"POST", "/v1/tokens/..", "", 400, "invalid_request"},
      {"POST", "/v1/locks/x/extend", R"({"ttl_ms": 1000})", 400, "invalid_request"},
      {"POST", "/v1/locks/x/extend", R"({"lease": "garbage", "ttl_ms": 1000})", 400,
       "invalid_request"},
      {"DELETE", "/v1/locks/x", R"({})", 400, "invalid_request"},
      {"DELETE", "/v1/locks/x", R"({"lease": "1.zz"})", 400, "invalid_request"},
      {"GET", "/v1/nothing", "", 404, "not_found"},
      {"GET", "/", "", 404, "not_found"},
      {"PUT", "/v1/locks/x", R"({"ttl_ms": 1000})", 405, "method_not_allowed"},
      {"GET", "/v1/locks/x/extend", "", 405, "method_not_allowed"},
      {"POST", "/healthz", "", 405, "method_not_allowed"},
  }));
  INFO(method << " " << target << " " << body);
  const HttpAnswer answer = http.request(method, target, body);
  CHECK(answer.status == status);
  CHECK(answer.error_code() == code);
  CHECK(answer.json()["error"]["message"].is_string());
  if (body.find("wiat_ms") != std::string::npos)  // a typo is named, never ignored
    CHECK(answer.json()["error"]["message"] ==
          "unknown field 'wiat_ms' (did you mean 'wait_ms'?); this body takes ttl_ms, wait_ms, "
          "owner, request_id");
  if (status == 405) CHECK_FALSE(answer.header("allow").empty());
  for (std::size_t i = 0; i < s.cluster.size(); ++i)
    CHECK(SyncRedis(s.cluster.node(i).port()).count_keys() == 0);
}

TEST_CASE("http: 405 names the allowed methods and an oversized body is 413", "[service][redis]") {
  Service s({"--body-limit", "1024"});
  HttpClient http = s.client();
  CHECK(http.request("PUT", "/v1/locks/x").header("allow") == "GET, POST, DELETE");
  CHECK(http.request("GET", "/v1/locks/x/extend").header("allow") == "POST");
  const std::string big = R"({"ttl_ms": 1000, "owner": ")" + std::string(2000, 'o') + R"("})";
  const HttpAnswer answer = http.request("POST", "/v1/locks/x", big);
  CHECK(answer.status == 413);
  CHECK(answer.error_code() == "payload_too_large");
  CHECK(HttpClient(s.port()).get("/healthz").status == 200);  // still serving
}

TEST_CASE("http: concurrent clients on one name never hold it together and get rising tokens",
          "[service][redis]") {
  Service s;
  struct Grant {
    std::chrono::steady_clock::time_point from, to;
    std::uint64_t token;
  };
  std::mutex mutex;
  std::vector<Grant> grants;
  std::atomic<int> errors{0};
  const auto end = std::chrono::steady_clock::now() + 3s;
  std::vector<std::thread> clients;
  for (int c = 0; c < 16; ++c) {
    clients.emplace_back([&] {
      HttpClient http = s.client();
      while (std::chrono::steady_clock::now() < end) {
        const auto sent = std::chrono::steady_clock::now();
        const HttpAnswer answer = http.post("/v1/locks/shared", {{"ttl_ms", 500}});
        if (answer.status == 409) continue;
        if (answer.status != 200) {
          ++errors;
          continue;
        }
        const json lease = answer.json();
        const auto granted = std::chrono::steady_clock::now();
        // Valid from the moment we learn of it until our send time + validity_ms (the API's rule).
        const auto valid_until = sent + std::chrono::milliseconds(lease["validity_ms"].get<long>());
        std::this_thread::sleep_for(1ms);
        const auto released_at = std::chrono::steady_clock::now();
        http.del("/v1/locks/shared", {{"lease", lease["lease"]}});
        std::lock_guard<std::mutex> lock(mutex);
        grants.push_back(
            {granted, std::min(valid_until, released_at), lease["token"].get<std::uint64_t>()});
      }
    });
  }
  for (auto& c : clients) c.join();
  CHECK(errors == 0);
  REQUIRE(grants.size() > 20);
  std::sort(grants.begin(), grants.end(),
            [](const Grant& a, const Grant& b) { return a.from < b.from; });
  for (std::size_t i = 1; i < grants.size(); ++i) {
    INFO("grant " << i);
    CHECK(grants[i].from >= grants[i - 1].to);
    CHECK(grants[i].token > grants[i - 1].token);
  }
}

// #33 / #35 item 1: the nodes answer one by one at a cold start; those before the last were
// logged as quarantined for 24 h while a birth was only waiting for the rest.
TEST_CASE("http: a brand-new cluster's first start logs no quarantine", "[service][redis]") {
  Service s;
  CHECK(s.client().get("/readyz").status == 200);
  CHECK_THAT(s.daemon->log(), !Catch::Contains("lock_node_quarantined"));
}

TEST_CASE("http: readiness follows the lock nodes' majority", "[service][redis]") {
  Service s({"--max-ttl", "2s"});  // restarted nodes are quarantined for max-ttl: keep it short
  HttpClient http = s.client();
  const json ready = http.get("/readyz").json();
  CHECK(ready["status"] == "ok");
  CHECK(ready["lock_nodes"]["voting"] == 5);
  CHECK(ready["token_source"]["status"] == "ok");

  s.cluster.node(0).kill();
  s.cluster.node(1).kill();
  s.cluster.node(2).kill();
  s.wait_ready(503);
  const HttpAnswer down = http.get("/readyz");
  CHECK(down.json()["status"] == "unavailable");
  CHECK(down.json()["lock_nodes"]["status"] == "unavailable");
  CHECK(http.get("/healthz").status == 200);  // alive, just not ready
  CHECK(http.post("/v1/locks/x", {{"ttl_ms", 1000}}).error_code() == "unavailable");

  for (std::size_t i = 0; i < 3; ++i) s.cluster.node(i).restart(/*keep_data=*/false);
  // Back, but restarted: quarantined until max-ttl has passed, so still not ready at first.
  CHECK(http.get("/readyz").status == 503);
  s.wait_ready(200);
  CHECK(http.post("/v1/locks/x", {{"ttl_ms", 1000}}).status == 200);
}

// #35 item 1: three of five nodes restarted without their data shut everyone out for the window,
// and nothing said why or until when.
TEST_CASE("http: quarantined nodes are named, with when they vote again, by /readyz and the 503",
          "[service][redis]") {
  Service s({"--max-ttl", "60s"});
  HttpClient http = s.client();
  REQUIRE(http.post("/v1/locks/x", {{"ttl_ms", 1000}}).status == 200);  // a history
  for (std::size_t i = 0; i < 3; ++i) s.cluster.node(i).restart(/*keep_data=*/false);
  json nodes;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {  // until all three are judged (a node without its marker first waits 2 s)
    nodes = http.get("/readyz").json()["lock_nodes"]["nodes"];
    REQUIRE(nodes.size() == 5);
    const bool judged = std::all_of(nodes.begin(), nodes.begin() + 3, [](const json& node) {
      return node["state"] == "quarantined" && node["votes_again_in_ms"].get<long>() > 30'000;
    });
    if (judged || std::chrono::steady_clock::now() > deadline) break;
    std::this_thread::sleep_for(50ms);
  }
  for (std::size_t i = 0; i < 5; ++i) {
    CAPTURE(i, nodes[i].dump());
    CHECK(nodes[i]["node"] == s.cluster.addresses()[i]);
    CHECK(nodes[i]["state"] == (i < 3 ? "quarantined" : "voting"));
    if (i < 3) CHECK(nodes[i]["votes_again_in_ms"].get<long>() <= 61'000);
  }
  const HttpAnswer refused = http.post("/v1/locks/y", {{"ttl_ms", 1000}});
  CHECK(refused.status == 503);
  CHECK(refused.error_code() == "unavailable");
  const json error = refused.json()["error"];
  CHECK_THAT(
      error["message"].get<std::string>(),
      Catch::Contains("only 2 of 5 lock nodes can vote") &&
          Catch::Contains("Quarantined: " + s.cluster.addresses()[0] + " (votes again in ") &&
          Catch::Contains(s.cluster.addresses()[2]));
  CHECK(error["retry_after_ms"].get<long>() > 30'000);
  CHECK(error["retry_after_ms"].get<long>() <= 61'000);

  // A fresh instance (restarting fencelockd "does not help") refuses before it asks any node —
  // its registry cannot confirm a majority — and says why in the same words.
  s.daemon.reset();
  s.daemon.emplace(s.dir.path(),
                   std::vector<std::string>{"--redis", join(s.cluster.addresses()), "--tokens",
                                            "sqlite:" + (s.dir.path() / "tokens.db").string(),
                                            "--max-ttl", "60s"});
  HttpClient fresh = s.client();
  json fresh_error;
  const auto fresh_deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {  // until its nodes are judged (the first 2 s a node without its marker waits)
    fresh_error = fresh.post("/v1/locks/y", {{"ttl_ms", 1000}}).json()["error"];
    if (fresh_error.value("retry_after_ms", 0L) > 30'000 ||
        std::chrono::steady_clock::now() > fresh_deadline) {
      break;
    }
    std::this_thread::sleep_for(50ms);
  }
  CAPTURE(fresh_error.dump());
  CHECK(fresh_error["code"] == "unavailable");
  CHECK_THAT(fresh_error["message"].get<std::string>(),
             Catch::Contains("Quarantined: " + s.cluster.addresses()[0] + " (votes again in "));
  // More than the window the first instance knew: only two markers kept their history, too few
  // to learn the longest ttl any instance may grant, so the fresh one assumes the bound (24 h).
  CHECK(fresh_error.value("retry_after_ms", 0L) > 30'000);
  CHECK(fresh_error.value("retry_after_ms", 0L) <= 86'401'000);
}

TEST_CASE("http: lock nodes that may evict keys are refused, and /readyz says which and why",
          "[service][redis]") {
  Service s({"--max-ttl", "2s"});
  HttpClient http = s.client();
  CHECK(http.get("/readyz").json()["lock_nodes"]["refused"].empty());
  const auto refused = [&] { return http.get("/readyz").json()["lock_nodes"]["refused"]; };
  const auto wait_refused = [&](std::size_t count) {
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (refused().size() != count && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    return refused();
  };
  for (std::size_t i = 0; i < 3; ++i) {
    SyncRedis node(s.cluster.node(i).port());
    REQUIRE(node.command({"CONFIG", "SET", "maxmemory", "2mb"}).text == "OK");
    REQUIRE(node.command({"CONFIG", "SET", "maxmemory-policy", "volatile-lru"}).text == "OK");
  }
  const json listed = wait_refused(3);
  REQUIRE(listed.size() == 3);
  CHECK(listed[0]["node"] == s.cluster.addresses()[0]);
  CHECK_THAT(listed[0]["reason"].get<std::string>(),
             Catch::Contains("may evict keys") && Catch::Contains("volatile-lru"));
  CHECK(http.get("/readyz").status == 503);
  CHECK(http.post("/v1/locks/x", {{"ttl_ms", 1000}}).error_code() == "unavailable");
  for (std::size_t i = 0; i < 3; ++i) {
    REQUIRE(SyncRedis(s.cluster.node(i).port()).command({"CONFIG", "SET", "maxmemory", "0"}).text ==
            "OK");
  }
  CHECK(wait_refused(0).empty());
  s.wait_ready(200);  // once the quarantine (max-ttl) has passed
}

TEST_CASE("http: metrics are served in the Prometheus text format", "[service][redis]") {
  Service s;
  HttpClient http = s.client();
  http.post("/v1/locks/m", {{"ttl_ms", 1000}});
  const HttpAnswer metrics = http.get("/metrics");
  REQUIRE(metrics.status == 200);
  CHECK_THAT(metrics.header("content-type"), Catch::StartsWith("text/plain; version=0.0.4"));
  for (const char* family :
       {"fencelock_http_requests_total", "fencelock_acquire_total",
        "fencelock_acquire_duration_seconds_bucket", "fencelock_token_draw_duration_seconds",
        "fencelock_node_up", "fencelock_node_errors_total", "fencelock_http_open_connections"}) {
    CHECK_THAT(metrics.body, Catch::Contains(family));
  }
  CHECK_THAT(metrics.body, Catch::Contains("fencelock_acquire_total{outcome=\"granted\"} 1"));
}

TEST_CASE("http: GET /v1/openapi.json serves the API's OpenAPI 3.1 description as JSON",
          "[service][redis]") {
  Service s;
  HttpClient http = s.client();
  const HttpAnswer answer = http.get("/v1/openapi.json");
  REQUIRE(answer.status == 200);
  CHECK(answer.header("content-type") == "application/json");
  const json document = answer.json();
  REQUIRE(document.is_object());
  CHECK(document["openapi"] == "3.1.0");
  const auto [path, method] = GENERATE(table<std::string, std::string>({
      {"/v1/locks/{name}", "post"},
      {"/v1/locks/{name}", "delete"},
      {"/v1/locks/{name}", "get"},
      {"/v1/locks/{name}/extend", "post"},
      {"/v1/tokens/{name}", "post"},
      {"/v1/tokens/{name}", "get"},
      {"/healthz", "get"},
      {"/readyz", "get"},
      {"/metrics", "get"},
      {"/v1/openapi.json", "get"},
  }));
  CAPTURE(path, method);
  CHECK(document["paths"][path].contains(method));
  // Every code the service can send is in the document's enum (client_gone is never sent).
  const json& codes = document["components"]["schemas"]["ErrorCode"]["enum"];
  for (int e = 0; e <= static_cast<int>(fencelock::WireError::kPlainHttpOnTlsPort); ++e) {
    const auto error = static_cast<fencelock::WireError>(e);
    if (error == fencelock::WireError::kClientGone) continue;
    CAPTURE(fencelock::wire_code(error));
    CHECK(std::find(codes.begin(), codes.end(), fencelock::wire_code(error)) != codes.end());
  }
}

TEST_CASE("http: a thousand keep-alive connections are served at once", "[service][redis]") {
  Service s({"--max-connections-per-client", "2000"});  // all of them come from 127.0.0.1
  std::vector<std::unique_ptr<HttpClient>> clients;
  for (int i = 0; i < 1000; ++i) {
    clients.push_back(std::make_unique<HttpClient>(s.port()));
    REQUIRE(clients.back()->get("/healthz").status == 200);  // opens and keeps the connection
  }
  const std::string metrics = HttpClient(s.port()).get("/metrics").body;
  CHECK_THAT(metrics, Catch::Contains("fencelock_http_open_connections 1001"));
  for (auto& client : clients) CHECK(client->get("/healthz").status == 200);  // all still alive
}

TEST_CASE("http: SIGTERM drains and exits 0", "[service][redis]") {
  Service s;
  HttpClient http = s.client();
  REQUIRE(http.post("/v1/locks/x", {{"ttl_ms", 1000}}).status == 200);
  CHECK(s.daemon->stop(SIGTERM) == std::optional<int>(0));
  CHECK_THAT(s.daemon->log(), Catch::Contains("shutting_down"));
  CHECK_THAT(s.daemon->log(), Catch::Contains("stopped"));
  // Closing its own connections to the lock nodes is no warning.
  CHECK_THAT(s.daemon->log(), !Catch::Contains("warning lock_node_down"));
}

TEST_CASE("http: every answer carries a request id, the client's own if it is short and printable",
          "[service][redis]") {
  Service s;
  HttpClient http = s.client();
  const HttpAnswer generated = http.get("/healthz");
  const std::string id = generated.header("x-request-id");
  CHECK(id.size() == 16);
  CHECK(id.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(http.get("/healthz").header("x-request-id") != id);  // a new one for every request

  const HttpAnswer own = http.request("GET", "/v1/locks/mine", "", {{"X-Request-Id", "job-42/a"}});
  CHECK(own.header("x-request-id") == "job-42/a");
  CHECK(s.daemon->log_shows("route=lock_status name=mine status=200"));
  CHECK_THAT(s.daemon->log(), Catch::Contains("peer=127.0.0.1 request_id=job-42/a"));

  for (const std::string& bad : {std::string(65, 'x'), std::string("two words"),
                                 std::string("quote\"d"), std::string("\xc3\xa9t\xc3\xa9")}) {
    INFO(bad);
    const std::string answered =
        http.request("GET", "/healthz", "", {{"X-Request-Id", bad}}).header("x-request-id");
    CHECK(answered.size() == 16);
    CHECK(answered != bad);
  }
  SECTION("an error answer carries it too") {
    const HttpAnswer missing = http.request("GET", "/nowhere", "", {{"X-Request-Id", "r-404"}});
    CHECK(missing.status == 404);
    CHECK(missing.header("x-request-id") == "r-404");
  }
}

TEST_CASE("http: --log-format json writes one JSON object a line and --log-level drops the rest",
          "[service][redis]") {
  SECTION("json") {
    Service s({"--log-format", "json"});
    REQUIRE(s.client().post("/v1/locks/j", {{"ttl_ms", 1000}, {"owner", "a \"b\" \\ c"}}).status ==
            200);
    // An acquire's request id asked twice: the second answer repeats the grant, and says so.
    const json twice{{"ttl_ms", 1000}, {"request_id", "r-twice"}};
    REQUIRE(s.client().post("/v1/locks/k", twice).status == 200);
    REQUIRE(s.client().post("/v1/locks/k", twice).json()["repeated"] == true);
    REQUIRE(s.daemon->log_shows("\"repeated\":true"));
    std::istringstream lines(s.daemon->log());
    std::size_t requests = 0;
    std::size_t repeats = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line.empty() || line.front() != '{') continue;  // the harness's own lines, if any
      const json record = json::parse(line, nullptr, false);
      INFO(line);
      REQUIRE_FALSE(record.is_discarded());
      CHECK(record.contains("time"));
      CHECK(record.contains("level"));
      CHECK(record.contains("event"));
      if (record["event"] == "request" && record.value("name", "") == "k") {
        if (record.contains("repeated")) ++repeats;
        CHECK(record.value("repeated", true));  // written only when true
      }
      if (record["event"] == "request" && record["route"] == "acquire" &&
          record.value("name", "") == "j") {
        ++requests;
        CHECK_FALSE(record.contains("repeated"));
        CHECK(record["status"] == 200);
        CHECK(record["name"] == "j");
        CHECK(record["owner"] == "a \"b\" \\ c");
        CHECK(record["token"].is_number_unsigned());
        CHECK(record["peer"] == "127.0.0.1");
        CHECK(record["request_id"].get<std::string>().size() == 16);
      }
      if (record["event"] == "starting") CHECK(record.contains("listen"));
    }
    CHECK(requests == 1);
    CHECK(repeats == 1);
  }
  SECTION("warning and above only") {
    Service s({"--log-level", "warning"});
    REQUIRE(s.client().post("/v1/locks/q", {{"ttl_ms", 1000}}).status == 200);
    CHECK(s.daemon->stop(SIGTERM) == std::optional<int>(0));
    CHECK_THAT(s.daemon->log(), !Catch::Contains(" info "));
    CHECK_THAT(s.daemon->log(), Catch::Contains("warning OPEN_TO_ANYONE"));
  }
  SECTION("a bad value is refused at start") {
    TempDir dir;
    const FinishedRun bad =
        run_fencelockd(dir.path(), {"--redis", "127.0.0.1:7000", "--log-level", "verbose"});
    CHECK(bad.exit_code == 2);
    CHECK_THAT(bad.output, Catch::Contains("--log-level"));
  }
}

TEST_CASE(
    "http: a release that finds its lease expired is counted not_held, a bad name under "
    "its route",
    "[service][redis]") {
  Service s;
  HttpClient http = s.client();
  const json lease = http.post("/v1/locks/short", {{"ttl_ms", 100}}).json();
  REQUIRE(lease.contains("lease"));
  std::this_thread::sleep_for(300ms);  // the lease expires on the nodes
  REQUIRE(http.del("/v1/locks/short", {{"lease", lease["lease"]}}).json()["released"] == false);
  const json again = http.post("/v1/locks/short", {{"ttl_ms", 1000}}).json();
  REQUIRE(http.del("/v1/locks/short", {{"lease", again["lease"]}}).json()["released"] == true);
  CHECK(http.post("/v1/locks/bad%20name", {{"ttl_ms", 1000}}).status == 400);

  const Exposition text = parse(http.get("/metrics").body);
  REQUIRE(text.errors.empty());
  const std::string ops = "fencelock_lock_operations_total";
  CHECK(text.value(ops, {{"operation", "release"}, {"outcome", "not_held"}}) == 1);
  CHECK(text.value(ops, {{"operation", "release"}, {"outcome", "ok"}}) == 1);
  const std::string requests = "fencelock_http_requests_total";
  CHECK(text.value(requests, {{"route", "acquire"}, {"status", "400"}}) == 1);
  CHECK_FALSE(text.has(requests, {{"route", "not_found"}, {"status", "400"}}));
  CHECK(text.value("fencelock_token_source_up") == 1);
  CHECK(text.value("fencelock_token_draw_errors_total") == 0);
  CHECK(text.value("fencelock_acquires_waiting") == 0);
  CHECK(text.count_of("fencelock_build_info") == 1);
  CHECK(text.value("process_open_fds") > 5);
  CHECK(text.value("process_resident_memory_bytes") > 1e6);
  CHECK(text.value("process_start_time_seconds") > 1.7e9);
  CHECK(text.value("process_cpu_seconds_total") >= 0);
}

TEST_CASE("http: bad configuration stops fencelockd at start with exit code 2",
          "[service][redis]") {
  TempDir dir;
  const FinishedRun missing = run_fencelockd(dir.path(), {"--listen", "127.0.0.1:1"});
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.output, Catch::Contains("--redis"));
  const FinishedRun unknown =
      run_fencelockd(dir.path(), {"--redis", "127.0.0.1:7000", "--frobnicate"});
  CHECK(unknown.exit_code == 2);
  CHECK_THAT(unknown.output, Catch::Contains("--frobnicate"));
  const FinishedRun version = run_fencelockd(dir.path(), {"--version"});
  CHECK(version.exit_code == 0);
  CHECK_THAT(version.output, Catch::Contains("fencelockd"));
  const FinishedRun help = run_fencelockd(dir.path(), {"--help"});
  CHECK(help.exit_code == 0);
  CHECK_THAT(help.output, Catch::Contains("FENCELOCK_REDIS"));
}

TEST_CASE("http: a second fencelockd on the same token file is refused clearly",
          "[service][redis]") {
  Service s;
  const FinishedRun second =
      run_fencelockd(s.dir.path(), {"--listen", "127.0.0.1:" + std::to_string(pick_free_port()),
                                    "--redis", join(s.cluster.addresses()), "--tokens",
                                    "sqlite:" + (s.dir.path() / "tokens.db").string()});
  CHECK(second.exit_code != 0);
  CHECK_THAT(second.output, Catch::Contains("in use by another process"));
}

TEST_CASE("http: a request that cannot be framed is refused, not read as two", "[service][redis]") {
  Service s;
  HttpClient http = s.client();
  const HttpAnswer smuggled = http.raw(
      "POST /v1/tokens/a HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: gzip\r\n\r\n"
      "POST /v1/tokens/smuggled HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  CHECK(smuggled.status == 400);
  CHECK(http.get("/v1/tokens/smuggled").json()["token"] == 0);  // the hidden request never ran
  CHECK(http.get("/v1/tokens/a").json()["token"] == 0);

  const HttpAnswer head = http.raw("HEAD /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
  CHECK(head.status == 405);
  CHECK(head.body.empty());
}

TEST_CASE("http: SIGTERM answers acquires that are waiting at once instead of holding the shutdown",
          "[service][redis]") {
  Service s({"--shutdown-grace", "60s"});
  HttpClient http = s.client();
  REQUIRE(http.post("/v1/locks/busy", {{"ttl_ms", 60000}}).status == 200);
  HttpAnswer waited;
  std::thread waiter([&] {
    waited = s.client().post("/v1/locks/busy", {{"ttl_ms", 1000}, {"wait_ms", 30000}});
  });
  // The waiter is queued on the held lock once the gauge says so.
  REQUIRE(metric_reaches(s, "fencelock_acquires_waiting", [](double n) { return n >= 1; }));
  const auto started = std::chrono::steady_clock::now();
  CHECK(s.daemon->stop(SIGTERM, 10s) == std::optional<int>(0));
  waiter.join();
  CHECK(std::chrono::steady_clock::now() - started < 3s);
  CHECK(waited.status == 503);
  CHECK(waited.error_code() == "unavailable");
}

TEST_CASE("http: a waiting acquire whose client went away is cancelled, never granted",
          "[service][redis]") {
  Service s;
  HttpClient http = s.client();
  const json holder = http.post("/v1/locks/gone", {{"ttl_ms", 60000}}).json();
  REQUIRE(holder.contains("lease"));

  const int fd = connect_loopback(s.port());
  REQUIRE(fd >= 0);
  const std::string body = R"({"ttl_ms": 30000, "wait_ms": 10000})";
  const std::string request =
      "POST /v1/locks/gone HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  REQUIRE(::send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size()));
  std::this_thread::sleep_for(500ms);
  ::close(fd);
  std::this_thread::sleep_for(200ms);

  REQUIRE(http.del("/v1/locks/gone", {{"lease", holder["lease"]}}).json()["released"] == true);
  std::this_thread::sleep_for(300ms);
  CHECK(http.get("/v1/locks/gone").json()["held"] == false);  // nobody holds a lease nobody knows
  CHECK_THAT(s.daemon->log(), Catch::Contains("route=acquire name=gone status=499"));
  CHECK(http.post("/v1/locks/gone", {{"ttl_ms", 1000}}).status == 200);
}

TEST_CASE(
    "http: two fencelockd with separate SQLite token files on the same nodes never hand out a "
    "token twice",
    "[service][redis]") {
  Service a;
  HttpClient http_a = a.client();
  std::set<std::uint64_t> tokens;
  for (int i = 0; i < 2; ++i) {
    const TakenAndReleased taken = take_and_release(http_a, "doc", {{"ttl_ms", 1000}});
    REQUIRE(taken.status == 200);
    CHECK(tokens.insert(taken.token).second);
    REQUIRE(taken.released);
  }
  TempDir other_dir;
  Fencelockd b(other_dir.path(), {"--redis", join(a.cluster.addresses()), "--tokens",
                                  "sqlite:" + (other_dir.path() / "tokens.db").string()});
  HttpClient http_b(b.port());
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  HttpAnswer ready;
  do {  // B answers, but is never ready: it shares the nodes with A
    ready = http_b.get("/readyz");
    std::this_thread::sleep_for(50ms);
  } while (ready.status == 0 && std::chrono::steady_clock::now() < deadline);
  CHECK(ready.status == 503);
  const HttpAnswer refused = http_b.post("/v1/locks/doc", {{"ttl_ms", 1000}});
  CHECK(refused.status == 503);
  CHECK(refused.error_code() == "unavailable");
  CHECK(http_b.request("POST", "/v1/tokens/doc").status == 503);
  // A notices B within a registry round or two and stops granting as well.
  const auto a_deadline = std::chrono::steady_clock::now() + 5s;
  HttpAnswer from_a;
  for (int i = 0;; ++i) {
    from_a = http_a.post("/v1/locks/a-" + std::to_string(i), {{"ttl_ms", 1000}});
    if (from_a.status != 200) break;
    REQUIRE(std::chrono::steady_clock::now() < a_deadline);
    std::this_thread::sleep_for(50ms);
  }
  CHECK(from_a.status == 503);
  CHECK_THAT(from_a.json()["error"]["message"].get<std::string>(),
             Catch::Contains("another fencelockd"));
  const json readiness = http_b.get("/readyz").json();
  CHECK(readiness["token_source"]["status"] == "unavailable");
  CHECK_THAT(readiness["token_source"]["reason"].get<std::string>(),
             Catch::Contains("shared token source"));
}

// Review of #12: the registry only saw instances alive at the same time. fencelockd restarted
// with a fresh token file (another working directory, say) granted token 1 again for a name the
// nodes had already granted up to 3 — a stale holder's token would then look newer than the new
// holders'. The nodes now remember which token store they served.
TEST_CASE("http: fencelockd with a fresh token file on nodes another file served refuses to grant",
          "[service][redis]") {
  Service a;
  {
    HttpClient http_a = a.client();
    for (int i = 0; i < 3; ++i) {
      const json lease = http_a.post("/v1/locks/dup1", {{"ttl_ms", 1000}}).json();
      REQUIRE(lease.value("token", 0) == i + 1);
      REQUIRE(http_a.del("/v1/locks/dup1", {{"lease", lease["lease"]}}).json()["released"] == true);
    }
  }
  REQUIRE(a.daemon->stop(SIGTERM) == 0);
  a.daemon.reset();

  TempDir other_dir;
  Fencelockd b(other_dir.path(), {"--redis", join(a.cluster.addresses()), "--tokens",
                                  "sqlite:" + (other_dir.path() / "tokens.db").string()});
  HttpClient http_b(b.port());
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  json readiness;
  for (;;) {
    readiness = http_b.get("/readyz").json();
    const std::string reason =
        readiness.contains("token_source") ? readiness["token_source"].value("reason", "") : "";
    if (reason.find("another token store") != std::string::npos) break;
    REQUIRE(std::chrono::steady_clock::now() < deadline);
    std::this_thread::sleep_for(50ms);
  }
  const HttpAnswer refused = http_b.post("/v1/locks/dup1", {{"ttl_ms", 1000}});
  CHECK(refused.status == 503);
  CHECK_THAT(refused.json()["error"]["message"].get<std::string>(),
             Catch::Contains("another token store"));
  CHECK(http_b.request("POST", "/v1/tokens/dup1").status == 503);
}
