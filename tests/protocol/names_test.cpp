#include "fencelock/names.h"

#include <catch2/catch.hpp>

using fencelock::is_valid_lock_name;

TEST_CASE("lock names are 1 to 200 characters of [A-Za-z0-9._:-], other than . and ..",
          "[protocol]") {
  const auto [name, ok] = GENERATE(table<std::string, bool>({
      {"orders", true},
      {"Orders.2026-11_21:batch", true},
      {std::string(200, 'a'), true},
      {std::string(201, 'a'), false},
      {"", false},
      {"has space", false},
      {"slash/inside", false},
      {"brace{x}", false},
      {"star*", false},
      {"caf\xc3\xa9", false},
      {std::string("nul\0byte", 8), false},
      {".", false},
      {"..", false},
      {"...", true},
      {".hidden", true},
  }));
  CHECK(is_valid_lock_name(name) == ok);
}
