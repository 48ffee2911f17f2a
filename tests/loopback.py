"""A programmable HTTPS server on 127.0.0.1 for tests and benchmarks (GUIDE: real parts, not mocks).

The server presents a certificate minted by a trustme CA for a fixed set of names
(`CERT_NAMES`), so a client that maps one of those names to the loopback port with a
resolve map sees a real TLS handshake with SNI and hostname verification. A name mapped to
the server but missing from `CERT_NAMES` (e.g. `mismatch.example.net`) gives a hostname
mismatch; a client trusting another CA gives an untrusted-certificate failure.

Tests program routes with `server.route(target, Reply(...), Reply(...), host=None)`:
successive requests to the target get the replies in order and the last one repeats.
`target` is the path with its query (exact match first, then the path alone, then "*").
Every request is recorded (`server.requests`) with its arrival time on the monotonic
clock and the id of the connection it arrived on, so tests can check politeness gaps and
connections per origin at the place the origin sees them.

    with LoopbackServer() as server:
        server.route("/x", Reply(200, [("Content-Type", "text/html")], b"<p>hi</p>"))
        server.port, server.ca_pem_path, server.requests
"""

from __future__ import annotations

import gzip as _gzip
import hashlib
import itertools
import os
import socket
import socketserver
import ssl
import struct
import sys
import tempfile
import threading
import time
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Callable, Iterable

import trustme

CERT_NAMES = (
    "www.example.com", "example.com", "a.example.com", "b.example.com", "c.example.com",
    "other.example.org", "cdn.example.com",
)


@dataclass(frozen=True)
class Reply:
    """One programmed response.

    delay: seconds to wait before sending anything (latency, or a hang when large).
    drip: bytes per second for the body (None: all at once).
    reset: close the connection with a TCP RST — before the status line when
        `reset_after` is None, else after that many body bytes.
    chunked: send the body with Transfer-Encoding: chunked.
    endless: keep sending chunks of `body` forever (until the client goes away).
    content_length: the Content-Length to announce (may lie); None = the true length.
    gzip: compress the body and say Content-Encoding: gzip.
    raw_body: send these bytes as the (already encoded) body, e.g. broken gzip.
    ranges: honour `Range: bytes=a-b` (with If-Range against `etag`) and advertise it.
    etag: the ETag header value (also used for If-Range).
    handler: computes a Reply from the recorded request, for anything else.
    interim: informational answers sent before this one, as (status, headers) pairs
        (e.g. `103 Early Hints`).
    head_drip: bytes per second for the status line and headers (None: all at once).
    """

    status: int = 200
    headers: tuple[tuple[str, str], ...] | list = ()
    body: bytes = b""
    delay: float = 0.0
    drip: float | None = None
    reset: bool = False
    reset_after: int | None = None
    chunked: bool = False
    endless: bool = False
    content_length: int | None = None
    gzip: bool = False
    raw_body: bytes | None = None
    ranges: bool = False
    etag: str | None = None
    chunks: Iterable[bytes] | None = None
    handler: Callable[["Recorded"], "Reply"] | None = None
    interim: tuple = ()
    head_drip: float | None = None


@dataclass(frozen=True)
class Recorded:
    method: str
    target: str
    host: str
    headers: tuple[tuple[str, str], ...]
    arrived: float          # time.monotonic() when the request's first bytes reached the kernel
                            # (SO_TIMESTAMPNS), else when its request line had been read
    connection: int         # id of the TCP connection it came on
    sni: str | None
    kernel_wall: float | None = None    # the raw SO_TIMESTAMPNS stamp (CLOCK_REALTIME seconds), if any
    read_at: float | None = None        # time.monotonic() once this server had read the request line

    def header(self, name: str) -> str | None:
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]


@dataclass
class Connection:
    """One TLS connection the server accepted: who it was for and when it was open."""

    connection: int
    sni: str | None
    opened: float           # time.monotonic() once the handshake was done
    closed: float | None = None


@dataclass
class _Route:
    replies: list[Reply]
    served: int = 0


class _StampingReader:
    """The handler's rfile, noting when the first line of a request came in."""

    def __init__(self, rfile) -> None:
        self._rfile = rfile
        self.line_at: float | None = None

    def readline(self, *args):
        line = self._rfile.readline(*args)
        if self.line_at is None and line:
            self.line_at = time.monotonic()
        return line

    def __getattr__(self, name):
        return getattr(self._rfile, name)


SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)     # Linux: the kernel stamps each received segment


