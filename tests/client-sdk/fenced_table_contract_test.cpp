// The FencedTable contract, run unchanged over every database it supports: SQLite, and a real
// PostgreSQL 15 at READ COMMITTED and at SERIALIZABLE (each thread its own connection). The same
// test body passing for each is what shows there is one abstraction, not two copies of it.
#include <libpq-fe.h>
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <latch>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fencelock/fenced_table.h"
#include "postgres_server.h"
#include "temp_dir.h"

using namespace fencelock;
using fencelock::testing::TempDir;

namespace {

// Portable DDL: SQLite gives BIGINT integer affinity. alice: balance 100, token 32. `history`
// records, in commit order, every token a guarded update applied.
constexpr const char* kAccountsSchema =
    "CREATE TABLE accounts(id TEXT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0,"
    " history TEXT NOT NULL DEFAULT '', current_token BIGINT NOT NULL DEFAULT 0);"
    "INSERT INTO accounts(id, balance, current_token) VALUES('alice', 100, 32);";

// A FencedTable and the connection it borrows (none when it owns one): the table goes first.
struct Opened {
  std::shared_ptr<void> connection;
  Result<FencedTable> table;
};

struct SqliteDatabase {
  static constexpr const char* kName = "SQLite";
  TempDir dir;
  std::filesystem::path path = dir.path() / "contract.db";

  SqliteDatabase() { exec(std::string("PRAGMA journal_mode = WAL;") + kAccountsSchema); }

  static std::string param(int index) { return "?" + std::to_string(index); }

  Opened open(const std::string& table = "accounts", const std::string& key = "id",
              const std::string& token = "current_token") const {
    sqlite3* raw = nullptr;
    sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE, nullptr);
    std::shared_ptr<sqlite3> db(raw, sqlite3_close_v2);
    sqlite3_busy_timeout(raw, 30'000);
    Opened opened{db, FencedTable::open(raw, table, key, token)};
    return opened;
  }

  // A FencedTable over a connection of the test's own, on which exec_on() runs the caller's SQL.
  Opened open_borrowed() const { return open(); }

  static void exec_on(const Opened& opened, const std::string& sql) {
    char* message = nullptr;
    const int rc = sqlite3_exec(static_cast<sqlite3*>(opened.connection.get()), sql.c_str(),
                                nullptr, nullptr, &message);
    const std::string text = message != nullptr ? message : "";
    sqlite3_free(message);
    if (rc != SQLITE_OK) FAIL(sql << ": " << text);
  }

  void exec(const std::string& sql) const {
    sqlite3* raw = nullptr;
    sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
    const std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw, sqlite3_close_v2);
    char* message = nullptr;
    const int rc = sqlite3_exec(raw, sql.c_str(), nullptr, nullptr, &message);
    const std::string text = message != nullptr ? message : "";
    sqlite3_free(message);
    if (rc != SQLITE_OK) FAIL(sql << ": " << text);
  }

  // `column` of row `key`, as text; "no row" when there is none.
  std::string value(const std::string& column, const std::string& key) const {
    sqlite3* raw = nullptr;
    sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
    const std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw, sqlite3_close_v2);
    sqlite3_stmt* statement = nullptr;
    const std::string sql = "SELECT " + column + " FROM accounts WHERE id = ?1";
    if (sqlite3_prepare_v2(raw, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK)
      FAIL(sql << ": " << sqlite3_errmsg(raw));
    const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> owner(statement, sqlite3_finalize);
    sqlite3_bind_text(statement, 1, key.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(statement) != SQLITE_ROW) return "no row";
    const auto* text = sqlite3_column_text(statement, 0);
    return text == nullptr ? "NULL" : reinterpret_cast<const char*>(text);
  }
};

template <bool kSerializable>
struct PostgresDatabase {
  static constexpr const char* kName =
      kSerializable ? "PostgreSQL SERIALIZABLE" : "PostgreSQL READ COMMITTED";
  std::string url = kSerializable ? testing::shared_postgres_server().url_with_options(
                                        "-c default_transaction_isolation=serializable")
                                  : testing::shared_postgres_server().url();

  PostgresDatabase() {
    exec(std::string("DROP TABLE IF EXISTS accounts, wrong_type, no_token;") + kAccountsSchema);
  }

  static std::string param(int index) { return "$" + std::to_string(index); }

  Opened open(const std::string& table = "accounts", const std::string& key = "id",
              const std::string& token = "current_token") const {
    return Opened{nullptr, FencedTable::connect(url, table, key, token)};
  }

