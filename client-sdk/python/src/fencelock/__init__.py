"""fencelock: a client for the fencelock lock service (Redlock leases with fencing tokens).

    import fencelock
    client = fencelock.Client(["http://127.0.0.1:8080"])
    with client.lock("invoice-42", ttl=30, wait=5) as lease:
        write_invoice(42, token=lease.token)   # fence every write with the token

Standard library only; fencelock.postgres (guarded PostgreSQL writes) needs psycopg2.
"""

import logging

from .client import NAME_RULE, Client, LockStatus, check_name
from .errors import (DeniedError, FencelockError, InternalError, InvalidArgumentError,
                     LeaseLostError, LockedError, NotHeldError, RateLimitedError, TlsError,
                     TransportError, UnavailableError)
from .keeper import LeaseKeeper
from .lease import Lease

__version__ = "0.1.0"

# A library logs to "fencelock" and leaves handlers to the application.
logging.getLogger("fencelock").addHandler(logging.NullHandler())

__all__ = [
    "Client", "Lease", "LeaseKeeper", "LockStatus", "check_name", "NAME_RULE",
    "FencelockError", "LockedError", "NotHeldError", "UnavailableError", "InvalidArgumentError",
    "DeniedError", "RateLimitedError", "TransportError", "TlsError", "InternalError",
    "LeaseLostError",
]
