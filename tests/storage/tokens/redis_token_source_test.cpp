// The Redis INCR token source against real counter masters: crashes, lost writes, two instances.
#include "fencelock/storage/redis_token_source.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "io_thread.h"
#include "redis_cluster.h"
#include "sync_redis.h"
#include "tcp_proxy.h"
#include "temp_dir.h"
#include "token_checks.h"
#include "tokens/token_epoch_script.h"

using namespace fencelock::storage;
using namespace fencelock::testing;
using namespace std::chrono_literals;

namespace {

RedisTokenOptions options_for(RedisServer& master, const std::filesystem::path& epoch_file) {
  RedisTokenOptions options;
  options.master = parse_node_address(master.address()).value();
  options.epoch_file = epoch_file;
  return options;
}

std::shared_ptr<RedisTokenSource> create_ready(IoThread& io, RedisTokenOptions options) {
  auto created = RedisTokenSource::create(io.executor(), std::move(options));
  if (!created.ok()) FAIL(created.error().message);
  auto source = created.value();
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (source->epoch() < 0) {
    if (std::chrono::steady_clock::now() > deadline) FAIL("token source never became ready");
    std::this_thread::sleep_for(2ms);
  }
  return source;
}

void wait_ready(RedisTokenSource& source) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (source.epoch() < 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(2ms);
  REQUIRE(source.epoch() >= 0);
}

std::filesystem::path aof_incr_file(RedisServer& server) {
  for (const auto& entry :
       std::filesystem::directory_iterator(server.data_dir() / "appendonlydir")) {
    if (entry.path().string().ends_with(".incr.aof")) return entry.path();
  }
  FAIL("no incremental AOF file");
  return {};
}

}  // namespace

TEST_CASE("redis tokens: eight threads get unique tokens in real-time order", "[storage][redis]") {
  RedisCluster master(1, Persistence::kAofAlways);
  TempDir dir;
  IoThread io;
  auto source = create_ready(io, options_for(master.node(0), dir.path() / "epoch"));
  CHECK(source->epoch() == 0);  // a fresh deployment starts at epoch 0: small tokens
  CHECK(current_of(*source, "orders").value() == 0);

  const auto draws = draw_concurrently(*source, "orders", 8, 1000);
  CHECK(draws_problem(draws) == "");
  CHECK(current_of(*source, "orders").value() == 8000);
  CHECK(source->persistence_warning().empty());
}

TEST_CASE("redis tokens: a master without fsync-always persistence is refused unless allowed",
          "[storage][redis]") {
  RedisCluster master(1, Persistence::kAofEverySec);
  TempDir dir;
  IoThread io;
  auto options = options_for(master.node(0), dir.path() / "epoch");
  auto refused = RedisTokenSource::create(io.executor(), options);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message, Catch::Contains("appendfsync=everysec"));

  options.allow_unsafe_persistence = true;
  auto allowed = create_ready(io, options);
  CHECK_THAT(allowed->persistence_warning(), Catch::Contains("appendfsync=everysec"));
}

// Issue #32's sibling: an evicted counter starts again at the epoch's first token.
TEST_CASE("redis tokens: a master that may evict keys is refused, whatever the unsafe flag says",
          "[storage][redis]") {
  RedisCluster master(1, Persistence::kAofAlways);
  SyncRedis node(master.node(0).port());
  REQUIRE(node.command({"CONFIG", "SET", "maxmemory", "2mb"}).text == "OK");
  REQUIRE(node.command({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}).text == "OK");
  TempDir dir;
  IoThread io;
  auto options = options_for(master.node(0), dir.path() / "epoch");
  options.allow_unsafe_persistence = true;
  auto refused = RedisTokenSource::create(io.executor(), options);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.error().message,
             Catch::Contains("may evict keys") && Catch::Contains("allkeys-lru"));
  REQUIRE(node.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"}).text == "OK");
  CHECK(create_ready(io, options)->persistence_warning().empty());
}

