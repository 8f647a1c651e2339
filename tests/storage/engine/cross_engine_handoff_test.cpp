// Hand-off between engines that share lock nodes (two fencelockd instances): a release through one
// engine is announced over Redis pub/sub and wakes the waiters of the other at once, instead of
// leaving them to sleep out their retry delay.
#include <atomic>
#include <catch2/catch.hpp>
#include <future>
#include <string>
#include <thread>

#include "engine/lua_scripts.h"
#include "engine_under_test.h"
#include "fencelock/storage/lease_secret.h"
#include "sync_redis.h"

using namespace fencelock::storage;
using namespace fencelock::testing;
using Clock = std::chrono::steady_clock;

namespace {

const std::string kChannel = "fencelock:released";

// A retry delay no waiter in these tests may sleep out: being granted well before it proves that
// the waiter was woken by the release.
EngineOptions slow_retry_options(RedisCluster& cluster) {
  auto options = engine_options_for(cluster);
  options.retry_delay = 3s;
  options.retry_jitter = 0ms;
  return options;
}

std::int64_t subscribers_on(RedisCluster& cluster, std::size_t node) {
  const SyncReply reply =
      SyncRedis(cluster.node(node).port()).command({"PUBSUB", "NUMSUB", kChannel});
  if (reply.kind != SyncReply::Kind::kArray || reply.elements.size() != 2) return -1;
  return reply.elements[1].integer;
}

void wait_for_subscribers(RedisCluster& cluster, std::int64_t count) {
  const auto deadline = Clock::now() + 10s;
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    while (subscribers_on(cluster, i) != count) {
      if (Clock::now() > deadline) FAIL("engines did not subscribe on node " << i);
      std::this_thread::sleep_for(5ms);
    }
  }
}

// The holder's value on a node, as the waiters' marks left it ("<value>#<mark>").
std::string value_on(RedisCluster& cluster, std::size_t node, const std::string& name) {
  return SyncRedis(cluster.node(node).port()).get("fencelock:lock:" + name).value_or("");
}

// Until a quorum of nodes carry a waiter's mark on the holder's value: the waiter has been refused
// and sleeps. (Not every node: under load the holder may hold only a quorum, and a free node
// grants the waiter's SET instead.)
void wait_for_mark(RedisCluster& cluster, const std::string& name) {
  const auto deadline = Clock::now() + 10s;
  const std::size_t quorum = cluster.size() / 2 + 1;
  for (;;) {
    std::size_t marked = 0;
    for (std::size_t i = 0; i < cluster.size(); ++i) {
      if (value_on(cluster, i, name).find('#') != std::string::npos) ++marked;
    }
    if (marked >= quorum) return;
    if (Clock::now() > deadline) FAIL("a waiter's mark is on only " << marked << " nodes");
    std::this_thread::sleep_for(5ms);
  }
}

struct Grant {
  Result<Lease> lease;
  Clock::time_point at;
};

std::future<Grant> acquire_in_background(EngineUnderTest& engine, const std::string& name) {
  return std::async(std::launch::async, [&engine, name] {
    auto lease = engine.acquire(name, 30s, /*wait=*/10s);
    return Grant{std::move(lease), Clock::now()};
  });
}

// `holder_engine` holds `name`; a waiter on `waiter_engine` must get it as soon as it is released.
void expect_release_wakes_waiter(RedisCluster& cluster, EngineUnderTest& holder_engine,
                                 EngineUnderTest& waiter_engine, const std::string& name) {
  auto holder = holder_engine.acquire(name, 30s);
  REQUIRE(holder.ok());
  auto waiter = acquire_in_background(waiter_engine, name);
  wait_for_mark(cluster, name);  // the waiter was refused once and now sleeps
  const auto released_at = Clock::now();
  REQUIRE(holder_engine.release(name, claim(holder)).value());
  const Grant grant = waiter.get();
  REQUIRE(grant.lease.ok());
  CHECK(grant.at - released_at < 1500ms);
  CHECK(waiter_engine.release(name, claim(grant.lease)).value());
}

}  // namespace

