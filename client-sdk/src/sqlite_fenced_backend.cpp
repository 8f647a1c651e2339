// SqliteFencedBackend: FencedTable's statements for SQLite.
//
// Our own transaction is BEGIN IMMEDIATE: it takes the write lock up front, so the busy timeout
// applies at BEGIN and the UPDATE never has to upgrade a read snapshot (which WAL refuses when
// stale). SQLite never aborts a transaction to keep it serializable (it has one writer at a time),
// so nothing here is retried: a busy database is kUnavailable after the connection's busy timeout.
//
// The caller's assignments are spliced into the UPDATE's text, so we check that our fencing
// condition survived: the assignments alone form one statement with positional parameters only
// (no ';' ending it early, none of our reserved names), and in the whole statement our two
// parameters come right after the caller's (a comment or a string opened in the assignments
// would swallow them). The newline before our suffix ends any trailing "--" comment.
#include <sqlite3.h>

#include <map>
#include <utility>

#include "fenced_backend.h"

namespace fencelock {

namespace {

constexpr const char* kTokenParameter = ":fencelock_token";
constexpr const char* kKeyParameter = ":fencelock_key";
// Assignment strings are meant to be constants in the caller's code, so a handful are in use at a
// time; the bound only stops a caller who builds them dynamically from growing the cache forever.
constexpr std::size_t kMaxCachedUpdates = 64;

ErrorCode code_for(int rc) {
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return ErrorCode::kUnavailable;
    case SQLITE_CONSTRAINT:
    case SQLITE_TOOBIG:
    case SQLITE_MISMATCH:
    case SQLITE_RANGE:
      return ErrorCode::kInvalidArgument;  // the caller's values or assignments, not the SDK
    default:
      return ErrorCode::kInternal;
  }
}

// Reads sqlite3_errmsg at once: a later ROLLBACK would overwrite it.
Error sqlite_error(sqlite3* db, int rc, std::string_view doing) {
  return fenced_error(code_for(rc), std::string(doing) + ": " + sqlite3_errmsg(db));
}

std::string quoted(const std::string& identifier) {
  return "\"" + identifier + "\"";
}

struct StatementFinalizer {
  void operator()(sqlite3_stmt* statement) const noexcept { sqlite3_finalize(statement); }
};
using Statement = std::unique_ptr<sqlite3_stmt, StatementFinalizer>;

// Resets and unbinds a statement on every path out of a call, so the connection holds no open
// statement (COMMIT and schema changes need that) and no pointer to the caller's values.
class StatementReset {
 public:
  explicit StatementReset(sqlite3_stmt* statement) : statement_(statement) {}
  ~StatementReset() {
    sqlite3_reset(statement_);
    sqlite3_clear_bindings(statement_);
  }
  StatementReset(const StatementReset&) = delete;
  StatementReset& operator=(const StatementReset&) = delete;

 private:
  sqlite3_stmt* statement_;
};

int bind_value(sqlite3_stmt* statement, int index, const SqlValue& value) {
  // SQLITE_STATIC: the caller's values outlive the call, and StatementReset unbinds them.
  struct Binder {
    sqlite3_stmt* statement;
    int index;
    int operator()(std::nullptr_t) const { return sqlite3_bind_null(statement, index); }
    int operator()(std::int64_t v) const { return sqlite3_bind_int64(statement, index, v); }
    int operator()(double v) const { return sqlite3_bind_double(statement, index, v); }
    int operator()(const std::string& v) const {
      return sqlite3_bind_text64(statement, index, v.data(), v.size(), SQLITE_STATIC, SQLITE_UTF8);
    }
    int operator()(const std::vector<std::uint8_t>& v) const {
      // A null data pointer would bind NULL, and an empty vector may have one.
      if (v.empty()) return sqlite3_bind_zeroblob(statement, index, 0);
      return sqlite3_bind_blob64(statement, index, v.data(), v.size(), SQLITE_STATIC);
    }
  };
  return std::visit(Binder{statement, index}, value);
}

class SqliteFencedBackend final : public FencedBackend {
 public:
  SqliteFencedBackend(sqlite3* db, FencedNames names) : db_(db), names_(std::move(names)) {}

  Status open();

