// FencedTable against real SQLite files: the fencing rule, Kleppmann's paused client, the
// read-modify-write interleaving that needs fenced reads, and writers racing on separate
// connections.
#include "fencelock/fenced_table.h"

#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <latch>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "temp_dir.h"

using namespace fencelock;
using fencelock::testing::TempDir;

namespace {

struct Closer {
  void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
using Connection = std::unique_ptr<sqlite3, Closer>;

Connection connect(const std::filesystem::path& path, int busy_timeout_ms = 10'000) {
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  Connection db(raw);
  if (rc != SQLITE_OK) FAIL("cannot open " << path << ": " << sqlite3_errstr(rc));
  sqlite3_busy_timeout(db.get(), busy_timeout_ms);
  return db;
}

void exec(sqlite3* db, const char* sql) {
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &message);
  const std::string text = message != nullptr ? message : "";
  sqlite3_free(message);
  if (rc != SQLITE_OK) FAIL(sql << ": " << text);
}

// The one-column, one-row answer to `sql` with ?1 bound to `key`, as text ("NULL" for NULL).
std::string query(sqlite3* db, const char* sql, const std::string& key = "") {
  sqlite3_stmt* raw = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &raw, nullptr) != SQLITE_OK)
    FAIL(sql << ": " << sqlite3_errmsg(db));
  const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> statement(raw, sqlite3_finalize);
  if (sqlite3_bind_parameter_count(raw) > 0)
    sqlite3_bind_text(raw, 1, key.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(raw) != SQLITE_ROW) return "no row";
  const auto* text = sqlite3_column_text(raw, 0);
  return text == nullptr ? "NULL" : reinterpret_cast<const char*>(text);
}

std::int64_t balance(sqlite3* db, const std::string& key) {
  return std::stoll(query(db, "SELECT balance FROM accounts WHERE id = ?1", key));
}

std::int64_t stored_token(sqlite3* db, const std::string& key) {
  return std::stoll(query(db, "SELECT current_token FROM accounts WHERE id = ?1", key));
}

FencedTable open_accounts(sqlite3* db) {
  auto table = FencedTable::open(db, "accounts");
  if (!table.ok()) FAIL(table.error().message);
  return std::move(table).value();
}

// accounts.db with alice: balance 100, token 32.
struct Accounts {
  TempDir dir;
  std::filesystem::path path = dir.path() / "accounts.db";
  Connection db = connect(path);

  Accounts() {
    exec(db.get(),
         "CREATE TABLE accounts(id TEXT PRIMARY KEY, balance INTEGER NOT NULL,"
         "                      current_token INTEGER NOT NULL DEFAULT 0);"
         "INSERT INTO accounts(id, balance, current_token) VALUES ('alice', 100, 32);");
  }
};

const std::vector<SqlValue> kNoParams;

}  // namespace

TEST_CASE("a write with a newer token is applied and the row records that token", "[client]") {
  Accounts accounts;
  auto table = open_accounts(accounts.db.get());

  const auto result = table.update("alice", "balance = balance + ?1", {std::int64_t{5}}, 33);

  REQUIRE(result.ok());
  CHECK(result->outcome == WriteOutcome::kApplied);
  CHECK(result->current_token == 33);
  CHECK(balance(accounts.db.get(), "alice") == 105);
  CHECK(stored_token(accounts.db.get(), "alice") == 33);
}

TEST_CASE(
    "a write with an older or the same token is refused as stale with the newer token and changes "
    "nothing",
    "[client]") {
  Accounts accounts;
  auto table = open_accounts(accounts.db.get());
  const std::uint64_t token = GENERATE(31u, 32u, 1u, 0u);

  const auto result = table.update("alice", "balance = 0", kNoParams, token);

  REQUIRE(result.ok());
  CHECK(result->outcome == WriteOutcome::kStale);
  CHECK(result->current_token == 32);
  CHECK(balance(accounts.db.get(), "alice") == 100);
  CHECK(stored_token(accounts.db.get(), "alice") == 32);
}

TEST_CASE("kNewerOrSame lets one lease write several times but never lets an older token in",
          "[client]") {
  Accounts accounts;
  auto table = open_accounts(accounts.db.get());

  for (int i = 0; i < 2; ++i) {
    const auto again =
        table.update("alice", "balance = balance + 1", kNoParams, 33, TokenRule::kNewerOrSame);
    REQUIRE(again.ok());
    CHECK(again->outcome == WriteOutcome::kApplied);
  }
  CHECK(balance(accounts.db.get(), "alice") == 102);

  const auto older = table.update("alice", "balance = 0", kNoParams, 32, TokenRule::kNewerOrSame);
  REQUIRE(older.ok());
  CHECK(older->outcome == WriteOutcome::kStale);
  CHECK(older->current_token == 33);

  const auto same_but_strict =
      table.update("alice", "balance = 0", kNoParams, 33, TokenRule::kStrictlyNewer);
  REQUIRE(same_but_strict.ok());
  CHECK(same_but_strict->outcome == WriteOutcome::kStale);
  CHECK(balance(accounts.db.get(), "alice") == 102);
}

