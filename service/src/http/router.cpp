#include "http/router.h"

#include <cctype>

#include "fencelock/names.h"

namespace fencelock::service {

std::string_view method_name(Method method) noexcept {
  switch (method) {
    case Method::kGet:
      return "GET";
    case Method::kPost:
      return "POST";
    case Method::kDelete:
      return "DELETE";
    case Method::kHead:
      return "HEAD";
    case Method::kOther:
      break;
  }
  return "";
}

std::string_view origin_path(std::string_view target) noexcept {
  // An absolute-form target: a scheme, "://", the authority, then the path (or none: "/").
  for (const std::string_view scheme :
       {std::string_view("http://"), std::string_view("https://")}) {
    if (target.size() < scheme.size()) continue;
    bool same = true;
    for (std::size_t i = 0; i < scheme.size() && same; ++i) {
      same = std::tolower(static_cast<unsigned char>(target[i])) == scheme[i];
    }
    if (!same) continue;
    const std::size_t path = target.find_first_of("/?", scheme.size());
    if (path == std::string_view::npos || target[path] == '?') return "/";
    target.remove_prefix(path);
    break;
  }
  return target.substr(0, target.find('?'));
}

bool path_fits(std::string_view pattern, std::string_view path, std::string_view& name) noexcept {
  constexpr std::string_view kName = "{name}";
  const std::size_t at = pattern.find(kName);
  if (at == std::string_view::npos) {
    name = {};
    return path == pattern;
  }
  const std::string_view prefix = pattern.substr(0, at);
  const std::string_view suffix = pattern.substr(at + kName.size());
  if (path.size() <= prefix.size() + suffix.size() || !path.starts_with(prefix) ||
      !path.ends_with(suffix)) {
    return false;
  }
  name = path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
  // A name never contains '/': "/v1/locks/a/extend" is the extend route, not a lock "a/extend".
  return name.find('/') == std::string_view::npos;
}

bool valid_route_name(std::string_view name) noexcept {
  return fencelock::is_valid_lock_name(name);
}

}  // namespace fencelock::service
