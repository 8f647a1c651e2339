// Lock nodes by DNS name against real redis-servers on loopback addresses (127.0.0.2, 127.0.0.3:
// one port, two servers), with names answered by the resolver's test seam: the name is resolved
// again at every reconnect, every address is tried, and a name that does not resolve leaves the
// node down — reported once — until it does.
#include <catch2/catch.hpp>
#include <mutex>
#include <thread>

#include "engine_under_test.h"
#include "net/resolver_override.h"
#include "temp_dir.h"

using namespace fencelock::storage;
using namespace fencelock::testing;

namespace {

struct Events : EngineObserver {
  std::mutex mutex;
  std::vector<std::string> unresolved;
  std::vector<std::pair<std::string, std::string>> moves;
  void on_node_unresolved(std::size_t, const std::string&, const std::string& why) override {
    const std::lock_guard lock(mutex);
    unresolved.push_back(why);
  }
  void on_node_address_changed(std::size_t, const std::string&, const std::string& from,
                               const std::string& to) override {
    const std::lock_guard lock(mutex);
    moves.emplace_back(from, to);
  }
  std::size_t unresolved_count() {
    const std::lock_guard lock(mutex);
    return unresolved.size();
  }
  std::size_t move_count() {
    const std::lock_guard lock(mutex);
    return moves.size();
  }
};

// Node 0 is "node-a:<port of server>", then the two servers of `others`.
EngineOptions options_with_name(const RedisServer& server, RedisCluster& others) {
  EngineOptions options;
  options.nodes.push_back(
      fencelock::parse_address("node-a:" + std::to_string(server.port())).value());
  for (const auto& address : others.addresses())
    options.nodes.push_back(parse_node_address(address).value());
  return options;
}

}  // namespace

TEST_CASE("a lock node's name is resolved again on reconnect: a moved node is quarantined",
          "[storage][redis]") {
  TempDir dir;
  RedisServer first(dir.path() / "first", Persistence::kNone);
  first.set_bind_hosts({"127.0.0.2"});
  first.start();
  RedisServer second(dir.path() / "second", Persistence::kNone);
  second.set_bind_hosts({"127.0.0.3"});
  second.set_port(first.port());
  second.start();
  RedisCluster others(2);
  ScopedResolverOverride names;  // before the engine: it resolves from its start
  names.set("node-a", {"127.0.0.2"});
  Events events;
  EngineUnderTest t(options_with_name(first, others), nullptr, &events);
  const std::string port = std::to_string(first.port());
  CHECK(t.engine().node_statuses()[0].address == "node-a:" + port);

  names.set("node-a", {"127.0.0.3"});  // the node moved: a new server behind the same name
  first.kill();
  t.wait_until([&] { return events.move_count() > 0 && t.node_up(0); });
  const auto status = t.engine().node_statuses()[0];
  CHECK(status.address == "node-a:" + port);  // logs and metrics keep the configured name
  CHECK(status.quarantined);                  // another run_id on the slot: like a restart
  CHECK(status.address_changes == 1);
  CHECK(t.engine().voting_nodes() == 2);
  REQUIRE(events.move_count() == 1);
  const std::lock_guard lock(events.mutex);
  CHECK(events.moves[0] ==
        std::pair<std::string, std::string>("127.0.0.2:" + port, "127.0.0.3:" + port));
}

TEST_CASE("every address of a lock node's name is tried in order", "[storage][redis]") {
  TempDir dir;
  RedisServer server(dir.path() / "server", Persistence::kNone);
  server.set_bind_hosts({"127.0.0.2"});
  server.start();
  RedisCluster others(2);
  ScopedResolverOverride names;
  names.set("node-a", {"127.0.0.3", "127.0.0.2"});  // nothing listens on the first one
  EngineUnderTest t(options_with_name(server, others));
  CHECK(t.engine().voting_nodes() == 3);
}

TEST_CASE("a lock node whose name does not resolve is down, reported once, until it resolves",
          "[storage][redis]") {
  TempDir dir;
  RedisServer server(dir.path() / "server", Persistence::kNone);
  server.set_bind_hosts({"127.0.0.2"});
  server.start();
  RedisCluster others(2);
  ScopedResolverOverride names;
  names.fail("node-a", "Name or service not known");
  Events events;
  auto options = options_with_name(server, others);
  options.reconnect_max = 100ms;
  EngineUnderTest t(options, nullptr, &events, /*wait_for_nodes=*/false);
  t.wait_until([&] { return events.unresolved_count() > 0; });
  std::this_thread::sleep_for(400ms);  // several more attempts: still one report
  CHECK(events.unresolved_count() == 1);
  {
    const std::lock_guard lock(events.mutex);
    CHECK(events.unresolved[0] == "cannot resolve node-a: Name or service not known");
  }
  const auto down = t.engine().node_statuses()[0];
  CHECK_FALSE(down.up);
  CHECK(down.unresolved);
  CHECK(down.resolve_failures >= 2);
  CHECK(t.engine().unresolved_nodes() == 1);

  names.set("node-a", {"127.0.0.2"});
  t.wait_until([&] { return t.node_up(0); });
  CHECK_FALSE(t.engine().node_statuses()[0].unresolved);
  CHECK(t.engine().unresolved_nodes() == 0);
}
