// Lock sets and counting semaphores through ApiHandlers::dispatch, with the in-memory engine (no
// Redis, no HTTP): the bodies docs/api.md shows, validation, rights on every name, the key's caps,
// and the mapping of engine outcomes. http_lock_sets_test.cpp covers them end to end.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <optional>

#include "api/api_handlers.h"
#include "auth/api_secret.h"
#include "in_memory_engine.h"

using namespace fencelock::service;
using namespace fencelock::testing;
using nlohmann::json;

namespace {

struct Api {
  std::shared_ptr<InMemoryTokens> tokens = std::make_shared<InMemoryTokens>();
  InMemoryEngine engine{tokens};
  Authorizer authorizer;  // open unless a test gives it keys
  ApiHandlers handlers{engine, tokens, [] { return std::string("# metrics\n"); }, &authorizer};

  ApiResponse call(Method method, const std::string& target, const std::string& body = {},
                   const std::string& authorization = {}) {
    std::optional<ApiResponse> answer;
    handlers.dispatch(method, target, body, authorization,
                      [&](ApiResponse response) { answer = std::move(response); });
    engine.run_pending();
    REQUIRE(answer.has_value());
    return std::move(*answer);
  }
};

json body_of(const ApiResponse& response) {
  return json::parse(response.body);
}

std::string code_of(const ApiResponse& response) {
  const json body = json::parse(response.body, nullptr, false);
  return body.is_discarded() ? std::string() : body["error"]["code"].get<std::string>();
}

// One key "k" with secret "s-k" that may lock `patterns`, with the given caps.
KeySet one_key(const std::vector<std::string>& patterns, std::optional<std::size_t> max_locks) {
  json key{{"id", "k"},
           {"secret_sha256", sha256_hex("s-k")},
           {"names", patterns},
           {"rights", json::array({"lock", "read"})}};
  if (max_locks) key["max_locks"] = *max_locks;
  auto keys = KeySet::parse(json{{"keys", json::array({key})}}.dump());
  REQUIRE(keys.ok());
  return std::move(keys).value();
}

}  // namespace

TEST_CASE("lock sets: a set is granted sorted, with a token per name, and extends and releases",
          "[service]") {
  Api api;
  // "a" was locked once alone: the set's token for "a" comes from the same counter.
  const json single = body_of(api.call(Method::kPost, "/v1/locks/a", R"({"ttl_ms": 1000})"));
  REQUIRE(
      api.call(Method::kDelete, "/v1/locks/a", json{{"lease", single["lease"]}}.dump()).status ==
      200);

  const ApiResponse granted = api.call(Method::kPost, "/v1/locks",
                                       R"({"names": ["b", "a"], "ttl_ms": 30000, "owner": "w"})");
  REQUIRE(granted.status == 200);
  const json set = body_of(granted);
  CHECK(set["names"] == json::array({"a", "b"}));
  CHECK(set["tokens"] == json{{"a", 2}, {"b", 1}});
  CHECK(set["ttl_ms"] == 30000);
  CHECK(set["validity_ms"] == 29999);
  CHECK(set["waited_ms"] == 0);
  const std::string lease = set["lease"];
  CHECK(lease.starts_with("2,1."));
  CHECK(granted.log.owner == "w");

  SECTION("a set and a single lock of one name exclude each other") {
    const ApiResponse refused = api.call(Method::kPost, "/v1/locks/b", R"({"ttl_ms": 1000})");
    CHECK(code_of(refused) == "locked");
    const ApiResponse overlapping =
        api.call(Method::kPost, "/v1/locks", R"({"names": ["c", "b"], "ttl_ms": 1000})");
    CHECK(overlapping.status == 409);
    CHECK(code_of(overlapping) == "locked");
    CHECK(body_of(overlapping)["error"]["retry_after_ms"] == 5000);
    CHECK(api.call(Method::kGet, "/v1/locks/c").body.find("\"held\":false") != std::string::npos);
  }
  SECTION("extend and release take the names in any order") {
    const ApiResponse extended = api.call(
        Method::kPost, "/v1/locks:extend",
        json{{"names", json::array({"b", "a"})}, {"lease", lease}, {"ttl_ms", 20000}}.dump());
    REQUIRE(extended.status == 200);
    CHECK(body_of(extended) == json{{"names", json::array({"a", "b"})},
                                    {"lease", lease},
                                    {"tokens", {{"a", 2}, {"b", 1}}},
                                    {"ttl_ms", 20000},
                                    {"validity_ms", 19999}});
    const std::string release = json{{"names", json::array({"b", "a"})}, {"lease", lease}}.dump();
    CHECK(body_of(api.call(Method::kDelete, "/v1/locks", release)) ==
          json{{"names", json::array({"a", "b"})}, {"released", true}});
    CHECK(body_of(api.call(Method::kDelete, "/v1/locks", release))["released"] == false);
    CHECK(api.engine.held() == 0);
  }
  SECTION("a lease whose token count is not the names' count is malformed") {
    const ApiResponse wrong =
        api.call(Method::kDelete, "/v1/locks",
                 json{{"names", json::array({"a", "b", "c"})}, {"lease", lease}}.dump());
    CHECK(wrong.status == 400);
    CHECK(code_of(wrong) == "invalid_request");
  }
  SECTION("a lease whose tokens were swapped is refused, and one that lost the set is not held") {
    const std::string swapped = "1,2" + lease.substr(lease.find('.'));
    CHECK(code_of(api.call(
              Method::kPost, "/v1/locks:extend",
              json{{"names", json::array({"a", "b"})}, {"lease", swapped}, {"ttl_ms", 1000}}
                  .dump())) == "invalid_request");
    const std::string other = "2,1." + std::string(48, 'b');
    const ApiResponse lost = api.call(
        Method::kPost, "/v1/locks:extend",
        json{{"names", json::array({"a", "b"})}, {"lease", other}, {"ttl_ms", 1000}}.dump());
    CHECK(lost.status == 409);
    CHECK(code_of(lost) == "not_held");
  }
}

