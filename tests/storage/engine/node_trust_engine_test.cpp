// The restarted-node quarantine across engines (node_trust.h) against real redis-servers: a freshly
// started engine never grants over a lease another engine granted before lock nodes lost their
// keys.
#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <future>
#include <mutex>
#include <thread>
#include <utility>

#include "engine_calls.h"
#include "engine_under_test.h"
#include "fake_old_redis.h"
#include "sync_redis.h"
#include "temp_dir.h"

using namespace fencelock::storage;
using namespace fencelock::testing;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::string_view kRegistryKey = "fencelock:#instances:fencelock:lock:";

// Engine options whose token identity is `tokens` ("" = shared, "sqlite:…" = an embedded store).
EngineOptions options_with_tokens(RedisCluster& cluster, std::string tokens) {
  auto options = engine_options_for(cluster);
  options.exclusive_tokens = std::move(tokens);
  return options;
}

std::unique_ptr<EngineUnderTest> start_engine(RedisCluster& cluster,
                                              std::chrono::milliseconds max_ttl,
                                              bool wait_for_nodes = true) {
  auto options = engine_options_for(cluster);
  options.max_ttl = max_ttl;
  return std::make_unique<EngineUnderTest>(options, nullptr, nullptr, wait_for_nodes);
}

// A lease through one engine, then two of three nodes lose everything and that engine goes away
// (a rolling restart of fencelockd).
Lease hold_then_lose_two_nodes(RedisCluster& cluster, std::chrono::milliseconds max_ttl,
                               std::chrono::milliseconds ttl) {
  auto a = start_engine(cluster, max_ttl);
  auto lease = a->acquire("vault", ttl);
  REQUIRE(lease.ok());
  cluster.node(1).restart(/*keep_data=*/false);
  cluster.node(2).restart(/*keep_data=*/false);
  a.reset();
  return std::move(lease).value();
}

// A 30 s lease on "vault" through an engine with `options` on the SQLite file `file`; the engine
// crashes, then every node restarts empty.
Lease hold_then_wipe_every_node(RedisCluster& cluster, const EngineOptions& options,
                                const std::filesystem::path& file) {
  Lease holder;
  {
    EngineUnderTest a(options, sqlite_tokens_one_at_a_time(file));
    auto lease = a.acquire("vault", 30s);
    REQUIRE(lease.ok());
    holder = std::move(lease).value();
  }
  for (std::size_t i = 0; i < cluster.size(); ++i) cluster.node(i).restart(/*keep_data=*/false);
  return holder;
}

}  // namespace

TEST_CASE("a fresh engine does not grant over a lease granted before two nodes lost their keys",
          "[storage][redis]") {
  RedisCluster cluster(3);
  const Lease holder = hold_then_lose_two_nodes(cluster, 3s, 3s);

  auto b = start_engine(cluster, 3s, /*wait_for_nodes=*/false);
  b->wait_until([&] { return b->node_up(0) && b->node_up(1) && b->node_up(2); });
  CHECK(b->engine().voting_nodes() == 1);  // the two amnesiac nodes wait out the window
  CHECK(b->engine().node_statuses()[1].quarantined);
  while (Clock::now() < holder.valid_until()) {
    const auto intruder = b->acquire("vault", 1s);
    REQUIRE_FALSE(intruder.ok());
    std::this_thread::sleep_for(100ms);
  }
  b->wait_for_voting_nodes(3, 5s);
  b->wait_until_granting(3s);  // a majority forgot its binding: it is made again
  CHECK(b->acquire("vault", 1s).ok());
}

// Review of #12: nodes ran without persistence; two lose their keys in a restart and come back
// with appendfsync always. Durable config now says nothing about the writes lost before it.
TEST_CASE("a node that comes back durable after losing its keys is quarantined all the same",
          "[storage][redis]") {
  RedisCluster cluster(3);
  auto a = start_engine(cluster, 3s);
  const auto holder = a->acquire("vault", 3s);
  REQUIRE(holder.ok());
  for (const std::size_t n : {std::size_t{1}, std::size_t{2}}) {
    cluster.node(n).set_persistence(Persistence::kAofAlways);
    cluster.node(n).restart(/*keep_data=*/false);
  }
  a->wait_until([&] { return a->node_up(1) && a->node_up(2); });
  auto fresh = start_engine(cluster, 3s, /*wait_for_nodes=*/false);
  fresh->wait_until([&] { return fresh->node_up(0) && fresh->node_up(1) && fresh->node_up(2); });
  while (Clock::now() < holder->valid_until()) {
    REQUIRE_FALSE(a->acquire("vault", 1s).ok());
    REQUIRE_FALSE(fresh->acquire("vault", 1s).ok());
    std::this_thread::sleep_for(100ms);
  }
  fresh->wait_for_voting_nodes(3, 6s);
  fresh->wait_until_granting(3s);
  CHECK(fresh->acquire("vault", 1s).ok());
}

