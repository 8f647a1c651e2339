#include "object_store.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

namespace resource_store {

using fencelock::Error;
using fencelock::ErrorCode;
using fencelock::Result;
using fencelock::TokenRule;
using fencelock::WriteOutcome;

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

// BEGIN IMMEDIATE now (the write lock, so the check and the write see no other writer), ROLLBACK
// at scope exit unless committed.
class Transaction {
 public:
  explicit Transaction(sqlite3* db) : db_(db), open_(exec(db, "BEGIN IMMEDIATE")) {}
  ~Transaction() {
    if (open_) exec(db_, "ROLLBACK");
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  bool open() const { return open_; }
  bool commit() {
    open_ = !exec(db_, "COMMIT");
    return !open_;
  }

 private:
  sqlite3* db_;
  bool open_;
};

struct RowState {
  std::uint64_t token = 0;
  bool read_fenced =
      false;  // the token was put there by a fenced read its holder has not followed by a write
};

// The row's token state, nullopt when there is no row; `error` set on a SQLite failure.
std::optional<RowState> row_state(sqlite3* db, const std::string& key,
                                  std::optional<Error>& error) {
  Query select(db, "SELECT current_token, read_fenced FROM objects WHERE key = ?1");
  const int rc = select.text(1, key).step();
  if (rc == SQLITE_ROW) {
    return RowState{static_cast<std::uint64_t>(sqlite3_column_int64(select.get(), 0)),
                    sqlite3_column_int64(select.get(), 1) != 0};
  }
  if (rc != SQLITE_DONE) error = failure(db, "select");
  return std::nullopt;
}

// A database from before placeholders has objects.value NOT NULL and no read_fenced column: it
// cannot record a fenced read of a missing key, and serving it would silently fence less.
bool has_current_schema(sqlite3* db) {
  Query columns(db,
                "SELECT count(*) FROM pragma_table_info('objects')"
                " WHERE (name = 'value' AND \"notnull\" = 0) OR name = 'read_fenced'");
  return columns.step() == SQLITE_ROW && sqlite3_column_int64(columns.get(), 0) == 2;
}

}  // namespace

Result<std::unique_ptr<ObjectStore>> ObjectStore::open(const std::filesystem::path& db_path,
                                                       const std::filesystem::path& log,
                                                       Mode mode) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
                      nullptr) != SQLITE_OK) {
    Error error = failure(db, "cannot open " + db_path.string());
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
    Error error = failure(db, "cannot set up " + db_path.string());
    sqlite3_close_v2(db);
    return error;
  }
  if (!has_current_schema(db)) {
    sqlite3_close_v2(db);
    return Error{ErrorCode::kInvalidArgument,
                 db_path.string() +
                     " was written by an older resource-store (objects.value NOT NULL, no "
                     "read_fenced column),"
                     " which cannot record fenced reads of missing objects; move it aside or use "
                     "another --db",
                 0, std::nullopt};
  }
  auto table = fencelock::FencedTable::open(db, "objects", "key", "current_token");
  if (!table.ok()) {
    sqlite3_close_v2(db);
    return std::move(table).error();
  }
  return std::unique_ptr<ObjectStore>(new ObjectStore(db, std::move(table).value(), log, mode));
}

ObjectStore::ObjectStore(sqlite3* db, fencelock::FencedTable table, std::filesystem::path log_path,
                         Mode mode)
    : db_(db),
      table_(std::move(table)),
      log_path_(std::move(log_path)),
      log_(log_path_, std::ios::app),
      mode_(mode) {}

// close_v2: the table's statements are finalized after this body, and SQLite closes then.
ObjectStore::~ObjectStore() {
  sqlite3_close_v2(db_);
}

void ObjectStore::append_log(const std::string& op, const std::string& key, std::uint64_t token,
                             const std::string& outcome, std::uint64_t current_token,
                             const std::string& value) {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const nlohmann::json entry{{"seq", ++seq_},
                             {"time_us", micros},
                             {"op", op},
                             {"key", key},
                             {"token", token},
                             {"outcome", outcome},
                             {"current_token", current_token},
                             {"value", value}};
  // A value that is not UTF-8 is logged with U+FFFD; it must never stop the log (the write is
  // already committed).
  log_ << entry.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n'
       << std::flush;
}

