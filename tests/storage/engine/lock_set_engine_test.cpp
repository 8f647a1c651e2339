// Lock sets in the Redlock engine against real redis-servers: all or nothing on every node, the
// exclusion with single locks, tokens per name, extend and release of the whole set.
#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <thread>

#include "engine_calls.h"
#include "engine_under_test.h"
#include "fencelock/storage/lease_secret.h"
#include "fencelock/storage/redlock_engine.h"
#include "fencelock/storage/sqlite_token_source.h"
#include "sync_redis.h"
#include "temp_dir.h"

using namespace fencelock::storage;
using namespace fencelock::testing;
using Clock = std::chrono::steady_clock;

namespace {

std::size_t nodes_holding(RedisCluster& cluster, const std::string& name) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    if (cluster.node(i).running() &&
        SyncRedis(cluster.node(i).port()).get("fencelock:lock:" + name))
      ++count;
  }
  return count;
}

// The lease values (marks stripped) of `names` on one node, read in one MGET (atomic on the node).
std::vector<std::optional<std::string>> values_on(SyncRedis& redis,
                                                  const std::vector<std::string>& names) {
  std::vector<std::string> command{"MGET"};
  for (const auto& name : names) command.push_back("fencelock:lock:" + name);
  const SyncReply reply = redis.command(command);
  std::vector<std::optional<std::string>> values;
  for (const auto& element : reply.elements) {
    if (element.kind == SyncReply::Kind::kNil) {
      values.emplace_back();
    } else {
      values.emplace_back(element.text.substr(0, kLeaseValueLength));
    }
  }
  return values;
}

}  // namespace

TEST_CASE("a lock set is granted all or nothing and excludes single locks of its names",
          "[storage][redis]") {
  RedisCluster cluster(5);
  EngineUnderTest t(engine_options_for(cluster));

  auto set = acquire_set(t, {"b", "a"}, 10s);
  REQUIRE(set.ok());
  CHECK(set->names == std::vector<std::string>{"a", "b"});
  CHECK(set->tokens.size() == 2);
  CHECK(set->proof.size() == kLeaseProofLength);
  CHECK(set->validity > 9000ms);
  CHECK(nodes_holding(cluster, "a") == 5);
  CHECK(nodes_holding(cluster, "b") == 5);

  // A single lock of a name in the set, and a set overlapping it, are refused.
  CHECK(t.acquire("a", 10s).error().code == ErrorCode::kLocked);
  CHECK(acquire_set(t, {"b", "c"}, 10s).error().code == ErrorCode::kLocked);
  CHECK(nodes_holding(cluster, "c") == 0);  // nothing of the refused set stays anywhere

  // A held single lock refuses a set of its name, leaving none of the set's other keys.
  auto single = t.acquire("d", 10s);
  REQUIRE(single.ok());
  CHECK(acquire_set(t, {"c", "d", "e"}, 10s).error().code == ErrorCode::kLocked);
  CHECK(nodes_holding(cluster, "c") == 0);
  CHECK(nodes_holding(cluster, "e") == 0);

  // Names in any order release the set (they are sorted before the tokens are paired).
  auto released = release_set(t, {"b", "a"}, set_claim(*set));
  REQUIRE(released.ok());
  CHECK(released.value());
  CHECK(nodes_holding(cluster, "a") == 0);
  CHECK(nodes_holding(cluster, "b") == 0);
  CHECK(t.acquire("a", 1s).ok());
  CHECK_FALSE(release_set(t, {"a", "b"}, set_claim(*set)).value());  // gone: nothing deleted
  CHECK(nodes_holding(cluster, "a") == 5);
}

