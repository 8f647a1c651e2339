#include "object_store.h"

#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>

namespace resource_store {

using fencelock::Error;
using fencelock::ErrorCode;
using fencelock::Result;

namespace {

Error failure(sqlite3* db, const std::string& what) {
  return Error{ErrorCode::kUnavailable, what + ": " + (db ? sqlite3_errmsg(db) : "out of memory"), 0, std::nullopt};
}

bool exec(sqlite3* db, const char* sql) { return sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK; }

}  // namespace

Result<std::unique_ptr<ObjectStore>> ObjectStore::open(const std::filesystem::path& db_path,
                                                       const std::filesystem::path& log, Mode mode) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
    Error error = failure(db, "cannot open " + db_path.string());
    sqlite3_close_v2(db);
    return error;
  }
  // WAL + FULL: an acknowledged write is on disk; the demo reads it back after crashes too.
  if (!exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                "CREATE TABLE IF NOT EXISTS objects (key TEXT PRIMARY KEY, value TEXT NOT NULL,"
                " current_token INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;")) {
    Error error = failure(db, "cannot set up " + db_path.string());
    sqlite3_close_v2(db);
    return error;
  }
  auto table = fencelock::FencedTable::open(db, "objects", "key", "current_token");
  if (!table.ok()) {
    sqlite3_close_v2(db);
    return std::move(table).error();
  }
  return std::unique_ptr<ObjectStore>(new ObjectStore(db, std::move(table).value(), log, mode));
}

ObjectStore::ObjectStore(sqlite3* db, fencelock::FencedTable table, std::filesystem::path log_path, Mode mode)
    : db_(db), table_(std::move(table)), log_path_(std::move(log_path)), log_(log_path_, std::ios::app), mode_(mode) {}

ObjectStore::~ObjectStore() { sqlite3_close_v2(db_); }

void ObjectStore::append_log(const std::string& op, const std::string& key, std::uint64_t token,
                             const std::string& outcome, std::uint64_t current_token, const std::string& value) {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch()).count();
  const nlohmann::json entry{{"seq", ++seq_}, {"time_us", micros}, {"op", op}, {"key", key}, {"token", token},
                             {"outcome", outcome}, {"current_token", current_token}, {"value", value}};
  log_ << entry.dump() << '\n' << std::flush;
}

Result<PutOutcome> ObjectStore::put(const std::string& key, const std::string& value, std::uint64_t token) {
  std::lock_guard<std::mutex> lock(mutex_);
  // A new key starts at token 0, so its first fenced write applies.
  sqlite3_stmt* insert = nullptr;
  sqlite3_prepare_v2(db_, "INSERT OR IGNORE INTO objects(key, value, current_token) VALUES(?1, '', 0)", -1, &insert, nullptr);
  sqlite3_bind_text(insert, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
  const int rc = sqlite3_step(insert);
  sqlite3_finalize(insert);
  if (rc != SQLITE_DONE) return failure(db_, "insert");

  if (mode_ == Mode::kUnfenced) {
    // What a store without fencing does: overwrite, whoever writes and whenever.
    sqlite3_stmt* update = nullptr;
    sqlite3_prepare_v2(db_, "UPDATE objects SET value = ?1 WHERE key = ?2", -1, &update, nullptr);
    sqlite3_bind_text(update, 1, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
    sqlite3_bind_text(update, 2, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
    const int urc = sqlite3_step(update);
    sqlite3_finalize(update);
    if (urc != SQLITE_DONE) return failure(db_, "update");
    append_log("write", key, token, "applied_unfenced", 0, value);
    return PutOutcome{true, 0};
  }
  const auto rule = mode_ == Mode::kSameToken ? fencelock::TokenRule::kNewerOrSame : fencelock::TokenRule::kStrictlyNewer;
  auto written = table_.update(key, "value = ?1", {value}, token, rule);
  if (!written.ok()) return std::move(written).error();
  const bool applied = written->outcome == fencelock::WriteOutcome::kApplied;
  append_log("write", key, token, applied ? "applied" : "rejected_stale", written->current_token, value);
  return PutOutcome{applied, written->current_token};
}

Result<std::optional<Object>> ObjectStore::get(const std::string& key, std::optional<std::uint64_t> token,
                                               PutOutcome& fence) {
  std::lock_guard<std::mutex> lock(mutex_);
  fence = PutOutcome{true, 0};
  if (token && mode_ != Mode::kUnfenced) {
    // A holder may read its row again; only an older token is refused (FencedTable's default).
    auto fenced = table_.fence_read(key, *token, fencelock::TokenRule::kNewerOrSame);
    if (!fenced.ok()) return std::move(fenced).error();
    if (fenced->outcome == fencelock::WriteOutcome::kNoSuchRow) return std::optional<Object>();
    fence = PutOutcome{fenced->outcome == fencelock::WriteOutcome::kApplied, fenced->current_token};
    append_log("fenced_read", key, *token, fence.applied ? "fenced" : "rejected_stale", fence.current_token, "");
    if (!fence.applied) return std::optional<Object>();
  }
  sqlite3_stmt* select = nullptr;
  sqlite3_prepare_v2(db_, "SELECT value, current_token FROM objects WHERE key = ?1", -1, &select, nullptr);
  sqlite3_bind_text(select, 1, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
  std::optional<Object> object;
  const int rc = sqlite3_step(select);
  if (rc == SQLITE_ROW) {
    object = Object{reinterpret_cast<const char*>(sqlite3_column_text(select, 0)),
                    static_cast<std::uint64_t>(sqlite3_column_int64(select, 1))};
  }
  sqlite3_finalize(select);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE) return failure(db_, "select");
  return object;
}

std::string ObjectStore::log_text() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace resource_store