Result<PutOutcome> ObjectStore::put(const std::string& key, const std::string& value,
                                    std::uint64_t token) {
  const std::lock_guard<std::mutex> lock(mutex_);
  if (mode_ != Mode::kUnfenced) return put_fenced(key, value, token);
  // What a store without fencing does: overwrite, whoever writes and whenever.
  Query upsert(db_,
               "INSERT INTO objects(key, value) VALUES(?1, ?2)"
               " ON CONFLICT(key) DO UPDATE SET value = excluded.value");
  if (upsert.text(1, key).text(2, value).step() != SQLITE_DONE) return failure(db_, "write");
  append_log("write", key, token, "applied_unfenced", 0, value);
  return PutOutcome{true, 0};
}

Result<PutOutcome> ObjectStore::put_fenced(const std::string& key, const std::string& value,
                                           std::uint64_t token) {
  Transaction transaction(db_);
  if (!transaction.open()) return failure(db_, "begin");
  std::optional<Error> error;
  const std::optional<RowState> row = row_state(db_, key, error);
  if (error) return *std::move(error);

  PutOutcome outcome{true, token};
  if (!row) {
    // No object and no fenced read yet: the first write creates it.
    Query insert(db_, "INSERT INTO objects(key, value, current_token) VALUES(?1, ?2, ?3)");
    if (insert.text(1, key).text(2, value).integer(3, token).step() != SQLITE_DONE)
      return failure(db_, "insert");
  } else {
    // Same-token mode admits the row's own token always; fenced mode only right after that
    // token's own fenced read (read_fenced), so a lease still writes at most once.
    const bool own_read = row->token == token && row->read_fenced;
    const TokenRule rule =
        mode_ == Mode::kSameToken || own_read ? TokenRule::kNewerOrSame : TokenRule::kStrictlyNewer;
    auto written = table_.update(key, "value = ?1, read_fenced = 0", {value}, token, rule);
    if (!written.ok()) return std::move(written).error();
    outcome = PutOutcome{written->outcome == WriteOutcome::kApplied, written->current_token};
  }
  if (!transaction.commit()) return failure(db_, "commit");
  append_log("write", key, token, outcome.applied ? "applied" : "rejected_stale",
             outcome.current_token, value);
  return outcome;
}

Result<PutOutcome> ObjectStore::fence_read(const std::string& key, std::uint64_t token) {
  Transaction transaction(db_);
  if (!transaction.open()) return failure(db_, "begin");
  std::optional<Error> error;
  const std::optional<RowState> before = row_state(db_, key, error);
  if (error) return *std::move(error);
  // A holder may read its row again; only an older token is refused. A missing key gets a
  // placeholder holding the token (the table's value column is nullable).
  auto fenced = table_.fence_read(key, token, TokenRule::kNewerOrSame);
  if (!fenced.ok()) return std::move(fenced).error();
  const PutOutcome outcome{fenced->outcome == WriteOutcome::kApplied, fenced->current_token};
  if (outcome.applied && (!before || before->token < token)) {
    // The token is on the row because of this read: its holder may write once with it. A read
    // after the holder's own write (token already equal) grants nothing more.
    Query mark(db_, "UPDATE objects SET read_fenced = 1 WHERE key = ?1");
    if (mark.text(1, key).step() != SQLITE_DONE) return failure(db_, "mark");
  }
  if (!transaction.commit()) return failure(db_, "commit");
  append_log("fenced_read", key, token, outcome.applied ? "fenced" : "rejected_stale",
             outcome.current_token, "");
  return outcome;
}

Result<std::optional<Object>> ObjectStore::get(const std::string& key,
                                               std::optional<std::uint64_t> token,
                                               PutOutcome& fence) {
  const std::lock_guard<std::mutex> lock(mutex_);
  fence = PutOutcome{true, 0};
  if (token && mode_ != Mode::kUnfenced) {
    auto fenced = fence_read(key, *token);
    if (!fenced.ok()) return std::move(fenced).error();
    fence = fenced.value();
    if (!fence.applied) return std::optional<Object>();
  }
  Query select(db_,
               "SELECT value, current_token FROM objects WHERE key = ?1 AND value IS NOT NULL");
  std::optional<Object> object;
  const int rc = select.text(1, key).step();
  if (rc == SQLITE_ROW) {
    // By length, not up to the first NUL: values are bytes.
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(select.get(), 0));
    object =
        Object{std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(select.get(), 0))),
               static_cast<std::uint64_t>(sqlite3_column_int64(select.get(), 1))};
  } else if (rc != SQLITE_DONE) {
    return failure(db_, "select");
  }
  return object;
}

std::string ObjectStore::log_text() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace resource_store