TEST_CASE(
    "in a table that cannot hold a placeholder row, a write or fenced read of a missing key "
    "reports "
    "kNoSuchRow and fences nothing",
    "[client]") {
  Accounts accounts;  // balance is NOT NULL without a default
  auto table = open_accounts(accounts.db.get());

  const auto written = table.update("bob", "balance = 1", kNoParams, 99);
  const auto fenced = table.fence_read("bob", 99);

  REQUIRE(written.ok());
  CHECK(written->outcome == WriteOutcome::kNoSuchRow);
  CHECK(written->current_token == 0);
  REQUIRE(fenced.ok());
  CHECK(fenced->outcome == WriteOutcome::kNoSuchRow);
  CHECK(query(accounts.db.get(), "SELECT count(*) FROM accounts") == "1");
  const auto token = table.current_token("bob");
  REQUIRE(token.ok());
  CHECK_FALSE(token->has_value());

  // Nothing was fenced: once the application creates the row, an older token still writes.
  exec(accounts.db.get(), "INSERT INTO accounts(id, balance) VALUES ('bob', 0)");
  const auto older = table.update("bob", "balance = 1", kNoParams, 98);
  REQUIRE(older.ok());
  CHECK(older->outcome == WriteOutcome::kApplied);
}

namespace {

// documents.db, empty. Every column but the key and the token is nullable or has a default, so a
// fenced read of a missing key can leave a placeholder row; a real document always has a body.
struct Documents {
  TempDir dir;
  std::filesystem::path path = dir.path() / "documents.db";
  Connection db = connect(path);

  Documents() {
    exec(db.get(),
         "CREATE TABLE documents(id TEXT PRIMARY KEY, body TEXT, revision INTEGER NOT NULL DEFAULT "
         "1,"
         "                       current_token INTEGER NOT NULL DEFAULT 0);");
  }
};

FencedTable open_documents(sqlite3* db) {
  auto table = FencedTable::open(db, "documents");
  if (!table.ok()) FAIL(table.error().message);
  return std::move(table).value();
}

}  // namespace

// Kleppmann's pause around a missing row: B (34) reads "no such document"; A (33), paused before
// it could create the document, wakes and writes it. Without a record of B's read, A's write lands
// and B, which read "absent", overwrites it unseen.
TEST_CASE(
    "a fenced read of a missing row leaves a placeholder holding its token, which refuses older "
    "tokens",
    "[client]") {
  Documents documents;
  sqlite3* db = documents.db.get();
  auto table = open_documents(db);

  const auto fenced = table.fence_read("report", 34);

  REQUIRE(fenced.ok());
  CHECK(fenced->outcome == WriteOutcome::kApplied);
  CHECK(fenced->current_token == 34);
  CHECK(query(db, "SELECT count(*) FROM documents") == "1");
  CHECK(query(db, "SELECT current_token FROM documents WHERE id = ?1", "report") == "34");
  CHECK(query(db, "SELECT body FROM documents WHERE id = ?1", "report") ==
        "NULL");  // how to tell it apart
  CHECK(query(db, "SELECT revision FROM documents WHERE id = ?1", "report") ==
        "1");  // the column's default
  const auto token = table.current_token("report");
  REQUIRE(token.ok());
  CHECK(token.value() == std::optional<std::uint64_t>(34));

  SECTION("an older token is refused under either rule") {
    const auto rule = GENERATE(TokenRule::kStrictlyNewer, TokenRule::kNewerOrSame);
    const auto older = table.update("report", "body = ?1", {std::string("by 33")}, 33, rule);
    REQUIRE(older.ok());
    CHECK(older->outcome == WriteOutcome::kStale);
    CHECK(older->current_token == 34);
    const auto older_read = table.fence_read("report", 33, rule);
    REQUIRE(older_read.ok());
    CHECK(older_read->outcome == WriteOutcome::kStale);
    CHECK(query(db, "SELECT body FROM documents WHERE id = ?1", "report") == "NULL");
  }
  SECTION("the reader writes with its own token under kNewerOrSame") {
    const auto again = table.fence_read("report", 34);  // reading twice changes nothing
    REQUIRE(again.ok());
    CHECK(again->outcome == WriteOutcome::kApplied);
    const auto own =
        table.update("report", "body = ?1", {std::string("by 34")}, 34, TokenRule::kNewerOrSame);
    REQUIRE(own.ok());
    CHECK(own->outcome == WriteOutcome::kApplied);
    CHECK(query(db, "SELECT body FROM documents WHERE id = ?1", "report") == "by 34");
    CHECK(query(db, "SELECT current_token FROM documents WHERE id = ?1", "report") == "34");
  }
  CHECK(query(db, "SELECT count(*) FROM documents") == "1");
}