TEST_CASE("an engine with a shorter max ttl waits out the longest window another engine declared",
          "[storage][redis]") {
  RedisCluster cluster(3);
  const Lease holder = hold_then_lose_two_nodes(cluster, 4s, 4s);

  auto b = start_engine(cluster, 1s, /*wait_for_nodes=*/false);  // would trust the nodes after ~1 s
  std::this_thread::sleep_for(1500ms);
  CHECK(b->engine().voting_nodes() == 1);
  while (Clock::now() < holder.valid_until()) {
    REQUIRE_FALSE(b->acquire("vault", 500ms).ok());
    std::this_thread::sleep_for(100ms);
  }
  b->wait_for_voting_nodes(3, 5s);
}

TEST_CASE("a brand-new cluster is usable at once, even with an hour's max ttl",
          "[storage][redis]") {
  RedisCluster cluster(3);
  const auto started = Clock::now();
  auto a = start_engine(cluster, 1h);
  CHECK(Clock::now() - started < 5s);
  CHECK(a->acquire("first", 1s).ok());
  // The birth was recorded on the nodes: another fresh engine trusts them at once too.
  auto b = start_engine(cluster, 1h);
  CHECK(b->engine().voting_nodes() == 3);
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    SyncRedis node(cluster.node(i).port());
    CHECK(node.command({"HGET", "fencelock:#node", "admitted:fencelock:lock:"}).text ==
          node.info_field("server", "run_id"));
    CHECK(node.command({"HGET", "fencelock:#node", "max_ttl_ms"}).text == "3600000");
  }
}

// The cold-start race of a cluster of instances (the test command's cluster quickstart): another
// instance's birth records the nodes' admissions one node at a time, and this engine reads some
// nodes before their admission landed. Quarantined for the window, they would keep it from ever
// being ready; it waits for the admission in flight instead, and logs no quarantine.
TEST_CASE("an engine that reads the nodes during another's birth votes with all of them",
          "[storage][redis]") {
  RedisCluster cluster(3);
  struct Quarantines : EngineObserver {
    std::atomic<int> count{0};
    void on_node_quarantined(std::size_t, const std::string&, std::chrono::milliseconds) override {
      ++count;
    }
  } quarantines;
  const auto admit = [&](std::size_t i) {  // what a birth writes, node by node
    SyncRedis node(cluster.node(i).port());
    node.command({"HSET", "fencelock:#node",
                  "admitted:fencelock:lock:", node.info_field("server", "run_id")});
  };
  admit(0);
  admit(1);
  auto options = engine_options_for(cluster);
  options.max_ttl = 1h;
  EngineUnderTest a(options, nullptr, &quarantines, /*wait_for_nodes=*/false);
  a.wait_until([&] { return a.node_up(0) && a.node_up(1) && a.node_up(2); });
  // Within the wait; or after it (quarantined by then): the next read of its marker admits it,
  // and the voting count, /readyz's node states and the quarantine timer follow at once (the
  // review: they stayed "quarantined" for the window while the engine granted).
  const auto late = GENERATE(300ms, 3500ms);
  CAPTURE(late.count());
  std::this_thread::sleep_for(late);
  CHECK(a.engine().voting_nodes() == 2);
  // Within the wait node 2 is shown as waiting to be judged (/readyz: "checking"), with when it
  // is judged at the latest — not as a quarantine of a few seconds (the second review, F2).
  const NodeStatus waiting = a.engine().node_statuses()[2];
  CHECK(waiting.quarantined);
  CHECK(waiting.unjudged == (late < 2s));
  if (late < 2s) CHECK((waiting.votes_again_in && *waiting.votes_again_in <= 4s));
  admit(2);
  a.wait_for_voting_nodes(3, 5s);
  CHECK_FALSE(a.engine().node_statuses()[2].quarantined);
  a.wait_until_granting();
  CHECK(a.acquire("first", 1s).ok());
  if (late < 2s) CHECK(quarantines.count == 0);  // NodeTrust::kAdmissionWait
}

// The same race as it happens: instances started together on a new cluster all become ready.
TEST_CASE("engines started together on a new cluster all vote with every node",
          "[storage][redis]") {
  RedisCluster cluster(5);
  auto options = engine_options_for(cluster);
  options.max_ttl = 1h;
  for (int round = 0; round < 3; ++round) {
    CAPTURE(round);
    {
      std::vector<std::unique_ptr<EngineUnderTest>> engines;
      for (int i = 0; i < 3; ++i) {
        engines.push_back(std::make_unique<EngineUnderTest>(options, nullptr, nullptr, false));
      }
      for (auto& engine : engines) engine->wait_for_voting_nodes(5, 6s);
    }
    for (std::size_t i = 0; i < cluster.size(); ++i)  // a new cluster again
      SyncRedis(cluster.node(i).port()).command({"FLUSHALL"});
  }
}

