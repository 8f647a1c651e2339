"""A granted lease as the client holds it: a lock, a lock set, a semaphore permit or a read/write
lock's read or write grant, its fencing token(s) and a conservative deadline.

The deadline is on time.monotonic(): the client's own send time of the granting (or last
extending) request plus the waited_ms (acquire only) and validity_ms the service answered — never
later than the truth, however long a waiting acquire waited (docs/api.md, "Acquire").

Send ``token`` with every write to the protected resource — for a lock set, ``tokens[name]`` with
a write to the resource of that name; for a permit, ``token`` fenced per slot (the resource keeps
one current token per (semaphore, slot): N holders write at once); for a read or write grant,
``token``, from the name's counter (a write grant's is above every earlier grant's, so a store
that fences on it refuses a stale reader's write once the writer wrote). The lease string proves
ownership for extend and release: it is a secret, kept out of repr(), str() and pickling.

Thread safety: a Lease may be read from any thread while a LeaseKeeper renews it (an AsyncLease
from its event loop only).
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any, Dict, Optional, Sequence, Type, TypeVar, Union

from .errors import InvalidArgumentError, LeaseLostError

L = TypeVar("L", bound="Lease")

KINDS = ("lock", "set", "permit", "read", "write")
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,18}")
_HEX = re.compile(r"[0-9A-Fa-f]+")


class Lease:
    """One grant. Created by Client.acquire (a lock), Client.acquire_set (several names at once),
    Client.acquire_permit (a semaphore permit), Client.acquire_read / acquire_write (a read/write
    lock's grant) or Lease.from_string; moved forward by Client.extend.

    ``kind`` is "lock", "set", "permit", "read" or "write". A set's ``names`` are sorted and
    ``tokens`` maps each to its token; its ``name`` is the names joined by "," (for messages) and
    its ``token`` None. A permit's ``permits`` is the semaphore's permit count and ``slot`` the
    slot it holds. A read/write lock's grant has ``mode`` "read" or "write" (None otherwise)."""

    __slots__ = ("name", "token", "names", "tokens", "permits", "slot", "mode", "_lease_string",
                 "_ttl", "_deadline", "_mutex", "lost", "_lost_reason")

    def __init__(self, name: str, lease_string: str, token: Optional[int], ttl: float,
                 deadline: float, *, tokens: Optional[Dict[str, int]] = None,
                 permits: Optional[int] = None, slot: Optional[int] = None,
                 mode: Optional[str] = None) -> None:
        # A set: the names in the order of `tokens` (sorted by the service).
        self.names: Sequence[str] = tuple(tokens) if tokens is not None else (name,)
        self.name = ",".join(self.names) if tokens is not None else name
        # The fencing token: send it with every write to the protected resource.
        self.token = token
        self.tokens: Dict[str, int] = dict(tokens) if tokens is not None else (
            {name: token} if token is not None else {})
        self.permits = permits
        self.slot = slot
        self.mode = mode
        self._lease_string = lease_string
        self._ttl = ttl
        self._deadline = deadline
        self._mutex = threading.Lock()
        # Set when a LeaseKeeper gave up on this lease (before its deadline) — wait on it, poll
        # it, or call check(). A lease without a keeper is never marked lost; check() still
        # refuses it once its deadline passed. fencelock.aio's leases (AsyncLease) hold an
        # asyncio.Event here instead.
        self.lost = threading.Event()
        self._lost_reason: Optional[LeaseLostError] = None

    @classmethod
    def from_string(cls: Type[L], kind: str, names: Union[str, Sequence[str]], lease_string: str,
                    ttl: float) -> L:
        """Rebuilds a lease from its lease string, as printed by `fencelock acquire` or kept by
        another process, so that it can be extended or released (the C++ SDK's
        lease_from_string). Its deadline is unknown: now, until an extend moves it — extend it
        before keep() or a block relies on it. The string's shape is checked, not its proof (the
        service does):
          - "lock": `names` = NAME, "<token>.<proof>";
          - "set": `names` in any order (1..16 distinct names), "<t1>,<t2>,....<proof>" with one
            token per name in sorted-name order;
          - "permit": `names` = NAME, "<token>.<proof>.<permits>.<slot>", slot < permits <= 64;
          - "read", "write": `names` = NAME, "<token>.<proof>.r" or "<token>.<proof>.w".
        `names` may be one name (a str) or a list. fencelock.aio.AsyncLease.from_string, called
        in the event loop, gives an AsyncLease. Raises InvalidArgumentError."""
        # _calls imports this module
        from ._calls import MAX_PERMITS, MAX_SET_NAMES, _milliseconds, check_name
        if kind not in KINDS:
            raise InvalidArgumentError(f"kind must be one of {', '.join(KINDS)}")
        listed = [names] if isinstance(names, str) else list(names)
        if kind != "set" and len(listed) != 1:
            raise InvalidArgumentError(f"a {kind} lease has exactly one name")
        if not 1 <= len(listed) <= MAX_SET_NAMES:
            raise InvalidArgumentError(f"a lock set has 1 to {MAX_SET_NAMES} names")
        for name in listed:
            check_name(name)
        listed.sort()
        if len(set(listed)) != len(listed):
            raise InvalidArgumentError("a lock set's names must be distinct")
        _milliseconds(ttl, "ttl", 1)  # a finite number of seconds, at least a millisecond
        parts = lease_string.split(".") if isinstance(lease_string, str) else []
        expected = {"permit": 4, "read": 3, "write": 3}.get(kind, 2)
        if len(parts) != expected or not _HEX.fullmatch(parts[1]):
            raise InvalidArgumentError("a malformed lease string")
        tokens = [_positive(text, "a malformed lease string (its tokens)")
                  for text in parts[0].split(",")]
        if len(tokens) != len(listed):
            raise InvalidArgumentError(f"the lease string holds {len(tokens)} token(s) for "
                                       f"{len(listed)} name(s)")
        now = time.monotonic()
        if kind == "set":
            return cls("", lease_string, None, ttl, now, tokens=dict(zip(listed, tokens)))
        if kind == "permit":
            permits = _positive(parts[2], "a malformed permit lease string (its permits)")
            if (not _DECIMAL.fullmatch(parts[3]) or permits > MAX_PERMITS
                    or int(parts[3]) >= permits):
                raise InvalidArgumentError("a malformed permit lease string (its slot)")
            return cls(listed[0], lease_string, tokens[0], ttl, now, permits=permits,
                       slot=int(parts[3]))
        if kind in ("read", "write"):
            if parts[2] != kind[0]:
                raise InvalidArgumentError(
                    "a malformed read/write lock lease string (its mode)")
            return cls(listed[0], lease_string, tokens[0], ttl, now, mode=kind)
        return cls(listed[0], lease_string, tokens[0], ttl, now)

    @property
    def kind(self) -> str:
        """"lock", "set", "permit", "read" or "write"."""
        if self.mode is not None:
            return self.mode
        if self.permits is not None:
            return "permit"
        return "set" if self.token is None else "lock"

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

    def _copy(self, ttl: float, deadline: float) -> "Lease":
        """The same grant with another ttl and deadline (never marked lost): what a renewal
        attempt moves before the keeper adopts it."""
        if self.kind == "set":
            return Lease("", self._lease_string, None, ttl, deadline, tokens=self.tokens)
        return Lease(self.name, self._lease_string, self.token, ttl, deadline,
                     permits=self.permits, slot=self.slot, mode=self.mode)

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
        if self.kind == "set":
            return f"Lease(names={list(self.names)!r}, tokens={self.tokens!r}, {state})"
        if self.kind == "permit":
            return (f"Lease(name={self.name!r}, permits={self.permits}, slot={self.slot}, "
                    f"token={self.token}, {state})")
        if self.mode is not None:
            return f"Lease(name={self.name!r}, mode={self.mode!r}, token={self.token}, {state})"
        return f"Lease(name={self.name!r}, token={self.token}, {state})"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        raise TypeError("a Lease holds a secret and is not pickled")



def _positive(text: str, message: str) -> int:
    """A fencing token or a permit count: a positive decimal without leading zeros, at most the
    API's int64."""
    if not _DECIMAL.fullmatch(text) or text == "0" or int(text) > 2**63 - 1:
        raise InvalidArgumentError(message)
    return int(text)
