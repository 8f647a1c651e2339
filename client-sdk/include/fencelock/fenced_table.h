// Guarded (fenced) writes to a SQLite table: the resource side of fencing tokens.
//
// Why. A lease can end while its holder is paused (a GC pause, a swapped-out VM, a slow disk) and
// the holder cannot notice: it wakes up still believing it holds the lock and writes. The lock
// service cannot stop that write; only the storage it lands in can (Kleppmann, "How to do
// distributed locking", 2016). Every grant carries a fencing token that strictly increases per
// lock name, and every protected row remembers the newest token that touched it. A write carrying
// token T is applied only if the row has not yet seen a newer token, in ONE statement:
//
//   UPDATE <table> SET <assignments>, <token_column> = :fencelock_token
//    WHERE <key_column> = :fencelock_key AND <token_column> < :fencelock_token
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
// UNIQUE index) and an INTEGER token column that starts below every real token, for example:
//
//   CREATE TABLE accounts(id TEXT PRIMARY KEY, balance INTEGER NOT NULL,
//                         current_token INTEGER NOT NULL DEFAULT 0);
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
// newer token already read). Tokens are stored as SQLite INTEGERs, so tokens above INT64_MAX are
// refused. Tokens increase per lock name, so every token
// written to a row must come from the same lock name (say, lock "account:alice" for row alice);
// tokens of different names are not comparable.
//
// Thread safety: a FencedTable is used by one thread at a time, like the sqlite3* it borrows
// (unless that connection was opened in serialized mode, when SQLite itself serializes calls).
// Fencing across threads and processes comes from SQLite's locking: give each thread its own
// connection and its own FencedTable.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "fencelock/result.h"

struct sqlite3;
struct sqlite3_stmt;

namespace fencelock {

// Which stored tokens a guarded statement may overwrite. Tokens are unique per grant, so a row
// carrying exactly T was last touched by the holder of T itself: kNewerOrSame is as safe as
// kStrictlyNewer and only adds "the same lease may touch the row again".
enum class TokenRule {
  kStrictlyNewer,  // stored < token: each lease writes the row at most once
  kNewerOrSame,    // stored <= token: one lease may read and write the row several times
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

// One bound value for the assignments' positional parameters ?1, ?2, ...: NULL, INTEGER, REAL,
// TEXT (UTF-8) or BLOB. An empty vector binds a zero-length BLOB, not NULL.
using SqlValue =
    std::variant<std::nullptr_t, std::int64_t, double, std::string, std::vector<std::uint8_t>>;

class FencedTable {
 public:
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

  // Applies `assignments` to the row `key` only if the row's token satisfies `rule` against
  // `token`, and sets the row's token to `token` in the same statement.
  //
  // `assignments` is the SET list without the token column, e.g. "balance = balance + ?1", with
  // positional parameters ?1 ... ?N bound from `params` (params.size() must be N). It is SQL:
  // write it in code, never build it from input; values go in `params`. Named parameters are
  // refused (the key and token use reserved ones), and so is anything that is not a single SET
  // list, such as a second statement or a comment that would hide the fencing condition. Each
  // distinct `assignments` string is prepared once and cached (a bounded number of them).
  //
  // The key is bound as TEXT (an INTEGER key column converts it by affinity).
  // Outside a transaction, the UPDATE and the read that tells kStale from kNoSuchRow run in one
  // BEGIN IMMEDIATE transaction, so the outcome reported is the one that happened. Inside the
  // caller's open transaction they join it: the write takes effect at the caller's COMMIT and
  // vanishes with its ROLLBACK.
  //
  // Returns kApplied, kStale or kNoSuchRow (ordinary outcomes, not errors).
  // Errors (nothing is written): kInvalidArgument (token > INT64_MAX, malformed assignments, a
  // parameter count that does not match, a constraint violated by the assignments),
  // kUnavailable (SQLITE_BUSY / SQLITE_LOCKED after the connection's busy timeout: retry),
  // kInternal (any other SQLite error, with SQLite's message).
  Result<WriteResult> update(std::string_view key, std::string_view assignments,
                             const std::vector<SqlValue>& params, std::uint64_t token,
                             TokenRule rule = TokenRule::kStrictlyNewer);

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
                                 TokenRule rule = TokenRule::kNewerOrSame);

  // The token stored in row `key`, or nullopt if there is no such row. A plain read: it fences
  // nothing. Errors: kUnavailable (busy), kInternal (a SQLite error, or a stored token that is not
  // a non-negative INTEGER).
  Result<std::optional<std::uint64_t>> current_token(std::string_view key);

  FencedTable(FencedTable&&) noexcept;
  FencedTable& operator=(FencedTable&&) noexcept;
  FencedTable(const FencedTable&) = delete;
  FencedTable& operator=(const FencedTable&) = delete;
  ~FencedTable();

 private:
  struct StatementFinalizer {
    void operator()(sqlite3_stmt* statement) const noexcept;
  };
  using Statement = std::unique_ptr<sqlite3_stmt, StatementFinalizer>;

  FencedTable(sqlite3* db, std::string table, std::string key_column, std::string token_column);

  // What a guarded statement does when no row has the key.
  enum class Absent { kReport, kInsertPlaceholder };

  Result<WriteResult> guarded(sqlite3_stmt* statement, std::string_view key, std::uint64_t token,
                              TokenRule rule, Absent absent);
  Result<WriteResult> run_guarded(sqlite3_stmt* statement, std::string_view key,
                                  std::uint64_t token, TokenRule rule, Absent absent);
  Result<WriteResult> insert_placeholder(std::string_view key, std::int64_t token);
  Result<sqlite3_stmt*> assignment_statement(std::string_view assignments, TokenRule rule,
                                             std::size_t param_count);
  Result<Statement> prepare(const std::string& sql);

  sqlite3* db_ = nullptr;
  std::string table_;
  std::string key_column_;
  std::string token_column_;
  Statement begin_;
  Statement commit_;
  Statement rollback_;
  Statement select_token_;
  Statement fence_strictly_newer_;
  Statement fence_newer_or_same_;
  Statement insert_placeholder_;  // null when the table cannot hold a placeholder row
  // Key: the rule (0 or 1) followed by the assignments text.
  std::map<std::string, Statement, std::less<>> update_cache_;
};

}  // namespace fencelock
