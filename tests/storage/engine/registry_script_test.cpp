// The registry heartbeat script (lua_scripts.h) on a real redis-server: what each bind mode may do
// to a node, whatever else is on it.
#include <catch2/catch.hpp>
#include <string>

#include "engine/lua_scripts.h"
#include "redis_cluster.h"
#include "sync_redis.h"

using namespace fencelock::storage;
using namespace fencelock::testing;

namespace {

constexpr std::string_view kKey = "fencelock:#instances:test:";

// One heartbeat of engine `id` with token identity `identity` in bind mode `mode`; returns the
// node's binding as the script reports it.
std::string heartbeat(SyncRedis& node, std::string_view id, std::string_view identity,
                      std::string_view mode) {
  const SyncReply reply =
      node.command({"EVAL", kRegistryHeartbeatScript, "1", kKey, id, identity, "10000", mode});
  REQUIRE(reply.kind == SyncReply::Kind::kArray);
  REQUIRE(reply.elements.size() == 2);
  return reply.elements[0].text;
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