TEST_CASE("redis tokens: kill -9 of the counter master during a draw storm repeats nothing",
          "[storage][redis]") {
  RedisCluster master(1, Persistence::kAofAlways);
  TempDir dir;
  IoThread io;
  auto source = create_ready(io, options_for(master.node(0), dir.path() / "epoch"));

  std::atomic<bool> stop{false};
  std::vector<std::vector<Draw>> per(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      while (!stop) {
        Draw d;
        d.thread = t;
        d.called = std::chrono::steady_clock::now();
        auto token = draw_one(*source, "storm");
        d.returned = std::chrono::steady_clock::now();
        if (token.ok()) {
          d.token = token.value();
          per[static_cast<std::size_t>(t)].push_back(d);
        } else {
          std::this_thread::sleep_for(1ms);
        }
      }
    });
  }
  std::this_thread::sleep_for(300ms);
  master.node(0).restart(/*keep_data=*/true);  // SIGKILL mid-storm
  std::this_thread::sleep_for(300ms);
  stop = true;
  for (auto& t : threads) t.join();

  std::vector<Draw> all;
  for (const auto& p : per) {
    for (std::size_t i = 1; i < p.size(); ++i) REQUIRE(p[i].token > p[i - 1].token);
    all.insert(all.end(), p.begin(), p.end());
  }
  std::set<std::uint64_t> unique;
  for (const Draw& d : all) unique.insert(d.token);
  CHECK(unique.size() == all.size());
  std::string why;
  CHECK(real_time_ordered(all, why));
  INFO(why);
  CHECK(source->epoch() == 1);  // the restart started a new epoch
  CHECK(all.size() > 100);
}

TEST_CASE("redis tokens: lost increments after a crash never repeat a token — with the guard",
          "[storage][redis]") {
  RedisCluster master(1, Persistence::kAofEverySec);
  TempDir dir;
  IoThread io;
  const bool guard = GENERATE(true, false);
  auto options = options_for(master.node(0), dir.path() / "epoch");
  options.allow_unsafe_persistence = true;
  options.regression_guard = guard;
  auto source = create_ready(io, options);

  std::uint64_t greatest_before = 0;
  for (int i = 0; i < 2000; ++i) greatest_before = draw_one(*source, "ledger").value();
  std::this_thread::sleep_for(1200ms);  // everysec has flushed: the tail is in the AOF
  master.node(0).kill();
  // Simulate the writes a crash can lose: cut the last 60% of the incremental AOF.
  const auto aof = aof_incr_file(master.node(0));
  std::filesystem::resize_file(aof, std::filesystem::file_size(aof) * 2 / 5);
  master.node(0).start();
  wait_ready(*source);
  const std::uint64_t after = draw_one(*source, "ledger").value();

  if (guard) {
    CHECK(after > greatest_before);
    CHECK(current_of(*source, "ledger").value() >= after);
  } else {
    CHECK(after <= greatest_before);  // what the guard prevents: a repeated token
  }
}

TEST_CASE("redis tokens: two instances share the counter and agree on the epoch after a restart",
          "[storage][redis]") {
  RedisCluster master(1, Persistence::kAofAlways);
  TempDir dir;
  IoThread io;
  auto a = create_ready(io, options_for(master.node(0), dir.path() / "epoch-a"));
  auto b = create_ready(io, options_for(master.node(0), dir.path() / "epoch-b"));

  std::uint64_t last = 0;
  for (int i = 0; i < 100; ++i) {
    const std::uint64_t token = draw_one(i % 2 == 0 ? *a : *b, "shared").value();
    REQUIRE(token > last);
    last = token;
  }
  master.node(0).restart(/*keep_data=*/false);  // everything lost
  wait_ready(*a);
  wait_ready(*b);
  CHECK(a->epoch() == b->epoch());
  CHECK(a->epoch() == 1);
  for (int i = 0; i < 100; ++i) {
    const std::uint64_t token = draw_one(i % 2 == 0 ? *b : *a, "shared").value();
    REQUIRE(token > last);
    last = token;
  }
}

TEST_CASE("redis tokens: a restarted instance remembers its epoch even if the master forgot it",
          "[storage][redis]") {
  RedisCluster master(1, Persistence::kAofAlways);
  TempDir dir;
  IoThread io;
  const auto epoch_file = dir.path() / "epoch";
  std::uint64_t before = 0;
  {
    auto source = create_ready(io, options_for(master.node(0), epoch_file));
    master.node(0).restart(/*keep_data=*/true);  // epoch 1
    wait_ready(*source);
    REQUIRE(source->epoch() == 1);
    before = draw_one(*source, "x").value();
    source->stop();
  }
  master.node(0).restart(/*keep_data=*/false);  // the master loses everything, epoch record too
  auto restarted = create_ready(io, options_for(master.node(0), epoch_file));
  CHECK(restarted->epoch() == 2);
  CHECK(draw_one(*restarted, "x").value() > before);
}