  bool in_transaction() override { return sqlite3_get_autocommit(db_) == 0; }
  Status begin() override { return step_fixed(begin_.get(), "BEGIN IMMEDIATE"); }
  Status commit() override { return step_fixed(commit_.get(), "COMMIT"); }
  void rollback() noexcept override {
    // Some errors (SQLITE_FULL, SQLITE_IOERR, ...) roll the transaction back by themselves.
    if (sqlite3_get_autocommit(db_) == 0)
      static_cast<void>(step_fixed(rollback_.get(), "ROLLBACK"));
  }
  bool is_serialization_failure(const Error&) const override { return false; }

  Result<bool> update(std::string_view key, std::string_view assignments,
                      const std::vector<SqlValue>& params, std::int64_t token,
                      TokenRule rule) override;
  Result<bool> fence(std::string_view key, std::int64_t token, TokenRule rule) override;
  Result<std::optional<std::int64_t>> read_token(std::string_view key) override;

 private:
  Result<Statement> prepare(const std::string& sql);
  Status step_fixed(sqlite3_stmt* statement, std::string_view doing);
  Result<sqlite3_stmt*> assignment_statement(std::string_view assignments, TokenRule rule,
                                             std::size_t param_count);
  Result<bool> run_guarded(sqlite3_stmt* statement, std::string_view key, std::int64_t token);
  Result<bool> insert_placeholder(std::string_view key, std::int64_t token);

  sqlite3* db_;
  FencedNames names_;
  Statement begin_;
  Statement commit_;
  Statement rollback_;
  Statement select_token_;
  Statement fence_strictly_newer_;
  Statement fence_newer_or_same_;
  Statement insert_placeholder_;  // null when the table cannot hold a placeholder row
  // Key: the rule ("<" or "<=") and a newline, followed by the assignments text.
  std::map<std::string, Statement, std::less<>> update_cache_;
};

Result<Statement> SqliteFencedBackend::prepare(const std::string& sql) {
  sqlite3_stmt* raw = nullptr;
  const char* tail = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &raw, &tail);
  Statement statement(raw);
  if (rc != SQLITE_OK) {
    // SQLITE_ERROR here means the SQL does not compile against this schema: the caller's to fix.
    const ErrorCode code = (rc & 0xff) == SQLITE_ERROR ? ErrorCode::kInvalidArgument : code_for(rc);
    return fenced_error(code,
                        std::string("cannot prepare \"") + sql + "\": " + sqlite3_errmsg(db_));
  }
  if (statement == nullptr || (tail != nullptr && !is_blank(tail))) {
    return fenced_error(ErrorCode::kInvalidArgument,
                        "not exactly one SQL statement: \"" + sql + "\"");
  }
  return statement;
}

Status SqliteFencedBackend::step_fixed(sqlite3_stmt* statement, std::string_view doing) {
  const StatementReset reset(statement);
  const int rc = sqlite3_step(statement);
  if (rc != SQLITE_DONE) return sqlite_error(db_, rc, doing);
  return Done{};
}

