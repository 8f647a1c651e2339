// The registry heartbeat script (node_scripts.h) on a real redis-server: what each bind mode may do
// to a node, whatever else is on it.
#include <catch2/catch.hpp>
#include <string>

#include "engine/node_scripts.h"
#include "redis_cluster.h"
#include "sync_redis.h"

using namespace fencelock::storage;
using namespace fencelock::testing;

namespace {

constexpr std::string_view kKey = "fencelock:#instances:test:";
constexpr std::string_view kMarker = "fencelock:#node";

// The heartbeat script's arguments (node_scripts.h), with defaults a test overrides by name.
struct Beat {
  std::string_view id;
  std::string_view identity = "shared";
  std::string_view mode = "0";
  std::string_view highest = "0";
  std::string_view seq = "1";
  std::string_view max_ttl = "1000";
  std::string_view setting = "on";
  std::string_view declared = "10000";
  std::string_view known_ttl = "3600000";
  std::string_view prefix = "test:";
};

SyncReply beat(SyncRedis& node, const Beat& b) {
  const SyncReply reply = node.command({"EVAL", kRegistryHeartbeatScript, "2", kKey, kMarker, b.id,
                                        b.identity, "10000", b.mode, b.highest, b.seq, b.max_ttl,
                                        b.setting, b.declared, b.known_ttl, b.prefix});
  REQUIRE(reply.kind == SyncReply::Kind::kArray);
  REQUIRE(reply.elements.size() == 8);
  return reply;
}

// One heartbeat of engine `id` with token identity `identity` in bind mode `mode`; returns the
// node's binding as the script reports it.
SyncReply heartbeat_reply(SyncRedis& node, std::string_view id, std::string_view identity,
                          std::string_view mode, std::string_view highest = "0") {
  return beat(node, {.id = id, .identity = identity, .mode = mode, .highest = highest});
}

std::string heartbeat(SyncRedis& node, std::string_view id, std::string_view identity,
                      std::string_view mode) {
  return heartbeat_reply(node, id, identity, mode).elements[0].text;
}

// The node's token mark after a heartbeat that reports `highest`.
std::string mark_after(SyncRedis& node, std::string_view id, std::string_view highest) {
  return heartbeat_reply(node, id, "etcd:1:a", "0", highest).elements[2].text;
}

}  // namespace

TEST_CASE("the registry script binds a node only as its mode allows", "[storage][redis]") {
  RedisCluster cluster(1);
  SyncRedis node(cluster.node(0).port());

  SECTION("a read never binds") {
    CHECK(heartbeat(node, "e1", "sqlite:a", "0").empty());
    CHECK(node.command({"HEXISTS", kKey, "#tokens"}).integer == 0);
  }
  SECTION("a birth binds a node with no live instance of another store") {
    CHECK(heartbeat(node, "e0", "sqlite:a", "0").empty());  // the same store, another engine
    CHECK(heartbeat(node, "e1", "sqlite:a", "1") == "sqlite:a");
  }
  // Review of the registry (F3): a birth bound a node on which another store's instance was live.
  SECTION("a birth leaves a node alone while an instance of another store is live there") {
    CHECK(heartbeat(node, "other", "shared", "0").empty());
    CHECK(heartbeat(node, "e1", "sqlite:a", "1").empty());
    CHECK(node.command({"HEXISTS", kKey, "#tokens"}).integer == 0);
  }
  SECTION("a repair binds whatever else is live") {
    CHECK(heartbeat(node, "other", "shared", "0").empty());
    CHECK(heartbeat(node, "e1", "sqlite:a", "2") == "sqlite:a");
  }
  SECTION("no mode changes an existing binding") {
    CHECK(heartbeat(node, "e1", "sqlite:a", "1") == "sqlite:a");
    CHECK(heartbeat(node, "e2", "sqlite:b", "2") == "sqlite:a");
    CHECK(node.command({"HGET", kKey, "#tokens"}).text == "sqlite:a");
  }
  // Review of the registry (F10): an operator's HSET of "" made the node unbindable for good.
  SECTION("an empty binding counts as none") {
    node.command({"HSET", kKey, "#tokens", ""});
    CHECK(heartbeat(node, "e1", "sqlite:a", "0").empty());
    CHECK(heartbeat(node, "e1", "sqlite:a", "2") == "sqlite:a");
  }
}

