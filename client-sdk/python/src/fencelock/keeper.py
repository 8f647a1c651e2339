"""Keeps a lease alive while work runs under it (Redisson's watchdog), and says when it is lost.

KeeperRules holds what a keeper decides; LeaseKeeper runs it on two daemon threads, and
fencelock.aio's AsyncLeaseKeeper on two asyncio tasks:
  - the renewer extends the lease whenever `renew_when_left` of its ttl is left; a refused extend
    (NotHeldError) declares the lease lost at once; a transient failure (unavailable, transport)
    is retried every ttl/20 (at least 5 ms);
  - the watchdog declares the lease lost `lost_margin` before its deadline if renewal has not
    moved the deadline by then (the service is unreachable, too slow, or a renewal bound was
    reached).
The watchdog never waits for an HTTP call, so the signal fires *before* the local deadline
whatever the network does; a renewal answered after the lease was declared lost is ignored.
The signal: `lease.lost` (a threading.Event) is set, `lease.lost_reason` says why,
`lease.check()` raises LeaseLostError, and `on_lost(lease, error)` is called once (from a keeper
thread; its exceptions are logged and ignored).

The signal narrows the window in which a paused process can act on a lost lease; it cannot close
it (the pause can come right after the check). That is why every write still carries the token.
"""

from __future__ import annotations

import inspect
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Optional

from .errors import FencelockError, InvalidArgumentError, LeaseLostError, NotHeldError
from .lease import Lease

if TYPE_CHECKING:
    from .client import Client

_log = logging.getLogger("fencelock")


class _Renewal(NamedTuple):
    wake: float  # monotonic time to extend at
    ttl: float
    deadline: float
    lost_at: float  # the watchdog's moment: too late to extend after it

    def within(self) -> float:
        """The time an extend may take: until the watchdog's moment."""
        return max(self.lost_at - time.monotonic(), 0.001)

OnLost = Callable[[Lease, LeaseLostError], None]


class KeeperRules:
    """What a keeper decides, whatever runs it (threads here, asyncio tasks in fencelock.aio):
    its options, when to renew, the margin before the deadline at which the lease is declared
    lost, the renewal bounds, and the one place that declares it lost."""

    def __init__(
        self,
        lease: Lease,
        *,
        renew_when_left: float = 1.0 / 3.0,
        max_renewals: Optional[int] = None,
        max_hold: Optional[float] = None,
        lost_margin: Optional[float] = None,
        on_lost: Optional[Callable[[Lease, LeaseLostError], Any]] = None,
    ) -> None:
        """
        renew_when_left: extend when this fraction of the ttl is left; default 1/3; 0.05 .. 0.95.
        max_renewals: extend at most this many times, then let the lease run out; default no bound.
        max_hold: stop extending once the lease was held this long (seconds); default no bound.
        lost_margin: seconds before the deadline at which the lease is declared lost if not
            renewed; default a tenth of the ttl, at least 20 ms and at most half the ttl.
        on_lost: called once with (lease, LeaseLostError) when the lease is declared lost.
        """
        if not 0.05 <= renew_when_left <= 0.95:
            raise InvalidArgumentError("renew_when_left must be 0.05 .. 0.95")
        self.lease = lease
        self._renew_when_left = renew_when_left
        self._max_renewals = max_renewals
        self._max_hold = max_hold
        self._lost_margin = lost_margin
        self._on_lost = on_lost
        self._acquired = time.monotonic()
        self._renewals = 0
        self._last_failure: Optional[FencelockError] = None  # while renewal keeps failing
        self._released = False

    @property
    def renewals(self) -> int:
        return self._renewals

    def _margin(self, ttl: float) -> float:
        if self._lost_margin is not None:
            return self._lost_margin
        return min(max(ttl / 10.0, 0.020), ttl / 2.0)

    def _bounded(self) -> bool:
        return ((self._max_renewals is not None and self._renewals >= self._max_renewals) or
                (self._max_hold is not None
                 and time.monotonic() - self._acquired >= self._max_hold))

    def _lost_at(self) -> float:
        return self.lease.deadline - self._margin(self.lease.ttl)

    def _plan(self, retry_at: Optional[float]) -> Optional[_Renewal]:
        """The next renewal (when to wake, the ttl and deadline it starts from), or None once a
        bound was reached (the watchdog then declares the lease lost at its margin)."""
        if self._bounded():
            return None
        ttl, deadline = self.lease.ttl, self.lease.deadline
        renew_at = deadline - ttl * self._renew_when_left
        return _Renewal(retry_at if retry_at is not None else renew_at, ttl, deadline,
                        deadline - self._margin(ttl))

    def _attempt(self, plan: _Renewal) -> Optional[Lease]:
        """A copy of the lease for the extend, so that only a renewal answered before the lease
        was declared lost moves the deadline the work reads; None when it is too late."""
        if time.monotonic() >= plan.lost_at or self.lease.lost.is_set():
            return None
        return self.lease._copy(plan.ttl, plan.deadline)

    def _failed(self, error: FencelockError, plan: _Renewal) -> Optional[float]:
        """After a failed extend: when to try again, or None when the lease is lost (a refused
        extend declares it lost at once; a transient failure is retried until the watchdog
        fires)."""
        self._last_failure = error
        if isinstance(error, NotHeldError):
            self._declare_lost(LeaseLostError(f"the lease was refused: {error.message}", error))
            return None
        return time.monotonic() + max(plan.ttl / 20.0, 0.005)

    def _wake(self) -> None:
        """Wakes the watchdog and the renewer (the deadline moved, or the lease was lost)."""
        raise NotImplementedError

    def _spawn(self, awaitable: Any) -> None:
        """Runs what an on_lost coroutine function returned (the asyncio keeper only)."""

    def _late(self) -> LeaseLostError:
        """Why the watchdog declares the lease lost: renewal did not move its deadline in time."""
        reason = self._last_failure
        message = (f"the lease could not be renewed in time ({reason.code}: {reason.message})"
                   if reason is not None else
                   "the renewal bound was reached; the lease is about to expire"
                   if self._bounded() else "the lease could not be renewed in time")
        return LeaseLostError(message, reason)

    def _declare_lost(self, why: LeaseLostError) -> None:
        """Marks the lease lost (once), logs it, wakes the keeper and calls on_lost."""
        if not self.lease._mark_lost(why):
            return
        _log.warning("fencelock: the lease of %r (token %s) is lost: %s",
                     self.lease.name, self.lease.token if self.lease.kind != "set" else
                     self.lease.tokens, why.message)
        self._wake()
        if self._on_lost is None:
            return
        try:
            result = self._on_lost(self.lease, why)
        except Exception:  # a callback's bug must not kill the keeper silently
            _log.exception("fencelock: the on_lost callback of %r failed", self.lease.name)
            return
        if inspect.isawaitable(result):
            self._spawn(result)

    def _adopt(self, attempt: Lease) -> None:
        """Moves the lease to a renewal's new deadline unless it was declared lost meanwhile."""
        if self.lease._renew(attempt.ttl, attempt.deadline):
            self._renewals += 1
            self._last_failure = None
            self._wake()

    def _take_release(self) -> bool:
        """True for the first release only: a second one does not ask the service."""
        if self._released:
            return False
        self._released = True
        return True


