"""Keeps a lease alive while work runs under it (Redisson's watchdog), and says when it is lost.

Two daemon threads per keeper:
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

import logging
import threading
import time
from typing import TYPE_CHECKING, Callable, Optional

from .errors import FencelockError, InvalidArgumentError, LeaseLostError, NotHeldError
from .lease import Lease

if TYPE_CHECKING:
    from .client import Client

_log = logging.getLogger("fencelock")

OnLost = Callable[[Lease, LeaseLostError], None]


class LeaseKeeper:
    """Renews one lease in the background until stop()/release(). Thread-safe."""

    def __init__(
        self,
        client: "Client",
        lease: Lease,
        *,
        renew_when_left: float = 1.0 / 3.0,
        max_renewals: Optional[int] = None,
        max_hold: Optional[float] = None,
        lost_margin: Optional[float] = None,
        on_lost: Optional[OnLost] = None,
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
        self._client = client
        self._renew_when_left = renew_when_left
        self._max_renewals = max_renewals
        self._max_hold = max_hold
        self._lost_margin = lost_margin
        self._on_lost = on_lost
        self._acquired = time.monotonic()
        self._renewals = 0
        self._last_failure: Optional[FencelockError] = None  # while renewal keeps failing
        self._stopped = threading.Event()
        self._moved = threading.Condition()  # notified when the deadline moved or on stop
        self._released = False
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

    @property
    def renewals(self) -> int:
        return self._renewals

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
            if self._released:
                return False
            self._released = True
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

    def _margin(self, ttl: float) -> float:
        if self._lost_margin is not None:
            return self._lost_margin
        return min(max(ttl / 10.0, 0.020), ttl / 2.0)

    def _bounded(self) -> bool:
        return ((self._max_renewals is not None and self._renewals >= self._max_renewals) or
                (self._max_hold is not None
                 and time.monotonic() - self._acquired >= self._max_hold))

    def _declare_lost(self, why: LeaseLostError) -> None:
        if not self.lease._mark_lost(why):
            return
        _log.warning("fencelock: the lease of %r (token %s) is lost: %s",
                     self.lease.name, self.lease.token if self.lease.kind != "set" else
                     self.lease.tokens, why.message)
        with self._moved:
            self._moved.notify_all()
        if self._on_lost is not None:
            try:
                self._on_lost(self.lease, why)
            except Exception:  # a callback's bug must not kill the keeper's thread silently
                _log.exception("fencelock: the on_lost callback of %r failed", self.lease.name)

    def _watch_loop(self) -> None:
        with self._moved:
            while not self._stopped.is_set() and not self.lease.lost.is_set():
                lost_at = self.lease.deadline - self._margin(self.lease.ttl)
                now = time.monotonic()
                if now >= lost_at:
                    break
                self._moved.wait(lost_at - now)
        if self._stopped.is_set() or self.lease.lost.is_set():
            return
        reason = self._last_failure
        message = (f"the lease could not be renewed in time ({reason.code}: {reason.message})"
                   if reason is not None else
                   "the renewal bound was reached; the lease is about to expire"
                   if self._bounded() else "the lease could not be renewed in time")
        self._declare_lost(LeaseLostError(message, reason))

    def _renew_loop(self) -> None:
        retry_at: Optional[float] = None
        while not self._stopped.is_set() and not self.lease.lost.is_set():
            ttl = self.lease.ttl
            deadline = self.lease.deadline
            lost_at = deadline - self._margin(ttl)
            if self._bounded():
                return  # the watchdog declares the lease lost at lost_at
            renew_at = deadline - ttl * self._renew_when_left
            wake = retry_at if retry_at is not None else renew_at
            if self._stopped.wait(max(0.0, wake - time.monotonic())):
                return
            now = time.monotonic()
            if now >= lost_at or self.lease.lost.is_set():
                return
            try:
                # A copy, so that only a renewal answered before the lease was declared lost
                # moves the deadline the work reads.
                attempt = self.lease._copy(ttl, deadline)
                self._client.extend(attempt, ttl, within=max(lost_at - now, 0.001))
            except NotHeldError as e:
                self._last_failure = e
                self._declare_lost(LeaseLostError(
                    f"the lease was refused: {e.message}", e))
                return
            except FencelockError as e:  # transient: try again shortly, until the watchdog fires
                self._last_failure = e
                retry_at = time.monotonic() + max(ttl / 20.0, 0.005)
                continue
            if self.lease._renew(attempt.ttl, attempt.deadline):
                self._renewals += 1
                self._last_failure = None
                retry_at = None
                with self._moved:
                    self._moved.notify_all()
