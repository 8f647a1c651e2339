"""Runs app.py against the live stack: concurrent deposits lose nothing, and a write with a stale
token is refused. Needs FENCELOCK_ENDPOINT, DATABASE_URL and PYTHONPATH with client-sdk/python/src
(client-sdk/python/test.sh sets them); the app listens on FENCELOCK_EXAMPLE_PORT (17970)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request
import uuid
from typing import Any, List, Tuple

import psycopg2

import fencelock
from fencelock import postgres

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = int(os.environ.get("FENCELOCK_EXAMPLE_PORT", "17970"))
BASE = f"http://127.0.0.1:{PORT}"


def call(method: str, path: str, body: Any = None) -> Tuple[int, Any]:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(BASE + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


@unittest.skipUnless(os.environ.get("FENCELOCK_ENDPOINT") and os.environ.get("DATABASE_URL"),
                     "no live stack (run client-sdk/python/test.sh)")
class PythonBackendExample(unittest.TestCase):
    app: "subprocess.Popen[bytes]"

    @classmethod
    def setUpClass(cls) -> None:
        cls.app = subprocess.Popen([sys.executable, os.path.join(HERE, "app.py"), "--listen",
                                    f"127.0.0.1:{PORT}", "--init-db"])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                urllib.request.urlopen(BASE + "/accounts/probe", timeout=1).read()
                return
            except OSError:
                time.sleep(0.1)
        cls.tearDownClass()
        raise RuntimeError("the example did not start within 10 s")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.app.terminate()
        try:
            cls.app.wait(5)
        except subprocess.TimeoutExpired:
            cls.app.kill()
            cls.app.wait(5)

    def test_concurrent_deposits_lose_no_update(self) -> None:
        account = "acct-" + uuid.uuid4().hex[:8]
        amounts = [(i % 7) + 1 for i in range(48)]
        results: List[Tuple[int, Any]] = []
        mutex = threading.Lock()

        def depositor(share: List[int]) -> None:
            for amount in share:
                # As a caller would: try again (bounded) when told to — 409 busy, 503 unavailable.
                for _ in range(10):
                    answer = call("POST", f"/accounts/{account}/deposit", {"amount": amount})
                    if answer[0] not in (409, 503):
                        break
                    time.sleep(0.1)
                with mutex:
                    results.append(answer)

        threads = [threading.Thread(target=depositor, args=(amounts[i::8],)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual([status for status, _ in results], [200] * len(amounts), results[:3])
        tokens = [body["token"] for _, body in results]
        self.assertEqual(len(set(tokens)), len(tokens), "each deposit had its own lease")
        self.assertEqual(call("GET", f"/accounts/{account}"),
                         (200, {"account": account, "balance": sum(amounts)}))
        # Every deposit answered 200 is committed: a connection of our own, opened now, sees it.
        conn = psycopg2.connect(os.environ["DATABASE_URL"])
        try:
            with conn.cursor() as cursor:
                cursor.execute("SELECT balance FROM accounts WHERE id = %s", (account,))
                self.assertEqual(cursor.fetchone(), (sum(amounts),))
        finally:
            conn.close()

    def test_a_stale_token_write_is_refused(self) -> None:
        account = "acct-" + uuid.uuid4().hex[:8]
        client = fencelock.Client(os.environ["FENCELOCK_ENDPOINT"])
        stale = client.acquire(f"account-{account}", 0.2)  # a holder that then pauses
        time.sleep(0.3)
        for _ in range(10):
            status, body = call("POST", f"/accounts/{account}/deposit", {"amount": 10})
            if status != 503:
                break
            time.sleep(0.1)
        self.assertEqual(status, 200)
        self.assertGreater(body["token"], stale.token)
        conn = psycopg2.connect(os.environ["DATABASE_URL"])
        try:
            self.assertFalse(postgres.guarded_update(conn, "accounts", "id", account,
                                                     stale.token, {"balance": 1_000_000}))
        finally:
            conn.close()
        self.assertEqual(call("GET", f"/accounts/{account}")[1]["balance"], 10)

    def test_bad_requests_are_refused(self) -> None:
        for path, body in [("/accounts/a/deposit", {"amount": 0}),
                           ("/accounts/a/deposit", {"amount": "5"}),
                           ("/accounts/a/deposit", [1])]:
            self.assertEqual(call("POST", path, body)[0], 400, (path, body))
        self.assertEqual(call("POST", "/accounts/a%20b/deposit", {"amount": 1})[0], 404)
        self.assertEqual(call("GET", "/nothing")[0], 404)


if __name__ == "__main__":
    unittest.main()
