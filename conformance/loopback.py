"""The suite's own fixture server: a case's recorded exchanges served over real TLS.

One server per runner worker, on 127.0.0.1 with a certificate (minted by trustme, imported
only here, so inline mode needs no test-only package) for every host the suite uses. The
harness is told to route `host:443` to the server's port (a resolve map, as curl's
--resolve: SNI, Host and certificate checks still use the host name). The server records
every request as the origin sees it: arrival time, host, target, connection, headers.
"""

from __future__ import annotations

import base64
import itertools
import os
import shutil
import socket
import ssl
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

HOSTS = ("www.example.com", "example.com", "a.example.com", "b.example.com", "cdn.example.com",
         "other.example.org", "www.example.net")


def _key(host: str, target: str) -> str:
    return f"{host.lower()}{target}"


def _body(response: dict) -> bytes:
    body = response.get("body") or {}
    if "text" in body:
        return body["text"].encode("utf-8")
    if "base64" in body:
        return base64.b64decode(body["base64"])
    return b""


_OPEN: set = set()      # servers not yet closed, for close_all on SIGTERM


def close_all() -> None:
    for server in list(_OPEN):
        server.close()


class FixtureServer:
    def __init__(self) -> None:
        try:
            import trustme
        except ImportError:
            raise RuntimeError("loopback mode needs the trustme package (pip install trustme); "
                               "inline mode does not") from None

        self._ca = trustme.CA()
        cert = self._ca.issue_cert(*HOSTS)
        self._dir = tempfile.mkdtemp(prefix="conformance-ca-")
        _OPEN.add(self)
        self.ca_path = os.path.join(self._dir, "ca.pem")
        self._ca.cert_pem.write_to_path(self.ca_path)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        cert.configure_cert(context)
        self._lock = threading.Lock()
        self._routes: dict[str, dict] = {}
        self._counts: dict[str, int] = {}
        self.requests: list[dict] = []
        self._conn_ids = itertools.count(1)
        self._closing = threading.Event()
        self._start = time.monotonic()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                self.conn_id = next(server._conn_ids)

            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                server._handle(self, "GET")

            def do_POST(self) -> None:
                server._handle(self, "POST")

            do_HEAD = do_GET

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True

            def get_request(self):
                sock, addr = super().get_request()
                sock.settimeout(150)
                try:
                    return context.wrap_socket(sock, server_side=True), addr
                except (ssl.SSLError, OSError):
                    sock.close()
                    raise

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def resolve_map(self) -> dict[str, str]:
        return {f"{host}:443": f"127.0.0.1:{self.port}" for host in HOSTS}

    def load(self, exchanges: list[dict]) -> None:
        """Serve these exchanges from now on (one run), forgetting what was seen."""
        routes = {}
        for exchange in exchanges:
            parts = urlsplit(exchange["request"]["url"])
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            routes[_key(parts.hostname or "", target)] = exchange
        with self._lock:
            self._routes = routes
            self._counts = {}
            self.requests = []

    def seen(self) -> list[dict]:
        with self._lock:
            return list(self.requests)

    def close(self) -> None:
        if self not in _OPEN:
            return
        _OPEN.discard(self)
        self._closing.set()
        self._server.shutdown()
        self._server.server_close()
        shutil.rmtree(self._dir, ignore_errors=True)     # no CA directory left behind

    # --- serving -------------------------------------------------------------------------
    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        t = time.monotonic() - self._start
        host = (handler.headers.get("Host") or "").split(":")[0].lower()
        target = handler.path
        record = {"t": t, "t_end": t, "host": host, "target": target, "conn": handler.conn_id,
                  "method": method, "headers": list(handler.headers.items()),
                  "url": f"https://{host}{target}"}
        with self._lock:
            self.requests.append(record)
            exchange = self._routes.get(_key(host, target))
            key = _key(host, target)
            n = self._counts[key] = self._counts.get(key, 0) + 1
        try:
            self._answer(handler, exchange, n, target)
        finally:
            record["t_end"] = time.monotonic() - self._start

    def _answer(self, handler, exchange, n, target) -> None:
        if exchange is None:
            status = 404
            body = b"" if target.split("?")[0] == "/robots.txt" else b"not recorded"
            handler.send_response(status)
            handler.send_header("Content-Type", "text/plain")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
            return
        responses = exchange.get("responses") or [exchange["response"]]
        response = responses[min(n, len(responses)) - 1]
        if response.get("delay_seconds"):
            if self._closing.wait(response["delay_seconds"]):
                return
        hang = response.get("hang")
        drop = response.get("drop_connection")
        if hang in (True, "before_headers"):
            self._closing.wait(130)
            handler.close_connection = True
            return
        if drop in (True, "before_headers"):
            self._reset(handler)
            return
        body = _body(response)
        handler.send_response_only(response["status"])
        for name, value in response.get("headers", []):
            if name.lower() in ("content-length", "transfer-encoding", "content-encoding", "connection"):
                continue
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        if hang == "after_headers":
            handler.wfile.flush()
            self._closing.wait(130)
            handler.close_connection = True
            return
        if isinstance(drop, int) and not isinstance(drop, bool):
            handler.wfile.write(body[:drop])
            handler.wfile.flush()
            self._reset(handler)
            return
        drip = response.get("drip")
        if drip:
            step = max(1, int(drip // 10))
            for i in range(0, len(body), step):
                handler.wfile.write(body[i:i + step])
                handler.wfile.flush()
                if self._closing.wait(step / drip):
                    return
        else:
            handler.wfile.write(body)

    @staticmethod
    def _reset(handler) -> None:
        handler.close_connection = True
        try:
            handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            handler.connection.close()
        except OSError:
            pass
