// The route table of API v1, as data, and the one place that decides 404 versus 405.
//
// match() looks only at the method and the path (a query string is ignored). It never touches the
// network and allocates nothing beyond the result; pure, thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "route.h"

namespace fencelock::service {

enum class Method { kGet, kPost, kDelete, kOther };

struct RouteMatch {
  enum class Kind {
    kFound,             // route and name are set
    kBadName,           // the path has the shape of a route but {name} is not a valid name: 400
    kNotFound,          // no route has this path: 404
    kMethodNotAllowed,  // the path exists with other methods: 405, `allow` lists them
  };
  Kind kind = Kind::kNotFound;
  Route route = Route::kNotFound;
  std::string_view name;   // a view into the target passed to match()
  std::string_view allow;  // "GET, POST, DELETE" etc. for kMethodNotAllowed
};

RouteMatch match_route(Method method, std::string_view target) noexcept;

}  // namespace fencelock::service