// #32 item 5: every node lost its data at once. The nodes cannot tell that from a new cluster;
// the token store, which handed out tokens before, can.
TEST_CASE(
    "nodes that all lost their data are not a new cluster while the token store has a history",
    "[storage][redis]") {
  RedisCluster cluster(3);
  TempDir dir;
  const auto file = dir.path() / "tokens.db";
  auto options = options_with_tokens(cluster, "");
  options.max_ttl = 60s;
  const Lease holder = hold_then_wipe_every_node(cluster, options, file);

  SECTION("a fresh engine on that store quarantines every node") {
    EngineUnderTest b(options, sqlite_tokens_one_at_a_time(file), nullptr, false);
    b.wait_until([&] { return b.node_up(0) && b.node_up(1) && b.node_up(2); });
    CHECK(b.engine().voting_nodes() == 0);
    CHECK(b.engine().node_statuses()[0].quarantined);
    const auto intruder = b.acquire("vault", 1s);
    REQUIRE_FALSE(intruder.ok());
    CHECK(Clock::now() < holder.valid_until());
  }
  // Review of the --quarantine declarations (F1): the declaration of the engine with quarantine
  // was lost with the nodes, and one without it was born there and granted over the lease.
  SECTION("an engine without quarantine on that store never binds them, nor grants") {
    options.quarantine_restarted_nodes = false;
    EngineUnderTest b(options, sqlite_tokens_one_at_a_time(file), nullptr, false);
    b.wait_until([&] {  // granting, or refusing for the reason below
      const auto refusal = b.engine().grant_refusal();
      return b.engine().voting_nodes() == 3 &&
             (!refusal.has_value() || refusal->find("--new-lock-nodes") != std::string::npos);
    });
    const auto intruder = b.acquire("vault", 1s);
    REQUIRE_FALSE(intruder.ok());
    CHECK_THAT(*b.engine().grant_refusal(), Catch::Contains("--new-lock-nodes"));
    CHECK(Clock::now() < holder.valid_until());
    CHECK(SyncRedis(cluster.node(0).port()).command({"HEXISTS", kRegistryKey, "#tokens"}).integer ==
          0);
  }
  SECTION("the operator's word that the nodes are new lets them vote at once") {
    options.new_lock_nodes = true;
    EngineUnderTest b(options, sqlite_tokens_one_at_a_time(file));
    const auto next = b.acquire("vault", 1s);
    REQUIRE(next.ok());
    CHECK(next->token > holder.token);  // the store's history keeps the order
  }
  SECTION("a new token store on new nodes is a new cluster, usable at once") {
    EngineUnderTest b(options, sqlite_tokens_one_at_a_time(dir.path() / "new.db"));
    CHECK(b.acquire("vault", 1s).ok());
  }
}

// #33: a fencelockd starting on new lock nodes while one of three is silent. The silent node may
// hold what the two others lost, so nothing is granted until it answers — also on the operator's
// word (a majority birth on it was broken twice by the reviews: a wiped node looks new) — and the
// refusal names the node.
TEST_CASE("fresh nodes with one silent: nothing is granted until every node answered",
          "[storage][redis]") {
  RedisCluster cluster(3);
  auto options = engine_options_for(cluster);
  options.max_ttl = 60s;
  options.new_lock_nodes = GENERATE(false, true);
  CAPTURE(options.new_lock_nodes);
  cluster.node(2).pause();
  EngineUnderTest a(options, nullptr, nullptr, /*wait_for_nodes=*/false);
  a.wait_until([&] { return a.node_up(0) && a.node_up(1); });
  std::this_thread::sleep_for(1s);
  CHECK(a.engine().voting_nodes() == 0);
  CHECK_FALSE(a.acquire("first", 1s).ok());
  const auto refusal = a.engine().grant_refusal();
  REQUIRE(refusal.has_value());
  CHECK_THAT(*refusal,
             Catch::Contains(cluster.addresses()[2]) && Catch::Contains("waits for every node"));
  CHECK(SyncRedis(cluster.node(0).port()).command({"HEXISTS", kRegistryKey, "#tokens"}).integer ==
        0);
  cluster.node(2).resume();
  a.wait_until_granting();
  CHECK(a.acquire("first", 1s).ok());
  CHECK(a.engine().voting_nodes() == 3);
}

// F1 of the fourth review of #32: every node lost its data; a second deployment (another key
// prefix) with a new token store is born there and records its admissions. They say nothing about
// the first deployment's leases, which may still be live.
TEST_CASE("a new deployment born on nodes that all lost their data is no evidence for another",
          "[storage][redis]") {
  RedisCluster cluster(3);
  TempDir dir;
  auto options = options_with_tokens(cluster, "");
  options.max_ttl = 60s;
  const Lease holder = hold_then_wipe_every_node(cluster, options, dir.path() / "a.db");
  auto other = options;
  other.key_prefix = "other:";
  const std::string how = GENERATE(as<std::string>{}, "new store", "new lock nodes", "old version");
  CAPTURE(how);
  if (how == "old version") {  // its birth writes the unprefixed field
    for (std::size_t i = 0; i < cluster.size(); ++i) {
      SyncRedis node(cluster.node(i).port());
      node.command({"HSET", "fencelock:#node", "admitted", node.info_field("server", "run_id")});
    }
  } else {
    other.new_lock_nodes = how == "new lock nodes";
    EngineUnderTest b(other, sqlite_tokens_one_at_a_time(dir.path() / "b.db"));
    REQUIRE(b.acquire("vault", 1s).ok());  // born at once: its own names are free
    for (std::size_t i = 0; i < cluster.size(); ++i) {
      SyncRedis node(cluster.node(i).port());
      CHECK(node.command({"HGET", "fencelock:#node", "admitted:other:"}).text ==
            node.info_field("server", "run_id"));
      CHECK(node.command({"HEXISTS", "fencelock:#node", "admitted:fencelock:lock:"}).integer == 0);
    }
  }

  EngineUnderTest a(options, sqlite_tokens_one_at_a_time(dir.path() / "a.db"), nullptr, false);
  a.wait_until([&] { return a.node_up(0) && a.node_up(1) && a.node_up(2); });
  CHECK(a.engine().voting_nodes() == 0);
  const auto intruder = a.acquire("vault", 1s);
  REQUIRE_FALSE(intruder.ok());
  CHECK(Clock::now() < holder.valid_until());
}

