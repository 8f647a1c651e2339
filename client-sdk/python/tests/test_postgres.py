"""Guarded PostgreSQL writes against a real PostgreSQL 15 and fencelockd: Kleppmann's paused
client, the lost read-modify-write, concurrent writers with interleaved tokens, tokens near 2^63,
placeholders, schema errors, transactions."""

from __future__ import annotations

import threading
import time
import unittest
from typing import Any, List

import fencelock

import support
from support import needs_postgres, needs_stack, unique_name

try:
    import psycopg2
    from fencelock import postgres as fp
except ImportError:  # the client works without psycopg2; these tests need it
    psycopg2 = None  # type: ignore[assignment]

needs_psycopg2 = unittest.skipUnless(psycopg2 is not None, "python3-psycopg2 is not installed")


@needs_psycopg2
@needs_postgres
class PostgresTestCase(unittest.TestCase):
    def setUp(self) -> None:
        self.conn: Any = support.pg_connect()
        self.table = unique_name("accounts").replace("-", "_")
        self.execute(
            f"CREATE TABLE {self.table} (id text PRIMARY KEY, balance bigint NOT NULL DEFAULT 0,"
            " note text, history bigint[] NOT NULL DEFAULT '{}',"
            " current_token bigint NOT NULL DEFAULT 0)")

    def tearDown(self) -> None:
        self.conn.rollback()
        self.execute(f"DROP TABLE IF EXISTS {self.table}")
        self.conn.close()

    def execute(self, statement: str, params: Any = None) -> List[Any]:
        with self.conn.cursor() as cursor:
            cursor.execute(statement, params)
            rows = cursor.fetchall() if cursor.description else []
        self.conn.commit()
        return rows

    def row(self, key: str) -> Any:
        rows = self.execute(f"SELECT balance, note, current_token FROM {self.table} WHERE id = %s",
                            (key,))
        return rows[0] if rows else None


