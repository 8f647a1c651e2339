// Lock sets and counting semaphores as users meet them: the real fencelockd, five real
// redis-servers, real HTTP over loopback. They need the engine's set and permit operations
// (branch engine19); the handler behaviour alone is api_lock_sets_test.cpp.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <csignal>
#include <mutex>
#include <optional>
#include <thread>

#include "http_client.h"
#include "loopback.h"
#include "service_under_test.h"

using namespace fencelock::testing;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {
using Service = ServiceUnderTest;
}  // namespace

TEST_CASE("http: a lock set is granted all at once with a rising token per name",
          "[service][redis]") {
  Service s;
  HttpClient http = s.client();
  const json single = http.post("/v1/locks/a", {{"ttl_ms", 10000}}).json();
  REQUIRE(single.contains("token"));
  REQUIRE(http.del("/v1/locks/a", {{"lease", single["lease"]}}).json()["released"] == true);

  const HttpAnswer granted = http.post(
      "/v1/locks", {{"names", json::array({"b", "a"})}, {"ttl_ms", 10000}, {"owner", "w-1"}});
  REQUIRE(granted.status == 200);
  const json set = granted.json();
  CHECK(set["names"] == json::array({"a", "b"}));
  CHECK(set["tokens"]["a"].get<std::uint64_t>() > single["token"].get<std::uint64_t>());
  CHECK(set["tokens"]["b"].get<std::uint64_t>() >= 1);
  CHECK(set["ttl_ms"] == 10000);
  CHECK(set["validity_ms"].get<long>() >= 9000);
  CHECK(set["validity_ms"].get<long>() <= 10000);
  const std::string lease = set["lease"];
  CHECK(lease.starts_with(std::to_string(set["tokens"]["a"].get<std::uint64_t>()) + "," +
                          std::to_string(set["tokens"]["b"].get<std::uint64_t>()) + "."));

  // A single lock of one of its names, and a set overlapping it, are refused.
  CHECK(http.post("/v1/locks/b", {{"ttl_ms", 1000}}).error_code() == "locked");
  const HttpAnswer overlapping =
      http.post("/v1/locks", {{"names", json::array({"c", "b"})}, {"ttl_ms", 1000}});
  CHECK(overlapping.status == 409);
  CHECK(overlapping.error_code() == "locked");
  CHECK(overlapping.json()["error"]["retry_after_ms"].get<long>() > 9000);
  CHECK(http.get("/v1/locks/c").json()["held"] == false);  // never a partial set

  const HttpAnswer extended =
      http.post("/v1/locks:extend",
                {{"names", json::array({"b", "a"})}, {"lease", lease}, {"ttl_ms", 20000}});
  REQUIRE(extended.status == 200);
  CHECK(extended.json()["tokens"] == set["tokens"]);
  CHECK(extended.json()["lease"] == lease);
  CHECK(extended.json()["ttl_ms"] == 20000);
  CHECK(http.get("/v1/locks/a").json()["remaining_ms"].get<long>() > 19000);

  const HttpAnswer released =
      http.del("/v1/locks", {{"names", json::array({"b", "a"})}, {"lease", lease}});
  REQUIRE(released.status == 200);
  CHECK(released.json() == json{{"names", json::array({"a", "b"})}, {"released", true}});
  CHECK(http.del("/v1/locks", {{"names", json::array({"a", "b"})}, {"lease", lease}})
            .json()["released"] == false);
  CHECK(http.get("/v1/locks/a").json()["held"] == false);
  CHECK(http.get("/v1/locks/b").json()["held"] == false);
  CHECK(http.post("/v1/locks:extend",
                  {{"names", json::array({"a", "b"})}, {"lease", lease}, {"ttl_ms", 1000}})
            .error_code() == "not_held");

  REQUIRE(s.daemon->stop(SIGTERM) == std::optional<int>(0));  // the whole log, written
  const std::string log = s.daemon->log();
  CHECK(log.find(lease.substr(lease.find('.') + 1)) == std::string::npos);
  CHECK(log.find("route=acquire_set") != std::string::npos);
}

