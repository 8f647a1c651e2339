// The route table of API v1 is data: one row per route says its method, path pattern
// (fencelock/api_paths.h), label, the API key right it needs, where its names are, whether it is a
// probe, and its handler. ApiHandlers::routes() (api/) is that table and the only place a route is
// described; the metrics' labels, authorization, the connection cap's probes and 404/405 all
// read it. match_route() is the one place that decides found / 404 / 405 / bad name.
//
// A pattern is a literal path or has one "{name}" segment ("/v1/locks/{name}/extend"); {name}
// never contains '/' and must be a valid lock name (fencelock/names.h), else the match is kBadName.
// The query string is ignored. Pure and thread-safe; allocates only the Allow text of a 405.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/route.h"

namespace fencelock::service {

enum class Method { kGet, kPost, kDelete, kHead, kOther };

// "GET", "POST", "DELETE", "HEAD", "" for kOther.
std::string_view method_name(Method method) noexcept;

template <class Handler>
struct RouteEntry {
  Route route = Route::kNotFound;
  Method method = Method::kOther;
  std::string_view pattern;
  std::string_view label;      // in the request log and the metrics
  std::uint8_t right = 0;      // the API key right it needs (auth/api_keys.h); 0: public
  bool names_in_body = false;  // its names are in the body (a lock set), not in the path
  bool probe = false;          // health, readiness, metrics: served over the connection cap
  Handler handler{};
};

// Whether `entry`'s names are in its path ("{name}"); if not, in its body (a lock set) or only in
// its answer (a listing, which leaves out the names the caller's key may not read).
template <class Handler>
bool names_in_path(const RouteEntry<Handler>& entry) noexcept {
  return entry.pattern.find("{name}") != std::string_view::npos;
}

template <class Handler>
struct RouteMatch {
  enum class Kind {
    kFound,             // entry and name are set
    kBadName,           // the path has a route's shape but {name} is not a valid name: 400;
                        // entry is the route it would have been (name stays empty)
    kNotFound,          // no route has this path: 404
    kMethodNotAllowed,  // the path exists with other methods: 405; `allow` lists them
  };
  Kind kind = Kind::kNotFound;
  const RouteEntry<Handler>* entry = nullptr;
  std::string_view name;  // a view into the target passed to match_route()
  std::string allow;      // "GET, POST, DELETE" etc. for kMethodNotAllowed
};

// The path of a request target: the origin form's path ("/v1/locks/a?x" → "/v1/locks/a"), also
// of an absolute-form target ("http://host:8080/v1/locks/a" → "/v1/locks/a", RFC 9112 §3.2.2).
std::string_view origin_path(std::string_view target) noexcept;

// Whether `path` has the shape of `pattern`; on success `name` is its {name} part (not validated;
// empty for a literal pattern).
bool path_fits(std::string_view pattern, std::string_view path, std::string_view& name) noexcept;
bool valid_route_name(std::string_view name) noexcept;

template <class Handler, std::size_t N>
RouteMatch<Handler> match_route(const std::array<RouteEntry<Handler>, N>& table, Method method,
                                std::string_view target) {
  const std::string_view path = origin_path(target);
  RouteMatch<Handler> match;
  bool path_known = false;
  for (const RouteEntry<Handler>& entry : table) {
    std::string_view name;
    if (!path_fits(entry.pattern, path, name)) continue;
    path_known = true;
    if (entry.method != method) continue;
    if (!name.empty() && !valid_route_name(name)) {
      match.kind = RouteMatch<Handler>::Kind::kBadName;
      match.entry = &entry;
      return match;
    }
    match.kind = RouteMatch<Handler>::Kind::kFound;
    match.entry = &entry;
    match.name = name;
    return match;
  }
  if (!path_known) return match;
  // The methods this path answers, in a fixed order.
  match.kind = RouteMatch<Handler>::Kind::kMethodNotAllowed;
  for (const Method allowed : {Method::kGet, Method::kPost, Method::kDelete}) {
    for (const RouteEntry<Handler>& entry : table) {
      std::string_view name;
      if (entry.method != allowed || !path_fits(entry.pattern, path, name)) continue;
      if (!match.allow.empty()) match.allow += ", ";
      match.allow += method_name(allowed);
      break;
    }
  }
  return match;
}

}  // namespace fencelock::service