TEST_CASE(
    "after its fenced read of a row, the reader writes with its token under kNewerOrSame — an "
    "older "
    "token "
    "is refused",
    "[client]") {
  Accounts accounts;
  auto table = open_accounts(accounts.db.get());

  const auto fenced = table.fence_read("alice", 33);
  REQUIRE(fenced.ok());
  REQUIRE(fenced->outcome == WriteOutcome::kApplied);
  const auto older = table.update("alice", "balance = 0", kNoParams, 32, TokenRule::kNewerOrSame);
  const auto own =
      table.update("alice", "balance = balance + 10", kNoParams, 33, TokenRule::kNewerOrSame);

  REQUIRE(older.ok());
  CHECK(older->outcome == WriteOutcome::kStale);
  CHECK(older->current_token == 33);
  REQUIRE(own.ok());
  CHECK(own->outcome == WriteOutcome::kApplied);
  CHECK(balance(accounts.db.get(), "alice") == 110);
  CHECK(stored_token(accounts.db.get(), "alice") == 33);
}

TEST_CASE("a placeholder inserted inside the caller's transaction shares its fate", "[client]") {
  Documents documents;
  sqlite3* db = documents.db.get();
  auto table = open_documents(db);
  exec(db, "BEGIN IMMEDIATE");

  const auto fenced = table.fence_read("report", 34, TokenRule::kNewerOrSame, Commit::kByCaller);
  REQUIRE(fenced.ok());
  CHECK(fenced->outcome == WriteOutcome::kApplied);
  CHECK(sqlite3_get_autocommit(db) == 0);

  SECTION("rolled back: no placeholder remains") {
    exec(db, "ROLLBACK");
    CHECK(query(db, "SELECT count(*) FROM documents") == "0");
  }
  SECTION("committed: the placeholder remains") {
    exec(db, "COMMIT");
    CHECK(query(db, "SELECT current_token FROM documents WHERE id = ?1", "report") == "34");
  }
}

TEST_CASE("whether a table can hold a placeholder follows from its other columns", "[client]") {
  TempDir dir;
  const auto db = connect(dir.path() / "shapes.db");
  struct Shape {
    const char* create;
    bool holds_placeholder;
  };
  const Shape shape = GENERATE(
      // A rowid table's INTEGER PRIMARY KEY is assigned by SQLite; the key is UNIQUE on its own.
      Shape{
          "CREATE TABLE t(n INTEGER PRIMARY KEY, id TEXT UNIQUE, note TEXT, current_token INTEGER)",
          true},
      Shape{"CREATE TABLE t(id TEXT PRIMARY KEY, n INTEGER NOT NULL DEFAULT 7, current_token "
            "INTEGER)",
            true},
      // A WITHOUT ROWID table's primary key must be given, and so must a NOT NULL column without a
      // default.
      Shape{"CREATE TABLE t(n INTEGER PRIMARY KEY, id TEXT UNIQUE, current_token INTEGER) WITHOUT "
            "ROWID",
            false},
      Shape{"CREATE TABLE t(id TEXT PRIMARY KEY, n INTEGER NOT NULL, current_token INTEGER)",
            false});
  INFO(shape.create);
  exec(db.get(), shape.create);
  auto table = FencedTable::open(db.get(), "t");
  REQUIRE(table.ok());

  const auto fenced = table->fence_read("k", 5);

  REQUIRE(fenced.ok());
  CHECK(fenced->outcome ==
        (shape.holds_placeholder ? WriteOutcome::kApplied : WriteOutcome::kNoSuchRow));
  CHECK(query(db.get(), "SELECT count(*) FROM t") == (shape.holds_placeholder ? "1" : "0"));
}

TEST_CASE(
    "a placeholder refused by a constraint the schema check cannot see is kInvalidArgument and "
    "writes "
    "nothing",
    "[client]") {
  TempDir dir;
  const auto db = connect(dir.path() / "checked.db");
  exec(db.get(),
       "CREATE TABLE checked(id TEXT PRIMARY KEY, body TEXT CHECK (body IS NOT NULL),"
       "                     current_token INTEGER NOT NULL DEFAULT 0);");
  auto table = FencedTable::open(db.get(), "checked");
  REQUIRE(table.ok());

  const auto fenced = table->fence_read("report", 34);

  REQUIRE_FALSE(fenced.ok());
  CHECK(fenced.error().code == ErrorCode::kInvalidArgument);
  CHECK(query(db.get(), "SELECT count(*) FROM checked") == "0");
  CHECK(sqlite3_get_autocommit(db.get()) == 1);
}

