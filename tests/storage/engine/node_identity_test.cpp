// Lock nodes are counted by server, not by configured address: two slots that reach one
// redis-server (two addresses of it, like localhost and 127.0.0.1, or two DNS names of one pod)
// must give it one vote, or a majority of slots would be granted by a minority of servers.
#include <catch2/catch.hpp>
#include <mutex>
#include <thread>

#include "engine_under_test.h"

using namespace fencelock::storage;
using namespace fencelock::testing;

namespace {

struct Refusals : EngineObserver {
  std::mutex mutex;
  std::vector<std::pair<std::size_t, std::string>> seen;
  void on_node_refused(std::size_t node, const std::string&, const std::string& why) override {
    const std::lock_guard lock(mutex);
    seen.emplace_back(node, why);
  }
  std::size_t count() {
    const std::lock_guard lock(mutex);
    return seen.size();
  }
};

}  // namespace

TEST_CASE("a server listed under two addresses votes once, and a grant needs a majority of servers",
          "[storage][redis]") {
  RedisCluster cluster(2);
  cluster.node(0).set_bind_hosts({"127.0.0.1", "127.0.0.2"});
  cluster.node(0).restart(/*keep_data=*/true);
  const std::string port0 = std::to_string(cluster.node(0).port());
  // The servers first ran under a correct list (a new cluster: both admitted); then a second
  // address of server 0 was added to it.
  { const EngineUnderTest first(engine_options_for(cluster)); }
  EngineOptions options;
  options.nodes = {parse_node_address("127.0.0.1:" + port0).value(),
                   parse_node_address("127.0.0.2:" + port0).value(),
                   parse_node_address(cluster.addresses().at(1)).value()};
  Refusals refusals;
  EngineUnderTest t(options, nullptr, &refusals, /*wait_for_nodes=*/false);
  t.wait_until([&] { return (t.node_up(0) || t.node_up(1)) && t.node_up(2); });
  std::this_thread::sleep_for(500ms);  // a few reconnects of the refused slot: still refused
  CHECK(t.engine().voting_nodes() == 2);
  CHECK(t.node_up(0) != t.node_up(1));  // whichever slot came first keeps the server
  CHECK(t.node_up(2));
  const std::size_t refused_slot = t.node_up(0) ? 1 : 0;
  EngineUnderTest::wait_for_first_registry_round(t.engine());
  t.wait_until_granting();
  const auto lease = t.acquire("one-vote", 5s);
  REQUIRE(lease.ok());

  // With the other server gone, one server is left: no majority, whatever the slot count says —
  // the lease cannot be extended (two slots of one server would say yes twice), nor another
  // granted.
  cluster.node(1).kill();
  t.wait_until([&] { return !t.node_up(2); });
  const auto extended = t.extend("one-vote", claim(lease), 5s);
  REQUIRE_FALSE(extended.ok());
  CHECK(extended.error().code == ErrorCode::kUnavailable);
  const auto refused = t.acquire("other", 5s);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::kUnavailable);

  const std::lock_guard lock(refusals.mutex);
  REQUIRE(refusals.seen.size() == 1);  // reported once per reason
  CHECK(refusals.seen[0].first == refused_slot);
  CHECK_THAT(refusals.seen[0].second,
             Catch::Contains("same Redis server") && Catch::Contains("two addresses"));
}

TEST_CASE("after its restart, a server listed under two addresses is still held by one slot",
          "[storage][redis]") {
  RedisCluster cluster(1);
  cluster.node(0).set_bind_hosts({"127.0.0.1", "127.0.0.2"});
  cluster.node(0).restart(/*keep_data=*/true);
  const std::string port = std::to_string(cluster.node(0).port());
  EngineOptions options;
  options.nodes = {parse_node_address("127.0.0.1:" + port).value(),
                   parse_node_address("127.0.0.2:" + port).value()};
  options.max_ttl = 1s;
  options.reconnect_max = 200ms;
  Refusals refusals;
  EngineUnderTest t(options, nullptr, &refusals, /*wait_for_nodes=*/false);
  t.wait_until([&] { return refusals.count() > 0 && (t.node_up(0) || t.node_up(1)); });
  const std::size_t first = t.node_up(0) ? 0 : 1;
  CHECK_FALSE(t.node_up(1 - first));
  // The server restarts: both slots reconnect; still exactly one of them may hold it.
  cluster.node(0).restart(/*keep_data=*/true);
  t.wait_until([&] { return t.node_up(0) || t.node_up(1); });
  std::this_thread::sleep_for(500ms);
  CHECK(t.node_up(0) != t.node_up(1));
}
