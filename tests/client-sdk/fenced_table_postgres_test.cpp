// FencedTable on a real PostgreSQL 15: what only PostgreSQL has — bigint, the caller's own
// transactions at SERIALIZABLE, libpq's connection errors and parameter types. The contract both
// databases share is in fenced_table_contract_test.cpp.
#include <libpq-fe.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fencelock/fenced_table.h"
#include "postgres_server.h"
#include "redis_server.h"

using namespace fencelock;
using fencelock::testing::postgres_exec;
using fencelock::testing::shared_postgres_server;

namespace {

struct PgCloser {
  void operator()(PGconn* connection) const noexcept { PQfinish(connection); }
};
using PgConnection = std::unique_ptr<PGconn, PgCloser>;

PgConnection connect(const std::string& url) {
  PgConnection connection(PQconnectdb(url.c_str()));
  if (PQstatus(connection.get()) != CONNECTION_OK) FAIL(PQerrorMessage(connection.get()));
  return connection;
}

// Runs `sql` on `connection`; returns the first value of the first row ("" when none).
std::string run(PGconn* connection, const std::string& sql) {
  const std::unique_ptr<PGresult, void (*)(PGresult*)> result(PQexec(connection, sql.c_str()),
                                                              PQclear);
  const auto status = PQresultStatus(result.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)
    FAIL(sql << ": " << PQresultErrorMessage(result.get()));
  return PQntuples(result.get()) > 0 ? PQgetvalue(result.get(), 0, 0) : "";
}

// A fresh accounts table (alice: balance 100, token 32) on the shared server.
std::string fresh_accounts() {
  const std::string url = shared_postgres_server().url();
  postgres_exec(url,
                "DROP TABLE IF EXISTS accounts, int_token, numeric_token, blobs, strict_rows;"
                "CREATE TABLE accounts(id text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0,"
                " current_token bigint NOT NULL DEFAULT 0);"
                "INSERT INTO accounts VALUES('alice', 100, 32);");
  return url;
}

FencedTable open_table(PGconn* connection, const std::string& table = "accounts") {
  auto opened = FencedTable::open(connection, table);
  if (!opened.ok()) FAIL(opened.error().message);
  return std::move(opened).value();
}

}  // namespace

TEST_CASE("postgres: a token column that is not bigint is refused at open, naming its type",
          "[client][postgres]") {
  const std::string url = fresh_accounts();
  postgres_exec(url,
                "CREATE TABLE int_token(id text PRIMARY KEY, current_token integer);"
                "CREATE TABLE numeric_token(id text PRIMARY KEY, current_token numeric(30));");
  const PgConnection connection = connect(url);
  for (const auto& [table, type] :
       {std::pair{"int_token", "integer"}, std::pair{"numeric_token", "numeric(30,0)"}}) {
    INFO(table);
    auto opened = FencedTable::open(connection.get(), table);
    REQUIRE_FALSE(opened.ok());
    CHECK(opened.error().code == ErrorCode::kInvalidArgument);
    CHECK_THAT(opened.error().message, Catch::Contains(std::string("is ") + type + ", not bigint"));
  }
}

TEST_CASE("postgres: names are matched exactly, as PostgreSQL stores them", "[client][postgres]") {
  const std::string url = fresh_accounts();
  const PgConnection connection = connect(url);
  auto upper = FencedTable::open(connection.get(), "Accounts");
  REQUIRE_FALSE(upper.ok());
  CHECK_THAT(upper.error().message, Catch::Contains("lower case"));
  CHECK(FencedTable::open(connection.get(), "accounts").ok());
}

TEST_CASE(
    "postgres: inside the caller's SERIALIZABLE transaction a conflict is kUnavailable "
    "naming 40001, and the rerun transaction decides by token",
    "[client][postgres]") {
  const std::string url = fresh_accounts();
  const PgConnection a = connect(url);
  const PgConnection b = connect(url);
  FencedTable a_table = open_table(a.get());
  FencedTable b_table = open_table(b.get());

  run(a.get(), "BEGIN ISOLATION LEVEL SERIALIZABLE");
  CHECK(run(a.get(), "SELECT balance FROM accounts WHERE id = 'alice'") == "100");  // snapshot
  // B (34) writes outside any transaction of the caller's: FencedTable's own, committed at once.
  auto b_write = b_table.update("alice", "balance = $1", {std::int64_t{200}}, 34);
  REQUIRE(b_write.ok());
  CHECK(b_write->outcome == WriteOutcome::kApplied);

  // A (35, newer) writes inside its transaction, whose snapshot predates B's write: PostgreSQL
  // aborts it rather than let it overwrite a row it did not see.
  auto a_write = a_table.update("alice", "balance = balance + $1", {std::int64_t{1}}, 35,
                                TokenRule::kStrictlyNewer, Commit::kByCaller);
  REQUIRE_FALSE(a_write.ok());
  CHECK(a_write.error().code == ErrorCode::kUnavailable);
  CHECK_THAT(a_write.error().message, Catch::Contains("40001"));
  run(a.get(), "ROLLBACK");

  // Rerun as the caller must: a fresh transaction sees B's write and A's token still wins.
  run(a.get(), "BEGIN ISOLATION LEVEL SERIALIZABLE");
  auto rerun = a_table.update("alice", "balance = balance + $1", {std::int64_t{1}}, 35,
                              TokenRule::kStrictlyNewer, Commit::kByCaller);
  REQUIRE(rerun.ok());
  CHECK(rerun->outcome == WriteOutcome::kApplied);
  run(a.get(), "COMMIT");
  CHECK(run(a.get(), "SELECT balance || ':' || current_token FROM accounts WHERE id = 'alice'") ==
        "201:35");
}