TEST_CASE("the registry script keeps the highest token reported, compared as digits",
          "[storage][redis]") {
  RedisCluster cluster(1);
  SyncRedis node(cluster.node(0).port());
  CHECK(mark_after(node, "e1", "0") == "0");
  CHECK(node.command({"HEXISTS", kKey, "#mark"}).integer == 0);  // nothing handed out, no write
  CHECK(mark_after(node, "e1", "99") == "99");
  CHECK(mark_after(node, "e2", "100") == "100");
  CHECK(mark_after(node, "e1", "99") == "100");  // never lowered
  // Past 2^53, where Lua's doubles would merge neighbours.
  CHECK(mark_after(node, "e1", "9007199254740993") == "9007199254740993");
  CHECK(mark_after(node, "e2", "9007199254740992") == "9007199254740993");
  CHECK(mark_after(node, "e1", "9223372036854775807") == "9223372036854775807");
  // The mark and the binding are the registry's own fields, never taken for entries.
  heartbeat_reply(node, "e1", "etcd:1:a", "2");
  const SyncReply reply = heartbeat_reply(node, "e3", "etcd:1:a", "0");
  CHECK(reply.elements[1].elements.size() == 2);  // e1 and e2
  CHECK(node.command({"HGET", kKey, "#mark"}).text == "9223372036854775807");
  CHECK(node.command({"HGET", kKey, "#tokens"}).text == "etcd:1:a");
}

TEST_CASE("the registry script answers the number this engine's previous heartbeat left here",
          "[storage][redis]") {
  RedisCluster cluster(1);
  SyncRedis node(cluster.node(0).port());
  const auto previous = [&](std::string_view id, std::string_view seq) {
    return beat(node, {.id = id, .seq = seq}).elements[3].text;
  };
  CHECK(previous("e1", "5").empty());
  CHECK(previous("e1", "6") == "5");
  CHECK(previous("e2", "1").empty());  // per engine
  CHECK(previous("e1", "7") == "6");
  // A heartbeat of a connection that timed out, delivered after newer ones: it never lowers the
  // number (a node whose number went down lost writes; this one did not).
  CHECK(previous("e1", "3") == "7");
  CHECK(previous("e1", "8") == "7");
  // Another engine's number unwritten for a day goes; a recent one stays.
  node.command({"HSET", kKey, "#seq:gone", "3 1000"});
  previous("e1", "9");
  CHECK(node.command({"HEXISTS", kKey, "#seq:gone"}).integer == 0);
  CHECK(node.command({"HEXISTS", kKey, "#seq:e2"}).integer == 1);
}

TEST_CASE("the registry script raises the node's max ttl and answers the largest declared",
          "[storage][redis]") {
  RedisCluster cluster(1);
  SyncRedis node(cluster.node(0).port());
  const auto largest = [&](std::string_view id, std::string_view max_ttl) {
    return beat(node, {.id = id, .max_ttl = max_ttl}).elements[4].text;
  };
  CHECK(largest("short", "3000") == "3000");
  CHECK(largest("long", "3600000") == "3600000");
  CHECK(largest("short", "3000") == "3600000");  // never lowered
  CHECK(node.command({"HGET", kMarker, "max_ttl_ms"}).text == "3600000");
}