Status SqliteFencedBackend::open() {
  // Existence matters beyond a friendly message: SQLite reads a double-quoted name that matches
  // no column as a string literal, so a misspelt column would compile and silently match nothing.
  auto is_table = prepare("SELECT wr FROM pragma_table_list(?1) WHERE type = 'table'");
  if (!is_table.ok()) return std::move(is_table).error();
  bool without_rowid = false;
  {
    sqlite3_stmt* statement = is_table.value().get();
    const StatementReset reset(statement);
    sqlite3_bind_text(statement, 1, names_.table.c_str(), -1, SQLITE_STATIC);
    const int rc = sqlite3_step(statement);
    if (rc == SQLITE_DONE)
      return fenced_error(ErrorCode::kInvalidArgument, "no table named \"" + names_.table + "\"");
    if (rc != SQLITE_ROW) return sqlite_error(db_, rc, "reading the schema");
    without_rowid = sqlite3_column_int64(statement, 0) != 0;
  }

  auto columns = prepare(
      "SELECT name, pk, \"notnull\", dflt_value IS NOT NULL, upper(type) = 'INTEGER' FROM "
      "pragma_table_info(?1)");
  if (!columns.ok()) return std::move(columns).error();
  bool has_key = false;
  bool has_token = false;
  bool key_is_whole_primary_key = false;
  int primary_key_columns = 0;
  // Columns a placeholder row (key and token only) would leave without a value SQLite can fill:
  // NOT NULL without a default, or part of a primary key. An INTEGER PRIMARY KEY of a rowid
  // table is the exception (SQLite assigns it), checked once the primary key is known.
  int unfillable_columns = 0;
  bool integer_primary_key = false;
  {
    sqlite3_stmt* statement = columns.value().get();
    const StatementReset reset(statement);
    sqlite3_bind_text(statement, 1, names_.table.c_str(), -1, SQLITE_STATIC);
    int rc = SQLITE_ROW;
    while ((rc = sqlite3_step(statement)) == SQLITE_ROW) {
      const auto* text = sqlite3_column_text(statement, 0);
      const std::string_view name =
          text == nullptr ? std::string_view() : reinterpret_cast<const char*>(text);
      const auto pk = sqlite3_column_int64(statement, 1);
      const bool not_null = sqlite3_column_int64(statement, 2) != 0;
      const bool has_default = sqlite3_column_int64(statement, 3) != 0;
      if (pk > 0) ++primary_key_columns;
      // SQLite compares identifiers ASCII-case-insensitively.
      const bool is_key =
          sqlite3_stricmp(std::string(name).c_str(), names_.key_column.c_str()) == 0;
      const bool is_token =
          sqlite3_stricmp(std::string(name).c_str(), names_.token_column.c_str()) == 0;
      if (is_key) {
        has_key = true;
        key_is_whole_primary_key = pk == 1;
      }
      if (is_token) has_token = true;
      if (!is_key && !is_token) {
        if (pk > 0) {
          integer_primary_key = sqlite3_column_int64(statement, 4) != 0;
          ++unfillable_columns;
        } else if (not_null && !has_default) {
          ++unfillable_columns;
        }
      }
    }
    if (rc != SQLITE_DONE) return sqlite_error(db_, rc, "reading the columns of " + names_.table);
  }
  if (integer_primary_key && primary_key_columns == 1 && !without_rowid) --unfillable_columns;
  for (const auto& [found, name] :
       {std::pair{has_key, &names_.key_column}, std::pair{has_token, &names_.token_column}}) {
    if (!found) {
      return fenced_error(ErrorCode::kInvalidArgument,
                          "table \"" + names_.table + "\" has no column \"" + *name + "\"");
    }
  }

  // The outcome is about one row, so the key must pick at most one: the whole primary key (an
  // INTEGER PRIMARY KEY has no index to find), or a full single-column unique index.
  key_is_whole_primary_key = key_is_whole_primary_key && primary_key_columns == 1;
  if (!key_is_whole_primary_key) {
    auto unique = prepare(
        "SELECT count(*) FROM pragma_index_list(?1) AS il"
        " WHERE il.\"unique\" = 1 AND il.partial = 0"
        " AND (SELECT count(*) FROM pragma_index_info(il.name)) = 1"
        " AND (SELECT ii.name FROM pragma_index_info(il.name) AS ii) = ?2 COLLATE NOCASE");
    if (!unique.ok()) return std::move(unique).error();
    sqlite3_stmt* statement = unique.value().get();
    const StatementReset reset(statement);
    sqlite3_bind_text(statement, 1, names_.table.c_str(), -1, SQLITE_STATIC);
    sqlite3_bind_text(statement, 2, names_.key_column.c_str(), -1, SQLITE_STATIC);
    const int rc = sqlite3_step(statement);
    if (rc != SQLITE_ROW) return sqlite_error(db_, rc, "reading the indexes of " + names_.table);
    if (sqlite3_column_int64(statement, 0) == 0) {
      return fenced_error(
          ErrorCode::kInvalidArgument,
          "column \"" + names_.key_column + "\" is neither the primary key nor UNIQUE on its own");
    }
  }

  const std::string table_sql = quoted(names_.table);
  const std::string key_sql = quoted(names_.key_column);
  const std::string token_sql = quoted(names_.token_column);
  const auto fence_sql = [&](TokenRule rule) {
    return "UPDATE " + table_sql + " SET " + token_sql + " = " + kTokenParameter + " WHERE " +
           key_sql + " = " + kKeyParameter + " AND " + token_sql + comparison(rule) +
           kTokenParameter;
  };
  const std::pair<Statement*, std::string> statements[] = {
      {&begin_, "BEGIN IMMEDIATE"},
      {&commit_, "COMMIT"},
      {&rollback_, "ROLLBACK"},
      {&select_token_,
       "SELECT " + token_sql + " FROM " + table_sql + " WHERE " + key_sql + " = " + kKeyParameter},
      {&fence_strictly_newer_, fence_sql(TokenRule::kStrictlyNewer)},
      {&fence_newer_or_same_, fence_sql(TokenRule::kNewerOrSame)},
  };
  for (const auto& [slot, sql] : statements) {
    auto statement = prepare(sql);
    if (!statement.ok()) return std::move(statement).error();
    *slot = std::move(statement).value();
  }
  if (unfillable_columns == 0) {
    auto insert = prepare("INSERT INTO " + table_sql + "(" + key_sql + ", " + token_sql +
                          ") VALUES(" + kKeyParameter + ", " + kTokenParameter + ")");
    if (!insert.ok()) return std::move(insert).error();
    insert_placeholder_ = std::move(insert).value();
  }
  return Done{};
}