class LeaseKeeper(KeeperRules):
    """Renews one lease in the background until stop()/release(). Thread-safe."""

    def __init__(self, client: "Client", lease: Lease, **options: Any) -> None:
        """Options: see KeeperRules (renew_when_left, max_renewals, max_hold, lost_margin,
        on_lost — called from a keeper thread)."""
        super().__init__(lease, **options)
        self._client = client
        self._stopped = threading.Event()
        self._moved = threading.Condition()  # notified when the deadline moved or on stop
        self._release_mutex = threading.Lock()
        self._renewer = threading.Thread(target=self._renew_loop, daemon=True,
                                         name=f"fencelock-renew-{lease.name}")
        self._watchdog = threading.Thread(target=self._watch_loop, daemon=True,
                                          name=f"fencelock-watch-{lease.name}")
        self._watchdog.start()
        self._renewer.start()

    @property
    def lost(self) -> threading.Event:
        return self.lease.lost

    def stop(self) -> None:
        """Stops renewing (the lease then runs out at its deadline). Idempotent."""
        self._stopped.set()
        with self._moved:
            self._moved.notify_all()
        current = threading.current_thread()
        for thread in (self._renewer, self._watchdog):
            if thread is not current and thread.is_alive():
                thread.join()

    def release(self) -> bool:
        """Stops renewing and releases now: True iff the lease still held the lock. Errors as
        Client.release; a second call returns False without asking the service."""
        self.stop()
        with self._release_mutex:
            if not self._take_release():
                return False
        return self._client.release(self.lease)

    def stop_and_release(self) -> None:
        """release(), with errors logged and ignored: the ttl frees the lock."""
        try:
            self.release()
        except FencelockError as e:
            _log.warning("fencelock: releasing %r failed (%s: %s); its ttl will free it",
                         self.lease.name, e.code, e.message)

    def __enter__(self) -> Lease:
        return self.lease

    def __exit__(self, *exc: object) -> None:
        self.stop_and_release()

    # --- the threads ---------------------------------------------------------------------

    def _wake(self) -> None:
        with self._moved:
            self._moved.notify_all()

    def _watch_loop(self) -> None:
        with self._moved:
            while not self._stopped.is_set() and not self.lease.lost.is_set():
                lost_at = self._lost_at()
                now = time.monotonic()
                if now >= lost_at:
                    break
                self._moved.wait(lost_at - now)
        if not self._stopped.is_set() and not self.lease.lost.is_set():
            self._declare_lost(self._late())

    def _renew_loop(self) -> None:
        retry_at: Optional[float] = None
        while not self._stopped.is_set() and not self.lease.lost.is_set():
            plan = self._plan(retry_at)
            if plan is None or self._stopped.wait(max(0.0, plan.wake - time.monotonic())):
                return
            attempt = self._attempt(plan)
            if attempt is None:
                return
            try:
                self._client.extend(attempt, plan.ttl, within=plan.within())
            except FencelockError as e:
                retry_at = self._failed(e, plan)
                if retry_at is None:
                    return
                continue
            retry_at = None
            self._adopt(attempt)
