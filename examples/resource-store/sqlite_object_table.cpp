// The resource store's objects in a SQLite file (WAL, synchronous FULL).
#include <sqlite3.h>

#include <utility>

#include "object_table.h"

namespace resource_store {

using fencelock::Done;
using fencelock::Error;
using fencelock::ErrorCode;
using fencelock::Result;
using fencelock::Status;

namespace {

constexpr int kBusyTimeoutMs = 10'000;  // another process sharing the file holds the write lock

Error failure(sqlite3* db, const std::string& what) {
  return Error{ErrorCode::kUnavailable, what + ": " + (db ? sqlite3_errmsg(db) : "out of memory"),
               0, std::nullopt};
}

bool exec(sqlite3* db, const char* sql) {
  return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK;
}

// One statement, prepared, bound and finalized in one scope.
class Query {
 public:
  Query(sqlite3* db, const char* sql) {
    ok_ = sqlite3_prepare_v2(db, sql, -1, &statement_, nullptr) == SQLITE_OK;
  }
  ~Query() { sqlite3_finalize(statement_); }
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  Query& text(int index, const std::string& value) {
    ok_ = ok_ && sqlite3_bind_text(statement_, index, value.data(), static_cast<int>(value.size()),
                                   SQLITE_TRANSIENT) == SQLITE_OK;
    return *this;
  }
  Query& integer(int index, std::uint64_t value) {
    ok_ = ok_ &&
          sqlite3_bind_int64(statement_, index, static_cast<sqlite3_int64>(value)) == SQLITE_OK;
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE, or an error code (SQLITE_ERROR when preparing or binding failed).
  int step() { return ok_ ? sqlite3_step(statement_) : SQLITE_ERROR; }
  sqlite3_stmt* get() const { return statement_; }

 private:
  sqlite3_stmt* statement_ = nullptr;
  bool ok_ = false;
};

// A database from before placeholders has objects.value NOT NULL and no read_fenced column: it
// cannot record a fenced read of a missing key, and serving it would silently fence less.
bool has_current_schema(sqlite3* db) {
  Query columns(db,
                "SELECT count(*) FROM pragma_table_info('objects')"
                " WHERE (name = 'value' AND \"notnull\" = 0) OR name = 'read_fenced'");
  return columns.step() == SQLITE_ROW && sqlite3_column_int64(columns.get(), 0) == 2;
}

class SqliteObjectTable final : public ObjectTable {
 public:
  SqliteObjectTable(sqlite3* db, fencelock::FencedTable fenced)
      : db_(db), fenced_(std::move(fenced)) {}
  // close_v2: the FencedTable's statements are finalized after this body, and SQLite closes then.
  ~SqliteObjectTable() override { sqlite3_close_v2(db_); }
  SqliteObjectTable(const SqliteObjectTable&) = delete;
  SqliteObjectTable& operator=(const SqliteObjectTable&) = delete;

  fencelock::FencedTable& fenced() override { return fenced_; }
  const char* write_assignments() const override { return "value = ?1, read_fenced = 0"; }
  fencelock::SqlValue value_parameter(const std::string& value) const override { return value; }

  Status begin(const std::string&) override {
    if (!exec(db_, "BEGIN IMMEDIATE")) return failure(db_, "begin");
    return Done{};
  }
  Status commit() override {
    if (!exec(db_, "COMMIT")) return failure(db_, "commit");
    return Done{};
  }
  void rollback() noexcept override {
    if (sqlite3_get_autocommit(db_) == 0) exec(db_, "ROLLBACK");
  }

  Result<std::optional<RowState>> row_state(const std::string& key) override {
    Query select(db_, "SELECT current_token, read_fenced FROM objects WHERE key = ?1");
    const int rc = select.text(1, key).step();
    if (rc == SQLITE_ROW) {
      return std::optional<RowState>(
          RowState{static_cast<std::uint64_t>(sqlite3_column_int64(select.get(), 0)),
                   sqlite3_column_int64(select.get(), 1) != 0});
    }
    if (rc != SQLITE_DONE) return failure(db_, "select");
    return std::optional<RowState>();
  }

  Status insert(const std::string& key, const std::string& value, std::uint64_t token) override {
    Query insert(db_, "INSERT INTO objects(key, value, current_token) VALUES(?1, ?2, ?3)");
    if (insert.text(1, key).text(2, value).integer(3, token).step() != SQLITE_DONE)
      return failure(db_, "insert");
    return Done{};
  }

  Status mark_read_fenced(const std::string& key) override {
    Query mark(db_, "UPDATE objects SET read_fenced = 1 WHERE key = ?1");
    if (mark.text(1, key).step() != SQLITE_DONE) return failure(db_, "mark");
    return Done{};
  }

  Result<std::optional<Object>> read(const std::string& key) override {
    Query select(db_,
                 "SELECT value, current_token FROM objects WHERE key = ?1 AND value IS NOT NULL");
    const int rc = select.text(1, key).step();
    if (rc == SQLITE_ROW) {
      // By length, not up to the first NUL: values are bytes.
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(select.get(), 0));
      return std::optional<Object>(
          Object{std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(select.get(), 0))),
                 static_cast<std::uint64_t>(sqlite3_column_int64(select.get(), 1))});
    }
    if (rc != SQLITE_DONE) return failure(db_, "select");
    return std::optional<Object>();
  }

  Status write_unfenced(const std::string& key, const std::string& value) override {
    Query upsert(db_,
                 "INSERT INTO objects(key, value) VALUES(?1, ?2)"
                 " ON CONFLICT(key) DO UPDATE SET value = excluded.value");
    if (upsert.text(1, key).text(2, value).step() != SQLITE_DONE) return failure(db_, "write");
    return Done{};
  }

 private:
  sqlite3* db_;
  fencelock::FencedTable fenced_;
};

}  // namespace

Result<std::unique_ptr<ObjectTable>> open_sqlite_objects(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    Error error = failure(db, "cannot open " + path);
    sqlite3_close_v2(db);
    return error;
  }
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  // WAL + FULL: an acknowledged write is on disk; the demo reads it back after crashes too.
  // value NULL: a placeholder left by a fenced read of a key that has no object.
  if (!exec(db,
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
            "CREATE TABLE IF NOT EXISTS objects (key TEXT PRIMARY KEY, value TEXT,"
            " current_token INTEGER NOT NULL DEFAULT 0, read_fenced INTEGER NOT NULL DEFAULT 0) "
            "WITHOUT ROWID;")) {
    Error error = failure(db, "cannot set up " + path);
    sqlite3_close_v2(db);
    return error;
  }
  if (!has_current_schema(db)) {
    sqlite3_close_v2(db);
    return Error{ErrorCode::kInvalidArgument,
                 path +
                     " was written by an older resource-store (objects.value NOT NULL, no "
                     "read_fenced column),"
                     " which cannot record fenced reads of missing objects; move it aside or use "
                     "another --db",
                 0, std::nullopt};
  }
  auto fenced = fencelock::FencedTable::open(db, "objects", "key", "current_token");
  if (!fenced.ok()) {
    sqlite3_close_v2(db);
    return std::move(fenced).error();
  }
  return std::unique_ptr<ObjectTable>(new SqliteObjectTable(db, std::move(fenced).value()));
}

}  // namespace resource_store