def wall_to_monotonic() -> float:
    """monotonic - realtime now, read so that no thread switch falls between the two clock
    reads: a pair bracketed by two monotonic reads more than 50 µs apart is read again (a
    switch there, with busy threads around, shifts a converted stamp by milliseconds)."""
    best = None
    for _ in range(20):
        before = time.monotonic()
        wall = time.time()
        after = time.monotonic()
        if best is None or after - before < best[0]:
            best = (after - before, (before + after) / 2 - wall)
        if after - before < 50e-6:
            break
    return best[1]


def _kernel_arrival(peek: socket.socket) -> tuple[float, float] | None:
    """When the next bytes on the connection reached this machine's kernel: (monotonic clock,
    raw CLOCK_REALTIME stamp), from SO_TIMESTAMPNS read with a MSG_PEEK (the TLS layer still
    reads those bytes after). A server thread stalled by a busy machine then cannot make an
    arrival look later than it was (and the next gap shorter). Blocks until bytes come; None
    at the end of the stream."""
    try:
        data, ancillary, _flags, _addr = peek.recvmsg(1, socket.CMSG_SPACE(16), socket.MSG_PEEK)
    except (OSError, ValueError):
        return None
    for level, kind, raw in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(raw) >= 16:
            seconds, nanos = struct.unpack("qq", raw[:16])
            stamp = seconds + nanos / 1e9
            return stamp + wall_to_monotonic(), stamp
    return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The head and the body are two writes: with Nagle's algorithm the body waits for the
    # client's delayed ACK of the head, 40 ms on every request of a kept-alive connection.
    disable_nagle_algorithm = True
    server: "_Server"

    def setup(self) -> None:
        self.tls_ok = False
        self.sni = None
        raw = self.request
        raw.settimeout(30)
        try:
            ctx = self.server.ssl_context
            try:
                raw.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            except OSError:
                pass
            slow = self.server.owner.slow_handshakes.get(next(self.server.accepted), 0.0)
            if slow:
                self.server.owner._stopping.wait(slow)      # a handshake slow to answer
            self.request = ctx.wrap_socket(raw, server_side=True)
            self.sni = getattr(self.request, "_sni", None)
            self.tls_ok = True
            # A second handle on the same socket, to peek at arrivals under the TLS layer.
            self.peek = socket.socket(fileno=os.dup(self.request.fileno()))
            self.peek.settimeout(30)
        except (ssl.SSLError, OSError):
            self.request = raw
        self.connection_id = next(self.server.connection_ids)
        if self.tls_ok:
            self.opened = Connection(self.connection_id, self.sni, time.monotonic())
            self.server.owner._opened(self.opened)
        super().setup()

    def handle(self) -> None:
        if not self.tls_ok:
            return
        try:
            super().handle()
        except (ConnectionError, ssl.SSLError, socket.timeout, OSError):
            pass

    def log_message(self, format, *args):  # noqa: A002 - quiet server
        pass

    def handle_one_request(self) -> None:
        # Stamp the arrival as soon as the request line is in, before the headers are
        # parsed: politeness gaps are judged on this instant, so the server's own work must
        # not make one request look later (and the next gap shorter) than it was.
        rfile = self.rfile
        peek = getattr(self, "peek", None)
        pending = self.request.pending() if isinstance(self.request, ssl.SSLSocket) else 0
        self.kernel_arrival = _kernel_arrival(peek) if peek is not None and not pending else None
        self.rfile = _StampingReader(rfile)
        try:
            super().handle_one_request()
        finally:
            self.rfile = rfile

    def finish(self) -> None:
        opened = getattr(self, "opened", None)
        if opened is not None:
            opened.closed = time.monotonic()
        try:
            super().finish()
        finally:
            # socketserver closes the raw socket it accepted, which wrap_socket detached; the
            # TLS socket must be closed here, or the client sees the end only at garbage collection.
            for sock in (self.request, getattr(self, "peek", None)):
                try:
                    if sock is not None:
                        sock.close()
                except OSError:
                    pass

    def do_GET(self) -> None:  # noqa: N802
        self._serve()

    def do_HEAD(self) -> None:  # noqa: N802
        self._serve()

    def do_POST(self) -> None:  # noqa: N802
        self._serve()

    def _serve(self) -> None:
        kernel = getattr(self, "kernel_arrival", None)
        stamped = kernel[0] if kernel is not None else getattr(self.rfile, "line_at", None)
        arrived = stamped if stamped is not None else time.monotonic()
        host = (self.headers.get("Host") or "").split(":")[0]
        rec = Recorded(self.command, self.path, host, tuple(self.headers.items()), arrived,
                       self.connection_id, self.sni, kernel[1] if kernel is not None else None,
                       getattr(self.rfile, "line_at", None))
        reply = self.server.owner._next_reply(rec)
        while reply.handler is not None:
            reply = reply.handler(rec)
        self._send(reply, rec)

    # -- writing -------------------------------------------------------------------------
    def _reset(self) -> None:
        # SO_LINGER 0 makes close() send RST: the client sees "connection reset by peer".
        try:
            sock = self.request
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
        except OSError:
            pass
        self.close_connection = True

    def _write(self, data: bytes, drip: float | None) -> None:
        if not drip:
            self.wfile.write(data)
            self.wfile.flush()
            return
        step = max(1, int(drip / 10)) if drip >= 10 else 1
        for i in range(0, len(data), step):
            if self.server.owner._stopping.is_set():
                raise ConnectionError("server stopping")
            self.wfile.write(data[i:i + step])
            self.wfile.flush()
            time.sleep(step / drip)

    def _send(self, reply: Reply, rec: Recorded) -> None:
        if reply.delay:
            # Sleep in slices so stopping the server does not wait for a long hang.
            end = time.monotonic() + reply.delay
            while time.monotonic() < end:
                if self.server.owner._stopping.wait(min(0.05, max(0.0, end - time.monotonic()))):
                    self.close_connection = True
                    return
        if reply.reset and reply.reset_after is None:
            self._reset()
            return
        status, headers, body = reply.status, list(reply.headers), reply.body
        if reply.gzip:
            body = _gzip.compress(body, mtime=0)
            headers.append(("Content-Encoding", "gzip"))
        if reply.raw_body is not None:
            body = reply.raw_body
        if reply.ranges:
            headers.append(("Accept-Ranges", "bytes"))
            status, extra, body = _apply_range(rec, reply, status, body)
            headers.extend(extra)
        if reply.etag and not any(k.lower() == "etag" for k, _ in headers):
            headers.append(("ETag", reply.etag))
        chunked = reply.chunked or reply.endless or reply.chunks is not None
        for interim_status, interim_headers in reply.interim:
            head = f"HTTP/1.1 {interim_status} Interim\r\n".encode("latin-1")
            head += b"".join(f"{k}: {v}\r\n".encode("latin-1") for k, v in interim_headers) + b"\r\n"
            self._write(head, None)
        if chunked:
            headers.append(("Transfer-Encoding", "chunked"))
        elif not any(k.lower() == "content-length" for k, _ in headers):
            length = reply.content_length if reply.content_length is not None else len(body)
            headers.append(("Content-Length", str(length)))
        if reply.head_drip:
            head = f"HTTP/1.1 {status} Trickled\r\n".encode("latin-1")
            head += b"".join(f"{k}: {v}\r\n".encode("latin-1") for k, v in headers) + b"\r\n"
            try:
                self._write(head, reply.head_drip)
            except (ConnectionError, ssl.SSLError, OSError):
                self.close_connection = True
                return
        else:
            self.send_response_only(status)
            for key, value in headers:
                self.send_header(key, value)
            self.end_headers()
        if rec.method == "HEAD":
            return
        try:
            if reply.endless:
                piece = body or b"x" * 1024
                while not self.server.owner._stopping.is_set():
                    self._write(b"%x\r\n%s\r\n" % (len(piece), piece), reply.drip)
                return
            if chunked:
                pieces = reply.chunks if reply.chunks is not None else [body[i:i + 4096] for i in range(0, len(body), 4096)]
                for piece in pieces:
                    if piece:
                        self._write(b"%x\r\n%s\r\n" % (len(piece), piece), reply.drip)
                self._write(b"0\r\n\r\n", None)
                return
            if reply.reset_after is not None:
                self._write(body[:reply.reset_after], reply.drip)
                self._reset()
                return
            self._write(body, reply.drip)
            if reply.content_length is not None and reply.content_length != len(body):
                self.close_connection = True  # a lying length leaves the stream unusable
        except (ConnectionError, ssl.SSLError, OSError):
            self.close_connection = True