TEST_CASE("http: a lock set's bad names are refused before any node is asked", "[service][redis]") {
  Service s;
  HttpClient http = s.client();
  for (const json& names :
       {json::array(), json::array({"a", "a"}), json::array({"a", "b c"}), json("a")}) {
    INFO(names.dump());
    const HttpAnswer answer = http.post("/v1/locks", {{"names", names}, {"ttl_ms", 1000}});
    CHECK(answer.status == 400);
    CHECK(answer.error_code() == "invalid_request");
  }
  CHECK(http.get("/v1/locks/a").json()["held"] == false);
  CHECK(http.request("PUT", "/v1/locks").header("allow") == "GET, POST, DELETE");
}

TEST_CASE("http: a waiting lock set is served when the last of its names is released",
          "[service][redis]") {
  Service s;
  HttpClient http = s.client();
  const json holder = http.post("/v1/locks/q2", {{"ttl_ms", 30000}}).json();
  REQUIRE(holder.contains("lease"));
  std::atomic<unsigned> status{0};
  std::thread waiter([&] {
    HttpClient other = s.client();
    status = other
                 .post("/v1/locks",
                       {{"names", json::array({"q1", "q2"})}, {"ttl_ms", 5000}, {"wait_ms", 10000}})
                 .status;
  });
  std::this_thread::sleep_for(300ms);
  CHECK(status == 0);
  REQUIRE(http.del("/v1/locks/q2", {{"lease", holder["lease"]}}).json()["released"] == true);
  waiter.join();
  CHECK(status == 200);
  CHECK(http.get("/v1/locks/q1").json()["held"] == true);
}

TEST_CASE("http: a waiting lock set whose client went away is cancelled, never granted",
          "[service][redis]") {
  Service s;
  HttpClient http = s.client();
  const json holder = http.post("/v1/locks/g2", {{"ttl_ms", 60000}}).json();
  REQUIRE(holder.contains("lease"));

  const int fd = connect_loopback(s.port());
  REQUIRE(fd >= 0);
  const std::string body = R"({"names": ["g1", "g2"], "ttl_ms": 30000, "wait_ms": 10000})";
  const std::string request =
      "POST /v1/locks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  REQUIRE(::send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size()));
  std::this_thread::sleep_for(500ms);
  ::close(fd);
  std::this_thread::sleep_for(200ms);

  REQUIRE(http.del("/v1/locks/g2", {{"lease", holder["lease"]}}).json()["released"] == true);
  std::this_thread::sleep_for(300ms);
  CHECK(http.get("/v1/locks/g1").json()["held"] == false);
  CHECK(http.get("/v1/locks/g2").json()["held"] == false);
  CHECK_THAT(s.daemon->log(), Catch::Contains("route=acquire_set"));
  CHECK_THAT(s.daemon->log(), Catch::Contains("status=499"));
}

