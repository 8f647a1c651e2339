// LockEngine::watch on real redis-servers: a watch of a lock held with token T answers as soon as
// the lock is released (through this engine or another), expires, is revoked or taken again, or
// after its wait with the status unchanged; a lock already in another state answers at once; many
// watchers of one name share one inspection; a cancelled watch answers kCancelled.
#include <atomic>
#include <catch2/catch.hpp>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "engine/lua_scripts.h"
#include "engine_calls.h"
#include "engine_under_test.h"
#include "fencelock/storage/engine_observer.h"
#include "sync_redis.h"
#include "temp_dir.h"

using namespace fencelock::storage;
using namespace fencelock::testing;
using Clock = std::chrono::steady_clock;

namespace {

struct PendingWatch {
  std::future<Result<LockStatus>> answer;
  AcquireTicket ticket;
  Clock::time_point started = Clock::now();
  // Waits up to `limit` for the answer.
  std::optional<Result<LockStatus>> within(std::chrono::milliseconds limit) {
    if (answer.wait_for(limit) != std::future_status::ready) return std::nullopt;
    return answer.get();
  }
};

PendingWatch start_watch(EngineUnderTest& t, const std::string& name, std::uint64_t after,
                         std::chrono::milliseconds wait) {
  auto promise = std::make_shared<std::promise<Result<LockStatus>>>();
  PendingWatch pending;
  pending.answer = promise->get_future();
  pending.ticket = t.engine().watch(name, after, wait, [promise](Result<LockStatus> status) {
    promise->set_value(std::move(status));
  });
  return pending;
}

// Counts the inspections an engine makes.
class InspectionCounter final : public EngineObserver {
 public:
  void on_operation(const OperationReport& report) override {
    if (report.kind == OperationKind::kInspect) ++inspections;
  }
  std::atomic<int> inspections{0};
};

LeaseClaim claim_of(const Lease& lease) {
  return {lease.token, lease.proof, {}};
}

}  // namespace

TEST_CASE("a watch answers when the lock is released, through its own engine or another",
          "[storage][redis][watch]") {
  RedisCluster cluster(3);
  TempDir dir;
  const auto tokens = tokens_in(dir);
  EngineUnderTest a(engine_options_for(cluster), tokens);
  EngineUnderTest b(engine_options_for(cluster), tokens);

  for (EngineUnderTest* releaser : {&a, &b}) {
    auto held = a.acquire("invoice", 30s);
    REQUIRE(held.ok());
    auto watch = start_watch(b, "invoice", held->token, 20s);
    CHECK_FALSE(watch.within(300ms));  // held with that token: it waits
    const auto released_at = Clock::now();
    REQUIRE(releaser->release("invoice", claim_of(*held)).value());
    auto answer = watch.within(5s);
    REQUIRE(answer);
    REQUIRE(answer->ok());
    CHECK_FALSE((*answer)->held);
    CHECK(Clock::now() - released_at < 3s);  // woken, not the 20 s wait
  }
}

TEST_CASE("a watch answers when the lease expires, and after its wait with the status unchanged",
          "[storage][redis][watch]") {
  RedisCluster cluster(3);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));

  auto held = await<Lease>([&](auto done) {
    t.engine().acquire(AcquireRequest{"report", 30s, 0ms, {}, "cron-7"}, std::move(done));
  });
  REQUIRE(held.ok());
  auto unchanged = start_watch(t, "report", held->token, 400ms);
  auto answer = unchanged.within(5s);
  REQUIRE(answer);
  REQUIRE(answer->ok());
  CHECK((*answer)->held);
  CHECK((*answer)->token == held->token);
  CHECK((*answer)->holder == "cron-7");
  CHECK(*(*answer)->remaining < 30s);
  CHECK(Clock::now() - unchanged.started >= 400ms);

  auto brief = t.acquire("brief", 700ms);
  REQUIRE(brief.ok());
  auto expiry = start_watch(t, "brief", brief->token, 20s);
  answer = expiry.within(5s);
  REQUIRE(answer);
  REQUIRE(answer->ok());
  CHECK_FALSE((*answer)->held);

  // An extend moves the expiry: the watch keeps waiting past the first ttl.
  auto extended = t.acquire("extended", 700ms);
  REQUIRE(extended.ok());
  auto keeps = start_watch(t, "extended", extended->token, 1500ms);
  REQUIRE(t.extend("extended", claim_of(*extended), 10s).ok());
  answer = keeps.within(5s);
  REQUIRE(answer);
  REQUIRE(answer->ok());
  CHECK((*answer)->held);
  CHECK(Clock::now() - keeps.started >= 1500ms);
}

