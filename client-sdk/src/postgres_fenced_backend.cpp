// PostgresFencedBackend: FencedTable's statements for PostgreSQL, through libpq.
//
// Every statement that touches rows is prepared once with PQprepare under a name of its own and
// run with PQexecPrepared; values travel as parameters, never in the SQL text, and the three names
// are quoted with PQescapeIdentifier when the statements are prepared. Parameters are prepared
// without types, so PostgreSQL infers each from its place in the statement: the key takes the key
// column's type, the token bigint (checked at open), the caller's values whatever their
// assignments give them.
//
// A fenced read is one INSERT ... ON CONFLICT DO UPDATE: PostgreSQL either inserts the placeholder
// or, atomically, locks the existing row and moves its token if the rule allows — so two fenced
// reads of a missing key cannot both insert, at any isolation level. (SQLite gets the same from
// its single writer.) The guarded UPDATE relies on PostgreSQL's row locks: at READ COMMITTED a
// writer blocked behind another re-checks `token < $t` against the version that committed; at
// REPEATABLE READ and SERIALIZABLE it is aborted with 40001, which FencedTable retries.
//
// The caller's assignments are spliced into the UPDATE's text, so, as for SQLite, we check that
// our fencing condition survived: PQprepare accepts exactly one statement, and the whole statement
// must take exactly two parameters more than the assignments alone ($N+1 the token, $N+2 the key)
// — a comment or a quote opened in the assignments would swallow them.
#include <libpq-fe.h>

#include <atomic>
#include <charconv>
#include <cmath>
#include <map>
#include <utility>

#include "fenced_backend.h"

