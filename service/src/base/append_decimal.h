// Appends an integer in decimal to a string, without a temporary (std::to_chars): the request log
// and the hand-written JSON answers write numbers on every request.
#pragma once

#include <charconv>
#include <concepts>
#include <string>

namespace fencelock::service {

template <std::integral Number>
void append_decimal(std::string& out, Number value) {
  char digits[24];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
  static_cast<void>(ec);  // 24 bytes hold any 64-bit integer
  out.append(digits, end);
}

}  // namespace fencelock::service
