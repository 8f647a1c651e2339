#include "fencelock/duration.h"

#include <cstdint>

namespace fencelock {

namespace {
constexpr std::size_t kMaxDigits = 12;  // ~31 years in ms: beyond any sane lease, no overflow
}

std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) noexcept {
  std::size_t digits = 0;
  std::int64_t value = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    if (digits == kMaxDigits) return std::nullopt;
    value = value * 10 + (text[digits] - '0');
    ++digits;
  }
  if (digits == 0) return std::nullopt;
  const std::string_view unit = text.substr(digits);
  if (unit == "ms") return std::chrono::milliseconds(value);
  if (unit == "s") return std::chrono::milliseconds(value * 1000);
  if (unit == "m") return std::chrono::milliseconds(value * 60'000);
  return std::nullopt;
}

std::string format_duration(std::chrono::milliseconds d) {
  const auto ms = d.count();
  if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms != 0 && ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace fencelock
