// Lock and counter names as API v1 accepts them: 1–200 characters from [A-Za-z0-9._:-], except
// "." and ".." (path segments that a proxy normalising paths would route elsewhere).
// The alphabet keeps names safe in URLs, Redis keys, log lines and metric labels without escaping.
// One definition, used by the SDK before it sends and by fencelockd before it asks any node.
#pragma once

#include <cstddef>
#include <string_view>

namespace fencelock {

inline constexpr std::size_t kMaxNameLength = 200;

// The rule in words, for error messages.
inline constexpr std::string_view kLockNameRule =
    "name must be 1 to 200 characters from [A-Za-z0-9._:-], other than \".\" and \"..\"";

// Pure; thread-safe.
bool is_valid_lock_name(std::string_view name) noexcept;

// True iff `c` may appear in a lock name.
constexpr bool is_lock_name_char(char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == ':' || c == '-';
}

}  // namespace fencelock