TEST_CASE("a release through another engine wakes a waiter at once", "[storage][redis]") {
  RedisCluster cluster(5);
  EngineUnderTest a(slow_retry_options(cluster));
  EngineUnderTest b(slow_retry_options(cluster));
  wait_for_subscribers(cluster, 2);
  // A name each way keeps the two hand-offs independent of each other.
  expect_release_wakes_waiter(cluster, a, b, "a-to-b");
  expect_release_wakes_waiter(cluster, b, a, "b-to-a");
}

TEST_CASE("refused attempts announce nothing, even when they took free nodes", "[storage][redis]") {
  // Held on a bare quorum: every attempt wins the two free nodes, is refused by the other three,
  // and cleans up the two. Announcing those cleanups as releases would wake the other engine's
  // waiter into the same refusal at once, and so on for as long as the lock is held.
  RedisCluster cluster(5);
  EngineUnderTest a(engine_options_for(cluster));
  EngineUnderTest b(engine_options_for(cluster));
  wait_for_subscribers(cluster, 2);
  for (std::size_t i = 0; i < 3; ++i) {
    SyncRedis(cluster.node(i).port())
        .command({"SET", "fencelock:lock:split", "theirs", "PX", "60000"});
  }
  SyncRedis listener(cluster.node(3).port(), 300ms);
  REQUIRE(listener.command({"SUBSCRIBE", kChannel}).kind == SyncReply::Kind::kArray);
  auto on_a = std::async(std::launch::async, [&] { return a.acquire("split", 10s, /*wait=*/1s); });
  auto on_b = std::async(std::launch::async, [&] { return b.acquire("split", 10s, /*wait=*/1s); });
  CHECK(on_a.get().error().code == ErrorCode::kLocked);
  CHECK(on_b.get().error().code == ErrorCode::kLocked);
  // A cleanup of a value another engine's waiter marked meanwhile is announced for watches only
  // (the cleanup tag, which no waiter acts on); never as a release.
  for (auto heard = listener.receive(); heard.answered(); heard = listener.receive()) {
    REQUIRE(heard.elements.size() == 3);
    CHECK(heard.elements[2].text.starts_with(kCleanupTagEngine));
  }
  // Each waiter retries every 200 ± 100 ms: a few attempts each, not a storm.
  const std::string stats =
      SyncRedis(cluster.node(3).port()).info_field("commandstats", "cmdstat_evalsha");
  const auto calls = std::stoll(stats.substr(stats.find('=') + 1));
  CHECK(calls < 50);
}

TEST_CASE("a release is announced only when another engine's waiter marked the holder",
          "[storage][redis]") {
  RedisCluster cluster(3);
  EngineUnderTest a(slow_retry_options(cluster));
  EngineUnderTest b(slow_retry_options(cluster));
  wait_for_subscribers(cluster, 2);

  // No waiter anywhere, then a waiter on the releasing engine itself: nothing is published.
  SyncRedis quiet(cluster.node(0).port(), 500ms);
  REQUIRE(quiet.command({"SUBSCRIBE", kChannel}).kind == SyncReply::Kind::kArray);
  auto lease = a.acquire("solo", 30s);
  REQUIRE(lease.ok());
  REQUIRE(a.release("solo", claim(lease)).value());
  auto holder = a.acquire("solo", 30s);
  auto local_waiter = acquire_in_background(a, "solo");
  wait_for_mark(cluster, "solo");
  REQUIRE(a.release("solo", claim(holder)).value());
  const Grant local = local_waiter.get();
  REQUIRE(local.lease.ok());
  CHECK(quiet.receive().answered() == false);

  // A waiter on another engine: the release is announced as "<engine id><release id> <key>"
  // (16 hex digits each), no secret.
  SyncRedis listener(cluster.node(0).port(), 5000ms);
  REQUIRE(listener.command({"SUBSCRIBE", kChannel}).kind == SyncReply::Kind::kArray);
  auto remote_waiter = acquire_in_background(b, "solo");
  const auto marked_deadline = Clock::now() + 10s;
  while (value_on(cluster, 0, "solo").find('#') ==
         std::string::npos) {  // B's mark, on the node we hear
    REQUIRE(Clock::now() < marked_deadline);
    std::this_thread::sleep_for(5ms);
  }
  REQUIRE(a.release("solo", claim(local.lease)).value());
  const SyncReply message = listener.receive();
  REQUIRE(message.kind == SyncReply::Kind::kArray);
  REQUIRE(message.elements.size() == 3);
  CHECK(message.elements[0].text == "message");
  const std::string& text = message.elements[2].text;
  CHECK(text.size() == 32 + 1 + 19);
  CHECK(text.substr(32) == " fencelock:lock:solo");
  CHECK(text.find(local.lease->proof) == std::string::npos);
  const Grant remote = remote_waiter.get();
  CHECK(remote.lease.ok());
}

