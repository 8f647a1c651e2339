// LockEngine::revoke on real redis-servers: it takes a lock whatever holds it, with a token above
// the revoked lease's, so the revoked lease can no longer extend or release and a fenced store
// would refuse it; waiters keep hearing of releases; it never runs without tokens.
#include <catch2/catch.hpp>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "engine_calls.h"
#include "engine_under_test.h"
#include "fencelock/storage/lease.h"
#include "fencelock/storage/sqlite_token_source.h"
#include "redis_server.h"
#include "sync_redis.h"
#include "tcp_proxy.h"
#include "temp_dir.h"

using namespace fencelock::storage;
using namespace fencelock::testing;

namespace {

Result<Lease> revoke(EngineUnderTest& t, const std::string& name, std::chrono::milliseconds ttl,
                     const std::string& holder = {}) {
  return await<Lease>([&](auto done) {
    t.engine().revoke(AcquireRequest{name, ttl, 0ms, {}, holder}, std::move(done));
  });
}

// How many revokes' saved keys of `name` are on the cluster's nodes (lua_revoke_scripts.h).
std::int64_t saved_keys_left(RedisCluster& cluster, const std::string& name) {
  std::int64_t left = 0;
  for (std::size_t i = 0; i < cluster.size(); ++i)
    left += SyncRedis(cluster.node(i).port()).count_keys("fencelock:lock:" + name + "#revoked:*");
  return left;
}

// Three nodes, SQLite tokens, and the options of an engine that may revoke with a 2 ms ttl (a
// revoke that always fails for want of validity) and waits `node_timeout` for a node.
struct FailedRevokeSetup {
  explicit FailedRevokeSetup(std::chrono::milliseconds node_timeout) {
    revoker_options.min_ttl = 1ms;
    revoker_options.node_timeout = node_timeout;
  }
  RedisCluster cluster{3};
  TempDir dir;
  std::shared_ptr<SqliteTokenSource> tokens = tokens_in(dir);
  EngineOptions revoker_options = engine_options_for(cluster);
};

}  // namespace

TEST_CASE("a revoke takes a held lock with a larger token and the old lease is gone",
          "[storage][redis]") {
  RedisCluster cluster(5);
  TempDir dir;
  const auto tokens = tokens_in(dir);
  EngineUnderTest t(engine_options_for(cluster), tokens);

  auto stuck = t.acquire("invoice", 60s);
  REQUIRE(stuck.ok());
  auto revoker = revoke(t, "invoice", 10s, "ops-oncall");
  REQUIRE(revoker.ok());
  CHECK(revoker->token > stuck->token);
  CHECK(revoker->validity > 9s);

  auto status = t.inspect("invoice");
  REQUIRE(status.ok());
  CHECK(status->token == revoker->token);
  CHECK(status->holder == "ops-oncall");
  CHECK(*status->remaining <= 10s);  // the revoker's ttl, not the revoked lease's 60 s

  CHECK(t.extend("invoice", claim(stuck), 60s).error().code == ErrorCode::kLeaseLost);
  CHECK(t.release("invoice", claim(stuck)).value() == false);
  CHECK(t.inspect("invoice")->token == revoker->token);  // neither touched the revoker's keys

  SECTION("the revoker's lease is a lease like any other") {
    CHECK(t.extend("invoice", claim(revoker), 20s).ok());
    CHECK(t.release("invoice", claim(revoker)).value());
    auto next = t.acquire("invoice", 1s);
    REQUIRE(next.ok());
    CHECK(next->token > revoker->token);
  }
  SECTION("a revoke of a free lock is a grant, and a revoke of a revoke takes it again") {
    auto again = revoke(t, "invoice", 10s);
    REQUIRE(again.ok());
    CHECK(again->token > revoker->token);
    CHECK(t.extend("invoice", claim(revoker), 1s).error().code == ErrorCode::kLeaseLost);
    auto free_one = revoke(t, "unheld", 10s);
    REQUIRE(free_one.ok());
    CHECK(t.inspect("unheld")->held);
  }
  SECTION("a revoke of one name of a lock set ends the set's lease") {
    auto set = acquire_set(t, {"a", "b"}, 60s);
    REQUIRE(set.ok());
    auto took_b = revoke(t, "b", 10s);
    REQUIRE(took_b.ok());
    CHECK(took_b->token > set->tokens[1]);
    CHECK(extend_set(t, set->names, set_claim(*set), 60s).error().code == ErrorCode::kLeaseLost);
    CHECK(release_set(t, set->names, set_claim(*set)).value() == false);
    CHECK_FALSE(t.inspect("a")->held);  // the set's release freed what it still held
    CHECK(t.inspect("b")->token == took_b->token);
  }
}