  Opened open_borrowed() const {
    PGconn* raw = PQconnectdb(url.c_str());
    const std::shared_ptr<PGconn> connection(raw, PQfinish);
    if (PQstatus(raw) != CONNECTION_OK) FAIL(PQerrorMessage(raw));
    return Opened{connection, FencedTable::open(raw, "accounts")};
  }

  static void exec_on(const Opened& opened, const std::string& sql) {
    const std::unique_ptr<PGresult, void (*)(PGresult*)> result(
        PQexec(static_cast<PGconn*>(opened.connection.get()), sql.c_str()), PQclear);
    const auto status = PQresultStatus(result.get());
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
      FAIL(sql << ": " << PQresultErrorMessage(result.get()));
  }

  void exec(const std::string& sql) const { testing::postgres_exec(url, sql); }

  std::string value(const std::string& column, const std::string& key) const {
    PGconn* connection = PQconnectdb(url.c_str());
    const std::unique_ptr<PGconn, void (*)(PGconn*)> owner(connection, PQfinish);
    const std::string sql = "SELECT " + column + "::text FROM accounts WHERE id = $1";
    const char* values[] = {key.c_str()};
    const std::unique_ptr<PGresult, void (*)(PGresult*)> result(
        PQexecParams(connection, sql.c_str(), 1, nullptr, values, nullptr, nullptr, 0), PQclear);
    if (PQresultStatus(result.get()) != PGRES_TUPLES_OK)
      FAIL(sql << ": " << PQresultErrorMessage(result.get()));
    if (PQntuples(result.get()) == 0) return "no row";
    return PQgetisnull(result.get(), 0, 0) ? "NULL" : PQgetvalue(result.get(), 0, 0);
  }
};

using PostgresReadCommitted = PostgresDatabase<false>;
using PostgresSerializable = PostgresDatabase<true>;

const std::vector<SqlValue> kNoParams;

FencedTable& require_table(Opened& opened) {
  if (!opened.table.ok()) FAIL(opened.table.error().message);
  return opened.table.value();
}

}  // namespace

TEMPLATE_TEST_CASE("contract: Kleppmann's paused client - token 33 is refused after token 34 wrote",
                   "[client][postgres]", SqliteDatabase, PostgresReadCommitted,
                   PostgresSerializable) {
  TestType db;
  INFO(TestType::kName);
  Opened client1 = db.open();
  Opened client2 = db.open();
  // Client 1 holds token 33 and pauses; its lease expires; client 2 is granted 34 and writes.
  auto written = require_table(client2).update("alice", "balance = " + TestType::param(1),
                                               {std::int64_t{200}}, 34);
  REQUIRE(written.ok());
  CHECK(written->outcome == WriteOutcome::kApplied);
  // Client 1 wakes up and writes with its stale token.
  auto stale = require_table(client1).update("alice", "balance = " + TestType::param(1),
                                             {std::int64_t{999}}, 33);
  REQUIRE(stale.ok());
  CHECK(stale->outcome == WriteOutcome::kStale);
  CHECK(stale->current_token == 34);
  CHECK(db.value("balance", "alice") == "200");
  CHECK(db.value("current_token", "alice") == "34");
}

TEMPLATE_TEST_CASE(
    "contract: with fenced reads, a paused holder's read-modify-write is refused and "
    "no update is lost",
    "[client][postgres]", SqliteDatabase, PostgresReadCommitted, PostgresSerializable) {
  TestType db;
  INFO(TestType::kName);
  Opened a = db.open();
  Opened b = db.open();
  const std::string set_balance = "balance = " + TestType::param(1);

  // A (33) fences its read and reads 100, then pauses; B (34) fences its read and reads 100.
  auto a_read = require_table(a).fence_read("alice", 33);
  REQUIRE(a_read.ok());
  CHECK(a_read->outcome == WriteOutcome::kApplied);
  const std::int64_t a_saw = std::stoll(db.value("balance", "alice"));
  auto b_read = require_table(b).fence_read("alice", 34);
  REQUIRE(b_read.ok());
  CHECK(b_read->outcome == WriteOutcome::kApplied);
  const std::int64_t b_saw = std::stoll(db.value("balance", "alice"));

  // A wakes and writes 100 + 10: refused, because B's read already carries 34.
  auto a_write =
      require_table(a).update("alice", set_balance, {a_saw + 10}, 33, TokenRule::kNewerOrSame);
  REQUIRE(a_write.ok());
  CHECK(a_write->outcome == WriteOutcome::kStale);
  CHECK(a_write->current_token == 34);
  // B writes 100 + 20 with its own token, which its fenced read put on the row.
  auto b_write =
      require_table(b).update("alice", set_balance, {b_saw + 20}, 34, TokenRule::kNewerOrSame);
  REQUIRE(b_write.ok());
  CHECK(b_write->outcome == WriteOutcome::kApplied);
  CHECK(db.value("balance", "alice") == "120");  // A was told its +10 failed: nothing is lost
}

