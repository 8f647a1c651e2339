// Watching a lock over HTTP (GET /v1/locks/{name}?after_token=T&wait_ms=N) as users meet it: the
// real fencelockd, real redis-servers, real HTTP over loopback.
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <future>
#include <thread>

#include "http_client.h"
#include "loopback.h"
#include "prometheus_text.h"
#include "service_under_test.h"

using namespace fencelock::testing;
using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double watches_waiting(ServiceUnderTest& s) {
  return parse(s.client().get("/metrics").body).value("fencelock_watches_waiting", {});
}

bool watches_waiting_reach(ServiceUnderTest& s, double wanted) {
  const auto deadline = Clock::now() + 5s;
  while (watches_waiting(s) != wanted) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(10ms);
  }
  return true;
}

}  // namespace

TEST_CASE("http: a watch answers when the lock is released, or unchanged after wait_ms",
          "[service][redis][watch]") {
  ServiceUnderTest s;
  HttpClient http = s.client();
  const json lease = http.post("/v1/locks/orders", {{"ttl_ms", 30000}, {"owner", "w-1"}}).json();
  const std::uint64_t token = lease["token"];
  const std::string watch = "/v1/locks/orders?after_token=" + std::to_string(token);

  // Unchanged: answered after wait_ms with the status, changed false.
  const auto started = Clock::now();
  const HttpAnswer unchanged = http.get(watch + "&wait_ms=300");
  REQUIRE(unchanged.status == 200);
  CHECK(Clock::now() - started >= 300ms);
  const json same = unchanged.json();
  CHECK(same["changed"] == false);
  CHECK(same["held"] == true);
  CHECK(same["token"] == token);
  CHECK(same["owner"] == "w-1");
  CHECK(same["remaining_ms"].get<long>() > 20000);
  CHECK_FALSE(same.contains("last_token"));

  // Released while watched: answered at once, changed true.
  auto waiting = std::async(std::launch::async, [&s, watch] {
    return HttpClient(s.port(), 30s).get(watch + "&wait_ms=20000");
  });
  REQUIRE(watches_waiting_reach(s, 1));
  const auto released_at = Clock::now();
  REQUIRE(http.del("/v1/locks/orders", {{"lease", lease["lease"]}}).json()["released"] == true);
  REQUIRE(waiting.wait_for(5s) == std::future_status::ready);
  const HttpAnswer answer = waiting.get();
  CHECK(Clock::now() - released_at < 3s);
  REQUIRE(answer.status == 200);
  CHECK(answer.json()["changed"] == true);
  CHECK(answer.json()["held"] == false);
  CHECK(answer.json()["token"].is_null());
  CHECK(watches_waiting_reach(s, 0));

  // Another state already: answered at once (after_token alone waits 30 s by default).
  const HttpAnswer at_once = http.get(watch);
  REQUIRE(at_once.status == 200);
  CHECK(at_once.json()["changed"] == true);
  // The plain status is as before.
  CHECK(http.get("/v1/locks/orders").json().contains("last_token"));
}

TEST_CASE("http: a bad watch query is refused and a gone client's watch ends",
          "[service][redis][watch]") {
  ServiceUnderTest s;
  HttpClient http = s.client();
  for (const char* bad :
       {"/v1/locks/a?after_token=x", "/v1/locks/a?after_token=-1", "/v1/locks/a?wait_ms=10",
        "/v1/locks/a?after_token=1&wait_ms=", "/v1/locks/a?after_token=1&after_token=2",
        "/v1/locks/a?after=1", "/v1/locks/a?after_token=18446744073709551616",
        "/v1/locks/a?after_token=1&wait_ms=1.5"}) {
    INFO(bad);
    const HttpAnswer refused = http.get(bad);
    CHECK(refused.status == 400);
    CHECK(refused.error_code() == "invalid_request");
  }

  // A wait beyond --max-wait is cut to it, as long polls are (a free lock answers at once).
  CHECK(http.get("/v1/locks/a?after_token=1&wait_ms=99999999999").json()["changed"] == true);

  const json lease = http.post("/v1/locks/gone", {{"ttl_ms", 60000}}).json();
  const int fd = connect_loopback(s.port());
  REQUIRE(fd >= 0);
  const std::string request =
      "GET /v1/locks/gone?after_token=" + std::to_string(lease["token"].get<std::uint64_t>()) +
      "&wait_ms=50000 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
  REQUIRE(::send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size()));
  CHECK(watches_waiting_reach(s, 1));
  ::close(fd);
  CHECK(watches_waiting_reach(s, 0));  // cancelled, not left waiting 50 s
}

TEST_CASE("http: SIGTERM answers watches at once instead of holding the shutdown",
          "[service][redis][watch]") {
  ServiceUnderTest s({"--shutdown-grace", "60s"});
  const json lease = s.client().post("/v1/locks/busy", {{"ttl_ms", 60000}}).json();
  HttpAnswer watched;
  std::thread watcher([&] {
    watched = HttpClient(s.port(), 30s)
                  .get("/v1/locks/busy?after_token=" +
                       std::to_string(lease["token"].get<std::uint64_t>()) + "&wait_ms=30000");
  });
  REQUIRE(watches_waiting_reach(s, 1));
  const auto started = Clock::now();
  CHECK(s.daemon->stop(SIGTERM, 10s) == std::optional<int>(0));
  watcher.join();
  CHECK(Clock::now() - started < 3s);
  CHECK(watched.status == 503);
  CHECK(watched.error_code() == "unavailable");
}