TEST_CASE("redis tokens: an unreachable master fails at start and draws fail fast when it dies",
          "[storage][redis]") {
  TempDir dir;
  IoThread io;
  RedisTokenOptions options;
  options.master = parse_node_address("127.0.0.1:" + std::to_string(pick_free_port())).value();
  options.epoch_file = dir.path() / "epoch";
  CHECK(RedisTokenSource::create(io.executor(), options).error().code == ErrorCode::kUnavailable);

  RedisCluster master(1, Persistence::kAofAlways);
  auto source = create_ready(io, options_for(master.node(0), dir.path() / "epoch"));
  master.node(0).kill();
  std::this_thread::sleep_for(50ms);
  const auto started = std::chrono::steady_clock::now();
  CHECK(draw_one(*source, "x").error().code == ErrorCode::kUnavailable);
  CHECK(std::chrono::steady_clock::now() - started < 250ms);
  CHECK(draw_one(*source, "").error().code == ErrorCode::kInvalidArgument);
}

namespace {

// Draws until one succeeds (a master coming back is reconnected to in the background), for at
// most 10 s.
std::uint64_t draw_eventually(RedisTokenSource& source, const std::string& name) {
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    auto token = draw_one(source, name);
    if (token.ok()) return token.value();
    if (std::chrono::steady_clock::now() > deadline)
      FAIL("no draw succeeded in 10 s: " << token.error().message);
    std::this_thread::sleep_for(5ms);
  }
}

}  // namespace

TEST_CASE(
    "redis tokens: two instances never split into two epochs when the master loses its epoch "
    "record",
    "[storage][redis]") {
  RedisCluster master(1, Persistence::kAofAlways);
  TempDir dir;
  IoThread io;
  auto a = create_ready(io, options_for(master.node(0), dir.path() / "epoch-a"));
  auto b = create_ready(io, options_for(master.node(0), dir.path() / "epoch-b"));
  const std::vector<std::string> names{"shared", "other"};

  std::map<std::string, std::set<std::uint64_t>> seen;  // tokens are unique per name
  std::uint64_t greatest_before = 0;
  for (int i = 0; i < 200; ++i) {
    const std::string& name = names[static_cast<std::size_t>(i / 2) % 2];
    const std::uint64_t token = draw_one(i % 2 == 0 ? *a : *b, name).value();
    REQUIRE(seen[name].insert(token).second);
    greatest_before = std::max(greatest_before, token);
  }
  const long long epoch_before = a->epoch();
  REQUIRE(b->epoch() == epoch_before);

  bool restarted = false;
  SECTION("FLUSHALL: the connections stay up, only the data is gone") {
    REQUIRE(SyncRedis(master.node(0).port()).command({"FLUSHALL"}).kind ==
            SyncReply::Kind::kStatus);
  }
  SECTION("a restart without data") {
    master.node(0).restart(/*keep_data=*/false);
    restarted = true;
  }

  // The first answer after the wipe, from either instance, whether a read or a draw, is already
  // above everything handed out before.
  if (!restarted) CHECK(current_of(*b, "shared").value() > greatest_before);
  for (int i = 0; i < 200; ++i) {
    RedisTokenSource& source = i % 3 == 0 ? *a : *b;
    const std::string& name = names[static_cast<std::size_t>(i) % 2];
    const std::uint64_t token =
        restarted ? draw_eventually(source, name) : draw_one(source, name).value();
    INFO("draw " << i << " after the wipe: " << token << ", greatest before " << greatest_before);
    REQUIRE(token > greatest_before);  // above every token before, of every name
    REQUIRE(seen[name].insert(token).second);
  }
  CHECK(a->epoch() == b->epoch());
  CHECK(a->epoch() > epoch_before);
  CHECK(current_of(*a, "shared").value() == current_of(*b, "shared").value());
}