Result<sqlite3_stmt*> SqliteFencedBackend::assignment_statement(std::string_view assignments,
                                                                TokenRule rule,
                                                                std::size_t param_count) {
  std::string cache_key = update_cache_key(assignments, rule);
  auto cached = update_cache_.find(cache_key);
  if (cached == update_cache_.end()) {
    // First the assignments alone, never run: they must be one statement whose parameters are
    // all positional, which also keeps our reserved names out of them.
    auto alone = prepare("UPDATE " + quoted(names_.table) + " SET " + std::string(assignments));
    if (!alone.ok()) return std::move(alone).error();
    const int user_count = sqlite3_bind_parameter_count(alone.value().get());
    for (int i = 1; i <= user_count; ++i) {
      const char* name = sqlite3_bind_parameter_name(alone.value().get(), i);
      if (name != nullptr && name[0] != '?') {
        return fenced_error(ErrorCode::kInvalidArgument, std::string("named parameter ") + name +
                                                             " in assignments: use ?1, ?2, ...");
      }
    }

    const std::string token_sql = quoted(names_.token_column);
    auto prepared =
        prepare("UPDATE " + quoted(names_.table) + " SET " + std::string(assignments) + "\n, " +
                token_sql + " = " + kTokenParameter + " WHERE " + quoted(names_.key_column) +
                " = " + kKeyParameter + " AND " + token_sql + comparison(rule) + kTokenParameter);
    if (!prepared.ok()) return std::move(prepared).error();
    // Then the whole: our two parameters must follow the caller's, token then key, as in our
    // suffix; otherwise a comment or a quote in the assignments swallowed the condition.
    sqlite3_stmt* statement = prepared.value().get();
    if (sqlite3_bind_parameter_count(statement) != user_count + 2 ||
        sqlite3_bind_parameter_index(statement, kTokenParameter) != user_count + 1 ||
        sqlite3_bind_parameter_index(statement, kKeyParameter) != user_count + 2) {
      return fenced_error(ErrorCode::kInvalidArgument,
                          "assignments \"" + std::string(assignments) +
                              "\" hide the fencing condition (an open comment or quote?)");
    }
    if (update_cache_.size() >= kMaxCachedUpdates) update_cache_.clear();
    cached = update_cache_.emplace(std::move(cache_key), std::move(prepared).value()).first;
  }
  sqlite3_stmt* statement = cached->second.get();
  const auto expected = static_cast<std::size_t>(sqlite3_bind_parameter_count(statement) - 2);
  if (param_count != expected) {
    return fenced_error(ErrorCode::kInvalidArgument,
                        "assignments take " + std::to_string(expected) + " parameter(s) but " +
                            std::to_string(param_count) + " were given");
  }
  return statement;
}

Result<bool> SqliteFencedBackend::update(std::string_view key, std::string_view assignments,
                                         const std::vector<SqlValue>& params, std::int64_t token,
                                         TokenRule rule) {
  auto statement = assignment_statement(assignments, rule, params.size());
  if (!statement.ok()) return std::move(statement).error();
  sqlite3_stmt* update = statement.value();
  const StatementReset reset(update);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const int rc = bind_value(update, static_cast<int>(i + 1), params[i]);
    if (rc != SQLITE_OK)
      return sqlite_error(db_, rc, "binding parameter ?" + std::to_string(i + 1));
  }
  return run_guarded(update, key, token);
}

