"""What the live tests share: the stack's addresses (from test.sh's environment), unique lock
names, and the real processes a test may start or pause — every wait bounded.

Environment (test.sh sets it from scripts/live-stack.sh):
  FENCELOCK_ENDPOINT, DATABASE_URL      the live stack
  FENCELOCK_STACK_DIR              its directory (fencelockd.pid, for pausing it)
  FENCELOCK_REDIS_PORTS            its redis-servers, "P1,P2,P3"
  FENCELOCKD                       the fencelockd binary, for extra instances
  FENCELOCK_SPARE_PORT_BASE        ports a test may use for its own servers (default 17950)
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.request
import uuid
from typing import Any, Callable, Iterator, List, Sequence

import fencelock
from contextlib import contextmanager

FENCELOCK_ENDPOINT = os.environ.get("FENCELOCK_ENDPOINT", "")
DATABASE_URL = os.environ.get("DATABASE_URL", "")
STACK_DIR = os.environ.get("FENCELOCK_STACK_DIR", "")
REDIS_PORTS = [int(p) for p in os.environ.get("FENCELOCK_REDIS_PORTS", "").split(",") if p]
FENCELOCKD = os.environ.get("FENCELOCKD", "")
SPARE_PORT_BASE = int(os.environ.get("FENCELOCK_SPARE_PORT_BASE", "17950"))

needs_stack = unittest.skipUnless(FENCELOCK_ENDPOINT, "no live stack (run client-sdk/python/test.sh)")
needs_postgres = unittest.skipUnless(DATABASE_URL, "no PostgreSQL (run client-sdk/python/test.sh)")


class PatientClient(fencelock.Client):
    """The tests' client: an acquire (or revoke) answered 503 is tried again (10 times, 0.1 s
    apart).

    On this loaded 2-core machine fencelockd now and then misses its 50 ms node timeout on every
    node at once (lock_node_down "command timed out" in its log) and answers 503 for a moment.
    The client rightly does not retry an acquire on 503; tests that are not about unavailability
    use this class so that such a moment does not fail them. Tests about 503s use
    fencelock.Client."""

    def acquire(self, *args: Any, **kwargs: Any) -> fencelock.Lease:
        return _patiently(super().acquire, *args, **kwargs)

    def acquire_set(self, *args: Any, **kwargs: Any) -> fencelock.Lease:
        return _patiently(super().acquire_set, *args, **kwargs)

    def acquire_permit(self, *args: Any, **kwargs: Any) -> fencelock.Lease:
        return _patiently(super().acquire_permit, *args, **kwargs)

    def acquire_read(self, *args: Any, **kwargs: Any) -> fencelock.Lease:
        return _patiently(super().acquire_read, *args, **kwargs)

    def acquire_write(self, *args: Any, **kwargs: Any) -> fencelock.Lease:
        return _patiently(super().acquire_write, *args, **kwargs)

    def revoke(self, *args: Any, **kwargs: Any) -> fencelock.Lease:
        return _patiently(super().revoke, *args, **kwargs)


def _patiently(grant: Callable[..., fencelock.Lease], *args: Any,
               **kwargs: Any) -> fencelock.Lease:
    for _ in range(10):
        try:
            return grant(*args, **kwargs)
        except fencelock.UnavailableError:
            time.sleep(0.1)
    return grant(*args, **kwargs)


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


def closed_port() -> int:
    """A loopback port with nothing listening (bound and released at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(condition: Callable[[], bool], timeout: float, step: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return condition()


def delete_lock_keys(name: str) -> None:
    """Deletes lock `name`'s key on every lock node, as if its lease had expired everywhere."""
    for port in REDIS_PORTS:
        subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), "DEL",
                        f"fencelock:lock:{name}"], check=True, capture_output=True, timeout=5)


@contextmanager
def paused_fencelockd() -> Iterator[None]:
    """SIGSTOPs the stack's fencelockd for the block; SIGCONT always follows."""
    with open(os.path.join(STACK_DIR, "fencelockd.pid")) as f:
        pid = int(f.read().strip())
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)
        # Its Redis commands timed out while it was stopped: wait until it has its nodes back.
        wait_until(_ready, 10, 0.05)


def _ready() -> bool:
    try:
        with urllib.request.urlopen(FENCELOCK_ENDPOINT + "/readyz", timeout=1) as answer:
            return answer.status == 200
    except OSError:
        return False


