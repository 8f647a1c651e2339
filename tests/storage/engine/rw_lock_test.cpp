// Read/write locks (LockEngine::acquire_rw) on real redis-servers: readers share, a writer
// excludes everyone, a waiting writer keeps new readers out (through any engine), every grant has a
// token and a writer's is above every grant's before it, extend and release hold only for the mode
// granted, and the status shows what a quorum holds.
#include <algorithm>
#include <catch2/catch.hpp>
#include <future>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "engine/lua_rw_scripts.h"
#include "engine_calls.h"
#include "engine_under_test.h"
#include "sync_redis.h"
#include "temp_dir.h"

using namespace fencelock::storage;
using namespace fencelock::testing;
using Clock = std::chrono::steady_clock;

namespace {

Result<Lease> acquire_rw(EngineUnderTest& t, const std::string& name, RwMode mode,
                         std::chrono::milliseconds ttl, std::chrono::milliseconds wait = 0ms) {
  return await<Lease>([&](auto done) {
    t.engine().acquire_rw(RwLockRequest{name, mode, ttl, wait, {}}, std::move(done));
  });
}

// An acquire_rw answered later: the future is ready once it is.
std::future<Result<Lease>> start_rw(EngineUnderTest& t, const std::string& name, RwMode mode,
                                    std::chrono::milliseconds ttl, std::chrono::milliseconds wait) {
  auto promise = std::make_shared<std::promise<Result<Lease>>>();
  auto answer = promise->get_future();
  t.engine().acquire_rw(RwLockRequest{name, mode, ttl, wait, {}},
                        [promise](Result<Lease> lease) { promise->set_value(std::move(lease)); });
  return answer;
}

LeaseClaim claim_of(const Lease& lease) {
  return {lease.token, lease.proof, {}};
}

Result<bool> release_rw(EngineUnderTest& t, const Lease& lease, RwMode mode) {
  return await<bool>([&](auto done) {
    t.engine().release_rw(lease.name, mode, claim_of(lease), std::move(done));
  });
}

Result<Extension> extend_rw(EngineUnderTest& t, const Lease& lease, RwMode mode,
                            std::chrono::milliseconds ttl) {
  return await<Extension>([&](auto done) {
    t.engine().extend_rw(lease.name, mode, claim_of(lease), ttl, std::move(done));
  });
}

Result<RwLockStatus> inspect_rw(EngineUnderTest& t, const std::string& name) {
  return await<RwLockStatus>([&](auto done) { t.engine().inspect_rw(name, std::move(done)); });
}

bool ready(std::future<Result<Lease>>& answer, std::chrono::milliseconds within) {
  return answer.wait_for(within) == std::future_status::ready;
}

}  // namespace

TEST_CASE("readers share a read/write lock, and a writer waits for all, with a larger token",
          "[storage][redis][rwlock]") {
  RedisCluster cluster(3);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));

  std::vector<Lease> readers;
  for (int i = 0; i < 3; ++i) {
    auto reader = acquire_rw(t, "doc", RwMode::kRead, 30s);
    REQUIRE(reader.ok());
    readers.push_back(*reader);
  }
  CHECK(readers[0].token < readers[1].token);
  CHECK(readers[1].token < readers[2].token);
  auto refused = acquire_rw(t, "doc", RwMode::kWrite, 30s);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::kLocked);

  auto writer = start_rw(t, "doc", RwMode::kWrite, 30s, 20s);
  for (std::size_t i = 0; i < readers.size(); ++i) {
    CHECK_FALSE(ready(writer, 100ms));
    CHECK(said_yes(release_rw(t, readers[i], RwMode::kRead)));
  }
  REQUIRE(ready(writer, 5s));  // woken by the last release, not by an expiry 30 s away
  auto granted = writer.get();
  REQUIRE(granted.ok());
  CHECK(granted->token > readers.back().token);

  auto reader = acquire_rw(t, "doc", RwMode::kRead, 30s);
  REQUIRE_FALSE(reader.ok());
  CHECK(reader.error().code == ErrorCode::kLocked);
  CHECK(said_yes(release_rw(t, *granted, RwMode::kWrite)));
  auto after = acquire_rw(t, "doc", RwMode::kRead, 30s);
  REQUIRE(after.ok());
  CHECK(after->token > granted->token);
}

