// LockEngine::list on real redis-servers: every name held on a quorum with the prefix, once, in
// pages of bounded work; nothing held only on a minority, no fence, permit or registry key; a
// listing still complete with a node down.
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <thread>
#include <vector>

#include "engine_calls.h"
#include "engine_under_test.h"
#include "fencelock/storage/lease.h"
#include "fencelock/storage/sqlite_token_source.h"
#include "sync_redis.h"
#include "temp_dir.h"

using namespace fencelock::storage;
using namespace fencelock::testing;

namespace {

Result<LockPage> list_page(EngineUnderTest& t, const std::string& prefix, std::size_t limit,
                           const std::string& cursor = {}) {
  return await<LockPage>([&](auto done) {
    t.engine().list(ListRequest{prefix, limit, cursor}, std::move(done));
  });
}

// Every page of a listing; each name's entry (FAILs on a name listed twice).
std::map<std::string, HeldLock> list_all(EngineUnderTest& t, const std::string& prefix,
                                         std::size_t limit, std::size_t* pages = nullptr) {
  std::map<std::string, HeldLock> seen;
  std::string cursor;
  for (std::size_t page = 1; page <= 1000; ++page) {
    auto listed = list_page(t, prefix, limit, cursor);
    REQUIRE(listed.ok());
    CHECK(listed->locks.size() <= 2 * limit + 16);  // a step's names may run over the limit
    for (HeldLock& held : listed->locks) {
      INFO(held.name);
      CHECK(seen.count(held.name) == 0);
      seen.emplace(held.name, std::move(held));
    }
    if (pages != nullptr) *pages = page;
    if (listed->next.empty()) return seen;
    cursor = listed->next;
  }
  FAIL("the listing never ended");
  return seen;
}

// How many SCAN calls `node` served so far.
std::int64_t scan_calls(RedisCluster& cluster, std::size_t node) {
  const std::string stats =
      SyncRedis(cluster.node(node).port()).info_field("commandstats", "cmdstat_scan");
  if (stats.empty()) return 0;
  return std::stoll(stats.substr(stats.find('=') + 1));
}

}  // namespace

TEST_CASE("a listing names every held lock with the prefix once, with its token and owner",
          "[storage][redis]") {
  RedisCluster cluster(5);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));
  std::map<std::string, std::uint64_t> tokens;
  for (int i = 0; i < 30; ++i) {
    const std::string name = "job:" + std::to_string(i);
    auto lease = await<Lease>([&](auto done) {
      t.engine().acquire(AcquireRequest{name, 30s, 0ms, {}, "worker-" + std::to_string(i)},
                         std::move(done));
    });
    REQUIRE(lease.ok());
    tokens[name] = lease->token;
  }
  for (int i = 0; i < 5; ++i) REQUIRE(t.acquire("other:" + std::to_string(i), 30s).ok());
  auto set = acquire_set(t, {"job:set-b", "job:set-a"}, 30s);
  REQUIRE(set.ok());
  tokens["job:set-a"] = set->tokens[0];
  tokens["job:set-b"] = set->tokens[1];
  REQUIRE(acquire_permit(t, "job:pool", 2, 30s).ok());  // semaphores are not listed
  auto released = t.acquire("job:released", 30s);
  REQUIRE(released.ok());
  REQUIRE(t.release("job:released", claim(released)).value());

  std::size_t pages = 0;
  const auto listed = list_all(t, "job:", 7, &pages);
  CHECK(pages >= 3);
  REQUIRE(listed.size() == tokens.size());
  for (const auto& [name, token] : tokens) {
    INFO(name);
    REQUIRE(listed.count(name) == 1);
    CHECK(listed.at(name).token == token);
    CHECK(listed.at(name).remaining > 20s);
    CHECK(listed.at(name).remaining <= 30s);
  }
  CHECK(listed.at("job:7").holder == "worker-7");
  CHECK(list_all(t, "", 1000).size() == tokens.size() + 5);
  CHECK(list_all(t, "none:", 10).empty());

  SECTION("a name held only on a minority is not listed") {
    for (std::size_t i = 0; i < 3; ++i)
      SyncRedis(cluster.node(i).port()).command({"DEL", "fencelock:lock:job:3"});
    CHECK(list_all(t, "job:", 50).count("job:3") == 0);
  }
  SECTION("only the first nodes that meet every quorum are scanned: 3 of 5") {
    const auto before = [&] {
      std::vector<std::int64_t> calls;
      for (std::size_t i = 0; i < 5; ++i) calls.push_back(scan_calls(cluster, i));
      return calls;
    }();
    CHECK(list_all(t, "job:", 5).size() == tokens.size());
    for (std::size_t i = 0; i < 5; ++i) {
      INFO("node " << i);
      CHECK((scan_calls(cluster, i) > before[i]) == (i < 3));
    }
  }
  SECTION("with the first node down every held name is still listed once") {
    cluster.node(0).kill();
    t.wait_for_voting_nodes(4);
    const std::int64_t last_before = scan_calls(cluster, 4);
    CHECK(list_all(t, "job:", 5).size() == tokens.size());
    CHECK(scan_calls(cluster, 3) > 0);  // in node 0's place
    CHECK(scan_calls(cluster, 4) == last_before);
  }
  SECTION("a node whose scan fails is passed over: what it holds is listed from the next holder") {
    SyncRedis(cluster.node(0).port()).command({"ACL", "SETUSER", "default", "-scan"});
    CHECK(list_all(t, "job:", 5).size() == tokens.size());
    SyncRedis(cluster.node(0).port()).command({"ACL", "SETUSER", "default", "+scan"});
  }
  SECTION("a key of another type under the prefix hides nothing") {
    for (std::size_t i = 0; i < 3; ++i)
      SyncRedis(cluster.node(i).port()).command({"HSET", "fencelock:lock:job:odd", "f", "v"});
    const auto listed_now = list_all(t, "job:", 1000);
    CHECK(listed_now.size() == tokens.size());
    CHECK(listed_now.count("job:odd") == 0);
  }
  SECTION("names the caller may not see are neither answered nor counted") {
    ListRequest request{"job:", 5, ""};
    request.visible = [](std::string_view name) { return name.starts_with("job:1"); };
    std::set<std::string> seen;
    for (int page = 0; page < 100; ++page) {
      auto page_of = await<LockPage>([&](auto done) { t.engine().list(request, std::move(done)); });
      REQUIRE(page_of.ok());
      for (const HeldLock& held : page_of->locks) seen.insert(held.name);
      if (page_of->next.empty()) break;
      request.cursor = page_of->next;
    }
    CHECK(seen.size() == 11);  // job:1 and job:10 … job:19
    for (const auto& name : seen) CHECK(name.starts_with("job:1"));
  }
  SECTION("bad requests are refused before any node is asked") {
    for (const ListRequest& bad :
         {ListRequest{"job/", 10, ""}, ListRequest{std::string(201, 'a'), 10, ""},
          ListRequest{"", 0, ""}, ListRequest{"", kMaxListLimit + 1, ""},
          ListRequest{"", 10, "9-0-0"}, ListRequest{"", 10, "x"}, ListRequest{"", 10, "1-"},
          ListRequest{"", 10, "1-0"}, ListRequest{"", 10, "1-0-20"}, ListRequest{"", 10, "1-0-2"},
          ListRequest{"", 10, "1-0-0-a/b"}, ListRequest{"", 10, "1-0-0-0123456789abc"},
          ListRequest{"", 10, std::string(65, '1')}}) {
      auto refused = await<LockPage>([&](auto done) { t.engine().list(bad, std::move(done)); });
      REQUIRE_FALSE(refused.ok());
      CHECK(refused.error().code == ErrorCode::kInvalidArgument);
    }
  }
}

