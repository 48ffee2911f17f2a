"""A hostile Redis for the gate tests: a real RESP peer on a loopback socket, written here (issue 24
point 2: tests as an attacker would). It answers what redis-py sends — the connection handshake
(HELLO 3, CLIENT SETINFO), PING, SCRIPT LOAD, EVALSHA of the gate's scripts, SET/GET of a source lock —
and lets a test say what each of the gate's scripts answers, byte for byte, on each call.

    with FakeResp({"acquire": Hostile(b"*3\\r\\n:0\\r\\n$3\\r\\nnan\\r\\n$1\\r\\n1\\r\\n", after=2)}) as fake:
        fake.url, fake.calls          # calls: every command received, in order, as (name, args)

By default a script answers as a gate that grants everything at once (acquire: a lease, the
others: 1), so a run goes on until the hostile answer comes. Scripts are recognised by the SHA1
of collection.fetch.redis_gate's script texts, so the fake follows the scripts as they change.
"""

from __future__ import annotations

import hashlib
import socket
import threading
import time
from dataclasses import dataclass

from collection.fetch import redis_gate

SCRIPTS = {"acquire": redis_gate._ACQUIRE, "sent": redis_gate._SENT, "release": redis_gate._RELEASE,
           "crawl-delay": redis_gate._CRAWL_DELAY, "renew": redis_gate._RENEW, "unlock": redis_gate._UNLOCK}
_BY_SHA = {hashlib.sha1(text.encode()).hexdigest(): name for name, text in SCRIPTS.items()}


def bulk(value: bytes | str) -> bytes:
    value = value.encode() if isinstance(value, str) else value
    return b"$%d\r\n%s\r\n" % (len(value), value)


def array(*items: bytes) -> bytes:
    return b"*%d\r\n" % len(items) + b"".join(items)


def integer(value: int) -> bytes:
    return b":%d\r\n" % value


def wait_reply(wait: bytes | str, last: bytes | str | None = None) -> bytes:
    """acquire's "wait this long" answer, with a plausible last start unless told."""
    return array(integer(0), bulk(wait), bulk(last if last is not None else f"{time.time():.6f}"))


def lease_reply() -> bytes:
    return array(integer(1), bulk(b""), bulk(f"{time.time():.6f}"))


@dataclass
class Hostile:
    """`reply` (raw RESP bytes) for calls of one script after the first `after` of them."""

    reply: bytes
    after: int = 0


class FakeResp:
    def __init__(self, hostile: dict[str, Hostile] | None = None, *, ping: bytes = b"+PONG\r\n"):
        self.hostile = dict(hostile or {})
        self.ping = ping
        self.calls: list[tuple[str, list[bytes]]] = []
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self.port = self._sock.getsockname()[1]
        self._closed = False
        self._thread = threading.Thread(target=self._serve, daemon=True, name="fake-resp")

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def count(self, name: str) -> int:
        with self._lock:
            return sum(1 for called, _ in self.calls if called == name)

    def __enter__(self) -> "FakeResp":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._closed = True
        self._sock.close()

    # --- the server -----------------------------------------------------------------------
    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            threading.Thread(target=self._client, args=(conn,), daemon=True).start()

    def _client(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        try:
            while True:
                command = _read_command(reader)
                if command is None:
                    return
                conn.sendall(self._answer(command))
        except (OSError, ValueError):
            return
        finally:
            conn.close()

    def _answer(self, command: list[bytes]) -> bytes:
        verb = command[0].upper().decode()
        if verb == "EVALSHA":
            name = _BY_SHA.get(command[1].decode(), "unknown-script")
        elif verb == "SCRIPT":
            name = "SCRIPT " + command[1].upper().decode()
        else:
            name = verb
        with self._lock:
            self.calls.append((name, command[1:]))
            seen = self._counts[name] = self._counts.get(name, 0) + 1
        hostile = self.hostile.get(name)
        if hostile is not None and seen > hostile.after:
            return hostile.reply
        if name == "acquire":
            return lease_reply()
        if name in SCRIPTS:
            return integer(1)
        if name == "PING":
            return self.ping
        if name == "SCRIPT LOAD":
            return bulk(hashlib.sha1(command[2]).hexdigest())
        if name == "HELLO":              # redis-py speaks RESP3: a map that says so
            return (b"%3\r\n" + bulk("server") + bulk("redis") + bulk("version") + bulk("7.0.15")
                    + bulk("proto") + integer(3))
        if name in ("CLIENT", "SET", "SELECT"):
            return b"+OK\r\n"
        if name == "GET":
            return b"$-1\r\n"
        return b"-ERR unknown command\r\n"


def _read_command(reader) -> list[bytes] | None:
    line = reader.readline()
    if not line:
        return None
    if not line.startswith(b"*"):
        return line.split()           # an inline command
    items = []
    for _ in range(int(line[1:])):
        size = int(reader.readline()[1:])
        items.append(reader.read(size + 2)[:-2])
    return items