TEST_CASE("lock sets: a bad names array is refused naming the problem, before any engine call",
          "[service]") {
  Api api;
  std::vector<std::string> seventeen;
  for (int i = 0; i < 17; ++i) seventeen.push_back("n" + std::to_string(i));
  const auto [method, target, body, words] =
      GENERATE_COPY(table<Method, std::string, std::string, std::string>({
          {Method::kPost, "/v1/locks", R"({"ttl_ms": 1000})", "names is required"},
          {Method::kPost, "/v1/locks", R"({"names": [], "ttl_ms": 1000})", "at least one"},
          {Method::kPost, "/v1/locks", R"({"names": "a", "ttl_ms": 1000})", "must be an array"},
          {Method::kPost, "/v1/locks", R"({"names": ["a", 1], "ttl_ms": 1000})", "only strings"},
          {Method::kPost, "/v1/locks", R"({"names": ["a", "a"], "ttl_ms": 1000})", "'a' twice"},
          {Method::kPost, "/v1/locks", R"({"names": ["a", "b c"], "ttl_ms": 1000})", "200"},
          {Method::kPost, "/v1/locks", json{{"names", seventeen}, {"ttl_ms", 1000}}.dump(),
           "at most 16"},
          {Method::kPost, "/v1/locks", R"({"names": ["a"]})", "ttl_ms is required"},
          {Method::kPost, "/v1/locks", R"({"names": ["a"], "ttl_ms": 1.0})", "ttl_ms"},
          {Method::kPost, "/v1/locks", R"([])", "JSON object"},
          {Method::kPost, "/v1/locks:extend", R"({"names": ["a"], "ttl_ms": 1000})", "lease"},
          {Method::kPost, "/v1/locks:extend", R"({"names": ["a"], "lease": "x", "ttl_ms": 1000})",
           "lease"},
          {Method::kDelete, "/v1/locks", R"({"names": ["a", "a"], "lease": "1,2.x"})", "twice"},
          {Method::kDelete, "/v1/locks", R"({"lease": "1.x"})", "names is required"},
      }));
  INFO(target << " " << body);
  const ApiResponse answer = api.call(method, target, body);
  CHECK(answer.status == 400);
  CHECK(code_of(answer) == "invalid_request");
  CHECK_THAT(body_of(answer)["error"]["message"].get<std::string>(),
             Catch::Matchers::Contains(words));
  CHECK(api.engine.calls() == 0);
}

TEST_CASE("lock sets and semaphores: their paths answer 405 with the methods they have",
          "[service]") {
  Api api;
  CHECK(api.call(Method::kOther, "/v1/locks").allow == "GET, POST, DELETE");
  CHECK(api.call(Method::kDelete, "/v1/locks:extend").allow == "POST");
  CHECK(api.call(Method::kOther, "/v1/semaphores/s").allow == "GET, POST, DELETE");
  CHECK(api.call(Method::kGet, "/v1/semaphores/s/extend").allow == "POST");
  CHECK(api.call(Method::kGet, "/v1/semaphores/..").status == 400);
  CHECK(api.engine.calls() == 0);
}

