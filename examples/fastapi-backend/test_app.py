"""Runs app.py under uvicorn on a loopback port against the live stack: concurrent deposits lose
nothing, and a write with a stale token is refused. Needs FENCELOCK_ENDPOINT, DATABASE_URL and
PYTHONPATH with client-sdk/python/src (client-sdk/python/test.sh sets them); the app listens on
FENCELOCK_FASTAPI_PORT (17971)."""

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

import fencelock

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = int(os.environ.get("FENCELOCK_FASTAPI_PORT", "17971"))
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


def deposit(account: str, amount: int) -> Tuple[int, Any]:
    # As a caller would: try again (bounded) when told to — 409 busy, 503 unavailable.
    for _ in range(10):
        answer = call("POST", f"/accounts/{account}/deposit", {"amount": amount})
        if answer[0] not in (409, 503):
            break
        time.sleep(0.1)
    return answer


@unittest.skipUnless(os.environ.get("FENCELOCK_ENDPOINT") and os.environ.get("DATABASE_URL"),
                     "no live stack (run client-sdk/python/test.sh)")
class FastApiBackendExample(unittest.TestCase):
    app: "subprocess.Popen[bytes]"

    @classmethod
    def setUpClass(cls) -> None:
        cls.app = subprocess.Popen([sys.executable, os.path.join(HERE, "app.py"), "--listen",
                                    f"127.0.0.1:{PORT}", "--init-db"])
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and cls.app.poll() is None:
            try:
                urllib.request.urlopen(BASE + "/accounts/probe", timeout=1).read()
                return
            except OSError:
                time.sleep(0.1)
        cls.tearDownClass()
        raise RuntimeError("the example did not start within 15 s (see its output above)")

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
        amounts = [(i % 7) + 1 for i in range(16)]
        results: List[Tuple[int, Any]] = []
        mutex = threading.Lock()

        def depositor(share: List[int]) -> None:
            for amount in share:
                answer = deposit(account, amount)
                with mutex:
                    results.append(answer)

        threads = [threading.Thread(target=depositor, args=(amounts[i::4],)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        self.assertEqual([status for status, _ in results], [200] * len(amounts), results[:3])
        self.assertEqual(len({body["token"] for _, body in results}), len(amounts))
        self.assertEqual(call("GET", f"/accounts/{account}"),
                         (200, {"account": account, "balance": sum(amounts)}))

    def test_a_stale_token_write_is_refused(self) -> None:
        import psycopg
        from fencelock import psycopg as fenced
        account = "acct-" + uuid.uuid4().hex[:8]
        client = fencelock.Client(os.environ["FENCELOCK_ENDPOINT"])
        stale = client.acquire(f"account-{account}", 0.2)  # a holder that then pauses
        time.sleep(0.3)
        status, body = deposit(account, 10)  # the app takes the lock with a newer token
        self.assertEqual(status, 200)
        self.assertGreater(body["token"], stale.token)
        # The paused holder wakes and writes with its old token: PostgreSQL refuses it.
        with psycopg.connect(os.environ["DATABASE_URL"]) as conn:
            refused = fenced.FencedTable(conn, "accounts").update(
                account, {"balance": 1_000_000}, stale.token)
        self.assertEqual(refused, fenced.WriteResult(fenced.Outcome.STALE, body["token"]))
        self.assertEqual(call("GET", f"/accounts/{account}")[1]["balance"], 10)

    def test_bad_requests_are_refused(self) -> None:
        for body in ({"amount": 0}, {"amount": "5"}, [1], {"amount": 10**13}):
            self.assertEqual(call("POST", "/accounts/a/deposit", body)[0], 422, body)
        self.assertEqual(call("POST", "/accounts/a%20b/deposit", {"amount": 1})[0], 404)
        self.assertEqual(call("GET", "/nothing")[0], 404)


if __name__ == "__main__":
    unittest.main()