TEST_CASE("redis tokens: the token script digests match what Redis computes", "[storage][redis]") {
  // The handshake refuses a master whose SCRIPT LOAD answers another digest; this names the
  // culprit.
  RedisCluster master(1);
  SyncRedis redis(master.node(0).port());
  const auto digest_of = [&redis](std::string_view source) {
    return redis.command({"SCRIPT", "LOAD", source}).text;
  };
  CHECK(digest_of(kTokenEpochScript) == kTokenEpochScriptSha);
  CHECK(digest_of(kTokenDrawScript) == kTokenDrawScriptSha);
  CHECK(digest_of(kTokenSkipScript) == kTokenSkipScriptSha);
}

TEST_CASE(
    "redis tokens: a draw under an epoch the record does not hold is refused and changes nothing",
    "[storage][redis]") {
  RedisCluster master(1);
  SyncRedis redis(master.node(0).port());
  REQUIRE(redis.command({"HSET", "epoch-record", "epoch", "3", "run_id", "r"}).kind ==
          SyncReply::Kind::kInteger);
  const auto draw = [&redis](std::string_view epoch, std::string_view mode) {
    return redis.command({"EVAL", kTokenDrawScript, "2", "counter", "epoch-record", epoch, mode})
        .integer;
  };
  CHECK(draw("3", "next") == 1);
  CHECK(draw("3", "next") == 2);
  CHECK(draw("3", "current") == 2);
  CHECK(draw("2", "next") == -1);
  CHECK(draw("4", "current") == -1);
  CHECK(redis.get("counter") == "2");
  REQUIRE(redis.command({"DEL", "epoch-record"}).integer == 1);
  CHECK(draw("3", "next") == -1);
  CHECK(redis.get("counter") == "2");
}

TEST_CASE("redis tokens: instances behind a proxy that swaps the master settle on one new epoch",
          "[storage][redis]") {
  RedisCluster masters(2, Persistence::kAofAlways);
  TempDir dir;
  IoThread io;
  TcpProxy proxy(masters.node(0).port());
  auto through_proxy = [&](const std::string& file) {
    auto options = options_for(masters.node(0), dir.path() / file);
    options.master.port = proxy.port();
    options.timeout = 1s;  // a proxy hop on a loaded machine; this test is not about timeouts
    return options;
  };
  auto a = create_ready(io, through_proxy("epoch-a"));
  auto b = create_ready(io, through_proxy("epoch-b"));

  std::set<std::uint64_t> seen;
  std::uint64_t greatest_before = 0;
  for (int i = 0; i < 100; ++i) {
    const std::uint64_t token = draw_one(i % 2 == 0 ? *a : *b, "shared").value();
    REQUIRE(seen.insert(token).second);
    greatest_before = std::max(greatest_before, token);
  }
  const long long epoch_before = a->epoch();

  proxy.retarget(masters.node(1).port());  // same address, another (empty) master; nothing drops
  const std::uint64_t first_after = draw_one(*a, "shared").value();
  CHECK(first_after > greatest_before);
  // A third instance meets the new master with a fresh handshake, the first two with theirs from
  // the old one: all three must settle on one epoch, not keep raising it past each other.
  auto c = create_ready(io, through_proxy("epoch-c"));
  RedisTokenSource* sources[] = {a.get(), b.get(), c.get()};
  for (int i = 0; i < 150; ++i) {
    const std::uint64_t token = draw_one(*sources[i % 3], "shared").value();
    REQUIRE(token > greatest_before);
    REQUIRE(seen.insert(token).second);
  }
  CHECK(a->epoch() == b->epoch());
  CHECK(b->epoch() == c->epoch());
  CHECK(a->epoch() > epoch_before);
  CHECK(a->epoch() <= epoch_before + 2);  // the swap once, the fresh handshake once at most
}

TEST_CASE("redis tokens: draws go on after the master's script cache is flushed",
          "[storage][redis]") {
  RedisCluster master(1, Persistence::kAofAlways);
  TempDir dir;
  IoThread io;
  auto source = create_ready(io, options_for(master.node(0), dir.path() / "epoch"));
  const std::uint64_t before = draw_one(*source, "x").value();
  REQUIRE(SyncRedis(master.node(0).port()).command({"SCRIPT", "FLUSH"}).kind ==
          SyncReply::Kind::kStatus);
  CHECK(draw_one(*source, "x").value() == before + 1);  // NOSCRIPT, then the same draw with EVAL
  CHECK(current_of(*source, "x").value() == before + 1);
}

