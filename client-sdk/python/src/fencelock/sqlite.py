"""Guarded (fenced) writes to an SQLite table through the standard library's sqlite3.

The same contract, SQL and outcomes as fencelock.postgres (its module comment is the reference)
and the C++ FencedTable on SQLite (docs/sdk.md) — the statements and decisions are shared
(_fencing.py): one statement checks the token and writes (UPDATE … RETURNING and INSERT … ON
CONFLICT need SQLite 3.35+); APPLIED means committed.

Transactions: a call that writes runs in a transaction of its own, `BEGIN IMMEDIATE` (it takes
the write lock up front, so the connection's busy timeout applies at BEGIN), and commits it
before returning; a failed COMMIT (a deferred foreign key, a full disk) rolls back and raises —
never APPLIED. A call that finds a transaction open on the connection (`conn.in_transaction`:
sqlite3 opens one before an INSERT, UPDATE or DELETE of yours, not before a SELECT) refuses with
InvalidArgumentError unless caller_commits=True says "this transaction is mine and I will commit
it". On Python 3.12+ a connection with autocommit=False always has a transaction open: pass
caller_commits=True there.

Schema: a key column that is the whole primary key or has a single-column UNIQUE index, and an
INTEGER NOT NULL token column starting below every real token, e.g.

    CREATE TABLE accounts (id TEXT PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0,
                           current_token INTEGER NOT NULL DEFAULT 0);

Errors: InvalidArgumentError (bad names, values or schema, a violated constraint),
UnavailableError (the database stayed locked past the busy timeout: retry), InternalError (any
other sqlite3 error, chained).

Thread safety: as the sqlite3 connection — one FencedTable per connection and thread.
"""

from __future__ import annotations

import sqlite3

from . import _fencing
from ._fencing import (MAX_TOKEN, Expression, Outcome, TokenRule, WriteResult,  # noqa: F401
                       check_token)

__all__ = ["FencedTable", "Expression", "Outcome", "TokenRule", "WriteResult", "check_token",
           "MAX_TOKEN"]

ERRORS = _fencing.ErrorKinds(
    base=(sqlite3.Error, OverflowError),
    retry=lambda e: isinstance(e, sqlite3.OperationalError) and (
        "locked" in str(e) or "busy" in str(e)),
    invalid=(sqlite3.IntegrityError, sqlite3.DataError, sqlite3.ProgrammingError,
             sqlite3.InterfaceError, OverflowError),
    message=_fencing.first_line)


class FencedTable(_fencing.SyncTable):
    """Guarded writes to one table through one sqlite3.Connection (borrowed, not closed).
    FencedTable(conn, table, key_column="id", token_column="current_token") checks the schema;
    update(), fence_read(), raise_token() and current_token() are fencelock.postgres's."""

    _dialect = _fencing.SQLITE
    _errors = ERRORS
    _opens = "sqlite3 opens one before an INSERT, UPDATE or DELETE"

    def _status(self) -> str:
        return _fencing.IN_TRANSACTION if self._conn.in_transaction else _fencing.IDLE

    def _explicit_begin(self) -> bool:
        return True

    def _begin_sql(self, writes: bool) -> str:
        return "BEGIN IMMEDIATE" if writes else "BEGIN"
