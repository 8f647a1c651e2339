// GET /v1/semaphores and GET /v1/rwlocks against the real fencelockd and five real redis-servers:
// every name with something held under the prefix, at least once, each entry as its status route
// answers it, in pages of any limit; bad queries are 400; with a lock node down every name is still
// listed.
#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <string>

#include "http_client.h"
#include "service_under_test.h"

using namespace fencelock::testing;
using nlohmann::json;

namespace {

// Every entry of a listing (`field` of each page), by name as first listed, following `next` (a
// name may come twice: at least once is the promise).
std::map<std::string, json> list_all(HttpClient& http, const std::string& path,
                                     const std::string& field, const std::string& query) {
  std::map<std::string, json> seen;
  std::string target = path + "?" + query;
  for (int page = 0; page < 200; ++page) {
    const HttpAnswer answer = http.get(target);
    REQUIRE(answer.status == 200);
    const json body = answer.json();
    for (const json& entry : body[field]) {
      seen.emplace(entry["name"].get<std::string>(), entry);
    }
    if (body["next"].is_null()) return seen;
    target = path + "?" + query + "&cursor=" + body["next"].get<std::string>();
  }
  FAIL("the listing never ended");
  return seen;
}

// A read/write lock's entry without its holders' remaining_ms (which moves between two reads).
json without_remaining(json entry) {
  for (json& holder : entry["holders"]) holder.erase("remaining_ms");
  return entry;
}

}  // namespace

TEST_CASE("http: a semaphore listing names each semaphore with a permit held, as its status does",
          "[service][redis][list]") {
  ServiceUnderTest s;
  HttpClient http = s.client();
  const std::map<std::string, std::pair<int, int>> held = {
      {"pool.a", {3, 2}}, {"pool.b", {1, 1}}, {"pool.c", {4, 3}}, {"pool.d", {2, 1}}};
  for (const auto& [name, counts] : held) {
    for (int i = 0; i < counts.second; ++i) {
      REQUIRE(http.post("/v1/semaphores/" + name, {{"permits", counts.first}, {"ttl_ms", 30000}})
                  .status == 200);
    }
  }
  REQUIRE(http.post("/v1/semaphores/other", {{"permits", 2}, {"ttl_ms", 30000}}).status == 200);
  REQUIRE(http.post("/v1/locks/pool.lock", {{"ttl_ms", 30000}}).status == 200);
  const json gone =
      http.post("/v1/semaphores/pool.gone", {{"permits", 2}, {"ttl_ms", 30000}}).json();
  REQUIRE(http.request("DELETE", "/v1/semaphores/pool.gone", json{{"lease", gone["lease"]}}.dump())
              .status == 200);

  auto check_all = [&](const std::map<std::string, json>& listed) {
    REQUIRE(listed.size() == held.size());
    for (const auto& [name, counts] : held) {
      INFO(name);
      REQUIRE(listed.count(name) == 1);
      CHECK(listed.at(name) == http.get("/v1/semaphores/" + name).json());
      CHECK(listed.at(name)["permits"] == counts.first);
      CHECK(listed.at(name)["held"] == counts.second);
    }
  };
  check_all(list_all(http, "/v1/semaphores", "semaphores", "prefix=pool.&limit=1"));
  check_all(list_all(http, "/v1/semaphores", "semaphores", "prefix=pool.&limit=1000"));
  CHECK(list_all(http, "/v1/semaphores", "semaphores", "limit=100").size() == held.size() + 1);

  SECTION("with a lock node down every semaphore is still listed") {
    s.cluster.node(0).kill();
    check_all(list_all(http, "/v1/semaphores", "semaphores", "prefix=pool.&limit=2"));
  }
}

TEST_CASE("http: a read/write lock listing names each read/write lock held, readers and writers",
          "[service][redis][list]") {
  ServiceUnderTest s;
  HttpClient http = s.client();
  for (const char* owner : {"rep-1", "rep-2"}) {
    REQUIRE(http.post("/v1/rwlocks/doc.a", {{"mode", "read"}, {"ttl_ms", 30000}, {"owner", owner}})
                .status == 200);
  }
  const json writer =
      http.post("/v1/rwlocks/doc.b", {{"mode", "write"}, {"ttl_ms", 30000}, {"owner", "editor"}})
          .json();
  REQUIRE(writer.contains("lease"));
  for (int i = 0; i < 3; ++i) {
    REQUIRE(
        http.post("/v1/rwlocks/doc.n" + std::to_string(i), {{"mode", "read"}, {"ttl_ms", 30000}})
            .status == 200);
  }
  REQUIRE(http.post("/v1/locks/doc.lock", {{"ttl_ms", 30000}}).status == 200);

  auto check_all = [&](const std::map<std::string, json>& listed) {
    REQUIRE(listed.size() == 5);
    REQUIRE(listed.count("doc.a") == 1);
    const json& a = listed.at("doc.a");
    CHECK(a["mode"] == "read");
    REQUIRE(a["holders"].size() == 2);
    CHECK(a["holders"][0]["owner"] == "rep-1");
    CHECK(a["holders"][1]["owner"] == "rep-2");
    CHECK(a["writer_waiting"] == false);
    REQUIRE(listed.count("doc.b") == 1);
    const json& b = listed.at("doc.b");
    CHECK(b["mode"] == "write");
    REQUIRE(b["holders"].size() == 1);
    CHECK(b["holders"][0]["token"] == writer["token"]);
    CHECK(b["holders"][0]["owner"] == "editor");
    CHECK(b["holders"][0]["remaining_ms"].get<long>() > 20000);
    for (const char* name : {"doc.n0", "doc.n1", "doc.n2"}) CHECK(listed.count(name) == 1);
  };
  check_all(list_all(http, "/v1/rwlocks", "rwlocks", "prefix=doc.&limit=1"));
  CHECK(without_remaining(list_all(http, "/v1/rwlocks", "rwlocks", "prefix=doc.a").at("doc.a")) ==
        without_remaining(http.get("/v1/rwlocks/doc.a").json()));
  CHECK(list_all(http, "/v1/rwlocks", "rwlocks", "prefix=none").empty());

  SECTION("with a lock node down every read/write lock is still listed") {
    s.cluster.node(0).kill();
    check_all(list_all(http, "/v1/rwlocks", "rwlocks", "prefix=doc.&limit=2"));
  }
  SECTION("bad queries are refused") {
    for (const char* path : {"/v1/rwlocks", "/v1/semaphores"}) {
      for (const char* query : {"?limit=0", "?limit=1001", "?limt=5", "?prefix=a&prefix=b",
                                "?cursor=banana", "?prefix=a%2", "?prefix=a/b",
                                // passed over: more nodes than a listing goes on without, or
                                // nodes at or after the cursor's (a listing never passes those)
                                "?cursor=0-0-7", "?cursor=1-0-b", "?cursor=2-0-4"}) {
        INFO(path << query);
        const HttpAnswer refused = http.get(std::string(path) + query);
        CHECK(refused.status == 400);
        CHECK(refused.error_code() == "invalid_request");
      }
    }
  }
}
