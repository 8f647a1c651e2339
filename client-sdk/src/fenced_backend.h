// FencedBackend: what FencedTable needs from one database, and nothing else.
//
// FencedTable (fenced_table.cpp) holds the contract every database shares: the token range, the
// identifier rules, telling kApplied from kStale from kNoSuchRow, our own transaction around one
// call, and retrying a transaction the database aborted to keep it serializable. A backend only
// runs the database's own statements: the guarded UPDATE, the fenced read (which may insert a
// placeholder row), and the plain read of a row's token. SQLite and PostgreSQL implement it
// (sqlite_fenced_backend.cpp, postgres_fenced_backend.cpp).
//
// Contract of every method: errors as values (fencelock::Error), never an exception; a backend is
// used by one thread at a time, like the connection it runs on.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fencelock/fenced_table.h"
#include "fencelock/result.h"

struct sqlite3;
struct pg_conn;

namespace fencelock {

// The guarded table's names, already checked to be identifiers ([A-Za-z_][A-Za-z0-9_]*) and the
// two columns to differ.
struct FencedNames {
  std::string table;
  std::string key_column;
  std::string token_column;
};

class FencedBackend {
 public:
  virtual ~FencedBackend() = default;

  // Whether the caller has a transaction open on the connection: then a guarded call refuses, or
  // joins it when the caller said it commits it (Commit::kByCaller), instead of running its own.
  virtual bool in_transaction() = 0;
  // Our own transaction around one guarded call, so the outcome reported is the one that
  // happened. rollback() is a no-op when no transaction is open (some errors end it themselves).
  virtual Status begin() = 0;
  virtual Status commit() = 0;
  virtual void rollback() noexcept = 0;
  // Whether `error`, returned by this backend's last call, means the database aborted our own
  // transaction to keep it serializable (and a fresh attempt may succeed).
  virtual bool is_serialization_failure(const Error& error) const = 0;

  // UPDATE <table> SET <assignments>, <token> = token WHERE <key> = key AND <token> (< or <=)
  // token. Returns whether it changed the row. `assignments` and `params` are the caller's
  // (fenced_table.h); the backend checks them and caches the prepared statement.
  virtual Result<bool> update(std::string_view key, std::string_view assignments,
                              const std::vector<SqlValue>& params, std::int64_t token,
                              TokenRule rule) = 0;
  // Raises the row's token to `token` when `rule` allows; when no row has the key and the table
  // can hold a placeholder row, inserts one holding only the key and `token`. Returns whether the
  // row now carries `token` because of this call.
  virtual Result<bool> fence(std::string_view key, std::int64_t token, TokenRule rule) = 0;
  // The row's token, nullopt when no row has the key.
  virtual Result<std::optional<std::int64_t>> read_token(std::string_view key) = 0;
};

// Each checks the schema (the table and columns exist, the key picks one row, the token column's
// type) and prepares the fixed statements. Errors as FencedTable::open.
Result<std::unique_ptr<FencedBackend>> open_sqlite_backend(sqlite3* db, FencedNames names);
// `owned`: close the connection with the backend (FencedTable::connect).
Result<std::unique_ptr<FencedBackend>> open_postgres_backend(pg_conn* connection, bool owned,
                                                             FencedNames names);

// Connects first (FencedTable::connect); kUnavailable when it cannot.
Result<std::unique_ptr<FencedBackend>> connect_postgres_backend(std::string_view connection_string,
                                                                FencedNames names);

// Shared by both backends: an Error with `code` and `message`.
Error fenced_error(ErrorCode code, std::string message);
// Whether `text` is only whitespace.
bool is_blank(std::string_view text);
// The token comparison of `rule` in SQL, with spaces around it: " < " or " <= ".
const char* comparison(TokenRule rule);
// What a backend caches one prepared guarded UPDATE under: the rule and the assignments.
std::string update_cache_key(std::string_view assignments, TokenRule rule);

}  // namespace fencelock