TEST_CASE(
    "fenced reads of one missing row racing on separate connections leave one placeholder at the "
    "newest "
    "token",
    "[client]") {
  constexpr std::size_t kThreads = 4;
  Documents documents;
  exec(documents.db.get(), "PRAGMA journal_mode = WAL;");
  std::vector<std::optional<Result<WriteResult>>> results(kThreads);
  std::latch start(kThreads);
  std::vector<std::thread> readers;
  for (std::size_t t = 0; t < kThreads; ++t) {
    readers.emplace_back([&, t] {
      sqlite3* raw = nullptr;
      sqlite3_open_v2(documents.path.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
      const Connection db(raw);
      sqlite3_busy_timeout(db.get(), 30'000);
      auto table = FencedTable::open(db.get(), "documents");
      start.arrive_and_wait();
      if (table.ok()) results[t] = table->fence_read("report", 100 + t);
    });
  }
  for (auto& reader : readers) reader.join();

  for (std::size_t t = 0; t < kThreads; ++t) {
    INFO("token " << 100 + t);
    REQUIRE(results[t].has_value());
    const auto& result = *results[t];
    REQUIRE(result.ok());
    if (result->outcome != WriteOutcome::kApplied) {
      CHECK(result->outcome == WriteOutcome::kStale);
      CHECK(result->current_token > 100 + t);
    }
  }
  CHECK(query(documents.db.get(), "SELECT count(*) FROM documents") == "1");
  CHECK(query(documents.db.get(), "SELECT current_token FROM documents") ==
        std::to_string(100 + kThreads - 1));
}

TEST_CASE("parameters of every SqlValue type bind to ?1 ... ?N in order", "[client]") {
  TempDir dir;
  const auto db = connect(dir.path() / "cells.db");
  // Columns without a declared type keep exactly the storage class they are given.
  exec(db.get(),
       "CREATE TABLE cells(id TEXT PRIMARY KEY, n, i, r, t, b, e, current_token INTEGER NOT NULL "
       "DEFAULT 0);"
       "INSERT INTO cells(id, n) VALUES ('c', 'not yet null');");
  auto table = FencedTable::open(db.get(), "cells");
  REQUIRE(table.ok());

  const std::vector<SqlValue> params{nullptr,
                                     std::int64_t{-9'007'199'254'740'993},
                                     2.5,
                                     std::string("grüße, 'quoted'"),
                                     std::vector<std::uint8_t>{0x00, 0xff, 0x10},
                                     std::vector<std::uint8_t>{}};
  const auto result =
      table->update("c", "n = ?1, i = ?2, r = ?3, t = ?4, b = ?5, e = ?6", params, 1);

  REQUIRE(result.ok());
  REQUIRE(result->outcome == WriteOutcome::kApplied);
  CHECK(
      query(db.get(),
            "SELECT typeof(n) || ' ' || typeof(i) || ' ' || typeof(r) || ' ' || typeof(t) || ' ' ||"
            " typeof(b) || ' ' || typeof(e) FROM cells") == "null integer real text blob blob");
  CHECK(query(db.get(), "SELECT i FROM cells") == "-9007199254740993");
  CHECK(query(db.get(), "SELECT r FROM cells") == "2.5");
  CHECK(query(db.get(), "SELECT t FROM cells") == "grüße, 'quoted'");
  CHECK(query(db.get(), "SELECT hex(b) FROM cells") == "00FF10");
  CHECK(query(db.get(), "SELECT length(e) FROM cells") == "0");
}

TEST_CASE("a parameter count that differs from the assignments' placeholders is refused",
          "[client]") {
  Accounts accounts;
  auto table = open_accounts(accounts.db.get());
  const std::vector<SqlValue> params =
      GENERATE(std::vector<SqlValue>{}, std::vector<SqlValue>{std::int64_t{1}, std::int64_t{2}});

  const auto result = table.update("alice", "balance = ?1", params, 33);

  REQUIRE_FALSE(result.ok());
  CHECK(result.error().code == ErrorCode::kInvalidArgument);
  CHECK(balance(accounts.db.get(), "alice") == 100);
  CHECK(stored_token(accounts.db.get(), "alice") == 32);
}

TEST_CASE("assignments that are not one SET list, or could hide the fencing condition, are refused",
          "[client]") {
  Accounts accounts;
  auto table = open_accounts(accounts.db.get());
  const std::string assignments =
      GENERATE(as<std::string>{},
               "",                                   // nothing to set
               "balance = 0; DELETE FROM accounts",  // a second statement
               "balance = 0 WHERE 1 --",             // a WHERE of its own
               "balance = 0 WHERE 1 /* x",           // a comment eating ours
               "balance = 0 /* a note",              // the same, by mistake
               "balance = '",                        // a string eating ours
               "balance = :amount",                  // a named parameter
               "balance = :fencelock_token",         // one of ours
               "no_such_column = 1");                // does not compile

  const auto result = table.update("alice", assignments, kNoParams, 33);

  INFO(assignments);
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().code == ErrorCode::kInvalidArgument);
  CHECK(query(accounts.db.get(), "SELECT count(*) FROM accounts") == "1");
  CHECK(balance(accounts.db.get(), "alice") == 100);
  CHECK(stored_token(accounts.db.get(), "alice") == 32);
}

TEST_CASE(
    "a token assignment or a trailing comment in the assignments cannot override the guarded token",
    "[client]") {
  Accounts accounts;
  auto table = open_accounts(accounts.db.get());

  // SQLite keeps the rightmost assignment of a column, and ours comes last, on a line of its own.
  const auto result = table.update("alice", "current_token = 1000, balance = ?1 -- a deposit",
                                   {std::int64_t{1}}, 33);

  REQUIRE(result.ok());
  CHECK(result->outcome == WriteOutcome::kApplied);
  CHECK(balance(accounts.db.get(), "alice") == 1);
  CHECK(stored_token(accounts.db.get(), "alice") == 33);
}

TEST_CASE("Kleppmann's paused client: its write with token 33 after token 34 wrote is refused",
          "[client]") {
  Accounts accounts;
  const auto client1_db = connect(accounts.path);
  const auto client2_db = connect(accounts.path);
  auto client1 = open_accounts(client1_db.get());
  auto client2 = open_accounts(client2_db.get());

  // Client 1 is granted 33 and pauses past its lease; client 2 is granted 34 and writes.
  const auto by_client2 = client2.update("alice", "balance = ?1", {std::int64_t{250}}, 34);
  REQUIRE(by_client2.ok());
  REQUIRE(by_client2->outcome == WriteOutcome::kApplied);

  // Client 1 wakes up, still believing it holds the lock.
  const auto by_client1 = client1.update("alice", "balance = ?1", {std::int64_t{999}}, 33);

  REQUIRE(by_client1.ok());
  CHECK(by_client1->outcome == WriteOutcome::kStale);
  CHECK(by_client1->current_token == 34);
  CHECK(balance(accounts.db.get(), "alice") == 250);
  CHECK(stored_token(accounts.db.get(), "alice") == 34);
}

// The interleaving documented in fenced_table.h. Row alice: balance 100, token 32. A holds 33,
// pauses between its read and its write; B is granted 34 meanwhile. Each adds to what it read.
TEST_CASE("without fenced reads, a paused holder's read-modify-write is applied and then lost",
          "[client]") {
  Accounts accounts;
  const auto a_db = connect(accounts.path);
  const auto b_db = connect(accounts.path);
  auto a = open_accounts(a_db.get());
  auto b = open_accounts(b_db.get());

  const std::int64_t a_read = balance(a_db.get(), "alice");  // 1. A reads 100, then pauses
  const std::int64_t b_read = balance(b_db.get(), "alice");  // 3. B (34) reads 100
  const auto a_write = a.update("alice", "balance = ?1", {a_read + 10}, 33);  // 4. A wakes
  const auto b_write = b.update("alice", "balance = ?1", {b_read + 20}, 34);  // 5.

  REQUIRE(a_write.ok());
  REQUIRE(b_write.ok());
  CHECK(a_write->outcome == WriteOutcome::kApplied);  // A is told its +10 happened...
  CHECK(b_write->outcome == WriteOutcome::kApplied);
  CHECK(balance(accounts.db.get(), "alice") == 120);  // ...but only B's +20 is left
}

TEST_CASE("with fenced reads, the paused holder's write is refused and no update is lost",
          "[client]") {
  Accounts accounts;
  const auto a_db = connect(accounts.path);
  const auto b_db = connect(accounts.path);
  auto a = open_accounts(a_db.get());
  auto b = open_accounts(b_db.get());

  const auto a_fence = a.fence_read("alice", 33);  // 1. row 32 -> 33
  REQUIRE(a_fence.ok());
  REQUIRE(a_fence->outcome == WriteOutcome::kApplied);
  const std::int64_t a_read = balance(a_db.get(), "alice");  //    A reads 100, then pauses
  const auto b_fence = b.fence_read("alice", 34);            // 3. row 33 -> 34
  REQUIRE(b_fence.ok());
  REQUIRE(b_fence->outcome == WriteOutcome::kApplied);
  const std::int64_t b_read = balance(b_db.get(), "alice");  //    B reads 100
  const auto a_write =
      a.update("alice", "balance = ?1", {a_read + 10}, 33, TokenRule::kNewerOrSame);  // 4.
  const auto b_write =
      b.update("alice", "balance = ?1", {b_read + 20}, 34, TokenRule::kNewerOrSame);  // 5.

  REQUIRE(a_write.ok());
  REQUIRE(b_write.ok());
  CHECK(a_write->outcome ==
        WriteOutcome::kStale);  // A learns it lost the lock; nothing of it landed
  CHECK(a_write->current_token == 34);
  CHECK(b_write->outcome == WriteOutcome::kApplied);
  CHECK(balance(accounts.db.get(), "alice") == 120);  // exactly the one increment that was reported
  CHECK(stored_token(accounts.db.get(), "alice") == 34);
}

TEST_CASE("a fenced read refuses a token older than the row's and moves nothing", "[client]") {
  Accounts accounts;
  auto table = open_accounts(accounts.db.get());

  SECTION("an older token is stale under either rule") {
    const auto rule = GENERATE(TokenRule::kStrictlyNewer, TokenRule::kNewerOrSame);
    const auto result = table.fence_read("alice", 31, rule);
    REQUIRE(result.ok());
    CHECK(result->outcome == WriteOutcome::kStale);
    CHECK(result->current_token == 32);
  }
  SECTION("the row's own token is stale only under kStrictlyNewer") {
    const auto strict = table.fence_read("alice", 32, TokenRule::kStrictlyNewer);
    const auto same = table.fence_read("alice", 32);
    REQUIRE(strict.ok());
    REQUIRE(same.ok());
    CHECK(strict->outcome == WriteOutcome::kStale);
    CHECK(same->outcome == WriteOutcome::kApplied);
  }
  CHECK(stored_token(accounts.db.get(), "alice") == 32);
  CHECK(balance(accounts.db.get(), "alice") == 100);
}

TEST_CASE("current_token reports the row's token, or nothing when there is no row", "[client]") {
  Accounts accounts;
  auto table = open_accounts(accounts.db.get());

  const auto alice = table.current_token("alice");
  const auto bob = table.current_token("bob");

  REQUIRE(alice.ok());
  CHECK(alice.value() == std::optional<std::uint64_t>(32));
  REQUIRE(bob.ok());
  CHECK_FALSE(bob->has_value());
}

TEST_CASE("writers racing on separate connections: the row never accepts a token after a newer one",
          "[client]") {
  constexpr std::size_t kThreads = 4;
  constexpr std::size_t kWritesPerThread = 150;
  Accounts accounts;
  exec(accounts.db.get(),
       "PRAGMA journal_mode = WAL;"
       "CREATE TABLE history(seq INTEGER PRIMARY KEY AUTOINCREMENT, token INTEGER NOT NULL);"
       "CREATE TRIGGER record_token AFTER UPDATE ON accounts"
       " BEGIN INSERT INTO history(token) VALUES (NEW.current_token); END;");

  struct Attempt {
    std::uint64_t token;
    Result<WriteResult> result;
  };
  std::vector<std::vector<Attempt>> attempts(kThreads);
  std::latch start(kThreads);
  std::vector<std::thread> writers;
  writers.reserve(kThreads);
  for (std::size_t t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      sqlite3* raw = nullptr;
      sqlite3_open_v2(accounts.path.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
      const Connection db(raw);
      sqlite3_busy_timeout(db.get(), 30'000);
      sqlite3_exec(db.get(), "PRAGMA synchronous = NORMAL", nullptr, nullptr, nullptr);
      auto table = FencedTable::open(db.get(), "accounts");
      start.arrive_and_wait();
      for (std::size_t k = 0; k < kWritesPerThread && table.ok(); ++k) {
        // Thread t draws every kThreads-th token, so the threads' tokens interleave.
        const std::uint64_t token = 1000 + k * kThreads + t;
        attempts[t].push_back(
            {token, table->update("alice", "balance = balance + 1", kNoParams, token)});
      }
    });
  }
  for (auto& writer : writers) writer.join();

  std::set<std::uint64_t> applied;
  int stale = 0;
  for (const auto& thread_attempts : attempts) {
    REQUIRE(thread_attempts.size() == kWritesPerThread);
    for (const auto& [token, result] : thread_attempts) {
      INFO("token " << token << (result.ok() ? "" : ": " + result.error().message));
      REQUIRE(result.ok());
      if (result->outcome == WriteOutcome::kApplied) {
        applied.insert(token);
      } else {
        REQUIRE(result->outcome == WriteOutcome::kStale);
        CHECK(result->current_token > token);  // distinct tokens: the winner is strictly newer
        ++stale;
      }
    }
  }

  // The history is in commit order; every accepted token must exceed the one before it.
  std::vector<std::uint64_t> history;
  {
    sqlite3_stmt* raw = nullptr;
    REQUIRE(sqlite3_prepare_v2(accounts.db.get(), "SELECT token FROM history ORDER BY seq", -1,
                               &raw, nullptr) == SQLITE_OK);
    const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> statement(raw, sqlite3_finalize);
    while (sqlite3_step(raw) == SQLITE_ROW)
      history.push_back(static_cast<std::uint64_t>(sqlite3_column_int64(raw, 0)));
  }
  for (std::size_t i = 1; i < history.size(); ++i) {
    INFO("history position " << i);
    REQUIRE(history[i - 1] < history[i]);
  }
  CHECK(std::set<std::uint64_t>(history.begin(), history.end()) == applied);  // no false "applied"
  CHECK(history.size() == applied.size());
  CHECK(balance(accounts.db.get(), "alice") == 100 + static_cast<std::int64_t>(applied.size()));
  CHECK(stale > 0);  // the race happened: older tokens arrived after newer ones
  CHECK(stored_token(accounts.db.get(), "alice") == static_cast<std::int64_t>(*applied.rbegin()));
}

TEST_CASE("names that are not plain identifiers are refused at open and change nothing",
          "[client]") {
  Accounts accounts;
  const auto [table_name, key, token] = GENERATE(table<std::string, std::string, std::string>({
      {"accounts; DROP TABLE accounts", "id", "current_token"},
      {"accounts", "id = id OR 1 = 1 --", "current_token"},
      {"accounts", "id", "current_token\" = 0 --"},
      {"", "id", "current_token"},
      {"1accounts", "id", "current_token"},
      {"acc-ounts", "id", "current_token"},
      {"accounts ", "id", "current_token"},
      {"main.accounts", "id", "current_token"},
      {"accounts", "id", "current_tökèn"},
  }));

  const auto result = FencedTable::open(accounts.db.get(), table_name, key, token);

  INFO(table_name << " / " << key << " / " << token);
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().code == ErrorCode::kInvalidArgument);
  CHECK(balance(accounts.db.get(), "alice") == 100);
  CHECK(stored_token(accounts.db.get(), "alice") == 32);
}

TEST_CASE("open refuses a missing table or column and a key that does not pick one row",
          "[client]") {
  Accounts accounts;
  exec(accounts.db.get(),
       "CREATE VIEW rich AS SELECT * FROM accounts WHERE balance > 1000;"
       "CREATE TABLE pairs(a TEXT, b TEXT, current_token INTEGER NOT NULL DEFAULT 0, PRIMARY KEY "
       "(a, b));"
       "CREATE TABLE loose(id TEXT, current_token INTEGER NOT NULL DEFAULT 0);"
       "CREATE TABLE partly(id TEXT, current_token INTEGER NOT NULL DEFAULT 0);"
       "CREATE UNIQUE INDEX partly_id ON partly(id) WHERE id <> '';");
  const auto [table_name, key, token] = GENERATE(table<std::string, std::string, std::string>({
      {"no_such_table", "id", "current_token"},
      {"accounts", "no_such_key", "current_token"},
      {"accounts", "id", "no_such_token"},
      {"accounts", "id", "ID"},
      {"rich", "id", "current_token"},
      {"pairs", "a", "current_token"},
      {"loose", "id", "current_token"},
      {"partly", "id", "current_token"},
  }));

  const auto result = FencedTable::open(accounts.db.get(), table_name, key, token);

  INFO(table_name << " / " << key << " / " << token);
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().code == ErrorCode::kInvalidArgument);
}