@contextmanager
def fencelockd_without_lock_nodes(port: int, extra: Sequence[str] = ()) -> Iterator[str]:
    """A fencelockd of our own whose lock nodes are closed ports: it answers 503 unavailable.
    Yields its URL; always stopped (SIGTERM, then SIGKILL after 5 s)."""
    redis: List[str] = [f"127.0.0.1:{closed_port()}" for _ in range(3)]
    with tempfile.TemporaryDirectory(prefix="fencelock-py-") as tmp:
        log = open(os.path.join(tmp, "fencelockd.log"), "w")
        process = subprocess.Popen(
            [FENCELOCKD, "--listen", f"127.0.0.1:{port}", "--redis", ",".join(redis),
             "--tokens", f"sqlite:{tmp}/tokens.db", *extra], stdout=log,
            stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            if not wait_until(lambda: _answers(port), 10, 0.05):
                log.flush()
                with open(os.path.join(tmp, "fencelockd.log")) as said:
                    tail = said.read()[-2000:]
                raise RuntimeError(f"fencelockd on {port} did not start (exit code "
                                   f"{process.poll()}); its log ends:\n{tail}")
            yield url
        finally:
            process.terminate()
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
            log.close()


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class FakeServer:
    """A loopback TCP server that reads one request per connection and then closes it without
    answering: the request was delivered, its outcome unknown. Counts connections. Bounded: it
    serves until stop()."""

    def __init__(self) -> None:
        import threading
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._listener.settimeout(0.1)
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.requests = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except socket.timeout:
                continue
            with connection:
                connection.settimeout(2)
                try:
                    if connection.recv(65536):
                        self.requests += 1
                except OSError:
                    pass

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._listener.close()


def http_answer(status: int, body: bytes) -> bytes:
    reason = {200: "OK", 503: "Service Unavailable"}.get(status, "Whatever")
    return b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (
        status, reason.encode(), len(body), body)


# A grant as fencelockd answers a repeated acquire.
REPEATED_GRANT = http_answer(
    200, b'{"name":"x","lease":"5.repeated","token":5,"ttl_ms":10000,"validity_ms":9000,'
         b'"waited_ms":0,"repeated":true}')


class RecordingServer:
    """A loopback HTTP server that reads each request whole (head and Content-Length body),
    records it, and answers the i-th request with answers[i] (the last one from then on) — None
    closes the connection without answering: the request was delivered, its answer lost. One
    request per connection. `with RecordingServer([None, REPEATED_GRANT]) as server:`; then
    server.targets, server.bodies (parsed JSON, None without a body)."""

    def __init__(self, answers: Sequence[Any]) -> None:
        self._answers = list(answers)
        self.targets: List[str] = []
        self.bodies: List[Any] = []
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._listener.settimeout(0.1)
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> "RecordingServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._listener.close()

    def _serve(self) -> None:
        import json
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except OSError:
                continue
            with connection:
                connection.settimeout(2)
                try:
                    data = b""
                    while b"\r\n\r\n" not in data:
                        more = connection.recv(65536)
                        if not more:
                            break
                        data += more
                    head, _, body = data.partition(b"\r\n\r\n")
                    lines = head.decode("latin-1").split("\r\n")
                    length = 0
                    for line in lines[1:]:
                        name, _, value = line.partition(":")
                        if name.strip().lower() == "content-length":
                            length = int(value)
                    while len(body) < length:
                        more = connection.recv(65536)
                        if not more:
                            break
                        body += more
                    answer = self._answers[min(len(self.targets), len(self._answers) - 1)]
                    self.targets.append(lines[0].split(" ")[1] if " " in lines[0] else "")
                    self.bodies.append(json.loads(body) if body else None)
                    if answer is not None:
                        connection.sendall(answer)
                except (OSError, ValueError):
                    pass


def pg_connect(autocommit: bool = False) -> "object":
    import psycopg2
    conn = psycopg2.connect(DATABASE_URL, connect_timeout=5)
    conn.autocommit = autocommit
    return conn


# Hostile answers: each is what a broken or hostile "fencelockd" sends to any request. The first
# two are grants a client must not read: their bodies are over the 1 MiB it reads at most.
_GRANT = b'{"name":"x","lease":"1.x","token":1,"ttl_ms":10000,"validity_ms":9000,"waited_ms":0}'
_PADDED_GRANT = b" " * (3 << 20) + _GRANT
HOSTILE_ANSWERS = {
    "a grant after 3 MiB of spaces": b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (
        len(_PADDED_GRANT), _PADDED_GRANT),
    "a chunked grant after 4 MiB of spaces": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    + (b"100000\r\n" + b" " * 0x100000 + b"\r\n") * 4
    + b"%x\r\n%s\r\n0\r\n\r\n" % (len(_GRANT), _GRANT),
    "a chunk-size line of 200 KB": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                   + b"1" * 200_000 + b"\r\n",
    "a negative chunk size": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                             b"-5\r\nxx\r\n0\r\n\r\n",
    "a Content-Length of superscript two": b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\n{}",
    "JSON nested 100000 deep": b"HTTP/1.1 200 OK\r\nContent-Length: 200000\r\n\r\n"
                               + b"[" * 100_000 + b"]" * 100_000,
}


class HostileServer:
    """A loopback server that reads a request head and sends `answer` (then closes), on a thread,
    for as long as it is open: `with HostileServer(answer) as port: ...`."""

    def __init__(self, answer: bytes) -> None:
        self._answer = answer
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._listener.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> int:
        self._thread.start()
        return self._listener.getsockname()[1]

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self._listener.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except OSError:
                continue
            with connection:
                connection.settimeout(2)
                try:
                    head = b""
                    while b"\r\n\r\n" not in head:
                        more = connection.recv(65536)
                        if not more:
                            break
                        head += more
                    connection.sendall(self._answer)
                except OSError:
                    pass  # the client gave up reading: what it should do
