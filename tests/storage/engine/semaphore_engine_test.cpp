// Counting semaphores in the Redlock engine against real redis-servers: at most N overlapping
// validity windows, the permit count check, tokens, wake-ups, extend and inspect.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <thread>

#include "engine_calls.h"
#include "engine_under_test.h"
#include "fencelock/storage/lease_secret.h"
#include "fencelock/storage/redlock_engine.h"
#include "fencelock/storage/sqlite_token_source.h"
#include "sync_redis.h"
#include "temp_dir.h"

using namespace fencelock::storage;
using namespace fencelock::testing;
using Clock = std::chrono::steady_clock;

TEST_CASE("16 clients of a semaphore of 3 never hold more than 3 overlapping validity windows",
          "[storage][redis]") {
  RedisCluster cluster(3);
  auto options = engine_options_for(cluster);
  EngineUnderTest e1(options), e2(options);
  constexpr int kClients = 16;
  constexpr int kRounds = 6;
  std::mutex mutex;
  std::vector<std::pair<Clock::time_point, Clock::time_point>> windows;
  std::atomic<int> failures{0};
  std::vector<std::thread> clients;
  const auto started = Clock::now();
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      EngineUnderTest& t = c % 2 == 0 ? e1 : e2;
      for (int round = 0; round < kRounds; ++round) {
        auto permit = acquire_permit(t, "pool", 3, 5s, 20s);
        if (!permit.ok()) {
          ++failures;
          continue;
        }
        // The holder may count on its permit from the grant until its validity ends — or until it
        // gives the permit back, if earlier. (Not from `started`: that is taken before the
        // attempt's requests leave, and a grant that follows a release of its slot may have sent
        // them a few µs before the previous holder called release: seen here as a 61 µs overlap
        // of two windows on one slot, though the nodes ran the release first.)
        const auto granted = Clock::now();
        CHECK(permit->slot < 3);
        std::this_thread::sleep_for(3ms);
        const auto ends = std::min(permit->valid_until(), Clock::now());
        {
          std::lock_guard<std::mutex> lock(mutex);
          windows.emplace_back(granted, ends);
        }
        if (auto r = release_permit(t, *permit); !r.ok() || !r.value()) ++failures;
      }
    });
  }
  for (auto& client : clients) client.join();
  CHECK(Clock::now() - started < 60s);
  CHECK(failures == 0);
  REQUIRE(windows.size() == kClients * kRounds);
  // The largest number of windows open at once: +1 at each start, -1 at each end (ends first).
  std::vector<std::pair<Clock::time_point, int>> events;
  for (const auto& [from, to] : windows) {
    events.emplace_back(from, +1);
    events.emplace_back(to, -1);
  }
  std::sort(events.begin(), events.end());
  int open = 0, most = 0;
  for (const auto& event : events) most = std::max(most, open += event.second);
  CHECK(most <= 3);
  CHECK(most >= 2);  // the clients did overlap: the check means something
  auto status = inspect_semaphore(e1, "pool");
  REQUIRE(status.ok());
  CHECK(status->held == 0);
  CHECK(status->permits == 0);
}

TEST_CASE("a permit count other than the live semaphore's is refused until it is released",
          "[storage][redis]") {
  RedisCluster cluster(3);
  EngineUnderTest t(engine_options_for(cluster));
  auto first = acquire_permit(t, "conns", 3, 10s);
  REQUIRE(first.ok());
  auto second = acquire_permit(t, "conns", 3, 10s);
  REQUIRE(second.ok());
  CHECK(second->slot != first->slot);

  const auto before = Clock::now();
  auto other = acquire_permit(t, "conns", 5, 10s, 3s);
  CHECK(Clock::now() - before < 1s);  // without waiting
  REQUIRE_FALSE(other.ok());
  CHECK(other.error().code == ErrorCode::kPermitsMismatch);
  CHECK(other.error().message.find(" 3 ") != std::string::npos);

  auto status = inspect_semaphore(t, "conns");
  REQUIRE(status.ok());
  CHECK(status->permits == 3);
  CHECK(status->held == 2);

  REQUIRE(release_permit(t, *first).value());
  CHECK(acquire_permit(t, "conns", 5, 10s).error().code == ErrorCode::kPermitsMismatch);
  REQUIRE(release_permit(t, *second).value());
  auto recreated = acquire_permit(t, "conns", 5, 10s);
  REQUIRE(recreated.ok());
  CHECK(recreated->permits == 5);
  CHECK(inspect_semaphore(t, "conns")->permits == 5);
}

