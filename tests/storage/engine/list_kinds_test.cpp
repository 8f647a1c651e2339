// LockEngine::list_semaphores and list_rwlocks on real redis-servers: every semaphore with a permit
// held and every read/write lock with a grant held, with the prefix, at least once, each as its
// status says; nothing with nothing held, no lock or other kind's name; pages of any limit; still
// complete with a node down; a name the silent nodes could hold fails the page instead of being
// left out.
#include <catch2/catch.hpp>
#include <future>
#include <map>
#include <memory>
#include <set>
#include <thread>

#include "engine_calls.h"
#include "engine_under_test.h"
#include "fencelock/storage/lease.h"
#include "sync_redis.h"
#include "temp_dir.h"

using namespace fencelock::storage;
using namespace fencelock::testing;

namespace {

Result<SemaphorePage> semaphore_page(EngineUnderTest& t, ListRequest request) {
  return await<SemaphorePage>(
      [&](auto done) { t.engine().list_semaphores(std::move(request), std::move(done)); });
}

Result<RwLockPage> rwlock_page(EngineUnderTest& t, ListRequest request) {
  return await<RwLockPage>(
      [&](auto done) { t.engine().list_rwlocks(std::move(request), std::move(done)); });
}

// Every page of a listing (`page_of` one page, `entries` a page's entries), by name, as first
// listed: a name may come twice (a node late for one inspection, grants on different nodes; at
// least once is the promise). `pages` counts the pages.
template <class Entry, class PageOf, class Entries>
std::map<std::string, Entry> list_all(PageOf page_of, Entries entries, ListRequest request,
                                      std::size_t* pages = nullptr) {
  std::map<std::string, Entry> seen;
  for (std::size_t page = 1; page <= 1000; ++page) {
    auto listed = page_of(request);
    REQUIRE(listed.ok());
    for (Entry& entry : entries(*listed)) {
      seen.emplace(entry.name, std::move(entry));
    }
    if (pages != nullptr) *pages = page;
    if (listed->next.empty()) return seen;
    request.cursor = listed->next;
  }
  FAIL("the listing never ended");
  return seen;
}

std::map<std::string, ListedSemaphore> all_semaphores(EngineUnderTest& t, ListRequest request,
                                                      std::size_t* pages = nullptr) {
  return list_all<ListedSemaphore>([&](const ListRequest& r) { return semaphore_page(t, r); },
                                   [](SemaphorePage & page) -> auto& { return page.semaphores; },
                                   std::move(request), pages);
}

std::map<std::string, ListedRwLock> all_rwlocks(EngineUnderTest& t, ListRequest request,
                                                std::size_t* pages = nullptr) {
  return list_all<ListedRwLock>([&](const ListRequest& r) { return rwlock_page(t, r); },
                                [](RwLockPage & page) -> auto& { return page.rwlocks; },
                                std::move(request), pages);
}

Result<Lease> acquire_rw(EngineUnderTest& t, const std::string& name, RwMode mode,
                         std::string holder = {}) {
  return await<Lease>([&](auto done) {
    t.engine().acquire_rw(RwLockRequest{name, mode, 30s, 0ms, {}, std::move(holder)},
                          std::move(done));
  });
}

}  // namespace

