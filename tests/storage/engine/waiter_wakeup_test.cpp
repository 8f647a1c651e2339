// Who a release wakes, against real redis-servers: a lock set's waiter sleeps until every name its
// refusal found held was released (a release of another of its names goes on to the waiters behind
// it), and a woken waiter that cannot use a name hands it on. Attempts are counted as the EVALSHA
// calls a node served.
#include <catch2/catch.hpp>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "engine_calls.h"
#include "engine_under_test.h"
#include "sync_redis.h"

using namespace fencelock::storage;
using namespace fencelock::testing;
using Clock = std::chrono::steady_clock;

TEST_CASE("a lock set's waiter sleeps through a release that leaves another of its names held",
          "[storage][redis]") {
  RedisCluster cluster(3);
  EngineUnderTest t(engine_options_for(cluster));
  // ww-b frees last on every node, so each refusal names the same holder and the waiter sleeps
  // to its expiry (2 s cap). With equal ttls a node may name either (their PTTLs can tie), the
  // answers then agree on no holder, and the waiter looks again after the 200 ms retry delay.
  auto a = t.acquire("ww-a", 20s);
  auto b = t.acquire("ww-b", 25s);
  REQUIRE(a.ok());
  REQUIRE(b.ok());

  Result<LockSetLease> set = make_error(ErrorCode::kInternal, "not run");
  Clock::time_point granted_at;
  log_every_command(cluster, 0);
  std::thread waiter([&] {
    set = acquire_set(t, {"ww-a", "ww-b"}, 5s, 8s);
    granted_at = Clock::now();
  });
  // Refused on both names (its first attempt, however slow the machine); it sleeps (2 s cap). The
  // release of its refused attempt goes out in the same turn as its decision to sleep.
  t.wait_until([&] { return eval_calls_on(cluster, 0, "fencelock:lock:ww-a") >= 1; }, 5s);
  REQUIRE(script_calls(cluster, 0, kAcquireSetScriptSha) == 1);

  REQUIRE(t.release("ww-a", claim(a)).ok());
  std::this_thread::sleep_for(300ms);
  // The waiter knows ww-b still holds it back and did not try.
  CHECK(script_calls(cluster, 0, kAcquireSetScriptSha) == 1);

  const auto released_b_at = Clock::now();
  REQUIRE(t.release("ww-b", claim(b)).ok());
  waiter.join();
  REQUIRE(set.ok());
  CHECK(granted_at - released_b_at < 500ms);  // woken by the last blocker's release
  CHECK(said_yes(release_set(t, set->names, set_claim(*set))));
}

TEST_CASE("only the first waiter of a name asks the nodes while the holder keeps it",
          "[storage][redis]") {
  RedisCluster cluster(3);
  EngineUnderTest t(engine_options_for(cluster));
  auto holder = t.acquire("fw", 30s);
  REQUIRE(holder.ok());

  constexpr int kWaiters = 20;
  std::mutex mutex;
  std::condition_variable all_done;
  int granted = 0, answered = 0;
  for (int i = 0; i < kWaiters; ++i) {
    t.engine().acquire(AcquireRequest{"fw", 5s, 8s, {}}, [&](Result<Lease> lease) {
      if (lease.ok()) {
        // Gone at once: the next waiter's turn.
        t.engine().release("fw", claim(*lease), [](const Result<bool>&) {});
      }
      std::lock_guard<std::mutex> lock(mutex);
      granted += lease.ok() ? 1 : 0;
      ++answered;
      all_done.notify_all();
    });
  }
  std::this_thread::sleep_for(300ms);  // every waiter made its first attempt (or queued behind)
  log_every_command(cluster, 0);
  std::this_thread::sleep_for(2500ms);  // past the 2 s cap on a waiter's sleep
  // The first waiter looked again (once, at the cap); the 19 behind it did not.
  CHECK(script_calls(cluster, 0, kAcquireLockScriptSha) <= 2);

  REQUIRE(t.release("fw", claim(holder)).ok());
  std::unique_lock<std::mutex> lock(mutex);
  REQUIRE(all_done.wait_for(lock, 10s, [&] { return answered == kWaiters; }));
  CHECK(granted == kWaiters);  // each woken in turn by the release before it
}