TEST_CASE("a revoke keeps the waiters' mark: another engine's waiter hears the revoker's release",
          "[storage][redis]") {
  RedisCluster cluster(3);
  TempDir dir;
  const auto tokens = tokens_in(dir);
  auto options = engine_options_for(cluster);
  options.retry_delay = 3s;  // a waiter that heard nothing would sleep 3 s
  options.retry_jitter = 0ms;
  EngineUnderTest a(options, tokens);
  EngineUnderTest b(options, tokens);
  a.wait_until([&] {  // both engines listen for release announcements on every node
    for (std::size_t i = 0; i < cluster.size(); ++i) {
      const SyncReply reply = SyncRedis(cluster.node(i).port())
                                  .command({"PUBSUB", "NUMSUB", std::string(kAnnouncementChannel)});
      if (reply.elements.size() != 2 || reply.elements[1].integer != 2) return false;
    }
    return true;
  });
  auto stuck = a.acquire("job", 30s);
  REQUIRE(stuck.ok());
  Result<Lease> waited = make_error(ErrorCode::kInternal, "not run");
  std::thread waiter([&] { waited = b.acquire("job", 30s, /*wait=*/20s); });
  a.wait_until([&] {
    const auto value = SyncRedis(cluster.node(0).port()).get("fencelock:lock:job");
    return value && value->find('#') != std::string::npos;
  });
  auto revoker = revoke(a, "job", 30s);
  REQUIRE(revoker.ok());
  const auto released_at = std::chrono::steady_clock::now();
  REQUIRE(a.release("job", claim(revoker)).value());
  waiter.join();
  REQUIRE(waited.ok());
  CHECK(waited->token > revoker->token);
  // Announced (the mark survived the revoke), not found by the waiter's sleep to the old expiry.
  CHECK(std::chrono::steady_clock::now() - released_at < 1500ms);
}

TEST_CASE("an engine without fencing tokens refuses to revoke and writes nothing",
          "[storage][redis]") {
  RedisCluster cluster(3);
  EngineUnderTest t(engine_options_for(cluster));
  auto held = t.acquire("x", 10s);
  REQUIRE(held.ok());
  auto refused = revoke(t, "x", 10s);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::kInvalidArgument);
  CHECK(t.extend("x", claim(held), 10s).ok());
}

