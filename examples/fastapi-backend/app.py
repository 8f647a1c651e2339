"""A FastAPI backend that guards a PostgreSQL read-modify-write with a fencelock lease, on asyncio
end to end: fencelock.aio for the lock, psycopg 3's AsyncConnection for the database.

    POST /accounts/{id}/deposit  {"amount": 25}  ->  {"account": "<id>", "balance": 125, "token": 17}
    GET  /accounts/{id}                          ->  {"account": "<id>", "balance": 125}

A deposit takes lock "account-<id>", fences its read of the row with the lease's token, writes the
new balance guarded by the same token, and releases. If the lease is lost before the write (this
process paused, the lock expired, another request took it), PostgreSQL refuses the late write —
the row already carries a newer token — and the caller gets 409, never a lost update.

Configuration from the environment: FENCELOCK_ENDPOINT (comma-separated), FENCELOCK_API_KEY,
FENCELOCK_CACERT (as the CLI), DATABASE_URL. `python3 app.py --listen HOST:PORT [--init-db]` runs
it under uvicorn (`--init-db` creates the table from schema.sql).
"""

from __future__ import annotations

import argparse
import os
import re
from typing import Any, Dict

import psycopg
import uvicorn
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic import BaseModel, conint

import fencelock
from fencelock import aio
from fencelock import psycopg as fenced

ACCOUNT = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_AMOUNT = 10**12

app = FastAPI(title="fencelock FastAPI example")
client = aio.AsyncClient()  # $FENCELOCK_ENDPOINT, $FENCELOCK_API_KEY, $FENCELOCK_CACERT


class Deposit(BaseModel):
    amount: conint(strict=True, gt=0, le=MAX_AMOUNT)  # type: ignore[valid-type]


def answer(status: int, body: Dict[str, Any], **headers: str) -> JSONResponse:
    return JSONResponse(body, status_code=status, headers=headers)


async def connect() -> "psycopg.AsyncConnection[Any]":
    # One connection per request keeps the example short; use psycopg_pool in production.
    return await psycopg.AsyncConnection.connect(os.environ["DATABASE_URL"], autocommit=True)


@app.post("/accounts/{account}/deposit")
async def deposit(account: str, body: Deposit) -> JSONResponse:
    if not ACCOUNT.fullmatch(account):
        return answer(404, {"error": "an account is 1 to 64 characters from [A-Za-z0-9_-]"})
    try:
        conn = await connect()
        try:
            accounts = await fenced.AsyncFencedTable.open(conn, "accounts")
            # raise_if_lost=False: the guarded write's outcome is the truth about this deposit.
            async with client.lock(f"account-{account}", ttl=10, wait=5,
                                   raise_if_lost=False) as lease:
                # Fence the read: from now on an older holder's write to this row is refused.
                if not await accounts.fence_read(account, lease.token):
                    return answer(409, {"error": "a newer lease already touched this account"})
                row = await (await conn.execute(
                    "SELECT balance FROM accounts WHERE id = %s", (account,))).fetchone()
                balance = row[0] + body.amount
                written = await accounts.update(account, {"balance": balance}, lease.token,
                                                fenced.TokenRule.NEWER_OR_SAME)
                if not written:
                    return answer(409, {"error": "the lease was lost before the write;"
                                                 " nothing changed"})
                return answer(200, {"account": account, "balance": balance,
                                    "token": lease.token})
        finally:
            await conn.close()
    except fencelock.LockedError as e:  # busy longer than our wait: ask the caller to retry
        return answer(409, {"error": "the account is busy; retry"},
                      **{"Retry-After": str(max(1, round(e.retry_after or 1)))})
    except (fencelock.UnavailableError, fencelock.TransportError, psycopg.OperationalError):
        return answer(503, {"error": "the lock service or the database is unavailable; retry"},
                      **{"Retry-After": "1"})


@app.get("/accounts/{account}")
async def balance_of(account: str) -> JSONResponse:
    conn = await connect()
    try:
        row = await (await conn.execute("SELECT balance FROM accounts WHERE id = %s",
                                        (account,))).fetchone()
    finally:
        await conn.close()
    return answer(200, {"account": account, "balance": row[0] if row else 0})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--listen", default="127.0.0.1:8000")
    parser.add_argument("--init-db", action="store_true", help="create the table (schema.sql)")
    args = parser.parse_args()
    if args.init_db:
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "schema.sql")) as f, \
                psycopg.connect(os.environ["DATABASE_URL"], autocommit=True) as conn:
            conn.execute(f.read())
    host, _, port = args.listen.rpartition(":")
    uvicorn.run(app, host=host, port=int(port), log_level="warning")


if __name__ == "__main__":
    main()
