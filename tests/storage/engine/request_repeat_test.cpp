// AcquireRequest::request_id on real redis-servers: asking again with the same owner, name and
// request id while the earlier grant is held answers that grant (same proof and token, its own
// validity), on any engine; anything else is refused as before; a failed attempt's cleanup never
// deletes a grant that a repeat answered.
#include <catch2/catch.hpp>
#include <chrono>
#include <future>
#include <memory>

#include "engine/lease_value.h"
#include "engine/lua_scripts.h"
#include "engine_calls.h"
#include "engine_under_test.h"
#include "fencelock/storage/lease.h"
#include "fencelock/storage/lease_secret.h"
#include "sync_redis.h"
#include "temp_dir.h"

using namespace fencelock::storage;
using namespace fencelock::testing;

namespace {

Result<Lease> acquire_request(EngineUnderTest& t, const std::string& name, const std::string& id,
                              std::chrono::milliseconds ttl = 10s,
                              std::chrono::milliseconds wait = 0ms, const std::string& owner = {}) {
  return await<Lease>([&](auto done) {
    t.engine().acquire(AcquireRequest{name, ttl, wait, owner, {}, id}, std::move(done));
  });
}

// The request field of `name`'s value on a node: what follows the token, up to the holder.
std::string request_field(SyncRedis& node, const std::string& name) {
  const auto value = node.get("fencelock:lock:" + name);
  if (!value) return "<none>";
  const std::size_t token_end = value->find(':', kLeaseValueLength + 1);
  const std::size_t field_end = value->find(':', token_end + 1);
  return value->substr(token_end + 1, field_end - token_end - 1);
}

}  // namespace

TEST_CASE("an acquire repeated with its request id answers the same grant while it is held",
          "[storage][redis]") {
  RedisCluster cluster(3);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));

  auto first = acquire_request(t, "invoice", "req-7f3a", 10s, 0ms, "key-a");
  const auto first_answered = std::chrono::steady_clock::now();
  REQUIRE(first.ok());
  CHECK_FALSE(first->repeated);
  const auto asked_again = std::chrono::steady_clock::now();
  auto again = acquire_request(t, "invoice", "req-7f3a", 10s, 0ms, "key-a");
  REQUIRE(again.ok());
  CHECK(again->repeated);
  CHECK(again->proof == first->proof);
  CHECK(again->token == first->token);
  // Counted from its own request, the repeat's validity never reaches past the keys' expiry: the
  // ttl after the first answer, at the latest (its keys were written before). Not "at most the
  // first's validity": that one also paid the first's token draw, made before the keys were set.
  CHECK(asked_again + again->validity <= first_answered + 10s + 1ms);
  CHECK(again->validity > 8s);
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    SyncRedis node(cluster.node(i).port());
    CHECK(request_field(node, "invoice") == "g" + request_digest("key-a", "invoice", "req-7f3a"));
  }

  // Another request, another key's owner or the same request for another name: refused or apart.
  CHECK(acquire_request(t, "invoice", "req-other", 10s, 0ms, "key-a").error().code ==
        ErrorCode::kLocked);
  CHECK(acquire_request(t, "invoice", "req-7f3a", 10s, 0ms, "key-b").error().code ==
        ErrorCode::kLocked);
  CHECK(t.acquire("invoice", 10s).error().code == ErrorCode::kLocked);
  auto other_name = acquire_request(t, "receipt", "req-7f3a", 10s, 0ms, "key-a");
  REQUIRE(other_name.ok());
  CHECK_FALSE(other_name->repeated);

  // The one lease: extended and released through either answer's proof.
  const LeaseClaim claim{again->token, again->proof, "key-a"};
  CHECK(t.extend("invoice", claim, 20s).ok());
  CHECK(t.release("invoice", claim).value());
  CHECK_FALSE(t.inspect("invoice")->held);

  // Released: the same request id is a new acquire, with a new token.
  auto after = acquire_request(t, "invoice", "req-7f3a", 10s, 0ms, "key-a");
  REQUIRE(after.ok());
  CHECK_FALSE(after->repeated);
  CHECK(after->token > first->token);
}

TEST_CASE("a repeat is answered by another engine sharing the nodes, and a waiting repeat at once",
          "[storage][redis]") {
  RedisCluster cluster(3);
  TempDir dir;
  const auto tokens = tokens_in(dir);
  EngineUnderTest a(engine_options_for(cluster), tokens);
  EngineUnderTest b(engine_options_for(cluster), tokens);

  auto granted = acquire_request(a, "batch", "job-42", 30s);
  REQUIRE(granted.ok());
  const auto before = std::chrono::steady_clock::now();
  auto repeat = acquire_request(b, "batch", "job-42", 30s, 20s);
  REQUIRE(repeat.ok());
  CHECK(std::chrono::steady_clock::now() - before < 5s);  // not a wait for the earlier grant
  CHECK(repeat->repeated);
  CHECK(repeat->proof == granted->proof);
  CHECK(repeat->token == granted->token);
  CHECK(repeat->waited == 0ms);
  CHECK(b.release("batch", claim(repeat)).value());
}

TEST_CASE("a repeat needs its earlier grant on a quorum - on a minority the acquire is a new one",
          "[storage][redis]") {
  RedisCluster cluster(3);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));

  auto granted = acquire_request(t, "report", "r-1");
  REQUIRE(granted.ok());
  // Two of the three nodes lose the key (as a failed attempt's cleanup would leave it): the one
  // left is no grant any more.
  for (std::size_t i = 0; i < 2; ++i) {
    SyncRedis node(cluster.node(i).port());
    node.command({"DEL", "fencelock:lock:report"});
  }
  auto next = acquire_request(t, "report", "r-1");
  REQUIRE(next.ok());
  CHECK_FALSE(next->repeated);
  CHECK(next->token > granted->token);
  CHECK(next->proof != granted->proof);
}

