"""The fencelock client: locks, lock sets, semaphore permits and tokens over HTTP (docs/api.md).

Same shape as the C++ SDK (client-sdk/include/fencelock/client.h), with exceptions instead of
Result values. Times are in seconds (int or float).

Thread safety: one Client per process, shared by all threads; every call is blocking, takes an
idle keep-alive connection of an endpoint (or opens one) and gives it back.

Retries: calls that are safe to repeat (extend, release, status, next_token, current_token) are
retried on transport errors and 503s, up to max_retries times, on the next endpoint. acquire is
retried only when its request could not even be sent (nothing can have been granted).
"""

from __future__ import annotations

import contextlib
import json
import re
import os
import ssl
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, Optional, Sequence, Tuple, Union

from ._http import Endpoint, Reply, RoundTripError
from .errors import (FencelockError, InternalError, InvalidArgumentError, LeaseLostError,
                     PermitsMismatchError, TlsError, TransportError, error_for)
from .lease import Lease

if TYPE_CHECKING:  # keeper.py imports this module
    from .keeper import LeaseKeeper

Seconds = Union[int, float]

_NAME = re.compile(r"[A-Za-z0-9._:-]{1,200}")
NAME_RULE = 'name must be 1 to 200 characters from [A-Za-z0-9._:-], other than "." and ".."'
# The service's bounds (docs/api.md): names in one lock set, permits of one semaphore.
MAX_SET_NAMES = 16
MAX_PERMITS = 64


@dataclass(frozen=True)
class LockStatus:
    held: bool
    # Seconds until fewer than a majority of lock nodes hold it; None when not held.
    remaining: Optional[float]
    # The name's current token (GET /v1/tokens/{name}): at or above every token handed out for
    # it, below every later one.
    last_token: int