class GuardedWrites(PostgresTestCase):
    def test_a_newer_token_writes_and_an_older_one_is_refused(self) -> None:
        self.execute(f"INSERT INTO {self.table} (id, balance) VALUES ('alice', 100)")
        table = fp.FencedTable(self.conn, self.table)
        written = table.update("alice", {"balance": fp.Expression("balance + {}", 20),
                                         "note": "B"}, 34)
        self.assertEqual(written, fp.WriteResult(fp.Outcome.APPLIED, 34))
        stale = table.update("alice", {"balance": 0, "note": "A"}, 33)
        self.assertEqual(stale, fp.WriteResult(fp.Outcome.STALE, 34))
        self.assertFalse(stale)
        self.assertEqual(self.row("alice"), (120, "B", 34))
        self.assertFalse(table.update("alice", {"note": "again"}, 34).applied,
                         "strictly newer: one write per lease")
        self.assertTrue(table.update("alice", {"note": "again"}, 34, fp.TokenRule.NEWER_OR_SAME))
        self.assertEqual(table.update("nobody", {"note": "x"}, 99).outcome, fp.Outcome.NO_SUCH_ROW)
        self.assertIsNone(self.row("nobody"), "update never inserts")

    def test_the_one_call_helpers(self) -> None:
        self.execute(f"INSERT INTO {self.table} (id) VALUES ('k')")
        self.assertTrue(fp.guarded_update(self.conn, self.table, "id", "k", 5, {"balance": 1}))
        self.assertFalse(fp.guarded_update(self.conn, self.table, "id", "k", 4, {"balance": 2}))
        self.assertEqual(fp.raise_token(self.conn, self.table, "id", "k", 3), 5)
        self.assertEqual(fp.raise_token(self.conn, self.table, "id", "k", 8), 8)
        self.assertEqual(fp.raise_token(self.conn, self.table, "id", "new", 2), 2)
        self.assertEqual(fp.fence_read(self.conn, self.table, "id", "k", 7).outcome,
                         fp.Outcome.STALE)
        self.assertEqual(self.row("k"), (1, None, 8))

    def test_a_fenced_read_of_a_missing_row_leaves_a_placeholder_that_fences(self) -> None:
        table = fp.FencedTable(self.conn, self.table)
        self.assertTrue(table.can_hold_placeholder)
        self.assertEqual(table.fence_read("ghost", 34), fp.WriteResult(fp.Outcome.APPLIED, 34))
        self.assertEqual(self.row("ghost"), (0, None, 34))
        # The paused older holder cannot create or fill it now.
        self.assertEqual(table.update("ghost", {"note": "A"}, 33).outcome, fp.Outcome.STALE)
        self.assertEqual(table.fence_read("ghost", 33).outcome, fp.Outcome.STALE)
        self.assertTrue(table.update("ghost", {"note": "B"}, 34, fp.TokenRule.NEWER_OR_SAME))
        self.assertEqual(table.current_token("ghost"), 34)
        self.assertIsNone(table.current_token("nobody"))

    def test_a_table_that_cannot_hold_a_placeholder_reports_no_such_row(self) -> None:
        name = self.table + "_strict"
        self.execute(f"CREATE TABLE {name} (id text PRIMARY KEY, body text NOT NULL,"
                     " current_token bigint NOT NULL DEFAULT 0)")
        try:
            table = fp.FencedTable(self.conn, name)
            self.assertFalse(table.can_hold_placeholder)
            self.assertEqual(table.fence_read("ghost", 5).outcome, fp.Outcome.NO_SUCH_ROW)
            self.assertIsNone(table.raise_token("ghost", 5))
        finally:
            self.execute(f"DROP TABLE {name}")

    def test_tokens_near_two_to_the_63(self) -> None:
        self.execute(f"INSERT INTO {self.table} (id) VALUES ('big')")
        table = fp.FencedTable(self.conn, self.table)
        top = 2**63 - 1
        self.assertTrue(table.update("big", {"note": "near"}, top - 1))
        self.assertFalse(table.update("big", {"note": "old"}, top - 2))
        self.assertTrue(table.update("big", {"note": "top"}, top))
        self.assertEqual(self.row("big"), (0, "top", top))
        for bad in (2**63, 2**64, 0, -1, True, 1.5, "7"):
            with self.assertRaises(fencelock.InvalidArgumentError, msg=repr(bad)):
                table.update("big", {"note": "x"}, bad)  # type: ignore[arg-type]
            with self.assertRaises(fencelock.InvalidArgumentError, msg=repr(bad)):
                table.fence_read("big", bad)  # type: ignore[arg-type]
        self.assertEqual(self.row("big"), (0, "top", top))

    def test_schema_problems_are_clear_errors(self) -> None:
        plain = self.table + "_plain"
        int_token = self.table + "_int"
        nullable = self.table + "_nullable"
        no_unique = self.table + "_nounique"
        self.execute(f"CREATE TABLE {plain} (id text PRIMARY KEY, balance bigint);"
                     f"CREATE TABLE {int_token} (id text PRIMARY KEY, current_token integer"
                     " NOT NULL DEFAULT 0);"
                     f"CREATE TABLE {nullable} (id text PRIMARY KEY, current_token bigint);"
                     f"CREATE TABLE {no_unique} (id text, current_token bigint NOT NULL"
                     " DEFAULT 0)")
        try:
            cases = [(plain, "has no token column"), (int_token, "not bigint"),
                     (nullable, "NOT NULL"), (no_unique, "not unique on its own"),
                     ("no_such_table", "no table named")]
            for table, expected in cases:
                with self.assertRaises(fencelock.InvalidArgumentError, msg=table) as caught:
                    fp.FencedTable(self.conn, table)
                self.assertIn(expected, caught.exception.message)
                self.assertEqual(caught.exception.code, "invalid_argument")
            with self.assertRaises(fencelock.InvalidArgumentError):
                fp.guarded_update(self.conn, plain, "id", "k", 5, {"balance": 1})
            for bad in ("a;b", "x y", "1abc", ""):
                with self.assertRaises(fencelock.InvalidArgumentError):
                    fp.FencedTable(self.conn, bad)
            with self.assertRaises(fencelock.InvalidArgumentError):
                fp.FencedTable(self.conn, self.table, key_column="missing")
            with self.assertRaises(fencelock.InvalidArgumentError):
                fp.FencedTable(self.conn, self.table, key_column="current_token")
        finally:
            self.execute(f"DROP TABLE {plain}, {int_token}, {nullable}, {no_unique}")
        # The connection is usable afterwards: the checks ended their transaction.
        self.assertIsNotNone(fp.FencedTable(self.conn, self.table))

    def test_bad_values_and_expressions_are_refused_and_change_nothing(self) -> None:
        self.execute(f"INSERT INTO {self.table} (id) VALUES ('v')")
        table = fp.FencedTable(self.conn, self.table)
        for values in ({}, {"current_token": 1}, {"id": "w"}, {"bad name": 1},
                       {"no_such_column": 1}, {"balance": "not a number"}):
            with self.assertRaises(fencelock.InvalidArgumentError, msg=repr(values)):
                table.update("v", values, 5)
        for text in ("balance; DROP TABLE x", "balance -- {}", "'{}'", "balance + %s", "{} {}"):
            with self.assertRaises(fencelock.InvalidArgumentError, msg=text):
                fp.Expression(text, 1)
        self.assertEqual(self.row("v"), (0, None, 0))

    def reopened_row(self, key: str) -> Any:
        """Row `key` as a new connection sees it: what survived this connection's close."""
        self.conn.close()
        self.conn = support.pg_connect()
        return self.row(key)

    def test_a_write_reported_applied_is_durable_after_the_connection_closes(self) -> None:
        # Issue #32 item 8, as the README showed it: fence_read, a SELECT through psycopg2 (which
        # opens a transaction implicitly), the guarded write. It was reported APPLIED inside a
        # transaction nobody committed, and closing the connection threw it away.
        self.execute(f"INSERT INTO {self.table} (id, balance) VALUES ('alice', 100)")
        calls = {
            "update": lambda table, token: table.update(
                "alice", {"balance": 120, "note": "written"}, token, fp.TokenRule.NEWER_OR_SAME),
            "guarded_update": lambda table, token: fp.guarded_update(
                self.conn, self.table, "id", "alice", token, {"balance": 120, "note": "written"},
                rule=fp.TokenRule.NEWER_OR_SAME),
            "fence_read": lambda table, token: table.fence_read("alice", token + 1),
            "raise_token": lambda table, token: table.raise_token("alice", token + 1) == token + 1,
        }
        for token, (name, call) in enumerate(calls.items(), start=10):
            with self.subTest(call=name):
                table = fp.FencedTable(self.conn, self.table)
                self.assertTrue(table.fence_read("alice", token))
                before = self.reopened_row("alice")
                table = fp.FencedTable(self.conn, self.table)
                with self.conn.cursor() as cursor:
                    cursor.execute(f"SELECT balance FROM {self.table} WHERE id = 'alice'")
                try:
                    applied = bool(call(table, token))
                except fencelock.InvalidArgumentError:
                    applied = False  # refused: nothing claimed
                after = self.reopened_row("alice")
                if applied:
                    self.assertNotEqual(after, before, f"{name} reported the write applied, yet"
                                        " the row is unchanged once the connection closed")
                else:
                    self.assertEqual(after, before)
                self.execute(f"UPDATE {self.table} SET balance = 100, note = NULL"
                             " WHERE id = 'alice'")

    def test_the_helper_refuses_to_run_inside_a_transaction_it_does_not_own(self) -> None:
        self.execute(f"INSERT INTO {self.table} (id) VALUES ('t')")
        table = fp.FencedTable(self.conn, self.table)
        with self.conn.cursor() as cursor:  # the caller's own, uncommitted work
            cursor.execute(f"INSERT INTO {self.table} (id, note) VALUES ('mine', 'uncommitted')")
        calls = {
            "update": lambda: table.update("t", {"note": "x"}, 5),
            "fence_read": lambda: table.fence_read("t", 5),
            "raise_token": lambda: table.raise_token("t", 5),
            "guarded_update": lambda: fp.guarded_update(self.conn, self.table, "id", "t", 5,
                                                        {"note": "x"}),
            "one-call fence_read": lambda: fp.fence_read(self.conn, self.table, "id", "t", 5),
            "one-call raise_token": lambda: fp.raise_token(self.conn, self.table, "id", "t", 5),
        }
        for name, call in calls.items():
            with self.subTest(call=name):
                with self.assertRaises(fencelock.InvalidArgumentError) as caught:
                    call()
                self.assertIn("caller_commits=True", caught.exception.message)
                self.assertIn("transaction", caught.exception.message)
        # The caller's transaction is left as it was: still open, its work still in it.
        self.assertEqual(self.conn.get_transaction_status(),
                         psycopg2.extensions.TRANSACTION_STATUS_INTRANS)
        self.assertEqual(table.current_token("t"), 0, "a plain read may join the transaction")
        self.conn.commit()
        self.assertEqual(self.reopened_row("mine"), (0, "uncommitted", 0))
        self.assertEqual(self.row("t"), (0, None, 0), "nothing was written")

    def test_with_caller_commits_the_write_joins_the_callers_transaction(self) -> None:
        self.execute(f"INSERT INTO {self.table} (id) VALUES ('t')")
        table = fp.FencedTable(self.conn, self.table)
        with self.conn.cursor() as cursor:
            cursor.execute("SELECT 1")  # opens a transaction
        self.assertTrue(table.update("t", {"note": "rolled back"}, 5, caller_commits=True))
        self.conn.rollback()
        self.assertEqual(self.row("t"), (0, None, 0))
        # One transaction of the caller's: fenced read, own SELECT, write; it lands at COMMIT.
        with self.conn:
            self.assertTrue(table.fence_read("t", 6, caller_commits=True))
            with self.conn.cursor() as cursor:
                cursor.execute(f"SELECT balance FROM {self.table} WHERE id = 't'")
                balance = cursor.fetchone()[0] + 20
            self.assertTrue(table.update("t", {"balance": balance}, 6,
                                         fp.TokenRule.NEWER_OR_SAME, caller_commits=True))
            self.assertTrue(fp.guarded_update(self.conn, self.table, "id", "t", 6,
                                              {"note": "one transaction"},
                                              rule=fp.TokenRule.NEWER_OR_SAME,
                                              caller_commits=True))
        self.assertEqual(self.reopened_row("t"), (20, "one transaction", 6))
        # In autocommit mode each statement commits by itself, and so does each call.
        self.conn.autocommit = True
        table = fp.FencedTable(self.conn, self.table)
        self.assertTrue(table.update("t", {"note": "autocommit"}, 7))
        self.assertTrue(table.update("t", {"note": "autocommit again"}, 8, caller_commits=True))
        self.conn.autocommit = False
        self.assertEqual(self.reopened_row("t"), (20, "autocommit again", 8))

    def test_concurrent_writers_with_interleaved_tokens_never_apply_an_older_one(self) -> None:
        self.execute(f"INSERT INTO {self.table} (id) VALUES ('hot')")
        tokens = list(range(1, 161))
        next_index = [0]
        mutex = threading.Lock()
        errors: List[BaseException] = []

        def writer() -> None:
            conn: Any = support.pg_connect()
            try:
                table = fp.FencedTable(conn, self.table)
                while True:
                    with mutex:
                        if next_index[0] >= len(tokens):
                            return
                        token = tokens[next_index[0]]
                        next_index[0] += 1
                    # Out of order on purpose: neighbours race each other.
                    table.update("hot", {"history": fp.Expression("array_append(history, {})",
                                                                  token)}, token)
            except BaseException as e:  # reported by the main thread
                errors.append(e)
            finally:
                conn.close()

        threads = [threading.Thread(target=writer) for _ in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual(errors, [])
        history, token = self.execute(
            f"SELECT history, current_token FROM {self.table} WHERE id = 'hot'")[0]
        self.assertEqual(history, sorted(history), "an older token landed after a newer one")
        self.assertEqual(len(set(history)), len(history))
        self.assertEqual(token, history[-1])
        self.assertEqual(token, 160, "the newest token always lands")

    def test_serializable_conflicts_are_unavailable_and_retryable(self) -> None:
        self.execute(f"INSERT INTO {self.table} (id) VALUES ('s')")
        other: Any = support.pg_connect()
        try:
            self.conn.set_session(isolation_level="SERIALIZABLE")
            table = fp.FencedTable(self.conn, self.table)
            with self.conn.cursor() as cursor:
                cursor.execute(f"SELECT balance FROM {self.table} WHERE id = 's'")
            fp.FencedTable(other, self.table).update("s", {"note": "other"}, 10)
            with self.assertRaises(fencelock.UnavailableError):
                table.update("s", {"note": "mine"}, 11, caller_commits=True)
            self.conn.rollback()
            self.assertTrue(table.update("s", {"note": "mine"}, 11))
        finally:
            self.conn.rollback()
            self.conn.set_session(isolation_level="READ COMMITTED")
            other.close()


@needs_stack
class KleppmannScenario(PostgresTestCase):
    """Client A takes the lock, pauses past its ttl; B takes it and writes with its newer token;
    A wakes and writes: refused, and the row holds B's data."""

    def setUp(self) -> None:
        super().setUp()
        self.client = support.PatientClient(support.FENCELOCK_ENDPOINT)
        self.lock = unique_name("account")
        self.execute(f"INSERT INTO {self.table} (id, balance) VALUES ('alice', 100)")

    def tearDown(self) -> None:
        self.client.close()
        super().tearDown()

    def test_the_paused_clients_stale_write_is_refused(self) -> None:
        a = self.client.acquire(self.lock, 0.3)
        time.sleep(0.5)  # A's "GC pause": past its ttl
        self.assertFalse(a.valid())
        b = self.client.acquire(self.lock, 5.0, wait=2.0)
        self.assertGreater(b.token, a.token)
        self.assertTrue(fp.guarded_update(self.conn, self.table, "id", "alice", b.token,
                                          {"balance": 150, "note": "B"}))
        # A wakes up believing it holds the lock.
        self.assertFalse(fp.guarded_update(self.conn, self.table, "id", "alice", a.token,
                                           {"balance": 999, "note": "A"}))
        self.assertEqual(self.row("alice"), (150, "B", b.token))
        self.client.release(b)

    def test_a_fenced_read_modify_write_loses_nothing(self) -> None:
        table = fp.FencedTable(self.conn, self.table)
        other: Any = support.pg_connect()
        try:
            b_table = fp.FencedTable(other, self.table)
            a = self.client.acquire(self.lock, 0.3)
            self.assertTrue(table.fence_read("alice", a.token))
            a_balance = self.row("alice")[0]
            time.sleep(0.5)  # A pauses between its read and its write
            b = self.client.acquire(self.lock, 5.0, wait=2.0)
            self.assertTrue(b_table.fence_read("alice", b.token))
            b_balance = self.row("alice")[0]
            a_write = table.update("alice", {"balance": a_balance + 10}, a.token,
                                   fp.TokenRule.NEWER_OR_SAME)
            self.assertEqual(a_write, fp.WriteResult(fp.Outcome.STALE, b.token))
            self.assertTrue(b_table.update("alice", {"balance": b_balance + 20}, b.token,
                                           fp.TokenRule.NEWER_OR_SAME))
            self.assertEqual(self.row("alice")[0], 120)
            self.client.release(b)
        finally:
            other.close()

    def test_a_kept_lease_writes_and_a_lost_one_is_refused_by_the_table(self) -> None:
        with self.client.lock(self.lock, ttl=1.0, raise_if_lost=False) as lease:
            self.assertTrue(fp.guarded_update(self.conn, self.table, "id", "alice", lease.token,
                                              {"note": "first"}))
            support.delete_lock_keys(self.lock)
            self.assertTrue(lease.lost.wait(2.0))
            newer = self.client.acquire(self.lock, 5.0)
            self.assertTrue(fp.guarded_update(self.conn, self.table, "id", "alice",
                                              newer.token, {"note": "newer"}))
            self.assertFalse(fp.guarded_update(self.conn, self.table, "id", "alice",
                                               lease.token, {"note": "late"},
                                               rule=fp.TokenRule.NEWER_OR_SAME))
            self.client.release(newer)
        self.assertEqual(self.row("alice")[1], "newer")


if __name__ == "__main__":
    unittest.main()
