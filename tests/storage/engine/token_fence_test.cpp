// The fence (lua_scripts.h, docs/architecture.md "The fence"): every lock node refuses an acquire
// whose token is not above the highest token any acquire of that name wrote there. With quorum
// intersection that makes a grant's token above every token granted before it started, whatever
// the token source answers. Real redis-servers, real SQLite files, real Redis counter masters.
#include <catch2/catch.hpp>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "engine_calls.h"
#include "engine_under_test.h"
#include "fencelock/storage/redis_token_source.h"
#include "fencelock/storage/sqlite_token_source.h"
#include "io_thread.h"
#include "sync_redis.h"
#include "temp_dir.h"
#include "token_checks.h"

using namespace fencelock::storage;
using namespace fencelock::testing;

namespace {

// A token source that answers what the test scripted, in order — a store gone back, a copy, a
// wiped counter — and repeats the last value once the script is used up. It never skips past a
// fence (a source that cannot: the acquire must refuse, not grant).
class ScriptedTokens final : public TokenSource {
 public:
  explicit ScriptedTokens(std::deque<std::uint64_t> values) : values_(std::move(values)) {}
  void next(std::string_view, Callback done) override {
    std::uint64_t value = 0;
    {
      const std::lock_guard<std::mutex> guard(mutex_);
      value = values_.front();
      if (values_.size() > 1) values_.pop_front();
      ++draws_;
    }
    if (on_draw) on_draw(value);
    done(value);
  }
  // Runs on each draw, before it is answered (set before the engine draws).
  std::function<void(std::uint64_t)> on_draw;
  void current(std::string_view, Callback done) override { done(std::uint64_t{0}); }
  void skip_past(std::string_view, std::uint64_t) override {}
  bool has_history() const override { return false; }
  TokenTraits traits() const override { return {}; }
  bool ready() const override { return true; }
  void stop() override {}
  void answer_next(std::deque<std::uint64_t> values) {
    const std::lock_guard<std::mutex> guard(mutex_);
    values_ = std::move(values);
  }
  int draws() const {
    const std::lock_guard<std::mutex> guard(mutex_);
    return draws_;
  }

 private:
  mutable std::mutex mutex_;
  std::deque<std::uint64_t> values_;
  int draws_ = 0;
};

void require_fence(RedisCluster& cluster, const std::string& name, std::uint64_t fence) {
  for (std::size_t i = 0; i < cluster.size(); ++i)
    CHECK(SyncRedis(cluster.node(i).port()).fence(name) == fence);
}

// Token 50 for "ledger" is refused by a majority that saw 100 granted: the fences are in place.
void check_fenced_out(EngineUnderTest& engine) {
  auto refused = engine.acquire("ledger", 500ms);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Catch::Contains("token 50 for \"ledger\" is not above 100"));
}

}  // namespace

TEST_CASE("fence: a token at or below what the nodes saw granted for the name is never granted",
          "[storage][redis]") {
  RedisCluster cluster(3);
  auto tokens = std::make_shared<ScriptedTokens>(std::deque<std::uint64_t>{5});
  EngineUnderTest t(engine_options_for(cluster), tokens);
  auto first = t.acquire("ledger", 2s);
  REQUIRE(first.ok());
  CHECK(first->token == 5);
  require_fence(cluster, "ledger", 5);
  REQUIRE(t.release("ledger", claim(first)).value());

  SECTION("a source that goes back and stays back: refused, nothing written") {
    tokens->answer_next({3});  // a restored or wiped store: 3, then 3 again on every retry
    const int draws_before = tokens->draws();
    auto refused = t.acquire("ledger", 2s);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::kUnavailable);
    CHECK_THAT(refused.error().message,
               Catch::Contains("the token store is behind the lock nodes"));
    CHECK_THAT(refused.error().message, Catch::Contains("token 3 for \"ledger\" is not above 5"));
    // The first refusal may be a race (not counted); then kFenceRetries tokens behind the fence.
    CHECK(tokens->draws() - draws_before == 5);
    for (std::size_t i = 0; i < cluster.size(); ++i)
      CHECK(SyncRedis(cluster.node(i).port()).count_keys() == 0);
    require_fence(cluster, "ledger", 5);
  }
  SECTION("the same token twice (a copied store): refused; the next one above is granted") {
    tokens->answer_next({5, 6});
    auto next = t.acquire("ledger", 2s);
    REQUIRE(next.ok());
    CHECK(next->token == 6);
    require_fence(cluster, "ledger", 6);
  }
  SECTION("other names have their own fences") {
    tokens->answer_next({1});
    auto other = t.acquire("other", 2s);
    REQUIRE(other.ok());
    CHECK(other->token == 1);
  }
}