TEST_CASE("lock sets: a key needs the lock right on every name, and a set counts per name",
          "[service]") {
  Api api;
  SECTION("a name outside the key's patterns refuses the whole set, touching no node") {
    api.authorizer.replace(one_key({"billing.*"}, std::nullopt));
    const ApiResponse refused =
        api.call(Method::kPost, "/v1/locks",
                 R"({"names": ["billing.a", "orders.b"], "ttl_ms": 1000})", "Bearer s-k");
    CHECK(refused.status == 403);
    CHECK_THAT(body_of(refused)["error"]["message"].get<std::string>(),
               Catch::Matchers::Contains("orders.b"));
    CHECK(api.engine.calls() == 0);
    CHECK(api.call(Method::kPost, "/v1/locks", R"({"names": ["billing.a"], "ttl_ms": 1000})")
              .status == 401);
    CHECK(api.call(Method::kPost, "/v1/locks",
                   R"({"names": ["billing.a", "billing.b"], "ttl_ms": 1000})", "Bearer s-k")
              .status == 200);
  }
  SECTION("max_locks counts one lock per name of a set, a permit as one") {
    api.authorizer.replace(one_key({"*"}, 3));
    const ApiResponse over =
        api.call(Method::kPost, "/v1/locks", R"({"names": ["a", "b", "c", "d"], "ttl_ms": 1000})",
                 "Bearer s-k");
    CHECK(over.status == 429);
    CHECK(code_of(over) == "quota_exceeded");
    const ApiResponse set = api.call(Method::kPost, "/v1/locks",
                                     R"({"names": ["a", "b"], "ttl_ms": 1000})", "Bearer s-k");
    REQUIRE(set.status == 200);
    CHECK(api.call(Method::kPost, "/v1/semaphores/s", R"({"permits": 2, "ttl_ms": 1000})",
                   "Bearer s-k")
              .status == 200);
    CHECK(code_of(api.call(Method::kPost, "/v1/locks/x", R"({"ttl_ms": 1000})", "Bearer s-k")) ==
          "quota_exceeded");
    const json release{{"names", json::array({"a", "b"})}, {"lease", body_of(set)["lease"]}};
    CHECK(api.call(Method::kDelete, "/v1/locks", release.dump(), "Bearer s-k").status == 200);
    CHECK(api.call(Method::kPost, "/v1/locks", R"({"names": ["x", "y"], "ttl_ms": 1000})",
                   "Bearer s-k")
              .status == 200);
  }
}

TEST_CASE("lock sets and permits: a waiting acquire can be cancelled, a granted one undone",
          "[service]") {
  Api api;
  auto dispatch = [&](const std::string& target, const std::string& body) {
    return api.handlers.dispatch(Method::kPost, target, body, "", [](ApiResponse) {});
  };
  CHECK_FALSE(dispatch("/v1/locks", R"({"names": ["a"], "ttl_ms": 1000})").cancel);
  CHECK(dispatch("/v1/locks", R"({"names": ["b"], "ttl_ms": 1000, "wait_ms": 5000})").cancel);
  CHECK_FALSE(dispatch("/v1/semaphores/s", R"({"permits": 1, "ttl_ms": 1000})").cancel);
  CHECK(dispatch("/v1/semaphores/t", R"({"permits": 1, "ttl_ms": 1000, "wait_ms": 9})").cancel);
  CHECK(api.handlers.waiting_acquires() == 2);
  api.engine.run_pending();
  CHECK(api.handlers.waiting_acquires() == 0);

  std::optional<ApiResponse> answer;
  api.handlers.dispatch(Method::kPost, "/v1/locks", R"({"names": ["c", "d"], "ttl_ms": 1000})", "",
                        [&](ApiResponse response) { answer = std::move(response); });
  api.engine.run_pending();
  REQUIRE(answer);
  const std::size_t held = api.engine.held();
  REQUIRE(answer->undelivered);
  answer->undelivered();  // the client went away before the grant reached it
  api.engine.run_pending();
  CHECK(api.engine.held() == held - 2);
}

