// The harness itself: real redis-server processes come up, die, come back and always go away.
#include <catch2/catch.hpp>
#include <csignal>
#include <set>
#include <thread>

#include "redis_cluster.h"
#include "sync_redis.h"

using fencelock::testing::Persistence;
using fencelock::testing::RedisCluster;
using fencelock::testing::SyncRedis;

namespace {
bool process_exists(pid_t pid) {
  return pid > 0 && ::kill(pid, 0) == 0;
}
}  // namespace

TEST_CASE("a cluster of five nodes can lose two, get one back and pause another",
          "[support][redis]") {
  std::vector<pid_t> pids;
  std::filesystem::path dir;
  {
    RedisCluster cluster(5);
    dir = cluster.dir();
    REQUIRE(cluster.size() == 5);
    std::set<std::uint16_t> ports;
    for (std::size_t i = 0; i < cluster.size(); ++i) {
      pids.push_back(cluster.node(i).pid());
      ports.insert(cluster.node(i).port());
      CHECK(SyncRedis(cluster.node(i).port()).ping());
    }
    CHECK(ports.size() == 5);

    cluster.node(0).kill();
    cluster.node(1).kill();
    CHECK_FALSE(SyncRedis(cluster.node(0).port()).ping());
    CHECK_FALSE(SyncRedis(cluster.node(1).port()).ping());
    CHECK(SyncRedis(cluster.node(2).port()).ping());

    const std::uint16_t old_port = cluster.node(0).port();
    cluster.node(0).restart(/*keep_data=*/false);
    CHECK(cluster.node(0).port() == old_port);
    CHECK(SyncRedis(cluster.node(0).port()).ping());

    cluster.node(3).pause();
    CHECK_FALSE(SyncRedis(cluster.node(3).port(), std::chrono::milliseconds(100)).ping());
    cluster.node(3).resume();
    CHECK(SyncRedis(cluster.node(3).port()).ping());
    pids.push_back(cluster.node(0).pid());
  }
  for (const pid_t pid : pids) CHECK_FALSE(process_exists(pid));
  CHECK_FALSE(std::filesystem::exists(dir));
}

TEST_CASE("a restart changes the node's run_id and keeps or drops its data as asked",
          "[support][redis]") {
  SECTION("AOF with fsync always keeps acknowledged writes across kill -9") {
    RedisCluster cluster(1, Persistence::kAofAlways);
    SyncRedis before(cluster.node(0).port());
    const std::string run_id = before.info_field("server", "run_id");
    REQUIRE(before.command({"SET", "k", "v"}).text == "OK");
    cluster.node(0).restart(/*keep_data=*/true);
    SyncRedis after(cluster.node(0).port());
    CHECK(after.get("k") == std::optional<std::string>("v"));
    CHECK(after.info_field("server", "run_id") != run_id);
  }
  SECTION("a restart without data starts empty") {
    RedisCluster cluster(1, Persistence::kAofAlways);
    REQUIRE(SyncRedis(cluster.node(0).port()).command({"SET", "k", "v"}).text == "OK");
    cluster.node(0).restart(/*keep_data=*/false);
    CHECK(SyncRedis(cluster.node(0).port()).dbsize() == 0);
  }
  SECTION("no persistence loses everything on kill -9") {
    RedisCluster cluster(1, Persistence::kNone);
    REQUIRE(SyncRedis(cluster.node(0).port()).command({"SET", "k", "v"}).text == "OK");
    cluster.node(0).restart(/*keep_data=*/true);
    CHECK(SyncRedis(cluster.node(0).port()).dbsize() == 0);
  }
}

TEST_CASE("servers are stopped when a test throws", "[support][redis]") {
  pid_t pid = -1;
  try {
    RedisCluster cluster(1);
    pid = cluster.node(0).pid();
    cluster.node(0).pause();  // even a stopped process is killed
    throw std::runtime_error("test failure");
  } catch (const std::runtime_error&) {
  }
  CHECK_FALSE(process_exists(pid));
}
