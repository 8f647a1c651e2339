// Read/write locks as users meet them: the real fencelockd, five real redis-servers, real HTTP
// over loopback — readers share, a writer excludes and gets a larger token, a waiting writer keeps
// new readers out, extend and release answer as a lock's do, bad bodies and forged leases change
// nothing.
#include <catch2/catch.hpp>
#include <future>
#include <string>

#include "http_client.h"
#include "service_under_test.h"

using namespace fencelock::testing;
using namespace std::chrono_literals;
using nlohmann::json;

TEST_CASE("http: read/write lock — readers share, a writer waits for them and excludes them",
          "[service][redis][rwlock]") {
  ServiceUnderTest s;
  HttpClient http = s.client();
  const HttpAnswer first = http.post("/v1/rwlocks/doc", {{"mode", "read"}, {"ttl_ms", 10000}});
  REQUIRE(first.status == 200);
  const json r1 = first.json();
  CHECK(r1["mode"] == "read");
  CHECK(r1["ttl_ms"] == 10000);
  CHECK(r1["waited_ms"] == 0);
  const std::string lease1 = r1["lease"];
  CHECK(lease1.ends_with(".r"));
  CHECK(lease1.starts_with(std::to_string(r1["token"].get<std::uint64_t>()) + "."));
  const json r2 =
      http.post("/v1/rwlocks/doc", {{"mode", "read"}, {"ttl_ms", 10000}, {"owner", "rep-2"}})
          .json();
  CHECK(r2["token"].get<std::uint64_t>() > r1["token"].get<std::uint64_t>());

  const HttpAnswer refused = http.post("/v1/rwlocks/doc", {{"mode", "write"}, {"ttl_ms", 1000}});
  CHECK(refused.status == 409);
  CHECK(refused.error_code() == "locked");

  const json status = http.get("/v1/rwlocks/doc").json();
  CHECK(status["mode"] == "read");
  REQUIRE(status["holders"].size() == 2);
  CHECK(status["holders"][1]["owner"] == "rep-2");
  CHECK(status["holders"][0]["owner"].is_null());
  CHECK(status["writer_waiting"] == false);
  CHECK(status.dump().find(lease1.substr(lease1.find('.') + 1, 48)) == std::string::npos);

  // A writer that waits: new readers are kept out until it had its turn.
  auto writer = std::async(std::launch::async, [&s] {
    HttpClient own = s.client();
    return own.post("/v1/rwlocks/doc", {{"mode", "write"}, {"ttl_ms", 10000}, {"wait_ms", 20000}});
  });
  std::this_thread::sleep_for(300ms);
  CHECK(http.get("/v1/rwlocks/doc").json()["writer_waiting"] == true);
  CHECK(http.post("/v1/rwlocks/doc", {{"mode", "read"}, {"ttl_ms", 1000}}).error_code() ==
        "locked");
  const json extended =
      http.post("/v1/rwlocks/doc/extend", {{"lease", lease1}, {"ttl_ms", 20000}}).json();
  CHECK(extended["token"] == r1["token"]);
  CHECK(extended["lease"] == lease1);
  CHECK(http.del("/v1/rwlocks/doc", {{"lease", lease1}}).json()["released"] == true);
  CHECK(http.del("/v1/rwlocks/doc", {{"lease", r2["lease"]}}).json()["released"] == true);
  REQUIRE(writer.wait_for(5s) == std::future_status::ready);
  const HttpAnswer granted = writer.get();
  REQUIRE(granted.status == 200);
  const json w = granted.json();
  CHECK(w["mode"] == "write");
  CHECK(w["token"].get<std::uint64_t>() > r2["token"].get<std::uint64_t>());
  CHECK(http.get("/v1/rwlocks/doc").json()["mode"] == "write");
  CHECK(http.post("/v1/rwlocks/doc", {{"mode", "read"}, {"ttl_ms", 1000}}).error_code() ==
        "locked");
  CHECK(http.del("/v1/rwlocks/doc", {{"lease", w["lease"]}}).json()["released"] == true);
  CHECK(http.del("/v1/rwlocks/doc", {{"lease", w["lease"]}}).json()["released"] == false);
  const json free = http.get("/v1/rwlocks/doc").json();
  CHECK(free["mode"].is_null());
  CHECK(free["holders"].empty());
}

TEST_CASE("http: read/write lock — bad bodies and altered leases are refused, nothing changes",
          "[service][redis][rwlock]") {
  ServiceUnderTest s;
  HttpClient http = s.client();
  CHECK(http.post("/v1/rwlocks/x", {{"ttl_ms", 1000}}).error_code() == "invalid_request");
  CHECK(http.post("/v1/rwlocks/x", {{"mode", "shared"}, {"ttl_ms", 1000}}).error_code() ==
        "invalid_request");
  CHECK(http.post("/v1/rwlocks/x", {{"mode", "read"}, {"ttl_ms", 1000}, {"request_id", "a"}})
            .error_code() == "invalid_request");
  CHECK(http.post("/v1/rwlocks/x", {{"mode", "read"}, {"ttl_ms", 1}}).error_code() ==
        "invalid_request");
  CHECK(http.post("/v1/rwlocks/x", {{"mode", "read"}, {"tll_ms", 1000}}).status == 400);
  CHECK(http.post("/v1/rwlocks/bad%20name", {{"mode", "read"}, {"ttl_ms", 1000}}).status == 400);

  const json read = http.post("/v1/rwlocks/x", {{"mode", "read"}, {"ttl_ms", 10000}}).json();
  const std::string lease = read["lease"];
  // The same proof as a write grant's, as the lock's of the same name, with another token.
  std::string as_write = lease;
  as_write.back() = 'w';
  const HttpAnswer altered = http.del("/v1/rwlocks/x", {{"lease", as_write}});
  CHECK(altered.error_code() == "invalid_request");
  CHECK(altered.body.find("mode") != std::string::npos);  // says what may have been altered
  const std::string as_lock = lease.substr(0, lease.size() - 2);
  CHECK(http.del("/v1/rwlocks/x", {{"lease", as_lock}}).error_code() == "invalid_request");
  CHECK(http.del("/v1/locks/x", {{"lease", as_lock}}).json()["released"] == false);
  const std::string other_token =
      std::to_string(read["token"].get<std::uint64_t>() + 1) + lease.substr(lease.find('.'));
  CHECK(
      http.post("/v1/rwlocks/x/extend", {{"lease", other_token}, {"ttl_ms", 1000}}).error_code() ==
      "invalid_request");
  CHECK(http.get("/v1/rwlocks/x").json()["holders"].size() == 1);
  CHECK(http.del("/v1/rwlocks/x", {{"lease", lease}}).json()["released"] == true);
}