namespace fencelock {

namespace {

constexpr std::size_t kMaxCachedUpdates = 64;  // as for SQLite: assignments are code constants
constexpr const char* kDefaultConnectTimeoutSeconds = "10";

struct ResultClear {
  void operator()(PGresult* result) const noexcept { PQclear(result); }
};
using PgResult = std::unique_ptr<PGresult, ResultClear>;

std::string sqlstate_of(const PGresult* result) {
  const char* state = result == nullptr ? nullptr : PQresultErrorField(result, PG_DIAG_SQLSTATE);
  return state == nullptr ? std::string() : std::string(state);
}

bool is_serialization_state(std::string_view state) {
  return state == "40001" || state == "40P01";  // serialization_failure, deadlock_detected
}

ErrorCode code_for(std::string_view state) {
  if (state.empty()) return ErrorCode::kUnavailable;  // no answer: the connection is gone
  const std::string_view klass = state.substr(0, 2);
  if (klass == "40" || klass == "08" || klass == "53" || klass == "57" || state == "55P03")
    return ErrorCode::kUnavailable;  // aborted, disconnected, out of resources, shut down, locked
  if (klass == "22" || klass == "23" || klass == "42" || klass == "25")
    return ErrorCode::kInvalidArgument;  // the caller's values, assignments or transaction state
  return ErrorCode::kInternal;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::string to_text(std::int64_t value) {
  return std::to_string(value);
}

std::string to_text(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  char buffer[64];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return ec == std::errc() ? std::string(buffer, end) : std::to_string(value);
}

// One PQexecPrepared / PQexecParams call's parameters, kept alive together.
class Parameters {
 public:
  void add_text(std::string value) {
    texts_.push_back(std::move(value));
    binary_.push_back(0);
    is_null_.push_back(false);
  }
  void add_bytes(const std::vector<std::uint8_t>& value) {
    texts_.emplace_back(value.begin(), value.end());
    binary_.push_back(1);
    is_null_.push_back(false);
  }
  void add_null() {
    texts_.emplace_back();
    binary_.push_back(0);
    is_null_.push_back(true);
  }
  // Text parameters are C strings to libpq: one holding NUL would be cut short.
  bool text_holds_nul() const {
    for (std::size_t i = 0; i < texts_.size(); ++i) {
      if (binary_[i] == 0 && texts_[i].find('\0') != std::string::npos) return true;
    }
    return false;
  }
  int count() const { return static_cast<int>(texts_.size()); }
  const char* const* values() {
    values_.clear();
    lengths_.clear();
    for (std::size_t i = 0; i < texts_.size(); ++i) {
      values_.push_back(is_null_[i] ? nullptr : texts_[i].c_str());
      lengths_.push_back(static_cast<int>(texts_[i].size()));
    }
    return values_.data();
  }
  const int* lengths() const { return lengths_.data(); }
  const int* formats() const { return binary_.data(); }

 private:
  std::vector<std::string> texts_;
  std::vector<int> binary_;
  std::vector<bool> is_null_;
  std::vector<const char*> values_;
  std::vector<int> lengths_;
};

class PostgresFencedBackend final : public FencedBackend {
 public:
  PostgresFencedBackend(PGconn* connection, bool owned, FencedNames names)
      : connection_(connection), owned_(owned), names_(std::move(names)) {
    static std::atomic<std::uint64_t> next_id{0};
    prefix_ = "fencelock_fenced_" + std::to_string(next_id.fetch_add(1)) + "_";
  }
  ~PostgresFencedBackend() override;
  PostgresFencedBackend(const PostgresFencedBackend&) = delete;
  PostgresFencedBackend& operator=(const PostgresFencedBackend&) = delete;

  Status open();

  bool in_transaction() override {
    const auto status = PQtransactionStatus(connection_);
    return status == PQTRANS_INTRANS || status == PQTRANS_INERROR;
  }
  Status begin() override { return exec_control("BEGIN"); }
  Status commit() override { return exec_control("COMMIT"); }
  void rollback() noexcept override {
    if (PQtransactionStatus(connection_) != PQTRANS_IDLE) {
      const PgResult ignored(PQexec(connection_, "ROLLBACK"));
    }
  }
  bool is_serialization_failure(const Error&) const override {
    return is_serialization_state(last_sqlstate_);
  }

  Result<bool> update(std::string_view key, std::string_view assignments,
                      const std::vector<SqlValue>& params, std::int64_t token,
                      TokenRule rule) override;
  Result<bool> fence(std::string_view key, std::int64_t token, TokenRule rule) override;
  Result<std::optional<std::int64_t>> read_token(std::string_view key) override;

 private:
  struct CachedUpdate {
    std::string name;
    std::size_t param_count = 0;
  };

  Error failure(const PGresult* result, std::string_view doing);
  Result<std::string> quoted(const std::string& identifier);
  Status prepare(const std::string& name, const std::string& sql);
  Result<PgResult> run(const std::string& name, Parameters& parameters, std::string_view doing);
  Result<PgResult> query(const std::string& sql, Parameters& parameters, std::string_view doing);
  Result<PgResult> checked(PGresult* raw, std::string_view doing);
  Status exec_control(const char* sql);
  Result<bool> changed_one(const PGresult* result);
  Result<const CachedUpdate*> assignment_statement(std::string_view assignments, TokenRule rule,
                                                   std::size_t param_count);
  void deallocate(const std::string& name) noexcept;

  PGconn* connection_;
  bool owned_;
  FencedNames names_;
  std::string prefix_;
  std::string last_sqlstate_;
  std::string table_sql_;
  std::string key_sql_;
  std::string token_sql_;
  std::vector<std::string> fixed_statements_;
  std::uint64_t next_update_ = 0;
  std::map<std::string, CachedUpdate, std::less<>> update_cache_;
};

PostgresFencedBackend::~PostgresFencedBackend() {
  if (owned_) {
    PQfinish(connection_);  // the server drops the session's statements with it
    return;
  }
  // A borrowed connection lives on: leave it as we found it. In a failed transaction nothing but
  // ROLLBACK runs; the statements then stay until the session ends (their names are never reused).
  for (const auto& name : fixed_statements_) deallocate(name);
  for (const auto& [key, cached] : update_cache_) deallocate(cached.name);
}

void PostgresFencedBackend::deallocate(const std::string& name) noexcept {
  if (PQstatus(connection_) != CONNECTION_OK ||
      PQtransactionStatus(connection_) == PQTRANS_INERROR) {
    return;
  }
  // Our own names ([a-z0-9_]), quoted all the same.
  const PgResult ignored(PQexec(connection_, ("DEALLOCATE \"" + name + "\"").c_str()));
}

Error PostgresFencedBackend::failure(const PGresult* result, std::string_view doing) {
  last_sqlstate_ = sqlstate_of(result);
  std::string message = trimmed(result != nullptr ? PQresultErrorMessage(result) : "");
  if (message.empty()) message = trimmed(PQerrorMessage(connection_));
  if (!last_sqlstate_.empty()) message += " (SQLSTATE " + last_sqlstate_ + ")";
  return fenced_error(code_for(last_sqlstate_), std::string(doing) + ": " + message);
}

Result<std::string> PostgresFencedBackend::quoted(const std::string& identifier) {
  char* escaped = PQescapeIdentifier(connection_, identifier.data(), identifier.size());
  if (escaped == nullptr) return failure(nullptr, "quoting \"" + identifier + "\"");
  std::string text(escaped);
  PQfreemem(escaped);
  return text;
}

Result<PgResult> PostgresFencedBackend::checked(PGresult* raw, std::string_view doing) {
  PgResult result(raw);
  const auto status = result == nullptr ? PGRES_FATAL_ERROR : PQresultStatus(result.get());
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) return failure(result.get(), doing);
  last_sqlstate_.clear();
  return result;
}

Status PostgresFencedBackend::prepare(const std::string& name, const std::string& sql) {
  auto result = checked(PQprepare(connection_, name.c_str(), sql.c_str(), 0, nullptr),
                        "cannot prepare \"" + sql + "\"");
  if (!result.ok()) return std::move(result).error();
  return Done{};
}

Result<PgResult> PostgresFencedBackend::run(const std::string& name, Parameters& parameters,
                                            std::string_view doing) {
  if (parameters.text_holds_nul()) {
    return fenced_error(ErrorCode::kInvalidArgument,
                        std::string(doing) + ": a text value or key holds a NUL character");
  }
  const char* const* values = parameters.values();
  return checked(PQexecPrepared(connection_, name.c_str(), parameters.count(), values,
                                parameters.lengths(), parameters.formats(), 0),
                 doing);
}

Result<PgResult> PostgresFencedBackend::query(const std::string& sql, Parameters& parameters,
                                              std::string_view doing) {
  const char* const* values = parameters.values();
  return checked(PQexecParams(connection_, sql.c_str(), parameters.count(), nullptr, values,
                              parameters.lengths(), parameters.formats(), 0),
                 doing);
}

Status PostgresFencedBackend::exec_control(const char* sql) {
  auto result = checked(PQexec(connection_, sql), sql);
  if (!result.ok()) return std::move(result).error();
  return Done{};
}

Result<bool> PostgresFencedBackend::changed_one(const PGresult* result) {
  const std::string_view count = PQcmdTuples(const_cast<PGresult*>(result));
  if (count == "1") return true;
  if (count == "0") return false;
  return fenced_error(ErrorCode::kInternal, "guarded statement on " + names_.table + " changed " +
                                                std::string(count) + " rows");
}

Status PostgresFencedBackend::open() {
  if (PQstatus(connection_) != CONNECTION_OK) {
    return fenced_error(ErrorCode::kInvalidArgument, "the PostgreSQL connection is not open: " +
                                                         trimmed(PQerrorMessage(connection_)));
  }
  for (auto [name, sql] :
       {std::pair{&names_.table, &table_sql_}, std::pair{&names_.key_column, &key_sql_},
        std::pair{&names_.token_column, &token_sql_}}) {
    auto escaped = quoted(*name);
    if (!escaped.ok()) return std::move(escaped).error();
    *sql = std::move(escaped).value();
  }

  // The table, through the search_path, by its quoted (exact) name: an ordinary or partitioned
  // table, not a view, whose UPDATE could do anything.
  Parameters table_name;
  table_name.add_text(table_sql_);
  auto table = query(
      "SELECT c.oid::pg_catalog.text, c.relkind::pg_catalog.text FROM pg_catalog.pg_class c"
      " WHERE c.oid = pg_catalog.to_regclass($1)",
      table_name, "reading the schema");
  if (!table.ok()) return std::move(table).error();
  if (PQntuples(table->get()) != 1 || (std::string_view(PQgetvalue(table->get(), 0, 1)) != "r" &&
                                       std::string_view(PQgetvalue(table->get(), 0, 1)) != "p")) {
    return fenced_error(ErrorCode::kInvalidArgument,
                        "no table named \"" + names_.table +
                            "\" (names are matched exactly: unquoted names are stored in lower "
                            "case)");
  }
  const std::string oid = PQgetvalue(table->get(), 0, 0);

  // Columns a placeholder row (key and token only) would leave without a value PostgreSQL can
  // fill: NOT NULL with no default, identity or generated value.
  Parameters of_table;
  of_table.add_text(oid);
  auto columns = query(
      "SELECT a.attname, a.attnum::pg_catalog.text,"
      " (a.atttypid = 'pg_catalog.int8'::pg_catalog.regtype)::pg_catalog.text,"
      " pg_catalog.format_type(a.atttypid, a.atttypmod),"
      " (a.attnotnull AND NOT a.atthasdef AND a.attidentity = '' AND a.attgenerated = '')"
      "::pg_catalog.text"
      " FROM pg_catalog.pg_attribute a"
      " WHERE a.attrelid = $1::pg_catalog.oid AND a.attnum > 0 AND NOT a.attisdropped",
      of_table, "reading the columns of " + names_.table);
  if (!columns.ok()) return std::move(columns).error();
  std::string key_attnum;
  std::optional<std::string> token_type;
  int unfillable_columns = 0;
  for (int row = 0; row < PQntuples(columns->get()); ++row) {
    const std::string_view name = PQgetvalue(columns->get(), row, 0);
    if (name == names_.key_column) {
      key_attnum = PQgetvalue(columns->get(), row, 1);
    } else if (name == names_.token_column) {
      token_type = std::string_view(PQgetvalue(columns->get(), row, 2)) == "true"
                       ? std::string("bigint")
                       : std::string(PQgetvalue(columns->get(), row, 3));
    } else if (std::string_view(PQgetvalue(columns->get(), row, 4)) == "true") {
      ++unfillable_columns;
    }
  }
  for (const auto& [found, name] : {std::pair{!key_attnum.empty(), &names_.key_column},
                                    std::pair{token_type.has_value(), &names_.token_column}}) {
    if (!found) {
      return fenced_error(ErrorCode::kInvalidArgument,
                          "table \"" + names_.table + "\" has no column \"" + *name + "\"");
    }
  }
  if (*token_type != "bigint") {
    return fenced_error(ErrorCode::kInvalidArgument,
                        "token column \"" + names_.token_column + "\" of table \"" + names_.table +
                            "\" is " + *token_type +
                            ", not bigint: fencing tokens are 64-bit integers");
  }

  // The outcome is about one row, and ON CONFLICT needs an arbiter: a valid, immediate unique
  // index on the key column alone (a PRIMARY KEY or UNIQUE constraint has one).
  Parameters of_key;
  of_key.add_text(oid);
  of_key.add_text(key_attnum);
  auto unique = query(
      "SELECT count(*) FROM pg_catalog.pg_index i WHERE i.indrelid = $1::pg_catalog.oid"
      " AND i.indisunique AND i.indimmediate AND i.indisvalid AND i.indpred IS NULL"
      " AND i.indexprs IS NULL AND i.indnkeyatts = 1 AND i.indkey[0] = $2::pg_catalog.int2",
      of_key, "reading the indexes of " + names_.table);
  if (!unique.ok()) return std::move(unique).error();
  if (std::string_view(PQgetvalue(unique->get(), 0, 0)) == "0") {
    return fenced_error(
        ErrorCode::kInvalidArgument,
        "column \"" + names_.key_column + "\" is neither the primary key nor UNIQUE on its own");
  }

  const auto fence_sql = [&](TokenRule rule) {
    if (unfillable_columns > 0) {
      return "UPDATE " + table_sql_ + " SET " + token_sql_ + " = $2 WHERE " + key_sql_ +
             " = $1 AND " + token_sql_ + comparison(rule) + "$2";
    }
    return "INSERT INTO " + table_sql_ + " AS fenced (" + key_sql_ + ", " + token_sql_ +
           ") VALUES ($1, $2) ON CONFLICT (" + key_sql_ + ") DO UPDATE SET " + token_sql_ +
           " = GREATEST(fenced." + token_sql_ + ", EXCLUDED." + token_sql_ + ") WHERE fenced." +
           token_sql_ + comparison(rule) + "EXCLUDED." + token_sql_;
  };
  const std::pair<std::string, std::string> statements[] = {
      {prefix_ + "select_token", "SELECT " + token_sql_ + "::pg_catalog.text FROM " + table_sql_ +
                                     " WHERE " + key_sql_ + " = $1"},
      {prefix_ + "fence_lt", fence_sql(TokenRule::kStrictlyNewer)},
      {prefix_ + "fence_le", fence_sql(TokenRule::kNewerOrSame)},
  };
  for (const auto& [name, sql] : statements) {
    Status prepared = prepare(name, sql);
    if (!prepared.ok()) return prepared;
    fixed_statements_.push_back(name);
  }
  return Done{};
}

Result<const PostgresFencedBackend::CachedUpdate*> PostgresFencedBackend::assignment_statement(
    std::string_view assignments, TokenRule rule, std::size_t param_count) {
  std::string cache_key = update_cache_key(assignments, rule);
  auto cached = update_cache_.find(cache_key);
  if (cached == update_cache_.end()) {
    // First the assignments alone, prepared unnamed and never run: how many parameters they take.
    const std::string alone = "UPDATE " + table_sql_ + " SET " + std::string(assignments);
    const Status checked_alone = prepare("", alone);
    if (!checked_alone.ok()) return checked_alone.error();
    auto described = checked(PQdescribePrepared(connection_, ""), "describing the assignments");
    if (!described.ok()) return std::move(described).error();
    const int user_count = PQnparams(described->get());

    const std::string token = "$" + std::to_string(user_count + 1);
    const std::string key = "$" + std::to_string(user_count + 2);
    const std::string name = prefix_ + "update_" + std::to_string(next_update_++);
    const Status prepared =
        prepare(name, alone + "\n, " + token_sql_ + " = " + token + " WHERE " + key_sql_ + " = " +
                          key + " AND " + token_sql_ + comparison(rule) + token);
    if (!prepared.ok()) return prepared.error();
    auto whole = checked(PQdescribePrepared(connection_, name.c_str()), "describing the update");
    if (!whole.ok() || PQnparams(whole->get()) != user_count + 2) {
      deallocate(name);
      if (!whole.ok()) return std::move(whole).error();
      return fenced_error(ErrorCode::kInvalidArgument,
                          "assignments \"" + std::string(assignments) +
                              "\" hide the fencing condition (an open comment or quote?)");
    }
    if (update_cache_.size() >= kMaxCachedUpdates) {
      for (const auto& [unused, old] : update_cache_) deallocate(old.name);
      update_cache_.clear();
    }
    cached =
        update_cache_
            .emplace(std::move(cache_key), CachedUpdate{name, static_cast<std::size_t>(user_count)})
            .first;
  }
  if (param_count != cached->second.param_count) {
    return fenced_error(ErrorCode::kInvalidArgument,
                        "assignments take " + std::to_string(cached->second.param_count) +
                            " parameter(s) but " + std::to_string(param_count) + " were given");
  }
  return &cached->second;
}

Result<bool> PostgresFencedBackend::update(std::string_view key, std::string_view assignments,
                                           const std::vector<SqlValue>& params, std::int64_t token,
                                           TokenRule rule) {
  auto statement = assignment_statement(assignments, rule, params.size());
  if (!statement.ok()) return std::move(statement).error();
  Parameters parameters;
  for (const SqlValue& value : params) {
    struct Adder {
      Parameters& parameters;
      void operator()(std::nullptr_t) const { parameters.add_null(); }
      void operator()(std::int64_t v) const { parameters.add_text(to_text(v)); }
      void operator()(double v) const { parameters.add_text(to_text(v)); }
      void operator()(const std::string& v) const { parameters.add_text(v); }
      void operator()(const std::vector<std::uint8_t>& v) const { parameters.add_bytes(v); }
    };
    std::visit(Adder{parameters}, value);
  }
  parameters.add_text(to_text(token));
  parameters.add_text(std::string(key));
  auto result = run(statement.value()->name, parameters, "guarded UPDATE of " + names_.table);
  if (!result.ok()) return std::move(result).error();
  return changed_one(result->get());
}

Result<bool> PostgresFencedBackend::fence(std::string_view key, std::int64_t token,
                                          TokenRule rule) {
  Parameters parameters;
  parameters.add_text(std::string(key));
  parameters.add_text(to_text(token));
  auto result = run(prefix_ + (rule == TokenRule::kStrictlyNewer ? "fence_lt" : "fence_le"),
                    parameters, "fenced read of " + names_.table);
  if (!result.ok()) return std::move(result).error();
  return changed_one(result->get());
}

Result<std::optional<std::int64_t>> PostgresFencedBackend::read_token(std::string_view key) {
  Parameters parameters;
  parameters.add_text(std::string(key));
  auto result =
      run(prefix_ + "select_token", parameters, "reading the token of a row of " + names_.table);
  if (!result.ok()) return std::move(result).error();
  if (PQntuples(result->get()) == 0) return std::optional<std::int64_t>();
  const std::string_view text = PQgetvalue(result->get(), 0, 0);
  std::int64_t stored = -1;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), stored);
  if (PQgetisnull(result->get(), 0, 0) != 0 || ec != std::errc() ||
      end != text.data() + text.size() || stored < 0) {
    return fenced_error(ErrorCode::kInternal, "row token in " + names_.table + "." +
                                                  names_.token_column +
                                                  " is not a non-negative integer");
  }
  return std::optional<std::int64_t>(stored);
}

}  // namespace

