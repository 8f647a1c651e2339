// Who a release wakes, against real redis-servers: a lock set's waiter sleeps until every name its
// refusal found held was released (a release of another of its names goes on to the waiters behind
// it), and a woken waiter that cannot use a name hands it on. Attempts are counted as the EVALSHA
// calls a node served.
#include <catch2/catch.hpp>
#include <string>
#include <thread>

#include "engine_under_test.h"
#include "sync_redis.h"

using namespace fencelock::storage;
using namespace fencelock::testing;
using Clock = std::chrono::steady_clock;

namespace {

Result<LockSetLease> acquire_set(EngineUnderTest& t, std::vector<std::string> names,
                                 std::chrono::milliseconds ttl, std::chrono::milliseconds wait) {
  return await<LockSetLease>([&](auto done) {
    t.engine().acquire_set(LockSetRequest{std::move(names), ttl, wait, {}}, std::move(done));
  });
}

std::int64_t evalsha_calls(RedisCluster& cluster, std::size_t node) {
  const std::string stats =
      SyncRedis(cluster.node(node).port()).info_field("commandstats", "cmdstat_evalsha");
  if (stats.empty()) return 0;
  return std::stoll(stats.substr(stats.find('=') + 1));
}

}  // namespace

TEST_CASE("a lock set's waiter sleeps through a release that leaves another of its names held",
          "[storage][redis]") {
  RedisCluster cluster(3);
  EngineUnderTest t(engine_options_for(cluster));
  auto a = t.acquire("ww-a", 20s);
  auto b = t.acquire("ww-b", 20s);
  REQUIRE(a.ok());
  REQUIRE(b.ok());

  Result<LockSetLease> set = make_error(ErrorCode::kInternal, "not run");
  Clock::time_point granted_at;
  std::thread waiter([&] {
    set = acquire_set(t, {"ww-a", "ww-b"}, 5s, 8s);
    granted_at = Clock::now();
  });
  std::this_thread::sleep_for(300ms);  // refused on both names; sleeps (2 s expiry-sleep cap)

  const auto calls_before = evalsha_calls(cluster, 0);
  REQUIRE(t.release("ww-a", claim(a)).ok());
  std::this_thread::sleep_for(300ms);
  // The release's own script only: the waiter knows ww-b still holds it back and did not try.
  CHECK(evalsha_calls(cluster, 0) - calls_before == 1);

  const auto released_b_at = Clock::now();
  REQUIRE(t.release("ww-b", claim(b)).ok());
  waiter.join();
  REQUIRE(set.ok());
  CHECK(granted_at - released_b_at < 500ms);  // woken by the last blocker's release
  CHECK(await<bool>([&](auto done) {
          t.engine().release_set(set->names, {set->tokens, set->proof, {}}, std::move(done));
        }).ok());
}
