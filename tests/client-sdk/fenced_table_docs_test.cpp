// docs/sdk.md's guarded-write examples run as written (sdk_doc_blocks.py compiles their text):
// against the test's PostgreSQL and an SQLite file, and what each reports applied is checked
// from a new connection after its own has closed.
#include <libpq-fe.h>
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <string>

#include "fencelock/fenced_table.h"
#include "postgres_server.h"
#include "sdk_doc_blocks.h"
#include "temp_dir.h"

namespace fencelock::testing {

namespace {

std::string& sqlite_file() {
  static std::string path;
  return path;
}

std::string postgres_value(const std::string& sql) {
  const std::unique_ptr<PGconn, void (*)(PGconn*)> connection(
      PQconnectdb(shared_postgres_server().url().c_str()), PQfinish);
  const std::unique_ptr<PGresult, void (*)(PGresult*)> result(PQexec(connection.get(), sql.c_str()),
                                                              PQclear);
  if (PQresultStatus(result.get()) != PGRES_TUPLES_OK || PQntuples(result.get()) != 1)
    FAIL(sql << ": " << PQresultErrorMessage(result.get()));
  return PQgetvalue(result.get(), 0, 0);
}

std::string sqlite_value(const std::string& sql) {
  sqlite3* raw = nullptr;
  sqlite3_open_v2(sqlite_file().c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  const std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw, sqlite3_close_v2);
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v2(raw, sql.c_str(), -1, &statement, nullptr) != SQLITE_OK)
    FAIL(sql << ": " << sqlite3_errmsg(raw));
  const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> owner(statement, sqlite3_finalize);
  if (sqlite3_step(statement) != SQLITE_ROW) FAIL(sql << ": no row");
  return reinterpret_cast<const char*>(sqlite3_column_text(statement, 0));
}

}  // namespace

std::string sdk_docs_postgres_url() {
  return shared_postgres_server().url();
}
std::string sdk_docs_sqlite_file() {
  return sqlite_file();
}

std::int64_t read_balance(sqlite3* db, const char* key) {
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT balance FROM accounts WHERE id = ?1", -1, &statement,
                         nullptr) != SQLITE_OK)
    FAIL(sqlite3_errmsg(db));
  const std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> owner(statement, sqlite3_finalize);
  sqlite3_bind_text(statement, 1, key, -1, SQLITE_TRANSIENT);
  if (sqlite3_step(statement) != SQLITE_ROW) FAIL("no row " << key);
  return sqlite3_column_int64(statement, 0);
}

}  // namespace fencelock::testing

using namespace fencelock;
using namespace fencelock::testing;

TEST_CASE(
    "docs: every guarded-write example of docs/sdk.md runs as written, and what it reports "
    "applied is there after its connection closed",
    "[client][postgres]") {
  TempDir dir;
  sqlite_file() = (dir.path() / "bank.db").string();
  postgres_exec(sdk_docs_postgres_url(),
                "DROP TABLE IF EXISTS accounts;"
                "CREATE TABLE accounts(id text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0,"
                " current_token bigint NOT NULL DEFAULT 0);"
                "INSERT INTO accounts(id, balance) VALUES('alice', 100);");
  const auto blocks = sdk_doc_blocks();
  // The PostgreSQL program, the SQLite program, the fenced read-modify-write, the same in the
  // caller's transaction.
  REQUIRE(blocks.size() == 4);

  std::uint64_t token = 34;
  std::int64_t sqlite_balance = 0;
  for (const SdkDocBlock& block : blocks) {
    INFO(block.where);
    if (block.program != nullptr) {
      REQUIRE(block.program() == 0);
      continue;
    }
    // A fragment: the page's SQLite database, as the SQLite program left it, is the reader's.
    sqlite_balance = std::stoll(sqlite_value("SELECT balance FROM accounts WHERE id = 'alice'"));
    ++token;
    {
      sqlite3* raw = nullptr;
      REQUIRE(sqlite3_open(sqlite_file().c_str(), &raw) == SQLITE_OK);
      const std::unique_ptr<sqlite3, int (*)(sqlite3*)> db(raw, sqlite3_close_v2);
      // Declared after the connection it borrows, so destroyed before it.
      Result<FencedTable> accounts = FencedTable::open(raw, "accounts");
      REQUIRE(accounts.ok());
      block.fragment(raw, accounts, token);
    }
    CHECK(sqlite_value("SELECT balance || ':' || current_token FROM accounts WHERE id = 'alice'") ==
          std::to_string(sqlite_balance + 20) + ":" + std::to_string(token));
  }
  // The PostgreSQL program added 20 with token 34.
  CHECK(postgres_value("SELECT balance || ':' || current_token FROM accounts WHERE id = 'alice'") ==
        "120:34");
  CHECK(token == 36);
}