TEST_CASE("permit tokens increase and a full semaphore is refused", "[storage][redis]") {
  RedisCluster cluster(3);
  TempDir dir;
  SqliteTokenOptions options;
  options.path = dir.path() / "tokens.db";
  EngineUnderTest t(engine_options_for(cluster), SqliteTokenSource::open(options).value());
  std::uint64_t last = 0;
  std::vector<Permit> held;
  for (int i = 0; i < 2; ++i) {
    auto permit = acquire_permit(t, "db", 2, 10s);
    REQUIRE(permit.ok());
    CHECK(permit->token > last);
    last = permit->token;
    held.push_back(*permit);
  }
  auto full = acquire_permit(t, "db", 2, 10s);
  REQUIRE_FALSE(full.ok());
  CHECK(full.error().code == ErrorCode::kLocked);
  // The lock of the same name draws from the same counter.
  auto lock = t.acquire("db", 1s);
  REQUIRE(lock.ok());
  CHECK(lock->token > last);
  last = lock->token;
  for (const auto& permit : held) REQUIRE(release_permit(t, permit).value());
  auto again = acquire_permit(t, "db", 2, 10s);
  REQUIRE(again.ok());
  CHECK(again->token > last);
}

TEST_CASE("a waiter of a full semaphore is woken by a release", "[storage][redis]") {
  RedisCluster cluster(3);
  auto options = engine_options_for(cluster);
  EngineUnderTest holder(options), waiter(options);
  auto a = acquire_permit(holder, "slots", 2, 30s);
  auto b = acquire_permit(holder, "slots", 2, 30s);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  std::atomic<bool> released{false};
  Clock::time_point released_at;
  std::thread thread([&] {
    std::this_thread::sleep_for(300ms);
    released_at = Clock::now();
    released = true;
    REQUIRE(release_permit(holder, *b).value());
  });
  auto third = acquire_permit(waiter, "slots", 2, 30s, 10s);
  const auto granted_at = Clock::now();
  thread.join();
  REQUIRE(third.ok());
  CHECK(released);
  CHECK(third->slot == b->slot);
  // Well before the 2 s the waiter sleeps on a holder whose ttl is long: the release woke it.
  CHECK(granted_at - released_at < 1s);
}

TEST_CASE("a permit's extend keeps the semaphore's count alive and never shortens",
          "[storage][redis]") {
  RedisCluster cluster(3);
  EngineUnderTest t(engine_options_for(cluster));
  auto permit = acquire_permit(t, "ext", 2, 2s);
  REQUIRE(permit.ok());
  auto extended = extend_permit(t, *permit, 20s);
  REQUIRE(extended.ok());
  CHECK(extended->token == permit->token);
  const std::string slot_key = "fencelock:lock:ext#permit:" + std::to_string(permit->slot);
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    SyncRedis redis(cluster.node(i).port());
    CHECK(redis.command({"PTTL", slot_key}).integer > 15000);
    CHECK(redis.command({"PTTL", "fencelock:lock:ext#permits"}).integer > 15000);
  }
  REQUIRE(extend_permit(t, *permit, 1s).ok());
  CHECK(SyncRedis(cluster.node(0).port()).command({"PTTL", slot_key}).integer > 15000);
  // Past the first ttl the count still stands.
  std::this_thread::sleep_for(2100ms);
  CHECK(acquire_permit(t, "ext", 3, 1s).error().code == ErrorCode::kPermitsMismatch);
  Permit altered = *permit;
  altered.token += 1;
  CHECK(extend_permit(t, altered, 5s).error().code == ErrorCode::kInvalidArgument);
  REQUIRE(release_permit(t, *permit).value());
  CHECK_FALSE(release_permit(t, *permit).value());
}

TEST_CASE("bad semaphore arguments are refused before any node is asked", "[storage][redis]") {
  RedisCluster cluster(1);
  EngineUnderTest t(engine_options_for(cluster));
  CHECK(acquire_permit(t, "s", 0, 1s).error().code == ErrorCode::kInvalidArgument);
  CHECK(acquire_permit(t, "s", 65, 1s).error().code == ErrorCode::kInvalidArgument);
  CHECK(acquire_permit(t, "bad name", 2, 1s).error().code == ErrorCode::kInvalidArgument);
  auto permit = acquire_permit(t, "s", 64, 1s);
  REQUIRE(permit.ok());
  Permit wrong_slot = *permit;
  wrong_slot.slot = 64;
  CHECK(release_permit(t, wrong_slot).error().code == ErrorCode::kInvalidArgument);
}