TEST_CASE("a watch of a lock in another state answers at once", "[storage][redis][watch]") {
  RedisCluster cluster(3);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));

  auto free_lock = start_watch(t, "free", 5, 20s).within(5s);
  REQUIRE(free_lock);
  CHECK_FALSE((*free_lock)->held);

  auto held = t.acquire("taken", 30s);
  REQUIRE(held.ok());
  auto older = start_watch(t, "taken", held->token - 1, 20s).within(5s);
  REQUIRE(older);
  CHECK((*older)->held);
  CHECK((*older)->token == held->token);

  // A second watcher of a name already watched answers from the group's status.
  auto waiting = start_watch(t, "taken", held->token, 20s);
  auto late = start_watch(t, "taken", held->token + 7, 20s).within(5s);
  REQUIRE(late);
  CHECK((*late)->token == held->token);
  CHECK_FALSE(waiting.within(100ms));
  waiting.ticket.cancel();
  auto cancelled = waiting.within(5s);
  REQUIRE(cancelled);
  CHECK(cancelled->error().code == ErrorCode::kCancelled);

  CHECK(await<LockStatus>([&](auto done) { t.engine().watch("bad name", 1, 1s, std::move(done)); })
            .error()
            .code == ErrorCode::kInvalidArgument);
  CHECK(await<LockStatus>([&](auto done) {
          t.engine().watch("fine", 1, t.engine().options().max_wait + 1ms, std::move(done));
        })
            .error()
            .code == ErrorCode::kInvalidArgument);
}

TEST_CASE("a status or watch that cannot tell whether a lock is held fails instead of saying free",
          "[storage][redis][watch]") {
  RedisCluster cluster(3);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));
  auto held = t.acquire("bare", 30s);
  REQUIRE(held.ok());
  // Held on exactly a quorum (nodes 0 and 1), and node 1 silent: node 0's key is not "not held".
  SyncRedis(cluster.node(2).port()).command({"DEL", "fencelock:lock:bare"});
  cluster.node(1).pause();
  auto status = await<LockStatus>([&](auto done) { t.engine().inspect("bare", std::move(done)); });
  auto watched = start_watch(t, "bare", held->token, 20s).within(10s);
  cluster.node(1).resume();
  REQUIRE_FALSE(status.ok());
  CHECK(status.error().code == ErrorCode::kUnavailable);
  REQUIRE(watched);
  REQUIRE_FALSE(watched->ok());
  CHECK(watched->error().code == ErrorCode::kUnavailable);
  // Once the silent node answers again (reconnected after its timeouts), the status says who
  // holds it.
  Result<LockStatus> again = status;
  for (int i = 0; i < 100 && !again.ok(); ++i) {
    std::this_thread::sleep_for(100ms);
    again = await<LockStatus>([&](auto done) { t.engine().inspect("bare", std::move(done)); });
  }
  REQUIRE(again.ok());
  CHECK(again->token == held->token);
}

