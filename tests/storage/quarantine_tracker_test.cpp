#include "quarantine_tracker.h"

#include <catch2/catch.hpp>

using namespace std::chrono;
using fencelock::storage::QuarantineTracker;

TEST_CASE("a node is quarantined for the window after its run_id changes", "[storage]") {
  const steady_clock::time_point t0{seconds(1000)};
  QuarantineTracker tracker(3, seconds(60), /*enabled=*/true);

  CHECK_FALSE(tracker.observe(0, "aaaa", t0));  // first sight: trusted
  CHECK_FALSE(tracker.quarantined(0, t0));
  CHECK_FALSE(tracker.observe(0, "aaaa", t0 + seconds(5)));  // a reconnect to the same process

  CHECK(tracker.observe(0, "bbbb", t0 + seconds(10)));  // restarted
  CHECK(tracker.quarantined(0, t0 + seconds(10)));
  CHECK(tracker.quarantined(0, t0 + seconds(69)));
  CHECK_FALSE(tracker.quarantined(0, t0 + seconds(70)));
  CHECK_FALSE(tracker.quarantined(1, t0 + seconds(10)));

  SECTION("a second restart during quarantine starts the window again") {
    CHECK(tracker.observe(0, "cccc", t0 + seconds(50)));
    CHECK(tracker.quarantined(0, t0 + seconds(109)));
    CHECK_FALSE(tracker.quarantined(0, t0 + seconds(110)));
  }
}

TEST_CASE("a disabled tracker never quarantines", "[storage]") {
  const steady_clock::time_point t0{seconds(1000)};
  QuarantineTracker tracker(1, seconds(60), /*enabled=*/false);
  tracker.observe(0, "aaaa", t0);
  CHECK_FALSE(tracker.observe(0, "bbbb", t0 + seconds(1)));
  CHECK_FALSE(tracker.quarantined(0, t0 + seconds(1)));
}
