// Lock and counter names as the API accepts them: 1–200 characters from [A-Za-z0-9._:-].
//
// The alphabet keeps names safe to embed in Redis keys, URLs, log lines and metrics labels
// without escaping. Validation happens once, at the HTTP boundary, before anything is sent to a
// node, so a rejected name changes nothing anywhere.
#pragma once

#include <cstddef>
#include <string_view>

namespace fencelock::service {

inline constexpr std::size_t kMaxNameLength = 200;

// True iff `name` is 1..kMaxNameLength characters, each in [A-Za-z0-9._:-]. Pure; thread-safe.
bool is_valid_lock_name(std::string_view name) noexcept;

}  // namespace fencelock::service