TEST_CASE(
    "fence: an acquire that keeps losing races to concurrent grants is not told the store is "
    "behind",
    "[storage][redis]") {
  // A shared token store: each of this engine's draws reaches the nodes after a concurrent grant
  // with a higher token (drawn later, landed first) — four times in a row. Each fresh token is
  // above the fence that refused the attempt before: races, not a store behind.
  RedisCluster cluster(3);
  auto tokens = std::make_shared<ScriptedTokens>(std::deque<std::uint64_t>{11, 13, 15, 17, 19});
  tokens->on_draw = [&](std::uint64_t token) {
    if (token >= 19) return;
    for (std::size_t i = 0; i < cluster.size(); ++i) {
      SyncRedis(cluster.node(i).port())
          .command({"SET", "fencelock:lock:pool#fence", std::to_string(token + 1)});
    }
  };
  EngineUnderTest t(engine_options_for(cluster), tokens);
  auto permit = acquire_permit(t, "pool", 4, 2s);
  REQUIRE(permit.ok());
  CHECK(permit->token == 19);
  CHECK(tokens->draws() == 5);
}

TEST_CASE("fence: lock sets and semaphore permits are fenced per name like a single lock",
          "[storage][redis]") {
  RedisCluster cluster(3);
  auto tokens = std::make_shared<ScriptedTokens>(std::deque<std::uint64_t>{9});
  EngineUnderTest t(engine_options_for(cluster), tokens);
  auto set = acquire_set(t, {"a", "b"}, 2s);
  REQUIRE(set.ok());
  REQUIRE(release_set(t, {"a", "b"}, set_claim(*set)).value());
  auto permit = acquire_permit(t, "pool", 2, 2s);
  REQUIRE(permit.ok());
  REQUIRE(release_permit(t, *permit).value());
  require_fence(cluster, "a", 9);
  require_fence(cluster, "b", 9);
  require_fence(cluster, "pool", 9);

  tokens->answer_next({4});
  auto set_refused = acquire_set(t, {"b", "c"}, 2s);
  REQUIRE_FALSE(set_refused.ok());
  CHECK_THAT(set_refused.error().message, Catch::Contains("token 4 for \"b\" is not above 9"));
  auto permit_refused = acquire_permit(t, "pool", 2, 2s);
  REQUIRE_FALSE(permit_refused.ok());
  CHECK_THAT(permit_refused.error().message, Catch::Contains("is not above 9"));
  // The set wrote nothing, not even the fence of its name that was above ("c" never had one).
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    SyncRedis node(cluster.node(i).port());
    CHECK(node.count_keys() == 0);
    CHECK_FALSE(node.fence("c").has_value());
  }
}

TEST_CASE("fence: two engines on copies of one SQLite file hand out each token once, in order",
          "[storage][redis]") {
  // Both engines are given the shared identity, so the instance registry does not stop either
  // (it would, for copies of one file, within about a second): the fence alone must keep every
  // granted token unique and in grant order, and the copy that is behind skips past the fence.
  RedisCluster cluster(3);
  TempDir dir;
  const auto original = dir.path() / "a.db";
  const auto copy = dir.path() / "b.db";
  {
    auto tokens = sqlite_tokens_one_at_a_time(original);
    for (int i = 0; i < 5; ++i) REQUIRE(draw_one(*tokens, "x").ok());
  }
  std::filesystem::copy_file(original, copy);
  auto options = engine_options_for(cluster);
  options.new_lock_nodes = true;  // the file drew before these nodes existed
  EngineUnderTest a(options, sqlite_tokens_one_at_a_time(original));
  EngineUnderTest b(options, sqlite_tokens_one_at_a_time(copy));
  std::vector<std::uint64_t> granted;
  int refused = 0;
  for (int i = 0; i < 40; ++i) {
    EngineUnderTest& through = i % 2 == 0 ? a : b;
    auto lease = through.acquire("x", 2s);
    if (!lease.ok()) {
      ++refused;
      continue;
    }
    granted.push_back(lease->token);
    REQUIRE(through.release("x", claim(lease)).value());
  }
  INFO("granted " << granted.size() << ", refused " << refused);
  for (std::size_t i = 1; i < granted.size(); ++i) {
    INFO("grant " << i);
    CHECK(granted[i] > granted[i - 1]);
  }
  CHECK(refused == 0);  // the copy behind skips past the fence instead of refusing
}

