// Thin RAII over the SQLite C API: a database handle and prepared statements, errors as values.
// Only prepared statements; no string-built SQL with values in it.
// Not thread-safe: each Database is used by one thread (the token store's worker).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "fencelock/storage/result.h"

namespace fencelock::storage {

struct SqliteCloser {
  void operator()(sqlite3* db) const noexcept { sqlite3_close_v2(db); }
};
struct SqliteFinalizer {
  void operator()(sqlite3_stmt* statement) const noexcept { sqlite3_finalize(statement); }
};

class SqliteStatement {
 public:
  SqliteStatement() = default;
  explicit SqliteStatement(sqlite3_stmt* statement) : statement_(statement) {}

  SqliteStatement& bind(int index, std::int64_t value);
  // Binds a copy of `text` (SQLITE_TRANSIENT): the caller's buffer may go away at once.
  SqliteStatement& bind(int index, std::string_view text);
  // SQLITE_ROW: a row is ready (read it with column_*); SQLITE_DONE: finished; anything else:
  // an error code. The statement is reset by reset(), which also clears bindings.
  int step();
  void reset();
  std::int64_t column_int64(int index) const;
  // A copy of the column as text; "" for NULL.
  std::string column_text(int index) const;

 private:
  std::unique_ptr<sqlite3_stmt, SqliteFinalizer> statement_;
};

class SqliteDatabase {
 public:
  // Opens (creating if needed) `path` read-write, in serialized-free mode (one thread uses it).
  // Errors: kUnavailable with SQLite's message.
  static Result<SqliteDatabase> open(const std::filesystem::path& path);

  // Runs SQL without parameters (schema, PRAGMAs, BEGIN/COMMIT). Errors: kInternal.
  Status exec(const char* sql);
  // Errors: kInternal.
  Result<SqliteStatement> prepare(const char* sql);
  std::string last_error() const;

 private:
  explicit SqliteDatabase(sqlite3* db) : db_(db) {}
  std::unique_ptr<sqlite3, SqliteCloser> db_;
};

}  // namespace fencelock::storage