TEMPLATE_TEST_CASE(
    "contract: a fenced read of a missing row raises its token so an older write "
    "then fails",
    "[client][postgres]", SqliteDatabase, PostgresReadCommitted, PostgresSerializable) {
  TestType db;
  INFO(TestType::kName);
  Opened newer = db.open();
  Opened older = db.open();
  auto fenced = require_table(newer).fence_read("bob", 34);
  REQUIRE(fenced.ok());
  CHECK(fenced->outcome == WriteOutcome::kApplied);
  CHECK(fenced->current_token == 34);
  CHECK(db.value("current_token", "bob") == "34");  // the placeholder row carries the token

  auto old_write =
      require_table(older).update("bob", "balance = " + TestType::param(1), {std::int64_t{5}}, 33);
  REQUIRE(old_write.ok());
  CHECK(old_write->outcome == WriteOutcome::kStale);
  CHECK(old_write->current_token == 34);
  auto old_read = require_table(older).fence_read("bob", 33);
  REQUIRE(old_read.ok());
  CHECK(old_read->outcome == WriteOutcome::kStale);
  CHECK(db.value("balance", "bob") == "0");

  SECTION("and a write to a row that does not exist is kNoSuchRow") {
    auto missing = require_table(newer).update("carol", "balance = " + TestType::param(1),
                                               {std::int64_t{1}}, 40);
    REQUIRE(missing.ok());
    CHECK(missing->outcome == WriteOutcome::kNoSuchRow);
    CHECK(db.value("current_token", "carol") == "no row");
  }
}

TEMPLATE_TEST_CASE("contract: tokens up to INT64_MAX are stored and INT64_MAX + 1 is refused",
                   "[client][postgres]", SqliteDatabase, PostgresReadCommitted,
                   PostgresSerializable) {
  TestType db;
  INFO(TestType::kName);
  Opened opened = db.open();
  FencedTable& table = require_table(opened);
  constexpr auto kMax = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

  auto near = table.update("alice", "balance = " + TestType::param(1), {std::int64_t{1}}, kMax - 1);
  REQUIRE(near.ok());
  CHECK(near->outcome == WriteOutcome::kApplied);
  auto at_max = table.fence_read("alice", kMax);
  REQUIRE(at_max.ok());
  CHECK(at_max->outcome == WriteOutcome::kApplied);
  CHECK(at_max->current_token == kMax);
  auto stored = table.current_token("alice");
  REQUIRE(stored.ok());
  CHECK(stored.value() == std::optional<std::uint64_t>(kMax));

  for (const std::uint64_t too_big : {kMax + 1, std::numeric_limits<std::uint64_t>::max()}) {
    auto refused =
        table.update("alice", "balance = " + TestType::param(1), {std::int64_t{2}}, too_big);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.error().code == ErrorCode::kInvalidArgument);
    CHECK_THAT(refused.error().message, Catch::Contains("INT64_MAX"));
    auto refused_read = table.fence_read("bob", too_big);
    REQUIRE_FALSE(refused_read.ok());
    CHECK(refused_read.error().code == ErrorCode::kInvalidArgument);
  }
  CHECK(db.value("balance", "alice") == "1");
  CHECK(db.value("current_token", "alice") == std::to_string(kMax));
  CHECK(db.value("current_token", "bob") == "no row");
}

TEMPLATE_TEST_CASE(
    "contract: a table without the token column, or a missing table, is a clear "
    "error at open",
    "[client][postgres]", SqliteDatabase, PostgresReadCommitted, PostgresSerializable) {
  TestType db;
  INFO(TestType::kName);
  db.exec("CREATE TABLE no_token(id TEXT PRIMARY KEY, balance BIGINT)");
  Opened no_token = db.open("no_token");
  REQUIRE_FALSE(no_token.table.ok());
  CHECK(no_token.table.error().code == ErrorCode::kInvalidArgument);
  CHECK_THAT(no_token.table.error().message, Catch::Contains("no column \"current_token\""));

  Opened no_table = db.open("no_such_table");
  REQUIRE_FALSE(no_table.table.ok());
  CHECK(no_table.table.error().code == ErrorCode::kInvalidArgument);
  CHECK_THAT(no_table.table.error().message, Catch::Contains("no table named \"no_such_table\""));

  Opened not_unique = db.open("accounts", "balance");
  REQUIRE_FALSE(not_unique.table.ok());
  CHECK(not_unique.table.error().code == ErrorCode::kInvalidArgument);
  CHECK_THAT(not_unique.table.error().message, Catch::Contains("UNIQUE"));

  Opened bad_name = db.open("accounts; DROP TABLE accounts");
  REQUIRE_FALSE(bad_name.table.ok());
  CHECK(bad_name.table.error().code == ErrorCode::kInvalidArgument);
  CHECK(db.value("balance", "alice") == "100");
}