TEST_CASE("a revoke through another engine wakes the watchers of the revoked lease",
          "[storage][redis][watch]") {
  RedisCluster cluster(3);
  TempDir dir;
  const auto tokens = tokens_in(dir);
  EngineUnderTest a(engine_options_for(cluster), tokens);
  EngineUnderTest b(engine_options_for(cluster), tokens);

  auto stuck = a.acquire("invoice", 30s);
  REQUIRE(stuck.ok());
  auto watch = start_watch(a, "invoice", stuck->token, 20s);
  CHECK_FALSE(watch.within(300ms));
  auto revoker = await<Lease>([&](auto done) {
    b.engine().revoke(AcquireRequest{"invoice", 10s, 0ms, {}, "ops"}, std::move(done));
  });
  REQUIRE(revoker.ok());
  auto answer = watch.within(3s);
  REQUIRE(answer);
  REQUIRE(answer->ok());
  CHECK((*answer)->held);
  CHECK((*answer)->token == revoker->token);
}

TEST_CASE("ten thousand watchers of one name share its inspections", "[storage][redis][watch]") {
  RedisCluster cluster(3);
  TempDir dir;
  InspectionCounter counter;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir), &counter);

  auto held = t.acquire("popular", 30s);
  REQUIRE(held.ok());
  std::vector<PendingWatch> watches;
  for (int i = 0; i < 10000; ++i) watches.push_back(start_watch(t, "popular", held->token, 20s));
  CHECK_FALSE(watches.back().within(500ms));
  CHECK(counter.inspections <= 2);  // the first watcher's, perhaps one more while it was out
  const int before = counter.inspections;
  REQUIRE(t.release("popular", claim_of(*held)).value());
  for (auto& watch : watches) {
    auto answer = watch.within(5s);
    REQUIRE(answer);
    REQUIRE(answer->ok());
    CHECK_FALSE((*answer)->held);
  }
  CHECK(counter.inspections - before <= 3);  // one per copy of the release, at most
}

TEST_CASE("a watcher whose token is above the group's makes the group look again",
          "[storage][redis][watch]") {
  RedisCluster cluster(3);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));

  auto held = t.acquire("moved", 30s);
  REQUIRE(held.ok());
  auto first = start_watch(t, "moved", held->token, 20s);
  CHECK_FALSE(first.within(300ms));
  // Another grant behind the group's back (nothing announced): the same lease with the next token.
  const std::string key = "fencelock:lock:moved";
  const std::string from = ":" + std::to_string(held->token) + ":";
  const std::string to = ":" + std::to_string(held->token + 1) + ":";
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    SyncRedis node(cluster.node(i).port());
    std::string value = node.get(key).value();
    value = value.substr(0, value.find('#'));
    REQUIRE(value.find(from) != std::string::npos);
    value.replace(value.find(from), from.size(), to);
    node.command({"SET", key, value, "KEEPTTL"});
  }
  // A client that saw the newer grant is not told "changed" from the group's stale status: the
  // group looks again, answers the first watcher, and the newer one waits.
  auto newer = start_watch(t, "moved", held->token + 1, 20s);
  auto answer = first.within(5s);
  REQUIRE(answer);
  REQUIRE(answer->ok());
  CHECK((*answer)->token == held->token + 1);
  CHECK_FALSE(newer.within(300ms));
}

TEST_CASE("a failed attempt's cleanup of a marked value is announced for watches only",
          "[storage][redis][watch]") {
  RedisCluster cluster(1);
  SyncRedis node(cluster.node(0).port());
  SyncRedis listener(cluster.node(0).port(), 2s);
  REQUIRE(listener.command({"SUBSCRIBE", std::string(kAnnouncementChannel)}).kind ==
          SyncReply::Kind::kArray);
  const std::string lease(48, 'a');
  node.command({"SET", "fencelock:lock:split", lease + ":7::#0123456789abcdef", "PX", "60000"});
  node.command({"EVAL", std::string(kReleaseSilentlyScript), "1", "fencelock:lock:split", lease});
  CHECK_FALSE(node.get("fencelock:lock:split"));
  const SyncReply message = listener.receive();
  REQUIRE(message.kind == SyncReply::Kind::kArray);
  REQUIRE(message.elements.size() == 3);
  CHECK(message.elements[2].text ==
        std::string(kCleanupTagEngine) + std::string(16, 'a') + " fencelock:lock:split");
}
