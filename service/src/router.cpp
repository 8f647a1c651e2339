#include "router.h"

#include <array>

#include "fencelock/names.h"

namespace fencelock::service {

std::string_view route_label(Route route) noexcept {
  switch (route) {
    case Route::kAcquire: return "acquire";
    case Route::kExtend: return "extend";
    case Route::kRelease: return "release";
    case Route::kLockStatus: return "lock_status";
    case Route::kNextToken: return "next_token";
    case Route::kCurrentToken: return "current_token";
    case Route::kHealthz: return "healthz";
    case Route::kReadyz: return "readyz";
    case Route::kMetrics: return "metrics";
    case Route::kNotFound: return "not_found";
  }
  return "not_found";
}

namespace {

// A path shape: literal prefix, then either nothing or {name}, then a literal suffix.
struct PathShape {
  std::string_view prefix;
  bool has_name;
  std::string_view suffix;
  std::string_view allow;  // every method this path answers, for 405's Allow header
};

struct RouteEntry {
  Method method;
  std::size_t shape;  // index into kShapes
  Route route;
};

constexpr std::array<PathShape, 6> kShapes = {{
    {"/v1/locks/", true, "/extend", "POST"},
    {"/v1/locks/", true, "", "GET, POST, DELETE"},
    {"/v1/tokens/", true, "", "GET, POST"},
    {"/healthz", false, "", "GET"},
    {"/readyz", false, "", "GET"},
    {"/metrics", false, "", "GET"},
}};

constexpr std::array<RouteEntry, 9> kRoutes = {{
    {Method::kPost, 0, Route::kExtend},
    {Method::kPost, 1, Route::kAcquire},
    {Method::kDelete, 1, Route::kRelease},
    {Method::kGet, 1, Route::kLockStatus},
    {Method::kPost, 2, Route::kNextToken},
    {Method::kGet, 2, Route::kCurrentToken},
    {Method::kGet, 3, Route::kHealthz},
    {Method::kGet, 4, Route::kReadyz},
    {Method::kGet, 5, Route::kMetrics},
}};

// Whether `path` has the shape; on success `name` is the {name} part (not yet validated).
bool fits(const PathShape& shape, std::string_view path, std::string_view& name) {
  if (!shape.has_name) return path == shape.prefix;
  if (!path.starts_with(shape.prefix) || !path.ends_with(shape.suffix)) return false;
  if (path.size() < shape.prefix.size() + shape.suffix.size()) return false;
  name = path.substr(shape.prefix.size(), path.size() - shape.prefix.size() - shape.suffix.size());
  // A name never contains '/': "/v1/locks/a/extend" is the extend route, not a lock "a/extend".
  return !name.empty() && name.find('/') == std::string_view::npos;
}

}  // namespace

RouteMatch match_route(Method method, std::string_view target) noexcept {
  const std::string_view path = target.substr(0, target.find('?'));
  for (std::size_t s = 0; s < kShapes.size(); ++s) {
    std::string_view name;
    if (!fits(kShapes[s], path, name)) continue;
    RouteMatch match;
    for (const RouteEntry& entry : kRoutes) {
      if (entry.shape == s && entry.method == method) {
        match.kind = RouteMatch::Kind::kFound;
        match.route = entry.route;
      }
    }
    if (match.kind != RouteMatch::Kind::kFound) {
      match.kind = RouteMatch::Kind::kMethodNotAllowed;
      match.allow = kShapes[s].allow;
      return match;
    }
    if (kShapes[s].has_name) {
      if (!fencelock::is_valid_lock_name(name)) {
        match.kind = RouteMatch::Kind::kBadName;
        return match;
      }
      match.name = name;
    }
    return match;
  }
  return RouteMatch{};
}

}  // namespace fencelock::service