TEST_CASE("a listing that cannot tell whether a name is held fails instead of leaving it out",
          "[storage][redis]") {
  RedisCluster cluster(3);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));
  REQUIRE(t.acquire("bare", 30s).ok());
  // Held on exactly a quorum (nodes 0 and 1), and node 1 silent: node 0's key is not "not held".
  SyncRedis(cluster.node(2).port()).command({"DEL", "fencelock:lock:bare"});
  cluster.node(1).pause();
  auto page = await<LockPage>([&](auto done) {
    t.engine().list(ListRequest{"bare", 10, ""}, std::move(done));
  });
  cluster.node(1).resume();
  REQUIRE_FALSE(page.ok());
  CHECK(page.error().code == ErrorCode::kUnavailable);
}

// Redis seeds its key hash anew at every start: a SCAN cursor of the last incarnation would skip
// keys the new one hashes before it.
TEST_CASE("a listing goes on across a restart of the node it scans, missing no held name",
          "[storage][redis]") {
  RedisCluster cluster(3, Persistence::kAofAlways);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));
  std::set<std::string> held;
  for (int i = 0; i < 300; ++i) {
    const std::string name = "job:" + std::to_string(i);
    REQUIRE(t.acquire(name, 60s).ok());
    held.insert(name);
  }
  std::set<std::string> seen;
  auto first = list_page(t, "job:", 20);
  REQUIRE(first.ok());
  for (const HeldLock& lock : first->locks) seen.insert(lock.name);
  REQUIRE(first->next.starts_with("0-"));                               // still on node 0
  CHECK(std::count(first->next.begin(), first->next.end(), '-') == 3);  // with a run tag
  std::this_thread::sleep_for(1500ms);  // a settings check: node 0 is seen durable
  const auto disconnects = t.engine().node_statuses()[0].disconnects;
  cluster.node(0).restart(/*keep_data=*/true);
  t.wait_until(
      [&] {
        const NodeStatus node = t.engine().node_statuses()[0];
        return node.disconnects > disconnects && node.up && !node.quarantined;
      },
      10s);
  std::string cursor = first->next;
  for (int page = 0; page < 1000 && !cursor.empty(); ++page) {
    auto listed = list_page(t, "job:", 20, cursor);
    REQUIRE(listed.ok());
    for (const HeldLock& lock : listed->locks) seen.insert(lock.name);  // repeats are allowed
    cursor = listed->next;
  }
  CHECK(cursor.empty());
  CHECK(seen == held);

  SECTION("a cursor without a run tag (an older fencelockd's) scans its node again") {
    seen.clear();
    for (cursor = "0-1234-0"; !cursor.empty();) {
      auto listed = list_page(t, "job:", 1000, cursor);
      REQUIRE(listed.ok());
      for (const HeldLock& lock : listed->locks) seen.insert(lock.name);
      cursor = listed->next;
    }
    CHECK(seen == held);
  }
}
