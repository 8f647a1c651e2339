"""The fencelock client for asyncio: the same calls, options, errors and leases as
fencelock.Client, on asyncio's own streams (no other dependency).

    client = fencelock.aio.AsyncClient()          # $FENCELOCK_ENDPOINT, $FENCELOCK_API_KEY, ...
    async with client.lock("invoice-42", ttl=30, wait=5) as lease:
        await write_invoice(42, token=lease.token)

Connections: each endpoint keeps up to max_idle_connections idle keep-alive connections; calls
running at once open more, and the ones beyond that bound are closed after their answer. An
AsyncClient belongs to the event loop that first uses it; close it with `await client.aclose()`.

request_timeout bounds the whole round trip of one attempt after connecting (an acquire adds its
wait), not each socket operation as in the blocking client.

Cancellation: a call cancelled while its request is in flight closes that connection. A grant
(acquire, acquire_set, acquire_permit, acquire_read, acquire_write, revoke, and so the lock(),
lock_set(), permit(), read_lock() and write_lock() blocks) runs in a task of its own that the
cancellation does not reach: if the service grants after the caller was cancelled (or timed out
by asyncio.wait_for), the lease is released as soon as it arrives, so a cancelled waiter never
leaves a lock held until its ttl. aclose() waits for those releases.

Leases are fencelock.Lease objects whose `lost` is an asyncio.Event (`await lease.lost.wait()`);
`check()`, `valid()`, `remaining()`, `token`, `tokens` are as in the blocking client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any, AsyncIterator, Awaitable, Callable, Dict, Optional, Sequence, Set, Union

from . import _calls, _listings
from ._aio_http import AsyncEndpoint
from ._calls import LockStatus, RwLockStatus, Seconds, SemaphoreStatus
from ._listings import (HeldLock, ListedRwLock, ListedSemaphore, LockListing, P, RwLockListing,
                        SemaphoreListing)
from ._http import RoundTripError
from .errors import FencelockError, LeaseLostError
from .keeper import KeeperRules
from .lease import Lease

__all__ = ["AsyncClient", "AsyncLease", "AsyncLeaseKeeper"]

_log = logging.getLogger("fencelock")

OnLost = Callable[[Lease, LeaseLostError], Union[None, Awaitable[None]]]


class AsyncLease(Lease):
    """A Lease whose `lost` is an asyncio.Event: `await lease.lost.wait()`."""

    __slots__ = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lost = asyncio.Event()  # type: ignore[assignment]


class AsyncClient(_calls.ClientBase):
    """fencelock.Client for asyncio. Options, defaults and environment as Client's
    (_calls.ClientBase)."""

    _endpoint_type = AsyncEndpoint
    _kind = "AsyncClient"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """As fencelock.Client(); request_timeout bounds one attempt's whole round trip after
        connecting. Raises InvalidArgumentError."""
        super().__init__(*args, **kwargs)
        # Grants whose caller was cancelled, and releases in the background: held here because
        # asyncio keeps only weak references to tasks.
        self._background: Set["asyncio.Future[Any]"] = set()

    async def aclose(self) -> None:
        """Waits for the background releases (cancelled grants, released leases), then closes
        the idle connections. The client stays usable (it reconnects)."""
        while self._background:
            await asyncio.gather(*list(self._background), return_exceptions=True)
        for endpoint in self._endpoints:
            endpoint.close()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- the API: as Client's, awaited ---------------------------------------------------

    async def acquire(self, name: str, ttl: Seconds, wait: Seconds = 0,
                      owner: Optional[str] = None, request_id: Optional[str] = None) -> Lease:
        """Client.acquire: names its request (request_id, default a fresh random one) and asks
        again with it when an answer is lost. Cancelled: a grant that still arrives is released
        (module comment)."""
        return await self._grant(
            _calls.acquire(name, ttl, wait, owner, request_id, AsyncLease))

    async def revoke(self, name: str, ttl: Seconds, owner: Optional[str] = None) -> Lease:
        """Client.revoke: takes `name` whoever holds it; never retried once maybe delivered.
        Cancelled: a grant that still arrives is released (module comment)."""
        return await self._grant(_calls.revoke(name, ttl, owner, AsyncLease))

    async def acquire_set(self, names: Sequence[str], ttl: Seconds, wait: Seconds = 0,
                          owner: Optional[str] = None) -> Lease:
        """Client.acquire_set: all of `names` or none, a token per name."""
        return await self._grant(_calls.acquire_set(names, ttl, wait, owner, AsyncLease))

    async def acquire_permit(self, name: str, permits: int, ttl: Seconds, wait: Seconds = 0,
                             owner: Optional[str] = None) -> Lease:
        """Client.acquire_permit: one of `permits` permits of semaphore `name`."""
        return await self._grant(
            _calls.acquire_permit(name, permits, ttl, wait, owner, AsyncLease))

    async def acquire_read(self, name: str, ttl: Seconds, wait: Seconds = 0,
                           owner: Optional[str] = None) -> Lease:
        """Client.acquire_read: a read grant of read/write lock `name`."""
        return await self._grant(_calls.acquire_rw(name, "read", ttl, wait, owner, AsyncLease))

    async def acquire_write(self, name: str, ttl: Seconds, wait: Seconds = 0,
                            owner: Optional[str] = None) -> Lease:
        """Client.acquire_write: a write grant of read/write lock `name`; while it waits, new
        readers are kept out."""
        return await self._grant(_calls.acquire_rw(name, "write", ttl, wait, owner, AsyncLease))

    async def rwlock_status(self, name: str) -> RwLockStatus:
        """Client.rwlock_status: mode, holders, writer_waiting."""
        return await self._call(_calls.rwlock_status(name))

    async def extend(self, lease: Lease, ttl: Optional[Seconds] = None,
                     within: Optional[Seconds] = None) -> None:
        """Client.extend."""
        await self._call(_calls.extend(lease, ttl, within))

    async def release(self, lease: Lease) -> bool:
        """Client.release: True iff the lease still held the lock. Idempotent."""
        return await self._call(_calls.release(lease))

    async def status(self, name: str) -> LockStatus:
        return await self._call(_calls.status(name))

    async def watch(self, name: str, after_token: int, wait: Seconds = 30) -> LockStatus:
        """Client.watch: the status once `name` is no longer held with `after_token`
        (`changed` True), or after `wait` seconds unchanged (`changed` False)."""
        return await self._call(_calls.watch(name, after_token, wait))

    async def semaphore_status(self, name: str) -> SemaphoreStatus:
        return await self._call(_calls.semaphore_status(name))

    async def list_locks(self, prefix: str = "", limit: int = 100,
                         cursor: Optional[str] = None) -> LockListing:
        """Client.list_locks: one page; pass its `next` as `cursor` until it is None."""
        return await self._call(_listings.list_locks(prefix, limit, cursor))

    async def iter_locks(self, prefix: str = "", page_size: int = 100) -> AsyncIterator[HeldLock]:
        """Client.iter_locks: `async for lock in client.iter_locks("invoice-"):`."""
        async for page in self._pages(
                lambda cursor: _listings.list_locks(prefix, page_size, cursor)):
            for lock in page.locks:
                yield lock

    async def list_semaphores(self, prefix: str = "", limit: int = 100,
                              cursor: Optional[str] = None) -> SemaphoreListing:
        """Client.list_semaphores: one page of the semaphores with a permit held."""
        return await self._call(_listings.list_semaphores(prefix, limit, cursor))

    async def iter_semaphores(self, prefix: str = "",
                              page_size: int = 100) -> AsyncIterator[ListedSemaphore]:
        """Client.iter_semaphores: `async for semaphore in client.iter_semaphores("pool-"):`."""
        async for page in self._pages(
                lambda cursor: _listings.list_semaphores(prefix, page_size, cursor)):
            for semaphore in page.semaphores:
                yield semaphore

    async def list_rwlocks(self, prefix: str = "", limit: int = 100,
                           cursor: Optional[str] = None) -> RwLockListing:
        """Client.list_rwlocks: one page of the read/write locks with a grant held."""
        return await self._call(_listings.list_rwlocks(prefix, limit, cursor))

    async def iter_rwlocks(self, prefix: str = "",
                           page_size: int = 100) -> AsyncIterator[ListedRwLock]:
        """Client.iter_rwlocks: `async for rwlock in client.iter_rwlocks("doc-"):`."""
        async for page in self._pages(
                lambda cursor: _listings.list_rwlocks(prefix, page_size, cursor)):
            for rwlock in page.rwlocks:
                yield rwlock

    async def _pages(self, page: Callable[[Optional[str]], _calls.Call[P]]) -> AsyncIterator[P]:
        """Client._pages: every page of a listing, from the first until one has no `next`."""
        cursor: Optional[str] = None
        while True:
            answer = await self._call(page(cursor))
            yield answer
            if answer.next is None:
                return
            cursor = answer.next

    async def next_token(self, name: str) -> int:
        """Client.next_token (mind its hazard)."""
        return await self._call(_calls.token("POST", name))

    async def current_token(self, name: str) -> int:
        return await self._call(_calls.token("GET", name))

    # --- keeping a lease -----------------------------------------------------------------

    def keep(self, lease: Lease, **options: Any) -> "AsyncLeaseKeeper":
        """Starts an AsyncLeaseKeeper renewing `lease` (options: see KeeperRules). Use it as
        `async with client.keep(lease):` or call `await keeper.release()`."""
        return AsyncLeaseKeeper(self, lease, **options)

    def lock(self, name: str, ttl: Seconds, wait: Seconds = 0, *, owner: Optional[str] = None,
             on_lost: Optional[OnLost] = None, raise_if_lost: bool = True,
             **keeper_options: Any) -> "contextlib.AbstractAsyncContextManager[Lease]":
        """`async with client.lock("name", ttl=10, wait=5) as lease:` — Client.lock for asyncio:
        acquires, renews in a task at a third of the ttl left, releases at exit (also when the
        block is cancelled). `lease.lost` (an asyncio.Event) is set before the deadline when
        renewal failed; on_lost may be a plain or a coroutine function. Raises LeaseLostError at
        exit as Client.lock does (raise_if_lost)."""
        return self._held(lambda: self.acquire(name, ttl, wait, owner), on_lost, raise_if_lost,
                          keeper_options)

    def lock_set(self, names: Sequence[str], ttl: Seconds, wait: Seconds = 0, *,
                 owner: Optional[str] = None, on_lost: Optional[OnLost] = None,
                 raise_if_lost: bool = True,
                 **keeper_options: Any) -> "contextlib.AbstractAsyncContextManager[Lease]":
        """lock() for a lock set: fence the resource of name n with lease.tokens[n]."""
        return self._held(lambda: self.acquire_set(names, ttl, wait, owner), on_lost,
                          raise_if_lost, keeper_options)

    def permit(self, name: str, permits: int, ttl: Seconds, wait: Seconds = 0, *,
               owner: Optional[str] = None, on_lost: Optional[OnLost] = None,
               raise_if_lost: bool = True,
               **keeper_options: Any) -> "contextlib.AbstractAsyncContextManager[Lease]":
        """lock() for one permit of a semaphore: fence per slot with lease.token."""
        return self._held(lambda: self.acquire_permit(name, permits, ttl, wait, owner), on_lost,
                          raise_if_lost, keeper_options)

    def read_lock(self, name: str, ttl: Seconds, wait: Seconds = 0, *,
                  owner: Optional[str] = None, on_lost: Optional[OnLost] = None,
                  raise_if_lost: bool = True,
                  **keeper_options: Any) -> "contextlib.AbstractAsyncContextManager[Lease]":
        """lock() for a read grant of a read/write lock (acquire_read)."""
        return self._held(lambda: self.acquire_read(name, ttl, wait, owner), on_lost,
                          raise_if_lost, keeper_options)

    def write_lock(self, name: str, ttl: Seconds, wait: Seconds = 0, *,
                   owner: Optional[str] = None, on_lost: Optional[OnLost] = None,
                   raise_if_lost: bool = True,
                   **keeper_options: Any) -> "contextlib.AbstractAsyncContextManager[Lease]":
        """lock() for a write grant of a read/write lock (acquire_write)."""
        return self._held(lambda: self.acquire_write(name, ttl, wait, owner), on_lost,
                          raise_if_lost, keeper_options)

    @contextlib.asynccontextmanager
    async def _held(self, grant: Callable[[], Awaitable[Lease]], on_lost: Optional[OnLost],
                    raise_if_lost: bool, keeper_options: Dict[str, Any]) -> AsyncIterator[Lease]:
        lease = await grant()  # only once the block is entered
        try:
            keeper = self.keep(lease, on_lost=on_lost, **keeper_options)
        except BaseException:  # bad keeper options: do not leave the lock held until its ttl
            self._release_in_background(lease)
            raise
        try:
            yield lease
        finally:
            await keeper.stop_and_release()
        if raise_if_lost and lease.lost.is_set():
            raise lease.lost_reason or LeaseLostError(f"the lease of {lease.name!r} was lost")

    # --- grants that survive their caller's cancellation ---------------------------------

    async def _grant(self, call: "_calls.Call[Lease]") -> Lease:
        granting = asyncio.ensure_future(self._call(call))
        try:
            return await asyncio.shield(granting)
        except asyncio.CancelledError:
            if not granting.done() or not granting.cancelled():
                self._track(asyncio.ensure_future(self._release_when_granted(granting)))
            raise

    async def _release_when_granted(self, granting: "asyncio.Future[Lease]") -> None:
        try:
            lease = await granting
        except (FencelockError, asyncio.CancelledError):
            return  # nothing was granted
        _log.info("fencelock: releasing %r, granted after its caller was cancelled", lease.name)
        await self._release_quietly(lease)

    def _release_in_background(self, lease: Lease) -> "asyncio.Future[None]":
        return self._track(asyncio.ensure_future(self._release_quietly(lease)))

    async def _release_quietly(self, lease: Lease) -> None:
        try:
            await self.release(lease)
        except FencelockError as e:
            _log.warning("fencelock: releasing %r failed (%s: %s); its ttl will free it",
                         lease.name, e.code, e.message)

    def _track(self, task: "asyncio.Future[Any]") -> "asyncio.Future[Any]":
        self._background.add(task)
        task.add_done_callback(_forget)
        task.add_done_callback(self._background.discard)
        return task

    # --- one call with retries -----------------------------------------------------------

    async def _call(self, call: "_calls.Call[_calls.T]") -> "_calls.T":
        """Sends one request, retrying as _calls.Attempts says, and reads its answer."""
        attempts = _calls.Attempts(call, self._options, self._preferred)
        data = call.data
        step = attempts.start()
        while step is not None:
            index, timeout = step
            try:
                reply = await self._endpoints[index].round_trip(
                    call.method, call.target, data, self._options.headers,
                    self._options.connect_timeout, timeout)
            except RoundTripError as failure:
                attempts.failed(failure)
            else:
                self._preferred = index
                if attempts.final(reply):
                    return call.finish(reply, attempts.sent_at)
            pause = attempts.pause()
            if pause is None:
                break
            await asyncio.sleep(pause)
            step = attempts.start()
        raise attempts.error()


def _forget(task: "asyncio.Future[Any]") -> None:
    """Marks a background task's outcome as seen: whoever awaited it got it, or nobody will (its
    failures are logged where they happen)."""
    if not task.cancelled():
        task.exception()


class AsyncLeaseKeeper(KeeperRules):
    """Renews one lease in two tasks (renewer and watchdog, keeper.py's module comment) until
    stop()/release(). Options: see KeeperRules; on_lost may be a coroutine function."""

    def __init__(self, client: AsyncClient, lease: Lease, **options: Any) -> None:
        super().__init__(lease, **options)
        self._client = client
        self._moved = asyncio.Event()  # set when the deadline moved, the lease was lost, or stop
        self._stopped = False
        self._tasks = [asyncio.ensure_future(self._watch()), asyncio.ensure_future(self._renew())]

    async def stop(self) -> None:
        """Stops renewing (the lease then runs out at its deadline). Idempotent."""
        self._stopped = True
        current = asyncio.current_task()
        for task in self._tasks:
            if task is not current:
                task.cancel()
        await asyncio.gather(*(t for t in self._tasks if t is not current),
                             return_exceptions=True)

    async def release(self) -> bool:
        """Stops renewing and releases now: True iff the lease still held the lock. Errors as
        AsyncClient.release; a second call returns False without asking the service. If the
        caller is cancelled meanwhile (again, inside a cancelled block), stopping and releasing
        go on in the background."""
        if not self._take_release():
            await self.stop()
            return False
        return await asyncio.shield(self._client._track(asyncio.ensure_future(
            self._stop_then_release())))

    async def _stop_then_release(self) -> bool:
        await self.stop()
        return await self._client.release(self.lease)

    async def stop_and_release(self) -> None:
        """release(), with errors logged and ignored: the ttl frees the lock."""
        try:
            await self.release()
        except FencelockError as e:
            _log.warning("fencelock: releasing %r failed (%s: %s); its ttl will free it",
                         self.lease.name, e.code, e.message)

    async def __aenter__(self) -> Lease:
        return self.lease

    async def __aexit__(self, *exc: object) -> None:
        await self.stop_and_release()

    # --- the tasks -----------------------------------------------------------------------

    def _wake(self) -> None:
        self._moved.set()

    def _spawn(self, awaitable: Any) -> None:
        self._client._track(asyncio.ensure_future(awaitable))

    async def _watch(self) -> None:
        while not self._stopped and not self.lease.lost.is_set():
            left = self._lost_at() - time.monotonic()
            if left <= 0:
                self._declare_lost(self._late())
                return
            self._moved.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._moved.wait(), left)

    async def _renew(self) -> None:
        retry_at: Optional[float] = None
        while not self._stopped and not self.lease.lost.is_set():
            plan = self._plan(retry_at)
            if plan is None:
                return
            await asyncio.sleep(max(0.0, plan.wake - time.monotonic()))
            attempt = self._attempt(plan)
            if attempt is None:
                return
            try:
                await self._client.extend(attempt, plan.ttl, within=plan.within())
            except FencelockError as e:
                retry_at = self._failed(e, plan)
                if retry_at is None:
                    return
            else:
                retry_at = None
                self._adopt(attempt)
