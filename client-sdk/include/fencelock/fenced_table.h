// Guarded (fenced) writes to a SQLite or PostgreSQL table: the resource side of fencing tokens.
// Why, the schema, the SQL each database runs and worked examples: docs/sdk.md, "Fencing your
// database" and "Why fenced reads".
//
// Contract. update(key, token, ...) applies its assignments in ONE statement that also sets the
// row's token column to `token` and only if the row has not seen a newer token (`<`; or `<=` with
// TokenRule::kNewerOrSame); fence_read(key, token) raises the row's token the same way before the
// caller reads, so a read counts like a write (a missing row gets a placeholder holding only key
// and token when the table can hold one, else kNoSuchRow). Tokens compared on one row must all
// come from one lock name; tokens above INT64_MAX are refused. The table needs a key column unique
// on its own and a 64-bit integer token column starting below every real token; update() never
// inserts.
// kApplied is never reported for a write that is not committed, unless the caller said it commits
// (Commit::kByCaller): by default a call runs and commits a transaction of its own, and refuses
// (kInvalidArgument, nothing touched) when a transaction is already open on the connection.
// PostgreSQL serialization failures and deadlocks are retried up to kMaxSerializationAttempts in
// a call's own transaction (then kUnavailable), and returned at once inside the caller's.
// A FencedTable is used by one thread at a time, like the connection it borrows or owns.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "fencelock/result.h"

struct sqlite3;
struct pg_conn;  // libpq's PGconn

namespace fencelock {

// Which stored tokens a guarded statement may overwrite. Tokens are unique per grant, so a row
// carrying exactly T was last touched by the holder of T itself: kNewerOrSame is as safe as
// kStrictlyNewer and only adds "the same lease may touch the row again".
enum class TokenRule {
  kStrictlyNewer,  // stored < token: each lease writes the row at most once
  kNewerOrSame,    // stored <= token: one lease may read and write the row several times
};

// Who commits a guarded call's write (see "Transactions" above).
enum class Commit {
  // The call runs in a transaction of its own and commits it before it returns. When the
  // connection already has a transaction open, the call is refused with kInvalidArgument and
  // nothing is written or rolled back.
  kBeforeReturning,
  // "The open transaction is mine and I will commit it": the call joins it, and kApplied means
  // applied in that transaction — it takes effect at the caller's COMMIT and vanishes with its
  // ROLLBACK. With no transaction open the call runs as with kBeforeReturning.
  kByCaller,
};

enum class WriteOutcome {
  kApplied,    // the row now carries the caller's token (and, for update(), its assignments)
  kStale,      // refused: the row carries a token the rule does not let this token overwrite
  kNoSuchRow,  // no row has this key; nothing was written
};

struct WriteResult {
  WriteOutcome outcome = WriteOutcome::kNoSuchRow;
  // The row's token after the call: the caller's token when kApplied, the token that won when
  // kStale, 0 when kNoSuchRow.
  std::uint64_t current_token = 0;
};

// One bound value for the assignments' positional parameters (SQLite ?1, ?2, ...; PostgreSQL $1,
// $2, ...): NULL, a 64-bit integer, a double, UTF-8 text or bytes. An empty vector binds a
// zero-length BLOB, not NULL. PostgreSQL receives every value but bytes as text and infers each
// parameter's type from the assignments (write $1::type where it cannot); bytes are sent in
// binary and must go to a bytea parameter; text must not contain NUL.
using SqlValue =
    std::variant<std::nullptr_t, std::int64_t, double, std::string, std::vector<std::uint8_t>>;

class FencedBackend;

class FencedTable {
 public:
  // How often a call outside the caller's transaction is tried when PostgreSQL aborts it to keep
  // it serializable (SQLSTATE 40001 or 40P01); see "Isolation" above.
  static constexpr int kMaxSerializationAttempts = 10;

  // Checks `table`, `key_column` and `token_column` once and prepares the fixed statements.
  // `db` is borrowed: it must stay open until this FencedTable (and every object moved from it)
  // is destroyed, because the prepared statements belong to it. Names must match
  // [A-Za-z_][A-Za-z0-9_]* (they are spliced into SQL, so nothing else is accepted), the table and
  // both columns must exist, the two columns must differ, and the key column must be unique on its
  // own. Errors: kInvalidArgument (db is null, a bad name, a missing table or column, a
  // non-unique key), kUnavailable (the schema is locked: SQLITE_BUSY / SQLITE_LOCKED), kInternal
  // (other SQLite errors, with SQLite's message).
  static Result<FencedTable> open(sqlite3* db, std::string table, std::string key_column = "id",
                                  std::string token_column = "current_token");

  // The same over a PostgreSQL connection (libpq). `connection` is borrowed, must be
  // CONNECTION_OK and stay open until this FencedTable is destroyed; the statements are prepared
  // on it under names of their own ("fencelock_fenced_<n>_...", deallocated by the destructor).
  // Names follow the same rule and, being quoted, match PostgreSQL's stored (case-sensitive)
  // names: an unquoted CREATE TABLE Accounts is stored as accounts. The table is found through the
  // connection's search_path. Besides SQLite's checks, the token column must be bigint.
  // Errors: kInvalidArgument (a null or bad connection, a bad name, a missing table or column, a
  // token column that is not bigint, a key that is not unique on its own), kUnavailable (the
  // connection failed), kInternal (other PostgreSQL errors, with its message).
  static Result<FencedTable> open(pg_conn* connection, std::string table,
                                  std::string key_column = "id",
                                  std::string token_column = "current_token");

