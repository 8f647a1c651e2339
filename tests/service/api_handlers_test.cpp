// API v1's behaviour through ApiHandlers::dispatch, with an in-memory engine (no Redis, no HTTP):
// routing, validation, the error envelope and the mapping of engine outcomes. The real-process
// tests in http_api_test.cpp cover the same API end to end.
#include "api/api_handlers.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <optional>

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

std::string code_of(const ApiResponse& response) {
  const json body = json::parse(response.body, nullptr, false);
  return body.is_discarded() ? std::string() : body["error"]["code"].get<std::string>();
}

}  // namespace

TEST_CASE("api: every malformed request is refused with a stable code and never reaches the engine",
          "[service]") {
  Api api;
  const auto [method, target, body, status,
              code] = GENERATE(table<Method, std::string, std::string, unsigned, std::string>({
      {Method::kPost, "/v1/locks/x", "", 400, "invalid_request"},
      {Method::kPost, "/v1/locks/x", "{", 400, "invalid_request"},
      {Method::kPost, "/v1/locks/x", "[]", 400, "invalid_request"},
      {Method::kPost, "/v1/locks/x", R"({})", 400, "invalid_request"},
      {Method::kPost, "/v1/locks/x", R"({"ttl_ms": "1000"})", 400, "invalid_request"},
      {Method::kPost, "/v1/locks/x", R"({"ttl_ms": 1.5})", 400, "invalid_request"},
      {Method::kPost, "/v1/locks/x", R"({"ttl_ms": 9})", 400, "invalid_request"},
      {Method::kPost, "/v1/locks/x", R"({"ttl_ms": 3600001})", 400, "invalid_request"},
      {Method::kPost, "/v1/locks/x", R"({"ttl_ms": 1000, "wait_ms": 60001})", 400,
       "invalid_request"},
      {Method::kPost, "/v1/locks/x", R"({"ttl_ms": 1000, "wait_ms": -1})", 400, "invalid_request"},
      {Method::kPost, "/v1/locks/x", R"({"ttl_ms": 1000, "owner": false})", 400, "invalid_request"},
      {Method::kPost, "/v1/locks/bad%20name", R"({"ttl_ms": 1000})", 400, "invalid_request"},
      {Method::kPost, "/v1/locks/" + std::string(201, 'n'), R"({"ttl_ms": 1000})", 400,
       "invalid_request"},
      {Method::kPost, "/v1/locks/.", R"({"ttl_ms": 1000})", 400, "invalid_request"},
      {Method::kPost, "/v1/locks/..", R"({"ttl_ms": 1000})", 400, "invalid_request"},
      {Method::kPost, "/v1/locks/x/extend", R"({"ttl_ms": 1000})", 400, "invalid_request"},
      {Method::kPost, "/v1/locks/x/extend", R"({"lease": "garbage", "ttl_ms": 1000})", 400,
       "invalid_request"},
      {Method::kPost, "/v1/locks/x/extend",
       R"({"lease": "1.0123456789abcdef0123456789abcdef", "ttl_ms": 1000})", 400,
       "invalid_request"},
      {Method::kDelete, "/v1/locks/x", R"({})", 400, "invalid_request"},
      {Method::kDelete, "/v1/locks/x", R"({"lease": "1.zz"})", 400, "invalid_request"},
      {Method::kGet, "/v1/nothing", "", 404, "not_found"},
      {Method::kGet, "/", "", 404, "not_found"},
      {Method::kOther, "/v1/locks/x", R"({"ttl_ms": 1000})", 405, "method_not_allowed"},
      {Method::kGet, "/v1/locks/x/extend", "", 405, "method_not_allowed"},
      {Method::kPost, "/healthz", "", 405, "method_not_allowed"},
  }));
  INFO(static_cast<int>(method) << " " << target << " " << body);
  const ApiResponse answer = api.call(method, target, body);
  CHECK(answer.status == status);
  CHECK(code_of(answer) == code);
  CHECK(json::parse(answer.body)["error"]["message"].is_string());
  if (status == 405) CHECK_FALSE(answer.allow.empty());
  CHECK(api.engine.calls() == 0);
}

TEST_CASE("api: 405 names the allowed methods — HEAD is 405 without a body and closes",
          "[service]") {
  Api api;
  CHECK(api.call(Method::kOther, "/v1/locks/x").allow == "GET, POST, DELETE");
  CHECK(api.call(Method::kDelete, "/v1/tokens/x").allow == "GET, POST");
  const ApiResponse head = api.call(Method::kHead, "/healthz");
  CHECK(head.status == 405);
  CHECK(head.body.empty());
  CHECK(head.close);
}