TEST_CASE(
    "postgres: with Commit::kByCaller a guarded write and a placeholder share the caller's "
    "transaction's fate",
    "[client][postgres]") {
  const std::string url = fresh_accounts();
  const PgConnection connection = connect(url);
  FencedTable table = open_table(connection.get());
  run(connection.get(), "BEGIN");
  REQUIRE(table
              .update("alice", "balance = $1", {std::int64_t{7}}, 40, TokenRule::kStrictlyNewer,
                      Commit::kByCaller)
              .ok());
  REQUIRE(table.fence_read("bob", 40, TokenRule::kNewerOrSame, Commit::kByCaller).ok());
  SECTION("rolled back: neither the write nor the placeholder remains") {
    run(connection.get(), "ROLLBACK");
    CHECK(run(connection.get(),
              "SELECT balance || ':' || current_token FROM accounts WHERE id = "
              "'alice'") == "100:32");
    CHECK(run(connection.get(), "SELECT count(*) FROM accounts WHERE id = 'bob'") == "0");
  }
  SECTION("committed: both remain") {
    run(connection.get(), "COMMIT");
    CHECK(run(connection.get(),
              "SELECT balance || ':' || current_token FROM accounts WHERE id = "
              "'alice'") == "7:40");
    CHECK(run(connection.get(), "SELECT current_token FROM accounts WHERE id = 'bob'") == "40");
  }
}

TEST_CASE(
    "postgres: a table that cannot hold a placeholder reports kNoSuchRow for a fenced read "
    "of a missing key",
    "[client][postgres]") {
  const std::string url = fresh_accounts();
  postgres_exec(url,
                "CREATE TABLE strict_rows(id text PRIMARY KEY, owner text NOT NULL,"
                " current_token bigint NOT NULL DEFAULT 0)");
  const PgConnection connection = connect(url);
  FencedTable table = open_table(connection.get(), "strict_rows");
  auto fenced = table.fence_read("nobody", 5);
  REQUIRE(fenced.ok());
  CHECK(fenced->outcome == WriteOutcome::kNoSuchRow);
  CHECK(run(connection.get(), "SELECT count(*) FROM strict_rows") == "0");
}

TEST_CASE("postgres: every SqlValue type binds to $1 ... $N", "[client][postgres]") {
  const std::string url = fresh_accounts();
  postgres_exec(url,
                "CREATE TABLE blobs(id text PRIMARY KEY, i bigint, d double precision, t text,"
                " b bytea, n text DEFAULT 'x', current_token bigint NOT NULL DEFAULT 0);"
                "INSERT INTO blobs(id) VALUES('k')");
  const PgConnection connection = connect(url);
  FencedTable table = open_table(connection.get(), "blobs");
  auto written = table.update("k", "i = $1, d = $2, t = $3, b = $4, n = $5",
                              {std::int64_t{-42}, 0.5, std::string("it's \"quoted\""),
                               std::vector<std::uint8_t>{0, 1, 255}, nullptr},
                              1);
  REQUIRE(written.ok());
  CHECK(written->outcome == WriteOutcome::kApplied);
  CHECK(run(connection.get(),
            "SELECT i || '|' || d || '|' || t || '|' || encode(b, 'hex') || '|' ||"
            " coalesce(n, 'NULL') FROM blobs") == "-42|0.5|it's \"quoted\"|0001ff|NULL");
}

TEST_CASE(
    "postgres: bad assignments, parameter counts and keys are kInvalidArgument and change "
    "nothing",
    "[client][postgres]") {
  const std::string url = fresh_accounts();
  const PgConnection connection = connect(url);
  FencedTable table = open_table(connection.get());
  const auto refused = [&](std::string_view key, const std::string& assignments,
                           const std::vector<SqlValue>& params) {
    INFO(assignments);
    auto result = table.update(key, assignments, params, 99);
    REQUIRE_FALSE(result.ok());
    CHECK(result.error().code == ErrorCode::kInvalidArgument);
  };
  refused("alice", "balance = $1 /*", {std::int64_t{1}});      // hides the condition
  refused("alice", "balance = 1; DELETE FROM accounts", {});   // two statements
  refused("alice", "no_such_column = $1", {std::int64_t{1}});  // does not compile
  refused("alice", "balance = $1", {});                        // one parameter, none given
  refused("alice", "balance = $1", {std::string("not a number")});
  refused(std::string_view("al\0ice", 6), "balance = $1", {std::int64_t{1}});
  refused("alice", "  ", {});
  CHECK(run(connection.get(), "SELECT balance || ':' || current_token FROM accounts") == "100:32");
  // The connection is still usable, outside any transaction.
  CHECK(PQtransactionStatus(connection.get()) == PQTRANS_IDLE);
  auto applied = table.update("alice", "balance = $1", {std::int64_t{1}}, 99);
  REQUIRE(applied.ok());
  CHECK(applied->outcome == WriteOutcome::kApplied);
}

TEST_CASE("postgres: a server that does not answer is kUnavailable at connect",
          "[client][postgres]") {
  const auto port = fencelock::testing::pick_free_port();
  auto opened = FencedTable::connect(
      "postgresql://fencelock@127.0.0.1:" + std::to_string(port) + "/postgres?connect_timeout=2",
      "accounts");
  REQUIRE_FALSE(opened.ok());
  CHECK(opened.error().code == ErrorCode::kUnavailable);
  CHECK_THAT(opened.error().message, Catch::Contains("cannot connect to PostgreSQL"));

  auto no_connection = FencedTable::open(static_cast<pg_conn*>(nullptr), "accounts");
  REQUIRE_FALSE(no_connection.ok());
  CHECK(no_connection.error().code == ErrorCode::kInvalidArgument);
}
