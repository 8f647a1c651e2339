// What a lock key holds besides the lease (lease_value.h): the grant's token and what the holder
// said it is — written by every acquire, read back by inspect, and never in the way of a claim, a
// waiter's mark or a cleanup.
#include <catch2/catch.hpp>
#include <string>

#include "engine/lease_value.h"
#include "engine_calls.h"
#include "engine_under_test.h"
#include "fencelock/storage/lease.h"
#include "fencelock/storage/sqlite_token_source.h"
#include "sync_redis.h"
#include "temp_dir.h"

using namespace fencelock::storage;
using namespace fencelock::testing;

namespace {

const std::string kLease(48, 'a');

}  // namespace

TEST_CASE("a lock value carries its token and holder, and reads back whatever the holder holds",
          "[storage]") {
  const std::string holder = "web-1:4242 #3 at 100% — ok";
  const std::string value = written_lease_value(kLease, "17", lease_value_tail("", holder));
  CHECK(value.find('#') == std::string::npos);  // '#' starts a waiter's mark, never before
  const LeaseValueFacts facts = read_lease_value(value);
  REQUIRE(facts.token == 17u);
  CHECK(facts.holder == holder);
  CHECK(read_lease_value(value + "#0123456789abcdef").holder == holder);  // a mark is not part
  CHECK(read_lease_value(value + "#*").token == 17u);

  const LeaseValueFacts anonymous =
      read_lease_value(written_lease_value(kLease, "", lease_value_tail("", "")));
  CHECK_FALSE(anonymous.token.has_value());
  CHECK(anonymous.holder.empty());
  // An older fencelockd's bare value, and tails that are not well formed: no token, no holder.
  for (const std::string& odd : {kLease, kLease + "#*", kLease + ":17", kLease + ":x1::h",
                                 kLease + ":99999999999999999999::h", std::string("short:1::h")}) {
    CAPTURE(odd);
    CHECK_FALSE(read_lease_value(odd).token.has_value());
    CHECK(read_lease_value(odd).holder.empty());
  }
  CHECK(read_lease_value(kLease + ":5::a%2x%").holder == "a%2x%");  // a stray '%' is kept

  CHECK(is_valid_holder(""));
  CHECK(is_valid_holder(std::string(kMaxHolderLength, 'h')));
  CHECK_FALSE(is_valid_holder(std::string(kMaxHolderLength + 1, 'h')));
  CHECK_FALSE(is_valid_holder("line\nbreak"));
  CHECK_FALSE(is_valid_holder(std::string("nul\0", 4)));
  CHECK_FALSE(is_valid_holder("del\x7f"));
}

TEST_CASE("inspect answers the holder's token and owner, for a lock and each name of a set",
          "[storage][redis]") {
  RedisCluster cluster(3);
  TempDir dir;
  const auto tokens = tokens_in(dir);
  EngineUnderTest t(engine_options_for(cluster), tokens);

  auto lease = await<Lease>([&](auto done) {
    t.engine().acquire(AcquireRequest{"report", 10s, 0ms, {}, "cron@host-7 #1 (100%)"},
                       std::move(done));
  });
  REQUIRE(lease.ok());
  auto status = t.inspect("report");
  REQUIRE(status.ok());
  CHECK(status->held);
  CHECK(status->token == lease->token);
  CHECK(status->holder == "cron@host-7 #1 (100%)");

  SECTION("a waiter's mark changes nothing of it, and the release still reaches the waiter") {
    EngineUnderTest other(engine_options_for(cluster), tokens);
    Result<Lease> waited = make_error(ErrorCode::kInternal, "not run");
    std::thread waiter([&] { waited = other.acquire("report", 10s, 5s); });
    t.wait_until([&] {
      const auto value = SyncRedis(cluster.node(0).port()).get("fencelock:lock:report");
      return value && value->find('#') != std::string::npos;
    });
    auto marked = t.inspect("report");
    REQUIRE(marked.ok());
    CHECK(marked->token == lease->token);
    CHECK(marked->holder == "cron@host-7 #1 (100%)");
    const auto released_at = std::chrono::steady_clock::now();
    REQUIRE(t.release("report", claim(*lease)).value());
    waiter.join();
    REQUIRE(waited.ok());
    CHECK(std::chrono::steady_clock::now() - released_at < 2s);  // announced, not expired
    auto now = t.inspect("report");
    REQUIRE(now.ok());
    CHECK(now->token == waited->token);
    CHECK(now->holder.empty());
  }

  SECTION("each name of a lock set shows its own token") {
    auto set = await<LockSetLease>([&](auto done) {
      t.engine().acquire_set(LockSetRequest{{"b", "a"}, 10s, 0ms, {}, "batch-9"}, std::move(done));
    });
    REQUIRE(set.ok());
    for (std::size_t i = 0; i < set->names.size(); ++i) {
      auto name = t.inspect(set->names[i]);
      REQUIRE(name.ok());
      CHECK(name->token == set->tokens[i]);
      CHECK(name->holder == "batch-9");
    }
    CHECK(extend_set(t, set->names, set_claim(*set), 20s).ok());
    REQUIRE(release_set(t, set->names, set_claim(*set)).value());
    CHECK_FALSE(t.inspect("a")->held);
  }

  SECTION("a holder the engine cannot store is refused before any node is asked") {
    for (const std::string& bad : {std::string(kMaxHolderLength + 1, 'x'), std::string("a\rb")}) {
      auto refused = await<Lease>([&](auto done) {
        t.engine().acquire(AcquireRequest{"other", 10s, 0ms, {}, bad}, std::move(done));
      });
      REQUIRE_FALSE(refused.ok());
      CHECK(refused.error().code == ErrorCode::kInvalidArgument);
    }
    for (std::size_t i = 0; i < 3; ++i)
      CHECK_FALSE(SyncRedis(cluster.node(i).port()).get("fencelock:lock:other"));
  }
}
