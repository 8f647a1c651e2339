// The revoke scripts (lua_revoke_scripts.h) on a real redis-server: a failed revoke's cleanup puts
// back what it overwrote — through a chain of revokes, with the time it had left and the marks
// added since — and a granted revoke's settling gives the key the revoker's own ttl.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/lua_revoke_scripts.h"
#include "redis_cluster.h"
#include "sync_redis.h"

using namespace fencelock::storage;
using namespace fencelock::testing;
using namespace std::chrono_literals;

namespace {

constexpr std::string_view kKey = "fencelock:lock:job";
constexpr std::string_view kFence = "fencelock:lock:job#fence";

// A lease value (48 hex digits), and the saved key of a revoke by it.
std::string lease(char c) {
  return std::string(48, c);
}
std::string saved_key(const std::string& by) {
  return std::string(kKey) + "#revoked:" + by.substr(0, 16);
}

// kRevokeLockScript by lease `by` with `token` and `ttl_ms`; its answer.
SyncReply revoke(SyncRedis& node, const std::string& by, const std::string& token,
                 const std::string& ttl_ms) {
  return node.command({"EVAL", kRevokeLockScript, "3", kKey, kFence, saved_key(by),
                       by + ":" + token + ":", ttl_ms, "", token});
}
std::int64_t undo(SyncRedis& node, const std::string& by) {
  return node.command({"EVAL", kUndoRevokeScript, "2", kKey, saved_key(by), by}).integer;
}
void settle(SyncRedis& node, const std::string& by, const std::string& ms) {
  node.command({"EVAL", kSettleRevokeScript, "2", kKey, saved_key(by), by, ms});
}
std::int64_t pttl(SyncRedis& node, std::string_view key) {
  return node.command({"PTTL", key}).integer;
}

}  // namespace

TEST_CASE("a failed revoke's cleanup puts back what the revoke overwrote", "[storage][redis]") {
  RedisCluster cluster(1);
  SyncRedis node(cluster.node(0).port());
  const std::string holder = lease('a') + ":4:";
  const std::string r = lease('b');
  const std::string b = lease('c');
  node.command({"SET", kKey, holder + "#e1", "PX", "60000"});

  REQUIRE(revoke(node, r, "5", "1000").integer == 1);
  // The revoker's value outlives the one it overwrote, and keeps its mark.
  CHECK(node.get(kKey) == r + ":5:#e1");
  CHECK(pttl(node, kKey) > 59000);
  CHECK(node.get(saved_key(r)) == "u" + holder + "#e1");
  CHECK(node.get(kFence) == "5");

  SECTION("with its time left and the marks added since") {
    node.command({"SET", kKey, r + ":5:#*", "KEEPTTL"});  // a waiter of another engine marked it
    CHECK(undo(node, r) == 1);
    CHECK(node.get(kKey) == holder + "#*");
    CHECK(pttl(node, kKey) > 58000);
    CHECK(pttl(node, kKey) <= 60000);
    CHECK_FALSE(node.get(saved_key(r)).has_value());
    CHECK(node.get(kFence) == "5");  // a fence never goes back
  }
  SECTION("a later revoke's cleanup goes on past an earlier failed one") {
    REQUIRE(revoke(node, b, "6", "1000").integer == 1);
    CHECK(undo(node, r) == 0);  // its value is no longer there: it leaves the key alone
    CHECK(node.get(kKey) == b + ":6:#e1");
    CHECK(node.get(saved_key(r)) == "x" + holder + "#e1");
    CHECK(undo(node, b) == 1);
    CHECK(node.get(kKey) == holder + "#e1");
    CHECK(node.count_keys(std::string(kKey) + "#revoked:*") == 0);
  }
  SECTION("a later revoke's cleanup first puts back a revoke still in flight") {
    REQUIRE(revoke(node, b, "6", "1000").integer == 1);
    CHECK(undo(node, b) == 1);
    CHECK(node.get(kKey) == r + ":5:#e1");
    CHECK(undo(node, r) == 1);
    CHECK(node.get(kKey) == holder + "#e1");
  }
  SECTION("a granted revoke settles to its own ttl, and a later failed revoke puts it back") {
    settle(node, r, "900");
    CHECK(pttl(node, kKey) <= 900);
    CHECK_FALSE(node.get(saved_key(r)).has_value());
    REQUIRE(revoke(node, b, "6", "100").integer == 1);
    CHECK(pttl(node, kKey) > 100);  // b's value outlives r's
    CHECK(undo(node, b) == 1);
    CHECK(node.get(kKey) == r + ":5:#e1");
    CHECK(pttl(node, kKey) <= 900);
  }
  SECTION("settling leaves another lease's key alone") {
    REQUIRE(revoke(node, b, "6", "1000").integer == 1);
    settle(node, r, "900");
    CHECK(pttl(node, kKey) > 58000);
    CHECK(node.get(kKey) == b + ":6:#e1");
  }
}