TEST_CASE("semaphores: permits are granted per slot up to the count, then refused", "[service]") {
  Api api;
  const std::string acquire = R"({"permits": 2, "ttl_ms": 30000})";
  const ApiResponse first = api.call(Method::kPost, "/v1/semaphores/pool", acquire);
  REQUIRE(first.status == 200);
  const json permit = body_of(first);
  CHECK(permit["name"] == "pool");
  CHECK(permit["permits"] == 2);
  CHECK(permit["slot"] == 0);
  CHECK(permit["token"] == 1);
  CHECK(permit["ttl_ms"] == 30000);
  CHECK(permit["validity_ms"] == 29999);
  CHECK(permit["waited_ms"] == 0);
  const std::string lease = permit["lease"];
  CHECK(lease.ends_with(".2.0"));
  CHECK(first.log.token == std::optional<std::uint64_t>(1));

  const json second = body_of(api.call(Method::kPost, "/v1/semaphores/pool", acquire));
  CHECK(second["slot"] == 1);
  CHECK(second["token"] == 2);
  const ApiResponse full = api.call(Method::kPost, "/v1/semaphores/pool", acquire);
  CHECK(full.status == 409);
  CHECK(code_of(full) == "locked");
  CHECK(body_of(api.call(Method::kGet, "/v1/semaphores/pool")) ==
        json{{"name", "pool"}, {"permits", 2}, {"held", 2}});

  SECTION("another permit count for the live semaphore is refused with the live count") {
    const ApiResponse mismatch =
        api.call(Method::kPost, "/v1/semaphores/pool", R"({"permits": 5, "ttl_ms": 1000})");
    CHECK(mismatch.status == 409);
    CHECK(code_of(mismatch) == "permits_mismatch");
    CHECK(body_of(mismatch)["error"]["permits"] == 2);
    CHECK(mismatch.log.error == "permits_mismatch");
  }
  SECTION("extend keeps the lease, release frees the slot") {
    const ApiResponse extended = api.call(Method::kPost, "/v1/semaphores/pool/extend",
                                          json{{"lease", lease}, {"ttl_ms", 5000}}.dump());
    REQUIRE(extended.status == 200);
    CHECK(body_of(extended) == json{{"name", "pool"},
                                    {"permits", 2},
                                    {"slot", 0},
                                    {"lease", lease},
                                    {"token", 1},
                                    {"ttl_ms", 5000},
                                    {"validity_ms", 4999}});
    const std::string release = json{{"lease", lease}}.dump();
    CHECK(body_of(api.call(Method::kDelete, "/v1/semaphores/pool", release)) ==
          json{{"name", "pool"}, {"released", true}});
    CHECK(body_of(api.call(Method::kDelete, "/v1/semaphores/pool", release))["released"] == false);
    const json again = body_of(api.call(Method::kPost, "/v1/semaphores/pool", acquire));
    CHECK(again["slot"] == 0);
    CHECK(again["token"] == 3);
  }
  SECTION("a lease naming another slot is not held; a forged token is refused") {
    const std::string moved = lease.substr(0, lease.size() - 1) + "1";
    CHECK(code_of(api.call(Method::kPost, "/v1/semaphores/pool/extend",
                           json{{"lease", moved}, {"ttl_ms", 5000}}.dump())) == "not_held");
    const std::string forged = "7" + lease.substr(lease.find('.'));
    CHECK(code_of(api.call(Method::kPost, "/v1/semaphores/pool/extend",
                           json{{"lease", forged}, {"ttl_ms", 5000}}.dump())) == "invalid_request");
  }
}

TEST_CASE("semaphores: bad bodies and leases are refused before any engine call", "[service]") {
  Api api;
  const std::string proof(48, 'a');
  const auto [method, target, body] = GENERATE_COPY(table<Method, std::string, std::string>({
      {Method::kPost, "/v1/semaphores/s", R"({"ttl_ms": 1000})"},
      {Method::kPost, "/v1/semaphores/s", R"({"permits": 0, "ttl_ms": 1000})"},
      {Method::kPost, "/v1/semaphores/s", R"({"permits": 65, "ttl_ms": 1000})"},
      {Method::kPost, "/v1/semaphores/s", R"({"permits": 2.0, "ttl_ms": 1000})"},
      {Method::kPost, "/v1/semaphores/s", R"({"permits": "2", "ttl_ms": 1000})"},
      {Method::kPost, "/v1/semaphores/s", R"({"permits": 2})"},
      {Method::kPost, "/v1/semaphores/s/extend",
       json{{"lease", "1." + proof}, {"ttl_ms", 1000}}.dump()},
      {Method::kPost, "/v1/semaphores/s/extend",
       json{{"lease", "1." + proof + ".2.2"}, {"ttl_ms", 1000}}.dump()},
      {Method::kDelete, "/v1/semaphores/s", json{{"lease", "1." + proof + ".65.0"}}.dump()},
      {Method::kDelete, "/v1/semaphores/s", R"({})"},
  }));
  INFO(target << " " << body);
  const ApiResponse answer = api.call(method, target, body);
  CHECK(answer.status == 400);
  CHECK(code_of(answer) == "invalid_request");
  CHECK(api.engine.calls() == 0);
}
