#include "fencelock/duration.h"

#include <catch2/catch.hpp>

using namespace std::chrono;
using fencelock::format_duration;
using fencelock::parse_duration;

TEST_CASE("durations take a whole number and one of ms, s, m", "[protocol]") {
  const auto [text, expected] = GENERATE(table<std::string, long long>({
      {"500ms", 500},
      {"30s", 30'000},
      {"2m", 120'000},
      {"0s", 0},
      {"999999999999ms", 999'999'999'999},
  }));
  const auto parsed = parse_duration(text);
  REQUIRE(parsed.has_value());
  CHECK(parsed->count() == expected);
}

TEST_CASE("anything else is not a duration", "[protocol]") {
  const std::string text = GENERATE(as<std::string>{}, "", "30", "s", "1.5s", "-1s", "+1s", " 1s",
                                    "1s ", "1h", "1S", "10sec", "1ms2", "1000000000000ms");
  CHECK_FALSE(parse_duration(text).has_value());
}

TEST_CASE("a duration formats to the shortest exact spelling", "[protocol]") {
  CHECK(format_duration(milliseconds(120'000)) == "2m");
  CHECK(format_duration(milliseconds(30'000)) == "30s");
  CHECK(format_duration(milliseconds(1500)) == "1500ms");
  CHECK(format_duration(milliseconds(0)) == "0ms");
  for (const long long ms : {1LL, 999LL, 1000LL, 61'000LL, 3'600'000LL}) {
    CHECK(parse_duration(format_duration(milliseconds(ms))) == milliseconds(ms));
  }
}
