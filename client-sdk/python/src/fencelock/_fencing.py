"""The guarded-write logic that every database module shares (fencelock.postgres on psycopg2,
fencelock.psycopg on psycopg 3, sync and async, fencelock.sqlite on sqlite3): the SQL, the
decision of each outcome, the schema checks, and the transaction rule. The modules only say how
their driver runs a statement, begins, commits and rolls back, and which driver errors mean what.

Each call is a generator of Query steps (sans I/O): it yields a statement, receives its rows, and
returns its result; a sync or an async runner drives it over a cursor. So the SQL and the
decisions exist once, whatever the driver and whether it is awaited.

The contract (postgres.py's module comment, docs/sdk.md "Guarded writes"): the check and the
write are one statement; a call that writes never reports APPLIED for a write that is not
committed — it runs in a transaction of its own and commits it before returning, refuses to join
a transaction it finds open unless told caller_commits=True, and raises (nothing reported applied)
when the commit fails.
"""

from __future__ import annotations

import contextlib
import enum
import re
from dataclasses import dataclass
from typing import (Any, Callable, Dict, Generator, Iterator, List, Mapping, NamedTuple, Optional,
                    Tuple, Type)

from .errors import FencelockError, InternalError, InvalidArgumentError, UnavailableError

MAX_TOKEN = 2**63 - 1

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
# What may not appear in an Expression's SQL text: anything that could end the statement, open a
# comment or a string swallowing the fencing condition, or clash with the drivers' parameters.
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
    arguments); on SQLite also ':', '?' and '@' (its parameter marks)."""

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


def check_identifier(name: Any, what: str) -> str:
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise InvalidArgumentError(
            f"{what} {name!r} is not an identifier of the form [A-Za-z_][A-Za-z0-9_]*"
            " (at most 63 characters)")
    return name


def quoted(identifier: str) -> str:
    """A checked identifier as SQL: double-quoted, so case-sensitive in PostgreSQL (what
    psycopg's sql.Identifier makes of it; nothing to escape in [A-Za-z0-9_])."""
    return f'"{identifier}"'


# --- dialects --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Dialect:
    name: str
    param: Callable[[str], str]  # a named parameter's mark
    greatest: str                # the two-argument maximum
    forbidden: Tuple[str, ...]   # more marks an Expression may not contain
    schema: Callable[["Statements"], "Steps[bool]"]  # the schema check (returns placeholder)


class Query(NamedTuple):
    sql: str
    params: Dict[str, Any]
    fetch: str  # "one" (a row or None) or "all" (a list of rows)


Steps = Generator[Query, Any, Any]


# --- the statements of one table -------------------------------------------------------------

class Statements:
    """The SQL of one fenced table in one dialect, and each call as Query steps."""

    def __init__(self, dialect: Dialect, table: str, key_column: str,
                 token_column: str) -> None:
        self.dialect = dialect
        self.table = check_identifier(table, "table")
        self.key_column = check_identifier(key_column, "key column")
        self.token_column = check_identifier(token_column, "token column")
        if key_column == token_column:
            raise InvalidArgumentError(f"the key and token columns are both {key_column!r}")
        self.can_hold_placeholder = False
        p = dialect.param
        self._t, self._k, self._tok = quoted(table), quoted(key_column), quoted(token_column)
        self._key, self._token = p("fencelock_key"), p("fencelock_token")

    def schema_steps(self) -> Steps:
        self.can_hold_placeholder = yield from self.dialect.schema(self)
        return self.can_hold_placeholder

    def update_steps(self, key: Any, values: Mapping[str, Any], token: int,
                     rule: TokenRule) -> Steps:
        check_token(token)
        assignments, params = self._assignments(values)
        params.update(fencelock_key=key, fencelock_token=token)
        row = yield Query(
            f"UPDATE {self._t} SET {assignments}, {self._tok} = {self._token}"
            f" WHERE {self._k} = {self._key} AND {self._tok} {rule.value} {self._token}"
            f" RETURNING {self._tok}", params, "one")
        return (yield from self._outcome(row, key, token, rule))

    def fence_read_steps(self, key: Any, token: int, rule: TokenRule) -> Steps:
        check_token(token)
        if self.can_hold_placeholder:
            statement = (
                f"INSERT INTO {self._t} AS existing ({self._k}, {self._tok}) VALUES"
                f" ({self._key}, {self._token}) ON CONFLICT ({self._k}) DO UPDATE SET"
                f" {self._tok} = excluded.{self._tok}"
                f" WHERE existing.{self._tok} {rule.value} excluded.{self._tok}"
                f" RETURNING {self._tok}")
        else:
            statement = (
                f"UPDATE {self._t} SET {self._tok} = {self._token} WHERE {self._k} = {self._key}"
                f" AND {self._tok} {rule.value} {self._token} RETURNING {self._tok}")
        row = yield Query(statement, self._key_and_token(key, token), "one")
        return (yield from self._outcome(row, key, token, rule))

    def raise_token_steps(self, key: Any, token: int) -> Steps:
        check_token(token)
        greatest = self.dialect.greatest
        if self.can_hold_placeholder:
            statement = (
                f"INSERT INTO {self._t} AS existing ({self._k}, {self._tok}) VALUES"
                f" ({self._key}, {self._token}) ON CONFLICT ({self._k}) DO UPDATE"
                f" SET {self._tok} = {greatest}(existing.{self._tok}, excluded.{self._tok})"
                f" RETURNING {self._tok}")
        else:
            statement = (
                f"UPDATE {self._t} SET {self._tok} = {greatest}({self._tok}, {self._token})"
                f" WHERE {self._k} = {self._key} RETURNING {self._tok}")
        row = yield Query(statement, self._key_and_token(key, token), "one")
        return None if row is None else int(row[0])

    def current_token_steps(self, key: Any) -> Steps:
        row = yield self._select_token(key)
        return None if row is None else int(row[0])

    # --- helpers -------------------------------------------------------------------------

    def _key_and_token(self, key: Any, token: int) -> Dict[str, Any]:
        return {"fencelock_key": key, "fencelock_token": token}

    def _select_token(self, key: Any) -> Query:
        return Query(f"SELECT {self._tok} FROM {self._t} WHERE {self._k} = {self._key}",
                     {"fencelock_key": key}, "one")

    def _outcome(self, row: Any, key: Any, token: int, rule: TokenRule) -> Steps:
        if row is not None:
            return WriteResult(Outcome.APPLIED, int(row[0]))
        stored_row = yield self._select_token(key)
        if stored_row is None:
            return WriteResult(Outcome.NO_SUCH_ROW, 0)
        stored = int(stored_row[0])
        allowed = stored < token if rule is TokenRule.STRICTLY_NEWER else stored <= token
        if allowed:
            # The row appeared (or was re-tokened) after our statement looked: what we saw was
            # "no row", and nothing was written.
            return WriteResult(Outcome.NO_SUCH_ROW, 0)
        return WriteResult(Outcome.STALE, stored)

    def _assignments(self, values: Mapping[str, Any]) -> Tuple[str, Dict[str, Any]]:
        if not isinstance(values, Mapping) or not values:
            raise InvalidArgumentError("values must be a non-empty dict of column: value")
        parts: List[str] = []
        params: Dict[str, Any] = {}
        for i, (column, value) in enumerate(values.items()):
            check_identifier(column, "column")
            if column.lower() in (self.key_column.lower(), self.token_column.lower()):
                raise InvalidArgumentError(
                    f"values may not set {column!r}: the key and the token are the guard's")
            if isinstance(value, Expression):
                if any(bad in value.text for bad in self.dialect.forbidden):
                    raise InvalidArgumentError(
                        f"Expression {value.text!r}: {', '.join(self.dialect.forbidden)} are not"
                        f" allowed in {self.dialect.name}; pass values as arguments")
                holders = []
                for j, arg in enumerate(value.args):
                    params[f"v{i}_{j}"] = arg
                    holders.append(self.dialect.param(f"v{i}_{j}"))
                expression = value.text.format(*holders)
            elif hasattr(value, "as_string"):  # psycopg's sql.Composable
                raise InvalidArgumentError(
                    f"{column!r}: use fencelock's Expression for SQL expressions")
            else:
                params[f"v{i}"] = value
                expression = self.dialect.param(f"v{i}")
            parts.append(f"{quoted(column)} = {expression}")
        return ", ".join(parts), params


# --- schema checks ---------------------------------------------------------------------------

def _postgres_schema(s: Statements) -> Steps:
    """PostgreSQL: a table; a `bigint NOT NULL` token column; a key column with a unique, valid,
    non-partial single-column index. Returns whether a placeholder row fits."""
    regclass = {"t": quoted(s.table)}
    found = yield Query("SELECT c.relkind FROM pg_class c WHERE c.oid = to_regclass(%(t)s)",
                        regclass, "one")
    if found is None or found[0] not in ("r", "p"):
        raise InvalidArgumentError(f"no table named {s.table!r} (names are case-sensitive)")
    rows = yield Query(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,"
        "       a.atthasdef, a.attidentity <> '' OR a.attgenerated <> '', a.attnum"
        "  FROM pg_attribute a WHERE a.attrelid = to_regclass(%(t)s) AND a.attnum > 0"
        "   AND NOT a.attisdropped", regclass, "all")
    columns = {row[0]: row[1:] for row in rows}
    token = columns.get(s.token_column)
    if token is None:
        raise InvalidArgumentError(
            f"table {s.table!r} has no token column {s.token_column!r}: add"
            f" `{s.token_column} bigint NOT NULL DEFAULT 0`")
    if token[0] != "bigint":
        raise InvalidArgumentError(
            f"the token column {s.table}.{s.token_column} is {token[0]}, not bigint")
    if not token[1]:
        raise InvalidArgumentError(
            f"the token column {s.table}.{s.token_column} must be NOT NULL (a NULL"
            " token never compares, and the row could never be written)")
    key = columns.get(s.key_column)
    if key is None:
        raise InvalidArgumentError(f"table {s.table!r} has no column {s.key_column!r}")
    unique = yield Query(
        "SELECT 1 FROM pg_index i WHERE i.indrelid = to_regclass(%(t)s) AND i.indisunique"
        "   AND i.indisvalid AND i.indnkeyatts = 1 AND i.indkey[0] = %(attnum)s::int2"
        "   AND i.indpred IS NULL AND i.indexprs IS NULL LIMIT 1",
        {**regclass, "attnum": int(key[4])}, "one")
    if unique is None:
        raise InvalidArgumentError(
            f"the key column {s.table}.{s.key_column} is not unique on its own (make"
            " it the PRIMARY KEY or give it a single-column UNIQUE constraint)")
    return all(not notnull or hasdef or generated
               for name, (_, notnull, hasdef, generated, _) in columns.items()
               if name not in (s.key_column, s.token_column))


def _sqlite_schema(s: Statements) -> Steps:
    """SQLite (as the C++ SqliteFencedBackend): a table; a NOT NULL token column; a key column
    that is the whole primary key or has a full single-column unique index. Names compare
    case-insensitively, as SQLite does. Returns whether a placeholder row fits."""
    found = yield Query("SELECT wr FROM pragma_table_list(:t) WHERE type = 'table'",
                        {"t": s.table}, "one")
    if found is None:
        raise InvalidArgumentError(f"no table named {s.table!r}")
    without_rowid = bool(found[0])
    rows = yield Query("SELECT name, pk, \"notnull\", dflt_value IS NOT NULL,"
                       " upper(type) = 'INTEGER' FROM pragma_table_info(:t)", {"t": s.table},
                       "all")
    columns = {row[0].lower(): row[1:] for row in rows}
    token = columns.get(s.token_column.lower())
    if token is None:
        raise InvalidArgumentError(
            f"table {s.table!r} has no token column {s.token_column!r}: add"
            f" `{s.token_column} INTEGER NOT NULL DEFAULT 0`")
    if not token[1]:
        raise InvalidArgumentError(
            f"the token column {s.table}.{s.token_column} must be NOT NULL (a NULL"
            " token never compares, and the row could never be written)")
    key = columns.get(s.key_column.lower())
    if key is None:
        raise InvalidArgumentError(f"table {s.table!r} has no column {s.key_column!r}")
    primary_key_columns = sum(1 for c in columns.values() if c[0] > 0)
    if not (key[0] == 1 and primary_key_columns == 1):
        unique = yield Query(
            "SELECT count(*) FROM pragma_index_list(:t) AS il"
            " WHERE il.\"unique\" = 1 AND il.partial = 0"
            " AND (SELECT count(*) FROM pragma_index_info(il.name)) = 1"
            " AND (SELECT ii.name FROM pragma_index_info(il.name) AS ii) = :k COLLATE NOCASE",
            {"t": s.table, "k": s.key_column}, "one")
        if not unique[0]:
            raise InvalidArgumentError(
                f"the key column {s.table}.{s.key_column} is not unique on its own (make"
                " it the PRIMARY KEY or give it a single-column UNIQUE constraint)")
    # A placeholder row (key and token only) fits unless another column is NOT NULL without a
    # default, or part of the primary key (but a rowid table's lone INTEGER PRIMARY KEY).
    others = [c for name, c in columns.items()
              if name not in (s.key_column.lower(), s.token_column.lower())]
    unfillable = sum(1 for c in others if c[0] > 0 or (c[1] and not c[2]))
    if primary_key_columns == 1 and not without_rowid and any(c[0] > 0 and c[3] for c in others):
        unfillable -= 1
    return unfillable == 0


POSTGRES = Dialect("PostgreSQL", lambda name: f"%({name})s", "GREATEST", (), _postgres_schema)
SQLITE = Dialect("SQLite", lambda name: f":{name}", "max", (":", "?", "@"), _sqlite_schema)


# --- running the steps -----------------------------------------------------------------------

def run(steps: Steps, execute: Callable[[Query], Any]) -> Any:
    """Drives `steps` with a blocking `execute(query) -> rows`; returns what the steps return."""
    try:
        query = next(steps)
        while True:
            query = steps.send(execute(query))
    except StopIteration as done:
        return done.value


async def run_async(steps: Steps, execute: Callable[[Query], Any]) -> Any:
    """run() with an awaitable `execute`."""
    try:
        query = next(steps)
        while True:
            query = steps.send(await execute(query))
    except StopIteration as done:
        return done.value


# --- transactions and errors -----------------------------------------------------------------

IDLE, IN_TRANSACTION, FAILED, BUSY = "idle", "in transaction", "failed", "busy"


def transaction_plan(status: str, writes: bool, caller_commits: bool, opens: str) -> bool:
    """Whether the call runs in a transaction of its own that it commits (True) or inside
    whatever the caller has open (False); raises InvalidArgumentError when a write may do
    neither. `opens` says when the driver opens a transaction implicitly, for the message."""
    if status == FAILED:
        raise InvalidArgumentError(
            "the connection's transaction has failed: roll it back before writing")
    if status == BUSY:
        raise InvalidArgumentError("the connection is busy or broken")
    if status == IN_TRANSACTION and writes and not caller_commits:
        raise InvalidArgumentError(
            f"a transaction is open on this connection ({opens}) and this call would not commit"
            " it, so a write reported applied could still be lost: commit or roll back before"
            " the guarded write, or pass caller_commits=True and commit the transaction"
            " yourself")
    return status == IDLE and not caller_commits


class ErrorKinds(NamedTuple):
    """Which driver exceptions mean what."""

    base: Tuple[Type[BaseException], ...]         # every error of the driver
    retry: Callable[[BaseException], bool]        # -> UnavailableError (retry the transaction)
    invalid: Tuple[Type[BaseException], ...]      # -> InvalidArgumentError
    message: Callable[[BaseException], str]


@contextlib.contextmanager
def translated_errors(kinds: ErrorKinds, doing: str) -> Iterator[None]:
    try:
        yield
    except FencelockError:
        raise
    except kinds.base as e:
        text = f"{doing}: {kinds.message(e)}"
        if kinds.retry(e):
            raise UnavailableError(text + " (retry)") from e
        if isinstance(e, kinds.invalid):
            raise InvalidArgumentError(text) from e
        raise InternalError(text) from e


def first_line(error: BaseException) -> str:
    text = (getattr(error, "pgerror", None) or str(error)).strip()
    return text.splitlines()[0] if text else type(error).__name__


# --- the tables ------------------------------------------------------------------------------

class _Table:
    """What the sync and async tables share: the statements and the calls' descriptions."""

    _dialect: Dialect
    _errors: ErrorKinds
    _opens: str  # when the driver opens a transaction implicitly (for an error message)

    def _prepare(self, conn: Any, table: str, key_column: str, token_column: str) -> None:
        self._conn = conn
        self._s = Statements(self._dialect, table, key_column, token_column)

    @property
    def table(self) -> str:
        return self._s.table

    @property
    def key_column(self) -> str:
        return self._s.key_column

    @property
    def token_column(self) -> str:
        return self._s.token_column

    @property
    def can_hold_placeholder(self) -> bool:
        """Whether a fenced read of a missing key can leave a placeholder row (module comment)."""
        return self._s.can_hold_placeholder

    def _explicit_begin(self) -> bool:
        """True: BEGIN and COMMIT are statements; False: the driver begins implicitly and
        commits with conn.commit()."""
        return bool(getattr(self._conn, "autocommit", True))

    def _begin_sql(self, writes: bool) -> str:
        return "BEGIN"

    def _status(self) -> str:
        raise NotImplementedError

    def _doing(self, what: str) -> str:
        return f"{what} {self._s.table!r}"


class SyncTable(_Table):
    """Guarded writes through a blocking DB-API connection (borrowed, not closed)."""

    def __init__(self, conn: Any, table: str, key_column: str = "id",
                 token_column: str = "current_token") -> None:
        """Checks the schema. Raises InvalidArgumentError naming what is wrong."""
        self._prepare(conn, table, key_column, token_column)
        self._run(self._s.schema_steps(), "checking table", writes=False)

    def update(self, key: Any, values: Mapping[str, Any], token: int,
               rule: TokenRule = TokenRule.STRICTLY_NEWER, *,
               caller_commits: bool = False) -> WriteResult:
        """Sets `values` ({column: value or Expression}) on row `key` only if the row's token
        satisfies `rule` against `token`, and sets the row's token to `token` in the same
        statement. Never inserts. APPLIED (committed, or with caller_commits=True applied in the
        caller's transaction), STALE (with the token that won) or NO_SUCH_ROW."""
        return self._run(self._s.update_steps(key, values, token, rule), "guarded update of",
                         caller_commits=caller_commits)

    def fence_read(self, key: Any, token: int, rule: TokenRule = TokenRule.NEWER_OR_SAME, *,
                   caller_commits: bool = False) -> WriteResult:
        """Raises row `key`'s token to `token` (if `rule` allows) before the caller reads the
        row, inserting a placeholder row when the key has none and the table can hold one."""
        return self._run(self._s.fence_read_steps(key, token, rule), "fenced read of",
                         caller_commits=caller_commits)

    def raise_token(self, key: Any, token: int, *,
                    caller_commits: bool = False) -> Optional[int]:
        """Makes row `key`'s token at least `token`; returns the row's token afterwards, or None
        when there is no row and no placeholder could be made."""
        return self._run(self._s.raise_token_steps(key, token), "raising a token in",
                         caller_commits=caller_commits)

    def current_token(self, key: Any) -> Optional[int]:
        """The token stored in row `key`, or None if there is no such row. Fences nothing."""
        return self._run(self._s.current_token_steps(key), "reading a token from", writes=False)

    def _run(self, steps: Steps, doing: str, *, writes: bool = True,
             caller_commits: bool = False) -> Any:
        with translated_errors(self._errors, self._doing(doing)):
            own = transaction_plan(self._status(), writes, caller_commits, self._opens)
            cursor = self._conn.cursor()
            try:
                if not own:
                    return run(steps, lambda query: _fetch(cursor, query))
                if self._explicit_begin():
                    cursor.execute(self._begin_sql(writes))
                try:
                    result = run(steps, lambda query: _fetch(cursor, query))
                    # The outcome is returned only after this commit succeeded.
                    self._finish(cursor, "COMMIT")
                except BaseException:
                    with contextlib.suppress(*self._errors.base):
                        self._finish(cursor, "ROLLBACK")
                    raise
                return result
            finally:
                cursor.close()

    def _finish(self, cursor: Any, how: str) -> None:
        if self._explicit_begin():
            if how == "COMMIT" or self._status() != IDLE:
                cursor.execute(how)
        elif how == "COMMIT":
            self._conn.commit()
        else:
            self._conn.rollback()


def _fetch(cursor: Any, query: Query) -> Any:
    cursor.execute(query.sql, query.params)
    return cursor.fetchone() if query.fetch == "one" else cursor.fetchall()