TEMPLATE_TEST_CASE(
    "contract: 16 writers on their own connections with interleaved tokens - no "
    "token older than the newest accepted ever lands",
    "[client][postgres]", SqliteDatabase, PostgresReadCommitted, PostgresSerializable) {
  constexpr std::size_t kThreads = 16;
  constexpr std::size_t kWritesPerThread = 40;
  const std::vector<std::string> rows = {"alice", "bob"};
  TestType db;
  INFO(TestType::kName);
  db.exec("INSERT INTO accounts(id, balance, current_token) VALUES('bob', 0, 0)");
  // Every applied write appends its token to the row's history, in the same statement.
  const std::string assignments =
      "balance = balance + 1, history = history || " + TestType::param(1);

  struct Attempt {
    std::string row;
    std::uint64_t token;
    Result<WriteResult> result;
  };
  std::vector<std::vector<Attempt>> attempts(kThreads);
  std::vector<std::string> open_errors(kThreads);
  std::latch start(kThreads);
  std::vector<std::thread> writers;
  writers.reserve(kThreads);
  for (std::size_t t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      Opened opened = db.open();
      if (!opened.table.ok()) open_errors[t] = opened.table.error().message;
      start.arrive_and_wait();
      for (std::size_t k = 0; k < kWritesPerThread && opened.table.ok(); ++k) {
        // Thread t draws every kThreads-th token, so the threads' tokens interleave; the rows
        // alternate, so each row sees a mix of old and new tokens.
        const std::uint64_t token = 1000 + k * kThreads + t;
        const std::string& row = rows[(k + t) % rows.size()];
        attempts[t].push_back(
            {row, token,
             opened.table->update(row, assignments, {"," + std::to_string(token)}, token)});
      }
    });
  }
  for (auto& writer : writers) writer.join();
  for (const auto& error : open_errors) REQUIRE(error.empty());

  std::map<std::string, std::set<std::uint64_t>> applied;
  std::size_t stale = 0;
  std::size_t unavailable = 0;
  for (const auto& thread_attempts : attempts) {
    REQUIRE(thread_attempts.size() == kWritesPerThread);
    for (const auto& [row, token, result] : thread_attempts) {
      INFO("row " << row << " token " << token
                  << (result.ok() ? "" : ": " + result.error().message));
      if (!result.ok()) {
        // Only PostgreSQL's retries running out at SERIALIZABLE, which writes nothing.
        REQUIRE(result.error().code == ErrorCode::kUnavailable);
        ++unavailable;
        continue;
      }
      if (result->outcome == WriteOutcome::kApplied) {
        applied[row].insert(token);
      } else {
        REQUIRE(result->outcome == WriteOutcome::kStale);
        CHECK(result->current_token > token);  // distinct tokens: the winner is strictly newer
        ++stale;
      }
    }
  }

  for (const std::string& row : rows) {
    INFO("row " << row);
    // The history is in commit order: every accepted token exceeds the one before it.
    std::vector<std::uint64_t> history;
    std::stringstream text(db.value("history", row));
    std::string item;
    while (std::getline(text, item, ',')) {
      if (!item.empty()) history.push_back(std::stoull(item));
    }
    REQUIRE_FALSE(history.empty());
    for (std::size_t i = 1; i < history.size(); ++i) {
      INFO("history position " << i);
      REQUIRE(history[i - 1] < history[i]);
    }
    // Exactly the writes reported applied landed: none lost, none reported falsely.
    CHECK(std::set<std::uint64_t>(history.begin(), history.end()) == applied[row]);
    CHECK(history.size() == applied[row].size());
    CHECK(db.value("current_token", row) == std::to_string(history.back()));
  }
  CHECK(std::stoll(db.value("balance", "alice")) ==
        100 + static_cast<std::int64_t>(applied["alice"].size()));
  CHECK(stale > 0);  // the race happened: older tokens arrived after newer ones
  CHECK(unavailable * 4 < kThreads * kWritesPerThread);  // the retries do their job
}

