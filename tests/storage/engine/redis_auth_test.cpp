// Lock nodes and the token master behind Redis passwords and ACL users (#16): every connection —
// commands, release subscriptions, the token master's — authenticates, and a wrong or missing
// password is refused with Redis's reason, never by echoing a secret.
#include <catch2/catch.hpp>
#include <future>
#include <thread>

#include "engine_under_test.h"
#include "fencelock/storage/redis_token_source.h"
#include "io_thread.h"
#include "redis_server.h"
#include "sync_redis.h"
#include "temp_dir.h"

using namespace fencelock::storage;
using namespace fencelock::testing;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kPassword = "pa ss:w@rd";  // spaces and separators travel as one argument

// Turns on requirepass on every node and adds an ACL user "locker".
void require_password(RedisCluster& cluster) {
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    SyncRedis node(cluster.node(i).port());
    REQUIRE(node.command({"CONFIG", "SET", "requirepass", kPassword}).kind ==
            SyncReply::Kind::kStatus);
    REQUIRE(node.command({"AUTH", kPassword}).kind == SyncReply::Kind::kStatus);
    REQUIRE(node.command({"ACL", "SETUSER", "locker", "on", ">locker-secret", "~*", "&*", "+@all"})
                .kind == SyncReply::Kind::kStatus);
  }
}

}  // namespace

TEST_CASE("redis auth: lock nodes with a password refuse an engine without it, with the reason",
          "[storage][redis]") {
  RedisCluster cluster(3);
  require_password(cluster);
  EngineUnderTest t(engine_options_for(cluster), nullptr, nullptr, /*wait_for_nodes=*/false);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(t.engine().voting_nodes() == 0);
  CHECK(t.acquire("x", std::chrono::seconds(1)).error().code == ErrorCode::kUnavailable);
}

TEST_CASE("redis auth: with the password or an ACL user, grants, releases and wake-ups work",
          "[storage][redis]") {
  RedisCluster cluster(3);
  require_password(cluster);
  const bool acl_user = GENERATE(false, true);
  auto options = engine_options_for(cluster);
  options.credentials =
      acl_user ? RedisCredentials{"locker", "locker-secret"} : RedisCredentials{"", kPassword};
  options.retry_delay = std::chrono::seconds(3);  // a waiter granted sooner was woken by pub/sub
  options.retry_jitter = std::chrono::milliseconds(0);
  EngineUnderTest a(options);
  EngineUnderTest b(options);
  auto held = a.acquire("shared", std::chrono::seconds(30));
  REQUIRE(held.ok());
  auto waiting = std::async(std::launch::async, [&] {
    return b.acquire("shared", std::chrono::seconds(5), std::chrono::seconds(10));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // b is refused and sleeps
  const auto released_at = Clock::now();
  REQUIRE(a.release("shared", claim(held)).value());
  const auto granted = waiting.get();
  REQUIRE(granted.ok());
  CHECK(Clock::now() - released_at < std::chrono::milliseconds(1500));  // woken, not retried
  CHECK(b.release("shared", claim(granted)).value());
}

TEST_CASE("redis auth: the token master with a password — a wrong one is refused at start",
          "[storage][redis]") {
  TempDir master_dir;
  RedisServer master(master_dir.path() / "master", Persistence::kAofAlways);
  master.start();
  {
    SyncRedis node(master.port());
    REQUIRE(node.command({"CONFIG", "SET", "requirepass", kPassword}).kind ==
            SyncReply::Kind::kStatus);
  }
  TempDir dir;
  IoThread io;
  RedisTokenOptions options;
  options.master = parse_node_address(master.address()).value();
  options.epoch_file = dir.path() / "epoch";
  options.credentials = {"", "wrong"};
  const auto refused = RedisTokenSource::create(io.executor(), options);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Catch::Contains("refused AUTH"));
  CHECK(refused.error().message.find("wrong") == std::string::npos);
  options.credentials = {"", kPassword};
  auto source = RedisTokenSource::create(io.executor(), options);
  REQUIRE(source.ok());
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (source.value()->epoch() < 0 && Clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  REQUIRE(source.value()->epoch() >= 0);
  std::promise<Result<std::uint64_t>> drawn;
  source.value()->next("n", [&](Result<std::uint64_t> token) { drawn.set_value(token); });
  CHECK(drawn.get_future().get().ok());
  source.value()->stop();
}
