// Which Redis servers may vote at all, and when a node that may have lost keys without a restart
// its uptime shows votes again (node_trust.h), against real redis-servers: evicting nodes,
// persistence switched off at runtime, a node restored from a backup or flushed, and instances
// with different max ttls.
#include <catch2/catch.hpp>
#include <filesystem>
#include <mutex>
#include <thread>

#include "engine_under_test.h"
#include "fault_proxy.h"
#include "sync_redis.h"

using namespace fencelock::storage;
using namespace fencelock::testing;
using Clock = std::chrono::steady_clock;

namespace {

struct Refusals : EngineObserver {
  std::mutex mutex;
  std::vector<std::string> reasons;
  void on_node_refused(std::size_t, const std::string&, const std::string& why) override {
    std::lock_guard<std::mutex> lock(mutex);
    reasons.push_back(why);
  }
  std::size_t count() {
    std::lock_guard<std::mutex> lock(mutex);
    return reasons.size();
  }
};

// Acquires `name` for `ttl` through `t`, retrying (for up to 5 s) while another instance does
// not know a ttl that long yet (InstanceRegistry::refusal); true once granted.
bool acquire_once_known(EngineUnderTest& t, const std::string& name,
                        std::chrono::milliseconds ttl) {
  const auto until = Clock::now() + std::chrono::seconds(5);
  while (Clock::now() < until) {
    if (t.acquire(name, ttl).ok()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

EngineOptions options_for(RedisCluster& cluster, std::chrono::milliseconds max_ttl) {
  auto options = engine_options_for(cluster);
  options.max_ttl = max_ttl;
  return options;
}

void make_evicting(RedisServer& server, const std::string& policy) {
  SyncRedis node(server.port());
  REQUIRE(node.command({"CONFIG", "SET", "maxmemory", "2mb"}).text == "OK");
  REQUIRE(node.command({"CONFIG", "SET", "maxmemory-policy", policy}).text == "OK");
}

// Ordinary traffic: leases on ~30,000 other names, well past 2 MB, until the node evicts.
void fill_with_traffic(RedisServer& server) {
  SyncRedis node(server.port(), 5s);
  for (int batch = 0; batch < 10; ++batch) {
    node.command({"EVAL",
                  "for i = 1, 3000 do redis.call('SET', KEYS[1] .. ARGV[1] .. ':' .. i, "
                  "string.rep('x', 48), 'PX', 300000) end return 1",
                  "1", "fencelock:lock:traffic-", std::to_string(batch)});
  }
  node.command({"PING"});  // evictions run before each command
  REQUIRE(std::stoll(node.info_field("stats", "evicted_keys")) > 0);
}

// Waits until the engine's view of the nodes settles: every node either votes or was refused.
void wait_until_judged(EngineUnderTest& engine, Refusals& refusals, std::size_t nodes) {
  engine.wait_until([&] { return refusals.count() + engine.engine().voting_nodes() == nodes; },
                    10s);
}

// Nodes 1 and 2 just came back having lost writes: neither `a` nor an engine started now grants
// "vault" while `holder` is valid; afterwards all three nodes vote again.
void no_grant_until_expiry(RedisCluster& cluster, EngineUnderTest& a, const Lease& holder) {
  a.wait_until([&] { return a.node_up(1) && a.node_up(2); }, 5s);
  std::this_thread::sleep_for(200ms);
  EngineUnderTest fresh(options_for(cluster, 3s), nullptr, nullptr, /*wait_for_nodes=*/false);
  fresh.wait_until([&] { return fresh.node_up(0) && fresh.node_up(1) && fresh.node_up(2); });
  while (Clock::now() < holder.valid_until()) {
    REQUIRE_FALSE(a.acquire("vault", 500ms).ok());
    REQUIRE_FALSE(fresh.acquire("vault", 500ms).ok());
    std::this_thread::sleep_for(100ms);
  }
  a.wait_for_voting_nodes(3, 6s);
}

}  // namespace

TEST_CASE("a node that may evict keys never votes, also with quarantine off", "[storage][redis]") {
  const std::string policy = GENERATE(as<std::string>{}, "volatile-lru", "allkeys-lru");
  const bool quarantine = GENERATE(true, false);  // off trusts restarts, never an evicting node
  RedisCluster cluster(3);
  for (std::size_t i = 0; i < cluster.size(); ++i) make_evicting(cluster.node(i), policy);
  Refusals refusals;
  auto options = options_for(cluster, 600s);
  options.quarantine_restarted_nodes = quarantine;
  EngineUnderTest engine(options, nullptr, &refusals, /*wait_for_nodes=*/false);
  wait_until_judged(engine, refusals, cluster.size());
  if (engine.engine().voting_nodes() == cluster.size()) {
    EngineUnderTest::wait_for_first_registry_round(engine.engine());
  }

  const auto first = engine.acquire("victim", 300s);
  for (std::size_t i = 0; i < cluster.size(); ++i) fill_with_traffic(cluster.node(i));
  const auto second = engine.acquire("victim", 1s);
  CHECK_FALSE((first.ok() && second.ok()));  // two holders of one lock
  CHECK_FALSE(first.ok());
  CHECK(engine.engine().voting_nodes() == 0);
  std::lock_guard<std::mutex> lock(refusals.mutex);
  REQUIRE(refusals.reasons.size() == cluster.size());
  CHECK_THAT(refusals.reasons.front(), Catch::Contains("may evict keys") &&
                                           Catch::Contains("maxmemory-policy " + policy) &&
                                           Catch::Contains("noeviction"));
}

TEST_CASE(
    "a node switched to an evicting policy stops voting within a check, and after switching back "
    "waits out a quarantine, for every engine",
    "[storage][redis]") {
  RedisCluster cluster(3);
  Refusals refusals;
  EngineUnderTest a(options_for(cluster, 8s), nullptr, &refusals);
  const auto holder = a.acquire("victim", 8s);
  REQUIRE(holder.ok());
  for (const std::size_t n : {std::size_t{1}, std::size_t{2}}) {
    make_evicting(cluster.node(n), "allkeys-lru");
  }
  a.wait_until([&] { return a.engine().voting_nodes() == 1; }, 3s);
  CHECK(refusals.count() == 2);
  for (const std::size_t n : {std::size_t{1}, std::size_t{2}}) fill_with_traffic(cluster.node(n));
  for (const std::size_t n : {std::size_t{1}, std::size_t{2}}) {  // no limit: safe again
    REQUIRE(SyncRedis(cluster.node(n).port()).command({"CONFIG", "SET", "maxmemory", "0"}).text ==
            "OK");
  }
  // Back and connected, but it may have evicted the lease until it was seen safe.
  a.wait_until([&] { return a.node_up(1) && a.node_up(2); }, 5s);
  std::this_thread::sleep_for(200ms);  // the suspect records reach the nodes
  CHECK(a.engine().voting_nodes() == 1);
  // A fresh engine reads the nodes' suspect records: it would trust them at once otherwise.
  EngineUnderTest fresh(options_for(cluster, 8s), nullptr, nullptr, /*wait_for_nodes=*/false);
  fresh.wait_until([&] { return fresh.node_up(0) && fresh.node_up(1) && fresh.node_up(2); });
  CHECK(fresh.engine().voting_nodes() == 1);
  while (Clock::now() < holder.value().valid_until()) {
    REQUIRE_FALSE(a.acquire("victim", 500ms).ok());
    REQUIRE_FALSE(fresh.acquire("victim", 500ms).ok());
    std::this_thread::sleep_for(100ms);
  }
  a.wait_for_voting_nodes(3, 10s);
  fresh.wait_for_voting_nodes(3, 10s);
}

// The settings are read once a second: a review switched two nodes to an evicting policy and back
// within one pipeline, and the held lease was granted again. INFO stats' evicted_keys shows it.
TEST_CASE(
    "a node that evicted keys between two settings checks waits out a quarantine, for every "
    "engine, also one that was not connected then",
    "[storage][redis]") {
  RedisCluster cluster(3);
  // Up for longer than the window: their uptime alone would let them vote at once.
  std::this_thread::sleep_for(6s);
  auto a = std::make_unique<EngineUnderTest>(options_for(cluster, 5s));
  const auto holder = a->acquire("victim", 5s);
  REQUIRE(holder.ok());
  const bool connected = GENERATE(true, false);
  if (!connected) {
    a.reset();  // no engine sees the flip
    // An earlier event of the same incarnations was recorded (and waited out) already: it says
    // nothing about evictions since.
    for (const std::size_t n : {std::size_t{1}, std::size_t{2}}) {
      SyncRedis node(cluster.node(n).port());
      const auto time = node.command({"TIME"});
      const long long ms = std::stoll(time.elements[0].text) * 1000 - 3'600'000;
      node.command({"HSET", "fencelock:#node", "suspect",
                    node.info_field("server", "run_id") + " " + std::to_string(ms)});
    }
  }
  for (const std::size_t n : {std::size_t{1}, std::size_t{2}}) {
    // Tens of milliseconds: between two checks. volatile-ttl evicts the lease (the key nearest
    // its expiry) first.
    make_evicting(cluster.node(n), "volatile-ttl");
    SyncRedis node(cluster.node(n).port());
    for (int round = 0; round < 10 && node.command({"EXISTS", "fencelock:lock:victim"}).integer;
         ++round) {
      fill_with_traffic(cluster.node(n));  // eviction samples keys: not always the lease at once
    }
    node.command({"CONFIG", "SET", "maxmemory", "0"});
    REQUIRE(node.command({"EXISTS", "fencelock:lock:victim"}).integer == 0);  // evicted
  }
  if (connected) {
    std::this_thread::sleep_for(1500ms);  // a settings check
    no_grant_until_expiry(cluster, *a, holder.value());
  } else {
    EngineUnderTest fresh(options_for(cluster, 5s), nullptr, nullptr, /*wait_for_nodes=*/false);
    fresh.wait_until([&] { return fresh.node_up(0) && fresh.node_up(1) && fresh.node_up(2); });
    CHECK(fresh.engine().voting_nodes() == 1);
    while (Clock::now() < holder.value().valid_until()) {
      REQUIRE_FALSE(fresh.acquire("victim", 500ms).ok());
      std::this_thread::sleep_for(100ms);
    }
    fresh.wait_for_voting_nodes(3, 10s);
  }
}

// The settings checks above run once a second: a node that evicted keys just before an acquire
// would still be counted until the next one (seventh review, R2). A vote now counts only once a
// read of evicted_keys after it shows no new eviction (EngineCore::confirm_votes); a statistics
// reset (CONFIG RESETSTAT) right after the evictions counts as evictions (its command count went
// back), or it would hide them.
TEST_CASE(
    "no engine counts the vote of a node that evicted keys, not even before its next settings "
    "check",
    "[storage][redis]") {
  const bool reset_statistics = GENERATE(false, true);
  RedisCluster cluster(3);
  std::this_thread::sleep_for(3s);  // uptime past the window: they vote at once
  EngineUnderTest a(options_for(cluster, 2s));
  EngineUnderTest b(options_for(cluster, 2s));
  const auto holder = a.acquire("victim", 2s);
  REQUIRE(holder.ok());
  for (const std::size_t n : {std::size_t{1}, std::size_t{2}}) {
    // A few commands on one connection, well within one settings check: every key with a ttl (the
    // leases; not the markers) is evicted.
    SyncRedis node(cluster.node(n).port());
    node.command({"CONFIG", "SET", "maxmemory-policy", "volatile-ttl"});
    node.command({"CONFIG", "SET", "maxmemory", "1"});
    node.command({"PING"});  // evictions run before each command
    node.command({"CONFIG", "SET", "maxmemory", "0"});
    node.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
    if (reset_statistics) node.command({"CONFIG", "RESETSTAT"});
    REQUIRE(node.command({"EXISTS", "fencelock:lock:victim"}).integer == 0);
  }
  // At once, before either engine's next settings check, and then until the lease ends.
  while (Clock::now() < holder.value().valid_until()) {
    REQUIRE_FALSE(b.acquire("victim", 500ms).ok());
    REQUIRE_FALSE(a.acquire("victim", 500ms).ok());
    std::this_thread::sleep_for(50ms);
  }
  // Waited out: the nodes vote again.
  const auto give_up = Clock::now() + 15s;
  bool granted = false;
  while (!granted && Clock::now() < give_up) {
    granted = b.acquire("victim", 500ms).ok();
    if (!granted) std::this_thread::sleep_for(200ms);
  }
  CHECK(granted);
  CHECK(b.engine().voting_nodes() == 3);
}

// Issue #32 item 7: rule 1 trusted a durable node that kept its marker, but the marker predates
// everything written while persistence was off.
TEST_CASE(
    "a node whose persistence was switched off at runtime is quarantined when it restarts, "
    "however durable it comes back",
    "[storage][redis]") {
  RedisCluster cluster(3, Persistence::kAofAlways);
  EngineUnderTest a(options_for(cluster, 3s));
  for (const std::size_t n : {std::size_t{1}, std::size_t{2}}) {
    REQUIRE(SyncRedis(cluster.node(n).port()).command({"CONFIG", "SET", "appendonly", "no"}).text ==
            "OK");
  }
  std::this_thread::sleep_for(1500ms);  // a settings check
  const auto holder = a.acquire("vault", 3s);
  REQUIRE(holder.ok());
  // A crash: the restarted servers load the AOF as it was when persistence went off.
  for (const std::size_t n : {std::size_t{1}, std::size_t{2}}) {
    cluster.node(n).restart(/*keep_data=*/true);
  }
  no_grant_until_expiry(cluster, a, holder.value());
}

// A server whose user may not run CONFIG (a managed Redis, a narrow ACL) cannot show its
// persistence: it counts as not durable, so its restart is lossy however durable it really was.
TEST_CASE("a node that refuses CONFIG counts as not durable: its restart is quarantined",
          "[storage][redis]") {
  RedisCluster cluster(3, Persistence::kAofAlways);
  for (const std::size_t n : {std::size_t{1}, std::size_t{2}}) {
    REQUIRE(
        SyncRedis(cluster.node(n).port()).command({"ACL", "SETUSER", "default", "-config"}).text ==
        "OK");
  }
  EngineUnderTest a(options_for(cluster, 3s));
  a.wait_for_voting_nodes(3, 5s);  // a new cluster: admitted at once, durable or not
  // Restarted with their data (the ACL is back to the default: CONFIG answers now).
  for (const std::size_t n : {std::size_t{1}, std::size_t{2}}) cluster.node(n).restart(true);
  a.wait_until(
      [&] {
        const auto nodes = a.engine().node_statuses();
        return nodes[1].up && nodes[1].quarantined && nodes[2].up && nodes[2].quarantined;
      },
      5s);  // trusted at once by rule 1 if it had been seen durable
  CHECK(a.engine().voting_nodes() == 1);
  a.wait_for_voting_nodes(3, 10s);  // after the window
}

TEST_CASE("a durable node restored from a backup waits out a quarantine, for every engine",
          "[storage][redis]") {
  RedisCluster cluster(3, Persistence::kAofAlways);
  EngineUnderTest a(options_for(cluster, 3s));
  std::this_thread::sleep_for(1500ms);  // a's registry entry is on every node
  // Backups of two nodes, taken with the servers stopped (then started again, data kept).
  std::vector<std::filesystem::path> backups;
  for (const std::size_t n : {std::size_t{1}, std::size_t{2}}) {
    RedisServer& server = cluster.node(n);
    server.kill();
    backups.push_back(cluster.dir() / ("backup-" + std::to_string(n)));
    std::filesystem::copy(server.data_dir(), backups.back(),
                          std::filesystem::copy_options::recursive);
    server.start();
  }
  a.wait_for_voting_nodes(3, 5s);       // durable, marker kept: trusted at once
  std::this_thread::sleep_for(2500ms);  // a writes its registry entry past the backup
  const auto holder = a.acquire("vault", 3s);
  REQUIRE(holder.ok());
  for (std::size_t i = 0; i < backups.size(); ++i) {
    RedisServer& server = cluster.node(i + 1);
    server.kill();
    std::filesystem::remove_all(server.data_dir());
    std::filesystem::copy(backups[i], server.data_dir(), std::filesystem::copy_options::recursive);
    server.start();
  }
  no_grant_until_expiry(cluster, a, holder.value());
}

TEST_CASE("a node that loses its data without restarting stops voting within a heartbeat",
          "[storage][redis]") {
  RedisCluster cluster(3);
  EngineUnderTest a(options_for(cluster, 3s));
  std::this_thread::sleep_for(1500ms);
  const auto holder = a.acquire("vault", 3s);
  REQUIRE(holder.ok());
  for (const std::size_t n : {std::size_t{1}, std::size_t{2}}) {
    REQUIRE(SyncRedis(cluster.node(n).port()).command({"FLUSHALL"}).text == "OK");
  }
  a.wait_until([&] { return a.engine().voting_nodes() == 1; }, 3s);
  while (Clock::now() < holder.value().valid_until()) {
    REQUIRE_FALSE(a.acquire("vault", 500ms).ok());
    std::this_thread::sleep_for(100ms);
  }
  a.wait_for_voting_nodes(3, 6s);
}

// Issue #32 item 2: b read the nodes' max ttl only at its handshake, before a declared an hour.
TEST_CASE("a quarantine window is never shorter than the longest max ttl any instance declared",
          "[storage][redis]") {
  RedisCluster cluster(5);
  EngineUnderTest b(options_for(cluster, 3s));
  auto a = std::make_unique<EngineUnderTest>(options_for(cluster, 60min));
  REQUIRE(acquire_once_known(*a, "x", 600s));
  a.reset();
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{2}}) {
    cluster.node(n).restart(/*keep_data=*/false);
  }
  b.wait_until([&] { return b.node_up(0) && b.node_up(1) && b.node_up(2); }, 5s);
  const auto until = Clock::now() + 6s;  // b's own window is 3 s
  while (Clock::now() < until) {
    REQUIRE_FALSE(b.acquire("x", 1s).ok());
    std::this_thread::sleep_for(200ms);
  }
  CHECK(b.engine().voting_nodes() == 2);
}

// The limit the test above left (a review reproduced it 5 of 5): when every node that carried the
// longer max ttl lost its data before the shorter instance's next heartbeat read it, that instance
// quarantined the restarted nodes for its own 3 s and granted over a 600 s lease.
TEST_CASE("no lease is longer than every other live instance knows, even if every node forgets",
          "[storage][redis]") {
  RedisCluster cluster(3);
  EngineUnderTest b(options_for(cluster, 3s));
  auto a = std::make_unique<EngineUnderTest>(options_for(cluster, 60min));
  SECTION("an acquire") {
    REQUIRE(acquire_once_known(*a, "x", 600s));
  }
  SECTION("an extend") {
    const auto until = Clock::now() + 5s;
    for (;;) {
      auto lease = a->acquire("x", 3s);  // b knows 3 s
      REQUIRE(lease.ok());
      if (a->extend("x", claim(lease), 600s).ok()) break;
      REQUIRE(a->release("x", claim(lease)).ok());
      REQUIRE(Clock::now() < until);
      std::this_thread::sleep_for(20ms);
    }
  }
  a.reset();
  for (std::size_t n = 0; n < cluster.size(); ++n) cluster.node(n).restart(/*keep_data=*/false);
  b.wait_until([&] { return b.node_up(0) && b.node_up(1) && b.node_up(2); }, 5s);
  const auto until = Clock::now() + 6s;  // b's own window is 3 s
  while (Clock::now() < until) {
    REQUIRE_FALSE(b.acquire("x", 1s).ok());
    std::this_thread::sleep_for(200ms);
  }
  CHECK(b.engine().voting_nodes() == 0);
}

// Review of the --max-ttl change (F1): an instance out of touch with the nodes for longer than its
// registry entry lives is invisible to one that starts meanwhile with a longer --max-ttl, grants
// and dies; when the nodes it granted on then restart empty, what the first one knew is too short.
TEST_CASE("an engine out of touch for longer than its entry lives forgets the longest ttl",
          "[storage][redis]") {
  RedisCluster cluster(3);
  // b reaches every node through a link of its own; a reaches node 2 through `a_link` only.
  std::vector<std::unique_ptr<fencelock::faults::FaultProxy>> links;
  auto b_options = options_for(cluster, 3s);
  b_options.nodes.clear();
  for (std::size_t n = 0; n < cluster.size(); ++n) {
    links.push_back(std::make_unique<fencelock::faults::FaultProxy>(cluster.node(n).port(), n + 1));
    b_options.nodes.push_back(parse_node_address(links.back()->address()).value());
  }
  fencelock::faults::FaultProxy a_link(cluster.node(2).port(), 9);
  auto a_options = options_for(cluster, 60min);
  a_options.nodes.back() = parse_node_address(a_link.address()).value();
  EngineUnderTest b(b_options);
  std::vector<std::size_t> restarted{0, 1, 2};
  SECTION("cut off from every node") {
    for (auto& link : links) link->set_fault(fencelock::faults::LinkFault::blackhole());
  }
  // The review of the fix: b still reached node 2, whose marker (never raised by a) kept its
  // history, and b learned the longest ttl back from that one marker.
  SECTION("cut off from a majority, still reaching a node the other never reached") {
    links[0]->set_fault(fencelock::faults::LinkFault::blackhole());
    links[1]->set_fault(fencelock::faults::LinkFault::blackhole());
    a_link.set_fault(fencelock::faults::LinkFault::blackhole());
    restarted = {0, 1};
  }
  std::this_thread::sleep_for(InstanceRegistry::kEntryLifetime + 1s);  // b's entries expire
  auto a = std::make_unique<EngineUnderTest>(a_options, nullptr, nullptr, false);
  a->wait_until([&] { return a->engine().voting_nodes() >= 2; });
  REQUIRE(acquire_once_known(*a, "x", 600s));
  a.reset();
  for (const std::size_t n : restarted) cluster.node(n).restart(/*keep_data=*/false);
  for (auto& link : links) link->heal();
  b.wait_until([&] { return b.node_up(0) && b.node_up(1) && b.node_up(2); }, 10s);
  const auto until = Clock::now() + 6s;  // b's own window is 3 s
  while (Clock::now() < until) {
    REQUIRE_FALSE(b.acquire("x", 1s).ok());
    std::this_thread::sleep_for(200ms);
  }
}
