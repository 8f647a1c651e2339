"""The listings — GET /v1/locks, /v1/semaphores and /v1/rwlocks ?prefix=P&limit=N&cursor=C
(docs/api.md) — as Calls shared by the blocking Client and the asyncio AsyncClient.

The three listings page alike: a page is a bounded scan of the lock nodes, so it may hold fewer
entries than `limit` (even none) and still have a `next`, the cursor of the following page (None
once the listing is complete); each is safe to repeat and retried like a status. They differ only
in their route, the field that holds their entries and how one entry is read: a listing is a row
of those three (_page), not a copy of the paging.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Protocol, TypeVar
from urllib.parse import quote

from ._calls import (Call, RwLockHolder, _integer, _token, expect_object, rwlock_status_from,
                     semaphore_status_from)
from ._http import Reply
from .errors import InternalError, InvalidArgumentError

# The largest page the service answers (docs/api.md).
MAX_LIST_LIMIT = 1000


class Page(Protocol):
    """A listing's page: what walking every page needs of it."""

    @property
    def next(self) -> Optional[str]: ...


E = TypeVar("E")
P = TypeVar("P", bound=Page)


@dataclass(frozen=True)
class HeldLock:
    """One lock of a listing (GET /v1/locks): held on a majority of lock nodes."""

    name: str
    # The holder's fencing token; None when the listing could not tell it.
    token: Optional[int]
    # What the holder sent as `owner` when it acquired; None when none was sent.
    owner: Optional[str]
    # Seconds until fewer than a majority of lock nodes hold it.
    remaining: float


@dataclass(frozen=True)
class LockListing:
    """One page of a listing. `next` is the cursor of the following page; None once complete."""

    locks: List[HeldLock]
    next: Optional[str]


@dataclass(frozen=True)
class ListedSemaphore:
    """One semaphore of a listing (GET /v1/semaphores): a permit was held on a majority of lock
    nodes; the counts are what semaphore_status would have said when the page was made."""

    name: str
    # The live semaphore's permit count.
    permits: int
    # Permits held on a majority of lock nodes.
    held: int


@dataclass(frozen=True)
class SemaphoreListing:
    """One page of the semaphore listing; `next` as LockListing's."""

    semaphores: List[ListedSemaphore]
    next: Optional[str]


@dataclass(frozen=True)
class ListedRwLock:
    """One read/write lock of a listing (GET /v1/rwlocks): a grant was held on a majority of lock
    nodes; the rest is what rwlock_status would have said when the page was made."""

    name: str
    # "read" or "write".
    mode: Optional[str]
    # The grants held, by token.
    holders: List[RwLockHolder]
    # A writer waits for the lock: new reads are refused meanwhile.
    writer_waiting: bool


@dataclass(frozen=True)
class RwLockListing:
    """One page of the read/write lock listing; `next` as LockListing's."""

    rwlocks: List[ListedRwLock]
    next: Optional[str]


def list_locks(prefix: str, limit: int, cursor: Optional[str]) -> Call[LockListing]:
    """One page of the locks held whose names start with `prefix`; `cursor` is the previous
    page's `next` (None: the first page)."""
    return _page("/v1/locks", "locks", prefix, limit, cursor, _held_lock, LockListing)


def list_semaphores(prefix: str, limit: int, cursor: Optional[str]) -> Call[SemaphoreListing]:
    """One page of the semaphores with a permit held whose names start with `prefix`."""
    return _page("/v1/semaphores", "semaphores", prefix, limit, cursor, _listed_semaphore,
                 SemaphoreListing)


def list_rwlocks(prefix: str, limit: int, cursor: Optional[str]) -> Call[RwLockListing]:
    """One page of the read/write locks with a grant held whose names start with `prefix`."""
    return _page("/v1/rwlocks", "rwlocks", prefix, limit, cursor, _listed_rwlock, RwLockListing)


def _page(route: str, field: str, prefix: str, limit: int, cursor: Optional[str],
          entry: Callable[[Any], E], listing: Callable[[List[E], Optional[str]], P]) -> Call[P]:
    """The Call of one page of `route`: its query checked and encoded, and an answer read as
    {field: [entry, ...], "next": cursor or null}."""
    if not isinstance(prefix, str):
        raise InvalidArgumentError("prefix must be a string")
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIST_LIMIT:
        raise InvalidArgumentError(f"limit must be an integer from 1 to {MAX_LIST_LIMIT}")
    if cursor is not None and (not isinstance(cursor, str) or not cursor):
        raise InvalidArgumentError("cursor must be a page's non-empty `next`, or None")
    target = f"{route}?limit={limit}"
    if prefix:
        target += "&prefix=" + quote(prefix, safe="")
    if cursor is not None:
        target += "&cursor=" + quote(cursor, safe="")

    def finish(reply: Reply, sent_at: float) -> P:
        answer = expect_object(reply)
        entries = answer.get(field)
        after = answer.get("next")
        if not isinstance(entries, list) or not (after is None or isinstance(after, str)):
            raise InternalError(f"the service's listing lacks its {field!r} array or 'next'")
        return listing([entry(one) for one in entries], after)
    return Call("GET", target, None, True, finish)


def _held_lock(lock: Any) -> HeldLock:
    if not isinstance(lock, dict) or not isinstance(lock.get("name"), str):
        raise InternalError("a listed lock lacks its name")
    owner = lock.get("owner")
    if owner is not None and not isinstance(owner, str):
        raise InternalError("a listed lock holds an 'owner' that is not a string")
    token = _token(lock, "token") if lock.get("token") is not None else None
    remaining = _integer(lock, "remaining_ms")
    if remaining < 0:
        raise InternalError(f"a listed lock holds an impossible 'remaining_ms': {remaining}")
    return HeldLock(lock["name"], token, owner, remaining / 1000.0)


def _listed_semaphore(semaphore: Any) -> ListedSemaphore:
    if not isinstance(semaphore, dict) or not isinstance(semaphore.get("name"), str):
        raise InternalError("a listed semaphore lacks its name")
    status = semaphore_status_from(semaphore)
    return ListedSemaphore(semaphore["name"], status.permits, status.held)


def _listed_rwlock(rwlock: Any) -> ListedRwLock:
    if not isinstance(rwlock, dict) or not isinstance(rwlock.get("name"), str):
        raise InternalError("a listed read/write lock lacks its name")
    status = rwlock_status_from(rwlock)
    return ListedRwLock(rwlock["name"], status.mode, status.holders, status.writer_waiting)
