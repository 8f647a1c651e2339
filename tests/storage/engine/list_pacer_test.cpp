// ListPacer: listing steps one at a time, a rest after a step that grants ran beside, none after
// an idle one, queued steps run at once when it stops (a real io_context and timer, no Redis).
#include "engine/list_pacer.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <catch2/catch.hpp>
#include <chrono>
#include <vector>

using namespace std::chrono_literals;
using fencelock::storage::kListRestFactor;
using fencelock::storage::ListPacer;
using Clock = std::chrono::steady_clock;

TEST_CASE("listing steps run one at a time, resting only after one that grants ran beside",
          "[storage][pacer]") {
  boost::asio::io_context io;
  ListPacer pacer(io.get_executor());
  std::vector<int> order;
  std::vector<Clock::time_point> started(3);
  boost::asio::steady_timer work(io);
  Clock::time_point first_left;
  // Step 0 takes ~20 ms with a grant beside it; step 1 is idle; step 2 follows it.
  REQUIRE(pacer.enter([&] {
    order.push_back(0);
    started[0] = Clock::now();
    pacer.note_foreground();
    work.expires_after(20ms);
    work.async_wait([&](auto) {
      first_left = Clock::now();
      pacer.leave();
    });
  }));
  REQUIRE(pacer.enter([&] {
    order.push_back(1);
    started[1] = Clock::now();
    pacer.leave();
  }));
  REQUIRE(pacer.enter([&] {
    order.push_back(2);
    started[2] = Clock::now();
    pacer.leave();
  }));
  CHECK(order == std::vector<int>{0});  // the others wait for the first
  io.run_for(5s);
  REQUIRE(order == std::vector<int>{0, 1, 2});
  const auto took = first_left - started[0];
  CHECK(started[1] - first_left >= took * kListRestFactor - 1ms);  // it rested
  CHECK(started[2] >= started[1]);  // step 1 was idle: step 2 followed at once
}

TEST_CASE("a stopping pacer runs the queued listing steps one after another, never nested",
          "[storage][pacer]") {
  boost::asio::io_context io;
  ListPacer pacer(io.get_executor());
  int ran = 0;
  int depth = 0;
  int deepest = 0;
  REQUIRE(pacer.enter([&] {
    ++ran;
    pacer.note_foreground();
  }));
  // Each queued step ends at once, as a listing step of a stopped engine does.
  const auto ending = [&] {
    ++ran;
    deepest = std::max(deepest, ++depth);
    pacer.leave();
    --depth;
  };
  for (std::size_t i = 0; i < fencelock::storage::kMaxQueuedListSteps; ++i)
    REQUIRE(pacer.enter(ending));
  CHECK(ran == 1);
  pacer.stop();
  CHECK(ran == 1 + static_cast<int>(fencelock::storage::kMaxQueuedListSteps));
  CHECK(deepest == 1);
  pacer.leave();  // the first step ends after the stop: nothing rests, nothing runs twice
  io.run_for(100ms);
  CHECK(ran == 1 + static_cast<int>(fencelock::storage::kMaxQueuedListSteps));
}

TEST_CASE("a pacer refuses a listing step beyond its queue's bound", "[storage][pacer]") {
  boost::asio::io_context io;
  ListPacer pacer(io.get_executor());
  REQUIRE(pacer.enter([] {}));  // runs, and holds the pacer until it leaves
  int depth = 0;
  int deepest = 0;
  int ran = 0;
  for (std::size_t i = 0; i < fencelock::storage::kMaxQueuedListSteps; ++i) {
    REQUIRE(pacer.enter([&] {
      ++ran;
      deepest = std::max(deepest, ++depth);
      pacer.leave();  // idle steps that end at once run one after another, not nested
      --depth;
    }));
  }
  CHECK_FALSE(pacer.enter([] { FAIL("a refused step ran"); }));
  pacer.leave();
  io.run_for(100ms);
  CHECK(ran == static_cast<int>(fencelock::storage::kMaxQueuedListSteps));
  CHECK(deepest == 1);
  CHECK(pacer.enter([&] { pacer.leave(); }));  // drained: room again
}
