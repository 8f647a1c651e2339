#include "fencelock/api_paths.h"

namespace fencelock::api_paths {

std::string expand(std::string_view pattern, std::string_view name) {
  constexpr std::string_view kName = "{name}";
  std::string path(pattern);
  if (const auto at = path.find(kName); at != std::string::npos)
    path.replace(at, kName.size(), name);
  return path;
}

}  // namespace fencelock::api_paths
