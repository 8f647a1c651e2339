// The resource store and the Kleppmann demo, as real processes over real HTTP.
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "build_paths.h"
#include "child_process.h"
#include "http_client.h"
#include "redis_server.h"
#include "service_under_test.h"
#include "temp_dir.h"

using namespace fencelock::testing;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

// A resource-store process on a free port. Its database is `db` in `dir` (default: named after
// the mode); its log and output are named after `name` (default: the mode).
struct Store {
  ChildProcess process;
  std::uint16_t port = 0;
  Store(const std::filesystem::path& dir, const std::string& mode, const std::string& db = "",
        const std::string& name = "") {
    const std::string stem = name.empty() ? mode : name;
    port = pick_free_port();
    process.start({resource_store_binary(), "--listen", "127.0.0.1:" + std::to_string(port), "--db",
                   (dir / (db.empty() ? mode + ".db" : db)).string(), "--log",
                   (dir / (stem + ".ops.log")).string(), "--mode", mode},
                  dir / (stem + ".out"));
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (HttpClient(port, 500ms).get("/healthz").status != 200) {
      if (std::chrono::steady_clock::now() > deadline || process.poll_exit())
        FAIL("resource-store did not start");
      std::this_thread::sleep_for(10ms);
    }
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
  HttpAnswer put(const std::string& key, const std::string& value,
                 std::optional<std::uint64_t> token) {
    std::map<std::string, std::string> headers;
    if (token) headers["Fencing-Token"] = std::to_string(*token);
    return HttpClient(port).request("PUT", "/objects/" + key, value, headers);
  }
  HttpAnswer get(const std::string& key, std::optional<std::uint64_t> token = std::nullopt) {
    std::map<std::string, std::string> headers;
    if (token) headers["Fencing-Token"] = std::to_string(*token);
    return HttpClient(port).request("GET", "/objects/" + key, "", headers);
  }
  std::vector<json> log() {
    std::vector<json> entries;
    std::stringstream lines(HttpClient(port).get("/log").body);
    for (std::string line; std::getline(lines, line);) entries.push_back(json::parse(line));
    return entries;
  }
};

}  // namespace

TEST_CASE("store: a stale token is refused with the newer token, and logged", "[examples]") {
  TempDir dir;
  Store store(dir.path(), "fenced");
  CHECK(store.put("doc", "v33", 33).status == 200);
  const HttpAnswer stale = store.put("doc", "v32", 32);
  CHECK(stale.status == 409);
  CHECK(stale.error_code() == "stale_token");
  CHECK(stale.json()["error"]["current_token"] == 33);
  CHECK(store.put("doc", "again33", 33).status == 409);  // equal tokens too, in fenced mode
  CHECK(store.put("doc", "v34", 34).status == 200);
  CHECK(store.get("doc").json() == json{{"key", "doc"}, {"value", "v34"}, {"token", 34}});
  CHECK(store.put("doc", "no token", std::nullopt).status == 400);

  const auto log = store.log();
  REQUIRE(log.size() == 4);
  CHECK(log[1]["outcome"] == "rejected_stale");
  CHECK(log[1]["token"] == 32);
  CHECK(log[3]["outcome"] == "applied");
}

TEST_CASE("store: same-token mode lets one lease write several times, never an older one",
          "[examples]") {
  TempDir dir;
  Store store(dir.path(), "same-token");
  CHECK(store.put("doc", "a", 5).status == 200);
  CHECK(store.put("doc", "b", 5).status == 200);
  CHECK(store.put("doc", "c", 4).status == 409);
  CHECK(store.get("doc").json()["value"] == "b");
  CHECK(store.get("doc", 6).json()["value"] == "b");  // a fenced read, then the reader writes twice
  CHECK(store.put("doc", "d", 6).status == 200);
  CHECK(store.put("doc", "e", 6).status == 200);
  CHECK(store.put("doc", "f", 5).status == 409);
  CHECK(store.get("doc").json()["value"] == "e");
}

