// Durations as people type them on a command line or in a config file: "500ms", "30s", "2m".
//
// Accepted: a whole number of 1–12 digits followed by exactly one unit, ms, s or m. Nothing
// else — no bare numbers (is "30" seconds or milliseconds?), no fractions, no spaces, no signs.
// Pure functions; thread-safe.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace fencelock {

// The duration `text` names, or nullopt if it is not of the accepted form.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) noexcept;

// The shortest exact spelling parse_duration() accepts: 120000ms → "2m", 1500ms → "1500ms".
// Precondition: d >= 0.
std::string format_duration(std::chrono::milliseconds d);

}  // namespace fencelock
