"""The network transport: urllib3, HTTPS GET only, connecting to the egress-checked address.

What it guarantees (FETCH-01, FETCH-02, FETCH-18, FETCH-24, GUIDE: Security):
- GET over TLS with certificate and hostname verification, never plain HTTP;
- no cookies (urllib3 keeps no jar), no credentials, no auth headers — refused if offered;
- the D-57 User-Agent and `Accept-Encoding: gzip, deflate` on every request;
- `redirect=False`, `retries=False`, `preload_content=False`: the fetcher decides;
- the TCP connection goes to `Request.target` (the address egress checked, or the operator's
  --resolve mapping) while SNI, the Host header and certificate verification use the host
  name — curl's --resolve semantics, done by a connection subclass that moves only the socket;
- at most two pooled connections per host (pool maxsize PER_ORIGIN_IN_FLIGHT, blocking; the
  fetcher lets no more requests per host than that into `send`, so it never blocks);
- the body is read with `read1` so a drip yields small reads, the socket timeout before each
  read is cut to what is left of the attempt's deadline, and decompression is bounded per
  read (urllib3's max_length), so neither a slow drip nor a gzip bomb outlives its caps.
"""

from __future__ import annotations

import http.client
import re
import socket
import threading
import time
from typing import Callable
from urllib.parse import urlsplit

import urllib3
from urllib3.connection import HTTPSConnection
from urllib3.connectionpool import HTTPSConnectionPool
from urllib3.exceptions import (
    ConnectTimeoutError,
    DecodeError,
    EmptyPoolError,
    IncompleteRead,
    InvalidChunkLength,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
    SSLError,
    TimeoutError as Urllib3Timeout,
)
from urllib3.util import connection as _connection

from collection.fetch.egress import Target
from collection.fetch.politeness import PER_ORIGIN_IN_FLIGHT
from collection.fetch.transport import (
    DEFAULT_INFO_URL,
    DEFAULT_TOKEN,
    Request,
    TransportError,
    check_request_headers,
    header_value,
    user_agent,
)

# The longest a single socket operation may wait. The attempt deadline is checked between
# reads, so a short per-read timeout keeps a stalled read from outliving it by much.
READ_GAP_SECONDS = 1.0


# The before_write hook of the request being sent on this thread (urlopen runs in the
# caller's thread, so a thread-local reaches the connection without touching the pool).
_hooks = threading.local()

# Interim (1xx) responses skipped before the final one; a server sending more is broken.
MAX_INTERIM_RESPONSES = 16


class _FinalResponse(http.client.HTTPResponse):
    """http.client skips only `100 Continue`; any other interim answer (`103 Early Hints`)
    would be taken for the response and the real one left unread on the socket. Skip every
    1xx but `101` (a protocol switch we never ask for, so it stays the final status)."""

    def _read_status(self):
        for _ in range(MAX_INTERIM_RESPONSES + 1):
            version, status, reason = super()._read_status()
            if not (100 <= status < 200) or status == 101:
                return version, status, reason
            for _line in range(http.client._MAXHEADERS + 1):
                line = self.fp.readline(http.client._MAXLINE + 1)
                if len(line) > http.client._MAXLINE:
                    raise http.client.LineTooLong("interim header line")
                if line in (b"\r\n", b"\n", b""):
                    break
            else:
                raise http.client.HTTPException("too many headers in an interim response")
        raise http.client.HTTPException(f"more than {MAX_INTERIM_RESPONSES} interim responses")


class _Watchdog:
    """Ends an attempt at its wall-clock deadline whatever the server does.

    A socket timeout bounds each read, not the attempt: a status line and headers trickled
    one byte per second reset it on every byte, and urllib3 reads the head inside one call.
    The watchdog shuts the connection's socket down when the attempt's deadline passes, so
    the blocked read returns at once and the attempt fails as a timeout."""

    def __init__(self, monotonic: Callable[[], float]):
        self._monotonic = monotonic
        self._cond = threading.Condition()
        self._armed: dict[int, tuple[float, socket.socket]] = {}
        self._serial = 0
        self._thread: threading.Thread | None = None

    def arm(self, deadline: float, sock: socket.socket) -> int:
        with self._cond:
            self._serial += 1
            self._armed[self._serial] = (deadline, sock)
            if self._thread is None:
                self._thread = threading.Thread(target=self._watch, daemon=True, name="collection-watchdog")
                self._thread.start()
            self._cond.notify()
            return self._serial

    def disarm(self, token: int | None) -> None:
        if token is None:
            return
        with self._cond:
            self._armed.pop(token, None)

    def _watch(self) -> None:
        with self._cond:
            while True:
                if not self._armed:
                    self._thread = None      # the next arm starts a fresh one
                    return
                now = self._monotonic()
                for token, (deadline, sock) in list(self._armed.items()):
                    if deadline <= now:
                        del self._armed[token]
                        try:
                            # the plain socket's shutdown: SSLSocket.shutdown would drop the
                            # TLS object under a thread that is still reading from it
                            socket.socket.shutdown(sock, socket.SHUT_RDWR)
                        except OSError:
                            pass
                wait = min((d for d, _ in self._armed.values()), default=now + 1.0) - now
                # polled at least every 50 ms: the transport's clock may not be the system's
                self._cond.wait(timeout=max(0.005, min(0.05, wait)))


