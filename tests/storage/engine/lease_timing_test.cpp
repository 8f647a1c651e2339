#include "fencelock/storage/lease_timing.h"

#include <catch2/catch.hpp>

using namespace std::chrono;
using namespace fencelock::storage;

TEST_CASE("validity is ttl minus elapsed minus the drift allowance", "[storage]") {
  SECTION("the distlock formula with the default drift factor") {
    // 10 s ttl, 1% drift: allowance 100 ms + 2 ms; 5 ms elapsed → 9893 ms.
    CHECK(drift_allowance(milliseconds(10'000), 0.01) == microseconds(102'000));
    CHECK(remaining_validity(milliseconds(10'000), milliseconds(5), 0.01) ==
          microseconds(9'893'000));
  }
  SECTION("elapsed time is rounded up, never down") {
    CHECK(remaining_validity(milliseconds(1000), nanoseconds(1), 0.0) == microseconds(997'999));
  }
  SECTION("a slow acquire leaves nothing or less than nothing") {
    CHECK(remaining_validity(milliseconds(100), milliseconds(97), 0.01) == microseconds(0));
    CHECK(remaining_validity(milliseconds(100), milliseconds(200), 0.01) < microseconds(0));
  }
  SECTION("a fractional drift allowance is rounded up") {
    CHECK(drift_allowance(milliseconds(1), 0.0015) == microseconds(2002));
  }
}

TEST_CASE("reported validity is rounded down to whole milliseconds", "[storage]") {
  CHECK(reportable_validity(microseconds(1999)) == milliseconds(1));
  CHECK(reportable_validity(microseconds(999)) == milliseconds(0));
  CHECK(reportable_validity(microseconds(-1)) < milliseconds(0));
}

TEST_CASE("retry delays are spread uniformly over delay ± jitter", "[storage]") {
  std::mt19937_64 rng(42);
  milliseconds lowest = milliseconds::max();
  milliseconds highest = milliseconds::min();
  for (int i = 0; i < 20'000; ++i) {
    const milliseconds d = retry_delay(milliseconds(200), milliseconds(100), rng);
    REQUIRE(d >= milliseconds(100));
    REQUIRE(d <= milliseconds(300));
    lowest = std::min(lowest, d);
    highest = std::max(highest, d);
  }
  CHECK(lowest <= milliseconds(102));
  CHECK(highest >= milliseconds(298));

  SECTION("jitter wider than the delay is clamped at zero") {
    for (int i = 0; i < 1000; ++i)
      REQUIRE(retry_delay(milliseconds(10), milliseconds(50), rng) >= milliseconds(0));
  }
  SECTION("no jitter means exactly the delay") {
    CHECK(retry_delay(milliseconds(200), milliseconds(0), rng) == milliseconds(200));
  }
}