TEST_CASE("the registry script answers how long the other quarantine setting stands on the node",
          "[storage][redis]") {
  RedisCluster cluster(1);
  SyncRedis node(cluster.node(0).port());
  // Engine `id` declares `setting` for `ms`; returns how long the other setting still stands.
  const auto other_stands = [&](std::string_view id, std::string_view setting,
                                std::string_view ms) {
    return std::stoll(beat(node, {.id = id, .setting = setting, .declared = ms}).elements[5].text);
  };
  CHECK(other_stands("on1", "on", "60000") == 0);  // nothing declared "off"
  const long long stands = other_stands("off1", "off", "10000");
  CHECK(stands > 59000);
  CHECK(stands <= 60000);
  CHECK(other_stands("on1", "on", "5000") >
        9000);  // "off" stands 10 s; a shorter "on" never lowers
  CHECK(other_stands("off1", "off", "10000") > 59000);
  CHECK(other_stands("off2", "off", "20000") > 59000);   // each "off" engine declares on its own
  node.command({"HDEL", kKey, "#quarantine:off:off1"});  // off1's clean stop
  CHECK(other_stands("on1", "on", "60000") > 19000);     // off2 still runs
  node.command({"HDEL", kKey, "#quarantine:off:off2"});
  CHECK(other_stands("on1", "on", "60000") == 0);
  // An expired "off" is deleted by the next heartbeat; an expired "on" stands no more.
  node.command({"HSET", kKey, "#quarantine:off:gone", "1000"});
  CHECK(other_stands("on1", "on", "60000") == 0);
  CHECK(node.command({"HEXISTS", kKey, "#quarantine:off:gone"}).integer == 0);
  node.command({"HSET", kKey, "#quarantine:on", "1000"});  // long past (node clock ms)
  CHECK(other_stands("off1", "off", "10000") == 0);
}

TEST_CASE("the registry script writes the longest ttl each engine knows into its entry",
          "[storage][redis]") {
  RedisCluster cluster(1);
  SyncRedis node(cluster.node(0).port());
  const auto with_known = [&](std::string_view id, std::string_view known, std::string_view mode) {
    return beat(node, {.id = id, .mode = mode, .known_ttl = known});
  };
  with_known("e1", "3000", "0");
  const SyncReply seen = with_known("e2", "3600000", "0");
  REQUIRE(seen.elements[1].elements.size() == 1);
  const std::string entry = seen.elements[1].elements[0].text;  // "e1 <expiry> 3000 shared"
  CHECK(entry.substr(0, 3) == "e1 ");
  CHECK(entry.substr(entry.size() - 12) == " 3000 shared");
  // An older version's entry has no ttl: its identity is still read as such (no foreign store
  // stops a birth).
  node.command({"HSET", kKey, "old", "99999999999999 shared"});
  CHECK(with_known("e3", "3000", "1").elements[0].text == "shared");
}

TEST_CASE("the registry script answers a live key prefix of another deployment that overlaps",
          "[storage][redis]") {
  RedisCluster cluster(1);
  SyncRedis node(cluster.node(0).port());
  const auto overlap = [&](std::string_view id, std::string_view prefix) {
    return beat(node, {.id = id, .prefix = prefix}).elements[6].text;
  };
  CHECK(overlap("a", "app:").empty());
  CHECK(overlap("a2", "app:").empty());   // the same deployment
  CHECK(overlap("b", "apple:").empty());  // neither starts the other
  CHECK(overlap("c", "app:x:") == "app:");
  CHECK(overlap("a", "app:") == "app:x:");
  // Expired prefixes are deleted and overlap nothing.
  node.command({"HSET", kMarker, "prefix:app:x:", "1000"});
  CHECK(overlap("a", "app:").empty());
  CHECK(node.command({"HEXISTS", kMarker, "prefix:app:x:"}).integer == 0);
}

TEST_CASE("the registry script says whether the node marker kept this deployment's history",
          "[storage][redis]") {
  RedisCluster cluster(1);
  SyncRedis node(cluster.node(0).port());
  CHECK(beat(node, {.id = "e1"}).elements[7].text == "0");
  node.command({"HSET", kMarker, "admitted:other:", "r1"});
  CHECK(beat(node, {.id = "e1"}).elements[7].text == "0");  // another deployment's
  node.command({"HSET", kMarker, "admitted:test:", "r1"});
  CHECK(beat(node, {.id = "e1"}).elements[7].text == "1");
}
