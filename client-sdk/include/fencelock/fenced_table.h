// Guarded (fenced) writes to a SQLite or PostgreSQL table: the resource side of fencing tokens.
//
// Why. A lease can end while its holder is paused (a GC pause, a swapped-out VM, a slow disk) and
// the holder cannot notice: it wakes up still believing it holds the lock and writes. The lock
// service cannot stop that write; only the storage it lands in can (Kleppmann, "How to do
// distributed locking", 2016). Every grant carries a fencing token that strictly increases per
// lock name, and every protected row remembers the newest token that touched it. A write carrying
// token T is applied only if the row has not yet seen a newer token, in ONE statement:
//
//   UPDATE <table> SET <assignments>, <token_column> = <token>
//    WHERE <key_column> = <key> AND <token_column> < <token>
//
// The check and the write are one atomic statement, so no other writer can slip in between them.
// Kleppmann's hole is closed: client 1 (token 33) pauses past its lease, client 2 (token 34)
// writes, client 1 wakes and writes with 33, and the row (now at 34) refuses it.
//
// Why fenced reads too. Fencing the writes alone does not protect a read-modify-write whose read
// happened before a newer holder's read. Row x = 100, token 32; A holds token 33:
//
//   1. A reads x = 100.
//   2. A pauses; its lease expires; B is granted token 34.
//   3. B reads x = 100.
//   4. A wakes, writes x = 100 + 10 with token 33: the row is at 32 < 33, so it is APPLIED.
//   5. B writes x = 100 + 20 with token 34: 33 < 34, APPLIED. x = 120 and A's +10 is lost,
//      although A was told its write succeeded.
//
// fence_read() raises the row's token before the caller reads, so a read counts like a write:
//
//   1. A: fence_read(33) moves the row to 33; A reads x = 100.
//   2. A pauses; B is granted token 34.
//   3. B: fence_read(34) moves the row to 34; B reads x = 100.
//   4. A writes with 33: the row is at 34, so it is refused (kStale, current_token 34). A learns
//      that it lost the lock and that nothing it did took effect.
//   5. B writes x = 120 with 34 (TokenRule::kNewerOrSame: the row already carries B's own 34).
//
// The rule: a write with token T is applied only if no holder with a newer token has read or
// written the row since. Either A's write lands before B's read (and B reads it), or it is refused.
// A holder that fences its reads must write with TokenRule::kNewerOrSame, because its own fenced
// read already put its token on the row.
//
// Schema. The table needs a key column that is unique on its own (PRIMARY KEY or a single-column
// UNIQUE index) and a 64-bit integer token column that starts below every real token (SQLite:
// INTEGER; PostgreSQL: bigint — open() refuses integer or numeric), for example:
//
//   CREATE TABLE accounts(id TEXT PRIMARY KEY, balance INTEGER NOT NULL,
//                         current_token INTEGER NOT NULL DEFAULT 0);          -- SQLite
//   CREATE TABLE accounts(id text PRIMARY KEY, balance bigint NOT NULL,
//                         current_token bigint NOT NULL DEFAULT 0);           -- PostgreSQL
//
// Rows are created by the application: update() never inserts. fence_read() of a key with no row
// must still record its token, or it fences nothing: B (34) reads "no such row"; A (33), paused
// before it could create the row, wakes and creates it; B, which saw "absent", then overwrites A's
// row unseen. So when the table can hold a placeholder row — every column other than the key and
// the token is nullable or has a default (or is a rowid table's INTEGER PRIMARY KEY) — fence_read()
// of a missing key inserts one carrying only the key and the token. Give such a table a column
// that tells a placeholder from a real row (say, a nullable body: NULL means "no object yet"), and
// create real rows with update() (the placeholder is the row) or with an INSERT that respects a
// placeholder's token. When the table cannot hold a placeholder, fence_read() of a missing key
// reports kNoSuchRow and fences nothing: the application must then fence creation itself (for
// example, create rows only with the token in the same statement, and refuse creation when a
// newer token already read). Tokens are stored as signed 64-bit integers (SQLite INTEGER,
// PostgreSQL bigint), so tokens above INT64_MAX are refused. Tokens increase per lock name, so
// every token written to a row must come from the same lock name (say, lock "account:alice" for
// row alice); tokens of different names are not comparable.
//
// The SQL each database runs. SQLite: the UPDATE above inside BEGIN IMMEDIATE ... COMMIT; a fenced
// read of a missing key INSERTs the placeholder in the same transaction. PostgreSQL: the UPDATE
// above as a prepared statement, and for a fenced read one statement that moves the token or
// inserts the placeholder atomically (one of `<` / `<=` per TokenRule):
//
//   INSERT INTO <table> AS fenced (<key>, <token>) VALUES ($1, $2)
//   ON CONFLICT (<key>) DO UPDATE SET <token> = GREATEST(fenced.<token>, EXCLUDED.<token>)
//   WHERE fenced.<token> <= EXCLUDED.<token>
//
// (the plain UPDATE when the table cannot hold a placeholder). Every value is a bound parameter;
// the table and column names are quoted (PQescapeIdentifier / "name") when the statements are
// prepared, once, at open().
//
// Isolation (PostgreSQL). Safety comes from the single guarded statement, which is atomic at every
// isolation level: at READ COMMITTED a writer that waits for the row lock re-checks the condition
// against the row version that won; at REPEATABLE READ and SERIALIZABLE PostgreSQL aborts it with
// SQLSTATE 40001 instead. Outside the caller's transaction a call runs in a transaction of its own
// (at the connection's default isolation) and retries such an abort (40001, and deadlock 40P01)
// up to kMaxSerializationAttempts times in all, with a short random pause between; if every
// attempt is aborted the call returns kUnavailable and nothing was written. Inside the caller's
// transaction an abort cannot be retried by us — PostgreSQL has ended the transaction — so it is
// returned at once as kUnavailable (the message names the SQLSTATE): ROLLBACK and run the whole
// transaction again.
//
// Transactions: kApplied is never reported for a write that is not committed, unless the caller
// said it commits (Commit::kByCaller). By default a call runs in a transaction of its own and
// commits it before returning; a call that finds a transaction already open on the connection
// refuses (kInvalidArgument) and touches nothing, because joining it would report kApplied for
// a write that the caller's COMMIT, which may never come, decides.
//
// Thread safety: a FencedTable is used by one thread at a time, like the connection it borrows or
// owns (a sqlite3* unless opened in serialized mode, a PGconn* always). Fencing across threads and
// processes comes from the database's own locking: give each thread its own connection and its
// own FencedTable.
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
