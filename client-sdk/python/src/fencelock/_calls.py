"""What each API call sends, how its answer is read and when it is retried — the part of the
client that does no I/O, shared by the blocking Client and the asyncio AsyncClient.

A Call is one request (method, path, JSON body), whether it is safe to repeat, and the function
that turns its answer into the result. Attempts is the retry policy of one call: calls safe to
repeat (extend, release, status, watch, listing, tokens) are retried on transport errors and 503s,
on the next endpoint, up to max_retries times with a doubling pause. A lock's acquire names its
request (request_id), so it is also retried after a transport failure that may have been delivered
— the service answers the grant it already made — but not on a 503. Other grants (a lock set's, a
permit's, a read/write lock's, a revoke) are retried only when their request certainly was not
delivered (nothing can have been granted). Each client runs the attempts over its own transport:
a blocking socket or an asyncio stream. The listings' Calls are in _listings.py.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Generic, List, Optional, Sequence, Tuple, Type, TypeVar, Union

from ._http import Reply, RoundTripError
from .errors import (FencelockError, InternalError, InvalidArgumentError, PermitsMismatchError,
                     TlsError, TransportError, error_for)
from .lease import Lease

Seconds = Union[int, float]
T = TypeVar("T")

_NAME = re.compile(r"[A-Za-z0-9._:-]{1,200}")
NAME_RULE = 'name must be 1 to 200 characters from [A-Za-z0-9._:-], other than "." and ".."'
_REQUEST_ID = re.compile(r"[\x21-\x7e]{1,64}")
# The service's bounds (docs/api.md): names in one lock set, permits of one semaphore.
MAX_SET_NAMES = 16
MAX_PERMITS = 64
# The longest wait a watch may ask for, in seconds (the C++ SDK's bound; the server's --max-wait
# may be shorter).
MAX_WATCH_WAIT = 3600


@dataclass(frozen=True)
class LockStatus:
    held: bool
    # Seconds until fewer than a majority of lock nodes hold it; None when not held.
    remaining: Optional[float]
    # The name's current token (GET /v1/tokens/{name}): at or above every token handed out for
    # it, below every later one.
    last_token: int
    # The holder's fencing token; None when not held.
    token: Optional[int] = None
    # What the holder sent as `owner` when it acquired; None when not held or none was sent.
    owner: Optional[str] = None
    # A watch's answer only: the lock is no longer held with the token watched (False: the wait
    # ran out with it unchanged). A watch's answer has no last_token: 0 there.
    changed: bool = False


@dataclass(frozen=True)
class SemaphoreStatus:
    # The live semaphore's permit count; 0 when no permit is live.
    permits: int
    # Permits held on a majority of lock nodes.
    held: int


@dataclass(frozen=True)
class RwLockHolder:
    """One grant of a read/write lock, held on a majority of lock nodes."""

    token: int
    # What the holder sent as `owner` when it acquired; None when none was sent.
    owner: Optional[str]
    # Seconds until fewer than a majority of lock nodes hold this grant.
    remaining: float


@dataclass(frozen=True)
class RwLockStatus:
    """GET /v1/rwlocks/{name}: the grants held on a majority of lock nodes, by token."""

    # "read" or "write" while held; None when free.
    mode: Optional[str]
    holders: List[RwLockHolder]
    # A writer waits for the lock: new reads are refused meanwhile.
    writer_waiting: bool


def check_name(name: str) -> None:
    """InvalidArgumentError unless `name` is a valid lock name (docs/api.md, "Names")."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name in (".", ".."):
        raise InvalidArgumentError(NAME_RULE)