// Versions before admissions were recorded per key prefix wrote one "admitted" field for all. On
// the operator's word (no node lost its data since), an upgraded engine adopts it for its own
// prefix rather than quarantining every node for the window; without it, it does not.
TEST_CASE("an admission recorded by an older version is adopted on the operator's word only",
          "[storage][redis]") {
  RedisCluster cluster(3);
  TempDir dir;
  auto options = options_with_tokens(cluster, "");
  options.max_ttl = 1h;
  { EngineUnderTest a(options, sqlite_tokens_one_at_a_time(dir.path() / "a.db")); }
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    SyncRedis node(cluster.node(i).port());
    node.command({"HDEL", "fencelock:#node", "admitted:fencelock:lock:"});
    node.command({"HSET", "fencelock:#node", "admitted", node.info_field("server", "run_id")});
  }
  SyncRedis node0(cluster.node(0).port());
  node0.command({"HSET", "fencelock:#node", "fences_missing", "1"});

  SECTION("without it, the nodes wait out the window") {
    EngineUnderTest a(options, sqlite_tokens_one_at_a_time(dir.path() / "a.db"), nullptr, false);
    a.wait_until([&] { return a.node_up(0) && a.node_up(1) && a.node_up(2); });
    CHECK(a.engine().voting_nodes() == 0);
    CHECK(a.engine().node_statuses()[1].quarantined);
    return;
  }
  options.adopt_legacy_markers = true;
  EngineUnderTest a(options, sqlite_tokens_one_at_a_time(dir.path() / "a.db"), nullptr, false);
  a.wait_for_voting_nodes(3, 10s);  // node 0 only once its fences were copied back
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    SyncRedis node(cluster.node(i).port());
    CHECK(node.command({"HGET", "fencelock:#node", "admitted:fencelock:lock:"}).text ==
          node.info_field("server", "run_id"));
  }
  a.wait_until(
      [&] {
        return node0.command({"HGET", "fencelock:#node", "fences_missing:fencelock:lock:"}).kind ==
               NodeReply::Kind::kNil;
      },
      5s);
}

TEST_CASE("a lock node older than Redis 6.0 is refused at the handshake, with the reason",
          "[storage]") {
  // A RESP peer that introduces itself as Redis 5.0.14: the handshake must refuse it by version,
  // not count script errors as failed votes.
  FakeOldRedis old_redis("5.0.14");
  struct Refusals : EngineObserver {
    std::mutex mutex;
    std::vector<std::string> reasons;
    void on_node_refused(std::size_t, const std::string&, const std::string& why) override {
      std::lock_guard<std::mutex> lock(mutex);
      reasons.push_back(why);
    }
  } refusals;
  EngineOptions options;
  options.nodes.push_back(
      parse_node_address("127.0.0.1:" + std::to_string(old_redis.port())).value());
  EngineUnderTest t(options, nullptr, &refusals, /*wait_for_nodes=*/false);
  t.wait_until([&] {
    std::lock_guard<std::mutex> lock(refusals.mutex);
    return !refusals.reasons.empty();
  });
  std::this_thread::sleep_for(300ms);  // a few reconnects: still one report
  std::lock_guard<std::mutex> lock(refusals.mutex);
  CHECK(refusals.reasons.size() == 1);
  CHECK_THAT(refusals.reasons.front(),
             Catch::Contains("Redis 5.0.14 is too old") && Catch::Contains("6.0"));
  CHECK(t.engine().voting_nodes() == 0);
}