def check_name(name: str) -> None:
    """InvalidArgumentError unless `name` is a valid lock name (docs/api.md, "Names")."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name in (".", ".."):
        raise InvalidArgumentError(NAME_RULE)


@dataclass(frozen=True)
class SemaphoreStatus:
    # The live semaphore's permit count; 0 when no permit is live.
    permits: int
    # Permits held on a majority of lock nodes.
    held: int


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
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentError(f"{what} must be a number of seconds")
    ms = int(round(value * 1000))
    if ms < minimum or ms > 2**31:
        raise InvalidArgumentError(f"{what} out of range: {value!r} s")
    return ms


class Client:
    """A connection to one or more fencelockd instances (the same lock nodes behind each)."""

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
        request_timeout: each socket read or write of one request (an acquire adds its wait);
            default 5 s; 0.001 .. 600.
        max_retries: extra attempts of retry-safe calls; default 2; 0..10.
        retry_backoff: pause before a retry, doubled each time; default 0.05 s; 0 .. 10.
        max_idle_connections: idle keep-alive connections kept per endpoint; default 8; 0..1024.
        ssl_context: for https:// endpoints (default: ssl.create_default_context() with the CA
            file $FENCELOCK_CACERT if set, else the system's trust store); load your CA and
            client certificate into it.
        Raises InvalidArgumentError for a malformed endpoint or an option out of bounds.
        """
        if endpoints is None:
            endpoints = os.environ.get("FENCELOCK_ENDPOINT") or "http://127.0.0.1:8080"
            endpoints = [url.strip() for url in endpoints.split(",")]
        if api_key is None:
            api_key = os.environ.get("FENCELOCK_API_KEY") or None
        if isinstance(endpoints, str):
            endpoints = [endpoints]
        endpoints = list(endpoints)
        if not 1 <= len(endpoints) <= 16:
            raise InvalidArgumentError("endpoints: need 1 to 16 fencelockd URLs")

        def bounded(value: Any, lo: float, hi: float, what: str) -> float:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                    lo <= value <= hi):
                raise InvalidArgumentError(f"{what} must be {lo} .. {hi}")
            return float(value)

        self._connect_timeout = bounded(connect_timeout, 0.001, 60, "connect_timeout")
        self._request_timeout = bounded(request_timeout, 0.001, 600, "request_timeout")
        self._max_retries = int(bounded(max_retries, 0, 10, "max_retries"))
        self._retry_backoff = bounded(retry_backoff, 0, 10, "retry_backoff")
        max_idle = int(bounded(max_idle_connections, 0, 1024, "max_idle_connections"))
        self._headers: Dict[str, str] = {}
        if api_key:
            if (not isinstance(api_key, str) or len(api_key) > 256
                    or not all(" " < c < "\x7f" for c in api_key)):
                raise InvalidArgumentError(
                    "api_key must be at most 256 printable ASCII characters without spaces")
            self._headers["Authorization"] = "Bearer " + api_key
        if ssl_context is None and any(str(url).startswith("https:") for url in endpoints):
            ssl_context = ssl.create_default_context(
                cafile=os.environ.get("FENCELOCK_CACERT") or None)
        self._endpoints = [Endpoint(url, ssl_context, max_idle) for url in endpoints]
        self._preferred = 0
        self._mutex = threading.Lock()

    def __repr__(self) -> str:
        urls = [e.url for e in self._endpoints]
        return f"Client(endpoints={urls!r}{', api_key=***' if self._headers else ''})"

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
                owner: Optional[str] = None) -> Lease:
        """Acquires `name` for `ttl` seconds, waiting up to `wait` seconds while someone else
        holds it. `owner` (<= 200 chars) appears in the service's request log.
        Raises LockedError (held and the wait ran out; .retry_after when known),
        UnavailableError, InvalidArgumentError, DeniedError, RateLimitedError, TransportError."""
        check_name(name)
        body = self._grant_body(ttl, wait, owner)
        answer, sent_at = self._grant(f"/v1/locks/{name}", body)
        return Lease(name, _lease_string(answer), _integer(answer, "token"),
                     body["ttl_ms"] / 1000.0, _deadline(answer, sent_at))

    def acquire_set(self, names: Sequence[str], ttl: Seconds, wait: Seconds = 0,
                    owner: Optional[str] = None) -> Lease:
        """Acquires every name of `names` (1..16 distinct lock names) under one lease, all or
        none, for `ttl` seconds, waiting up to `wait` seconds while any is held. The lease's
        ``tokens`` maps each name to its own fencing token: fence a write to the resource of
        name n with tokens[n]. Raises as acquire()."""
        body = self._grant_body(ttl, wait, owner)
        body["names"] = _check_set_names(names)
        answer, sent_at = self._grant("/v1/locks", body)
        tokens = answer.get("tokens")
        if not isinstance(tokens, dict) or sorted(tokens) != sorted(body["names"]) or not all(
                isinstance(t, int) and not isinstance(t, bool) for t in tokens.values()):
            raise InternalError("the service's answer lacks a token per name")
        ordered = {name: tokens[name] for name in sorted(tokens)}
        return Lease("", _lease_string(answer), None, body["ttl_ms"] / 1000.0,
                     _deadline(answer, sent_at), tokens=ordered)

    def acquire_permit(self, name: str, permits: int, ttl: Seconds, wait: Seconds = 0,
                       owner: Optional[str] = None) -> Lease:
        """Acquires one of the `permits` (1..64) permits of semaphore `name` for `ttl` seconds,
        waiting up to `wait` seconds while all are held. At most `permits` permits are live at
        once (under Redlock's timing assumptions); the lease's ``slot`` says which one it holds,
        and its token increases with every grant of the semaphore: fence per slot.
        Raises as acquire(), and PermitsMismatchError (.permits) when the semaphore has live
        permits under another count."""
        check_name(name)
        body = self._grant_body(ttl, wait, owner)
        body["permits"] = _check_permits(permits)
        answer, sent_at = self._grant(f"/v1/semaphores/{name}", body)
        return Lease(name, _lease_string(answer), _integer(answer, "token"),
                     body["ttl_ms"] / 1000.0, _deadline(answer, sent_at),
                     permits=_integer(answer, "permits"), slot=_integer(answer, "slot"))

    def semaphore_status(self, name: str) -> SemaphoreStatus:
        """The live permit count of semaphore `name` (0 when none is live) and how many permits
        are held. Never a lease."""
        check_name(name)
        reply, _ = self._call("GET", f"/v1/semaphores/{name}", None, safe=True)
        answer = _expect_object(reply)
        return SemaphoreStatus(permits=_integer(answer, "permits"), held=_integer(answer, "held"))

    def _grant_body(self, ttl: Seconds, wait: Seconds, owner: Optional[str]) -> Dict[str, Any]:
        body: Dict[str, Any] = {"ttl_ms": _milliseconds(ttl, "ttl", 1)}
        wait_ms = _milliseconds(wait, "wait", 0)
        if wait_ms > 0:
            body["wait_ms"] = wait_ms
        if owner:
            body["owner"] = owner
        return body

    def _grant(self, target: str, body: Dict[str, Any]) -> Tuple[Dict[str, Any], float]:
        reply, sent_at = self._call("POST", target, body, safe=False,
                                    extra=body.get("wait_ms", 0) / 1000.0)
        return _expect_object(reply), sent_at

    def extend(self, lease: Lease, ttl: Optional[Seconds] = None,
               within: Optional[Seconds] = None) -> None:
        """Makes the lease's remaining ttl at least `ttl` seconds (default: the lease's ttl) — a
        lock's, every name of a set's, a permit's — and moves the lease's deadline. `within` bounds the whole call, retries included.
        Raises NotHeldError (expired, released or taken over: stop using it), UnavailableError,
        InvalidArgumentError, DeniedError, TransportError."""
        ttl_ms = _milliseconds(lease.ttl if ttl is None else ttl, "ttl", 1)
        target, body = _lease_request(lease)
        body["ttl_ms"] = ttl_ms
        if lease.kind == "set":
            target = "/v1/locks:extend"
        else:
            target += "/extend"
        reply, sent_at = self._call("POST", target, body, safe=True, within=within)
        validity = _integer(_expect_object(reply), "validity_ms")
        lease._renew(ttl_ms / 1000.0, sent_at + validity / 1000.0)

    def release(self, lease: Lease) -> bool:
        """Releases the lease (a lock, a whole set, a permit): True iff it still held it.
        Idempotent.
        Raises UnavailableError, InvalidArgumentError, DeniedError, TransportError."""
        target, body = _lease_request(lease)
        reply, _ = self._call("DELETE", target, body, safe=True)
        released = _expect_object(reply).get("released")
        if not isinstance(released, bool):
            raise InternalError("the service's answer lacks 'released'")
        return released

    def status(self, name: str) -> LockStatus:
        """Whether `name` is held, for how long, and its current token. Never the lease."""
        check_name(name)
        reply, _ = self._call("GET", f"/v1/locks/{name}", None, safe=True)
        answer = _expect_object(reply)
        remaining = answer.get("remaining_ms")
        return LockStatus(
            held=answer.get("held") is True,
            remaining=remaining / 1000.0 if isinstance(remaining, int) else None,
            last_token=_integer(answer, "last_token"))

    def next_token(self, name: str) -> int:
        """Draws the next token of `name` without a lock. Hazard (docs/api.md): a drawn token is
        newer than the current holder's and can fence that holder out."""
        check_name(name)
        reply, _ = self._call("POST", f"/v1/tokens/{name}", None, safe=True)
        return _integer(_expect_object(reply), "token")

    def current_token(self, name: str) -> int:
        """The latest token issued for `name` (0 if none was ever drawn)."""
        check_name(name)
        reply, _ = self._call("GET", f"/v1/tokens/{name}", None, safe=True)
        return _integer(_expect_object(reply), "token")

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

    def _call(self, method: str, target: str, body: Optional[Dict[str, Any]], *, safe: bool,
              extra: float = 0.0, within: Optional[Seconds] = None) -> Tuple[Reply, float]:
        """Sends one request, retrying as the module comment says. Returns the reply whose status
        is not a retried 503 and the monotonic send time of its attempt. Raises the error of the
        last attempt (a TLS failure before a later connection failure)."""
        data = json.dumps(body).encode() if body is not None else None
        started = time.monotonic()
        overall = started + within if within is not None else None
        backoff = self._retry_backoff
        last: Optional[FencelockError] = None
        tls: Optional[FencelockError] = None
        with self._mutex:
            preferred = self._preferred
        for attempt in range(self._max_retries + 1):
            index = (preferred + attempt) % len(self._endpoints)
            endpoint = self._endpoints[index]
            sent_at = time.monotonic()
            timeout = self._request_timeout + extra
            if overall is not None:
                timeout = min(timeout, overall - sent_at)
            if timeout <= 0:
                break
            try:
                reply = endpoint.round_trip(method, target, data, self._headers,
                                            self._connect_timeout, timeout)
            except RoundTripError as failure:
                last = failure.error
                if failure.maybe_delivered and not safe:
                    raise last from None
                if isinstance(last, TlsError):
                    tls = tls or last
                    if len(self._endpoints) == 1:
                        break
            else:
                with self._mutex:
                    self._preferred = index
                if not (reply.status == 503 and safe):
                    return reply, sent_at
                last = _error_from_reply(reply)
            if attempt == self._max_retries:
                break
            if overall is not None and time.monotonic() + backoff >= overall:
                break
            time.sleep(backoff)
            backoff *= 2
        if tls is not None and (last is None or type(last) is TransportError):
            raise tls
        raise last or TransportError("no time left to send the request")


