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

Names are passed as psycopg2.sql.Identifier (quoted: case-sensitive), values as parameters; no SQL
is built from strings. Tokens are positive and at most 2**63 - 1 (bigint).

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

import contextlib
import enum
import re
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Mapping, Optional, Tuple

import psycopg2
import psycopg2.errors
import psycopg2.extensions
from psycopg2 import sql

from .errors import FencelockError, InternalError, InvalidArgumentError, UnavailableError

MAX_TOKEN = 2**63 - 1

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
# What may not appear in an Expression's SQL text: anything that could end the statement, open a
# comment or a string swallowing the fencing condition, or clash with psycopg2's parameters.
_FORBIDDEN_IN_EXPRESSION = (";", "--", "/*", "'", '"', "$", "%", "\\")


class TokenRule(enum.Enum):
    """Which stored tokens a guarded statement may overwrite. Tokens are unique per grant, so
    NEWER_OR_SAME is as safe as STRICTLY_NEWER and only adds "the same lease may touch the row
    again" (needed after a fenced read)."""

    STRICTLY_NEWER = "<"
    NEWER_OR_SAME = "<="


class Outcome(enum.Enum):
    APPLIED = "applied"          # the row now carries the caller's token (and its values)
    STALE = "stale"              # refused: the row carries a token the rule does not let go
    NO_SUCH_ROW = "no_such_row"  # no row has this key; nothing was written


@dataclass(frozen=True)
class WriteResult:
    outcome: Outcome
    # The row's token after the call: the caller's when APPLIED, the one that won when STALE,
    # 0 when NO_SUCH_ROW.
    current_token: int

    @property
    def applied(self) -> bool:
        return self.outcome is Outcome.APPLIED

    def __bool__(self) -> bool:
        return self.applied


class Expression:
    """A SQL expression as a value: Expression("balance + {}", 20) sets `balance = balance + 20`.

    The text is SQL: keep it a constant in your code; each {} takes the next argument as a bound
    parameter. Quotes, comments, ';', '%', '$' and backslashes are refused (pass strings as
    arguments)."""

    __slots__ = ("text", "args")

    def __init__(self, text: str, *args: Any) -> None:
        if not isinstance(text, str) or not text.strip():
            raise InvalidArgumentError("an Expression needs SQL text")
        if any(bad in text for bad in _FORBIDDEN_IN_EXPRESSION):
            raise InvalidArgumentError(
                f"Expression {text!r}: quotes, comments, ';', '%', '$' and '\\' are not allowed;"
                " pass values as arguments")
        if text.count("{}") != len(args) or text.replace("{}", "").count("{") or text.replace(
                "{}", "").count("}"):
            raise InvalidArgumentError(
                f"Expression {text!r}: needs one {{}} per argument ({len(args)} given)")
        self.text = text
        self.args = args

    def __repr__(self) -> str:
        return f"Expression({self.text!r}, {len(self.args)} argument(s))"


def check_token(token: Any) -> int:
    """`token` if it is an int 1 .. 2**63 - 1, else InvalidArgumentError."""
    if isinstance(token, bool) or not isinstance(token, int):
        raise InvalidArgumentError(f"a token must be an int, not {type(token).__name__}")
    if token < 1 or token > MAX_TOKEN:
        raise InvalidArgumentError(
            f"token {token} is out of range: tokens are 1 .. 2**63 - 1 (bigint)")
    return token


def _check_identifier(name: Any, what: str) -> str:
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise InvalidArgumentError(
            f"{what} {name!r} is not an identifier of the form [A-Za-z_][A-Za-z0-9_]*"
            " (at most 63 characters)")
    return name


@contextlib.contextmanager
def _translated_errors(doing: str) -> Iterator[None]:
    try:
        yield
    except FencelockError:
        raise
    except (psycopg2.errors.SerializationFailure, psycopg2.errors.DeadlockDetected,
            psycopg2.errors.LockNotAvailable) as e:
        raise UnavailableError(f"{doing}: {_pg_message(e)} (retry)") from e
    except (psycopg2.IntegrityError, psycopg2.DataError, psycopg2.ProgrammingError) as e:
        raise InvalidArgumentError(f"{doing}: {_pg_message(e)}") from e
    except psycopg2.Error as e:
        raise InternalError(f"{doing}: {_pg_message(e)}") from e