Result<std::unique_ptr<FencedBackend>> open_postgres_backend(pg_conn* connection, bool owned,
                                                             FencedNames names) {
  auto backend = std::make_unique<PostgresFencedBackend>(connection, owned, std::move(names));
  const Status opened = backend->open();
  if (!opened.ok()) return opened.error();
  return std::unique_ptr<FencedBackend>(std::move(backend));
}

Result<std::unique_ptr<FencedBackend>> connect_postgres_backend(std::string_view connection_string,
                                                                FencedNames names) {
  if (connection_string.find('\0') != std::string_view::npos) {
    return fenced_error(ErrorCode::kInvalidArgument, "the connection string holds a NUL character");
  }
  // connect_timeout first: a later keyword, or one the connection string names, overrides it.
  const std::string text(connection_string);
  const char* const keywords[] = {"connect_timeout", "dbname", nullptr};
  const char* const values[] = {kDefaultConnectTimeoutSeconds, text.c_str(), nullptr};
  PGconn* connection = PQconnectdbParams(keywords, values, 1);
  if (connection == nullptr) {
    return fenced_error(ErrorCode::kUnavailable, "cannot connect to PostgreSQL: out of memory");
  }
  if (PQstatus(connection) != CONNECTION_OK) {
    Error error = fenced_error(ErrorCode::kUnavailable, "cannot connect to PostgreSQL: " +
                                                            trimmed(PQerrorMessage(connection)));
    PQfinish(connection);
    return error;
  }
  // The backend owns the connection from here on, also when open() refuses the table.
  return open_postgres_backend(connection, true, std::move(names));
}

}  // namespace fencelock
