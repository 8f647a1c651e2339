"""The Python blocks of client-sdk/python/README.md: every block compiles and names only real
things from fencelock, and the blocks that write to PostgreSQL run as written — their text is taken
from the README, not retyped — against the live stack's PostgreSQL and fencelockd, and what they
wrote is still there after the connection is closed and a new one opened."""

from __future__ import annotations

import os
import re
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
        for block in blocks:
            if EXAMPLE_ENDPOINTS in block:
                block = block.replace(EXAMPLE_ENDPOINTS, repr([support.FENCELOCK_ENDPOINT]))
            namespace["lease"] = self.lease  # the Quick example binds its own
            try:
                exec(compile(block, README, "exec"), namespace)
            finally:
                if isinstance(namespace.get("client"), fencelock.Client):
                    namespace.pop("client").close()
        quick_lease = namespace["lease"]
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


if __name__ == "__main__":
    unittest.main()