TEMPLATE_TEST_CASE("contract: a write reported applied is durable after the connection closes",
                   "[client][postgres]", SqliteDatabase, PostgresReadCommitted) {
  TestType db;
  INFO(TestType::kName);
  // Issue #32 item 8: the read-modify-write ran inside a transaction that the caller's own read
  // had opened and nobody committed; it was reported applied and lost with the connection.
  std::optional<Opened> opened(db.open_borrowed());
  FencedTable& table = require_table(*opened);
  TestType::exec_on(*opened, "BEGIN");
  TestType::exec_on(*opened, "SELECT balance FROM accounts WHERE id = 'alice'");
  const auto fenced = table.fence_read("alice", 33);
  const auto written = table.update("alice", "balance = " + TestType::param(1), {std::int64_t{120}},
                                    33, TokenRule::kNewerOrSame);
  const bool fence_applied = fenced.ok() && fenced->outcome == WriteOutcome::kApplied;
  const bool write_applied = written.ok() && written->outcome == WriteOutcome::kApplied;
  opened.reset();  // closed without COMMIT

  CHECK(db.value("current_token", "alice") == (fence_applied || write_applied ? "33" : "32"));
  CHECK(db.value("balance", "alice") == (write_applied ? "120" : "100"));
}

TEMPLATE_TEST_CASE("contract: the helper refuses to run inside a transaction it does not own",
                   "[client][postgres]", SqliteDatabase, PostgresReadCommitted) {
  TestType db;
  INFO(TestType::kName);
  Opened opened = db.open_borrowed();
  FencedTable& table = require_table(opened);
  TestType::exec_on(opened, "BEGIN");
  TestType::exec_on(opened, "UPDATE accounts SET history = 'mine' WHERE id = 'alice'");

  SECTION("update") {
    const auto result = table.update("alice", "balance = 0", kNoParams, 33);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().code == ErrorCode::kInvalidArgument);
    CHECK_THAT(result.error().message, Catch::Contains("Commit::kByCaller"));
  }
  SECTION("fence_read") {
    const auto result = table.fence_read("alice", 33);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().code == ErrorCode::kInvalidArgument);
    CHECK_THAT(result.error().message, Catch::Contains("Commit::kByCaller"));
  }
  // The caller's transaction is left as it was: a plain read runs in it, and its COMMIT keeps
  // the caller's own work; the guarded call wrote nothing.
  const auto stored = table.current_token("alice");
  REQUIRE(stored.ok());
  CHECK(stored.value() == std::optional<std::uint64_t>(32));
  TestType::exec_on(opened, "COMMIT");
  CHECK(db.value("history", "alice") == "mine");
  CHECK(db.value("balance", "alice") == "100");
  CHECK(db.value("current_token", "alice") == "32");
}

TEMPLATE_TEST_CASE(
    "contract: with Commit::kByCaller a fenced read-modify-write lands at the caller's COMMIT",
    "[client][postgres]", SqliteDatabase, PostgresReadCommitted) {
  TestType db;
  INFO(TestType::kName);
  std::optional<Opened> opened(db.open_borrowed());
  FencedTable& table = require_table(*opened);
  TestType::exec_on(*opened, "BEGIN");
  const auto fenced = table.fence_read("alice", 33, TokenRule::kNewerOrSame, Commit::kByCaller);
  REQUIRE(fenced.ok());
  CHECK(fenced->outcome == WriteOutcome::kApplied);
  const auto written =
      table.update("alice", "balance = balance + " + TestType::param(1), {std::int64_t{20}}, 33,
                   TokenRule::kNewerOrSame, Commit::kByCaller);
  REQUIRE(written.ok());
  CHECK(written->outcome == WriteOutcome::kApplied);
  CHECK(db.value("balance", "alice") == "100");  // not before the COMMIT

  SECTION("committed: the write survives the connection") {
    TestType::exec_on(*opened, "COMMIT");
    opened.reset();
    CHECK(db.value("balance", "alice") == "120");
    CHECK(db.value("current_token", "alice") == "33");
  }
  SECTION("rolled back: neither the write nor its token remains") {
    TestType::exec_on(*opened, "ROLLBACK");
    opened.reset();
    CHECK(db.value("balance", "alice") == "100");
    CHECK(db.value("current_token", "alice") == "32");
  }
  SECTION("with no transaction open it commits on its own") {
    TestType::exec_on(*opened, "ROLLBACK");
    const auto alone = table.update("alice", "balance = 7", kNoParams, 34,
                                    TokenRule::kStrictlyNewer, Commit::kByCaller);
    REQUIRE(alone.ok());
    CHECK(alone->outcome == WriteOutcome::kApplied);
    opened.reset();
    CHECK(db.value("balance", "alice") == "7");
  }
}