class _PinnedHTTPSConnection(HTTPSConnection):
    """An HTTPSConnection whose TCP socket goes to a fixed (address, port).

    `self.host` stays the name, so urllib3 sends it as SNI, checks the certificate against
    it and writes it in the Host header; only `_new_conn` (the socket) is redirected.
    """

    response_class = _FinalResponse

    def __init__(self, *args, connect_address: tuple[str, int], **kwargs):
        super().__init__(*args, **kwargs)
        self._connect_address = connect_address

    def request(self, *args, **kwargs):  # noqa: D401 - urllib3 hook
        # urlopen has connected (or reused a live connection) by now; what remains is
        # writing the request line, so this is the instant politeness must gate.
        arm = getattr(_hooks, "arm", None)
        if arm is not None and self.sock is not None:
            _hooks.arm = None
            arm(self.sock)
        hook = getattr(_hooks, "before_write", None)
        written = None
        if hook is not None:
            _hooks.before_write = None
            written = hook()
        try:
            return super().request(*args, **kwargs)
        finally:
            if callable(written):
                written()   # the request has left (or part of it): the next gap counts from here

    def _new_conn(self) -> socket.socket:
        try:
            return _connection.create_connection(
                self._connect_address, self.timeout,
                source_address=self.source_address, socket_options=self.socket_options)
        except socket.timeout as exc:
            raise ConnectTimeoutError(self, f"connection to {self.host} timed out") from exc
        except OSError as exc:
            raise NewConnectionError(self, f"failed to connect to {self.host}: {exc}") from exc


class _PinnedPool(HTTPSConnectionPool):
    ConnectionCls = _PinnedHTTPSConnection


def _classify(exc: BaseException) -> TransportError:
    """A urllib3 or socket exception as a page failure code (D-62) and D-08 retryability."""
    if isinstance(exc, TransportError):
        return exc
    if isinstance(exc, (Urllib3Timeout, socket.timeout, EmptyPoolError)):
        return TransportError("timeout", f"timed out: {exc}", retryable=True)
    if isinstance(exc, SSLError):
        return TransportError("tls_error", f"TLS failed: {exc}")
    if isinstance(exc, DecodeError):
        return TransportError("body_incomplete", f"broken content encoding: {exc}")
    chain = [exc, *exc.args] if isinstance(exc, ProtocolError) else [exc]
    if any(isinstance(e, (IncompleteRead, InvalidChunkLength)) for e in chain):
        return TransportError("body_incomplete", f"body ended early: {exc}", retryable=True)
    if any(isinstance(e, socket.timeout) for e in chain):
        return TransportError("timeout", f"timed out: {exc}", retryable=True)
    if any(isinstance(e, __import__("ssl").SSLError) for e in chain):
        return TransportError("tls_error", f"TLS failed: {exc}")
    return TransportError("connection_error", f"connection failed: {exc}", retryable=True)


DRAIN_LIMIT = 4096      # an unread body up to this size is read and dropped at close


_FIELD_NAME = re.compile(r"\A[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")     # RFC 9110 token
_BAD_VALUE_CHARS = re.compile("[\x00\r\n]")


def received_headers(items) -> tuple[tuple[str, str], ...]:
    """Header fields as the rest of the product may hold them (RFC 9110 §5.5): a CR, LF or
    NUL inside a value is replaced by SP, and a field whose name is not a token is dropped
    (http.client lets both through). A recording then writes only fields its own fixture
    schema accepts, so every recording can be replayed."""
    out = []
    for name, value in items:
        if not _FIELD_NAME.match(name):
            continue
        out.append((name, _BAD_VALUE_CHARS.sub(" ", value)))
    return tuple(out)


