// Package fenced makes guarded (fenced) writes to a PostgreSQL table over database/sql: the
// resource side of fencing tokens. It works with any PostgreSQL driver (lib/pq, pgx's stdlib) and
// depends on the standard library only.
//
// A lease can end while its holder is paused (a GC pause, a stalled VM) and the holder cannot
// notice: it wakes up and writes as if it still held the lock. Only the storage can refuse that
// write. Every grant carries a token that increases per lock name; a protected row remembers the
// newest token that touched it, and a write is applied only if the row has not seen a newer token —
// the check and the write in ONE statement, so no other writer can slip in between:
//
//	UPDATE accounts SET balance = balance + $1, current_token = $2
//	 WHERE id = $3 AND current_token < $2
//
// Same contract as the C++ FencedTable and the Python and Node clients (docs/sdk.md, "Fencing your
// database"): read-modify-writes fence their read first (FenceRead raises the row's token,
// inserting a placeholder row when the key has none and the table can hold one), and the write
// after a fenced read uses NewerOrSame, because the read already put the holder's own token on the
// row. All tokens written to one row must come from one lock name.
//
// Schema: a key column unique on its own (PRIMARY KEY or a single-column UNIQUE, not partial) and a
// bigint NOT NULL token column that starts below every real token, e.g.
//
//	CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0,
//	                       current_token bigint NOT NULL DEFAULT 0);
//
// Names are identifiers ([A-Za-z_][A-Za-z0-9_]*, quoted: case-sensitive); every value is a bound
// parameter. Tokens are 1 .. 2^63-1 (bigint).
//
// Transactions: Applied means committed. Table's methods run in a transaction of their own and
// return Applied only after its COMMIT succeeded; a failed commit is an error, never Applied. To
// join a transaction of yours (a fenced read, your SELECT and the write together), use
// Table.InTx(tx): Applied then means applied in your transaction — it lands at your Commit, or
// not at all. Correct at READ COMMITTED (PostgreSQL re-checks the WHERE against a row updated
// concurrently) and at REPEATABLE READ / SERIALIZABLE (a conflict is a serialization failure,
// returned as fencelock.ErrUnavailable: run the transaction again).
//
// Errors are *fencelock.Error: ErrInvalidArgument (a bad name, token or value, a table that fails
// the schema check, a violated constraint), ErrUnavailable (serialization failure, deadlock, lock
// not available, a broken connection: retry), ErrInternal (any other database error). Cause holds
// the driver's error. A failed call writes nothing — except a COMMIT whose answer was lost (the
// connection broke after sending it): its error says "(commit)", and the write may have landed.
//
// Thread safety: a Table is safe for concurrent use (it uses the *sql.DB pool); a Tx is used as its
// *sql.Tx is, by one goroutine at a time.
package fenced
