"""HTTP/1.1 to one fencelockd endpoint over a small pool of keep-alive connections.

One Endpoint per base URL. round_trip() takes an idle connection (dropping any the server has
closed meanwhile: a readable idle socket means EOF or garbage), or opens one within the connect
timeout, sends one request, reads the whole answer (at most MAX_BODY bytes) and gives the
connection back unless the server said Connection: close. It reports whether the request may have reached the server
(`maybe_delivered`): the client retries a lock set's or a permit's acquire, or a revoke, only
when it certainly did not.
"""

from __future__ import annotations

import http.client
import select
import socket
import ssl
import threading
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple
from urllib.parse import urlsplit

from .errors import InvalidArgumentError, TlsError, TransportError

USER_AGENT = "fencelock-python"
# The largest answer body read (fencelockd's are a few hundred bytes): a larger one, from a
# broken or hostile server, is a TransportError rather than unbounded memory.
MAX_BODY = 1024 * 1024


class _BadAnswer(Exception):
    """The server's bytes are not an answer we read."""


@dataclass
class Reply:
    status: int
    headers: Dict[str, str]  # lower-case names
    body: bytes


class RoundTripError(Exception):
    """A failed round trip: the error to raise, and whether the request may have been delivered."""

    def __init__(self, error: TransportError, maybe_delivered: bool) -> None:
        super().__init__(error.message)
        self.error = error
        self.maybe_delivered = maybe_delivered


def parse_endpoint(url: str) -> Tuple[str, str, int]:
    """("http"|"https", host, port) of a base URL, or InvalidArgumentError saying what is wrong."""
    if not isinstance(url, str):
        raise InvalidArgumentError(f"endpoint {url!r} is not a string")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as e:
        raise InvalidArgumentError(f"endpoint {url!r}: {e}") from None
    if parts.scheme not in ("http", "https"):
        raise InvalidArgumentError(f"endpoint {url!r} must start with http:// or https://")
    if not parts.hostname:
        raise InvalidArgumentError(f"endpoint {url!r} has no host")
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        raise InvalidArgumentError(f"endpoint {url!r}: only scheme://host:port is allowed")
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return parts.scheme, parts.hostname, port


class EndpointBase:
    """What an endpoint of either client holds: its parsed URL, TLS context and idle pool."""

    def __init__(self, url: str, ssl_context: Optional[ssl.SSLContext], max_idle: int) -> None:
        self.url = url
        self.scheme, self.host, self.port = parse_endpoint(url)
        self._ssl_context = ssl_context
        self._max_idle = max_idle
        self._idle: List[Any] = []


class Endpoint(EndpointBase):
    """One fencelockd base URL and its idle connections. Thread-safe."""

    def __init__(self, url: str, ssl_context: Optional[ssl.SSLContext], max_idle: int) -> None:
        super().__init__(url, ssl_context, max_idle)
        self._mutex = threading.Lock()

    def close(self) -> None:
        with self._mutex:
            idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def round_trip(self, method: str, target: str, body: Optional[bytes],
                   headers: Dict[str, str], connect_timeout: float,
                   timeout: float) -> Reply:
        """One request. `timeout` bounds each socket operation after connecting (seconds).
        Raises RoundTripError."""
        connection = self._take()
        maybe_delivered = False
        try:
            if connection.sock is None:
                connection.timeout = min(connect_timeout, timeout)
                connection.connect()
            assert connection.sock is not None
            connection.sock.settimeout(timeout)
            maybe_delivered = True
            all_headers = dict(headers)
            all_headers["User-Agent"] = USER_AGENT
            if body is not None:
                all_headers["Content-Type"] = "application/json"
            connection.request(method, target, body=body, headers=all_headers)
            response = connection.getresponse()
            data = response.read(MAX_BODY + 1)
            if len(data) > MAX_BODY:
                raise _BadAnswer(f"the answer's body is over {MAX_BODY} bytes")
            reply = Reply(response.status,
                          {k.lower(): v for k, v in response.getheaders()}, data)
        except ssl.SSLError as e:
            connection.close()
            raise RoundTripError(TlsError(f"{self.url}: TLS failed: {e}"), maybe_delivered) from None
        except (OSError, http.client.HTTPException, ValueError, _BadAnswer) as e:
            # ValueError: http.client on a malformed answer (a negative chunk size, say).
            connection.close()
            raise RoundTripError(
                TransportError(f"{self.url}: {_describe(e, maybe_delivered)}"),
                maybe_delivered) from None
        self._give_back(connection)
        return reply

    def _take(self) -> http.client.HTTPConnection:
        with self._mutex:
            while self._idle:
                connection = self._idle.pop()
                if _still_open(connection):
                    return connection
                connection.close()
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, context=self._ssl_context)
        return http.client.HTTPConnection(self.host, self.port)

    def _give_back(self, connection: http.client.HTTPConnection) -> None:
        # http.client drops the socket after an answer with Connection: close.
        if connection.sock is None:
            return
        with self._mutex:
            if len(self._idle) < self._max_idle:
                self._idle.append(connection)
                return
        connection.close()


def _still_open(connection: http.client.HTTPConnection) -> bool:
    sock = connection.sock
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return False
    return not readable  # an idle keep-alive socket has nothing to read unless it was closed


def _describe(error: BaseException, maybe_delivered: bool) -> str:
    if isinstance(error, socket.timeout):
        return "timed out" + ("" if maybe_delivered else " connecting")
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, socket.gaierror):
        return f"cannot resolve the host: {error}"
    if isinstance(error, http.client.RemoteDisconnected):
        return "the server closed the connection without answering"
    if isinstance(error, (_BadAnswer, ValueError)):
        return f"a malformed answer: {error}"
    text = str(error) or type(error).__name__
    return ("sending or reading failed: " if maybe_delivered else "cannot connect: ") + text