class _Response:
    def __init__(self, resp: urllib3.HTTPResponse, deadline: float, monotonic: Callable[[], float],
                 disarm: Callable[[], None] = lambda: None):
        self._disarm = disarm
        self._resp = resp
        self._deadline = deadline
        self._monotonic = monotonic
        self._ended = False
        self.status = resp.status
        self.headers = received_headers(resp.headers.items())

    def header(self, name: str) -> str | None:
        return header_value(self.headers, name)

    def read(self, amt: int) -> bytes:
        if self._ended:
            return b""
        remaining = self._deadline - self._monotonic()
        if remaining <= 0:
            raise TransportError("timeout", "attempt deadline passed while reading the body", retryable=True)
        conn = self._resp.connection
        sock = getattr(conn, "sock", None)
        if sock is not None:
            sock.settimeout(max(0.001, min(READ_GAP_SECONDS, remaining)))
        try:
            data = self._resp.read1(amt, decode_content=True)
        except ReadTimeoutError as exc:
            if self._deadline - self._monotonic() <= 0:
                raise TransportError("timeout", "attempt deadline passed while reading the body",
                                     retryable=True) from exc
            # A quiet gap shorter than the deadline: urllib3 has already dropped the
            # connection, so the body cannot continue.
            raise TransportError("timeout", f"read stalled: {exc}", retryable=True) from exc
        except Exception as exc:  # noqa: BLE001 - every failure becomes a classified code
            if self._deadline - self._monotonic() <= 0:
                raise TransportError("timeout", "attempt deadline passed while reading the body",
                                     retryable=True) from exc
            raise _classify(exc) from exc
        if not data:
            self._ended = True
        return data

    def close(self) -> None:
        self._disarm()
        if not self._ended:
            self._drain_small()
        if not self._ended:
            self._resp.close()  # unread body: the connection cannot be reused
        self._resp.release_conn()

    def _drain_small(self) -> None:
        """Read an unread body that declares itself tiny (a redirect's, a 404 robots.txt's),
        so its connection goes back to the pool: otherwise the next request to the origin
        opens a second connection when one would do."""
        length = self.header("Content-Length")
        if length is None or not length.strip().isdigit() or int(length) > DRAIN_LIMIT:
            return
        try:
            while self.read(DRAIN_LIMIT + 1):
                pass
        except TransportError:
            pass


class Urllib3Transport:
    """The network transport (thread-safe; one instance per run)."""

    def __init__(self, *, ca_bundle: str | None = None, token: str = DEFAULT_TOKEN,
                 info_url: str = DEFAULT_INFO_URL, per_host_connections: int = PER_ORIGIN_IN_FLIGHT,
                 monotonic: Callable[[], float] = time.monotonic,
                 read_gap_seconds: float = READ_GAP_SECONDS):
        self.user_agent = user_agent(token, info_url)
        self._ca_bundle = ca_bundle
        self._per_host = per_host_connections
        self._monotonic = monotonic
        self._gap = read_gap_seconds
        self._pools: dict[tuple[str, int, str, int], _PinnedPool] = {}
        self._lock = threading.Lock()
        self._watchdog = _Watchdog(monotonic)

    def _pool(self, target: Target) -> _PinnedPool:
        key = (target.host, target.port, target.address, target.connect_port)
        with self._lock:
            pool = self._pools.get(key)
            if pool is None:
                pool = _PinnedPool(
                    target.host, target.port, maxsize=self._per_host, block=True,
                    cert_reqs="CERT_REQUIRED", ca_certs=self._ca_bundle, retries=False,
                    connect_address=(target.address, target.connect_port))
                self._pools[key] = pool
            return pool

    def monotonic(self) -> float:
        return self._monotonic()

    def send(self, request: Request, deadline: float,
             before_write: Callable[[], None] | None = None) -> _Response:
        check_request_headers(request.headers)
        target = request.target
        if not isinstance(target, Target):
            raise TypeError("Urllib3Transport needs Request.target from egress")
        parts = urlsplit(request.url)
        if parts.scheme != "https" or (parts.hostname or "") != target.host:
            raise ValueError(f"request {request.url!r} does not match its target {target.host!r}")
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        remaining = deadline - self._monotonic()
        if remaining <= 0:
            raise TransportError("timeout", "attempt deadline passed before sending", retryable=True)
        headers = {"User-Agent": self.user_agent, "Accept-Encoding": "gzip, deflate"}
        headers.update(request.headers)
        pool = self._pool(target)
        armed: list[int] = []
        _hooks.before_write = before_write
        _hooks.arm = lambda sock: armed.append(self._watchdog.arm(deadline, sock))

        def disarm() -> None:
            while armed:
                self._watchdog.disarm(armed.pop())
        try:
            resp = pool.urlopen(
                "GET", path, headers=headers, redirect=False, retries=False,
                preload_content=False, decode_content=True, assert_same_host=False,
                release_conn=False, pool_timeout=remaining,
                timeout=urllib3.Timeout(connect=remaining, read=remaining))
        except TransportError:
            disarm()
            raise
        except Exception as exc:  # noqa: BLE001 - every failure becomes a classified code
            disarm()
            if not isinstance(exc, (urllib3.exceptions.HTTPError, OSError, http.client.HTTPException)):
                raise  # the hook's own exceptions (e.g. the run deadline) pass through
            if self._monotonic() >= deadline:
                raise TransportError("timeout", "attempt deadline passed before the headers arrived",
                                     retryable=True) from exc
            raise _classify(exc) from exc
        finally:
            _hooks.before_write = None
            _hooks.arm = None
        if self._monotonic() >= deadline:
            disarm()
            resp.close()
            resp.release_conn()
            raise TransportError("timeout", "attempt deadline passed before the headers arrived", retryable=True)
        return _Response(resp, deadline, self._monotonic, disarm)

    def close(self) -> None:
        with self._lock:
            for pool in self._pools.values():
                pool.close()
            self._pools.clear()
