// FencedTable: the contract both databases share, over a FencedBackend that runs one database's
// statements (fenced_backend.h).
//
// Safety comes from the backend's single guarded statement alone: the database runs it
// atomically, so the token comparison and the write cannot be separated by another writer. What
// this file adds is the honest report. When the statement changed nothing, one read tells a stale
// token (the row carries a newer one) from a missing row, and both run in one transaction so the
// row cannot appear or move in between. A row whose token the rule admits although the statement
// changed nothing means something outside our statement interfered (a trigger): kInternal, never a
// guess.
//
// PostgreSQL at REPEATABLE READ or SERIALIZABLE aborts a transaction whose row another one changed
// since its snapshot (SQLSTATE 40001). That abort is the database keeping the guarded statement
// safe, not a failure of the write's logic, so a call in our own transaction is simply run again
// — a bounded number of times, with a short random pause so racing writers spread out.
#include "fencelock/fenced_table.h"

#include <chrono>
#include <limits>
#include <random>
#include <thread>
#include <utility>

#include "fenced_backend.h"

namespace fencelock {

namespace {

constexpr std::uint64_t kMaxToken =
    static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
constexpr auto kMaxRetryPause = std::chrono::milliseconds(20);

bool is_identifier(std::string_view name) {
  const auto letter = [](char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
  };
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (name.empty() || !letter(name.front())) return false;
  for (const char c : name) {
    if (!letter(c) && !digit(c)) return false;
  }
  return true;
}

// ASCII case-insensitively: SQLite compares identifiers so, and a PostgreSQL table with two
// columns differing only in case is too confusing to guard.
bool same_identifier(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  const auto lower = [](char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  };
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

Result<FencedNames> checked_names(std::string table, std::string key_column,
                                  std::string token_column) {
  for (const std::string* name : {&table, &key_column, &token_column}) {
    if (!is_identifier(*name)) {
      return fenced_error(
          ErrorCode::kInvalidArgument,
          "\"" + *name + "\" is not an identifier of the form [A-Za-z_][A-Za-z0-9_]*");
    }
  }
  if (same_identifier(key_column, token_column)) {
    return fenced_error(ErrorCode::kInvalidArgument,
                        "the key and token columns are both \"" + key_column + "\"");
  }
  return FencedNames{std::move(table), std::move(key_column), std::move(token_column)};
}

Result<std::int64_t> checked_token(std::uint64_t token) {
  if (token > kMaxToken) {
    return fenced_error(ErrorCode::kInvalidArgument,
                        "token " + std::to_string(token) +
                            " is above INT64_MAX (tokens are stored as signed 64-bit integers)");
  }
  return static_cast<std::int64_t>(token);
}

bool rule_allows(TokenRule rule, std::int64_t stored, std::int64_t token) {
  return rule == TokenRule::kStrictlyNewer ? stored < token : stored <= token;
}

void pause_before_retry(int attempt) {
  thread_local std::minstd_rand random(std::random_device{}());
  const auto limit = std::min<std::int64_t>(kMaxRetryPause.count() * 1000, 500LL << attempt);
  std::uniform_int_distribution<std::int64_t> micros(0, limit);
  std::this_thread::sleep_for(std::chrono::microseconds(micros(random)));
}

}  // namespace

Error fenced_error(ErrorCode code, std::string message) {
  Error error;
  error.code = code;
  error.message = std::move(message);
  return error;
}

bool is_blank(std::string_view text) {
  return text.find_first_not_of(" \t\r\n\f\v") == std::string_view::npos;
}

const char* comparison(TokenRule rule) {
  return rule == TokenRule::kStrictlyNewer ? " < " : " <= ";
}

std::string update_cache_key(std::string_view assignments, TokenRule rule) {
  std::string key = rule == TokenRule::kStrictlyNewer ? "<" : "<=";
  key += '\n';
  key += assignments;
  return key;
}

FencedTable::FencedTable(std::unique_ptr<FencedBackend> backend) : backend_(std::move(backend)) {}
FencedTable::FencedTable(FencedTable&&) noexcept = default;
FencedTable& FencedTable::operator=(FencedTable&&) noexcept = default;
FencedTable::~FencedTable() = default;

Result<FencedTable> FencedTable::open(sqlite3* db, std::string table, std::string key_column,
                                      std::string token_column) {
  if (db == nullptr) return fenced_error(ErrorCode::kInvalidArgument, "no database connection");
  auto names = checked_names(std::move(table), std::move(key_column), std::move(token_column));
  if (!names.ok()) return std::move(names).error();
  auto backend = open_sqlite_backend(db, std::move(names).value());
  if (!backend.ok()) return std::move(backend).error();
  return FencedTable(std::move(backend).value());
}

Result<FencedTable> FencedTable::open(pg_conn* connection, std::string table,
                                      std::string key_column, std::string token_column) {
  if (connection == nullptr)
    return fenced_error(ErrorCode::kInvalidArgument, "no database connection");
  auto names = checked_names(std::move(table), std::move(key_column), std::move(token_column));
  if (!names.ok()) return std::move(names).error();
  auto backend = open_postgres_backend(connection, false, std::move(names).value());
  if (!backend.ok()) return std::move(backend).error();
  return FencedTable(std::move(backend).value());
}

Result<FencedTable> FencedTable::connect(std::string_view connection_string, std::string table,
                                         std::string key_column, std::string token_column) {
  auto names = checked_names(std::move(table), std::move(key_column), std::move(token_column));
  if (!names.ok()) return std::move(names).error();
  auto backend = connect_postgres_backend(connection_string, std::move(names).value());
  if (!backend.ok()) return std::move(backend).error();
  return FencedTable(std::move(backend).value());
}

Result<WriteResult> FencedTable::update(std::string_view key, std::string_view assignments,
                                        const std::vector<SqlValue>& params, std::uint64_t token,
                                        TokenRule rule, Commit commit) {
  return guarded(key, token, rule, commit, [&](std::int64_t signed_token) -> Result<bool> {
    if (is_blank(assignments)) {
      return fenced_error(ErrorCode::kInvalidArgument,
                          "no assignments: use fence_read() to move only the token");
    }
    return backend_->update(key, assignments, params, signed_token, rule);
  });
}

Result<WriteResult> FencedTable::fence_read(std::string_view key, std::uint64_t token,
                                            TokenRule rule, Commit commit) {
  return guarded(key, token, rule, commit, [&](std::int64_t signed_token) {
    return backend_->fence(key, signed_token, rule);
  });
}

Result<std::optional<std::uint64_t>> FencedTable::current_token(std::string_view key) {
  auto stored = backend_->read_token(key);
  if (!stored.ok()) return std::move(stored).error();
  if (!stored.value().has_value()) return std::optional<std::uint64_t>();
  return std::optional<std::uint64_t>(static_cast<std::uint64_t>(*stored.value()));
}

Result<WriteResult> FencedTable::guarded(std::string_view key, std::uint64_t token, TokenRule rule,
                                         Commit commit,
                                         const std::function<Result<bool>(std::int64_t)>& step) {
  auto signed_token = checked_token(token);
  if (!signed_token.ok()) return std::move(signed_token).error();
  if (backend_->in_transaction()) {
    // Joined silently, the write would be reported kApplied and then depend on a COMMIT nobody
    // may run: the caller must say the transaction is theirs.
    if (commit != Commit::kByCaller) {
      return fenced_error(ErrorCode::kInvalidArgument,
                          "a transaction is open on this connection and this call would not "
                          "commit it, so a write reported applied could still be lost: COMMIT or "
                          "ROLLBACK before the guarded call, or pass Commit::kByCaller and "
                          "commit the transaction yourself");
    }
    // The statement joins it: its snapshot and locks are the caller's, and an abort ends the
    // caller's transaction, which only the caller can run again.
    return classify(key, signed_token.value(), rule, step);
  }

  for (int attempt = 1;; ++attempt) {
    auto result = Result<WriteResult>(fenced_error(ErrorCode::kInternal, "not run"));
    const Status begun = backend_->begin();
    if (begun.ok()) {
      result = classify(key, signed_token.value(), rule, step);
      if (result.ok()) {
        const Status committed = backend_->commit();
        if (!committed.ok()) result = committed.error();
      }
      if (!result.ok()) backend_->rollback();
    } else {
      result = begun.error();
    }
    if (result.ok() || !backend_->is_serialization_failure(result.error())) return result;
    if (attempt == kMaxSerializationAttempts) {
      Error error = std::move(result).error();
      error.message = "aborted to keep transactions serializable " +
                      std::to_string(kMaxSerializationAttempts) +
                      " times in a row; nothing was written: " + error.message;
      return error;
    }
    pause_before_retry(attempt);
  }
}

Result<WriteResult> FencedTable::classify(std::string_view key, std::int64_t token, TokenRule rule,
                                          const std::function<Result<bool>(std::int64_t)>& step) {
  auto changed = step(token);
  if (!changed.ok()) return std::move(changed).error();
  if (changed.value())
    return WriteResult{WriteOutcome::kApplied, static_cast<std::uint64_t>(token)};

  auto stored = backend_->read_token(key);
  if (!stored.ok()) return std::move(stored).error();
  if (!stored.value().has_value()) return WriteResult{WriteOutcome::kNoSuchRow, 0};
  const std::int64_t winner = *stored.value();
  if (rule_allows(rule, winner, token)) {
    return fenced_error(ErrorCode::kInternal, "row token " + std::to_string(winner) +
                                                  " admits token " + std::to_string(token) +
                                                  " yet the guarded statement changed nothing "
                                                  "(a trigger?)");
  }
  return WriteResult{WriteOutcome::kStale, static_cast<std::uint64_t>(winner)};
}

}  // namespace fencelock