TEST_CASE("a lock set's extend never shortens and refuses an altered token list",
          "[storage][redis]") {
  RedisCluster cluster(3);
  TempDir dir;
  SqliteTokenOptions options;
  options.path = dir.path() / "tokens.db";
  EngineUnderTest t(engine_options_for(cluster), SqliteTokenSource::open(options).value());

  auto set = acquire_set(t, {"x", "y"}, 10s);
  REQUIRE(set.ok());
  LockSetClaim altered = set_claim(*set);
  std::swap(altered.tokens[0], altered.tokens[1]);
  if (altered.tokens == set->tokens) altered.tokens[0] += 1;
  CHECK(extend_set(t, {"x", "y"}, altered, 20s).error().code == ErrorCode::kInvalidArgument);
  CHECK(release_set(t, {"x", "y"}, altered).error().code == ErrorCode::kInvalidArgument);
  CHECK(nodes_holding(cluster, "x") == 3);
  // A claim with too few tokens is refused before any node is asked.
  LockSetClaim short_claim{{set->tokens[0]}, set->proof, {}};
  CHECK(extend_set(t, {"x", "y"}, short_claim, 20s).error().code == ErrorCode::kInvalidArgument);

  auto shorter = extend_set(t, {"y", "x"}, set_claim(*set), 2s);
  REQUIRE(shorter.ok());
  CHECK(shorter->tokens == set->tokens);
  CHECK(shorter->validity <= 2s);
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    SyncRedis redis(cluster.node(i).port());
    for (const char* name : {"x", "y"}) {
      const auto pttl = redis.command({"PTTL", std::string("fencelock:lock:") + name}).integer;
      CHECK(pttl > 5000);  // still the 10 s ttl, not 2 s
    }
  }
  auto longer = extend_set(t, {"x", "y"}, set_claim(*set), 30s);
  REQUIRE(longer.ok());
  SyncRedis redis(cluster.node(0).port());
  CHECK(redis.command({"PTTL", "fencelock:lock:x"}).integer > 20000);
  CHECK(redis.command({"PTTL", "fencelock:lock:y"}).integer > 20000);

  // An extend of a set that is no longer whole on the nodes changes nothing.
  for (std::size_t i = 0; i < cluster.size(); ++i)
    SyncRedis(cluster.node(i).port()).command({"DEL", "fencelock:lock:y"});
  CHECK(extend_set(t, {"x", "y"}, set_claim(*set), 60s).error().code == ErrorCode::kLeaseLost);
  CHECK(redis.command({"PTTL", "fencelock:lock:x"}).integer <= 30000);
}

TEST_CASE("a lock set draws one increasing token per name from that name's counter",
          "[storage][redis]") {
  RedisCluster cluster(3);
  TempDir dir;
  SqliteTokenOptions options;
  options.path = dir.path() / "tokens.db";
  EngineUnderTest t(engine_options_for(cluster), SqliteTokenSource::open(options).value());

  auto single = t.acquire("a", 1s);
  REQUIRE(single.ok());
  REQUIRE(t.release("a", claim(single)).value());
  std::map<std::string, std::uint64_t> last{{"a", single->token}, {"b", 0}};
  for (int round = 0; round < 5; ++round) {
    auto set = acquire_set(t, {"b", "a"}, 1s);
    REQUIRE(set.ok());
    for (std::size_t i = 0; i < set->names.size(); ++i) {
      CHECK(set->tokens[i] > last[set->names[i]]);
      last[set->names[i]] = set->tokens[i];
    }
    REQUIRE(release_set(t, set->names, set_claim(*set)).value());
  }
  auto after = t.acquire("a", 1s);
  REQUIRE(after.ok());
  CHECK(after->token > last["a"]);
}

TEST_CASE("overlapping lock sets from several engines in both orders never show a partial set",
          "[storage][redis]") {
  RedisCluster cluster(3);
  auto options = engine_options_for(cluster);
  EngineUnderTest e1(options), e2(options), e3(options);
  EngineUnderTest* engines[] = {&e1, &e2, &e3};
  const std::vector<std::vector<std::string>> sets{{"p", "q"}, {"q", "p"}, {"q", "r"},
                                                   {"r", "q"}, {"r", "p"}, {"p", "r"}};
  const std::vector<std::string> names{"p", "q", "r"};
  constexpr int kRounds = 15;

  std::atomic<bool> stop{false};
  std::atomic<int> partial{0}, samples{0};
  std::thread sampler([&] {
    std::vector<std::unique_ptr<SyncRedis>> redis;
    for (std::size_t i = 0; i < cluster.size(); ++i)
      redis.push_back(std::make_unique<SyncRedis>(cluster.node(i).port()));
    const auto deadline = Clock::now() + 60s;
    while (!stop && Clock::now() < deadline) {
      for (auto& node : redis) {
        // Every set has two names: a lease value on one key only is a partial set.
        std::map<std::string, int> keys_of_value;
        for (const auto& value : values_on(*node, names))
          if (value) ++keys_of_value[*value];
        for (const auto& [value, count] : keys_of_value)
          if (count != 2) ++partial;
        ++samples;
      }
      std::this_thread::sleep_for(1ms);
    }
  });

  std::map<std::string, std::atomic<int>> holders;
  for (const auto& name : names) holders[name] = 0;
  std::atomic<int> overlaps{0}, failures{0};
  std::vector<std::thread> callers;
  const auto started = Clock::now();
  for (std::size_t c = 0; c < sets.size(); ++c) {
    callers.emplace_back([&, c] {
      EngineUnderTest& t = *engines[c % 3];
      for (int round = 0; round < kRounds; ++round) {
        auto set = acquire_set(t, sets[c], 5s, 10s);
        if (!set.ok()) {
          ++failures;
          continue;
        }
        for (const auto& name : set->names)
          if (holders[name]++ != 0) ++overlaps;
        std::this_thread::sleep_for(2ms);
        for (const auto& name : set->names) --holders[name];
        if (auto r = release_set(t, set->names, set_claim(*set)); !r.ok() || !r.value()) ++failures;
      }
    });
  }
  for (auto& caller : callers) caller.join();
  const auto elapsed = Clock::now() - started;
  stop = true;
  sampler.join();
  CHECK(failures == 0);  // every waiter served within its 10 s budget: no deadlock
  CHECK(overlaps == 0);
  CHECK(partial == 0);
  CHECK(samples > 0);
  CHECK(elapsed < 50s);
  for (const auto& name : names) CHECK(nodes_holding(cluster, name) == 0);
}

