"""Guarded (fenced) writes to PostgreSQL through psycopg 3: FencedTable on a psycopg.Connection,
AsyncFencedTable on a psycopg.AsyncConnection.

The same contract, SQL and outcomes as fencelock.postgres (psycopg2; its module comment is the
reference) — they share _fencing.py: one statement checks the token and writes; APPLIED means
committed (a call runs in a transaction of its own and commits it before returning, or joins the
caller's only with caller_commits=True); a failed commit raises and is never reported applied.
psycopg 3, like psycopg2, opens a transaction at a connection's first statement (a SELECT too)
unless the connection is in autocommit mode: end it before a guarded write, or pass
caller_commits=True and commit it yourself.

    accounts = fencelock.psycopg.FencedTable(conn, "accounts")
    accounts.update("alice", {"balance": Expression("balance + {}", 20)}, lease.token)
    accounts = await fencelock.psycopg.AsyncFencedTable.open(aconn, "accounts")
    await accounts.update("alice", {"balance": 120}, lease.token)

Errors as fencelock.postgres: InvalidArgumentError, UnavailableError (serialization failure,
deadlock, lock not available: retry the transaction), InternalError (the psycopg error chained).
psycopg is imported when this module is, so `import fencelock` works without it.

Thread safety: as the connection — one FencedTable per connection, used by one thread (or task)
at a time.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import psycopg
import psycopg.errors
from psycopg import pq

from . import _fencing
from ._fencing import (MAX_TOKEN, Expression, Outcome, TokenRule, WriteResult,  # noqa: F401
                       check_token)

__all__ = ["FencedTable", "AsyncFencedTable", "Expression", "Outcome", "TokenRule",
           "WriteResult", "check_token", "MAX_TOKEN"]

_STATUS = {
    pq.TransactionStatus.IDLE: _fencing.IDLE,
    pq.TransactionStatus.INTRANS: _fencing.IN_TRANSACTION,
    pq.TransactionStatus.INERROR: _fencing.FAILED,
}

ERRORS = _fencing.ErrorKinds(
    base=(psycopg.Error,),
    retry=lambda e: isinstance(e, (psycopg.errors.SerializationFailure,
                                   psycopg.errors.DeadlockDetected,
                                   psycopg.errors.LockNotAvailable)),
    invalid=(psycopg.IntegrityError, psycopg.DataError, psycopg.ProgrammingError),
    message=_fencing.first_line)

_OPENS = "psycopg opens one at the first statement, a SELECT too, outside autocommit mode"


class FencedTable(_fencing.SyncTable):
    """Guarded writes to one table through one psycopg.Connection (borrowed, not closed).
    FencedTable(conn, table, key_column="id", token_column="current_token") checks the schema
    as fencelock.postgres.FencedTable does; the calls are the same."""

    _dialect = _fencing.POSTGRES
    _errors = ERRORS
    _opens = _OPENS

    def _status(self) -> str:
        return _STATUS.get(self._conn.info.transaction_status, _fencing.BUSY)


class AsyncFencedTable(_fencing._Table):
    """FencedTable on a psycopg.AsyncConnection: the same calls, awaited. Make one with
    `await AsyncFencedTable.open(conn, table, key_column="id", token_column="current_token")`
    (it checks the schema)."""

    _dialect = _fencing.POSTGRES
    _errors = ERRORS
    _opens = _OPENS

    @classmethod
    async def open(cls, conn: "psycopg.AsyncConnection[Any]", table: str, key_column: str = "id",
                   token_column: str = "current_token") -> "AsyncFencedTable":
        self = cls()
        self._prepare(conn, table, key_column, token_column)
        await self._run(self._s.schema_steps(), "checking table", writes=False)
        return self

    def _status(self) -> str:
        return _STATUS.get(self._conn.info.transaction_status, _fencing.BUSY)

    async def update(self, key: Any, values: Mapping[str, Any], token: int,
                     rule: TokenRule = TokenRule.STRICTLY_NEWER, *,
                     caller_commits: bool = False) -> WriteResult:
        """FencedTable.update, awaited."""
        return await self._run(self._s.update_steps(key, values, token, rule),
                               "guarded update of", caller_commits=caller_commits)

    async def fence_read(self, key: Any, token: int, rule: TokenRule = TokenRule.NEWER_OR_SAME,
                         *, caller_commits: bool = False) -> WriteResult:
        """FencedTable.fence_read, awaited."""
        return await self._run(self._s.fence_read_steps(key, token, rule), "fenced read of",
                               caller_commits=caller_commits)

    async def raise_token(self, key: Any, token: int, *,
                          caller_commits: bool = False) -> Optional[int]:
        """FencedTable.raise_token, awaited."""
        return await self._run(self._s.raise_token_steps(key, token), "raising a token in",
                               caller_commits=caller_commits)

    async def current_token(self, key: Any) -> Optional[int]:
        """FencedTable.current_token, awaited."""
        return await self._run(self._s.current_token_steps(key), "reading a token from",
                               writes=False)

    async def _run(self, steps: _fencing.Steps, doing: str, *, writes: bool = True,
                   caller_commits: bool = False) -> Any:
        # _fencing.SyncTable._run, awaited: the same transaction rule.
        with _fencing.translated_errors(self._errors, self._doing(doing)):
            own = _fencing.transaction_plan(self._status(), writes, caller_commits, self._opens)
            async with self._conn.cursor() as cursor:
                async def fetch(query: _fencing.Query) -> Any:
                    await cursor.execute(query.sql, query.params)
                    return await (cursor.fetchone() if query.fetch == "one"
                                  else cursor.fetchall())
                if not own:
                    return await _fencing.run_async(steps, fetch)
                explicit = self._conn.autocommit
                if explicit:
                    await cursor.execute("BEGIN")
                try:
                    result = await _fencing.run_async(steps, fetch)
                    # The outcome is returned only after this commit succeeded.
                    await (cursor.execute("COMMIT") if explicit else self._conn.commit())
                except BaseException:
                    try:
                        if not explicit:
                            await self._conn.rollback()
                        elif self._status() != _fencing.IDLE:
                            await cursor.execute("ROLLBACK")
                    except psycopg.Error:
                        pass
                    raise
                return result