namespace {

// Five nodes; an acquire of "job" whose yes votes from nodes 0 and 1 are in while node 2 (paused)
// holds back its third; a revoke of "job" by another engine meanwhile, which reaches nodes 0 and 1
// and, if `revoker_keeps_node_2`, node 2 too (its revoke times out there); then the acquire's
// grant must hold on a quorum: a third engine's acquire is refused. Nodes 3 and 4 are cut off for
// both (relays retargeted to a closed port).
void check_acquire_in_flight_beside_a_failed_revoke(bool revoker_keeps_node_2) {
  RedisCluster cluster(5);
  TempDir dir;
  const auto tokens = tokens_in(dir);
  std::vector<std::unique_ptr<TcpProxy>> revoker_relays;
  std::vector<std::unique_ptr<TcpProxy>> acquirer_relays;
  auto revoker_options = engine_options_for(cluster);
  auto acquirer_options = engine_options_for(cluster);
  const auto relay_to = [&](std::vector<std::unique_ptr<TcpProxy>>& relays, EngineOptions& options,
                            std::size_t node) {
    relays.push_back(std::make_unique<TcpProxy>(cluster.node(node).port()));
    options.nodes[node] =
        parse_node_address("127.0.0.1:" + std::to_string(relays.back()->port())).value();
  };
  for (std::size_t i = 2; i < 5; ++i) {
    relay_to(revoker_relays, revoker_options, i);
    if (i != 2) relay_to(acquirer_relays, acquirer_options, i);
  }
  acquirer_options.node_timeout = 5s;  // waits long for node 2's answer
  EngineUnderTest acquirer(acquirer_options, tokens);
  EngineUnderTest revoker(revoker_options, tokens);
  EngineUnderTest other(engine_options_for(cluster), tokens);

  const std::uint16_t closed = pick_free_port();  // nothing listens there
  for (std::size_t r = revoker_keeps_node_2 ? 1 : 0; r < revoker_relays.size(); ++r)
    revoker_relays[r]->retarget(closed);
  for (auto& relay : acquirer_relays) relay->retarget(closed);
  revoker.wait_until([&] {
    return (revoker_keeps_node_2 || !revoker.node_up(2)) && !revoker.node_up(3) &&
           !revoker.node_up(4);
  });
  acquirer.wait_until([&] { return !acquirer.node_up(3) && !acquirer.node_up(4); });

  // The acquire: yes from nodes 0 and 1, nodes 3 and 4 unreachable, node 2's answer pending.
  cluster.node(2).pause();
  auto granted = std::async(std::launch::async, [&] { return acquirer.acquire("job", 10s); });
  acquirer.wait_until([&] {
    return SyncRedis(cluster.node(0).port()).get("fencelock:lock:job").has_value() &&
           SyncRedis(cluster.node(1).port()).get("fencelock:lock:job").has_value();
  });
  auto revoked = revoke(revoker, "job", 10s);
  REQUIRE_FALSE(revoked.ok());
  CHECK(revoked.error().code == ErrorCode::kUnavailable);
  cluster.node(2).resume();
  auto lease = granted.get();
  REQUIRE(lease.ok());
  other.wait_until([&] { return other.node_up(2); });

  // The grant holds on a quorum (nodes 0, 1 and 2): nobody else gets the lock while it lasts.
  for (std::size_t i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(SyncRedis(cluster.node(i).port()).get("fencelock:lock:job").has_value());
  }
  auto second = other.acquire("job", 10s);
  CHECK_FALSE(second.ok());
  if (!second.ok()) CHECK(second.error().code == ErrorCode::kLocked);
}

}  // namespace

// The fault campaign's kill-durable-majority failure (seed 6): while three nodes were down for one
// engine, its revoke still went to the two it reached — overwrote the key there, failed for want
// of a quorum, and its cleanup deleted its own value. An acquire of another engine had its yes
// votes from those two nodes already, and its third yes came later: it was granted on keys that
// no longer held, and a third engine's acquire found the name free on a quorum. A revoke that
// cannot reach a quorum of connected voting nodes must touch no node.
TEST_CASE("a revoke that cannot reach a quorum of connected nodes writes nothing",
          "[storage][redis]") {
  check_acquire_in_flight_beside_a_failed_revoke(/*revoker_keeps_node_2=*/false);
}

// The same with the revoke reaching a quorum of connected nodes (0, 1, 2) and then failing (node 2
// timed out for it): it overwrote the key on 0 and 1, and its cleanup deleted it there — the
// acquire in flight was granted when node 2 answered, on keys that no longer held, and another
// engine took the name. A failed revoke's cleanup now puts back what it overwrote
// (lua_revoke_scripts.h).
TEST_CASE("a revoke that reached a quorum and then failed leaves an acquire in flight its keys",
          "[storage][redis]") {
  check_acquire_in_flight_beside_a_failed_revoke(/*revoker_keeps_node_2=*/true);
}

