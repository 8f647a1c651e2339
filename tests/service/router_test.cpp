#include "router.h"

#include <catch2/catch.hpp>

using namespace fencelock::service;
using Kind = RouteMatch::Kind;

TEST_CASE("every API v1 route is found by method and path", "[service]") {
  const auto [method, target, route, name] = GENERATE(table<Method, std::string, Route, std::string>({
      {Method::kPost, "/v1/locks/orders", Route::kAcquire, "orders"},
      {Method::kPost, "/v1/locks/orders/extend", Route::kExtend, "orders"},
      {Method::kDelete, "/v1/locks/orders", Route::kRelease, "orders"},
      {Method::kGet, "/v1/locks/orders", Route::kLockStatus, "orders"},
      {Method::kPost, "/v1/tokens/orders", Route::kNextToken, "orders"},
      {Method::kGet, "/v1/tokens/orders", Route::kCurrentToken, "orders"},
      {Method::kGet, "/healthz", Route::kHealthz, ""},
      {Method::kGet, "/readyz", Route::kReadyz, ""},
      {Method::kGet, "/metrics", Route::kMetrics, ""},
      {Method::kGet, "/v1/locks/a.b_c:d-E?verbose=1", Route::kLockStatus, "a.b_c:d-E"},
      {Method::kPost, "/v1/locks/extend", Route::kAcquire, "extend"},  // a lock may be called "extend"
  }));
  const RouteMatch match = match_route(method, target);
  CHECK(match.kind == Kind::kFound);
  CHECK(match.route == route);
  CHECK(match.name == name);
}

TEST_CASE("a known path with the wrong method is 405 with the allowed methods", "[service]") {
  const auto [method, target, allow] = GENERATE(table<Method, std::string, std::string>({
      {Method::kGet, "/v1/locks/x/extend", "POST"},
      {Method::kOther, "/v1/locks/x", "GET, POST, DELETE"},
      {Method::kDelete, "/v1/tokens/x", "GET, POST"},
      {Method::kPost, "/healthz", "GET"},
      {Method::kDelete, "/metrics", "GET"},
  }));
  const RouteMatch match = match_route(method, target);
  CHECK(match.kind == Kind::kMethodNotAllowed);
  CHECK(match.allow == allow);
}

TEST_CASE("unknown paths are 404 and bad names are 400", "[service]") {
  for (const char* target : {"/", "/v1", "/v1/locks", "/v1/locks/", "/v2/locks/x", "/v1/locks/x/renew",
                             "/v1/locks/a/b/extend", "/healthz/", "/v1/tokens/"}) {
    INFO(target);
    CHECK(match_route(Method::kGet, target).kind == Kind::kNotFound);
  }
  for (const char* target : {"/v1/locks/a%20b", "/v1/locks/caf%C3%A9", "/v1/tokens/star*"}) {
    INFO(target);
    CHECK(match_route(Method::kGet, target).kind == Kind::kBadName);
  }
  CHECK(match_route(Method::kGet, "/v1/locks/" + std::string(201, 'a')).kind == Kind::kBadName);
  CHECK(match_route(Method::kGet, "/v1/locks/" + std::string(200, 'a')).kind == Kind::kFound);
}
