"""Guarded (fenced) writes to a PostgreSQL table: the resource side of fencing tokens.

A lease can end while its holder is paused (a GC pause, a stalled VM) and the holder cannot
notice: it wakes up and writes as if it still held the lock. Only the storage can refuse that
write. Every grant carries a token that increases per lock name; a protected row remembers the
newest token that touched it, and a write is applied only if the row has not seen a newer token —
the check and the write in ONE statement, so no other writer can slip in between:

    UPDATE t SET <values>, current_token = %(token)s
     WHERE key = %(key)s AND current_token < %(token)s

Same contract as the C++ FencedTable (client-sdk/include/fencelock/fenced_table.h, docs/sdk.md
"Guarded writes"): read-modify-writes fence their read first (fence_read raises the row's token,
inserting a placeholder row when the key has none and the table can hold one), and the write
after a fenced read uses TokenRule.NEWER_OR_SAME, because the read already put the holder's own
token on the row. Tokens of one row must all come from one lock name.

Schema: a key column unique on its own (PRIMARY KEY or a single-column UNIQUE, not partial) and a
`bigint NOT NULL` token column that starts below every real token, e.g.

    CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0,
                           current_token bigint NOT NULL DEFAULT 0);

Names are checked ([A-Za-z_][A-Za-z0-9_]*) and double-quoted (case-sensitive, as
psycopg2.sql.Identifier quotes them), values are parameters. Tokens are positive and at most
2**63 - 1 (bigint). The SQL, the outcomes and the transaction rule live in _fencing.py, shared
with fencelock.psycopg (psycopg 3) and fencelock.sqlite.

Transactions: a call that writes (update, fence_read, raise_token) never reports APPLIED for a
write that is not committed. By default it runs in a transaction of its own and commits it
before returning. psycopg2 opens a transaction implicitly at a connection's first statement (a
plain SELECT too), so a call that finds a transaction already open on the connection refuses
with InvalidArgumentError and touches nothing: joining it would report APPLIED for a write that
the caller's commit, which may never come, decides. Commit or roll back first, or pass
caller_commits=True to say "this transaction is mine and I will commit it": the call then joins
it (or, outside one, runs as the caller's own cursor.execute would), APPLIED means applied in
that transaction, and an error leaves it aborted (roll it back). Plain reads (the schema check,
current_token) run in whatever transaction is open. Correct at READ COMMITTED (PostgreSQL
re-checks the WHERE against a row updated concurrently) and at REPEATABLE READ / SERIALIZABLE (a
conflict is a serialization failure, raised as UnavailableError: retry the transaction).

Errors (fencelock.errors): InvalidArgumentError (a bad name, token or value, a table that fails
the schema check, a violated constraint), UnavailableError (serialization failure, deadlock, lock
not available: retry), InternalError (any other database error; the psycopg2 error is chained).
psycopg2 is imported when this module is, so `import fencelock` works without it.

Thread safety: as psycopg2's connection — give each thread its own connection.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import psycopg2
import psycopg2.errors
import psycopg2.extensions

from . import _fencing
from ._fencing import (MAX_TOKEN, Expression, Outcome, TokenRule, WriteResult,  # noqa: F401
                       check_token)

__all__ = ["FencedTable", "Expression", "Outcome", "TokenRule", "WriteResult", "check_token",
           "MAX_TOKEN", "guarded_update", "fence_read", "raise_token"]

_STATUS = {
    psycopg2.extensions.TRANSACTION_STATUS_IDLE: _fencing.IDLE,
    psycopg2.extensions.TRANSACTION_STATUS_INTRANS: _fencing.IN_TRANSACTION,
    psycopg2.extensions.TRANSACTION_STATUS_INERROR: _fencing.FAILED,
}

ERRORS = _fencing.ErrorKinds(
    base=(psycopg2.Error,),
    retry=lambda e: isinstance(e, (psycopg2.errors.SerializationFailure,
                                   psycopg2.errors.DeadlockDetected,
                                   psycopg2.errors.LockNotAvailable)),
    invalid=(psycopg2.IntegrityError, psycopg2.DataError, psycopg2.ProgrammingError),
    message=_fencing.first_line)


class FencedTable(_fencing.SyncTable):
    """Guarded writes to one table through one psycopg2 connection (borrowed, not closed).

    FencedTable(conn, table, key_column="id", token_column="current_token") checks the schema
    (see the module comment) and raises InvalidArgumentError naming what is wrong: a bad name,
    no such table or column, a token column that is not `bigint NOT NULL`, a key column without
    a unique index of its own, the same column twice. update(), fence_read(), raise_token() and
    current_token() are described in the module comment and in _fencing.SyncTable."""

    _dialect = _fencing.POSTGRES
    _errors = ERRORS
    _opens = "psycopg2 opens one at the first statement, a SELECT too"

    def _status(self) -> str:
        return _STATUS.get(self._conn.get_transaction_status(), _fencing.BUSY)


# --- one-call helpers (each checks the schema once more; keep a FencedTable to avoid that) ----

def guarded_update(conn: "psycopg2.extensions.connection", table: str, key_column: str,
                   key: Any, token: int, values: Mapping[str, Any], *,
                   token_column: str = "current_token",
                   rule: TokenRule = TokenRule.STRICTLY_NEWER,
                   caller_commits: bool = False) -> bool:
    """FencedTable(conn, table, key_column, token_column).update(key, values, token, rule,
    caller_commits=caller_commits): True iff the write landed — committed, or with
    caller_commits=True applied in the caller's transaction (False: a newer token got there
    first, or no such row)."""
    return FencedTable(conn, table, key_column, token_column).update(
        key, values, token, rule, caller_commits=caller_commits).applied


def fence_read(conn: "psycopg2.extensions.connection", table: str, key_column: str, key: Any,
               token: int, *, token_column: str = "current_token",
               rule: TokenRule = TokenRule.NEWER_OR_SAME,
               caller_commits: bool = False) -> WriteResult:
    """FencedTable(conn, table, key_column, token_column).fence_read(key, token, rule,
    caller_commits=caller_commits)."""
    return FencedTable(conn, table, key_column, token_column).fence_read(
        key, token, rule, caller_commits=caller_commits)


def raise_token(conn: "psycopg2.extensions.connection", table: str, key_column: str, key: Any,
                token: int, *, token_column: str = "current_token",
                caller_commits: bool = False) -> Optional[int]:
    """FencedTable(conn, table, key_column, token_column).raise_token(key, token,
    caller_commits=caller_commits)."""
    return FencedTable(conn, table, key_column, token_column).raise_token(
        key, token, caller_commits=caller_commits)
