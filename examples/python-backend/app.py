"""A web backend that guards a PostgreSQL read-modify-write with a fencelock lease.

    POST /accounts/<id>/deposit  {"amount": 25}  ->  {"account": "<id>", "balance": 125, "token": 17}
    GET  /accounts/<id>                          ->  {"account": "<id>", "balance": 125}

A deposit takes lock "account-<id>", fences its read of the row with the lease's token, writes the
new balance guarded by the same token, and releases. If this process pauses long enough for the
lease to expire and another request takes the lock, the late write is refused by PostgreSQL (the
row already carries a newer token) and the client gets 409 instead of a lost update.

Standard library + fencelock + psycopg2. Configuration from the environment: FENCELOCK_ENDPOINT
(comma-separated endpoints), DATABASE_URL; `--listen HOST:PORT` (default 127.0.0.1:8000);
`--init-db` creates the table from schema.sql.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, Optional, Tuple

import psycopg2.pool

import fencelock
from fencelock import postgres

ACCOUNT = re.compile(r"/accounts/([A-Za-z0-9_-]{1,64})(/deposit)?")
MAX_BODY = 4096
MAX_AMOUNT = 10**12

client = fencelock.Client()  # $FENCELOCK_ENDPOINT (comma-separated), $FENCELOCK_API_KEY, as the CLI
pool: Optional[psycopg2.pool.ThreadedConnectionPool] = None


def deposit(account: str, amount: int) -> Tuple[int, Dict[str, Any]]:
    assert pool is not None
    conn = pool.getconn()
    try:
        # Checks the table's schema (a few catalog queries); keep one per connection if that counts.
        accounts = postgres.FencedTable(conn, "accounts")
        # ttl: longer than a deposit takes; the keeper renews it if the database is slow.
        # raise_if_lost=False: the guarded write's outcome is the truth about this deposit, even
        # if the lease is lost right after it landed.
        with client.lock(f"account-{account}", ttl=10, wait=5, raise_if_lost=False) as lease:
            # Fence the read: from now on an older holder's write to this row is refused.
            if not accounts.fence_read(account, lease.token):
                return 409, {"error": "a newer lease already touched this account; retry"}
            with conn.cursor() as cursor:
                cursor.execute("SELECT balance FROM accounts WHERE id = %s", (account,))
                balance = cursor.fetchone()[0] + amount
            conn.rollback()  # end the read's transaction; the write below commits on its own
            lease.check()    # lost already? don't bother writing (the token would stop it anyway)
            written = accounts.update(account, {"balance": balance}, lease.token,
                                      postgres.TokenRule.NEWER_OR_SAME)
            if not written:
                return 409, {"error": "the lease was lost before the write; nothing changed"}
            return 200, {"account": account, "balance": balance, "token": lease.token}
    finally:
        conn.rollback()
        pool.putconn(conn)


def balance_of(account: str) -> Tuple[int, Dict[str, Any]]:
    assert pool is not None
    conn = pool.getconn()
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT balance FROM accounts WHERE id = %s", (account,))
            row = cursor.fetchone()
        return 200, {"account": account, "balance": row[0] if row else 0}
    finally:
        conn.rollback()
        pool.putconn(conn)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        match = ACCOUNT.fullmatch(self.path)
        if not match or match.group(2):
            return self.answer(404, {"error": "no such path"})
        self.answer(*self.guarded(lambda: balance_of(match.group(1))))

    def do_POST(self) -> None:
        match = ACCOUNT.fullmatch(self.path)
        if not match or not match.group(2):
            return self.answer(404, {"error": "no such path"})
        length = int(self.headers.get("Content-Length") or 0)
        if not 0 < length <= MAX_BODY:
            return self.answer(400, {"error": "send a JSON body of at most 4 KiB"})
        try:
            amount = json.loads(self.rfile.read(length)).get("amount")
        except (ValueError, AttributeError):
            return self.answer(400, {"error": "the body is not a JSON object"})
        if isinstance(amount, bool) or not isinstance(amount, int) or not (
                0 < amount <= MAX_AMOUNT):
            return self.answer(400, {"error": f"amount must be an integer 1 .. {MAX_AMOUNT}"})
        self.answer(*self.guarded(lambda: deposit(match.group(1), amount)))

    def guarded(self, work: Any) -> Tuple[int, Dict[str, Any], Dict[str, str]]:
        """Runs `work`, turning fencelock's errors into answers a client can act on."""
        try:
            status, body = work()
            return status, body, {}
        except fencelock.LockedError as e:  # busy longer than our wait: ask the client to retry
            retry = str(max(1, round(e.retry_after or 1)))
            return 409, {"error": "the account is busy; retry"}, {"Retry-After": retry}
        except fencelock.LeaseLostError:
            return 409, {"error": "the lease was lost; nothing changed"}, {}
        except (fencelock.UnavailableError, fencelock.TransportError):
            return 503, {"error": "the lock service is unavailable; retry"}, {"Retry-After": "1"}
        except fencelock.FencelockError as e:
            self.log_error("fencelock: %s: %s", e.code, e.message)
            return 500, {"error": "internal error"}, {}

    def answer(self, status: int, body: Dict[str, Any],
               headers: Optional[Dict[str, str]] = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_request(self, code: Any = "-", size: Any = "-") -> None:  # errors only
        if isinstance(code, int) and code >= 400:
            super().log_request(code, size)


def main() -> int:
    global pool
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--listen", default="127.0.0.1:8000")
    parser.add_argument("--init-db", action="store_true", help="create the table (schema.sql)")
    args = parser.parse_args()
    host, _, port = args.listen.rpartition(":")
    pool = psycopg2.pool.ThreadedConnectionPool(1, 16, os.environ["DATABASE_URL"])
    if args.init_db:
        conn = pool.getconn()
        with open(os.path.join(os.path.dirname(__file__), "schema.sql")) as schema, \
                conn.cursor() as cursor:
            cursor.execute(schema.read())
        conn.commit()
        pool.putconn(conn)
    server = ThreadingHTTPServer((host, int(port)), Handler)
    print(f"python-backend: listening on http://{host}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