TEST_CASE("a waiting writer keeps new readers out, through any engine, and they follow it",
          "[storage][redis][rwlock]") {
  RedisCluster cluster(3);
  TempDir dir;
  auto tokens = tokens_in(dir);
  EngineUnderTest a(engine_options_for(cluster), tokens);
  EngineUnderTest b(engine_options_for(cluster), tokens);

  auto first = acquire_rw(a, "report", RwMode::kRead, 30s);
  REQUIRE(first.ok());
  auto writer = start_rw(a, "report", RwMode::kWrite, 30s, 20s);
  CHECK_FALSE(ready(writer, 200ms));  // refused once: it now waits, and says so on the nodes

  auto barging = acquire_rw(b, "report", RwMode::kRead, 30s);
  REQUIRE_FALSE(barging.ok());
  CHECK(barging.error().code == ErrorCode::kLocked);
  auto status = inspect_rw(b, "report");
  REQUIRE(status.ok());
  CHECK(status->writer_waiting);
  REQUIRE(status->grants.size() == 1);
  CHECK(status->grants.front().mode == RwMode::kRead);

  auto queued = start_rw(b, "report", RwMode::kRead, 30s, 20s);
  CHECK(said_yes(release_rw(a, *first, RwMode::kRead)));
  REQUIRE(ready(writer, 5s));
  auto granted = writer.get();
  REQUIRE(granted.ok());
  CHECK_FALSE(ready(queued, 200ms));
  CHECK(said_yes(release_rw(a, *granted, RwMode::kWrite)));
  REQUIRE(ready(queued, 5s));
  auto follower = queued.get();
  REQUIRE(follower.ok());
  CHECK(follower->token > granted->token);
}

TEST_CASE("a read/write lock's extend and release hold only for the mode it was granted with",
          "[storage][redis][rwlock]") {
  RedisCluster cluster(3);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));

  auto reader = acquire_rw(t, "mode", RwMode::kRead, 2s);
  REQUIRE(reader.ok());
  auto as_writer = extend_rw(t, *reader, RwMode::kWrite, 5s);
  REQUIRE_FALSE(as_writer.ok());
  CHECK(as_writer.error().code == ErrorCode::kInvalidArgument);
  CHECK(release_rw(t, *reader, RwMode::kWrite).error().code == ErrorCode::kInvalidArgument);
  // Not the lock of the same name either.
  auto as_lock = t.release("mode", claim_of(*reader));
  REQUIRE(as_lock.ok());
  CHECK_FALSE(*as_lock);

  auto extended = extend_rw(t, *reader, RwMode::kRead, 20s);
  REQUIRE(extended.ok());
  CHECK(extended->validity > 15s);
  // On every node the grant's key lives at least 20 s now, and the state key no shorter.
  const std::string lease_key = "fencelock:lock:mode#rw:" + reader->proof.substr(0, 16);
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    SyncRedis node(cluster.node(i).port());
    const auto lease_ttl = node.command({"PTTL", lease_key}).integer;
    CHECK(lease_ttl > 15000);
    CHECK(node.command({"PTTL", "fencelock:lock:mode#rw"}).integer >= lease_ttl - 100);
  }
  CHECK(said_yes(release_rw(t, *reader, RwMode::kRead)));
  CHECK_FALSE(*release_rw(t, *reader, RwMode::kRead));
  auto status = inspect_rw(t, "mode");
  REQUIRE(status.ok());
  CHECK(status->grants.empty());
  CHECK_FALSE(status->writer_waiting);
}

TEST_CASE("an expired read lets a waiting writer in, and a lock of the same name is apart",
          "[storage][redis][rwlock]") {
  RedisCluster cluster(3);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));

  auto lock = t.acquire("shared-name", 30s);
  REQUIRE(lock.ok());
  auto reader = acquire_rw(t, "shared-name", RwMode::kRead, 300ms);
  REQUIRE(reader.ok());
  CHECK(reader->token > lock->token);  // one token order for every grant of the name
  const auto asked = Clock::now();
  auto writer = acquire_rw(t, "shared-name", RwMode::kWrite, 30s, 10s);
  REQUIRE(writer.ok());
  CHECK(Clock::now() - asked >= 200ms);
  CHECK(Clock::now() - asked < 5s);
  CHECK(writer->token > reader->token);
  auto status = inspect_rw(t, "shared-name");
  REQUIRE(status.ok());
  REQUIRE(status->grants.size() == 1);
  CHECK(status->grants.front().mode == RwMode::kWrite);
  CHECK(status->grants.front().token == writer->token);
  CHECK(t.inspect("shared-name")->token == lock->token);
}