TEST_CASE("fence: a wiped Redis token master with a fresh epoch file never repeats a token",
          "[storage][redis]") {
  // #32's case 3: epoch 0, then the master restarts (epoch 1), then it loses everything and a new
  // instance starts with a fresh epoch file — its counter begins again at epoch 0's first token.
  RedisCluster cluster(3);
  RedisCluster master(1, Persistence::kAofAlways);
  TempDir dir;
  IoThread io;
  const auto make_source = [&](const std::filesystem::path& epoch_file) {
    RedisTokenOptions options;
    options.master = parse_node_address(master.node(0).address()).value();
    options.epoch_file = epoch_file;
    auto created = RedisTokenSource::create(io.executor(), std::move(options));
    REQUIRE(created.ok());
    auto source = created.value();
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (source->epoch() < 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(2ms);
    REQUIRE(source->epoch() >= 0);
    return source;
  };
  std::uint64_t highest = 0;
  {
    auto source = make_source(dir.path() / "epoch-a");
    EngineUnderTest first(io, engine_options_for(cluster), source);
    auto one = first.acquire("x", 2s);
    REQUIRE(one.ok());
    REQUIRE(first.release("x", claim(one)).value());
    master.node(0).restart(/*keep_data=*/true);  // epoch 1
    first.wait_until([&] {
      auto lease = first.acquire("x", 2s);
      if (!lease.ok()) return false;
      highest = lease->token;
      REQUIRE(first.release("x", claim(lease)).value());
      return true;
    });
    REQUIRE(highest > (std::uint64_t{1} << 40));
    source->stop();
  }
  master.node(0).restart(/*keep_data=*/false);       // the counter and its epoch record are gone
  auto fresh = make_source(dir.path() / "epoch-b");  // a new pod: a fresh epoch file
  EngineUnderTest second(io, engine_options_for(cluster), fresh);
  // The fence refuses the fresh counter's small tokens; the source skips past it (a raised epoch).
  auto lease = second.acquire("x", 2s);
  REQUIRE(lease.ok());
  CHECK(lease->token > highest);
  std::size_t raised = 0;  // a quorum wrote it before the grant was answered
  for (std::size_t i = 0; i < cluster.size(); ++i)
    raised += SyncRedis(cluster.node(i).port()).fence("x") == lease->token ? 1U : 0U;
  CHECK(raised >= 2);
  fresh->stop();
}

TEST_CASE("fence: a node that lost its fences gets them back before it votes again",
          "[storage][redis]") {
  // The review's case (R3): a grant that won a bare majority {0, 1} (node 2 down) leaves its fence
  // on those two only; node 0 then comes back empty. Without the fences copied back onto it, the
  // majority {0, 2} has none, and a token store gone back would be granted the same tokens again.
  RedisCluster cluster(3, Persistence::kAofAlways);
  auto tokens = std::make_shared<ScriptedTokens>(std::deque<std::uint64_t>{100});
  auto options = engine_options_for(cluster);
  options.max_ttl = 1s;
  EngineUnderTest t(options, tokens);
  cluster.node(2).kill();
  t.wait_for_voting_nodes(2);
  auto lease = t.acquire("ledger", 500ms);
  REQUIRE(lease.ok());
  REQUIRE(t.release("ledger", claim(lease)).value());
  CHECK(SyncRedis(cluster.node(1).port()).fence("ledger") == 100);

  cluster.node(0).restart(/*keep_data=*/false);  // empty: no fence, quarantined for the window
  cluster.node(2).start();                       // back with its data (no fence for "ledger")
  tokens->answer_next({50});                     // the token store went back
  t.wait_for_voting_nodes(3, 10s);
  CHECK(SyncRedis(cluster.node(0).port()).fence("ledger") == 100);  // copied back from node 1
  check_fenced_out(t);
}

TEST_CASE(
    "fence: when a majority lost its fences, the nodes get what the others kept, vote here "
    "only, and are not recorded as admitted",
    "[storage][redis]") {
  // Best effort (engine_core.h, repair_fences): a strict repair needs N - quorum + 1 nodes that
  // kept their fences, and only node 0 did. The cluster needs nodes 1 and 2 for a quorum, so they
  // get node 0's fences and vote in this engine; no other instance may trust them by rule 2.
  RedisCluster cluster(3);
  auto tokens = std::make_shared<ScriptedTokens>(std::deque<std::uint64_t>{100});
  auto options = engine_options_for(cluster);
  options.max_ttl = 1s;
  EngineUnderTest t(options, tokens);
  auto lease = t.acquire("ledger", 500ms);
  REQUIRE(lease.ok());
  REQUIRE(t.release("ledger", claim(lease)).value());

  for (const std::size_t n : {std::size_t{1}, std::size_t{2}}) {
    cluster.node(n).restart(/*keep_data=*/false);
  }
  tokens->answer_next({50});  // the token store went back
  t.wait_until([&] { return !t.node_up(1) || t.engine().voting_nodes() < 3; }, 5s);
  t.wait_for_voting_nodes(3, 10s);
  for (const std::size_t n : {std::size_t{1}, std::size_t{2}}) {
    SyncRedis node(cluster.node(n).port());
    CHECK(node.fence("ledger") == 100);  // copied from node 0
    CHECK(node.command({"HGET", "fencelock:#node", "admitted:fencelock:lock:"}).text !=
          node.info_field("server", "run_id"));
  }
  check_fenced_out(t);
}

TEST_CASE("fence: a loss one deployment notices is recorded for every deployment on the node",
          "[storage][redis]") {
  // The review's case: deployment "a:" notices node 0 lost writes, waits out the window and
  // repairs its own fences; node 0 then restarts durably, so its suspect record names an earlier
  // incarnation. Deployment "b:", not running then, would trust node 0 by rule 1 (durable, its old
  // admission kept) without its lost fence: the majority {0, 2} then has none for "ledger".
  RedisCluster cluster(3, Persistence::kAofAlways);
  auto a_options = engine_options_for(cluster);
  a_options.key_prefix = "a:";
  a_options.max_ttl = 1s;
  auto b_options = a_options;
  b_options.key_prefix = "b:";
  EngineUnderTest a(a_options, std::make_shared<ScriptedTokens>(std::deque<std::uint64_t>{1}));
  {
    EngineUnderTest b(b_options, std::make_shared<ScriptedTokens>(std::deque<std::uint64_t>{100}));
    cluster.node(2).kill();
    b.wait_for_voting_nodes(2);
    auto lease = b.acquire("ledger", 500ms);
    REQUIRE(lease.ok());
    REQUIRE(b.release("ledger", claim(lease)).value());
  }
  cluster.node(2).start();  // kept its data: no fence for "ledger" (it was down)
  a.wait_for_voting_nodes(3, 10s);
  SyncRedis node0(cluster.node(0).port());
  node0.command({"DEL", "b:ledger#fence", "fencelock:#instances:a:"});  // lost writes
  a.wait_until(
      [&] {
        return node0.command({"HGET", "fencelock:#node", "fences_missing:b:"}).text == "1";
      },
      5s);
  a.wait_for_voting_nodes(3, 10s);      // the window, then a's own repair
  std::this_thread::sleep_for(1500ms);  // the suspect record grows older than the window
  cluster.node(0).restart(/*keep_data=*/true);

  EngineUnderTest b(b_options, std::make_shared<ScriptedTokens>(std::deque<std::uint64_t>{50}));
  b.wait_for_voting_nodes(3, 10s);
  CHECK(SyncRedis(cluster.node(0).port()).fence("ledger", "b:") == 100);  // its own repair
  check_fenced_out(b);
}

TEST_CASE("fence: a loss of fences recorded on a node outlives a durable restart before the repair",
          "[storage][redis]") {
  // The third review's case: the fences-missing state lived in one engine's memory, so a durable
  // node that restarted while its fences were being copied back was trusted whole by rule 1 by any
  // other engine (or this one restarted). The loss is now recorded in the node's marker.
  RedisCluster cluster(3, Persistence::kAofAlways);
  {
    EngineUnderTest a(engine_options_for(cluster),
                      std::make_shared<ScriptedTokens>(std::deque<std::uint64_t>{100}));
    cluster.node(2).kill();
    a.wait_for_voting_nodes(2);
    auto lease = a.acquire("ledger", 500ms);
    REQUIRE(lease.ok());
    REQUIRE(a.release("ledger", claim(lease)).value());
  }
  // Node 0 lost its fence, some engine noticed and recorded it, and the node restarted (durable,
  // its marker kept) before any repair finished.
  {
    SyncRedis node(cluster.node(0).port());
    node.command({"DEL", "fencelock:lock:ledger#fence"});
    node.command({"HSET", "fencelock:#node", "fences_missing:fencelock:lock:", "1"});
  }
  cluster.node(0).restart(/*keep_data=*/true);
  cluster.node(2).start();  // kept its data: no fence for "ledger" (it was down)
  EngineUnderTest b(engine_options_for(cluster),
                    std::make_shared<ScriptedTokens>(std::deque<std::uint64_t>{50}));
  SyncRedis node0(cluster.node(0).port());
  CHECK(node0.fence("ledger") == 100);  // copied back before node 0 voted
  // The record goes just before the admission is recorded, right after the repair.
  b.wait_until(
      [&] {
        return node0.command({"HGET", "fencelock:#node", "fences_missing:fencelock:lock:"}).kind ==
               NodeReply::Kind::kNil;
      },
      5s);
  check_fenced_out(b);
}

TEST_CASE("fence: a repair copies its own key prefix's fences, and another prefix repairs its own",
          "[storage][redis]") {
  // Admissions are recorded per key prefix (lua_scripts.h), so an engine of prefix "c:" does not
  // trust a node that an engine of "a[1]:" repaired; it copies its own fences back first. The
  // SCAN pattern escapes the prefix's glob characters ("a[1]:*" would match "a1:").
  RedisCluster cluster(3, Persistence::kAofAlways);
  auto mine = engine_options_for(cluster);
  mine.key_prefix = "a[1]:";
  mine.max_ttl = 1s;  // the nodes keep the longest max ttl any engine declared
  auto other = mine;
  other.key_prefix = "c:";
  {
    EngineUnderTest first(other, std::make_shared<ScriptedTokens>(std::deque<std::uint64_t>{100}));
    EngineUnderTest second(mine, std::make_shared<ScriptedTokens>(std::deque<std::uint64_t>{200}));
    cluster.node(2).kill();
    for (EngineUnderTest* engine : {&first, &second}) {
      engine->wait_for_voting_nodes(2);
      auto lease = engine->acquire("ledger", 500ms);
      REQUIRE(lease.ok());
      REQUIRE(engine->release("ledger", claim(lease)).value());
    }
  }
  cluster.node(2).start();
  EngineUnderTest t(mine, std::make_shared<ScriptedTokens>(std::deque<std::uint64_t>{1}));
  cluster.node(0).restart(/*keep_data=*/false);
  // Noticed: node 0 seen down, or back but not voting (quarantined while its fences are copied).
  t.wait_until([&] { return !t.node_up(0) || t.engine().voting_nodes() < 3; }, 5s);
  t.wait_for_voting_nodes(3, 10s);
  SyncRedis node0(cluster.node(0).port());
  CHECK(node0.fence("ledger", "a[1]:") == 200);
  CHECK_FALSE(node0.fence("ledger", "c:").has_value());

  EngineUnderTest c(other, std::make_shared<ScriptedTokens>(std::deque<std::uint64_t>{50}));
  c.wait_for_voting_nodes(3, 10s);
  CHECK(node0.fence("ledger", "c:") == 100);  // copied back before node 0 voted here
  check_fenced_out(c);
}