# --- options ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Options:
    """A client's validated options (Client.__init__ documents each)."""

    urls: List[str]
    headers: Dict[str, str]
    ssl_context: Optional[ssl.SSLContext]
    connect_timeout: float
    request_timeout: float
    max_retries: int
    retry_backoff: float
    max_idle: int

    @classmethod
    def of(cls, endpoints: Union[str, Sequence[str], None], api_key: Optional[str],
           connect_timeout: Seconds, request_timeout: Seconds, max_retries: int,
           retry_backoff: Seconds, max_idle_connections: int,
           ssl_context: Optional[ssl.SSLContext]) -> "Options":
        """Arguments win; None reads the CLI's variables ($FENCELOCK_ENDPOINT comma-separated,
        $FENCELOCK_API_KEY, $FENCELOCK_CACERT). Raises InvalidArgumentError."""
        if endpoints is None:
            endpoints = os.environ.get("FENCELOCK_ENDPOINT") or "http://127.0.0.1:8080"
            endpoints = [url.strip() for url in endpoints.split(",")]
        if api_key is None:
            api_key = os.environ.get("FENCELOCK_API_KEY") or None
        if isinstance(endpoints, str):
            endpoints = [endpoints]
        urls = list(endpoints)
        if not 1 <= len(urls) <= 16:
            raise InvalidArgumentError("endpoints: need 1 to 16 fencelockd URLs")
        headers: Dict[str, str] = {}
        if api_key:
            if (not isinstance(api_key, str) or len(api_key) > 256
                    or not all(" " < c < "\x7f" for c in api_key)):
                raise InvalidArgumentError(
                    "api_key must be at most 256 printable ASCII characters without spaces")
            headers["Authorization"] = "Bearer " + api_key
        ca_file = os.environ.get("FENCELOCK_CACERT") or None
        if (ssl_context is not None or ca_file) and any(
                str(url).startswith("http:") for url in urls):
            # As the CLI and the other SDKs: certificate checking was asked for, so an http://
            # endpoint would send the API key and the leases unencrypted against that intent.
            raise InvalidArgumentError(
                "a CA file ($FENCELOCK_CACERT) or ssl_context was given, but an endpoint is"
                " http://: the API key and the leases would go unencrypted; use https:// for"
                " every endpoint")
        if ssl_context is None and any(str(url).startswith("https:") for url in urls):
            ssl_context = ssl.create_default_context(cafile=ca_file)
        return cls(urls, headers, ssl_context,
                   connect_timeout=_bounded(connect_timeout, 0.001, 60, "connect_timeout"),
                   request_timeout=_bounded(request_timeout, 0.001, 600, "request_timeout"),
                   max_retries=int(_bounded(max_retries, 0, 10, "max_retries")),
                   retry_backoff=_bounded(retry_backoff, 0, 10, "retry_backoff"),
                   max_idle=int(_bounded(max_idle_connections, 0, 1024, "max_idle_connections")))

    def describe(self, kind: str) -> str:
        """repr() of a client: its endpoints, never its key."""
        return f"{kind}(endpoints={self.urls!r}{', api_key=***' if self.headers else ''})"