TEST_CASE("a failed revoke's cleanup deletes when nothing was held or its time is up",
          "[storage][redis]") {
  RedisCluster cluster(1);
  SyncRedis node(cluster.node(0).port());
  const std::string r = lease('b');
  SECTION("a free key") {
    REQUIRE(revoke(node, r, "5", "10000").integer == 1);
    CHECK_FALSE(node.get(saved_key(r)).has_value());
    CHECK(undo(node, r) == 1);
    CHECK_FALSE(node.get(kKey).has_value());
  }
  SECTION("a lease that ended meanwhile") {
    node.command({"SET", kKey, lease('a') + ":4:", "PX", "50"});
    REQUIRE(revoke(node, r, "5", "10000").integer == 1);
    std::this_thread::sleep_for(100ms);
    CHECK(undo(node, r) == 1);
    CHECK_FALSE(node.get(kKey).has_value());
  }
  SECTION("below the fence nothing is written") {
    node.command({"SET", kFence, "7"});
    node.command({"SET", kKey, lease('a') + ":7:", "PX", "60000"});
    CHECK(revoke(node, r, "5", "10000").elements.size() == 2);
    CHECK(node.get(kKey) == lease('a') + ":7:");
    CHECK_FALSE(node.get(saved_key(r)).has_value());
  }
}

// Review of the cleanup: a walk limited to 16 saved keys deleted the lock key after them. With 17
// failed revokes stacked on a node (each overwrote the one before; the first 16 cleanups found a
// later revoke's value and flagged 'x'), the holder's lease was gone on that node.
TEST_CASE("a chain of 17 failed revokes gives the holder's lease back, never deletes it",
          "[storage][redis]") {
  RedisCluster cluster(1);
  SyncRedis node(cluster.node(0).port());
  const std::string holder = lease('a') + ":4:";
  node.command({"SET", kKey, holder, "PX", "60000"});
  constexpr std::size_t kRevokes = 17;
  std::vector<std::string> revokers;
  for (std::size_t i = 0; i < kRevokes; ++i) {
    // 48 hex digits, a distinct lease id (first 16: decimal digits are hex digits) per revoke.
    std::string id = std::to_string(1000 + i);
    id.insert(0, 16 - id.size(), '0');
    revokers.push_back(id + std::string(32, 'e'));
    REQUIRE(revoke(node, revokers.back(), std::to_string(5 + i), "1000").integer == 1);
  }
  // Every revoke fails; the cleanups of all but the top one find a later revoke's value.
  for (std::size_t i = 0; i + 1 < kRevokes; ++i) CHECK(undo(node, revokers[i]) == 0);
  CHECK(undo(node, revokers.back()) == 1);
  const auto value = node.get(kKey);
  REQUIRE(value.has_value());
  CHECK(*value == holder);
  CHECK(pttl(node, kKey) > 50000);
}

// Review of the cleanup: a failed revoke of a free key saved nothing, so its cleanup — finding a
// later revoke's value — had no saved key to flag 'x'; the later revoke's cleanup then put the
// failed revoke's value back, and a lease nobody held kept the name for its whole ttl. Now the
// first cleanup leaves a bare 'x'.
TEST_CASE("a failed revoke's cleanup never puts back another failed revoke's value",
          "[storage][redis]") {
  RedisCluster cluster(1);
  SyncRedis node(cluster.node(0).port());
  const std::string r = lease('b');
  const std::string b = lease('c');
  REQUIRE(revoke(node, r, "5", "30000").integer == 1);  // the name was free
  REQUIRE(revoke(node, b, "6", "1000").integer == 1);
  CHECK(undo(node, r) == 0);  // r failed: its value is under b's
  CHECK(undo(node, b) == 1);  // b failed
  // Both revokes failed: nothing is held.
  CHECK_FALSE(node.get(kKey).has_value());
  CHECK(pttl(node, kKey) < 0);
}
