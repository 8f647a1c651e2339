// A refused waiter sleeps until the holder's keys can have expired (expiry_wait.h): the pure rule,
// then the engine against real redis-servers — a crashed holder's lock is taken over right after
// its expiry, never before, and without polling in between.
#include "engine/expiry_wait.h"

#include <catch2/catch.hpp>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "engine_calls.h"
#include "engine_under_test.h"
#include "sync_redis.h"

using namespace fencelock::storage;
using namespace fencelock::testing;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

namespace {

NodeAnswer held(const char* holder, std::chrono::milliseconds remaining) {
  return NodeAnswer{NodeAnswer::Kind::kHeld, holder, remaining};
}
NodeAnswer free_node() {
  return NodeAnswer{NodeAnswer::Kind::kFree, "", 0ms};
}
NodeAnswer unknown() {
  return NodeAnswer{};
}

std::optional<std::chrono::milliseconds> grantable_in(const std::vector<NodeAnswer>& answers) {
  return time_until_grantable(answers, answers.size() / 2 + 1);
}

}  // namespace

TEST_CASE("expiry wait: a holder on every node frees when a quorum of its keys expired",
          "[storage]") {
  // Five nodes, quorum three: the third-smallest remaining ttl, plus 1 ms (no drift:
  // expiry_wait.h).
  CHECK(grantable_in({held("h", 900ms), held("h", 1000ms), held("h", 1000ms), held("h", 1100ms),
                      held("h", 800ms)}) == 1001ms);
}

TEST_CASE("expiry wait: free nodes and other waiters' half-won keys count as free now",
          "[storage]") {
  // Two nodes granted this attempt: one of the holder's three keys must expire — the soonest.
  CHECK(grantable_in({free_node(), free_node(), held("h", 500ms), held("h", 700ms),
                      held("h", 600ms)}) == 501ms);
  // A key of another waiter's failed attempt is deleted at once: it frees like a granted node.
  CHECK(grantable_in({held("w", 9000ms), free_node(), held("h", 500ms), held("h", 700ms),
                      held("h", 600ms)}) == 501ms);
}

TEST_CASE("expiry wait: a split vote or too few answers cannot tell, and fall back to pacing",
          "[storage]") {
  // Three waiters split the nodes: nobody holds the lock, the retry delay breaks the tie.
  CHECK_FALSE(grantable_in({held("a", 9000ms), held("a", 9000ms), held("b", 9000ms),
                            held("b", 9000ms), held("c", 9000ms)})
                  .has_value());
  // Two nodes silent: the holder's three keys are all that is known, and the silent nodes may
  // never answer — every one of the three must expire.
  CHECK(grantable_in(
            {unknown(), unknown(), held("h", 300ms), held("h", 200ms), held("h", 100ms)}) == 301ms);
  // Three silent: no quorum can be reached from what answered.
  CHECK_FALSE(grantable_in({unknown(), unknown(), unknown(), held("h", 300ms), held("h", 200ms)})
                  .has_value());
  CHECK_FALSE(grantable_in({free_node(), unknown(), unknown()}).has_value());
}

TEST_CASE("a crashed holder's lock is taken over right after it expires, without polling",
          "[storage][redis]") {
  RedisCluster cluster(5);
  auto options = engine_options_for(cluster);
  options.retry_delay = 100ms;  // polling would retry some twenty times in the holder's 2 s
  options.retry_jitter = 0ms;
  EngineUnderTest holder_engine(options);
  EngineUnderTest waiter_engine(options);

  // The holder takes the lock and "crashes": it never releases nor extends.
  const auto holder_started = Clock::now();
  const auto holder = holder_engine.acquire("crashed", 2000ms);
  REQUIRE(holder.ok());
  const auto holder_valid_until = holder_started + holder.value().validity;
  const auto calls_before = evalsha_calls(cluster, 0);

  const auto waiter = waiter_engine.acquire("crashed", 10s, /*wait=*/8s);
  const auto granted_at = Clock::now();
  REQUIRE(waiter.ok());
  // Never while the holder's lease was valid; and one refusal, one sleep, one grant.
  CHECK(granted_at >= holder_valid_until);
  const auto attempts_on_node_0 = evalsha_calls(cluster, 0) - calls_before;
  CHECK(attempts_on_node_0 >= 2);
  CHECK(attempts_on_node_0 <= 3);
  CHECK(waiter_engine.release("crashed", claim(waiter)).value());
}