TEST_CASE("a semaphore listing names every semaphore with a permit held, as its status says",
          "[storage][redis][list]") {
  RedisCluster cluster(5);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));
  // name → {permits, permits taken}
  const std::map<std::string, std::pair<std::uint32_t, std::uint32_t>> held = {
      {"pool:a", {3, 2}}, {"pool:b", {1, 1}}, {"pool:c", {5, 3}}, {"pool:d", {2, 1}},
      {"pool:e", {4, 4}}, {"pool:f", {1, 1}}, {"pool:g", {2, 2}}};
  for (const auto& [name, counts] : held) {
    for (std::uint32_t i = 0; i < counts.second; ++i)
      REQUIRE(acquire_permit(t, name, counts.first, 30s).ok());
  }
  REQUIRE(acquire_permit(t, "other:pool", 2, 30s).ok());
  auto released = acquire_permit(t, "pool:released", 2, 30s);
  REQUIRE(released.ok());
  REQUIRE(said_yes(release_permit(t, *released)));
  REQUIRE(t.acquire("pool:lock", 30s).ok());  // a lock: not a semaphore
  REQUIRE(acquire_rw(t, "pool:rw", RwMode::kRead).ok());

  auto check_all = [&](const std::map<std::string, ListedSemaphore>& listed) {
    REQUIRE(listed.size() == held.size());
    for (const auto& [name, counts] : held) {
      INFO(name);
      REQUIRE(listed.count(name) == 1);
      CHECK(listed.at(name).status.permits == counts.first);
      CHECK(listed.at(name).status.held == counts.second);
    }
  };
  std::size_t pages = 0;
  check_all(all_semaphores(t, ListRequest{"pool:", 1, ""}, &pages));
  CHECK(pages >= 2);
  check_all(all_semaphores(t, ListRequest{"pool:", 3, ""}));
  CHECK(all_semaphores(t, ListRequest{"", 1000, ""}).size() == held.size() + 1);
  CHECK(all_semaphores(t, ListRequest{"none:", 10, ""}).empty());

  SECTION("with the first node down every semaphore is still listed") {
    cluster.node(0).kill();
    t.wait_for_voting_nodes(4);
    check_all(all_semaphores(t, ListRequest{"pool:", 2, ""}));
  }
  SECTION("a node whose scan fails is passed over: its semaphores are listed from the next one") {
    SyncRedis(cluster.node(0).port()).command({"ACL", "SETUSER", "default", "-scan"});
    check_all(all_semaphores(t, ListRequest{"pool:", 2, ""}));
    SyncRedis(cluster.node(0).port()).command({"ACL", "SETUSER", "default", "+scan"});
  }
  SECTION("names the caller may not see are neither answered nor counted") {
    ListRequest request{"pool:", 1, ""};
    request.visible = [](std::string_view name) { return name == "pool:c" || name == "pool:f"; };
    const auto listed = all_semaphores(t, request);
    CHECK(listed.size() == 2);
    CHECK(listed.count("pool:c") == 1);
    CHECK(listed.count("pool:f") == 1);
  }
  SECTION("bad requests are refused before any node is asked") {
    for (const ListRequest& bad : {ListRequest{"pool/", 10, ""}, ListRequest{"", 0, ""},
                                   ListRequest{"", kMaxListLimit + 1, ""},
                                   ListRequest{"", 10, "9-0-0"}, ListRequest{"", 10, "x"}}) {
      auto refused = semaphore_page(t, bad);
      REQUIRE_FALSE(refused.ok());
      CHECK(refused.error().code == ErrorCode::kInvalidArgument);
      auto refused_rw = rwlock_page(t, bad);
      REQUIRE_FALSE(refused_rw.ok());
      CHECK(refused_rw.error().code == ErrorCode::kInvalidArgument);
    }
  }
}

TEST_CASE("a read/write lock listing names every read/write lock held, readers and writers",
          "[storage][redis][list]") {
  RedisCluster cluster(5);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));
  auto r1 = acquire_rw(t, "doc:a", RwMode::kRead, "rep-1");
  auto r2 = acquire_rw(t, "doc:a", RwMode::kRead, "rep-2");
  auto w = acquire_rw(t, "doc:b", RwMode::kWrite, "editor");
  REQUIRE((r1.ok() && r2.ok() && w.ok()));
  for (int i = 0; i < 6; ++i)
    REQUIRE(acquire_rw(t, "doc:n" + std::to_string(i), RwMode::kRead).ok());
  auto gone = acquire_rw(t, "doc:released", RwMode::kWrite);
  REQUIRE(gone.ok());
  REQUIRE(said_yes(await<bool>([&](auto done) {
    t.engine().release_rw("doc:released", RwMode::kWrite, {gone->token, gone->proof, {}},
                          std::move(done));
  })));
  REQUIRE(t.acquire("doc:lock", 30s).ok());
  REQUIRE(acquire_permit(t, "doc:pool", 2, 30s).ok());
  REQUIRE(acquire_rw(t, "other:x", RwMode::kRead).ok());
  // A writer waits on doc:a (new readers are kept out meanwhile).
  auto writer = std::make_shared<std::promise<Result<Lease>>>();
  auto written = writer->get_future();
  t.engine().acquire_rw(RwLockRequest{"doc:a", RwMode::kWrite, 30s, 60s, {}},
                        [writer](Result<Lease> lease) { writer->set_value(std::move(lease)); });
  for (int i = 0; i < 100 && acquire_rw(t, "doc:a", RwMode::kRead).ok(); ++i) {
  }  // until a new reader is refused: the writer waits

  auto check_all = [&](const std::map<std::string, ListedRwLock>& listed) {
    REQUIRE(listed.size() == 8);
    for (int i = 0; i < 6; ++i) CHECK(listed.count("doc:n" + std::to_string(i)) == 1);
    REQUIRE(listed.count("doc:b") == 1);
    const RwLockStatus& b = listed.at("doc:b").status;
    REQUIRE(b.grants.size() == 1);
    CHECK(b.grants[0].mode == RwMode::kWrite);
    CHECK(b.grants[0].token == w->token);
    CHECK(b.grants[0].holder == "editor");
    CHECK(b.grants[0].remaining > 20s);
    CHECK_FALSE(b.writer_waiting);
    REQUIRE(listed.count("doc:a") == 1);
    const RwLockStatus& a = listed.at("doc:a").status;
    CHECK(a.writer_waiting);
    REQUIRE(a.grants.size() >= 2);
    CHECK(a.grants[0].holder == "rep-1");
    CHECK(a.grants[1].holder == "rep-2");
    for (const auto& grant : a.grants) CHECK(grant.mode == RwMode::kRead);
  };
  std::size_t pages = 0;
  check_all(all_rwlocks(t, ListRequest{"doc:", 1, ""}, &pages));
  CHECK(pages >= 2);
  check_all(all_rwlocks(t, ListRequest{"doc:", 100, ""}));
  CHECK(all_rwlocks(t, ListRequest{"", 1000, ""}).size() == 9);

  SECTION("with the first node down every read/write lock is still listed") {
    cluster.node(0).kill();
    t.wait_for_voting_nodes(4);
    check_all(all_rwlocks(t, ListRequest{"doc:", 3, ""}));
  }
  SECTION("names the caller may not see are neither answered nor counted") {
    ListRequest request{"doc:", 1, ""};
    request.visible = [](std::string_view name) { return name.starts_with("doc:n"); };
    CHECK(all_rwlocks(t, request).size() == 6);
  }
  // Let the writer through before the engine goes: the readers release.
  for (const auto* reader : {&r1, &r2}) {
    CHECK(said_yes(await<bool>([&](auto done) {
      t.engine().release_rw("doc:a", RwMode::kRead, {(*reader)->token, (*reader)->proof, {}},
                            std::move(done));
    })));
  }
  written.wait_for(15s);
}