  // Opens its own PostgreSQL connection from `connection_string` (a postgresql://... URI or
  // "key=value ..." libpq string; connect_timeout defaults to 10 s unless it names one), then as
  // open(pg_conn*). The connection is closed with the FencedTable. Blocks while connecting.
  // Errors: kUnavailable (cannot connect, with libpq's message, the password never shown), and
  // those of open(pg_conn*).
  static Result<FencedTable> connect(std::string_view connection_string, std::string table,
                                     std::string key_column = "id",
                                     std::string token_column = "current_token");

  // Applies `assignments` to the row `key` only if the row's token satisfies `rule` against
  // `token`, and sets the row's token to `token` in the same statement.
  //
  // `assignments` is the SET list without the token column, e.g. "balance = balance + ?1" (SQLite)
  // or "balance = balance + $1" (PostgreSQL), with positional parameters ?1 ... ?N or $1 ... $N
  // bound from `params` (params.size() must be N). It is SQL:
  // write it in code, never build it from input; values go in `params`. Named parameters are
  // refused (the key and token use reserved ones), and so is anything that is not a single SET
  // list, such as a second statement or a comment that would hide the fencing condition. Each
  // distinct `assignments` string is prepared once and cached (a bounded number of them).
  //
  // The key is bound as text (SQLite: an INTEGER key column converts it by affinity; PostgreSQL:
  // parsed as the key column's type, kInvalidArgument when it is not one).
  // The UPDATE and the read that tells kStale from kNoSuchRow run in one transaction: by default
  // one of our own (SQLite: BEGIN IMMEDIATE), committed before the call returns, so the outcome
  // reported is the one that happened and kApplied is durable (PostgreSQL at READ COMMITTED: the
  // token reported with kStale is the row's when we looked, at least the one that refused you).
  // With Commit::kByCaller they join the caller's open transaction: the write takes effect at the
  // caller's COMMIT and vanishes with its ROLLBACK.
  //
  // Returns kApplied, kStale or kNoSuchRow (ordinary outcomes, not errors).
  // Errors (nothing is written): kInvalidArgument (token > INT64_MAX, malformed assignments, a
  // parameter count that does not match, a constraint violated by the assignments, a transaction
  // open on the connection without Commit::kByCaller),
  // kUnavailable (SQLITE_BUSY / SQLITE_LOCKED after the connection's busy timeout; PostgreSQL's
  // serialization failures as described under "Isolation", a lost connection: retry),
  // kInternal (any other database error, with its message).
  Result<WriteResult> update(std::string_view key, std::string_view assignments,
                             const std::vector<SqlValue>& params, std::uint64_t token,
                             TokenRule rule = TokenRule::kStrictlyNewer,
                             Commit commit = Commit::kBeforeReturning);

  // Fenced read: raises the row's token to `token` (if `rule` allows) so that the caller's
  // following read counts as a touch by `token`: from now on, writes by older tokens are refused.
  // See the file comment for the interleaving this prevents. Call it, then read the row yourself.
  //
  // Returns kApplied (the row now carries `token`: what you read next is fenced), kStale with the
  // newer token (a newer holder already read or wrote the row: do not act on what you read),
  // or kNoSuchRow. A key with no row gets a placeholder row holding `token` (kApplied) when the
  // table can hold one (see "Schema" above), and kNoSuchRow, with nothing fenced, when it cannot;
  // a constraint the schema check cannot see (a CHECK, a trigger) refusing the placeholder is
  // kInvalidArgument, with nothing written. The default rule is kNewerOrSame so that a holder may
  // fence-read a row again or after its own write; the write that follows a fenced read must use
  // kNewerOrSame. Transactions and errors as for update().
  Result<WriteResult> fence_read(std::string_view key, std::uint64_t token,
                                 TokenRule rule = TokenRule::kNewerOrSame,
                                 Commit commit = Commit::kBeforeReturning);

  // The token stored in row `key`, or nullopt if there is no such row. A plain read: it fences
  // nothing, and runs in whatever transaction is open. Errors: kUnavailable (busy, connection
  // lost), kInternal (a database error, or a stored token that is not a non-negative integer).
  Result<std::optional<std::uint64_t>> current_token(std::string_view key);

  FencedTable(FencedTable&&) noexcept;
  FencedTable& operator=(FencedTable&&) noexcept;
  FencedTable(const FencedTable&) = delete;
  FencedTable& operator=(const FencedTable&) = delete;
  ~FencedTable();

 private:
  explicit FencedTable(std::unique_ptr<FencedBackend> backend);

  // One guarded call: `step` runs the backend's statement and says whether it changed the row.
  Result<WriteResult> guarded(std::string_view key, std::uint64_t token, TokenRule rule,
                              Commit commit, const std::function<Result<bool>(std::int64_t)>& step);
  Result<WriteResult> classify(std::string_view key, std::int64_t token, TokenRule rule,
                               const std::function<Result<bool>(std::int64_t)>& step);

  std::unique_ptr<FencedBackend> backend_;
};

}  // namespace fencelock