TEST_CASE("a waiter refused by a holder that keeps extending wakes once per lease, never granted",
          "[storage][redis]") {
  RedisCluster cluster(3);
  auto options = engine_options_for(cluster);
  options.retry_delay = 50ms;
  options.retry_jitter = 0ms;
  EngineUnderTest holder_engine(options);
  EngineUnderTest waiter_engine(options);
  const auto holder = holder_engine.acquire("extended", 600ms);
  REQUIRE(holder.ok());
  log_every_command(cluster, 0);
  auto waiter = std::async(std::launch::async,
                           [&] { return waiter_engine.acquire("extended", 10s, /*wait=*/1500ms); });
  // Extend every 200 ms for 2 s: the waiter's budget ends while the lock is still held.
  for (int i = 0; i < 10; ++i) {
    std::this_thread::sleep_for(200ms);
    REQUIRE(holder_engine.extend("extended", claim(holder), 600ms).ok());
  }
  const auto refused = waiter.get();
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::kLocked);
  // Woken at each expiry the holder then moved on: a handful of attempts, not one per 50 ms.
  CHECK(script_calls(cluster, 0, kAcquireLockScriptSha) < 8);
  CHECK(holder_engine.release("extended", claim(holder)).value());
}

// Review of 15ef2fe (review-expiry): with a node silent, another waiter's half-won key is taken
// for the holder's, and the refused waiter sleeps as if a lease held the lock — up to 2 s, with no
// jitter, where a split vote should be paced by the random retry delay.

TEST_CASE("expiry wait: another waiter's lone key is no holder's expiry when a node is silent",
          "[storage]") {
  // Three nodes, one down: this attempt won node 0, another waiter's attempt won node 1. Neither
  // can reach the quorum of two; the other's key is deleted at once (silently). Nothing tells
  // this waiter to sleep out that key's ttl.
  const auto in =
      time_until_grantable(std::vector<NodeAnswer>{free_node(), held("w", 30000ms), unknown()}, 2);
  CHECK((!in.has_value() || *in <= 300ms));
  // Five nodes, one down, two waiters split two and two: the same.
  const auto five =
      time_until_grantable(std::vector<NodeAnswer>{free_node(), free_node(), held("w", 30000ms),
                                                   held("w", 30000ms), unknown()},
                           3);
  CHECK((!five.has_value() || *five <= 300ms));
}

TEST_CASE("a split vote with a node down is retried after the retry delay, not the 2 s expiry cap",
          "[storage][redis]") {
  RedisCluster cluster(3);
  auto options = engine_options_for(cluster);
  options.retry_delay = 100ms;
  options.retry_jitter = 0ms;
  EngineUnderTest waiter_engine(options);
  cluster.node(2).kill();  // one node down: the quorum of two is still reachable
  // Another engine's waiter won node 1 in the same round (a 48-hex lease value with its ttl);
  // its attempt fails and is cleaned up silently (kReleaseSilently: no announcement).
  const std::string other_value(48, 'a');
  REQUIRE(SyncRedis(cluster.node(1).port())
              .command({"SET", "fencelock:lock:split", other_value, "PX", "30000"})
              .text == "OK");
  auto waiter = std::async(std::launch::async,
                           [&] { return waiter_engine.acquire("split", 10s, /*wait=*/1500ms); });
  std::this_thread::sleep_for(100ms);  // refused once: node 0 granted, node 1 held, node 2 down
  SyncRedis(cluster.node(1).port()).command({"DEL", "fencelock:lock:split"});
  const auto granted = waiter.get();
  REQUIRE(granted.ok());  // the old 200 ms pacing finds the lock free within its budget
  CHECK(granted->waited < 600ms);
  CHECK(waiter_engine.release("split", claim(granted)).value());
}
