// API key secrets: made by `fencelockd keys new`, sent by clients as `Authorization: Bearer
// <secret>`, stored in the auth file only as their SHA-256. A secret is "flk_" and 64 hex digits
// (256 bits from getrandom(2)): a plain hash suffices for that much entropy (no password
// stretching), and the prefix lets secret scanners recognise a leaked one. Never logged.
#pragma once

#include <string>
#include <string_view>

#include "base/service_result.h"

namespace fencelock::service {

inline constexpr std::string_view kApiSecretPrefix = "flk_";
inline constexpr std::size_t kMaxApiSecretLength = 256;  // longer bearer values are refused unread

// A fresh secret. Errors only if the kernel cannot supply randomness.
ServiceResult<std::string> generate_api_secret();

// SHA-256 of `text` as 64 lower-case hex digits. Thread-safe.
std::string sha256_hex(std::string_view text);

}  // namespace fencelock::service
