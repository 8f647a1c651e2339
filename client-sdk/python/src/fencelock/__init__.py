"""fencelock: a client for the fencelock lock service (Redlock leases with fencing tokens).

    import fencelock
    client = fencelock.Client(["http://127.0.0.1:8080"])
    with client.lock("invoice-42", ttl=30, wait=5) as lease:
        write_invoice(42, token=lease.token)   # fence every write with the token
    with client.lock_set(["account-1", "account-2"], ttl=30) as lease:   # all or none
        transfer(1, 2, tokens=lease.tokens)     # a token per name
    with client.permit("report-workers", 3, ttl=60, wait=30) as lease:  # one of 3 permits
        run_report(slot=lease.slot, token=lease.token)
    with client.read_lock("catalog", ttl=30, wait=5) as lease:  # shared with other readers
        read_catalog(token=lease.token)                 # write_lock(): alone, token above all

asyncio: fencelock.aio.AsyncClient (`async with client.lock(...) as lease`). Guarded writes:
fencelock.postgres (psycopg2), fencelock.psycopg (psycopg 3, sync and async), fencelock.sqlite
(sqlite3). Standard library only; the psycopg modules need their driver.
"""

import logging

from .client import (MAX_PERMITS, MAX_SET_NAMES, NAME_RULE, Client, HeldLock, ListedRwLock,
                     ListedSemaphore, LockListing, LockStatus, RwLockHolder, RwLockListing,
                     RwLockStatus, SemaphoreListing, SemaphoreStatus, check_name)
from .errors import (DeniedError, FencelockError, InternalError, InvalidArgumentError,
                     LeaseLostError, LockedError, NotHeldError, PermitsMismatchError,
                     RateLimitedError, TlsError, TransportError, UnavailableError)
from .keeper import LeaseKeeper
from .lease import Lease

__version__ = "0.1.0"

# A library logs to "fencelock" and leaves handlers to the application.
logging.getLogger("fencelock").addHandler(logging.NullHandler())

__all__ = [
    "Client", "Lease", "LeaseKeeper", "LockStatus", "SemaphoreStatus", "RwLockStatus",
    "RwLockHolder", "HeldLock", "LockListing", "ListedSemaphore", "SemaphoreListing",
    "ListedRwLock", "RwLockListing",
    "check_name", "NAME_RULE",
    "MAX_SET_NAMES", "MAX_PERMITS", "PermitsMismatchError",
    "FencelockError", "LockedError", "NotHeldError", "UnavailableError", "InvalidArgumentError",
    "DeniedError", "RateLimitedError", "TransportError", "TlsError", "InternalError",
    "LeaseLostError",
]