TEST_CASE("store: a fenced read keeps an older holder from writing afterwards", "[examples]") {
  TempDir dir;
  Store store(dir.path(), "fenced");
  REQUIRE(store.put("acct", "100", 32).status == 200);
  CHECK(store.get("acct", 33).json()["value"] == "100");  // holder 33 reads...
  CHECK(store.get("acct", 34).json()["value"] == "100");  // ...then holder 34 reads (fenced)
  CHECK(store.put("acct", "110", 33).status == 409);      // 33's write based on its read: refused
  CHECK(store.get("acct", 33).status == 409);             // and 33 cannot even read any more
  CHECK(store.get("missing").status == 404);
}

// Issue #12 item 11. Holder 34 reads "absent"; holder 33, paused before it could create the
// object, wakes and writes it; 34 then writes, never having seen 33's data. The fenced read of
// the missing key must record 34 so that 33's write is refused.
TEST_CASE(
    "store: a fenced read of a missing object records its token, so an older holder cannot create "
    "it",
    "[examples]") {
  TempDir dir;
  Store store(dir.path(), "fenced");

  const HttpAnswer read = store.get("invoice", 34);
  CHECK(read.status == 404);
  CHECK(read.error_code() == "not_found");
  const HttpAnswer older = store.put("invoice", "by 33", 33);
  CHECK(older.status == 409);
  CHECK(older.error_code() == "stale_token");
  CHECK(older.json()["error"]["current_token"] == 34);
  CHECK(store.get("invoice").status == 404);      // the recorded token is not an object
  CHECK(store.get("invoice", 33).status == 409);  // and 33 cannot read past it either
  CHECK(store.put("invoice", "by 34", 34).status == 200);
  CHECK(store.get("invoice").json() == json{{"key", "invoice"}, {"value", "by 34"}, {"token", 34}});
}

// Issue #12 item 12: fenced mode admits the token that fenced the read, once.
TEST_CASE(
    "store: in fenced mode the holder that fenced its read writes once with its token — older "
    "tokens never",
    "[examples]") {
  TempDir dir;
  Store store(dir.path(), "fenced");

  SECTION("a read with a newer token, then that token's write") {
    CHECK(store.put("doc", "by 5", 5).status == 200);
    CHECK(store.get("doc", 6).json()["value"] == "by 5");
    CHECK(store.get("doc", 6).json()["value"] == "by 5");  // reading again grants nothing more
    CHECK(store.put("doc", "by 6", 6).status == 200);
    const HttpAnswer older = store.put("doc", "by 5 again", 5);
    CHECK(older.status == 409);
    CHECK(older.json()["error"]["current_token"] == 6);
    CHECK(store.put("doc", "by 6 again", 6).status == 409);  // one write per lease
    CHECK(store.get("doc").json() == json{{"key", "doc"}, {"value", "by 6"}, {"token", 6}});
  }
  SECTION("a read after the holder's own write grants no second write") {
    CHECK(store.put("doc", "by 6", 6).status == 200);
    CHECK(store.get("doc", 6).json()["value"] == "by 6");
    CHECK(store.put("doc", "by 6 again", 6).status == 409);
    CHECK(store.get("doc").json()["value"] == "by 6");
  }
}