TEST_CASE(
    "an engine with an embedded token source refuses to grant while another instance shares its "
    "nodes",
    "[storage][redis]") {
  RedisCluster cluster(3);
  auto options_for = [&](std::string tokens) { return options_with_tokens(cluster, tokens); };
  auto a = std::make_unique<EngineUnderTest>(options_for("sqlite:a"));
  a->wait_until([&] { return !a->engine().grant_refusal(); });
  REQUIRE(a->acquire("first", 1s).ok());

  SECTION("a second embedded source: the newcomer never grants, the first stops within a round") {
    EngineUnderTest b(options_for("sqlite:b"), nullptr, nullptr);
    const auto refused = b.acquire("second", 1s);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::kUnavailable);
    b.wait_until([&] {
      return b.engine().grant_refusal().has_value() &&
             b.engine().grant_refusal()->find("another fencelockd") != std::string::npos;
    });
    CHECK_THAT(*b.engine().grant_refusal(), Catch::Contains("shared token source"));
    a->wait_until([&] { return a->engine().grant_refusal().has_value(); }, 5s);
    CHECK(a->acquire("third", 1s).error().code == ErrorCode::kUnavailable);
  }
  SECTION("an instance with a shared token source: both refuse (the nodes are bound to a's)") {
    EngineUnderTest shared(options_for(""), nullptr, nullptr);
    shared.wait_until([&] {
      const auto why = shared.engine().grant_refusal();
      return why && why->find("another token store") != std::string::npos;
    });
    CHECK_THAT(*shared.engine().grant_refusal(), Catch::Contains("another token store (sqlite:a"));
    a->wait_until([&] { return a->engine().grant_refusal().has_value(); }, 5s);
    CHECK(shared.acquire("shared", 1s).error().code == ErrorCode::kUnavailable);
  }
  // Review of #12: the registry only saw instances alive at the same time, so a second embedded
  // source started after the first had stopped handed out token 1 again.
  SECTION("after the first stops, another embedded source still never grants: the nodes remember") {
    a.reset();  // a clean stop: its registry entry is gone at once
    EngineUnderTest b(options_for("sqlite:b"), nullptr, nullptr);
    b.wait_until([&] {
      const auto why = b.engine().grant_refusal();
      return why && why->find("another token store") != std::string::npos;
    });
    CHECK_THAT(*b.engine().grant_refusal(), Catch::Contains("another token store (sqlite:a"));
    CHECK(b.acquire("second", 1s).error().code == ErrorCode::kUnavailable);
    cluster.node(0).restart(/*keep_data=*/false);  // one node forgets: the others still remember
    std::this_thread::sleep_for(1500ms);
    CHECK(b.engine().grant_refusal().has_value());
    // Second review of #12: b bound the forgetful node to its own store, so a restarted a would
    // then have refused forever too. A node is bound only by an engine that saw no other binding.
    CHECK(SyncRedis(cluster.node(0).port()).command({"HEXISTS", kRegistryKey, "#tokens"}).integer ==
          0);
  }
  SECTION(
      "the same store again (a restart) is no conflict, and a clean stop frees the nodes at once") {
    a.reset();
    // What a crashed predecessor leaves: an entry of the same store that nobody renews.
    for (std::size_t i = 0; i < cluster.size(); ++i) {
      SyncRedis node(cluster.node(i).port());
      const auto now_ms = std::stoll(node.command({"TIME"}).elements[0].text) * 1000;
      node.command(
          {"HSET", kRegistryKey, "crashed", std::to_string(now_ms + 10'000) + " sqlite:a"});
    }
    EngineUnderTest again(options_for("sqlite:a"));
    again.wait_until([&] { return !again.engine().grant_refusal(); });
    CHECK(again.acquire("again", 1s).ok());
    EngineUnderTest b(options_for("sqlite:b"), nullptr, nullptr, /*wait_for_nodes=*/true);
    b.wait_until([&] { return b.engine().grant_refusal().has_value(); });
  }
}

// Second review of #12: a newcomer that once saw the nodes bound to another store must not bind
// (and grant on) nodes that lost their data just because the bound ones stopped answering.
TEST_CASE("an engine that saw the nodes bound to another store never binds them, whatever answers",
          "[storage][redis]") {
  RedisCluster cluster(3);
  auto options_for = [&](std::string tokens) { return options_with_tokens(cluster, tokens); };
  {
    EngineUnderTest a(options_for("sqlite:a"));
    REQUIRE_FALSE(a.engine().grant_refusal());
  }
  EngineUnderTest b(options_for("sqlite:b"));
  CHECK_THAT(*b.engine().grant_refusal(), Catch::Contains("another token store (sqlite:a"));
  cluster.node(0).pause();  // the only node still bound to a stops answering...
  cluster.node(1).restart(/*keep_data=*/false);  // ...and the two that answer have forgotten it
  cluster.node(2).restart(/*keep_data=*/false);
  std::this_thread::sleep_for(2500ms);  // rounds that reach a quorum of unbound nodes
  CHECK(b.engine().grant_refusal().has_value());
  CHECK(b.acquire("b", 1s).error().code == ErrorCode::kUnavailable);
  for (const std::size_t i : {std::size_t{1}, std::size_t{2}}) {
    CHECK(SyncRedis(cluster.node(i).port()).command({"HEXISTS", kRegistryKey, "#tokens"}).integer ==
          0);
  }
  cluster.node(0).resume();
}

// Second review of #12: a fresh engine granted before its first registry round had answered.
TEST_CASE("engines with different token stores started together on fresh nodes never both grant",
          "[storage][redis]") {
  RedisCluster cluster(3);
  auto options_for = [&](std::string tokens) { return options_with_tokens(cluster, tokens); };
  EngineUnderTest a(options_for("sqlite:a"), nullptr, nullptr, /*wait_for_nodes=*/false);
  EngineUnderTest shared(options_for(""), nullptr, nullptr, /*wait_for_nodes=*/false);
  bool a_granted = false, shared_granted = false;
  const auto until = Clock::now() + 3s;
  while (Clock::now() < until) {
    a_granted = a_granted || !a.engine().grant_refusal();
    shared_granted = shared_granted || !shared.engine().grant_refusal();
    std::this_thread::sleep_for(1ms);
  }
  CHECK_FALSE((a_granted && shared_granted));
  // Whichever bound a majority first may go on granting; the embedded one never does beside it.
  CHECK(a.engine().grant_refusal().has_value());
}

TEST_CASE("an engine whose registry checks cannot reach a majority stops granting",
          "[storage][redis]") {
  // An embedded source's verdict is fresh for 3 s, a shared one's for 10 s (instance_registry.h).
  const bool exclusive = GENERATE(true, false);
  RedisCluster cluster(3);
  auto options = engine_options_for(cluster);
  if (exclusive) options.exclusive_tokens = "sqlite:only";
  EngineUnderTest t(options);
  t.wait_until([&] { return !t.engine().grant_refusal(); });
  cluster.node(0).pause();
  cluster.node(1).pause();
  const auto paused_at = std::chrono::steady_clock::now();
  t.wait_until([&] { return t.engine().grant_refusal().has_value(); },
               exclusive ? 6s : 14s);  // no fresh check
  if (!exclusive) CHECK(std::chrono::steady_clock::now() - paused_at > 7s);
  cluster.node(0).resume();
  cluster.node(1).resume();
  t.wait_until([&] { return !t.engine().grant_refusal(); }, 6s);
  CHECK(t.acquire("back", 1s).ok());
}

// Review of the registry (F1): the registry counted nodes that had just restarted empty, and a
// newcomer's first majority round could leave out the one node that still remembered.
TEST_CASE("a newcomer never binds nodes that restarted empty while the node that remembers is away",
          "[storage][redis]") {
  RedisCluster cluster(3);
  auto options_for = [&](std::string tokens) {
    auto options = options_with_tokens(cluster, std::move(tokens));
    options.max_ttl = 1s;
    return options;
  };
  {
    EngineUnderTest a(options_for("sqlite:a"));
    REQUIRE(a.acquire("vault", 1s).ok());
  }
  cluster.node(0).restart(/*keep_data=*/false);  // a majority loses its data together...
  cluster.node(1).restart(/*keep_data=*/false);
  cluster.node(2).pause();  // ...and the one that remembers is away when the newcomer starts
  {
    EngineUnderTest b(options_for("sqlite:b"), nullptr, nullptr, /*wait_for_nodes=*/false);
    std::this_thread::sleep_for(2500ms);  // nodes 0 and 1 answer every round, and vote
    CHECK(b.engine().grant_refusal().has_value());
    for (const std::size_t i : {std::size_t{0}, std::size_t{1}}) {
      CHECK(
          SyncRedis(cluster.node(i).port()).command({"HEXISTS", kRegistryKey, "#tokens"}).integer ==
          0);
    }
    cluster.node(2).resume();
    b.wait_until([&] {
      const auto why = b.engine().grant_refusal();
      return why && why->find("another token store (sqlite:a") != std::string::npos;
    });
  }
  // The right store binds the forgotten nodes again once it sees every node, and grants.
  EngineUnderTest again(options_for("sqlite:a"), nullptr, nullptr, /*wait_for_nodes=*/false);
  again.wait_until([&] { return !again.engine().grant_refusal(); });
  CHECK(again.acquire("vault", 1s).ok());
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    CHECK(SyncRedis(cluster.node(i).port()).command({"HGET", kRegistryKey, "#tokens"}).text ==
          "sqlite:a");
  }
}

// Review of the registry (F2): no engine re-bound a forgotten node while an instance of another
// store was alive, even a refusing one, so single restarts added up to a forgotten majority.
TEST_CASE("an engine binds nodes that forgot its store while one remembers, whatever else runs",
          "[storage][redis]") {
  RedisCluster cluster(3);
  auto options_for = [&](std::string tokens) {
    auto options = options_with_tokens(cluster, std::move(tokens));
    options.max_ttl = 1s;  // a short quarantine
    return options;
  };
  EngineUnderTest shared(options_for(""));
  REQUIRE_FALSE(shared.engine().grant_refusal());
  EngineUnderTest stray(options_for("sqlite:stray"));  // misconfigured: refuses, but is live
  REQUIRE(stray.engine().grant_refusal().has_value());
  for (const std::size_t forgetful : {std::size_t{0}, std::size_t{1}}) {  // one after the other
    cluster.node(forgetful).restart(/*keep_data=*/false);
    shared.wait_until(
        [&] {
          return SyncRedis(cluster.node(forgetful).port())
                     .command({"HGET", kRegistryKey, "#tokens"})
                     .text == "shared";
        },
        5s);
    shared.wait_for_voting_nodes(3, 5s);
    CHECK(shared.acquire("still", 1s).ok());
  }
  // A majority at once: the one node that remembers is enough to bind them back.
  cluster.node(0).restart(/*keep_data=*/false);
  cluster.node(2).restart(/*keep_data=*/false);
  shared.wait_until(
      [&] {
        return SyncRedis(cluster.node(0).port()).command({"HGET", kRegistryKey, "#tokens"}).text ==
                   "shared" &&
               SyncRedis(cluster.node(2).port()).command({"HGET", kRegistryKey, "#tokens"}).text ==
                   "shared";
      },
      5s);
  shared.wait_for_voting_nodes(3, 5s);  // their quarantine
  shared.wait_until_granting(5s);
  CHECK(shared.acquire("still", 1s).ok());
  CHECK(stray.engine().grant_refusal().has_value());
}

// Review of the registry (F5): the verdict was read when an acquire started, not when it was
// answered, so a token draw that took long could be granted after another instance appeared.
TEST_CASE("a grant is refused if the registry's verdict changed while its token was drawn",
          "[storage][redis]") {
  class GatedTokens final : public TokenSource {
   public:
    void next(std::string_view, Callback done) override {
      std::lock_guard<std::mutex> lock(mutex_);
      pending_ = std::move(done);
    }
    void current(std::string_view, Callback done) override { done(std::uint64_t{0}); }
    void skip_past(std::string_view, std::uint64_t) override {}
    bool has_history() const override { return false; }
    TokenTraits traits() const override { return {}; }
    bool ready() const override { return true; }
    void stop() override {}
    bool drawing() {
      std::lock_guard<std::mutex> lock(mutex_);
      return static_cast<bool>(pending_);
    }
    void answer(std::uint64_t token) {
      Callback done;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        done = std::exchange(pending_, nullptr);
      }
      done(token);
    }

   private:
    std::mutex mutex_;
    Callback pending_;
  };
  RedisCluster cluster(3);
  auto gate = std::make_shared<GatedTokens>();
  EngineUnderTest a(options_with_tokens(cluster, "sqlite:a"), gate);
  REQUIRE_FALSE(a.engine().grant_refusal());
  auto grant = std::async(std::launch::async, [&] { return a.acquire("vault", 10s); });
  a.wait_until([&] { return gate->drawing(); });
  EngineUnderTest b(options_with_tokens(cluster, "sqlite:b"), nullptr, nullptr, false);
  a.wait_until([&] { return a.engine().grant_refusal().has_value(); }, 5s);
  gate->answer(1);
  const auto lease = grant.get();
  REQUIRE_FALSE(lease.ok());
  CHECK(lease.error().code == ErrorCode::kUnavailable);
  CHECK_THAT(lease.error().message, Catch::Contains("another fencelockd"));
  a.wait_until([&] { return SyncRedis(cluster.node(0).port()).count_keys() == 0; }, 2s);
}