TEST_CASE("a failed revoke gives the lease back, or keeps the name taken while it lasts",
          "[storage][redis]") {
  FailedRevokeSetup setup(300ms);
  auto& cluster = setup.cluster;
  EngineUnderTest t(setup.revoker_options, setup.tokens);
  EngineUnderTest other(engine_options_for(cluster), setup.tokens);
  auto held = t.acquire("job", 30s);
  REQUIRE(held.ok());

  SECTION("where its cleanup reaches, the revoked value is back with its time left") {
    auto revoked = revoke(t, "job", 2ms);  // written everywhere, no validity left: failed
    REQUIRE_FALSE(revoked.ok());
    t.wait_until([&] { return saved_keys_left(cluster, "job") == 0; });
    for (std::size_t i = 0; i < cluster.size(); ++i) {
      CAPTURE(i);
      SyncRedis node(cluster.node(i).port());
      const auto value = node.get("fencelock:lock:job");
      REQUIRE(value.has_value());
      CHECK(value->substr(0, 16) == held->proof.substr(0, 16));
      CHECK(node.command({"PTTL", "fencelock:lock:job"}).integer > 20000);
    }
    CHECK(t.inspect("job")->token == held->token);
    CHECK(t.extend("job", claim(held), 30s).ok());
    CHECK(t.release("job", claim(held)).value());
  }
  SECTION("where it does not (a node timed out), nobody takes the name before the lease's end") {
    cluster.node(1).pause();
    cluster.node(2).pause();
    auto revoked = revoke(t, "job", 10s);  // written on node 0, then timed out on 1 and 2
    REQUIRE_FALSE(revoked.ok());
    cluster.node(1).resume();
    cluster.node(2).resume();
    other.wait_until([&] { return other.node_up(1) && other.node_up(2); });
    for (std::size_t i = 1; i < cluster.size(); ++i) {  // the revoker's value, as long as the lease
      CAPTURE(i);
      CHECK(SyncRedis(cluster.node(i).port()).command({"PTTL", "fencelock:lock:job"}).integer >
            20000);
    }
    auto taken = other.acquire("job", 10s);
    REQUIRE_FALSE(taken.ok());
    CHECK(taken.error().code == ErrorCode::kLocked);
  }
}

// Review of the revoke's cleanup: many revokes of one name, all failed. One engine sends them while
// every node is paused (so on each node they run one after another, each overwriting the one
// before), and each fails for want of validity when the nodes answer. The cleanups run in turn:
// each but the last finds a later revoke's value and flags its saved key 'x'; the last walks the
// chain. A walk that stopped after 16 steps deleted the key: the holder's 30 s lease was gone on
// every node, and a third engine was granted the name while it was still valid.
TEST_CASE("a pile of failed revokes never frees the name before the revoked lease's end",
          "[storage][redis]") {
  FailedRevokeSetup setup(5s);  // the pause is no timeout: every revoke is answered
  auto& cluster = setup.cluster;
  EngineUnderTest revoker(setup.revoker_options, setup.tokens);
  EngineUnderTest holder(engine_options_for(cluster), setup.tokens);
  EngineUnderTest other(engine_options_for(cluster), setup.tokens);
  auto held = holder.acquire("job", 30s);
  REQUIRE(held.ok());
  const auto held_until = std::chrono::steady_clock::now() + held->validity;

  constexpr int kRevokes = 24;
  std::vector<std::future<Result<Lease>>> revokes;
  for (std::size_t i = 0; i < cluster.size(); ++i) cluster.node(i).pause();
  for (int i = 0; i < kRevokes; ++i) {
    auto promise = std::make_shared<std::promise<Result<Lease>>>();
    revokes.push_back(promise->get_future());
    revoker.engine().revoke(
        AcquireRequest{"job", 2ms, 0ms, {}, "ops"},
        [promise](Result<Lease> lease) { promise->set_value(std::move(lease)); });
  }
  std::this_thread::sleep_for(500ms);  // all drawn and sent (a 2 ms ttl never has validity)
  for (std::size_t i = 0; i < cluster.size(); ++i) cluster.node(i).resume();
  int failed = 0;
  for (auto& revoke : revokes) failed += revoke.get().ok() ? 0 : 1;
  REQUIRE(failed == kRevokes);
  revoker.wait_until([&] { return saved_keys_left(cluster, "job") == 0; });  // cleanups ran

  for (std::size_t i = 0; i < cluster.size(); ++i) {
    CAPTURE(i);
    SyncRedis node(cluster.node(i).port());
    CAPTURE(node.count_keys("fencelock:lock:job#revoked:*"));
    const auto value = node.get("fencelock:lock:job");
    CHECK(value.has_value());
    if (value) CHECK(value->substr(0, 16) == held->proof.substr(0, 16));
  }
  auto taken = other.acquire("job", 10s);
  const bool holder_valid = std::chrono::steady_clock::now() < held_until;
  REQUIRE(holder_valid);
  CHECK_FALSE(taken.ok());
  CHECK(holder.extend("job", claim(held), 30s).ok());
}