def _bounded(value: Any, lo: float, hi: float, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
        raise InvalidArgumentError(f"{what} must be {lo} .. {hi}")
    return float(value)


# --- what both clients hold ------------------------------------------------------------------

class ClientBase:
    """The options and endpoints of a Client or an AsyncClient (each names its endpoint type)."""

    _endpoint_type: Any
    _kind = "Client"

    def __init__(
        self,
        endpoints: Union[str, Sequence[str], None] = None,
        *,
        api_key: Optional[str] = None,
        connect_timeout: Seconds = 1.0,
        request_timeout: Seconds = 5.0,
        max_retries: int = 2,
        retry_backoff: Seconds = 0.05,
        max_idle_connections: int = 8,
        ssl_context: Optional[ssl.SSLContext] = None,
    ) -> None:
        """
        endpoints: fencelockd base URLs ("http://HOST:PORT", "https://HOST:PORT"), tried in
            order — after a failure the next one; 1..16. Default: $FENCELOCK_ENDPOINT
            (comma-separated), as the CLI reads it, else http://127.0.0.1:8080.
        api_key: sent as "Authorization: Bearer <api_key>" (fencelockd with --auth-file). Never
            logged, never in an error message or repr. Default: $FENCELOCK_API_KEY.
        connect_timeout: connecting (TLS handshake included); default 1 s; 0.001 .. 60.
        request_timeout: each socket read or write of one request in Client, one attempt's whole
            round trip in AsyncClient (an acquire adds its wait); default 5 s; 0.001 .. 600.
        max_retries: extra attempts of retry-safe calls, and of an acquire whose answer was lost;
            default 2; 0..10.
        retry_backoff: pause before a retry, doubled each time; default 0.05 s; 0 .. 10.
        max_idle_connections: idle keep-alive connections kept per endpoint; default 8; 0..1024.
        ssl_context: for https:// endpoints (default: ssl.create_default_context() with the CA
            file $FENCELOCK_CACERT if set, else the system's trust store); load your CA and
            client certificate into it.
        Raises InvalidArgumentError for a malformed endpoint or an option out of bounds.
        """
        self._options = Options.of(endpoints, api_key, connect_timeout, request_timeout,
                                   max_retries, retry_backoff, max_idle_connections, ssl_context)
        self._endpoints = [self._endpoint_type(url, self._options.ssl_context,
                                               self._options.max_idle)
                           for url in self._options.urls]
        self._preferred = 0  # the endpoint that answered last: the next call starts there
        self._mutex = threading.Lock()  # guards _preferred (Client's threads)

    def __repr__(self) -> str:
        return self._options.describe(self._kind)


# --- calls -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    target: str
    body: Optional[Dict[str, Any]]
    safe: bool  # repeating it changes nothing: retried on transport errors and 503s
    finish: Callable[[Reply, float], T]  # (the answer, the send time of its attempt) -> result
    extra: float = 0.0  # seconds the service may take beyond the request timeout (a wait)
    within: Optional[float] = None  # bounds the whole call, retries included
    # Asked again after a transport failure that may have been delivered, but not after a 503:
    # an acquire naming its request_id, whose repeat answers the grant already made.
    repeatable: bool = False

    @property
    def data(self) -> Optional[bytes]:
        return json.dumps(self.body).encode() if self.body is not None else None


def acquire(name: str, ttl: Seconds, wait: Seconds, owner: Optional[str],
            request_id: Optional[str] = None, lease_class: Type[Lease] = Lease) -> Call[Lease]:
    """A lock's acquire, named by `request_id` (a fresh random one when None): repeatable."""
    check_name(name)
    body = _grant_body(ttl, wait, owner)
    body["request_id"] = new_request_id() if request_id is None else _check_request_id(request_id)
    return Call("POST", f"/v1/locks/{name}", body, False, _lock_grant(name, body, lease_class),
                extra=body.get("wait_ms", 0) / 1000.0, repeatable=True)


def new_request_id() -> str:
    """A request id for one acquire call: 128 bits from the OS's CSPRNG, in hex."""
    return secrets.token_hex(16)


def _check_request_id(request_id: str) -> str:
    if not isinstance(request_id, str) or not _REQUEST_ID.fullmatch(request_id):
        raise InvalidArgumentError(
            "request_id must be 1 to 64 printable ASCII characters without spaces")
    return request_id


def revoke(name: str, ttl: Seconds, owner: Optional[str],
           lease_class: Type[Lease] = Lease) -> Call[Lease]:
    """Takes lock `name` whoever holds it (never waits): answered as a lock acquire."""
    check_name(name)
    body = _grant_body(ttl, 0, owner)
    return _grant(f"/v1/locks/{name}/revoke", body, _lock_grant(name, body, lease_class))


def _lock_grant(name: str, body: Dict[str, Any],
                lease_class: Type[Lease]) -> Callable[[Reply, float], Lease]:
    """Reads the grant of one lock (acquire, revoke)."""
    def finish(reply: Reply, sent_at: float) -> Lease:
        answer = expect_object(reply)
        return lease_class(name, _lease_string(answer), _token(answer, "token"),
                           body["ttl_ms"] / 1000.0, _deadline(answer, sent_at, body["ttl_ms"]))
    return finish


def acquire_set(names: Sequence[str], ttl: Seconds, wait: Seconds, owner: Optional[str],
                lease_class: Type[Lease] = Lease) -> Call[Lease]:
    body = _grant_body(ttl, wait, owner)
    body["names"] = _check_set_names(names)

    def finish(reply: Reply, sent_at: float) -> Lease:
        answer = expect_object(reply)
        tokens = answer.get("tokens")
        if not isinstance(tokens, dict) or sorted(tokens) != sorted(body["names"]):
            raise InternalError("the service's answer lacks a token per name")
        ordered = {name: _token(tokens, name) for name in sorted(tokens)}
        return lease_class("", _lease_string(answer), None, body["ttl_ms"] / 1000.0,
                           _deadline(answer, sent_at, body["ttl_ms"]), tokens=ordered)
    return _grant("/v1/locks", body, finish)


def acquire_permit(name: str, permits: int, ttl: Seconds, wait: Seconds, owner: Optional[str],
                   lease_class: Type[Lease] = Lease) -> Call[Lease]:
    check_name(name)
    body = _grant_body(ttl, wait, owner)
    body["permits"] = _check_permits(permits)

    def finish(reply: Reply, sent_at: float) -> Lease:
        answer = expect_object(reply)
        return lease_class(name, _lease_string(answer), _token(answer, "token"),
                           body["ttl_ms"] / 1000.0, _deadline(answer, sent_at, body["ttl_ms"]),
                           permits=_integer(answer, "permits"), slot=_integer(answer, "slot"))
    return _grant(f"/v1/semaphores/{name}", body, finish)


def acquire_rw(name: str, mode: str, ttl: Seconds, wait: Seconds, owner: Optional[str],
               lease_class: Type[Lease] = Lease) -> Call[Lease]:
    """A read/write lock's read or write grant (`mode` "read" or "write"): no request_id, so
    retried only when the request certainly was not delivered."""
    check_name(name)
    if mode not in ("read", "write"):
        raise InvalidArgumentError('mode must be "read" or "write"')
    body = _grant_body(ttl, wait, owner)
    body["mode"] = mode

    def finish(reply: Reply, sent_at: float) -> Lease:
        answer = expect_object(reply)
        if answer.get("mode") != mode:  # a reader that thinks it writes alone fences wrongly
            raise InternalError(f"asked for a {mode} grant, the service answered mode "
                                f"{answer.get('mode')!r}")
        return lease_class(name, _lease_string(answer), _token(answer, "token"),
                           body["ttl_ms"] / 1000.0, _deadline(answer, sent_at, body["ttl_ms"]),
                           mode=mode)
    return _grant(f"/v1/rwlocks/{name}", body, finish)


def extend(lease: Lease, ttl: Optional[Seconds], within: Optional[Seconds]) -> Call[None]:
    ttl_ms = _milliseconds(lease.ttl if ttl is None else ttl, "ttl", 1)
    target, body = _lease_request(lease)
    body["ttl_ms"] = ttl_ms
    target = "/v1/locks:extend" if lease.kind == "set" else target + "/extend"

    def finish(reply: Reply, sent_at: float) -> None:
        validity = _answered_within(expect_object(reply), "validity_ms", 0, ttl_ms)
        lease._renew(ttl_ms / 1000.0, sent_at + validity / 1000.0)
    return Call("POST", target, body, True, finish, within=within)


def release(lease: Lease) -> Call[bool]:
    target, body = _lease_request(lease)

    def finish(reply: Reply, sent_at: float) -> bool:
        released = expect_object(reply).get("released")
        if not isinstance(released, bool):
            raise InternalError("the service's answer lacks 'released'")
        return released
    return Call("DELETE", target, body, True, finish)


def status(name: str) -> Call[LockStatus]:
    check_name(name)
    return Call("GET", f"/v1/locks/{name}", None, True,
                lambda reply, sent_at: _lock_status(expect_object(reply), watch=False))


def watch(name: str, after_token: int, wait: Seconds) -> Call[LockStatus]:
    """A lock's status once it is no longer held with `after_token`, or after `wait` seconds
    unchanged (GET /v1/locks/{name}?after_token=T&wait_ms=N): the service may take the wait
    beyond the request timeout, and repeating it changes nothing."""
    check_name(name)
    if isinstance(after_token, bool) or not isinstance(after_token, int) or not (
            0 <= after_token <= 2**63 - 1):
        raise InvalidArgumentError("after_token must be a fencing token (an integer from 0)")
    wait_ms = _milliseconds(wait, "wait", 0)
    if wait_ms > MAX_WATCH_WAIT * 1000:
        raise InvalidArgumentError(f"wait must be from 0 to {MAX_WATCH_WAIT} s")
    return Call("GET", f"/v1/locks/{name}?after_token={after_token}&wait_ms={wait_ms}", None, True,
                lambda reply, sent_at: _lock_status(expect_object(reply), watch=True),
                extra=wait_ms / 1000.0)


def _lock_status(answer: Dict[str, Any], watch: bool) -> LockStatus:
    """A status's answer, or a watch's (then `changed`, and no `last_token`)."""
    remaining = answer.get("remaining_ms")
    # The holder's token and owner: null when not held (owner also when none was sent).
    holder_token = _token(answer, "token") if answer.get("token") is not None else None
    owner = answer.get("owner")
    if owner is not None and not isinstance(owner, str):
        raise InternalError("the service's answer holds an 'owner' that is not a string")
    changed = answer.get("changed")
    if watch and not isinstance(changed, bool):
        raise InternalError("the service's answer lacks 'changed'")
    return LockStatus(held=answer.get("held") is True,
                      remaining=remaining / 1000.0 if isinstance(remaining, int) else None,
                      last_token=0 if watch else _integer(answer, "last_token"),
                      token=holder_token, owner=owner, changed=watch and changed is True)


def semaphore_status(name: str) -> Call[SemaphoreStatus]:
    check_name(name)
    return Call("GET", f"/v1/semaphores/{name}", None, True,
                lambda reply, sent_at: semaphore_status_from(expect_object(reply)))


def semaphore_status_from(answer: Dict[str, Any]) -> SemaphoreStatus:
    """A semaphore's status as its status route, and each entry of its listing, words it."""
    return SemaphoreStatus(permits=_integer(answer, "permits"), held=_integer(answer, "held"))


def rwlock_status(name: str) -> Call[RwLockStatus]:
    check_name(name)
    return Call("GET", f"/v1/rwlocks/{name}", None, True,
                lambda reply, sent_at: rwlock_status_from(expect_object(reply)))


def rwlock_status_from(answer: Dict[str, Any]) -> RwLockStatus:
    """A read/write lock's status as its status route, and each entry of its listing, words it."""
    mode = answer.get("mode")
    holders = answer.get("holders")
    waiting = answer.get("writer_waiting")
    if (mode not in (None, "read", "write") or not isinstance(holders, list)
            or not isinstance(waiting, bool)):
        raise InternalError("the service's answer is not a read/write lock's status")
    return RwLockStatus(mode, [_rw_holder(holder) for holder in holders], waiting)


def _rw_holder(holder: Any) -> RwLockHolder:
    if not isinstance(holder, dict):
        raise InternalError("a read/write lock's holder is not a JSON object")
    owner = holder.get("owner")
    if owner is not None and not isinstance(owner, str):
        raise InternalError("a read/write lock's holder has an 'owner' that is not a string")
    remaining = _integer(holder, "remaining_ms")
    if remaining < 0:
        raise InternalError(f"a read/write lock's holder has an impossible 'remaining_ms': "
                            f"{remaining}")
    return RwLockHolder(_token(holder, "token"), owner, remaining / 1000.0)


def token(method: str, name: str) -> Call[int]:
    """POST draws the next token of `name`, GET reads its current one (0 if none was drawn)."""
    check_name(name)
    least = 1 if method == "POST" else 0
    return Call(method, f"/v1/tokens/{name}", None, True,
                lambda reply, sent_at: _token(expect_object(reply), "token", least))


def _grant(target: str, body: Dict[str, Any],
           finish: Callable[[Reply, float], Lease]) -> Call[Lease]:
    return Call("POST", target, body, False, finish, extra=body.get("wait_ms", 0) / 1000.0)


def _grant_body(ttl: Seconds, wait: Seconds, owner: Optional[str]) -> Dict[str, Any]:
    body: Dict[str, Any] = {"ttl_ms": _milliseconds(ttl, "ttl", 1)}
    wait_ms = _milliseconds(wait, "wait", 0)
    if wait_ms > 0:
        body["wait_ms"] = wait_ms
    if owner:
        body["owner"] = owner
    return body


def _check_set_names(names: Sequence[str]) -> list:
    if isinstance(names, str) or not isinstance(names, (list, tuple)):
        raise InvalidArgumentError("names must be a list of lock names")
    if not 1 <= len(names) <= MAX_SET_NAMES:
        raise InvalidArgumentError(f"a lock set has 1 to {MAX_SET_NAMES} names")
    for name in names:
        check_name(name)
    if len(set(names)) != len(names):
        raise InvalidArgumentError("a lock set's names must be distinct")
    return list(names)


def _check_permits(permits: int) -> int:
    if isinstance(permits, bool) or not isinstance(permits, int) or not (
            1 <= permits <= MAX_PERMITS):
        raise InvalidArgumentError(f"permits must be an integer from 1 to {MAX_PERMITS}")
    return permits


def _milliseconds(value: Seconds, what: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidArgumentError(f"{what} must be a finite number of seconds")
    ms = int(round(value * 1000))
    if ms < minimum or ms > 2**31:
        raise InvalidArgumentError(f"{what} out of range: {value!r} s")
    return ms


def _lease_request(lease: Lease) -> Tuple[str, Dict[str, Any]]:
    """The path and body that name `lease` for extend ("/extend" appended, but for a set) and
    release."""
    body: Dict[str, Any] = {"lease": lease.lease_string}
    if lease.kind == "set":
        body["names"] = list(lease.names)
        return "/v1/locks", body
    if lease.kind == "permit":
        return f"/v1/semaphores/{lease.name}", body
    if lease.kind in ("read", "write"):  # the lease string carries the mode
        return f"/v1/rwlocks/{lease.name}", body
    return f"/v1/locks/{lease.name}", body


# --- the retry policy ------------------------------------------------------------------------

class Attempts:
    """The attempts of one call, as the module comment says. A client loops:

        while (step := attempts.start()) is not None:
            index, timeout = step           # the endpoint to ask and the attempt's time bound
            ... round trip; on RoundTripError: attempts.failed(e) (raises if not retried)
            ... on a reply: if attempts.final(index, reply): return call.finish(reply, sent_at)
            pause = attempts.pause(); if pause is None: break; sleep(pause)
        raise attempts.error()
    """

    def __init__(self, call: Call[Any], options: Options, preferred: int) -> None:
        self._call = call
        self._options = options
        self._preferred = preferred
        self._attempt = -1
        self._backoff = options.retry_backoff
        self._overall = time.monotonic() + call.within if call.within is not None else None
        self._stop = False
        self._last: Optional[FencelockError] = None
        self._tls: Optional[FencelockError] = None
        self.sent_at = 0.0  # monotonic send time of the current attempt

    def start(self) -> Optional[Tuple[int, float]]:
        """The next attempt's endpoint index and timeout (seconds), or None: stop."""
        self._attempt += 1
        if self._stop or self._attempt > self._options.max_retries:
            return None
        self.sent_at = time.monotonic()
        timeout = self._options.request_timeout + self._call.extra
        if self._overall is not None:
            timeout = min(timeout, self._overall - self.sent_at)
        if timeout <= 0:
            return None
        return (self._preferred + self._attempt) % len(self._options.urls), timeout

    def failed(self, failure: RoundTripError) -> None:
        """Records a failed round trip; raises its error when the call must not be repeated."""
        self._last = failure.error
        if failure.maybe_delivered and not (self._call.safe or self._call.repeatable):
            raise failure.error from None
        if isinstance(failure.error, TlsError):
            self._tls = self._tls or failure.error
            self._stop = len(self._options.urls) == 1

    def final(self, reply: Reply) -> bool:
        """True: finish the call with this reply; False: a 503 to a call safe to repeat."""
        if reply.status == 503 and self._call.safe:
            self._last = error_from_reply(reply)
            return False
        return True

    def pause(self) -> Optional[float]:
        """Seconds to wait before the next attempt, or None when there is none."""
        if self._stop or self._attempt >= self._options.max_retries:
            return None
        pause = self._backoff
        if self._overall is not None and time.monotonic() + pause >= self._overall:
            return None
        self._backoff *= 2
        return pause

    def error(self) -> FencelockError:
        """What to raise when the attempts ran out: a TLS failure before a later connection
        failure, else the last attempt's error."""
        if self._tls is not None and (self._last is None or type(self._last) is TransportError):
            return self._tls
        return self._last or TransportError("no time left to send the request")


# --- reading answers -------------------------------------------------------------------------

def error_from_reply(reply: Reply) -> FencelockError:
    code: Optional[str] = None
    message = f"HTTP {reply.status}"
    retry_after: Optional[float] = None
    try:
        answer = json.loads(reply.body)
    except (ValueError, RecursionError):  # RecursionError: nested too deep
        answer = None
    error = answer.get("error") if isinstance(answer, dict) else None
    if isinstance(error, dict):
        if isinstance(error.get("code"), str):
            code = error["code"]
        if isinstance(error.get("message"), str):
            message = error["message"]
        ms = error.get("retry_after_ms")
        if isinstance(ms, int) and not isinstance(ms, bool):
            retry_after = ms / 1000.0
    if retry_after is None and "retry-after" in reply.headers:
        try:
            retry_after = float(int(reply.headers["retry-after"]))
        except ValueError:
            pass
    raised = error_for(reply.status, code, message, retry_after)
    raised.request_id = reply.headers.get("x-request-id")
    if isinstance(raised, PermitsMismatchError) and isinstance(error, dict):
        permits = error.get("permits")
        if isinstance(permits, int) and not isinstance(permits, bool):
            raised.permits = permits
    return raised


def expect_object(reply: Reply) -> Dict[str, Any]:
    if reply.status != 200:
        raise error_from_reply(reply)
    try:
        # Python's int is unbounded: a token reads back exactly, however large.
        answer = json.loads(reply.body)
    except (ValueError, RecursionError):  # RecursionError: nested too deep
        answer = None
    if not isinstance(answer, dict):
        raise InternalError("the service answered something that is not a JSON object",
                            http_status=reply.status)
    return answer


def _integer(answer: Dict[str, Any], name: str) -> int:
    value = answer.get(name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise InternalError(f"the service's answer lacks the integer {name!r}")
    return value


def _lease_string(answer: Dict[str, Any]) -> str:
    lease = answer.get("lease")
    if not isinstance(lease, str):
        raise InternalError("the service's answer lacks the lease")
    return lease


def _token(answer: Dict[str, Any], name: str, least: int = 1) -> int:
    """A fencing token: a positive 64-bit signed integer (the API's int64); a name's current
    token (least=0) is 0 when none was ever drawn."""
    value = _integer(answer, name)
    if not least <= value <= 2**63 - 1:
        raise InternalError(f"the service's answer holds an impossible token {name!r}: {value}")
    return value


def _answered_within(answer: Dict[str, Any], name: str, low: int, high: int) -> int:
    """An integer field, refused below `low` and cut to `high`: a validity is counted from the ttl
    asked for and can never exceed it, whatever an answer says."""
    value = _integer(answer, name)
    if value < low:
        raise InternalError(f"the service's answer holds an impossible {name!r}: {value}")
    return min(value, high)


def _deadline(answer: Dict[str, Any], sent_at: float, ttl_ms: int) -> float:
    """Conservative: validity counts from the start of the winning attempt, which is no earlier
    than our send time plus the time the service says it waited (at most the time since we sent),
    and it is at most the ttl asked for."""
    validity = _answered_within(answer, "validity_ms", 0, ttl_ms)
    elapsed_ms = max(0, int((time.monotonic() - sent_at) * 1000))
    waited = _answered_within(answer, "waited_ms", 0, elapsed_ms) if "waited_ms" in answer else 0
    return sent_at + (waited + validity) / 1000.0