// Review of the registry (F4): two processes on copies of one SQLite file (a cloned volume) share
// the store id, and each took the other for its own earlier run.
TEST_CASE("two instances on copies of one token file both refuse until one stops",
          "[storage][redis]") {
  RedisCluster cluster(3);
  EngineUnderTest first(options_with_tokens(cluster, "sqlite:same"));
  REQUIRE_FALSE(first.engine().grant_refusal());
  {
    EngineUnderTest copy(options_with_tokens(cluster, "sqlite:same"), nullptr, nullptr, false);
    for (auto* engine : {&first, &copy}) {
      engine->wait_until(
          [&] {
            const auto why = engine->engine().grant_refusal();
            return why && why->find("a copy of this token file") != std::string::npos;
          },
          5s);
    }
    CHECK(first.acquire("vault", 1s).error().code == ErrorCode::kUnavailable);
  }
  first.wait_until_granting(5s);  // the copy stopped cleanly: its entry is gone
  CHECK(first.acquire("vault", 1s).ok());
}

// Second review of the registry (G4): the newcomer above never saw its nodes vote; here they do
// (no quarantine), and only the every-node rule keeps it from binding them.
TEST_CASE("a newcomer whose nodes vote still never binds while the node that remembers is away",
          "[storage][redis]") {
  RedisCluster cluster(3);
  {
    EngineUnderTest a(options_with_tokens(cluster, "sqlite:a"));
    REQUIRE(a.acquire("vault", 1s).ok());
  }
  cluster.node(0).restart(/*keep_data=*/false);
  cluster.node(1).restart(/*keep_data=*/false);
  cluster.node(2).pause();
  auto options = options_with_tokens(cluster, "sqlite:b");
  options.quarantine_restarted_nodes = false;  // nodes 0 and 1 vote as soon as they answer
  EngineUnderTest b(options, nullptr, nullptr, /*wait_for_nodes=*/false);
  b.wait_until([&] { return b.engine().voting_nodes() == 2; });
  std::this_thread::sleep_for(1500ms);
  for (const std::size_t i : {std::size_t{0}, std::size_t{1}}) {
    CHECK(SyncRedis(cluster.node(i).port()).command({"HEXISTS", kRegistryKey, "#tokens"}).integer ==
          0);
  }
  CHECK(b.engine().grant_refusal().has_value());
  cluster.node(2).resume();
  b.wait_until([&] {
    const auto why = b.engine().grant_refusal();
    return why && why->find("another token store (sqlite:a") != std::string::npos;
  });
}