// Two store processes on one database file, as two replicas of a service would run. Each token t
// is one holder doing a read-modify-write of a counter: a fenced GET with t through one process,
// then a PUT of (what it read + 1) with t through the other. Fencing must make this lossless: the
// counter ends equal to the number of PUTs reported applied, and the applied writes, in commit
// order (recorded by a trigger), carry strictly increasing tokens.
TEST_CASE("store: two processes sharing the database never lose a fenced read-modify-write",
          "[examples]") {
  TempDir dir;
  Store first(dir.path(), "fenced", "shared.db", "first");
  Store second(dir.path(), "fenced", "shared.db", "second");
  {
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open_v2((dir.path() / "shared.db").c_str(), &raw, SQLITE_OPEN_READWRITE,
                            nullptr) == SQLITE_OK);
    const std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw, sqlite3_close);
    sqlite3_busy_timeout(db.get(), 10'000);
    REQUIRE(
        sqlite3_exec(
            db.get(),
            "CREATE TABLE history(seq INTEGER PRIMARY KEY AUTOINCREMENT, token INTEGER NOT NULL);"
            "CREATE TRIGGER record_write AFTER UPDATE OF value ON objects"
            " BEGIN INSERT INTO history(token) VALUES (NEW.current_token); END;",
            nullptr, nullptr, nullptr) == SQLITE_OK);
  }

  constexpr std::uint64_t kWorkers = 4;
  constexpr std::uint64_t kLastToken = 160;
  struct Attempt {
    std::uint64_t token;
    unsigned read_status;
    unsigned write_status;
  };
  std::vector<std::vector<Attempt>> attempts(kWorkers);
  std::vector<std::thread> workers;
  for (std::uint64_t w = 0; w < kWorkers; ++w) {
    workers.emplace_back([&, w] {
      HttpClient via_first(first.port);
      HttpClient via_second(second.port);
      for (std::uint64_t t = w + 1; t <= kLastToken; t += kWorkers) {
        HttpClient& reader = t % 2 == 0 ? via_first : via_second;
        HttpClient& writer = t % 2 == 0 ? via_second : via_first;
        const std::map<std::string, std::string> token{{"Fencing-Token", std::to_string(t)}};
        const HttpAnswer read = reader.request("GET", "/objects/counter", "", token);
        if (read.status != 200 && read.status != 404) {
          attempts[w].push_back({t, read.status, 0});
          continue;  // refused: this holder's lease is over, and it writes nothing
        }
        const std::int64_t seen =
            read.status == 200 ? std::stoll(read.json()["value"].get<std::string>()) : 0;
        const HttpAnswer write =
            writer.request("PUT", "/objects/counter", std::to_string(seen + 1), token);
        attempts[w].push_back({t, read.status, write.status});
      }
    });
  }
  for (auto& worker : workers) worker.join();

  std::set<std::uint64_t> applied;
  for (const auto& worker_attempts : attempts) {
    for (const Attempt& a : worker_attempts) {
      INFO("token " << a.token << ": read " << a.read_status << ", write " << a.write_status);
      CHECK((a.read_status == 200 || a.read_status == 404 || a.read_status == 409));
      CHECK((a.write_status == 0 || a.write_status == 200 || a.write_status == 409));
      if (a.write_status == 200) applied.insert(a.token);
    }
  }
  REQUIRE_FALSE(applied.empty());

  std::vector<std::uint64_t> history;
  {
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open_v2((dir.path() / "shared.db").c_str(), &raw, SQLITE_OPEN_READONLY,
                            nullptr) == SQLITE_OK);
    const std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw, sqlite3_close);
    sqlite3_stmt* statement = nullptr;
    REQUIRE(sqlite3_prepare_v2(db.get(), "SELECT token FROM history ORDER BY seq", -1, &statement,
                               nullptr) == SQLITE_OK);
    while (sqlite3_step(statement) == SQLITE_ROW) {
      history.push_back(static_cast<std::uint64_t>(sqlite3_column_int64(statement, 0)));
    }
    sqlite3_finalize(statement);
  }
  for (std::size_t i = 1; i < history.size(); ++i) {
    INFO("history position " << i);
    CHECK(history[i - 1] < history[i]);
  }
  CHECK(std::set<std::uint64_t>(history.begin(), history.end()) == applied);
  CHECK(history.size() == applied.size());
  const json counter = first.get("counter").json();
  CHECK(counter["value"] == std::to_string(applied.size()));
  CHECK(counter["token"] == *applied.rbegin());
}

