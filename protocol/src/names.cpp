#include "fencelock/names.h"

namespace fencelock {

bool is_valid_lock_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  // "." and ".." are path segments: a proxy that normalises paths would route them elsewhere.
  if (name == "." || name == "..") return false;
  for (const char c : name) {
    const bool allowed = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '.' || c == '_' || c == ':' || c == '-';
    if (!allowed) return false;
  }
  return true;
}

}  // namespace fencelock