// Second review of the registry (G3): with one node in quarantine, a late answer from a voting
// node was taken for a node that forgot its binding.
TEST_CASE("a late answer during another node's quarantine is not taken for a lost binding",
          "[storage][redis]") {
  RedisCluster cluster(3);
  EngineUnderTest t(engine_options_for(cluster));  // a one-hour quarantine
  cluster.node(0).restart(/*keep_data=*/false);
  t.wait_until([&] { return t.node_up(0) && t.engine().node_statuses()[0].quarantined; });
  bool said_forgotten = false;
  cluster.node(1).pause();
  const auto until = Clock::now() + 1500ms;
  while (Clock::now() < until) {
    const auto why = t.engine().grant_refusal();
    said_forgotten = said_forgotten || (why && why->find("record this") != std::string::npos);
    std::this_thread::sleep_for(5ms);
  }
  cluster.node(1).resume();
  CHECK_FALSE(said_forgotten);
  t.wait_for_voting_nodes(2, 5s);
  t.wait_until_granting(3s);
  CHECK(t.acquire("vault", 1s).ok());
}

// Issue #32 item 9: an instance with --quarantine off trusts a node that restarted empty at once.
// Started beside instances with it on, it granted over their lease once a majority had restarted.
TEST_CASE("instances that disagree on --quarantine never grant beside each other",
          "[storage][redis]") {
  RedisCluster cluster(3);
  auto with_quarantine = engine_options_for(cluster);
  with_quarantine.max_ttl = 2s;
  auto without = with_quarantine;
  without.quarantine_restarted_nodes = false;
  const auto refusal_mentions = [](EngineUnderTest& t, std::string_view text) {
    const auto refusal = t.engine().grant_refusal();
    return refusal.has_value() && refusal->find(text) != std::string::npos;
  };

  SECTION("one without quarantine, started after a majority lost another's lease, grants nothing") {
    EngineUnderTest on(with_quarantine);
    auto holder = on.acquire("vault", 2s);
    REQUIRE(holder.ok());
    cluster.node(0).restart(/*keep_data=*/false);
    cluster.node(1).restart(/*keep_data=*/false);
    EngineUnderTest off(without, nullptr, nullptr, /*wait_for_nodes=*/false);
    off.wait_until([&] {
      const auto refusal = off.engine().grant_refusal();
      return off.engine().voting_nodes() == 3 && off.node_up(2) &&
             refusal != std::string(InstanceRegistry::kNotYetChecked);
    });
    while (Clock::now() < holder.value().valid_until()) {
      const auto intruder = off.acquire("vault", 1s);
      REQUIRE_FALSE(intruder.ok());
      CHECK(intruder.error().code == ErrorCode::kUnavailable);
      std::this_thread::sleep_for(100ms);
    }
    CHECK(refusal_mentions(off, "--quarantine on"));
    // The one with quarantine refuses too while the other runs.
    on.wait_until([&] { return refusal_mentions(on, "--quarantine off"); }, 3s);
  }
  SECTION("one with quarantine, started beside one without, refuses until that one stops") {
    auto off = std::make_unique<EngineUnderTest>(without);
    REQUIRE(off->acquire("vault", 500ms).ok());
    EngineUnderTest on(with_quarantine, nullptr, nullptr, /*wait_for_nodes=*/false);
    on.wait_until([&] { return refusal_mentions(on, "--quarantine off"); });
    CHECK(on.acquire("other", 1s).error().code == ErrorCode::kUnavailable);
    off->wait_until([&] { return refusal_mentions(*off, "--quarantine on"); }, 3s);
    off.reset();  // a clean stop withdraws its declaration
    on.wait_until_granting(3s);
    CHECK(on.acquire("other", 1s).ok());
  }
}

