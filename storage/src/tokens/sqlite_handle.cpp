#include "tokens/sqlite_handle.h"

namespace fencelock::storage {

SqliteStatement& SqliteStatement::bind(int index, std::int64_t value) {
  sqlite3_bind_int64(statement_.get(), index, value);
  return *this;
}

SqliteStatement& SqliteStatement::bind(int index, std::string_view text) {
  sqlite3_bind_text(statement_.get(), index, text.data(), static_cast<int>(text.size()),
                    SQLITE_TRANSIENT);
  return *this;
}

int SqliteStatement::step() {
  return sqlite3_step(statement_.get());
}

void SqliteStatement::reset() {
  sqlite3_reset(statement_.get());
  sqlite3_clear_bindings(statement_.get());
}

std::int64_t SqliteStatement::column_int64(int index) const {
  return sqlite3_column_int64(statement_.get(), index);
}

std::string SqliteStatement::column_text(int index) const {
  const auto* text = sqlite3_column_text(statement_.get(), index);
  if (text == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(text),
                     static_cast<std::size_t>(sqlite3_column_bytes(statement_.get(), index)));
}

Result<SqliteDatabase> SqliteDatabase::open(const std::filesystem::path& path) {
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  SqliteDatabase db(raw);  // owns the handle even when opening failed
  if (rc != SQLITE_OK) {
    return make_error(
        ErrorCode::kUnavailable,
        "cannot open " + path.string() + ": " + (raw ? sqlite3_errmsg(raw) : sqlite3_errstr(rc)));
  }
  return db;
}

Status SqliteDatabase::exec(const char* sql) {
  char* message = nullptr;
  const int rc = sqlite3_exec(db_.get(), sql, nullptr, nullptr, &message);
  if (rc == SQLITE_OK) return Done{};
  std::string text = message != nullptr ? message : sqlite3_errstr(rc);
  sqlite3_free(message);
  return make_error(ErrorCode::kInternal, std::string(sql).substr(0, 40) + ": " + text);
}

Result<SqliteStatement> SqliteDatabase::prepare(const char* sql) {
  sqlite3_stmt* statement = nullptr;
  if (sqlite3_prepare_v2(db_.get(), sql, -1, &statement, nullptr) != SQLITE_OK) {
    return make_error(ErrorCode::kInternal, std::string("prepare: ") + sqlite3_errmsg(db_.get()));
  }
  return SqliteStatement(statement);
}

std::string SqliteDatabase::last_error() const {
  return sqlite3_errmsg(db_.get());
}

}  // namespace fencelock::storage
