"""The Python blocks of client-sdk/python/README.md: every block compiles and names only real
things from fencelock, and the blocks that write to PostgreSQL or SQLite or use the asyncio client
run as written — their text is taken from the README, not retyped — against the live stack's
PostgreSQL and fencelockd, and what they wrote is still there after the connection is closed and a
new one opened."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import re
import sqlite3
import tempfile
import types
import unittest
import uuid
from typing import Any, Dict, List

import fencelock
from fencelock import errors

import support
from support import needs_postgres, needs_stack

HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(HERE, "..", "README.md")
READMES = [README]
# The Quick example's endpoints are addresses of the reader's network; the only change the test
# makes to a block is to point them at the live stack.
EXAMPLE_ENDPOINTS = '["http://10.0.0.7:8080", "http://10.0.0.8:8080"]'


def python_blocks(path: str) -> List[str]:
    with open(path) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


class ReadmeBlocks(unittest.TestCase):
    def test_python_blocks_compile_and_name_real_things(self) -> None:
        try:
            from fencelock import postgres
        except ImportError:
            postgres = None  # type: ignore[assignment]
        for path in READMES:
            blocks = python_blocks(path)
            self.assertTrue(blocks, path)
            for block in blocks:
                compile(block, path, "exec")
                for attribute in re.findall(r"\bfencelock\.([A-Za-z_]+)", block):
                    self.assertTrue(hasattr(fencelock, attribute) or hasattr(errors, attribute)
                                    or attribute == "postgres", attribute)
                if postgres is not None:
                    for attribute in re.findall(r"\bpostgres\.([A-Za-z_]+)", block):
                        self.assertTrue(hasattr(postgres, attribute), attribute)


@needs_stack
@needs_postgres
class ReadmeGuardedWritesRunAsWritten(unittest.TestCase):
    """Runs the README's guarded-write blocks in order in one namespace, as a reader pasting them
    into one session would, in a PostgreSQL schema of their own (the blocks name `accounts` and
    `invoices`). The test provides what the blocks take as given: `conn` (a fresh psycopg2
    connection, not in autocommit mode), `lease` (a real lease), `batches`."""

    def setUp(self) -> None:
        try:
            import psycopg2
        except ImportError:
            self.skipTest("python3-psycopg2 is not installed")
        self.psycopg2 = psycopg2
        self.schema = f"readme_{uuid.uuid4().hex[:12]}"
        self.conn: Any = self.connect()
        with self.conn.cursor() as cursor:
            cursor.execute(f"CREATE SCHEMA {self.schema}")
            cursor.execute(f"SET search_path TO {self.schema}")
            cursor.execute("CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL"
                           " DEFAULT 0, current_token bigint NOT NULL DEFAULT 0)")
            cursor.execute("CREATE TABLE invoices (id bigint PRIMARY KEY, status text,"
                           " current_token bigint NOT NULL DEFAULT 0)")
            cursor.execute("INSERT INTO accounts (id, balance) VALUES ('alice', 100)")
            cursor.execute("INSERT INTO invoices (id, status) VALUES (42, 'open')")
        self.conn.commit()
        self.client = support.PatientClient(support.FENCELOCK_ENDPOINT)
        self.lease = self.client.acquire(support.unique_name("account-alice"), 30)

    def tearDown(self) -> None:
        self.client.release(self.lease)
        self.client.close()
        self.conn.close()
        with self.connect() as cleanup, cleanup.cursor() as cursor:
            cursor.execute(f"DROP SCHEMA {self.schema} CASCADE")
        cleanup.close()

    def connect(self) -> Any:
        conn = self.psycopg2.connect(support.DATABASE_URL, connect_timeout=5)
        if getattr(self, "schema", None):
            with conn.cursor() as cursor:
                cursor.execute(f"SET search_path TO {self.schema}")
            conn.commit()
        return conn

    def test_every_guarded_write_block_lands_and_survives_the_connection(self) -> None:
        blocks = [block for block in python_blocks(README) if "postgres" in block]
        self.assertEqual(len(blocks), 3, "the Quick example, FencedTable, read-modify-write")
        namespace: Dict[str, Any] = {
            "conn": self.conn, "batches": [types.SimpleNamespace(status="paid")]}
        quick_lease = None
        for block in blocks:
            quick = EXAMPLE_ENDPOINTS in block
            if quick:
                block = block.replace(EXAMPLE_ENDPOINTS, repr([support.FENCELOCK_ENDPOINT]))
            namespace["lease"] = self.lease  # the Quick example binds its own
            try:
                exec(compile(block, README, "exec"), namespace)
            finally:
                if isinstance(namespace.get("client"), fencelock.Client):
                    namespace.pop("client").close()
            if quick:
                quick_lease = namespace["lease"]
        assert quick_lease is not None
        self.conn.close()
        reopened = self.connect()
        try:
            with reopened.cursor() as cursor:
                cursor.execute("SELECT status, current_token FROM invoices WHERE id = 42")
                self.assertEqual(cursor.fetchone(), ("paid", quick_lease.token))
                cursor.execute("SELECT balance, current_token FROM accounts WHERE id = 'alice'")
                # 100, +20 by the FencedTable block, +20 by the read-modify-write.
                self.assertEqual(cursor.fetchone(), (140, self.lease.token))
        finally:
            reopened.close()


def block_with(text: str) -> str:
    """The one README block that contains `text`."""
    blocks = [block for block in python_blocks(README) if text in block]
    assert len(blocks) == 1, (text, len(blocks))
    return blocks[0]


@needs_stack
class ReadmeAsyncioAndSqliteRunAsWritten(unittest.TestCase):
    def test_the_asyncio_block_holds_the_lock_and_releases_it(self) -> None:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(block_with("aio.AsyncClient()"), README, "exec"), {})
        self.assertIn("holding invoice-42 with token", printed.getvalue())
        with support.PatientClient(support.FENCELOCK_ENDPOINT) as client:
            self.assertFalse(client.status("invoice-42").held)

    def test_the_sqlite_block_writes_a_committed_row_into_bank_db(self) -> None:
        with support.PatientClient(support.FENCELOCK_ENDPOINT) as client, \
                tempfile.TemporaryDirectory() as tmp:
            lease = client.acquire(support.unique_name("account-alice"), 30)
            cwd = os.getcwd()
            os.chdir(tmp)
            try:
                namespace: Dict[str, Any] = {"lease": lease}
                exec(compile(block_with("sqlite3.connect"), README, "exec"), namespace)
                namespace["db"].close()
            finally:
                os.chdir(cwd)
                client.release(lease)
            db = sqlite3.connect(os.path.join(tmp, "bank.db"))
            try:
                self.assertEqual(db.execute("SELECT balance, current_token FROM accounts").fetchall(),
                                 [(20, lease.token)])
            finally:
                db.close()


@needs_stack
@needs_postgres
class ReadmePsycopg3RunsAsWritten(unittest.TestCase):
    """The psycopg 3 block, sync part as written and its async function awaited, with `conn`,
    `aconn` and `lease` provided, in a schema of its own."""

    def test_the_psycopg_block_and_its_async_function_land(self) -> None:
        try:
            import psycopg
        except ImportError:
            self.skipTest("python3-psycopg is not installed")
        schema = f"readme3_{uuid.uuid4().hex[:12]}"
        options = f"-c search_path={schema}"
        with psycopg.connect(support.DATABASE_URL, autocommit=True) as setup:
            setup.execute(f"CREATE SCHEMA {schema}")
            setup.execute(f"CREATE TABLE {schema}.accounts (id text PRIMARY KEY, balance bigint"
                          " NOT NULL DEFAULT 0, current_token bigint NOT NULL DEFAULT 0)")
            setup.execute(f"INSERT INTO {schema}.accounts (id, balance) VALUES ('alice', 100)")
        client = support.PatientClient(support.FENCELOCK_ENDPOINT)
        first = client.acquire(support.unique_name("account-alice"), 30)
        try:
            namespace: Dict[str, Any] = {
                "conn": psycopg.connect(support.DATABASE_URL, options=options), "lease": first}
            with contextlib.redirect_stdout(io.StringIO()) as printed:
                exec(compile(block_with("fenced.AsyncFencedTable.open"), README, "exec"),
                     namespace)
            self.assertIn("APPLIED", printed.getvalue())
            namespace["conn"].close()
            client.release(first)
            second = client.acquire(first.name, 30)

            async def deposit() -> Any:
                aconn = await psycopg.AsyncConnection.connect(support.DATABASE_URL,
                                                              options=options)
                try:
                    return await namespace["deposit"](aconn, second)
                finally:
                    await aconn.close()
            self.assertTrue(asyncio.run(deposit()))
            client.release(second)
            with psycopg.connect(support.DATABASE_URL, options=options) as reopened:
                self.assertEqual(reopened.execute(
                    "SELECT balance, current_token FROM accounts").fetchall(),
                    [(140, second.token)])
        finally:
            client.close()
            with psycopg.connect(support.DATABASE_URL, autocommit=True) as cleanup:
                cleanup.execute(f"DROP SCHEMA {schema} CASCADE")


if __name__ == "__main__":
    unittest.main()