// A limit docs/architecture.md stated (issue #32, instances with other flags): deployments whose
// key prefixes overlap share lock keys ("app:" + "x:doc" is "app:x:" + "doc") but not their
// registries or node records, so neither knew of the other.
TEST_CASE("deployments whose key prefixes overlap both refuse to grant", "[storage][redis]") {
  RedisCluster cluster(3);
  const auto with_prefix = [&](std::string prefix) {
    auto options = engine_options_for(cluster);
    options.key_prefix = std::move(prefix);
    return options;
  };
  const auto refusal_mentions = [](EngineUnderTest& t, std::string_view text) {
    const auto refusal = t.engine().grant_refusal();
    return refusal.has_value() && refusal->find(text) != std::string::npos;
  };
  EngineUnderTest a(with_prefix("app:"));
  REQUIRE(a.acquire("x:doc", 1s).ok());
  EngineUnderTest b(with_prefix("app:x:"), nullptr, nullptr, /*wait_for_nodes=*/false);
  b.wait_until([&] { return refusal_mentions(b, "--key-prefix \"app:\""); });
  CHECK(b.acquire("doc", 1s).error().code == ErrorCode::kUnavailable);
  a.wait_until([&] { return refusal_mentions(a, "--key-prefix \"app:x:\""); }, 3s);
  CHECK(a.acquire("y", 1s).error().code == ErrorCode::kUnavailable);
  // A prefix that is not the start of another's shares nothing.
  EngineUnderTest c(with_prefix("apple:"));
  CHECK_FALSE(refusal_mentions(c, "--key-prefix"));
}
