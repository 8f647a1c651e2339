#include "router.h"

#include <array>
#include <catch2/catch.hpp>
#include <string>

using namespace fencelock::service;
using Kind = RouteMatch<int>::Kind;

namespace {

// A table of the API's shape; the handler is just a number here (the real table carries
// ApiHandlers' member functions and is exercised through dispatch() in api_handlers_test.cpp).
const std::array<RouteEntry<int>, 10> kTable{{
    {Method::kPost, "/v1/locks/{name}/extend", Route::kExtend, 1},
    {Method::kPost, "/v1/locks/{name}", Route::kAcquire, 2},
    {Method::kDelete, "/v1/locks/{name}", Route::kRelease, 3},
    {Method::kGet, "/v1/locks/{name}", Route::kLockStatus, 4},
    {Method::kPost, "/v1/tokens/{name}", Route::kNextToken, 5},
    {Method::kGet, "/v1/tokens/{name}", Route::kCurrentToken, 6},
    {Method::kGet, "/healthz", Route::kHealthz, 7},
    {Method::kGet, "/readyz", Route::kReadyz, 8},
    {Method::kGet, "/metrics", Route::kMetrics, 9},
    {Method::kGet, "/v1/openapi.json", Route::kOpenApi, 10},
}};

RouteMatch<int> match(Method method, const std::string& target) {
  return match_route(kTable, method, target);
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
  const RouteMatch<int> found = match(method, target);
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
  }));
  const RouteMatch<int> refused = match(method, target);
  CHECK(refused.kind == Kind::kMethodNotAllowed);
  CHECK(refused.allow == allow);
}

TEST_CASE("unknown paths are 404 and bad names are 400", "[service]") {
  for (const char* target :
       {"/", "/v1", "/v1/locks", "/v1/locks/", "/v2/locks/x", "/v1/locks/x/renew",
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