// Databases written by a store from before placeholders: objects.value is NOT NULL and there is
// no read_fenced column. The store must say so and exit, not serve with weaker fencing.
TEST_CASE("store: a database from an older store is refused with a clear message", "[examples]") {
  TempDir dir;
  {
    sqlite3* raw = nullptr;
    REQUIRE(sqlite3_open_v2((dir.path() / "old.db").c_str(), &raw,
                            SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) == SQLITE_OK);
    const std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw, sqlite3_close);
    REQUIRE(sqlite3_exec(db.get(),
                         "CREATE TABLE objects (key TEXT PRIMARY KEY, value TEXT NOT NULL,"
                         " current_token INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;"
                         "INSERT INTO objects VALUES ('doc', 'kept', 7);",
                         nullptr, nullptr, nullptr) == SQLITE_OK);
  }
  ChildProcess store;
  store.start(
      {resource_store_binary(), "--listen", "127.0.0.1:" + std::to_string(pick_free_port()), "--db",
       (dir.path() / "old.db").string(), "--log", (dir.path() / "old.ops.log").string()},
      dir.path() / "old.out");
  std::optional<int> code;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!(code = store.poll_exit()) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);

  REQUIRE(code.has_value());
  CHECK(*code == 1);
  std::ifstream out(dir.path() / "old.out");
  const std::string text((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
  INFO(text);
  CHECK(text.find("older resource-store") != std::string::npos);
}

TEST_CASE("store: concurrent writers never see token t accepted after t+1", "[examples]") {
  TempDir dir;
  Store store(dir.path(), "fenced");
  std::vector<std::thread> writers;
  for (int w = 0; w < 8; ++w) {
    writers.emplace_back([&, w] {
      HttpClient http(store.port);
      for (std::uint64_t t = static_cast<std::uint64_t>(w) + 1; t <= 400; t += 8) {
        http.request("PUT", "/objects/hot", "by " + std::to_string(w),
                     {{"Fencing-Token", std::to_string(t)}});
      }
    });
  }
  for (auto& w : writers) w.join();
  std::uint64_t last_applied = 0;
  int applied = 0;
  for (const json& entry : store.log()) {
    if (entry["outcome"] != "applied") continue;
    ++applied;
    CHECK(entry["token"].get<std::uint64_t>() > last_applied);
    last_applied = entry["token"].get<std::uint64_t>();
  }
  CHECK(applied > 0);
  CHECK(store.get("hot").json()["token"] == last_applied);
}

TEST_CASE("demo: Kleppmann's pause loses data without fencing and is refused with it",
          "[examples][redis]") {
  ServiceUnderTest s;
  Store fenced(s.dir.path(), "fenced");
  Store unfenced(s.dir.path(), "unfenced");
  ChildProcess demo;
  const auto out = s.dir.path() / "demo.out";
  demo.start({kleppmann_demo_binary(), "--fencelock", s.endpoint(), "--fenced-store", fenced.url(),
              "--unfenced-store", unfenced.url(), "--ttl-ms", "500"},
             out);
  std::optional<int> code;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!(code = demo.poll_exit()) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  REQUIRE(code == std::optional<int>(0));

  // The verdict from the stores' own logs, not from what the demo printed.
  auto writes = [](Store& store) {
    std::map<std::string, std::string> outcome_by_writer;
    for (const json& e : store.log()) {
      if (e["op"] == "write")
        outcome_by_writer[e["value"].get<std::string>()] = e["outcome"].get<std::string>();
    }
    return outcome_by_writer;
  };
  const auto unfenced_writes = writes(unfenced);
  CHECK(unfenced_writes.at("written by client 1") == "applied_unfenced");
  CHECK(unfenced_writes.at("written by client 2") == "applied_unfenced");
  const auto fenced_writes = writes(fenced);
  CHECK(fenced_writes.at("written by client 1") == "rejected_stale");
  CHECK(fenced_writes.at("written by client 2") == "applied");
}

// Review of #12: a value that is not UTF-8 aborted the store after its write had been committed
// (the log could not encode it), and a NUL cut a value short on read. Values are bytes.
TEST_CASE("store: values are bytes — not UTF-8 or with NULs — and never stop the store",
          "[examples]") {
  TempDir dir;
  Store store(dir.path(), "fenced");

  CHECK(store.put("raw", "\xff\xfe", 1).status == 200);
  const HttpAnswer raw = store.get("raw");
  CHECK(raw.status == 200);
  CHECK(raw.json()["value"] == "\xef\xbf\xbd\xef\xbf\xbd");  // answered as U+FFFD U+FFFD
  CHECK(store.put("nul", std::string("a\0b", 3), 1).status == 200);
  CHECK(store.get("nul").json()["value"] == std::string("a\0b", 3));
  CHECK(HttpClient(store.port).get("/healthz").status == 200);
  CHECK(HttpClient(store.port).get("/log").body.find("\"raw\"") != std::string::npos);
}
