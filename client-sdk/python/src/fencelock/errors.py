"""Errors of the fencelock client, one class per thing a caller handles differently.

Every error is a FencelockError whose ``code`` is a stable string, the same names as the C++
SDK's ErrorCode (docs/sdk.md): "locked", "not_held", "unavailable", "invalid_argument",
"denied", "rate_limited", "transport", "tls", "internal", plus "lease_lost" for the lease keeper
and "permits_mismatch" for a semaphore asked for with another permit count than its live one.
``wire_code`` is the service's own code from docs/api.md ("quota_exceeded", "forbidden", ...)
when an answer carried one, ``http_status`` the answer's status (0 when there was no answer),
``request_id`` its X-Request-Id (quote it when asking about a failed request).
Messages are for people and never contain a lease string or an API key.
"""

from __future__ import annotations

from typing import Dict, Optional, Type


class FencelockError(Exception):
    """Base class of every error the client raises."""

    code = "internal"

    def __init__(
        self,
        message: str,
        *,
        http_status: int = 0,
        wire_code: Optional[str] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.http_status = http_status
        self.wire_code = wire_code
        # Seconds until a retry may succeed, when the service said (retry_after_ms or
        # Retry-After); None otherwise.
        self.retry_after = retry_after
        # The answer's X-Request-Id: names the request in fencelockd's log. None without one.
        self.request_id: Optional[str] = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class LockedError(FencelockError):
    """409 locked: another lease holds the lock (and the acquire's wait ran out).

    ``retry_after``: seconds until the holder's lease ends, when the service knows.
    """

    code = "locked"


class NotHeldError(FencelockError):
    """409 not_held: the lease no longer holds the lock (expired, released, taken over). Stop."""

    code = "not_held"


class UnavailableError(FencelockError):
    """503 unavailable: too few lock nodes answered, or the token source is down. Retry later."""

    code = "unavailable"


class InvalidArgumentError(FencelockError):
    """400/404/405/413 from the service, or a call the client refused before sending."""

    code = "invalid_argument"


class PermitsMismatchError(FencelockError):
    """409 permits_mismatch: the semaphore has live permits under another permit count.

    ``permits``: that live count, when the service said.
    """

    code = "permits_mismatch"
    permits: Optional[int] = None


class DeniedError(FencelockError):
    """401/403: no API key, an unknown one, or one without the right or the name."""

    code = "denied"


class RateLimitedError(FencelockError):
    """429 rate_limited / quota_exceeded: the API key is over its rate or caps (``retry_after``)."""

    code = "rate_limited"


class TransportError(FencelockError):
    """No usable answer: the connection failed, timed out or broke."""

    code = "transport"


class TlsError(TransportError):
    """The TLS handshake failed (certificate not trusted or not for this host). Retrying won't help."""

    code = "tls"


class InternalError(FencelockError):
    """500, or an answer the client cannot read."""

    code = "internal"


class LeaseLostError(FencelockError):
    """The lease keeper could not keep the lease: stop touching the protected resource.

    ``reason`` is the error that made the keeper give up (a NotHeldError, or the last transient
    failure), or None when a renewal bound was reached.
    """

    code = "lease_lost"

    def __init__(self, message: str, reason: Optional[FencelockError] = None) -> None:
        super().__init__(message)
        self.reason = reason


# The service's stable codes (docs/api.md, "Errors") and the class each is raised as.
_BY_WIRE_CODE: Dict[str, Type[FencelockError]] = {
    "locked": LockedError,
    "not_held": NotHeldError,
    "permits_mismatch": PermitsMismatchError,
    "unavailable": UnavailableError,
    "unauthenticated": DeniedError,
    "forbidden": DeniedError,
    "rate_limited": RateLimitedError,
    "quota_exceeded": RateLimitedError,
    "invalid_request": InvalidArgumentError,
    "payload_too_large": InvalidArgumentError,
    "not_found": InvalidArgumentError,
    "method_not_allowed": InvalidArgumentError,
    "plain_http_on_tls_port": InvalidArgumentError,
    "internal": InternalError,
}


def error_for(
    status: int, wire_code: Optional[str], message: str, retry_after: Optional[float]
) -> FencelockError:
    """The exception for an error answer: by its code, or by its status for a code unknown here."""
    cls = _BY_WIRE_CODE.get(wire_code or "")
    if cls is None:
        if status == 503:
            cls = UnavailableError
        elif status == 429:
            cls = RateLimitedError
        elif status in (401, 403):
            cls = DeniedError
        elif 400 <= status < 500:
            cls = InvalidArgumentError
        else:
            cls = InternalError
    return cls(message, http_status=status, wire_code=wire_code, retry_after=retry_after)
