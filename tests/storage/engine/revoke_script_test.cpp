// The revoke scripts (lua_revoke_scripts.h) on a real redis-server: a failed revoke's cleanup puts
// back what it overwrote — through a chain of revokes, with the time it had left and the marks
// added since — and a granted revoke's settling gives the key the revoker's own ttl.
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
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

// A lease value (48 hex digits).
std::string lease(char c) {
  return std::string(48, c);
}

// The token of the (one) revoke attempt each lease made, as revoke() recorded it.
std::map<std::string, std::string>& attempt_tokens() {
  static std::map<std::string, std::string> tokens;
  return tokens;
}
// The saved key of the revoke attempt by lease `by`.
std::string saved_key(const std::string& by) {
  return std::string(kKey) + "#revoked:" + by.substr(0, 16) + ":" + attempt_tokens()[by];
}

// kRevokeLockScript by lease `by` with `token` and `ttl_ms`; its answer.
SyncReply revoke(SyncRedis& node, const std::string& by, const std::string& token,
                 const std::string& ttl_ms) {
  attempt_tokens()[by] = token;
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

// Second review of the cleanup: a revoke's attempts all write the same lease value (a fenced
// attempt tries again with it and a new token). With one saved key per lease, the first attempt's
// cleanup left a flag that a second, granted attempt (on a free key, saving nothing) inherited; a
// later revoke overwrote it and failed, and its cleanup skipped the granted value as "flagged" —
// deleting the key, or putting back an older, shorter value. Now each attempt has its own saved
// key (lease id and token).
TEST_CASE("a granted revoke's value is never skipped by a later failed revoke's cleanup",
          "[storage][redis]") {
  RedisCluster cluster(1);
  SyncRedis node(cluster.node(0).port());
  const std::string r = lease('b');  // the revoke whose second attempt is granted
  const std::string l = lease('c');  // a concurrent revoke, granted
  const std::string m = lease('d');  // a later revoke that fails

  SECTION("first attempt fenced here: its cleanup leaves a bare flag that outlives the key") {
    REQUIRE(revoke(node, l, "6", "30000").integer == 1);          // L's draw reached the node first
    REQUIRE(revoke(node, r, "5", "10000").elements.size() == 2);  // R's attempt 1: {-3, 6}
    CHECK(undo(node, r) == 0);                                    // attempt 1 failed: cleanup
    CHECK(node.get(saved_key(r)) == "x");                         // for L's 30 s
    settle(node, l, "100");  // L was granted: its own (short) ttl; then its holder is done
  }
  SECTION("first attempt overwrote a lease: its cleanup flags 'x' + that lease") {
    node.command({"SET", kKey, lease('a') + ":4:", "PX", "3000"});
    REQUIRE(revoke(node, r, "5", "1000").integer == 1);  // attempt 1 overwrote the lease
    REQUIRE(revoke(node, l, "6", "1000").integer == 1);  // L overwrote attempt 1
    CHECK(undo(node, r) == 0);                           // attempt 1 failed (fenced elsewhere)
    settle(node, l, "100");                              // L granted
  }
  std::this_thread::sleep_for(300ms);
  REQUIRE_FALSE(node.get(kKey).has_value());    // L's lease ended: the name is free
  REQUIRE(node.get(saved_key(r)).has_value());  // ... but R's attempt-1 flag is still there

  // R's attempt 2 (same lease value, token 7) on the free key: granted, told ~30 s.
  REQUIRE(revoke(node, r, "7", "30000").integer == 1);
  // M overwrites it before R's settle reaches this node, and fails; its cleanup runs.
  REQUIRE(revoke(node, m, "8", "1000").integer == 1);
  CHECK(undo(node, m) == 1);
  settle(node, r, "29000");  // R's settle, late

  const auto value = node.get(kKey);
  CHECK(value == r + ":7:");        // the granted revoker's value ...
  CHECK(pttl(node, kKey) > 28000);  // ... for the time it was told
}

// Known, not fixed (liveness only; docs/architecture.md, "Revoke"): the flag a covered failed
// revoke F leaves ('x' + what F overwrote, KEEPTTL) lives only as long as what F overwrote, while
// the covering revoke's saved key holds F's value for F's own, longer ttl. Once the flag has
// expired, the covering revoke's failed cleanup puts F's value back, held by nobody. Hidden:
// `fencelock_storage_tests "[revoke-stale-restore]"`.
TEST_CASE("a failed revoke's value stays dead after the lease it overwrote ends",
          "[.][revoke-stale-restore]") {
  RedisCluster cluster(1);
  SyncRedis node(cluster.node(0).port());
  const std::string f = lease('b');
  const std::string l = lease('c');
  node.command({"SET", kKey, lease('a') + ":4:", "PX", "300"});  // a lease about to end
  REQUIRE(revoke(node, f, "5", "30000").integer == 1);
  REQUIRE(revoke(node, l, "6", "1000").integer == 1);
  CHECK(undo(node, f) == 0);  // F failed, covered by L: flags 'x' + the lease (300 ms left)
  std::this_thread::sleep_for(500ms);
  CHECK(undo(node, l) == 1);  // L failed
  // Both revokes failed and the lease they overwrote has ended: nothing holds the name.
  CHECK_FALSE(node.get(kKey).has_value());
  CHECK(pttl(node, kKey) < 0);
}