TEST_CASE("announcements resume after the subscriber connections are killed", "[storage][redis]") {
  RedisCluster cluster(3);
  EngineUnderTest a(slow_retry_options(cluster));
  EngineUnderTest b(slow_retry_options(cluster));
  wait_for_subscribers(cluster, 2);
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    SyncRedis(cluster.node(i).port()).command({"CLIENT", "KILL", "TYPE", "pubsub"});
  }
  wait_for_subscribers(cluster, 2);  // both engines reconnected and subscribed again
  expect_release_wakes_waiter(cluster, a, b, "again");
}

TEST_CASE(
    "a subscriber the server drops again at once reconnects a few times a second, not in a loop",
    "[storage][redis]") {
  // A subscription that lasts a moment is no healthy connection: the backoff paces it
  // (connection_cycle.h). Replaced at once, it reconnected some 2,400 times a second.
  RedisCluster cluster(1);
  EngineUnderTest a(slow_retry_options(cluster));
  wait_for_subscribers(cluster, 1);
  SyncRedis info(cluster.node(0).port());
  const auto connections = [&] {
    return std::stoll(info.info_field("stats", "total_connections_received"));
  };
  const auto before = connections();
  std::atomic<bool> done{false};
  std::thread killer([&] {
    SyncRedis redis(cluster.node(0).port());
    for (int i = 0; i < 4000 && !done; ++i) {  // bounded: 2 s at most, one kill a millisecond
      redis.command({"CLIENT", "KILL", "TYPE", "pubsub"});
      std::this_thread::sleep_for(1ms);
    }
  });
  std::this_thread::sleep_for(2s);
  done = true;
  killer.join();
  // About one connection per 50 ms backoff, its ±25 % jitter and the scheduling of a loaded
  // machine; the killer's own connection counts too.
  CHECK(connections() - before < 100);
  wait_for_subscribers(cluster, 1);  // and it subscribes again once left alone
}

TEST_CASE("a waiter's mark changes nothing for the holder: it still extends, shows and releases",
          "[storage][redis]") {
  RedisCluster cluster(3);
  EngineUnderTest a(slow_retry_options(cluster));
  EngineUnderTest b(slow_retry_options(cluster));
  auto holder = a.acquire("marked", 30s);
  REQUIRE(holder.ok());
  CHECK(b.acquire("marked", 30s, /*wait=*/100ms).error().code == ErrorCode::kLocked);
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    const std::string value = value_on(cluster, i, "marked");
    CHECK(value.starts_with(
        holder->proof.substr(0, kLeaseIdLength)));  // the lease id, then the secret
    // No token source, no holder: an empty tail (lease_value.h), then the waiter's mark.
    CHECK(value.substr(kLeaseValueLength, 4) == ":::#");
    CHECK(value.size() == kLeaseValueLength + 4 + 16);
  }
  auto status = b.inspect("marked");
  REQUIRE(status.ok());
  CHECK(status->held);
  CHECK(status->remaining > 25s);
  CHECK(a.extend("marked", claim(holder), 60s).ok());
  CHECK(SyncRedis(cluster.node(0).port()).command({"PTTL", "fencelock:lock:marked"}).integer >
        55'000);
  CHECK(b.release("marked", LeaseClaim{1, std::string(kLeaseProofLength, 'f'), {}}).value() ==
        false);  // a wrong proof
  CHECK(a.release("marked", claim(holder)).value());
  for (std::size_t i = 0; i < cluster.size(); ++i)
    CHECK(SyncRedis(cluster.node(i).port()).count_keys() == 0);
}