TEST_CASE("a semaphore listing or status that cannot tell whether a permit is held fails instead",
          "[storage][redis][list]") {
  RedisCluster cluster(3);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));
  auto permit = acquire_permit(t, "bare", 2, 30s);
  REQUIRE(permit.ok());
  // Held on exactly a quorum (nodes 0 and 1), and node 1 silent: node 0's slot is not "not held".
  SyncRedis(cluster.node(2).port())
      .command({"DEL", "fencelock:lock:bare#permit:" + std::to_string(permit->slot)});
  cluster.node(1).pause();
  auto page = semaphore_page(t, ListRequest{"bare", 10, ""});
  auto status = inspect_semaphore(t, "bare");  // its count could be short by that permit
  cluster.node(1).resume();
  REQUIRE_FALSE(page.ok());
  CHECK(page.error().code == ErrorCode::kUnavailable);
  REQUIRE_FALSE(status.ok());
  CHECK(status.error().code == ErrorCode::kUnavailable);
  // Once node 1 answers again (its connection may take a moment), held on a quorum: nodes 0, 1.
  auto again = inspect_semaphore(t, "bare");
  for (int i = 0; i < 50 && !again.ok(); ++i) {
    std::this_thread::sleep_for(100ms);
    again = inspect_semaphore(t, "bare");
  }
  REQUIRE(again.ok());
  CHECK(again->held == 1);
}

TEST_CASE("a semaphore listing fails when one permit could be held, even if another is held",
          "[storage][redis][list]") {
  // Permit B on nodes {0,1,2}, permit A on {2,3,4}; node 1 silent. Node 0's step sees B on {0,2}
  // plus a silent node (maybe held) and A held, listed from node 2. Were the maybe-held B dropped
  // because A is held, A released before node 2's turn would leave the semaphore unlisted though B
  // was held throughout: the page fails instead.
  RedisCluster cluster(5);
  TempDir dir;
  EngineUnderTest t(engine_options_for(cluster), tokens_in(dir));
  auto b = acquire_permit(t, "multi", 2, 30s);
  auto a = acquire_permit(t, "multi", 2, 30s);
  REQUIRE((b.ok() && a.ok()));
  const auto drop = [&](const Result<Permit>& permit, std::initializer_list<std::size_t> nodes) {
    for (const std::size_t node : nodes) {
      SyncRedis(cluster.node(node).port())
          .command({"DEL", "fencelock:lock:multi#permit:" + std::to_string(permit->slot)});
    }
  };
  drop(b, {3, 4});
  drop(a, {0, 1});
  cluster.node(1).pause();
  auto page = semaphore_page(t, ListRequest{"multi", 10, ""});
  cluster.node(1).resume();
  REQUIRE_FALSE(page.ok());
  CHECK(page.error().code == ErrorCode::kUnavailable);
}