TEST_CASE("open without a connection is refused", "[client]") {
  const auto result = FencedTable::open(static_cast<sqlite3*>(nullptr), "accounts");
  REQUIRE_FALSE(result.ok());
  CHECK(result.error().code == ErrorCode::kInvalidArgument);
}

TEST_CASE("open accepts an INTEGER PRIMARY KEY or a single-column UNIQUE key, in any letter case",
          "[client]") {
  Accounts accounts;
  exec(accounts.db.get(),
       "CREATE TABLE by_number(n INTEGER PRIMARY KEY, v TEXT, tok INTEGER NOT NULL DEFAULT 0);"
       "INSERT INTO by_number(n, v) VALUES (7, 'old');"
       "CREATE TABLE by_name(name TEXT NOT NULL UNIQUE, v TEXT, tok INTEGER NOT NULL DEFAULT 0);"
       "INSERT INTO by_name(name, v) VALUES ('seven', 'old');");

  SECTION("an INTEGER PRIMARY KEY is matched by the decimal text of the key") {
    auto table = FencedTable::open(accounts.db.get(), "BY_NUMBER", "N", "Tok");
    REQUIRE(table.ok());
    const auto result = table->update("7", "v = ?1", {std::string("new")}, 1);
    REQUIRE(result.ok());
    CHECK(result->outcome == WriteOutcome::kApplied);
    CHECK(query(accounts.db.get(), "SELECT v FROM by_number") == "new");
  }
  SECTION("a single-column UNIQUE column") {
    auto table = FencedTable::open(accounts.db.get(), "by_name", "name", "tok");
    REQUIRE(table.ok());
    const auto result = table->update("seven", "v = ?1", {std::string("new")}, 1);
    REQUIRE(result.ok());
    CHECK(result->outcome == WriteOutcome::kApplied);
    CHECK(query(accounts.db.get(), "SELECT v FROM by_name") == "new");
  }
}

