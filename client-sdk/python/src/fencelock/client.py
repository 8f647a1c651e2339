"""The fencelock client: locks, lock sets, semaphore permits, read/write locks and tokens over
HTTP (docs/api.md).

Same shape as the C++ SDK (client-sdk/include/fencelock/client.h), with exceptions instead of
Result values. Times are in seconds (int or float).

Thread safety: one Client per process, shared by all threads; every call is blocking, takes an
idle keep-alive connection of an endpoint (or opens one) and gives it back.

Retries: calls that are safe to repeat (extend, release, status, watch, the listings, next_token,
current_token) are retried on transport errors and 503s, up to max_retries times, on the next
endpoint. acquire names its request (request_id), so it is also retried after a transport failure
that may have been delivered — the service answers the grant it already made — but not on a 503.
acquire_set, acquire_permit, acquire_read, acquire_write and revoke are retried only when the
request could not even be sent (nothing can have been granted; a repeated revoke would revoke its
own grant). What each call
sends and how its answer is read live in _calls.py (the listings' in _listings.py), shared with
fencelock.aio.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, Optional, Sequence

from . import _calls, _listings
from ._calls import (MAX_PERMITS, MAX_SET_NAMES, NAME_RULE, LockStatus, RwLockHolder, RwLockStatus,
                     Seconds, SemaphoreStatus, check_name)
from ._listings import (HeldLock, ListedRwLock, ListedSemaphore, LockListing, P, RwLockListing,
                        SemaphoreListing)
from ._http import Endpoint, RoundTripError
from .errors import FencelockError, LeaseLostError
from .lease import Lease

if TYPE_CHECKING:  # keeper.py imports this module
    from .keeper import LeaseKeeper

__all__ = ["Client", "LockStatus", "SemaphoreStatus", "RwLockStatus", "RwLockHolder", "HeldLock",
           "LockListing", "ListedSemaphore", "SemaphoreListing", "ListedRwLock", "RwLockListing",
           "check_name", "NAME_RULE", "MAX_SET_NAMES", "MAX_PERMITS", "Seconds"]

T = _calls.T


class Client(_calls.ClientBase):
    """A connection to one or more fencelockd instances (the same lock nodes behind each).

    Client(endpoints=None, *, api_key=None, connect_timeout=1.0, request_timeout=5.0,
    max_retries=2, retry_backoff=0.05, max_idle_connections=8, ssl_context=None): see
    _calls.ClientBase for each option, its default and the environment variables read."""

    _endpoint_type = Endpoint

    def close(self) -> None:
        """Closes the idle connections. The client stays usable (it reconnects)."""
        for endpoint in self._endpoints:
            endpoint.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to tidy
            pass

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the API -------------------------------------------------------------------------

    def acquire(self, name: str, ttl: Seconds, wait: Seconds = 0,
                owner: Optional[str] = None, request_id: Optional[str] = None) -> Lease:
        """Acquires `name` for `ttl` seconds, waiting up to `wait` seconds while someone else
        holds it. `owner` (<= 200 chars) appears in the service's request log.
        Every call names its request: `request_id` (1..64 printable ASCII characters, no spaces;
        default a fresh random one), so when an answer is lost (a timeout, a reset) the call asks
        again — up to max_retries — and the service answers the grant it already made instead of
        refusing it as held (docs/api.md, "Asking again"). Pass your own only to ask again
        yourself, with the same id, after this call failed; never reuse one for another acquire.
        Raises LockedError (held and the wait ran out; .retry_after when known),
        UnavailableError, InvalidArgumentError, DeniedError, RateLimitedError, TransportError."""
        return self._call(_calls.acquire(name, ttl, wait, owner, request_id))

    def revoke(self, name: str, ttl: Seconds, owner: Optional[str] = None) -> Lease:
        """Takes lock `name` for `ttl` seconds whoever holds it (free or held; never waits), with
        a new token above the revoked lease's: that lease's extend raises NotHeldError, its
        release returns False, and a fenced store refuses its writes once the new token was
        used. Answers a Lease like acquire()'s. Needs an API key with the right "admin". Never
        retried once the request may have been delivered.
        Raises UnavailableError (may still have ended the old lease on some nodes: call again),
        InvalidArgumentError, DeniedError, RateLimitedError, TransportError."""
        return self._call(_calls.revoke(name, ttl, owner))

    def acquire_set(self, names: Sequence[str], ttl: Seconds, wait: Seconds = 0,
                    owner: Optional[str] = None) -> Lease:
        """Acquires every name of `names` (1..16 distinct lock names) under one lease, all or
        none, for `ttl` seconds, waiting up to `wait` seconds while any is held. The lease's
        ``tokens`` maps each name to its own fencing token: fence a write to the resource of
        name n with tokens[n]. Raises as acquire()."""
        return self._call(_calls.acquire_set(names, ttl, wait, owner))

    def acquire_permit(self, name: str, permits: int, ttl: Seconds, wait: Seconds = 0,
                       owner: Optional[str] = None) -> Lease:
        """Acquires one of the `permits` (1..64) permits of semaphore `name` for `ttl` seconds,
        waiting up to `wait` seconds while all are held. At most `permits` permits are live at
        once (under Redlock's timing assumptions); the lease's ``slot`` says which one it holds,
        and its token increases with every grant of the semaphore: fence per slot.
        Raises as acquire(), and PermitsMismatchError (.permits) when the semaphore has live
        permits under another count."""
        return self._call(_calls.acquire_permit(name, permits, ttl, wait, owner))

    def semaphore_status(self, name: str) -> SemaphoreStatus:
        """The live permit count of semaphore `name` (0 when none is live) and how many permits
        are held. Never a lease."""
        return self._call(_calls.semaphore_status(name))

    def acquire_read(self, name: str, ttl: Seconds, wait: Seconds = 0,
                     owner: Optional[str] = None) -> Lease:
        """A read grant of the read/write lock `name` (shared with other reads) for `ttl`
        seconds, waiting up to `wait` seconds while a write grant holds it or a writer waits.
        ``lease.kind`` is "read". Its token comes from `name`'s counter (shared with the lock
        `name`, which a read/write lock does not exclude). Retried only when the request could
        not be sent. Raises as acquire() (LockedError: held against reads and the wait ran
        out)."""
        return self._call(_calls.acquire_rw(name, "read", ttl, wait, owner))

    def acquire_write(self, name: str, ttl: Seconds, wait: Seconds = 0,
                      owner: Optional[str] = None) -> Lease:
        """A write grant of the read/write lock `name` (alone) for `ttl` seconds, waiting up to
        `wait` seconds while any grant holds it; while it waits, new readers are kept out, so a
        stream of readers cannot starve it. ``lease.kind`` is "write"; its token is above every
        earlier grant's of the name, so a store that fences on it refuses a stale reader's write
        once the writer wrote. Retried only when the request could not be sent. Raises as
        acquire()."""
        return self._call(_calls.acquire_rw(name, "write", ttl, wait, owner))

    def rwlock_status(self, name: str) -> RwLockStatus:
        """The read/write lock's mode ("read", "write", None when free), its holders (token,
        owner, remaining seconds) and whether a writer waits. Never a lease. Raises as
        status()."""
        return self._call(_calls.rwlock_status(name))

    def extend(self, lease: Lease, ttl: Optional[Seconds] = None,
               within: Optional[Seconds] = None) -> None:
        """Makes the lease's remaining ttl at least `ttl` seconds (default: the lease's ttl) — a
        lock's, every name of a set's, a permit's, a read or write grant's — and moves the
        lease's deadline. `within`
        bounds the whole call, retries included.
        Raises NotHeldError (expired, released or taken over: stop using it), UnavailableError,
        InvalidArgumentError, DeniedError, TransportError."""
        self._call(_calls.extend(lease, ttl, within))

    def release(self, lease: Lease) -> bool:
        """Releases the lease (a lock, a whole set, a permit, a read or write grant): True iff it
        still held it.
        Idempotent.
        Raises UnavailableError, InvalidArgumentError, DeniedError, TransportError."""
        return self._call(_calls.release(lease))

    def status(self, name: str) -> LockStatus:
        """Whether `name` is held, for how long, the holder's token and owner (None when not held),
        and the name's current token. Never the lease."""
        return self._call(_calls.status(name))

    def watch(self, name: str, after_token: int, wait: Seconds = 30) -> LockStatus:
        """Waits until `name` is no longer held with `after_token` — released, expired, revoked
        or taken again — and answers its status with `changed` True, or after `wait` seconds
        (0..3600, and at most the server's --max-wait) with the status unchanged and `changed`
        False. A lock not held with `after_token` (a free one too) answers at once. To follow a
        lock, watch again with the token answered. The answer's `last_token` is 0. The call may
        take `wait` beyond the request timeout; it is retried like status(). Needs the right
        "read" and counts against the key's max_waiters.
        Raises InvalidArgumentError, DeniedError, UnavailableError, RateLimitedError,
        TransportError."""
        return self._call(_calls.watch(name, after_token, wait))

    def list_locks(self, prefix: str = "", limit: int = 100,
                   cursor: Optional[str] = None) -> LockListing:
        """One page of the locks held whose names start with `prefix` (GET /v1/locks): pass the
        page's `next` as `cursor` until it is None. A page may hold fewer than `limit` (1..1000)
        names, even none, and still have a next; a name held throughout is listed (twice if a
        lock node failed meanwhile). Needs the right "read"; names the key may not read are left
        out. Raises InvalidArgumentError, DeniedError, UnavailableError (start the listing
        again), RateLimitedError, TransportError."""
        return self._call(_listings.list_locks(prefix, limit, cursor))

    def iter_locks(self, prefix: str = "", page_size: int = 100) -> Iterator[HeldLock]:
        """Every lock of a listing, page after page (list_locks); raises as list_locks."""
        for page in self._pages(lambda cursor: _listings.list_locks(prefix, page_size, cursor)):
            yield from page.locks

    def list_semaphores(self, prefix: str = "", limit: int = 100,
                        cursor: Optional[str] = None) -> SemaphoreListing:
        """One page of the semaphores with a permit held whose names start with `prefix` (GET
        /v1/semaphores), each ListedSemaphore(name, permits, held) as semaphore_status tells it;
        pages, `next` and errors as list_locks. A semaphore on which a permit stays held
        throughout is listed (more than once if a lock node failed or was late meanwhile, or its
        permits are held on different sets of nodes)."""
        return self._call(_listings.list_semaphores(prefix, limit, cursor))

    def iter_semaphores(self, prefix: str = "",
                        page_size: int = 100) -> Iterator[ListedSemaphore]:
        """Every semaphore of a listing, page after page (list_semaphores); raises as it does."""
        for page in self._pages(
                lambda cursor: _listings.list_semaphores(prefix, page_size, cursor)):
            yield from page.semaphores

    def list_rwlocks(self, prefix: str = "", limit: int = 100,
                     cursor: Optional[str] = None) -> RwLockListing:
        """One page of the read/write locks with a grant held whose names start with `prefix`
        (GET /v1/rwlocks), each ListedRwLock(name, mode, holders, writer_waiting) as
        rwlock_status tells it; pages, `next`, errors and repeats as list_semaphores."""
        return self._call(_listings.list_rwlocks(prefix, limit, cursor))

    def iter_rwlocks(self, prefix: str = "", page_size: int = 100) -> Iterator[ListedRwLock]:
        """Every read/write lock of a listing, page after page (list_rwlocks); raises as it
        does."""
        for page in self._pages(lambda cursor: _listings.list_rwlocks(prefix, page_size, cursor)):
            yield from page.rwlocks

    def _pages(self, page: Callable[[Optional[str]], _calls.Call[P]]) -> Iterator[P]:
        """Every page of a listing: `page(cursor)` asks for one, from the first (cursor None)
        until one has no `next`."""
        cursor: Optional[str] = None
        while True:
            answer = self._call(page(cursor))
            yield answer
            if answer.next is None:
                return
            cursor = answer.next

    def next_token(self, name: str) -> int:
        """Draws the next token of `name` without a lock. Hazard (docs/api.md): a drawn token is
        newer than the current holder's and can fence that holder out."""
        return self._call(_calls.token("POST", name))

    def current_token(self, name: str) -> int:
        """The latest token issued for `name` (0 if none was ever drawn)."""
        return self._call(_calls.token("GET", name))

    # --- keeping a lease -----------------------------------------------------------------

    def keep(self, lease: Lease, **options: Any) -> "LeaseKeeper":
        """Starts a LeaseKeeper renewing `lease` in the background (options: see LeaseKeeper).
        Use it as a context manager (`with client.keep(lease):`) or call its release(): its
        threads renew until then."""
        from .keeper import LeaseKeeper
        return LeaseKeeper(self, lease, **options)

    @contextlib.contextmanager
    def lock(self, name: str, ttl: Seconds, wait: Seconds = 0, *,
             owner: Optional[str] = None,
             on_lost: Optional[Callable[[Lease, LeaseLostError], None]] = None,
             raise_if_lost: bool = True, **keeper_options: Any) -> Iterator[Lease]:
        """`with client.lock("name", ttl=10, wait=5) as lease:` acquires (errors as acquire()),
        keeps the lease renewed while the block runs, and releases it at exit.

        Inside the block, `lease.lost` (a threading.Event) is set — before the lease's deadline —
        when renewal failed; `lease.check()` raises LeaseLostError then. Fence every write with
        `lease.token` anyway: a paused process can act after the check. If the lease was lost
        while the block ran and the block raised nothing, the exit raises LeaseLostError
        (raise_if_lost=False: it does not) — the block may have done part or all of its work by
        then: fenced writes that were applied stay applied, so let their outcomes decide what
        happened. A failed release is ignored: the ttl frees the lock.
        """
        with self._held(self.acquire(name, ttl, wait, owner), on_lost, raise_if_lost,
                        keeper_options) as lease:
            yield lease

    @contextlib.contextmanager
    def lock_set(self, names: Sequence[str], ttl: Seconds, wait: Seconds = 0, *,
                 owner: Optional[str] = None,
                 on_lost: Optional[Callable[[Lease, LeaseLostError], None]] = None,
                 raise_if_lost: bool = True, **keeper_options: Any) -> Iterator[Lease]:
        """`with client.lock_set(["a", "b"], ttl=10) as lease:` — lock() for a lock set
        (acquire_set); fence a write to the resource of name n with lease.tokens[n]."""
        with self._held(self.acquire_set(names, ttl, wait, owner), on_lost, raise_if_lost,
                        keeper_options) as lease:
            yield lease

    @contextlib.contextmanager
    def permit(self, name: str, permits: int, ttl: Seconds, wait: Seconds = 0, *,
               owner: Optional[str] = None,
               on_lost: Optional[Callable[[Lease, LeaseLostError], None]] = None,
               raise_if_lost: bool = True, **keeper_options: Any) -> Iterator[Lease]:
        """`with client.permit("workers", 3, ttl=10, wait=5) as lease:` — lock() for one permit
        of a semaphore (acquire_permit); fence per slot with lease.token."""
        with self._held(self.acquire_permit(name, permits, ttl, wait, owner), on_lost,
                        raise_if_lost, keeper_options) as lease:
            yield lease

    @contextlib.contextmanager
    def read_lock(self, name: str, ttl: Seconds, wait: Seconds = 0, *,
                  owner: Optional[str] = None,
                  on_lost: Optional[Callable[[Lease, LeaseLostError], None]] = None,
                  raise_if_lost: bool = True, **keeper_options: Any) -> Iterator[Lease]:
        """`with client.read_lock("doc", ttl=10, wait=5) as lease:` — lock() for a read grant of
        a read/write lock (acquire_read)."""
        with self._held(self.acquire_read(name, ttl, wait, owner), on_lost, raise_if_lost,
                        keeper_options) as lease:
            yield lease

    @contextlib.contextmanager
    def write_lock(self, name: str, ttl: Seconds, wait: Seconds = 0, *,
                   owner: Optional[str] = None,
                   on_lost: Optional[Callable[[Lease, LeaseLostError], None]] = None,
                   raise_if_lost: bool = True, **keeper_options: Any) -> Iterator[Lease]:
        """`with client.write_lock("doc", ttl=10, wait=5) as lease:` — lock() for a write grant
        of a read/write lock (acquire_write)."""
        with self._held(self.acquire_write(name, ttl, wait, owner), on_lost, raise_if_lost,
                        keeper_options) as lease:
            yield lease

    @contextlib.contextmanager
    def _held(self, lease: Lease,
              on_lost: Optional[Callable[[Lease, LeaseLostError], None]], raise_if_lost: bool,
              keeper_options: Dict[str, Any]) -> Iterator[Lease]:
        """Keeps `lease` renewed while the block runs and releases it at exit (see lock())."""
        name = lease.name
        try:
            keeper = self.keep(lease, on_lost=on_lost, **keeper_options)
        except BaseException:  # bad keeper options: do not leave the lock held until its ttl
            with contextlib.suppress(FencelockError):
                self.release(lease)
            raise
        try:
            yield lease
        finally:
            keeper.stop_and_release()
        if raise_if_lost and lease.lost.is_set():
            raise lease.lost_reason or LeaseLostError(f"the lease of {name!r} was lost")

    # --- one call with retries -----------------------------------------------------------

    def _call(self, call: "_calls.Call[T]") -> T:
        """Sends one request, retrying as _calls.Attempts says, and reads its answer."""
        with self._mutex:
            preferred = self._preferred
        attempts = _calls.Attempts(call, self._options, preferred)
        data = call.data
        while True:
            step = attempts.start()
            if step is None:
                break
            index, timeout = step
            try:
                reply = self._endpoints[index].round_trip(
                    call.method, call.target, data, self._options.headers,
                    self._options.connect_timeout, timeout)
            except RoundTripError as failure:
                attempts.failed(failure)
            else:
                with self._mutex:
                    self._preferred = index
                if attempts.final(reply):
                    return call.finish(reply, attempts.sent_at)
            pause = attempts.pause()
            if pause is None:
                break
            time.sleep(pause)
        raise attempts.error()
