"""Guarded writes on psycopg 3 (sync and async, against the live PostgreSQL) and on sqlite3 (a
real file): applied, a stale token refused, a commit that fails never reported applied, a
transaction the call does not own refused, the schema checked — the contract of
fencelock.postgres, through the SQL and decisions they share."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import tempfile
import unittest
from typing import Any

import fencelock
from fencelock import sqlite as fs

import support
from support import needs_postgres, needs_stack, unique_name

try:
    import psycopg
    from fencelock import psycopg as fpg
except ImportError:  # Python 3.9 from pyenv has no psycopg 3; the client does not need it
    psycopg = None  # type: ignore[assignment]

needs_psycopg = unittest.skipUnless(psycopg is not None, "python3-psycopg is not installed")

SCHEMA = ("CREATE TABLE {t} (id text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, note text,"
          " ref text REFERENCES {t}_refs (id) DEFERRABLE INITIALLY DEFERRED,"
          " current_token bigint NOT NULL DEFAULT 0)")


class SqliteGuardedWrites(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="fencelock-sqlite-")
        self.path = os.path.join(self.dir.name, "bank.db")
        self.conn = sqlite3.connect(self.path)
        self.conn.execute("PRAGMA foreign_keys = ON")
        self.conn.executescript(
            SCHEMA.replace("bigint", "INTEGER").format(t="accounts").replace(
                "CREATE TABLE", "CREATE TABLE accounts_refs (id TEXT PRIMARY KEY);"
                " CREATE TABLE", 1)
            + "; INSERT INTO accounts (id, balance) VALUES ('alice', 100);")

    def tearDown(self) -> None:
        self.conn.close()
        self.dir.cleanup()

    def reopened(self, key: str) -> Any:
        """The row as a new connection to the file sees it: what was committed."""
        other = sqlite3.connect(self.path)
        try:
            return other.execute("SELECT balance, note, current_token FROM accounts WHERE id = ?",
                                 (key,)).fetchone()
        finally:
            other.close()

    def test_a_newer_token_writes_and_an_older_one_is_refused(self) -> None:
        table = fs.FencedTable(self.conn, "accounts")
        self.assertTrue(table.can_hold_placeholder)
        written = table.update("alice", {"balance": fs.Expression("balance + {}", 20),
                                         "note": "B"}, 34)
        self.assertEqual(written, fs.WriteResult(fs.Outcome.APPLIED, 34))
        self.assertEqual(table.update("alice", {"balance": 0, "note": "A"}, 33),
                         fs.WriteResult(fs.Outcome.STALE, 34))
        self.assertEqual(self.reopened("alice"), (120, "B", 34))
        self.assertEqual(table.update("nobody", {"note": "x"}, 99).outcome,
                         fs.Outcome.NO_SUCH_ROW)
        self.assertEqual(table.fence_read("ghost", 40), fs.WriteResult(fs.Outcome.APPLIED, 40))
        self.assertEqual(table.update("ghost", {"note": "late"}, 39).outcome, fs.Outcome.STALE)
        self.assertEqual(table.raise_token("alice", 2**63 - 1), 2**63 - 1)
        self.assertEqual(table.current_token("alice"), 2**63 - 1)
        with self.assertRaises(fencelock.InvalidArgumentError):
            table.update("alice", {"note": "x"}, 2**63)
        with self.assertRaises(fencelock.InvalidArgumentError):
            table.update("alice", {"balance": fs.Expression("balance + :x")}, 5)

    def test_a_commit_that_fails_is_never_reported_applied(self) -> None:
        table = fs.FencedTable(self.conn, "accounts")
        # The deferred foreign key is checked at COMMIT, after the guarded UPDATE succeeded.
        with self.assertRaises(fencelock.InvalidArgumentError) as caught:
            table.update("alice", {"ref": "missing", "note": "lost"}, 5)
        self.assertIn("FOREIGN KEY", caught.exception.message)
        self.assertFalse(self.conn.in_transaction, "the failed transaction was rolled back")
        self.assertEqual(self.reopened("alice"), (100, None, 0))
        self.assertTrue(table.update("alice", {"note": "fine"}, 6))
        self.assertEqual(self.reopened("alice"), (100, "fine", 6))

    def test_a_transaction_it_does_not_own_is_refused_unless_the_caller_commits(self) -> None:
        table = fs.FencedTable(self.conn, "accounts")
        self.conn.execute("INSERT INTO accounts (id, note) VALUES ('mine', 'uncommitted')")
        with self.assertRaises(fencelock.InvalidArgumentError) as caught:
            table.update("alice", {"note": "x"}, 5)
        self.assertIn("caller_commits=True", caught.exception.message)
        self.assertTrue(table.update("alice", {"note": "joined"}, 5, caller_commits=True))
        self.conn.rollback()
        self.assertEqual(self.reopened("alice"), (100, None, 0))
        self.assertIsNone(self.reopened("mine"))

    def test_a_locked_database_is_unavailable(self) -> None:
        other = sqlite3.connect(self.path, timeout=0.05)
        try:
            self.conn.execute("BEGIN IMMEDIATE")
            with self.assertRaises(fencelock.UnavailableError):
                fs.FencedTable(other, "accounts").update("alice", {"note": "x"}, 5)
            self.conn.rollback()
        finally:
            other.close()

    def test_schema_problems_are_clear_errors(self) -> None:
        self.conn.executescript(
            "CREATE TABLE plain (id TEXT PRIMARY KEY, balance INTEGER);"
            "CREATE TABLE nullable (id TEXT PRIMARY KEY, current_token INTEGER);"
            "CREATE TABLE nounique (id TEXT, current_token INTEGER NOT NULL DEFAULT 0);"
            "CREATE TABLE strict (id TEXT PRIMARY KEY, body TEXT NOT NULL,"
            " current_token INTEGER NOT NULL DEFAULT 0);")
        for table, expected in [("plain", "has no token column"), ("nullable", "NOT NULL"),
                                ("nounique", "not unique on its own"), ("nothing", "no table")]:
            with self.assertRaises(fencelock.InvalidArgumentError, msg=table) as caught:
                fs.FencedTable(self.conn, table)
            self.assertIn(expected, caught.exception.message)
        strict = fs.FencedTable(self.conn, "strict")
        self.assertFalse(strict.can_hold_placeholder)
        self.assertEqual(strict.fence_read("ghost", 5).outcome, fs.Outcome.NO_SUCH_ROW)


@needs_psycopg
@needs_postgres
class PsycopgGuardedWrites(unittest.TestCase):
    def setUp(self) -> None:
        self.table = unique_name("accounts").replace("-", "_")
        with psycopg.connect(support.DATABASE_URL, autocommit=True) as setup:
            setup.execute(f"CREATE TABLE {self.table}_refs (id text PRIMARY KEY)")
            setup.execute(SCHEMA.format(t=self.table))
            setup.execute(f"INSERT INTO {self.table} (id, balance) VALUES ('alice', 100)")
        self.conn = psycopg.connect(support.DATABASE_URL)

    def tearDown(self) -> None:
        self.conn.close()
        with psycopg.connect(support.DATABASE_URL, autocommit=True) as cleanup:
            cleanup.execute(f"DROP TABLE {self.table}, {self.table}_refs")

    def reopened(self, key: str) -> Any:
        with psycopg.connect(support.DATABASE_URL) as other:
            return other.execute(f"SELECT balance, note, current_token FROM {self.table}"
                                 " WHERE id = %s", (key,)).fetchone()

    def test_sync_applied_stale_and_a_failed_commit(self) -> None:
        table = fpg.FencedTable(self.conn, self.table)
        self.assertTrue(table.update("alice", {"balance": fpg.Expression("balance + {}", 20)}, 34))
        self.assertEqual(table.update("alice", {"note": "A"}, 33),
                         fpg.WriteResult(fpg.Outcome.STALE, 34))
        with self.assertRaises(fencelock.InvalidArgumentError):
            table.update("alice", {"ref": "missing"}, 35)  # the deferred key fails at COMMIT
        self.assertEqual(self.reopened("alice"), (120, None, 34))
        self.conn.execute("SELECT 1")  # psycopg opens a transaction here
        with self.assertRaises(fencelock.InvalidArgumentError) as caught:
            table.update("alice", {"note": "x"}, 36)
        self.assertIn("caller_commits=True", caught.exception.message)
        with self.conn.transaction():
            self.assertTrue(table.fence_read("alice", 36, caller_commits=True))
            self.assertTrue(table.update("alice", {"note": "rmw"}, 36,
                                         fpg.TokenRule.NEWER_OR_SAME, caller_commits=True))
        self.conn.commit()
        self.assertEqual(self.reopened("alice"), (120, "rmw", 36))
        self.conn.autocommit = True
        self.assertTrue(table.update("alice", {"note": "autocommit"}, 37))
        self.assertEqual(self.reopened("alice"), (120, "autocommit", 37))

    def test_async_applied_stale_and_a_failed_commit(self) -> None:
        async def scenario() -> None:
            aconn = await psycopg.AsyncConnection.connect(support.DATABASE_URL)
            try:
                table = await fpg.AsyncFencedTable.open(aconn, self.table)
                self.assertTrue(table.can_hold_placeholder)
                self.assertEqual(await table.update("alice", {"note": "B"}, 34),
                                 fpg.WriteResult(fpg.Outcome.APPLIED, 34))
                self.assertFalse(await table.update("alice", {"note": "A"}, 33))
                with self.assertRaises(fencelock.InvalidArgumentError):
                    await table.update("alice", {"ref": "missing", "note": "lost"}, 35)
                self.assertEqual(await table.fence_read("ghost", 9),
                                 fpg.WriteResult(fpg.Outcome.APPLIED, 9))
                self.assertEqual(await table.raise_token("ghost", 2**63 - 1), 2**63 - 1)
                self.assertEqual(await table.current_token("alice"), 34)
                with self.assertRaises(fencelock.InvalidArgumentError):
                    await fpg.AsyncFencedTable.open(aconn, "no_such_table")
            finally:
                await aconn.close()
        asyncio.run(scenario())
        self.assertEqual(self.reopened("alice"), (100, "B", 34))
        self.assertEqual(self.reopened("ghost"), (0, None, 2**63 - 1))


@needs_psycopg
@needs_stack
@needs_postgres
class KleppmannOnPsycopgAsync(unittest.IsolatedAsyncioTestCase):
    """A paused holder's write, with the asyncio client and psycopg 3's async connection."""

    async def test_the_paused_holders_stale_write_is_refused(self) -> None:
        from fencelock import aio
        table_name = unique_name("accounts").replace("-", "_")
        aconn = await psycopg.AsyncConnection.connect(support.DATABASE_URL, autocommit=True)
        client = aio.AsyncClient(support.FENCELOCK_ENDPOINT)
        try:
            await aconn.execute(f"CREATE TABLE {table_name} (id text PRIMARY KEY,"
                                " note text, current_token bigint NOT NULL DEFAULT 0)")
            await aconn.execute(f"INSERT INTO {table_name} (id) VALUES ('alice')")
            table = await fpg.AsyncFencedTable.open(aconn, table_name)
            lock = unique_name("account")
            a = await client.acquire(lock, 0.3)
            await asyncio.sleep(0.5)  # A's pause: past its ttl
            async with client.lock(lock, ttl=5.0, wait=2.0) as b:
                self.assertGreater(b.token, a.token)
                self.assertTrue(await table.update("alice", {"note": "B"}, b.token))
            self.assertEqual(await table.update("alice", {"note": "A"}, a.token),
                             fpg.WriteResult(fpg.Outcome.STALE, b.token))
        finally:
            await aconn.execute(f"DROP TABLE IF EXISTS {table_name}")
            await aconn.close()
            await client.aclose()


if __name__ == "__main__":
    unittest.main()