TEST_CASE("a failed attempt's cleanup deletes its pending value, never one a repeat answered",
          "[storage][redis]") {
  RedisCluster cluster(1);
  SyncRedis node(cluster.node(0).port());
  const std::string lease(kLeaseValueLength, 'c');
  const std::string digest = request_digest("", "n", "id");
  const std::string key = "fencelock:lock:n";
  const auto cleanup = [&] {
    return node.command({"EVAL", std::string(kReleaseSilentlyScript), "1", key, lease});
  };
  const auto adopt = [&](const std::string& head, const std::string& request) {
    return node.command({"EVAL", std::string(kAdoptLeaseScript), "1", key, head, request});
  };

  node.command({"SET", key, written_lease_value(lease, "9", lease_value_tail("p" + digest, "")),
                "PX", "10000"});
  cleanup();
  CHECK_FALSE(node.get(key).has_value());

  node.command({"SET", key, written_lease_value(lease, "9", lease_value_tail("p" + digest, "h")),
                "PX", "10000"});
  node.command({"SET", key, *node.get(key) + "#*", "KEEPTTL"});  // a waiter's mark stays
  CHECK(adopt(lease + ":8:", digest).integer == -1);             // another token: not this grant
  CHECK(adopt(lease + ":9:", request_digest("", "n", "other")).integer == -1);
  CHECK(adopt(lease + ":9:", digest).integer > 9000);
  CHECK(*node.get(key) == lease + ":9:g" + digest + ":h#*");
  CHECK(adopt(lease + ":9:", digest).integer > 9000);  // taken over twice: the same
  cleanup();
  CHECK(node.get(key).has_value());
}

TEST_CASE("request ids are checked, and a revoke takes none", "[storage][redis]") {
  RedisCluster cluster(1);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));
  for (const std::string& bad : {std::string(kMaxRequestIdLength + 1, 'r'), std::string("a b"),
                                 std::string("tab\t"), std::string("\xc3\xa9")}) {
    CAPTURE(bad);
    CHECK(acquire_request(t, "n", bad).error().code == ErrorCode::kInvalidArgument);
  }
  CHECK(acquire_request(t, "n", std::string(kMaxRequestIdLength, 'r')).ok());
  auto revoked = await<Lease>([&](auto done) {
    t.engine().revoke(AcquireRequest{"n", 1s, 0ms, {}, {}, "r"}, std::move(done));
  });
  CHECK(revoked.error().code == ErrorCode::kInvalidArgument);
}

TEST_CASE("the release of an undelivered grant leaves it to a repeat that took it over",
          "[storage][redis]") {
  RedisCluster cluster(3);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));

  auto granted = acquire_request(t, "export", "r-1", 10s);
  REQUIRE(granted.ok());
  LeaseClaim undelivered{granted->token, granted->proof, {}, /*unless_repeated=*/true};
  // Not repeated yet: released as any release.
  CHECK(t.release("export", undelivered).value());
  CHECK_FALSE(t.inspect("export")->held);

  auto again = acquire_request(t, "export", "r-2", 10s);
  REQUIRE(again.ok());
  auto repeat = acquire_request(t, "export", "r-2", 60s);  // the repeat's ttl is not the lease's
  REQUIRE(repeat.ok());
  CHECK(repeat->repeated);
  CHECK(repeat->ttl <= 10s);
  CHECK(repeat->validity <= repeat->ttl);
  // The first answer never reached its client: its release leaves the repeat's lease alone.
  CHECK_FALSE(t.release("export", {again->token, again->proof, {}, true}).value());
  CHECK(t.inspect("export")->held);
  CHECK(t.acquire("export", 1s).error().code == ErrorCode::kLocked);
  CHECK(t.release("export", claim(repeat)).value());  // its holder's own release still works
}

TEST_CASE("a waiting repeat behind other waiters is answered at once, and a new one queues",
          "[storage][redis]") {
  RedisCluster cluster(3);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));
  const auto acquire_later = [&](AcquireRequest request) {
    auto answer = std::make_shared<std::promise<Result<Lease>>>();
    t.engine().acquire(std::move(request),
                       [answer](Result<Lease> lease) { answer->set_value(std::move(lease)); });
    return answer->get_future();
  };

  auto held = acquire_request(t, "queue", "first", 30s);
  REQUIRE(held.ok());
  auto waiter = acquire_later(AcquireRequest{"queue", 10s, 20s, {}});
  REQUIRE(waiter.wait_for(200ms) == std::future_status::timeout);

  // The holder's request again, waiting too: found at once, not queued behind the waiter.
  const auto before = std::chrono::steady_clock::now();
  auto repeat = acquire_request(t, "queue", "first", 30s, 20s);
  REQUIRE(repeat.ok());
  CHECK(repeat->repeated);
  CHECK(std::chrono::steady_clock::now() - before < 5s);

  // A new request that waits queues behind the waiter: the release goes to the waiter first.
  auto newcomer = acquire_later(AcquireRequest{"queue", 10s, 20s, {}, {}, "second"});
  CHECK(newcomer.wait_for(200ms) == std::future_status::timeout);
  REQUIRE(t.release("queue", claim(held)).value());
  REQUIRE(waiter.wait_for(10s) == std::future_status::ready);
  const Result<Lease> first = waiter.get();
  REQUIRE(first.ok());
  CHECK(newcomer.wait_for(50ms) == std::future_status::timeout);
  REQUIRE(t.release("queue", claim(first)).value());
  REQUIRE(newcomer.wait_for(10s) == std::future_status::ready);
  const Result<Lease> second = newcomer.get();
  REQUIRE(second.ok());
  CHECK(second->token > first->token);
}
