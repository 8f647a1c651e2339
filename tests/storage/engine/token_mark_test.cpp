// The lock nodes' token mark (instance_registry.h) against real redis-servers and a real SQLite
// token file: a token store that went back — a file restored from a backup — is refused by an
// engine started on it afterwards, while a plain restart on the same file grants.
#include <catch2/catch.hpp>
#include <filesystem>
#include <string>

#include "engine_calls.h"
#include "engine_under_test.h"
#include "fencelock/storage/sqlite_token_source.h"
#include "sync_redis.h"
#include "temp_dir.h"
#include "token_checks.h"

using namespace fencelock::storage;
using namespace fencelock::testing;

namespace {

constexpr std::string_view kRegistryKey = "fencelock:#instances:fencelock:lock:";

// The SQLite file at `path` (one token reserved per write, so a restored copy goes back exactly)
// and an engine on it, as fencelockd pairs them.
struct Instance {
  Instance(RedisCluster& cluster, const std::filesystem::path& path, bool wait = true) {
    tokens = sqlite_tokens_one_at_a_time(path);
    auto engine_options = engine_options_for(cluster);
    engine_options.exclusive_tokens = "sqlite:" + tokens->store_id();
    engine_options.token_order = EngineOptions::TokenOrder::kAboveRestart;
    engine = std::make_unique<EngineUnderTest>(engine_options, tokens, nullptr, wait);
  }
  // A lease taken and released: its token.
  std::uint64_t grant() {
    auto lease = engine->acquire("vault", 2s);
    REQUIRE(lease.ok());
    REQUIRE(engine->release("vault", LeaseClaim{lease->token, lease->proof, ""}).ok());
    return lease->token;
  }
  std::shared_ptr<SqliteTokenSource> tokens;
  std::unique_ptr<EngineUnderTest> engine;  // after tokens: stopped first
};

std::uint64_t node_mark(RedisCluster& cluster, std::size_t i) {
  const auto text = SyncRedis(cluster.node(i).port()).command({"HGET", kRegistryKey, "#mark"}).text;
  return text.empty() ? 0 : std::stoull(text);
}

// Waits until every node's mark reached `token` (a heartbeat a second).
void wait_for_mark(RedisCluster& cluster, std::uint64_t token) {
  const auto deadline = std::chrono::steady_clock::now() + 5s;
  for (std::size_t i = 0; i < cluster.size(); ++i) {
    while (node_mark(cluster, i) < token) {
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::this_thread::sleep_for(20ms);
    }
  }
}

void copy_token_file(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::filesystem::remove(to.string() + "-wal");
  std::filesystem::remove(to.string() + "-shm");
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing);
}

}  // namespace

TEST_CASE("an engine on a token file restored from a backup refuses every grant, for good",
          "[storage][redis]") {
  RedisCluster cluster(3);
  TempDir dir;
  const auto file = dir.path() / "tokens.db";
  const auto backup = dir.path() / "backup.db";
  {
    Instance first(cluster, file);
    first.grant();
  }  // closed: the file holds everything (WAL checkpointed)
  copy_token_file(file, backup);
  std::uint64_t highest = 0;
  {
    Instance restarted(cluster, file);  // a plain restart on the same file grants
    for (int i = 0; i < 5; ++i) highest = restarted.grant();
    wait_for_mark(cluster, highest);
  }
  copy_token_file(backup, file);

  Instance restored(cluster, file, /*wait=*/false);
  EngineUnderTest::wait_for_first_registry_round(restored.engine->engine());
  const auto refused = restored.engine->acquire("vault", 2s);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == ErrorCode::kUnavailable);
  CHECK_THAT(refused.error().message, Catch::Contains("the token store went back"));
  // For good: not even once the file's counter passes the highest token handed out.
  for (std::uint64_t i = 0; i < highest + 2; ++i)
    REQUIRE(draw_one(*restored.tokens, "filler").ok());
  CHECK_THAT(restored.engine->acquire("vault", 2s).error().message,
             Catch::Contains("the token store went back"));
  CHECK(restored.engine->engine().grant_refusal().has_value());
  CHECK(node_mark(cluster, 0) == highest);  // a refused token is not counted as handed out
}

TEST_CASE("a clean stop writes the tokens handed out since the last heartbeat into the nodes' mark",
          "[storage][redis]") {
  // The mark is written with each heartbeat (once a second); a store that went back later is
  // refused only up to the mark. A clean stop sends one last heartbeat, so its last second of
  // tokens is not left out.
  RedisCluster cluster(3);
  TempDir dir;
  std::uint64_t last = 0;
  {
    Instance first(cluster, dir.path() / "tokens.db");
    wait_for_mark(cluster, first.grant());             // a heartbeat just carried it
    for (int i = 0; i < 3; ++i) last = first.grant();  // well within the next second
  }                                                    // a clean stop, at once
  for (std::size_t i = 0; i < cluster.size(); ++i) CHECK(node_mark(cluster, i) == last);
}