TEST_CASE("tokens above INT64_MAX are refused with kInvalidArgument and change nothing",
          "[client]") {
  Accounts accounts;
  auto table = open_accounts(accounts.db.get());
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  const std::uint64_t token = GENERATE(kMax + 1, std::numeric_limits<std::uint64_t>::max());

  const auto written = table.update("alice", "balance = 0", kNoParams, token);
  const auto fenced = table.fence_read("alice", token);

  REQUIRE_FALSE(written.ok());
  CHECK(written.error().code == ErrorCode::kInvalidArgument);
  REQUIRE_FALSE(fenced.ok());
  CHECK(fenced.error().code == ErrorCode::kInvalidArgument);
  CHECK(balance(accounts.db.get(), "alice") == 100);
  CHECK(stored_token(accounts.db.get(), "alice") == 32);

  const auto largest = table.update("alice", "balance = 0", kNoParams, kMax);
  REQUIRE(largest.ok());
  CHECK(largest->outcome == WriteOutcome::kApplied);
  CHECK(largest->current_token == kMax);
}

TEST_CASE("a database locked by another writer is kUnavailable, and the write can be retried",
          "[client]") {
  Accounts accounts;
  const auto impatient = connect(accounts.path, 0);
  auto table = open_accounts(impatient.get());
  const auto other = connect(accounts.path);
  exec(other.get(), "BEGIN IMMEDIATE");

  SECTION("update") {
    const auto result = table.update("alice", "balance = 0", kNoParams, 33);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().code == ErrorCode::kUnavailable);
  }
  SECTION("fence_read") {
    const auto result = table.fence_read("alice", 33);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().code == ErrorCode::kUnavailable);
  }
  CHECK(sqlite3_get_autocommit(impatient.get()) == 1);  // no transaction left open

  exec(other.get(), "ROLLBACK");
  const auto retried = table.update("alice", "balance = 0", kNoParams, 33);
  REQUIRE(retried.ok());
  CHECK(retried->outcome == WriteOutcome::kApplied);
}