TEST_CASE("a failed revoke of a set's name gives the set its key back", "[storage][redis]") {
  FailedRevokeSetup setup(1s);
  auto& cluster = setup.cluster;
  EngineUnderTest t(setup.revoker_options, setup.tokens);
  EngineUnderTest other(engine_options_for(cluster), setup.tokens);
  auto set = acquire_set(t, {"a", "b"}, 30s);
  REQUIRE(set.ok());
  auto revoked = await<Lease>([&](auto done) {
    t.engine().revoke(AcquireRequest{"b", 2ms, 0ms, {}, {}}, std::move(done));
  });
  REQUIRE_FALSE(revoked.ok());
  t.wait_until([&] { return saved_keys_left(cluster, "b") == 0; });
  CHECK(t.inspect("b")->token == set->tokens[1]);
  CHECK_FALSE(other.acquire("b", 1s).ok());
  CHECK(extend_set(t, set->names, set_claim(*set), 30s).ok());
  CHECK(release_set(t, set->names, set_claim(*set)).value());
  CHECK(other.acquire("b", 1s).ok());
}

// Known, not fixed (liveness only; docs/architecture.md, "Revoke"): a failed revoke's cleanup puts
// back the value of an acquire that FAILED (its client cancelled it while it was voting) — that
// acquire's own cleanup ran while the revoke's value covered its key, and found nothing to delete.
// The name then stays taken by a lease nobody holds for that acquire's whole ttl. Hidden ([.]), so
// ctest never runs it: `fencelock_storage_tests "[revoke-stale-restore]"` fails until a failed
// attempt's cleanup tells the revoke covering it not to put its value back.
TEST_CASE("a failed revoke never puts back a failed acquire's value", "[.][revoke-stale-restore]") {
  FailedRevokeSetup setup(5s);
  auto& cluster = setup.cluster;
  EngineUnderTest t(setup.revoker_options, setup.tokens);
  EngineUnderTest other(engine_options_for(cluster), setup.tokens);

  for (std::size_t i = 0; i < cluster.size(); ++i) cluster.node(i).pause();
  std::promise<Result<Lease>> acquired;
  const AcquireTicket ticket =
      t.engine().acquire(AcquireRequest{"job", 30s, 10s, {}, "worker"},
                         [&](Result<Lease> lease) { acquired.set_value(std::move(lease)); });
  std::this_thread::sleep_for(200ms);  // its token drawn, its attempt sent: voting
  ticket.cancel();                     // its client went away
  std::promise<Result<Lease>> revoked;
  t.engine().revoke(AcquireRequest{"job", 100ms, 0ms, {}, "ops"},
                    [&](Result<Lease> lease) { revoked.set_value(std::move(lease)); });
  std::this_thread::sleep_for(500ms);  // the revoke has no validity left when the nodes answer
  for (std::size_t i = 0; i < cluster.size(); ++i) cluster.node(i).resume();
  auto acquire = acquired.get_future().get();
  REQUIRE_FALSE(acquire.ok());
  CHECK(acquire.error().code == ErrorCode::kCancelled);
  auto revoke = revoked.get_future().get();
  REQUIRE_FALSE(revoke.ok());
  std::this_thread::sleep_for(300ms);  // both cleanups ran

  // Neither holds anything: the name is free.
  CHECK_FALSE(t.inspect("job")->held);
  auto next = other.acquire("job", 1s);
  CHECK(next.ok());
}