TEST_CASE("http: a semaphore grants its permits per slot, refuses the next and another count",
          "[service][redis]") {
  Service s;
  HttpClient http = s.client();
  std::vector<json> permits;
  std::uint64_t last_token = 0;
  for (int i = 0; i < 3; ++i) {
    const HttpAnswer answer =
        http.post("/v1/semaphores/pool", {{"permits", 3}, {"ttl_ms", 10000}, {"owner", "w"}});
    REQUIRE(answer.status == 200);
    const json permit = answer.json();
    CHECK(permit["name"] == "pool");
    CHECK(permit["permits"] == 3);
    CHECK(permit["token"].get<std::uint64_t>() > last_token);
    last_token = permit["token"].get<std::uint64_t>();
    CHECK(permit["validity_ms"].get<long>() >= 9000);
    const std::string lease = permit["lease"];
    CHECK(lease.ends_with(".3." + std::to_string(permit["slot"].get<unsigned>())));
    permits.push_back(permit);
  }
  std::vector<unsigned> slots;
  for (const json& p : permits) slots.push_back(p["slot"].get<unsigned>());
  std::sort(slots.begin(), slots.end());
  CHECK(slots == std::vector<unsigned>{0, 1, 2});

  const HttpAnswer full = http.post("/v1/semaphores/pool", {{"permits", 3}, {"ttl_ms", 1000}});
  CHECK(full.status == 409);
  CHECK(full.error_code() == "locked");
  const HttpAnswer mismatch = http.post("/v1/semaphores/pool", {{"permits", 5}, {"ttl_ms", 1000}});
  CHECK(mismatch.status == 409);
  CHECK(mismatch.error_code() == "permits_mismatch");
  CHECK(mismatch.json()["error"]["permits"] == 3);
  CHECK(http.get("/v1/semaphores/pool").json() ==
        json{{"name", "pool"}, {"permits", 3}, {"held", 3}});

  const HttpAnswer extended =
      http.post("/v1/semaphores/pool/extend", {{"lease", permits[1]["lease"]}, {"ttl_ms", 20000}});
  REQUIRE(extended.status == 200);
  CHECK(extended.json()["token"] == permits[1]["token"]);
  CHECK(extended.json()["slot"] == permits[1]["slot"]);
  CHECK(extended.json()["lease"] == permits[1]["lease"]);

  const HttpAnswer released = http.del("/v1/semaphores/pool", {{"lease", permits[1]["lease"]}});
  CHECK(released.json() == json{{"name", "pool"}, {"released", true}});
  CHECK(http.del("/v1/semaphores/pool", {{"lease", permits[1]["lease"]}}).json()["released"] ==
        false);
  CHECK(http.get("/v1/semaphores/pool").json()["held"] == 2);
  const json again = http.post("/v1/semaphores/pool", {{"permits", 3}, {"ttl_ms", 1000}}).json();
  CHECK(again["slot"] == permits[1]["slot"]);
  CHECK(again["token"].get<std::uint64_t>() > last_token);

  CHECK(http.get("/v1/semaphores/none").json() ==
        json{{"name", "none"}, {"permits", 0}, {"held", 0}});
  REQUIRE(s.daemon->stop(SIGTERM) == std::optional<int>(0));  // the whole log, written
  CHECK(s.daemon->log().find(permits[0]["lease"].get<std::string>().substr(
            permits[0]["lease"].get<std::string>().find('.') + 1, 48)) == std::string::npos);
}

TEST_CASE("http: 8 clients on a semaphore of 2 never hold more than 2 valid permits at once",
          "[service][redis]") {
  Service s;
  struct Grant {
    std::chrono::steady_clock::time_point from, to;
  };
  std::mutex mutex;
  std::vector<Grant> grants;
  std::atomic<int> errors{0};
  const auto end = std::chrono::steady_clock::now() + 2s;
  std::vector<std::thread> clients;
  for (int c = 0; c < 8; ++c) {
    clients.emplace_back([&] {
      HttpClient http = s.client();
      while (std::chrono::steady_clock::now() < end) {
        const auto sent = std::chrono::steady_clock::now();
        const HttpAnswer answer =
            http.post("/v1/semaphores/two", {{"permits", 2}, {"ttl_ms", 500}});
        if (answer.status == 409) continue;
        if (answer.status != 200) {
          ++errors;
          continue;
        }
        const json permit = answer.json();
        const auto granted = std::chrono::steady_clock::now();
        const auto valid_until =
            sent + std::chrono::milliseconds(permit["validity_ms"].get<long>());
        std::this_thread::sleep_for(2ms);
        const auto released_at = std::chrono::steady_clock::now();
        http.del("/v1/semaphores/two", {{"lease", permit["lease"]}});
        std::lock_guard<std::mutex> lock(mutex);
        grants.push_back({granted, std::min(valid_until, released_at)});
      }
    });
  }
  for (auto& c : clients) c.join();
  CHECK(errors == 0);
  REQUIRE(grants.size() > 10);
  // At every grant's start, count the windows open then (its own included).
  for (const Grant& g : grants) {
    const auto open = std::count_if(grants.begin(), grants.end(), [&](const Grant& other) {
      return other.from <= g.from && g.from < other.to;
    });
    CHECK(open <= 2);
  }
}