TEST_CASE("api: acquire, refuse, extend, inspect and release answer the documented bodies",
          "[service]") {
  Api api;
  const ApiResponse granted =
      api.call(Method::kPost, "/v1/locks/orders", R"({"ttl_ms": 10000, "owner": "w-1"})");
  REQUIRE(granted.status == 200);
  const json lease = json::parse(granted.body);
  CHECK(lease["name"] == "orders");
  CHECK(lease["token"] == 1);
  CHECK(lease["ttl_ms"] == 10000);
  CHECK(lease["waited_ms"] == 0);
  CHECK(granted.log.owner == "w-1");
  CHECK(granted.log.token == std::optional<std::uint64_t>(1));
  CHECK(granted.log.error.empty());

  const ApiResponse refused = api.call(Method::kPost, "/v1/locks/orders", R"({"ttl_ms": 1000})");
  CHECK(refused.status == 409);
  CHECK(code_of(refused) == "locked");
  CHECK(json::parse(refused.body)["error"]["retry_after_ms"] == 5000);

  const json extend_body{{"lease", lease["lease"]}, {"ttl_ms", 20000}};
  const ApiResponse extended =
      api.call(Method::kPost, "/v1/locks/orders/extend", extend_body.dump());
  REQUIRE(extended.status == 200);
  CHECK(json::parse(extended.body)["token"] == 1);
  CHECK(json::parse(extended.body)["lease"] == lease["lease"]);

  const ApiResponse status = api.call(Method::kGet, "/v1/locks/orders");
  CHECK(json::parse(status.body) == json{{"name", "orders"},
                                         {"held", true},
                                         {"remaining_ms", 5000},
                                         {"token", 1},
                                         {"owner", "w-1"},
                                         {"last_token", 1}});

  const json release_body{{"lease", lease["lease"]}};
  CHECK(json::parse(
            api.call(Method::kDelete, "/v1/locks/orders", release_body.dump()).body)["released"] ==
        true);
  CHECK(json::parse(
            api.call(Method::kDelete, "/v1/locks/orders", release_body.dump()).body)["released"] ==
        false);
  CHECK(api.engine.held() == 0);
}

TEST_CASE("api: engine outcomes map to the wire: lease lost, a forged token, unavailable",
          "[service]") {
  Api api;
  const json lease =
      json::parse(api.call(Method::kPost, "/v1/locks/doc", R"({"ttl_ms": 10000})").body);
  const std::string text = lease["lease"];
  const std::string forged = "7" + text.substr(text.find('.'));
  CHECK(code_of(api.call(Method::kPost, "/v1/locks/doc/extend",
                         json{{"lease", forged}, {"ttl_ms", 1000}}.dump())) == "invalid_request");
  const std::string other = "1." + std::string(48, 'b');
  const ApiResponse lost = api.call(Method::kPost, "/v1/locks/doc/extend",
                                    json{{"lease", other}, {"ttl_ms", 1000}}.dump());
  CHECK(lost.status == 409);
  CHECK(code_of(lost) == "not_held");
  api.engine.refusal = "another fencelockd shares these lock nodes";
  const ApiResponse unavailable = api.call(Method::kPost, "/v1/locks/other", R"({"ttl_ms": 1000})");
  CHECK(unavailable.status == 503);
  CHECK(code_of(unavailable) == "unavailable");
  CHECK(api.call(Method::kPost, "/v1/tokens/other").status == 503);
  const ApiResponse ready = api.call(Method::kGet, "/readyz");
  CHECK(ready.status == 503);
  CHECK(json::parse(ready.body)["token_source"]["reason"] ==
        "another fencelockd shares these lock nodes");
}

TEST_CASE("api: a handler that throws answers 500 once, and the server keeps serving",
          "[service]") {
  Api api;
  const ApiResponse answer = api.call(Method::kPost, "/v1/locks/boom", R"({"ttl_ms": 1000})");
  CHECK(answer.status == 500);
  CHECK(code_of(answer) == "internal");
  CHECK(api.call(Method::kGet, "/healthz").status == 200);
  // A waiting acquire that throws gives its waiter count back (PendingAcquire).
  const ApiResponse waiting =
      api.call(Method::kPost, "/v1/locks/boom", R"({"ttl_ms": 1000, "wait_ms": 1000})");
  CHECK(waiting.status == 500);
  CHECK(api.handlers.waiting_acquires() == 0);
}

TEST_CASE("api: only a waiting acquire can be cancelled", "[service]") {
  Api api;
  auto cancel_of = [&](const std::string& body) {
    return api.handlers.dispatch(Method::kPost, "/v1/locks/c", body, "", [](ApiResponse) {}).cancel;
  };
  CHECK_FALSE(cancel_of(R"({"ttl_ms": 1000})"));
  CHECK(cancel_of(R"({"ttl_ms": 1000, "wait_ms": 5000})"));
  api.engine.run_pending();
}
