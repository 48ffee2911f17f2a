"""A real redis-server for the gate tests (Debian's package; .ci/run installs it): started on a
free loopback port in a temporary directory, never a mock. A test that needs it and cannot
start it fails (CI must not go green without the fleet gate tested)."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
import time

import pytest


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    """Options (defaults: a plain server, no password, no TLS, as the other gate tests use):
    `password`: `requirepass`; `users`: ACL rules, one string per user (`alice on >secret
    ~collection:* +@all`), given as `user` directives; `tls`: a trustme.CA, and the server then
    listens only with TLS (`--port 0 --tls-port`), its certificate minted for `tls_names`
    (127.0.0.1 and localhost; `ca_path` is the CA bundle a client trusts)."""

    def __init__(self, directory: str, *, password: str | None = None, users: tuple[str, ...] = (), tls=None,
                 tls_names: tuple[str, ...] = ("127.0.0.1", "localhost")):
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        self.password = password
        self.users = tuple(users)
        self.tls = tls
        self.tls_names = tuple(tls_names)
        self.ca_path: str | None = None

    @property
    def url(self) -> str:
        return f"{'rediss' if self.tls is not None else 'redis'}://127.0.0.1:{self.port}/0"

    def url_with(self, userinfo: str, host: str = "127.0.0.1") -> str:
        """The URL with `userinfo` before `@` (as given: raw or percent-encoded)."""
        return f"{'rediss' if self.tls is not None else 'redis'}://{userinfo}@{host}:{self.port}/0"

    def _options(self) -> list[str]:
        options = []
        if self.password is not None:
            options += ["--requirepass", self.password]
        for rules in self.users:
            options += ["--user", *rules.split()]
        if self.tls is not None:
            cert = self.tls.issue_cert(*self.tls_names)
            paths = {name: os.path.join(self.directory, name) for name in ("server.pem", "server.key", "ca.pem")}
            cert.cert_chain_pems[0].write_to_path(paths["server.pem"])
            cert.private_key_pem.write_to_path(paths["server.key"])
            self.tls.cert_pem.write_to_path(paths["ca.pem"])
            self.ca_path = paths["ca.pem"]
            options += ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file", paths["server.pem"],
                        "--tls-key-file", paths["server.key"], "--tls-ca-cert-file", paths["ca.pem"],
                        "--tls-auth-clients", "no"]
        else:
            options += ["--port", str(self.port)]
        return options

    def _answers(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as raw:
            sock = raw
            if self.tls is not None:
                context = ssl.create_default_context(cafile=self.ca_path)
                context.check_hostname = False      # up is up, whatever names its certificate has
                sock = context.wrap_socket(raw, server_hostname="127.0.0.1")
            sock.sendall(b"PING\r\n")
            # a server that asks for a password is up too
            return sock.recv(16).startswith((b"+PONG", b"-NOAUTH"))

    def start(self) -> "RedisServer":
        binary = shutil.which("redis-server") or shutil.which("valkey-server")
        if binary is None:
            pytest.fail("redis-server is not installed (apt-get install -y redis-server; .ci/run does it)")
        self.process = subprocess.Popen(
            [binary, *self._options(), "--bind", "127.0.0.1", "--dir", self.directory, "--save", "",
             "--appendonly", "no", "--protected-mode", "yes"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"redis-server exited with {self.process.returncode}")
            try:
                if self._answers():
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        pytest.fail("redis-server did not answer PING within 10 s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)