def _pg_message(error: "psycopg2.Error") -> str:
    text = (getattr(error, "pgerror", None) or str(error)).strip()
    return text.splitlines()[0] if text else type(error).__name__


@contextlib.contextmanager
def _transaction(conn: "psycopg2.extensions.connection", *, writes: bool = True,
                 caller_commits: bool = False) -> Iterator[Any]:
    """A cursor inside a transaction of our own that commits when the block ends, or inside the
    caller's when it said so (caller_commits) or when the block only reads."""
    status = conn.get_transaction_status()
    if status == psycopg2.extensions.TRANSACTION_STATUS_INERROR:
        raise InvalidArgumentError(
            "the connection's transaction has failed: roll it back before writing")
    if status not in (psycopg2.extensions.TRANSACTION_STATUS_IDLE,
                      psycopg2.extensions.TRANSACTION_STATUS_INTRANS):
        raise InvalidArgumentError("the connection is busy or broken")
    open_already = status == psycopg2.extensions.TRANSACTION_STATUS_INTRANS
    if open_already and writes and not caller_commits:
        raise InvalidArgumentError(
            "a transaction is open on this connection (psycopg2 opens one at the first"
            " statement, a SELECT too) and this call would not commit it, so a write reported"
            " applied could still be lost: commit or roll back before the guarded write, or pass"
            " caller_commits=True and commit the transaction yourself")
    autocommit = conn.autocommit
    cursor = conn.cursor()
    try:
        if open_already or caller_commits:
            yield cursor
            return
        if autocommit:
            cursor.execute("BEGIN")
        try:
            yield cursor
        except BaseException:
            with contextlib.suppress(psycopg2.Error):
                if autocommit:
                    cursor.execute("ROLLBACK")
                else:
                    conn.rollback()
            raise
        # The outcome is returned only after this commit succeeded; a failed commit raises.
        if autocommit:
            cursor.execute("COMMIT")
        else:
            conn.commit()
    finally:
        cursor.close()


