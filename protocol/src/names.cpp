#include "fencelock/names.h"

namespace fencelock {

bool is_valid_lock_name(std::string_view name) noexcept {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  // "." and ".." are path segments: a proxy that normalises paths would route them elsewhere.
  if (name == "." || name == "..") return false;
  for (const char c : name) {
    if (!is_lock_name_char(c)) return false;
  }
  return true;
}

}  // namespace fencelock
