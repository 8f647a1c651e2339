#include "http/router.h"

#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "api/api_handlers.h"
#include "api/openapi_document.h"

using namespace fencelock::service;
using Kind = RouteMatch<ApiHandlers::Handler>::Kind;

namespace {

// The real table (ApiHandlers::routes()); its handlers are exercised through dispatch() in
// api_handlers_test.cpp.
RouteMatch<ApiHandlers::Handler> match(Method method, const std::string& target) {
  return match_route(ApiHandlers::routes(), method, target);
}

}  // namespace

TEST_CASE("every API v1 route is found by method and path", "[service]") {
  const auto [method, target, route, name] =
      GENERATE(table<Method, std::string, Route, std::string>({
          {Method::kPost, "/v1/locks/orders", Route::kAcquire, "orders"},
          {Method::kPost, "/v1/locks/orders/extend", Route::kExtend, "orders"},
          {Method::kDelete, "/v1/locks/orders", Route::kRelease, "orders"},
          {Method::kGet, "/v1/locks/orders", Route::kLockStatus, "orders"},
          {Method::kPost, "/v1/tokens/orders", Route::kNextToken, "orders"},
          {Method::kGet, "/v1/tokens/orders", Route::kCurrentToken, "orders"},
          {Method::kGet, "/healthz", Route::kHealthz, ""},
          {Method::kGet, "/readyz", Route::kReadyz, ""},
          {Method::kGet, "/metrics", Route::kMetrics, ""},
          {Method::kGet, "/v1/openapi.json", Route::kOpenApi, ""},
          {Method::kGet, "/v1/locks/a.b_c:d-E?verbose=1", Route::kLockStatus, "a.b_c:d-E"},
          {Method::kPost, "/v1/locks/extend", Route::kAcquire,
           "extend"},  // a lock may be called "extend"
      }));
  const auto found = match(method, target);
  CHECK(found.kind == Kind::kFound);
  REQUIRE(found.entry != nullptr);
  CHECK(found.entry->route == route);
  CHECK(found.name == name);
}

TEST_CASE("a known path with the wrong method is 405 with the allowed methods", "[service]") {
  const auto [method, target, allow] = GENERATE(table<Method, std::string, std::string>({
      {Method::kGet, "/v1/locks/x/extend", "POST"},
      {Method::kOther, "/v1/locks/x", "GET, POST, DELETE"},
      {Method::kDelete, "/v1/tokens/x", "GET, POST"},
      {Method::kPost, "/healthz", "GET"},
      {Method::kDelete, "/metrics", "GET"},
      {Method::kOther, "/v1/locks", "GET, POST, DELETE"},
  }));
  const auto refused = match(method, target);
  CHECK(refused.kind == Kind::kMethodNotAllowed);
  CHECK(refused.allow == allow);
}

TEST_CASE("unknown paths are 404 and bad names are 400", "[service]") {
  for (const char* target : {"/", "/v1", "/v1/locks/", "/v2/locks/x", "/v1/locks/x/renew",
                             "/v1/locks/a/b/extend", "/healthz/", "/v1/tokens/"}) {
    INFO(target);
    CHECK(match(Method::kGet, target).kind == Kind::kNotFound);
  }
  for (const char* target : {"/v1/locks/a%20b", "/v1/locks/caf%C3%A9", "/v1/tokens/star*"}) {
    INFO(target);
    CHECK(match(Method::kGet, target).kind == Kind::kBadName);
  }
  CHECK(match(Method::kGet, "/v1/locks/" + std::string(201, 'a')).kind == Kind::kBadName);
  CHECK(match(Method::kGet, "/v1/locks/" + std::string(200, 'a')).kind == Kind::kFound);
}

TEST_CASE("absolute-form targets route by their path — the query is ignored", "[service]") {
  CHECK(origin_path("/v1/locks/a?x=1") == "/v1/locks/a");
  CHECK(origin_path("http://h:8080/v1/locks/a") == "/v1/locks/a");
  CHECK(origin_path("HTTPS://h/v1/locks/a?q") == "/v1/locks/a");
  CHECK(origin_path("http://h") == "/");
  CHECK(origin_path("http://h?x") == "/");
  CHECK(origin_path("ftp://h/v1/locks/a") == "ftp://h/v1/locks/a");
  CHECK(match(Method::kGet, "http://localhost:8080/v1/locks/abc").kind == Kind::kFound);
  CHECK(match(Method::kGet, "http://localhost:8080/v1/locks/abc").name == "abc");
}

// The table is the one description of a route: each route once, each label once, and the
// document clients are generated from describes exactly the table's (path, method) pairs.
TEST_CASE("the route table has every route once and matches the OpenAPI document", "[service]") {
  std::set<Route> routes;
  std::set<std::string_view> labels;
  std::set<std::pair<std::string, std::string>> table_pairs;
  for (const auto& entry : ApiHandlers::routes()) {
    CAPTURE(entry.label);
    CHECK(routes.insert(entry.route).second);
    CHECK(labels.insert(entry.label).second);
    CHECK(route_label(entry.route) == entry.label);
    CHECK(entry.handler != nullptr);
    std::string method(method_name(entry.method));
    std::transform(method.begin(), method.end(), method.begin(), ::tolower);
    table_pairs.insert({std::string(entry.pattern), method});
  }
  CHECK(routes.size() == kRouteCount - 1);
  CHECK(route_label(Route::kNotFound) == "not_found");

  const auto document = nlohmann::json::parse(openapi_document_json());
  std::set<std::pair<std::string, std::string>> document_pairs;
  for (const auto& [path, item] : document["paths"].items()) {
    for (const auto& [method, operation] : item.items()) {
      if (method == "parameters") continue;
      document_pairs.insert({path, method});
    }
  }
  CHECK(table_pairs == document_pairs);
}

TEST_CASE("probes are the table's probe rows: health, readiness and metrics", "[service]") {
  CHECK(ApiHandlers::is_probe(Method::kGet, "/healthz"));
  CHECK(ApiHandlers::is_probe(Method::kGet, "/readyz?verbose=1"));
  CHECK(ApiHandlers::is_probe(Method::kGet, "/metrics"));
  CHECK_FALSE(ApiHandlers::is_probe(Method::kPost, "/healthz"));
  CHECK_FALSE(ApiHandlers::is_probe(Method::kGet, "/v1/openapi.json"));
  CHECK_FALSE(ApiHandlers::is_probe(Method::kGet, "/v1/locks/healthz"));
}