TEST_CASE("readers of two engines at once all get in, each with its own token",
          "[storage][redis][rwlock]") {
  RedisCluster cluster(3);
  TempDir dir;
  auto tokens = tokens_in(dir);
  EngineUnderTest a(engine_options_for(cluster), tokens);
  EngineUnderTest b(engine_options_for(cluster), tokens);
  std::vector<std::future<Result<Lease>>> answers;
  for (int i = 0; i < 20; ++i)
    answers.push_back(start_rw(i % 2 == 0 ? a : b, "many", RwMode::kRead, 30s, 5s));
  std::set<std::uint64_t> tokens_seen;
  for (auto& answer : answers) {
    REQUIRE(ready(answer, 10s));
    auto lease = answer.get();
    REQUIRE(lease.ok());
    tokens_seen.insert(lease->token);
  }
  CHECK(tokens_seen.size() == 20);
  auto status = inspect_rw(a, "many");
  REQUIRE(status.ok());
  CHECK(status->grants.size() == 20);
  CHECK(acquire_rw(b, "many", RwMode::kWrite, 30s).error().code == ErrorCode::kLocked);
}

TEST_CASE("a writer that stops waiting, or is granted, leaves no writer-waiting key behind",
          "[storage][redis][rwlock]") {
  RedisCluster cluster(3);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));
  const std::string writer_key = "fencelock:lock:gone#rw-writer";
  const auto writer_key_left = [&] {
    std::size_t nodes = 0;
    for (std::size_t i = 0; i < cluster.size(); ++i)
      nodes += SyncRedis(cluster.node(i).port()).get(writer_key).has_value() ? 1U : 0U;
    return nodes;
  };

  // Its client went away: readers need not wait out the writer's wait.
  auto reader = acquire_rw(t, "gone", RwMode::kRead, 30s);
  REQUIRE(reader.ok());
  auto promise = std::make_shared<std::promise<Result<Lease>>>();
  auto answer = promise->get_future();
  AcquireTicket ticket = t.engine().acquire_rw(
      RwLockRequest{"gone", RwMode::kWrite, 30s, 30s, {}},
      [promise](Result<Lease> lease) { promise->set_value(std::move(lease)); });
  std::this_thread::sleep_for(300ms);
  CHECK(writer_key_left() == cluster.size());  // it waits, and keeps new readers out
  ticket.cancel();
  REQUIRE(answer.wait_for(5s) == std::future_status::ready);
  CHECK(answer.get().error().code == ErrorCode::kCancelled);
  t.wait_until([&] { return writer_key_left() == 0; }, 2s);
  auto follower = acquire_rw(t, "gone", RwMode::kRead, 30s);
  REQUIRE(follower.ok());

  // Granted over a leftover read grant on one node (which refused it and took the key there):
  // once granted, the key goes from that node too, so readers come in after its release even
  // with another node down.
  SyncRedis node2(cluster.node(2).port());
  node2.command({"HSET", "fencelock:lock:left#rw", "0123456789abcdef", "r"});
  node2.command({"SET", "fencelock:lock:left#rw:0123456789abcdef", "x", "PX", "20000"});
  auto writer = acquire_rw(t, "left", RwMode::kWrite, 30s, 10s);
  REQUIRE(writer.ok());
  t.wait_until([&] { return !node2.get("fencelock:lock:left#rw-writer").has_value(); }, 2s);
  CHECK(said_yes(release_rw(t, *writer, RwMode::kWrite)));
  cluster.node(0).pause();
  auto after = acquire_rw(t, "left", RwMode::kRead, 30s);
  cluster.node(0).resume();
  CHECK(after.ok());
}

TEST_CASE("a read/write lock holds at most kMaxRwGrants grants at a time",
          "[storage][redis][rwlock]") {
  RedisCluster cluster(3);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));
  std::vector<std::future<Result<Lease>>> answers;
  for (std::size_t i = 0; i < kMaxRwGrants; ++i)
    answers.push_back(start_rw(t, "crowd", RwMode::kRead, 60s, 10s));
  std::vector<Lease> readers;
  for (auto& answer : answers) {
    REQUIRE(ready(answer, 20s));
    auto lease = answer.get();
    REQUIRE(lease.ok());
    readers.push_back(*lease);
  }
  auto one_more = acquire_rw(t, "crowd", RwMode::kRead, 60s);
  REQUIRE_FALSE(one_more.ok());
  CHECK(one_more.error().code == ErrorCode::kLocked);
  CHECK(said_yes(release_rw(t, readers.front(), RwMode::kRead)));
  CHECK(acquire_rw(t, "crowd", RwMode::kRead, 60s).ok());
}