TEST_CASE("a constraint the assignments violate is kInvalidArgument and the token is not raised",
          "[client]") {
  Accounts accounts;
  auto table = open_accounts(accounts.db.get());

  const auto result = table.update("alice", "balance = ?1", {nullptr}, 33);

  REQUIRE_FALSE(result.ok());
  CHECK(result.error().code == ErrorCode::kInvalidArgument);
  CHECK(result.error().message.find("NOT NULL") != std::string::npos);
  CHECK(stored_token(accounts.db.get(), "alice") == 32);
  CHECK(sqlite3_get_autocommit(accounts.db.get()) == 1);
}

TEST_CASE(
    "with Commit::kByCaller a guarded write joins the caller's transaction and shares its fate",
    "[client]") {
  Accounts accounts;
  auto table = open_accounts(accounts.db.get());
  exec(accounts.db.get(), "BEGIN IMMEDIATE");

  const auto result = table.update("alice", "balance = 7", kNoParams, 33, TokenRule::kStrictlyNewer,
                                   Commit::kByCaller);
  REQUIRE(result.ok());
  CHECK(result->outcome == WriteOutcome::kApplied);
  CHECK(sqlite3_get_autocommit(accounts.db.get()) == 0);  // still the caller's transaction

  SECTION("rolled back: neither the write nor its token remains") {
    exec(accounts.db.get(), "ROLLBACK");
    CHECK(balance(accounts.db.get(), "alice") == 100);
    CHECK(stored_token(accounts.db.get(), "alice") == 32);
  }
  SECTION("committed: both remain") {
    exec(accounts.db.get(), "COMMIT");
    CHECK(balance(accounts.db.get(), "alice") == 7);
    CHECK(stored_token(accounts.db.get(), "alice") == 33);
  }
}
