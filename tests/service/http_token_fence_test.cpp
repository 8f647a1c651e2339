// The fence through real fencelockd processes (#32 item 1): an operator copies a running instance's
// SQLite token file (a cloned volume) and starts a second instance on the copy, on the same lock
// nodes. Whatever the two instances answer, no token may be granted twice or out of grant order.
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "service_under_test.h"
#include "sync_redis.h"

using namespace fencelock::testing;
using namespace std::chrono_literals;
using json = nlohmann::json;

namespace {

// Copies the live database `from` to `to` with SQLite's online backup API: what a snapshot of a
// running volume gives.
void backup_live(const std::filesystem::path& from, const std::filesystem::path& to) {
  sqlite3* source = nullptr;
  sqlite3* target = nullptr;
  REQUIRE(sqlite3_open_v2(from.c_str(), &source, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_open(to.c_str(), &target) == SQLITE_OK);
  sqlite3_backup* backup = sqlite3_backup_init(target, "main", source, "main");
  REQUIRE(backup != nullptr);
  CHECK(sqlite3_backup_step(backup, -1) == SQLITE_DONE);
  sqlite3_backup_finish(backup);
  sqlite3_close(target);
  sqlite3_close(source);
}

}  // namespace

TEST_CASE(
    "http fence: instances on a live copy of one token file never grant a token twice or "
    "backwards",
    "[service][redis]") {
  ServiceUnderTest a;
  HttpClient http_a = a.client();
  std::vector<std::uint64_t> granted;
  const auto take = [&](HttpClient& http) {
    const TakenAndReleased taken = take_and_release(http, "x", {{"ttl_ms", 2000}});
    if (taken.status != 200) return taken.status;
    granted.push_back(taken.token);
    REQUIRE(taken.released);
    return taken.status;
  };
  for (int i = 0; i < 3; ++i) REQUIRE(take(http_a) == 200);

  TempDir copy_dir;
  const auto copy = copy_dir.path() / "tokens.db";
  backup_live(a.dir.path() / "tokens.db", copy);
  Fencelockd b(copy_dir.path(), {"--redis", join_addresses(a.cluster.addresses()), "--tokens",
                                 "sqlite:" + copy.string()});
  HttpClient http_b(b.port());
  // Through B and A in turn, each acquire answered before the next starts, for 3 s: whatever each
  // answers (the registry refuses copies once it sees both), the granted tokens must rise.
  int from_b = 0;
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  for (int i = 0; i < 400 && std::chrono::steady_clock::now() < deadline; ++i) {
    if (take(http_b) == 200) ++from_b;
    take(http_a);
  }
  INFO("granted " << granted.size() << " tokens, " << from_b << " through the copy");
  CHECK(from_b > 0);  // the copy behind skips past the fence (until the registry refuses copies)
  for (std::size_t i = 1; i < granted.size(); ++i) {
    INFO("grant " << i << ": " << granted[i - 1] << " then " << granted[i]);
    REQUIRE(granted[i] > granted[i - 1]);
  }
}

TEST_CASE("http fence: an SQLite token store behind a name's fence is granted above it at once",
          "[service][redis]") {
  // What a store that went back looks like to the nodes (a restored file, a move from another
  // source): every node's fence for the name is far above the file's counter.
  ServiceUnderTest s;
  for (std::size_t i = 0; i < s.cluster.size(); ++i)
    SyncRedis(s.cluster.node(i).port()).command({"SET", "fencelock:lock:moved#fence", "5000"});
  HttpClient http = s.client();
  const HttpAnswer granted = http.post("/v1/locks/moved", {{"ttl_ms", 2000}});
  REQUIRE(granted.status == 200);
  CHECK(granted.json()["token"] == 5001);  // one refused attempt, then the skip past the fence
  for (std::size_t i = 0; i < s.cluster.size(); ++i)
    CHECK(SyncRedis(s.cluster.node(i).port()).fence("moved") == 5001);
  // Other names are not moved.
  CHECK(http.post("/v1/locks/other", {{"ttl_ms", 2000}}).json()["token"] == 1);
}

TEST_CASE("http fence: a token drawn without a lock is fenced like a grant's", "[service][redis]") {
  ServiceUnderTest s;
  for (std::size_t i = 0; i < s.cluster.size(); ++i)
    SyncRedis(s.cluster.node(i).port()).command({"SET", "fencelock:lock:drawn#fence", "7000"});
  HttpClient http = s.client();
  // The SQLite counter of "drawn" is at 0: refused by the fences, skipped past them, drawn again.
  const HttpAnswer drawn = http.request("POST", "/v1/tokens/drawn");
  REQUIRE(drawn.status == 200);
  CHECK(drawn.json()["token"] == 7001);
  std::size_t raised = 0;
  for (std::size_t i = 0; i < s.cluster.size(); ++i)
    if (SyncRedis(s.cluster.node(i).port()).fence("drawn") == 7001) ++raised;
  CHECK(raised >= 3);  // a quorum at least (the others may answer after the reply)
  // A grant after it gets a larger token.
  CHECK(http.post("/v1/locks/drawn", {{"ttl_ms", 2000}}).json()["token"].get<std::uint64_t>() >
        7001);
}