class FencedTable:
    """Guarded writes to one table through one psycopg2 connection (borrowed, not closed)."""

    def __init__(self, conn: "psycopg2.extensions.connection", table: str,
                 key_column: str = "id", token_column: str = "current_token") -> None:
        """Checks the schema (see the module comment). Raises InvalidArgumentError naming what is
        wrong: a bad name, no such table or column, a token column that is not `bigint NOT
        NULL`, a key column without a unique index of its own, the same column twice."""
        self._conn = conn
        self.table = _check_identifier(table, "table")
        self.key_column = _check_identifier(key_column, "key column")
        self.token_column = _check_identifier(token_column, "token column")
        if key_column == token_column:
            raise InvalidArgumentError(f"the key and token columns are both {key_column!r}")
        self._t = sql.Identifier(table)
        self._k = sql.Identifier(key_column)
        self._tok = sql.Identifier(token_column)
        with _translated_errors(f"checking table {table!r}"), \
                _transaction(conn, writes=False) as cursor:
            self.can_hold_placeholder = self._check_schema(cursor)

    def _check_schema(self, cursor: Any) -> bool:
        cursor.execute("SELECT c.oid, c.relkind FROM pg_class c WHERE c.oid = to_regclass(%s)",
                       (self._t.as_string(self._conn),))
        found = cursor.fetchone()
        if found is None or found[1] not in ("r", "p"):
            raise InvalidArgumentError(f"no table named {self.table!r} (names are case-sensitive)")
        oid = found[0]
        cursor.execute(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,"
            "       a.atthasdef, a.attidentity <> '' OR a.attgenerated <> '', a.attnum"
            "  FROM pg_attribute a WHERE a.attrelid = %s AND a.attnum > 0"
            "   AND NOT a.attisdropped", (oid,))
        columns = {row[0]: row[1:] for row in cursor.fetchall()}
        token = columns.get(self.token_column)
        if token is None:
            raise InvalidArgumentError(
                f"table {self.table!r} has no token column {self.token_column!r}: add"
                f" `{self.token_column} bigint NOT NULL DEFAULT 0`")
        if token[0] != "bigint":
            raise InvalidArgumentError(
                f"the token column {self.table}.{self.token_column} is {token[0]}, not bigint")
        if not token[1]:
            raise InvalidArgumentError(
                f"the token column {self.table}.{self.token_column} must be NOT NULL (a NULL"
                " token never compares, and the row could never be written)")
        key = columns.get(self.key_column)
        if key is None:
            raise InvalidArgumentError(f"table {self.table!r} has no column {self.key_column!r}")
        cursor.execute(
            "SELECT 1 FROM pg_index i WHERE i.indrelid = %s AND i.indisunique AND i.indisvalid"
            "   AND i.indnkeyatts = 1 AND i.indkey[0] = %s AND i.indpred IS NULL"
            "   AND i.indexprs IS NULL LIMIT 1", (oid, key[4]))
        if cursor.fetchone() is None:
            raise InvalidArgumentError(
                f"the key column {self.table}.{self.key_column} is not unique on its own (make"
                " it the PRIMARY KEY or give it a single-column UNIQUE constraint)")
        return all(not notnull or hasdef or generated
                   for name, (_, notnull, hasdef, generated, _) in columns.items()
                   if name not in (self.key_column, self.token_column))

    # --- the calls -----------------------------------------------------------------------

    def update(self, key: Any, values: Mapping[str, Any], token: int,
               rule: TokenRule = TokenRule.STRICTLY_NEWER, *,
               caller_commits: bool = False) -> WriteResult:
        """Sets `values` ({column: value or Expression}) on row `key` only if the row's token
        satisfies `rule` against `token`, and sets the row's token to `token` in the same
        statement. Never inserts. Returns APPLIED (committed, or with caller_commits=True applied
        in the caller's transaction), STALE (with the token that won) or NO_SUCH_ROW; raises as
        the module comment says (nothing is written then), also when a transaction it was not
        told about is open on the connection."""
        check_token(token)
        assignments, params = self._assignments(values)
        params.update(fencelock_key=key, fencelock_token=token)
        statement = sql.SQL(
            "UPDATE {t} SET {assignments}, {tok} = %(fencelock_token)s"
            " WHERE {k} = %(fencelock_key)s AND {tok} {op} %(fencelock_token)s"
            " RETURNING {tok}").format(t=self._t, assignments=assignments, tok=self._tok,
                                       k=self._k, op=sql.SQL(rule.value))
        with _translated_errors(f"guarded update of {self.table!r}"), \
                _transaction(self._conn, caller_commits=caller_commits) as cursor:
            cursor.execute(statement, params)
            return self._outcome(cursor, key, token, rule)

    def fence_read(self, key: Any, token: int, rule: TokenRule = TokenRule.NEWER_OR_SAME, *,
                   caller_commits: bool = False) -> WriteResult:
        """Raises row `key`'s token to `token` (if `rule` allows) so that the caller's following
        read counts as a touch by `token`: writes by older tokens are refused from then on. A key
        with no row gets a placeholder row (key and token only) when the table can hold one, and
        NO_SUCH_ROW, with nothing fenced, when it cannot. Call it, then read the row yourself;
        the write that follows must use TokenRule.NEWER_OR_SAME. Transactions as for update()."""
        check_token(token)
        params = {"fencelock_key": key, "fencelock_token": token}
        if self.can_hold_placeholder:
            statement = sql.SQL(
                "INSERT INTO {t} AS existing ({k}, {tok}) VALUES (%(fencelock_key)s,"
                " %(fencelock_token)s) ON CONFLICT ({k}) DO UPDATE SET {tok} = EXCLUDED.{tok}"
                " WHERE existing.{tok} {op} EXCLUDED.{tok} RETURNING {tok}")
        else:
            statement = sql.SQL(
                "UPDATE {t} SET {tok} = %(fencelock_token)s WHERE {k} = %(fencelock_key)s"
                " AND {tok} {op} %(fencelock_token)s RETURNING {tok}")
        statement = statement.format(t=self._t, k=self._k, tok=self._tok,
                                     op=sql.SQL(rule.value))
        with _translated_errors(f"fenced read of {self.table!r}"), \
                _transaction(self._conn, caller_commits=caller_commits) as cursor:
            cursor.execute(statement, params)
            return self._outcome(cursor, key, token, rule)

    def raise_token(self, key: Any, token: int, *,
                    caller_commits: bool = False) -> Optional[int]:
        """Makes row `key`'s token at least `token` (GREATEST), inserting a placeholder row when
        the key has none and the table can hold one. Returns the row's token afterwards — above
        `token` means a newer holder has touched the row — or None when there is no row and no
        placeholder could be made. Transactions as for update()."""
        check_token(token)
        params = {"fencelock_key": key, "fencelock_token": token}
        if self.can_hold_placeholder:
            statement = sql.SQL(
                "INSERT INTO {t} AS existing ({k}, {tok}) VALUES (%(fencelock_key)s,"
                " %(fencelock_token)s) ON CONFLICT ({k}) DO UPDATE"
                " SET {tok} = GREATEST(existing.{tok}, EXCLUDED.{tok}) RETURNING {tok}")
        else:
            statement = sql.SQL(
                "UPDATE {t} SET {tok} = GREATEST({tok}, %(fencelock_token)s)"
                " WHERE {k} = %(fencelock_key)s RETURNING {tok}")
        statement = statement.format(t=self._t, k=self._k, tok=self._tok)
        with _translated_errors(f"raising a token in {self.table!r}"), \
                _transaction(self._conn, caller_commits=caller_commits) as cursor:
            cursor.execute(statement, params)
            row = cursor.fetchone()
            return None if row is None else int(row[0])

    def current_token(self, key: Any) -> Optional[int]:
        """The token stored in row `key`, or None if there is no such row. Fences nothing."""
        with _translated_errors(f"reading a token from {self.table!r}"), \
                _transaction(self._conn, writes=False) as cursor:
            return self._stored_token(cursor, key)

    # --- helpers -------------------------------------------------------------------------

    def _assignments(self, values: Mapping[str, Any]) -> Tuple[sql.Composable, Dict[str, Any]]:
        if not isinstance(values, Mapping) or not values:
            raise InvalidArgumentError("values must be a non-empty dict of column: value")
        parts: List[sql.Composable] = []
        params: Dict[str, Any] = {}
        for i, (column, value) in enumerate(values.items()):
            _check_identifier(column, "column")
            if column in (self.key_column, self.token_column):
                raise InvalidArgumentError(
                    f"values may not set {column!r}: the key and the token are the guard's")
            if isinstance(value, Expression):
                holders = []
                for j, arg in enumerate(value.args):
                    params[f"v{i}_{j}"] = arg
                    holders.append(sql.Placeholder(f"v{i}_{j}"))
                expression: sql.Composable = sql.SQL(value.text).format(*holders)
            elif isinstance(value, sql.Composable):
                raise InvalidArgumentError(
                    f"{column!r}: use fencelock.postgres.Expression for SQL expressions")
            else:
                params[f"v{i}"] = value
                expression = sql.Placeholder(f"v{i}")
            parts.append(sql.SQL("{} = {}").format(sql.Identifier(column), expression))
        return sql.SQL(", ").join(parts), params

    def _stored_token(self, cursor: Any, key: Any) -> Optional[int]:
        cursor.execute(sql.SQL("SELECT {tok} FROM {t} WHERE {k} = %(fencelock_key)s").format(
            tok=self._tok, t=self._t, k=self._k), {"fencelock_key": key})
        row = cursor.fetchone()
        return None if row is None else int(row[0])

    def _outcome(self, cursor: Any, key: Any, token: int, rule: TokenRule) -> WriteResult:
        row = cursor.fetchone()
        if row is not None:
            return WriteResult(Outcome.APPLIED, int(row[0]))
        stored = self._stored_token(cursor, key)
        if stored is None:
            return WriteResult(Outcome.NO_SUCH_ROW, 0)
        allowed = stored < token if rule is TokenRule.STRICTLY_NEWER else stored <= token
        if allowed:
            # The row appeared (or was re-tokened) after our statement looked: what we saw was
            # "no row", and nothing was written.
            return WriteResult(Outcome.NO_SUCH_ROW, 0)
        return WriteResult(Outcome.STALE, stored)


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
