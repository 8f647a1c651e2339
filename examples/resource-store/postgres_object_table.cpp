// The resource store's objects in PostgreSQL. Values are bytea (they are bytes, and may hold
// anything); every value travels as a parameter. A writer's transaction holds an advisory lock on
// its key (pg_advisory_xact_lock), so two store processes sharing the database decide one key's
// check-then-write in turn, as SQLite's single writer does for them.
#include <libpq-fe.h>

#include <charconv>
#include <utility>
#include <vector>

#include "object_table.h"

namespace resource_store {

using fencelock::Done;
using fencelock::Error;
using fencelock::ErrorCode;
using fencelock::Result;
using fencelock::Status;

namespace {

constexpr unsigned kByteaOid = 17;

struct Finisher {
  void operator()(PGconn* connection) const noexcept { PQfinish(connection); }
};
struct Clearer {
  void operator()(PGresult* result) const noexcept { PQclear(result); }
};
using Connection = std::unique_ptr<PGconn, Finisher>;
using PgResult = std::unique_ptr<PGresult, Clearer>;

std::string without_newline(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// One parameterized statement; `binary_value` sends parameter 2 as bytea bytes.
struct Statement {
  const char* sql;
  std::vector<std::string> params;
  bool binary_value = false;
  int result_format = 0;  // 1: every column in binary (bytea as raw bytes)
};

class PostgresObjectTable final : public ObjectTable {
 public:
  PostgresObjectTable(Connection connection, fencelock::FencedTable fenced)
      : connection_(std::move(connection)), fenced_(std::move(fenced)) {}

  fencelock::FencedTable& fenced() override { return fenced_; }
  const char* write_assignments() const override { return "value = $1, read_fenced = 0"; }
  fencelock::SqlValue value_parameter(const std::string& value) const override {
    return std::vector<std::uint8_t>(value.begin(), value.end());
  }

  Status begin(const std::string& key) override {
    auto begun = run({"BEGIN", {}}, "begin");
    if (!begun.ok()) return std::move(begun).error();
    auto locked =
        run({"SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", {key}}, "lock the key");
    if (!locked.ok()) {
      rollback();
      return std::move(locked).error();
    }
    return Done{};
  }
  Status commit() override {
    auto committed = run({"COMMIT", {}}, "commit");
    if (!committed.ok()) return std::move(committed).error();
    return Done{};
  }
  void rollback() noexcept override {
    if (PQtransactionStatus(connection_.get()) != PQTRANS_IDLE) {
      const PgResult ignored(PQexec(connection_.get(), "ROLLBACK"));
    }
  }

  Result<std::optional<RowState>> row_state(const std::string& key) override {
    auto result =
        run({"SELECT current_token, read_fenced FROM objects WHERE key = $1", {key}}, "select");
    if (!result.ok()) return std::move(result).error();
    if (PQntuples(result->get()) == 0) return std::optional<RowState>();
    return std::optional<RowState>(RowState{
        number(result->get(), 0), std::string_view(PQgetvalue(result->get(), 0, 1)) != "0"});
  }

  Status insert(const std::string& key, const std::string& value, std::uint64_t token) override {
    auto result = run({"INSERT INTO objects(key, value, current_token) VALUES($1, $2, $3)",
                       {key, value, std::to_string(token)},
                       true},
                      "insert");
    if (!result.ok()) return std::move(result).error();
    return Done{};
  }

  Status mark_read_fenced(const std::string& key) override {
    auto result = run({"UPDATE objects SET read_fenced = 1 WHERE key = $1", {key}}, "mark");
    if (!result.ok()) return std::move(result).error();
    return Done{};
  }

  Result<std::optional<Object>> read(const std::string& key) override {
    auto result = run({"SELECT value, current_token::text FROM objects"
                       " WHERE key = $1 AND value IS NOT NULL",
                       {key},
                       false,
                       1},
                      "select");
    if (!result.ok()) return std::move(result).error();
    if (PQntuples(result->get()) == 0) return std::optional<Object>();
    const auto length = static_cast<std::size_t>(PQgetlength(result->get(), 0, 0));
    return std::optional<Object>(
        Object{std::string(PQgetvalue(result->get(), 0, 0), length), number(result->get(), 1)});
  }

  Status write_unfenced(const std::string& key, const std::string& value) override {
    auto result = run({"INSERT INTO objects(key, value) VALUES($1, $2)"
                       " ON CONFLICT(key) DO UPDATE SET value = EXCLUDED.value",
                       {key, value},
                       true},
                      "write");
    if (!result.ok()) return std::move(result).error();
    return Done{};
  }

 private:
  static std::uint64_t number(const PGresult* result, int column) {
    const char* text = PQgetvalue(result, 0, column);
    const auto length = static_cast<std::size_t>(PQgetlength(result, 0, column));
    std::uint64_t value = 0;
    std::from_chars(text, text + length, value);
    return value;
  }

  Result<PgResult> run(const Statement& statement, const std::string& what) {
    std::vector<const char*> values;
    std::vector<int> lengths;
    std::vector<int> formats;
    std::vector<unsigned> types;
    for (std::size_t i = 0; i < statement.params.size(); ++i) {
      const bool binary = statement.binary_value && i == 1;
      values.push_back(statement.params[i].data());
      lengths.push_back(static_cast<int>(statement.params[i].size()));
      formats.push_back(binary ? 1 : 0);
      types.push_back(binary ? kByteaOid : 0);
    }
    PgResult result(PQexecParams(connection_.get(), statement.sql, static_cast<int>(values.size()),
                                 types.data(), values.data(), lengths.data(), formats.data(),
                                 statement.result_format));
    const auto status = result ? PQresultStatus(result.get()) : PGRES_FATAL_ERROR;
    if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
      return Error{ErrorCode::kUnavailable,
                   what + ": " + without_newline(PQerrorMessage(connection_.get())), 0,
                   std::nullopt};
    }
    return result;
  }

  // Declared first, destroyed last: the FencedTable deallocates its statements on it.
  Connection connection_;
  fencelock::FencedTable fenced_;
};

}  // namespace

Result<std::unique_ptr<ObjectTable>> open_postgres_objects(const std::string& url) {
  Connection connection(PQconnectdb(url.c_str()));
  if (PQstatus(connection.get()) != CONNECTION_OK) {
    return Error{
        ErrorCode::kUnavailable,
        "cannot connect to PostgreSQL: " + without_newline(PQerrorMessage(connection.get())), 0,
        std::nullopt};
  }
  // value NULL: a placeholder left by a fenced read of a key that has no object.
  const PgResult created(PQexec(connection.get(),
                                "CREATE TABLE IF NOT EXISTS objects (key text PRIMARY KEY,"
                                " value bytea, current_token bigint NOT NULL DEFAULT 0,"
                                " read_fenced integer NOT NULL DEFAULT 0)"));
  if (PQresultStatus(created.get()) != PGRES_COMMAND_OK) {
    return Error{
        ErrorCode::kUnavailable,
        "cannot create the objects table: " + without_newline(PQresultErrorMessage(created.get())),
        0, std::nullopt};
  }
  auto fenced = fencelock::FencedTable::open(connection.get(), "objects", "key", "current_token");
  if (!fenced.ok()) return std::move(fenced).error();
  return std::unique_ptr<ObjectTable>(
      new PostgresObjectTable(std::move(connection), std::move(fenced).value()));
}

}  // namespace resource_store
