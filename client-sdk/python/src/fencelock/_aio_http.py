"""HTTP/1.1 to one fencelockd endpoint on asyncio's own streams, over a small pool of keep-alive
connections — the asyncio twin of _http.py, with the same contract.

round_trip() takes an idle connection (dropping any the server has closed meanwhile), or opens one
(asyncio.open_connection, with the SSLContext for https://) within the connect timeout, sends one
request, reads the whole answer (Content-Length, chunked, or until close; at most 1 MiB) within
the request timeout, and gives the connection back unless the server said Connection: close. A
round trip that fails, times out or is cancelled closes its connection: a half-read answer must
never be read as the next request's. It reports whether the request may have reached the server
(`maybe_delivered`), as _http.py does.

Not thread-safe: one event loop uses an AsyncEndpoint.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Dict, Optional, Tuple

from ._http import MAX_BODY as _MAX_BODY
from ._http import USER_AGENT, EndpointBase, Reply, RoundTripError
from .errors import TlsError, TransportError

_MAX_HEAD = 64 * 1024

Connection = Tuple[asyncio.StreamReader, asyncio.StreamWriter]


class _BadAnswer(Exception):
    """The server's bytes are not an HTTP/1.1 answer we can read."""


class AsyncEndpoint(EndpointBase):
    """One fencelockd base URL and its idle connections."""

    def __init__(self, url: str, ssl_context: Optional[ssl.SSLContext], max_idle: int) -> None:
        super().__init__(url, ssl_context, max_idle)
        self._host_header = self.host if ":" not in self.host else f"[{self.host}]"
        self._host_header += f":{self.port}"

    def close(self) -> None:
        idle, self._idle = self._idle, []
        for _, writer in idle:
            writer.close()

    async def round_trip(self, method: str, target: str, body: Optional[bytes],
                         headers: Dict[str, str], connect_timeout: float,
                         timeout: float) -> Reply:
        """One request; `timeout` bounds everything after connecting (seconds). Raises
        RoundTripError; a cancellation closes the connection and propagates."""
        connection = self._take()
        maybe_delivered = False
        try:
            if connection is None:
                connection = await asyncio.wait_for(self._open(), min(connect_timeout, timeout))
            maybe_delivered = True
            reply, keep = await asyncio.wait_for(
                _exchange(connection, self._request(method, target, body, headers), method),
                timeout)
        except ssl.SSLError as e:
            _close(connection)
            raise RoundTripError(TlsError(f"{self.url}: TLS failed: {e}"), maybe_delivered) from None
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError,
                asyncio.LimitOverrunError, _BadAnswer) as e:
            _close(connection)
            raise RoundTripError(TransportError(f"{self.url}: {_describe(e, maybe_delivered)}"),
                                 maybe_delivered) from None
        except BaseException:  # cancelled: the connection is mid-request
            _close(connection)
            raise
        if keep and len(self._idle) < self._max_idle:
            self._idle.append(connection)
        else:
            _close(connection)
        return reply

    async def _open(self) -> Connection:
        if self.scheme == "https":
            context = self._ssl_context or ssl.create_default_context()
            return await asyncio.open_connection(self.host, self.port, ssl=context,
                                                 server_hostname=self.host)
        return await asyncio.open_connection(self.host, self.port)

    def _take(self) -> Optional[Connection]:
        while self._idle:
            reader, writer = self._idle.pop()
            # An idle keep-alive connection has nothing to read unless the server closed it.
            if not reader.at_eof() and not writer.is_closing() and not reader._buffer:  # type: ignore[attr-defined]
                return reader, writer
            writer.close()
        return None

    def _request(self, method: str, target: str, body: Optional[bytes],
                 headers: Dict[str, str]) -> bytes:
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self._host_header}",
                 f"User-Agent: {USER_AGENT}", "Accept: application/json"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        if body is not None:
            lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
        elif method in ("POST", "DELETE"):
            lines.append("Content-Length: 0")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")


async def _exchange(connection: Connection, request: bytes, method: str) -> Tuple[Reply, bool]:
    reader, writer = connection
    writer.write(request)
    await writer.drain()
    return await _read_answer(reader, method)


async def _read_answer(reader: asyncio.StreamReader, method: str) -> Tuple[Reply, bool]:
    """The answer and whether the connection may be reused."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError:
        raise _BadAnswer("the answer's head is too long") from None
    if len(head) > _MAX_HEAD:
        raise _BadAnswer("the answer's head is too long")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not _digits(parts[1], 3):
        raise _BadAnswer(f"not an HTTP/1.1 answer: {status_line[:60]!r}")
    status = int(parts[1])
    headers: Dict[str, str] = {}
    for line in header_lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    keep = parts[0] == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return Reply(status, headers, b""), keep
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = await _read_chunked(reader)
    elif "content-length" in headers:
        length = headers["content-length"]
        if not _digits(length, 18) or int(length) > _MAX_BODY:
            raise _BadAnswer(f"Content-Length {length[:20]!r}")
        body = await reader.readexactly(int(length))
    else:
        body = await reader.read(_MAX_BODY + 1)
        while len(body) <= _MAX_BODY and not reader.at_eof():
            more = await reader.read(_MAX_BODY + 1 - len(body))
            if not more:
                break
            body += more
        keep = False
    if len(body) > _MAX_BODY:
        raise _BadAnswer("the answer's body is over 1 MiB")
    return Reply(status, headers, body), keep


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    body = b""
    while True:
        size_line = (await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip()
        if not 1 <= len(size_line) <= 16 or size_line.strip(b"0123456789abcdefABCDEF"):
            raise _BadAnswer("a bad chunk size")
        size = int(size_line, 16)
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                pass
            return body
        if len(body) + size > _MAX_BODY:
            raise _BadAnswer("the answer's body is over 1 MiB")
        body += (await reader.readexactly(size + 2))[:-2]


def _digits(text: str, most: int) -> bool:
    """Whether `text` is 1 to `most` ASCII digits (str.isdigit() also takes '²' and '٣')."""
    return 1 <= len(text) <= most and text.isascii() and text.isdigit()


def _close(connection: Optional[Connection]) -> None:
    if connection is not None:
        connection[1].close()


def _describe(error: BaseException, maybe_delivered: bool) -> str:
    if isinstance(error, asyncio.TimeoutError):
        return "timed out" + ("" if maybe_delivered else " connecting")
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, asyncio.IncompleteReadError):
        return "the server closed the connection without answering"
    if isinstance(error, (_BadAnswer, asyncio.LimitOverrunError)):
        return f"a malformed answer: {error}"
    text = str(error) or type(error).__name__
    return ("sending or reading failed: " if maybe_delivered else "cannot connect: ") + text