TEST_CASE("a node killed during lock set acquires leaves a correct grant or a clean refusal",
          "[storage][redis]") {
  RedisCluster cluster(5);
  auto options = engine_options_for(cluster);
  options.quarantine_restarted_nodes = false;
  EngineUnderTest t(options);
  const std::vector<std::string> names{"k1", "k2", "k3", "k4"};
  std::atomic<int> grants{0}, refusals{0}, wrong{0}, kills{0};
  std::thread caller([&] {
    for (int round = 0; round < 40; ++round) {
      const int kills_before = kills;
      auto set = acquire_set(t, names, 5s);
      if (!set.ok()) {
        if (set.error().code != ErrorCode::kUnavailable && set.error().code != ErrorCode::kLocked)
          ++wrong;
        ++refusals;
        continue;
      }
      ++grants;
      // Granted: every key of the set on a majority of the nodes (unless a node it counted on
      // died since).
      for (const auto& name : names)
        if (nodes_holding(cluster, name) < 3 && kills == kills_before) ++wrong;
      (void)release_set(t, set->names, set_claim(*set));
    }
  });
  std::this_thread::sleep_for(30ms);
  ++kills;
  cluster.node(1).kill();
  std::this_thread::sleep_for(30ms);
  ++kills;
  cluster.node(3).kill();
  caller.join();
  CHECK(wrong == 0);
  CHECK(grants > 0);
  std::this_thread::sleep_for(100ms);  // the fire-and-forget cleanups land
  // No partial set left on any running node.
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    if (!cluster.node(i).running()) continue;
    SyncRedis redis(cluster.node(i).port());
    for (const auto& value : values_on(redis, names)) CHECK_FALSE(value.has_value());
  }
}

TEST_CASE("bad lock set arguments are refused before any node is asked", "[storage][redis]") {
  RedisCluster cluster(1);
  EngineUnderTest t(engine_options_for(cluster));
  CHECK(acquire_set(t, {}, 1s).error().code == ErrorCode::kInvalidArgument);
  CHECK(acquire_set(t, {"a", "b", "a"}, 1s).error().code == ErrorCode::kInvalidArgument);
  std::vector<std::string> many;
  for (int i = 0; i < 17; ++i) many.push_back("n" + std::to_string(i));
  CHECK(acquire_set(t, many, 1s).error().code == ErrorCode::kInvalidArgument);
  many.pop_back();
  CHECK(acquire_set(t, many, 1s).ok());
  CHECK(acquire_set(t, {"a", "bad name"}, 1s).error().code == ErrorCode::kInvalidArgument);
  CHECK(acquire_set(t, {"a"}, 0ms).error().code == ErrorCode::kInvalidArgument);
  CHECK(acquire_set(t, {"a"}, 1s, -1ms).error().code == ErrorCode::kInvalidArgument);
  CHECK(SyncRedis(cluster.node(0).port()).get("fencelock:lock:a") == std::nullopt);
}

TEST_CASE("a lock set's proof binds its tokens and its names, a permit's its count and slot",
          "[storage]") {
  const std::string value = generate_lease_value().value();
  const std::vector<std::uint64_t> one{17};
  const std::vector<std::string> a{"a"}, ab{"a", "b"}, ac{"a", "c"};
  // A set of one name is not the single lock of that name.
  CHECK(lease_proof_of_text(value, set_claim_text(one, a, "")) != lease_proof(value, 17));
  const std::vector<std::uint64_t> list{17, 4}, swapped{4, 17};
  CHECK(set_claim_text(list, ab, "k").starts_with("17,4#"));
  CHECK(set_claim_text(list, ab, "k").ends_with("@k"));
  CHECK(set_claim_text(list, ab, "") != set_claim_text(list, ac, ""));
  CHECK(lease_proof_of_text(value, set_claim_text(list, ab, "")) !=
        lease_proof_of_text(value, set_claim_text(swapped, ab, "")));
  CHECK(lease_proof_of_text(value, set_claim_text(list, ab, "")).size() == kLeaseProofLength);
  CHECK(permit_claim_text(9, 3, 1, "") == "9/3/1");
  CHECK(permit_claim_text(9, 3, 1, "k") == "9/3/1@k");
  CHECK(lease_proof_of_text(value, permit_claim_text(9, 3, 1, "")) !=
        lease_proof_of_text(value, permit_claim_text(9, 4, 1, "")));
}