TEST_CASE("redis tokens: a store has a history once a token was drawn, or by an epoch file",
          "[storage][redis]") {
  RedisCluster master(1, Persistence::kAofAlways);
  TempDir dir;
  IoThread io;
  {
    auto first = create_ready(io, options_for(master.node(0), dir.path() / "a"));
    CHECK_FALSE(first->has_history());
    // Instances starting together on a new store: nothing was drawn yet, so none sees a history.
    auto second = create_ready(io, options_for(master.node(0), dir.path() / "b"));
    CHECK_FALSE(second->has_history());
    second->stop();
    // Restarted before anything was drawn (a typo in --redis fixed): its epoch file, written at
    // the first connection, is no history (the review's 24 h quarantine of a new deployment).
    CHECK_FALSE(create_ready(io, options_for(master.node(0), dir.path() / "b"))->has_history());
    REQUIRE(draw_one(*first, "x").ok());
    first->stop();
  }
  // Another instance with no epoch file of its own: the master's counter says it.
  CHECK(create_ready(io, options_for(master.node(0), dir.path() / "c"))->has_history());
  // The master wiped: an epoch file of an instance that ran before still says it.
  master.node(0).restart(/*keep_data=*/false);
  CHECK(create_ready(io, options_for(master.node(0), dir.path() / "a"))->has_history());
  CHECK_FALSE(create_ready(io, options_for(master.node(0), dir.path() / "d"))->has_history());
}

TEST_CASE(
    "redis tokens: skip_past moves a name's draws above a fence, for every source, never back",
    "[storage][redis]") {
  RedisCluster master(1, Persistence::kAofAlways);
  TempDir dir;
  IoThread io;
  auto a = create_ready(io, options_for(master.node(0), dir.path() / "a"));
  auto b = create_ready(io, options_for(master.node(0), dir.path() / "b"));
  REQUIRE(draw_one(*a, "x").value() == 1);
  const std::uint64_t fence = (std::uint64_t{3} << kTokenEpochShift) + 50;
  a->skip_past("x", fence);
  const std::uint64_t above = draw_one(*a, "x").value();
  CHECK(above == fence + 1);
  CHECK(a->epoch() == 3);
  // The other source adopts the raised epoch on its next draw: its tokens stay in one order.
  CHECK(draw_one(*b, "x").value() == fence + 2);
  CHECK(b->epoch() == 3);
  // A lower fence (a race lost to a concurrent grant) changes nothing.
  a->skip_past("x", 7);
  b->skip_past("x", (std::uint64_t{1} << kTokenEpochShift) + 999);
  CHECK(draw_one(*a, "x").value() == fence + 3);
  // What no source made is ignored.
  a->skip_past("x", std::uint64_t{1} << 53);
  CHECK(draw_one(*a, "x").value() == fence + 4);
  // The epoch used is durable: a restart of the instance keeps it.
  a->stop();
  CHECK(create_ready(io, options_for(master.node(0), dir.path() / "a"))->epoch() == 3);
}

TEST_CASE(
    "redis tokens: a name's counter reaching 2^40 fails the draw instead of entering the next "
    "epoch",
    "[storage][redis]") {
  // Tokens are epoch · 2^40 + counter: a counter at 2^40 would equal the next epoch's first token.
  RedisCluster master(1, Persistence::kAofAlways);
  TempDir dir;
  IoThread io;
  auto source = create_ready(io, options_for(master.node(0), dir.path() / "epoch"));
  REQUIRE(draw_one(*source, "x").value() == 1);
  constexpr std::uint64_t kLimit = std::uint64_t{1} << 40;
  SyncRedis(master.node(0).port())
      .command({"SET", "fencelock:token:x", std::to_string(kLimit - 2)});
  CHECK(draw_one(*source, "x").value() == kLimit - 1);  // the epoch's last token
  for (int i = 0; i < 2; ++i) {
    const auto exhausted = draw_one(*source, "x");
    REQUIRE_FALSE(exhausted.ok());
    CHECK_THAT(exhausted.error().message, Catch::Contains("exhausted"));
  }
  CHECK(draw_one(*source, "y").value() == 1);  // other names go on
}
