"""A granted lock as the client holds it: name, fencing token and a conservative deadline.

The deadline is on time.monotonic(): the client's own send time of the granting (or last
extending) request plus the waited_ms (acquire only) and validity_ms the service answered — never
later than the truth, however long a waiting acquire waited (docs/api.md, "Acquire").

Send ``token`` with every write to the protected resource. The lease string proves ownership for
extend and release: it is a secret, kept out of repr(), str() and pickling.

Thread safety: a Lease may be read from any thread while a LeaseKeeper renews it.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Optional

from .errors import LeaseLostError


class Lease:
    """One grant of a lock. Created by Client.acquire; moved forward by Client.extend."""

    __slots__ = ("name", "token", "_lease_string", "_ttl", "_deadline", "_mutex", "lost",
                 "_lost_reason")

    def __init__(self, name: str, lease_string: str, token: int, ttl: float,
                 deadline: float) -> None:
        self.name = name
        # The fencing token: send it with every write to the protected resource.
        self.token = token
        self._lease_string = lease_string
        self._ttl = ttl
        self._deadline = deadline
        self._mutex = threading.Lock()
        # Set when a LeaseKeeper gave up on this lease (before its deadline) — wait on it, poll
        # it, or call check(). A lease without a keeper is never marked lost; check() still
        # refuses it once its deadline passed.
        self.lost = threading.Event()
        self._lost_reason: Optional[LeaseLostError] = None

    @property
    def lease_string(self) -> str:
        """The secret that proves ownership (extend, release). Never log it."""
        return self._lease_string

    @property
    def ttl(self) -> float:
        """The ttl (seconds) of the last grant or extend."""
        with self._mutex:
            return self._ttl

    @property
    def deadline(self) -> float:
        """time.monotonic() value after which the lease must not be relied on."""
        with self._mutex:
            return self._deadline

    def remaining(self) -> float:
        """Seconds until the deadline, 0 once it passed."""
        return max(0.0, self.deadline - time.monotonic())

    def valid(self) -> bool:
        """True until the deadline and while not marked lost. A valid lease may still have been
        taken over if this process was paused: that is what the token is for."""
        return not self.lost.is_set() and time.monotonic() < self.deadline

    @property
    def lost_reason(self) -> Optional[LeaseLostError]:
        with self._mutex:
            return self._lost_reason

    def check(self) -> None:
        """Raises LeaseLostError if the lease was lost or its deadline passed; else returns."""
        with self._mutex:
            reason = self._lost_reason
            deadline = self._deadline
        if self.lost.is_set():
            raise reason or LeaseLostError(f"the lease of {self.name!r} was lost")
        if time.monotonic() >= deadline:
            raise LeaseLostError(f"the lease of {self.name!r} is past its deadline")

    def _renew(self, ttl: float, deadline: float) -> bool:
        """Moves the deadline after a successful extend; False (and no change) once lost."""
        with self._mutex:
            if self.lost.is_set():
                return False
            self._ttl = ttl
            self._deadline = deadline
            return True

    def _mark_lost(self, why: LeaseLostError) -> bool:
        """Marks the lease lost; True only for the call that did it."""
        with self._mutex:
            if self.lost.is_set():
                return False
            self._lost_reason = why
            self.lost.set()
            return True

    def __repr__(self) -> str:
        state = "lost" if self.lost.is_set() else f"{self.remaining():.3f}s left"
        return f"Lease(name={self.name!r}, token={self.token}, {state})"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("a Lease holds a secret and is not pickled")