def _apply_range(rec: Recorded, reply: Reply, status: int, body: bytes):
    spec = rec.header("Range")
    if not spec or status != 200 or not spec.startswith("bytes="):
        return status, [], body
    if_range = rec.header("If-Range")
    if if_range is not None and if_range != reply.etag:
        return 200, [], body  # the object changed: RFC 9110 says send the whole thing
    first_text, _, last_text = spec[len("bytes="):].partition("-")
    first = int(first_text)
    last = min(int(last_text), len(body) - 1) if last_text else len(body) - 1
    if first >= len(body):
        return 416, [("Content-Range", f"bytes */{len(body)}")], b""
    return 206, [("Content-Range", f"bytes {first}-{last}/{len(body)}")], body[first:last + 1]


class _Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, owner: "LoopbackServer", ssl_context: ssl.SSLContext):
        self.owner = owner
        self.ssl_context = ssl_context
        self.connection_ids = itertools.count(1)
        self.accepted = itertools.count(1)
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request, client_address):
        pass


class LoopbackServer:
    """A threaded HTTPS server on 127.0.0.1 with programmable routes and a request log."""

    def __init__(self, names: tuple[str, ...] = CERT_NAMES, ca: trustme.CA | None = None):
        # A handler thread whose read has completed may wait a whole GIL switch interval
        # (5 ms by default) per busy thread before it can read the clock; arrival stamps
        # would then run late by tens of milliseconds on a loaded machine.
        sys.setswitchinterval(min(sys.getswitchinterval(), 0.0005))
        self.ca = ca or trustme.CA()
        self.names = names
        cert = self.ca.issue_cert(*names)
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        cert.configure_cert(ctx)

        def _remember_sni(sock, server_name, _ctx):
            sock._sni = server_name  # the name the client asked for, for tests

        ctx.sni_callback = _remember_sni
        self._dir = tempfile.TemporaryDirectory(prefix="loopback-")
        self.ca_pem_path = os.path.join(self._dir.name, "ca.pem")
        self.ca.cert_pem.write_to_path(self.ca_pem_path)
        self._routes: dict[tuple[str | None, str], _Route] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self.requests: list[Recorded] = []
        self.connections: list[Connection] = []
        # {n: seconds}: the n-th connection accepted (from 1) waits this long before its TLS
        # handshake answers, like an origin slow to set up a connection
        self.slow_handshakes: dict[int, float] = {}
        self._server = _Server(self, ctx)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> "LoopbackServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._dir.cleanup()

    def __enter__(self) -> "LoopbackServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- programming ---------------------------------------------------------------------
    def route(self, target: str, *replies: Reply, host: str | None = None) -> None:
        """Serve `replies` in turn to requests for `target` (the last one repeats)."""
        if not replies:
            raise ValueError("a route needs at least one reply")
        with self._lock:
            self._routes[(host, target)] = _Route(list(replies))

    def resolve_map(self, *names: str) -> dict[tuple[str, int], tuple[str, int]]:
        """{(name, 443): ("127.0.0.1", port)} for the given names (default: all cert names)."""
        return {(name, 443): ("127.0.0.1", self.port) for name in (names or self.names)}

    def resolve_flags(self, *names: str) -> list[str]:
        """The same map as curl-style `HOST:PORT:ADDR:PORT` strings."""
        return [f"{name}:443:127.0.0.1:{self.port}" for name in (names or self.names)]

    def requests_for(self, path: str | None = None, host: str | None = None) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests
                    if (path is None or r.path == path or r.target == path)
                    and (host is None or r.host == host)]

    def connections_for(self, host: str | None = None) -> list[Connection]:
        """The TLS connections accepted so far (for `host`: those whose SNI named it)."""
        with self._lock:
            return [c for c in self.connections if host is None or c.sni == host]

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()
            self.connections.clear()

    def _opened(self, connection: Connection) -> None:
        with self._lock:
            self.connections.append(connection)

    def _next_reply(self, rec: Recorded) -> Reply:
        with self._lock:
            self.requests.append(rec)
            route = None
            for key in ((rec.host, rec.target), (None, rec.target), (rec.host, rec.path),
                        (None, rec.path), (rec.host, "*"), (None, "*")):
                route = self._routes.get(key)
                if route is not None:
                    break
            if route is None:
                return Reply(404, [("Content-Type", "text/plain")], b"no route\n")
            reply = route.replies[min(route.served, len(route.replies) - 1)]
            route.served += 1
            return reply