Result<bool> SqliteFencedBackend::fence(std::string_view key, std::int64_t token, TokenRule rule) {
  sqlite3_stmt* fence =
      rule == TokenRule::kStrictlyNewer ? fence_strictly_newer_.get() : fence_newer_or_same_.get();
  const StatementReset reset(fence);
  auto changed = run_guarded(fence, key, token);
  if (!changed.ok() || changed.value() || insert_placeholder_ == nullptr) return changed;
  // In the same transaction as the UPDATE that changed nothing, so no other writer can create the
  // row in between: the INSERT either adds the placeholder or fails on a constraint.
  auto stored = read_token(key);
  if (!stored.ok()) return std::move(stored).error();
  if (stored.value().has_value()) return false;
  return insert_placeholder(key, token);
}

Result<bool> SqliteFencedBackend::run_guarded(sqlite3_stmt* statement, std::string_view key,
                                              std::int64_t token) {
  const int token_index = sqlite3_bind_parameter_index(statement, kTokenParameter);
  const int key_index = sqlite3_bind_parameter_index(statement, kKeyParameter);
  sqlite3_bind_int64(statement, token_index, token);
  int rc =
      sqlite3_bind_text64(statement, key_index, key.data(), key.size(), SQLITE_STATIC, SQLITE_UTF8);
  if (rc != SQLITE_OK) return sqlite_error(db_, rc, "binding the key");

  rc = sqlite3_step(statement);
  // Rows changed by the UPDATE itself; rows that triggers touch are not counted.
  const int changed = sqlite3_changes(db_);
  auto failure = rc == SQLITE_DONE ? std::optional<Error>()
                                   : sqlite_error(db_, rc, "guarded UPDATE of " + names_.table);
  sqlite3_reset(statement);  // before COMMIT or ROLLBACK; the caller's guard unbinds it later
  if (failure) return *std::move(failure);
  if (changed > 1) {
    return fenced_error(ErrorCode::kInternal,
                        "guarded UPDATE changed " + std::to_string(changed) + " rows");
  }
  return changed == 1;
}

Result<bool> SqliteFencedBackend::insert_placeholder(std::string_view key, std::int64_t token) {
  sqlite3_stmt* insert = insert_placeholder_.get();
  const StatementReset reset(insert);
  sqlite3_bind_int64(insert, sqlite3_bind_parameter_index(insert, kTokenParameter), token);
  int rc = sqlite3_bind_text64(insert, sqlite3_bind_parameter_index(insert, kKeyParameter),
                               key.data(), key.size(), SQLITE_STATIC, SQLITE_UTF8);
  if (rc != SQLITE_OK) return sqlite_error(db_, rc, "binding the key");
  rc = sqlite3_step(insert);
  if (rc != SQLITE_DONE)
    return sqlite_error(db_, rc, "inserting a placeholder row into " + names_.table);
  return true;
}

Result<std::optional<std::int64_t>> SqliteFencedBackend::read_token(std::string_view key) {
  sqlite3_stmt* select = select_token_.get();
  const StatementReset reset(select);
  int rc = sqlite3_bind_text64(select, 1, key.data(), key.size(), SQLITE_STATIC, SQLITE_UTF8);
  if (rc != SQLITE_OK) return sqlite_error(db_, rc, "binding the key");
  rc = sqlite3_step(select);
  if (rc == SQLITE_DONE) return std::optional<std::int64_t>();
  if (rc != SQLITE_ROW)
    return sqlite_error(db_, rc, "reading the token of a row of " + names_.table);
  // The type first: reading the value may convert it.
  const bool is_integer = sqlite3_column_type(select, 0) == SQLITE_INTEGER;
  const std::int64_t stored = sqlite3_column_int64(select, 0);
  if (!is_integer || stored < 0) {
    return fenced_error(ErrorCode::kInternal, "row token in " + names_.table + "." +
                                                  names_.token_column +
                                                  " is not a non-negative INTEGER");
  }
  return std::optional<std::int64_t>(stored);
}

}  // namespace

Result<std::unique_ptr<FencedBackend>> open_sqlite_backend(sqlite3* db, FencedNames names) {
  auto backend = std::make_unique<SqliteFencedBackend>(db, std::move(names));
  const Status opened = backend->open();
  if (!opened.ok()) return opened.error();
  return std::unique_ptr<FencedBackend>(std::move(backend));
}

}  // namespace fencelock