# --- reading answers -----------------------------------------------------------------------

def _error_from_reply(reply: Reply) -> FencelockError:
    code: Optional[str] = None
    message = f"HTTP {reply.status}"
    retry_after: Optional[float] = None
    try:
        answer = json.loads(reply.body)
    except ValueError:
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
    error = error_for(reply.status, code, message, retry_after)
    error.request_id = reply.headers.get("x-request-id")
    if isinstance(error, PermitsMismatchError) and isinstance(answer, dict):
        permits = answer["error"].get("permits")
        if isinstance(permits, int) and not isinstance(permits, bool):
            error.permits = permits
    return error


def _expect_object(reply: Reply) -> Dict[str, Any]:
    if reply.status != 200:
        raise _error_from_reply(reply)
    try:
        answer = json.loads(reply.body)
    except ValueError:
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


def _deadline(answer: Dict[str, Any], sent_at: float) -> float:
    """Conservative: validity counts from the start of the winning attempt, which is no earlier
    than our send time plus the time the service says it waited."""
    validity = _integer(answer, "validity_ms")
    waited = _integer(answer, "waited_ms") if "waited_ms" in answer else 0
    return sent_at + (waited + validity) / 1000.0


def _lease_request(lease: Lease) -> Tuple[str, Dict[str, Any]]:
    """The path and body that name `lease` for extend ("/extend" appended, but for a set) and
    release."""
    body: Dict[str, Any] = {"lease": lease.lease_string}
    if lease.kind == "set":
        body["names"] = list(lease.names)
        return "/v1/locks", body
    if lease.kind == "permit":
        return f"/v1/semaphores/{lease.name}", body
    return f"/v1/locks/{lease.name}", body