class PeakInFlight:
    """A reply handler for `Reply(handler=...)`: answers `answer(rec)` after `seconds` (the
    origin's own work) and notes the most requests it was serving at once per host, which is
    what the origin sees as connections in use."""

    def __init__(self, answer: Callable[[Recorded], Reply], seconds: float = 0.01):
        self.answer = answer
        self.seconds = seconds
        self.lock = threading.Lock()
        self.now: dict[str, int] = {}
        self.peak: dict[str, int] = {}

    def __call__(self, rec: Recorded) -> Reply:
        with self.lock:
            self.now[rec.host] = self.now.get(rec.host, 0) + 1
            self.peak[rec.host] = max(self.peak.get(rec.host, 0), self.now[rec.host])
        time.sleep(self.seconds)
        with self.lock:
            self.now[rec.host] -= 1
        return self.answer(rec)


# -- bodies tests like to serve ---------------------------------------------------------------

def gzip_bomb(decoded_size: int, chunk: int = 1 << 20) -> bytes:
    """A gzip stream that expands to `decoded_size` zero bytes, built without holding them."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(chunk)
    out = []
    remaining = decoded_size
    while remaining > 0:
        n = min(chunk, remaining)
        out.append(comp.compress(zeros[:n]))
        remaining -= n
    out.append(comp.flush())
    return b"".join(out)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
