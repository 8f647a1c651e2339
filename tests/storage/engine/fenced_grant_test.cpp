// Grants carry fencing tokens: drawn after the quorum, covered by the validity check, so the
// order of grants is the order of tokens.
#include <catch2/catch.hpp>
#include <mutex>
#include <random>
#include <thread>

#include "engine_under_test.h"
#include "fencelock/storage/redis_token_source.h"
#include "fencelock/storage/sqlite_token_source.h"
#include "sync_redis.h"
#include "temp_dir.h"

using namespace fencelock::storage;
using namespace fencelock::testing;
using Clock = std::chrono::steady_clock;

namespace {

struct Grant {
  Clock::time_point at;
  std::uint64_t token;
};

}  // namespace

TEST_CASE("under contention the tokens of successive grants strictly increase",
          "[storage][redis]") {
  RedisCluster cluster(5);
  RedisCluster counter(1, Persistence::kAofAlways);
  TempDir dir;
  IoThread token_io;
  const std::string source_kind = GENERATE(as<std::string>{}, "sqlite", "redis");
  std::shared_ptr<TokenSource> tokens;
  if (source_kind == "sqlite") {
    SqliteTokenOptions options;
    options.path = dir.path() / "tokens.db";
    options.reserve_block = 16;  // many durable reservations during the run
    tokens = SqliteTokenSource::open(options).value();
  } else {
    RedisTokenOptions options;
    options.master = parse_node_address(counter.node(0).address()).value();
    options.epoch_file = dir.path() / "epoch";
    auto source = RedisTokenSource::create(token_io.executor(), options).value();
    while (source->epoch() < 0) std::this_thread::sleep_for(2ms);
    tokens = source;
  }
  EngineUnderTest t(token_io, engine_options_for(cluster), tokens);

  std::mutex mutex;
  std::vector<Grant> grants;  // in the order the engine completed them
  std::atomic<long> refused{0};
  const auto end = Clock::now() + 3s;
  std::vector<std::thread> clients;
  for (int c = 0; c < 64; ++c) {
    clients.emplace_back([&, c] {
      std::mt19937 rng(static_cast<unsigned>(c));
      while (Clock::now() < end) {
        auto lease = await<Lease>([&](auto done) {
          t.engine().acquire({"hot", 200ms, 0ms, {}},
                             [&, done = std::move(done)](Result<Lease> r) mutable {
                               if (r.ok()) {
                                 std::lock_guard<std::mutex> lock(mutex);
                                 grants.push_back({Clock::now(), r->token});
                               }
                               done(std::move(r));
                             });
        });
        if (!lease.ok()) {
          ++refused;
          std::this_thread::sleep_for(std::chrono::microseconds(rng() % 2000));
          continue;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(rng() % 1000));
        (void)t.release("hot", claim(lease));
      }
    });
  }
  for (auto& client : clients) client.join();

  INFO(source_kind << ": " << grants.size() << " grants, " << refused << " refused");
  CHECK(grants.size() > 50);
  for (std::size_t i = 1; i < grants.size(); ++i) {
    INFO("grant " << i);
    REQUIRE(grants[i].token > grants[i - 1].token);
  }
}

TEST_CASE("extend keeps a lease's token and a new acquire gets a new one", "[storage][redis]") {
  RedisCluster cluster(3);
  TempDir dir;
  SqliteTokenOptions options;
  options.path = dir.path() / "tokens.db";
  EngineUnderTest t(engine_options_for(cluster), SqliteTokenSource::open(options).value());
  auto first = t.acquire("doc", 1s);
  REQUIRE(first.ok());
  CHECK(first->token == 1);
  REQUIRE(t.extend("doc", claim(first), 1s).ok());
  REQUIRE(t.release("doc", claim(first)).value());
  auto second = t.acquire("doc", 1s);
  REQUIRE(second.ok());
  CHECK(second->token == 2);
  CHECK(t.acquire("other", 1s)->token == 1);
}

TEST_CASE("a grant whose token comes too late is abandoned and leaves no lock key",
          "[storage][redis]") {
  // A token source slower than the ttl: the token arrives after the lease would have expired, so
  // nothing may be granted and no lock key may stay behind.
  class SlowTokens final : public TokenSource {
   public:
    void next(std::string_view, Callback done) override {
      std::thread([done = std::move(done)] {
        std::this_thread::sleep_for(80ms);
        done(std::uint64_t{7});
      }).detach();
    }
    void current(std::string_view, Callback done) override { done(std::uint64_t{7}); }
    void skip_past(std::string_view, std::uint64_t) override {}
    bool has_history() const override { return false; }
    TokenTraits traits() const override { return {}; }
    bool ready() const override { return true; }
    void stop() override {}
  };
  RedisCluster cluster(3);
  EngineUnderTest t(engine_options_for(cluster), std::make_shared<SlowTokens>());
  auto lease = t.acquire("late", 50ms);
  REQUIRE_FALSE(lease.ok());
  CHECK(lease.error().code == ErrorCode::kUnavailable);
  std::this_thread::sleep_for(20ms);
  for (std::size_t i = 0; i < cluster.size(); ++i)
    CHECK(SyncRedis(cluster.node(i).port()).count_keys() == 0);
}
