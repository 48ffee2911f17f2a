"""Egress: may this process open a connection for this address, and to which IP? (GUIDE: Security)

Two layers, both applied on every request and every redirect hop:

1. The URL rules of `collection.urls.unreachable_reason` (https, no userinfo, no port, no
   backslash or whitespace, no trailing dot, no numeric or non-ASCII host, origin exactly in
   `allowed_origins`). Breaking them is `skipped_origin` (URL-09 to URL-13).
2. The address rules here: a host is resolved once per run; every address it resolves to
   must be globally routable — not private, loopback, link-local, CGNAT (100.64/10),
   multicast, unspecified, reserved, documentation, or an IPv6 form that embeds an IPv4
   address (::ffff:0:0/96, ::/96, 6to4 2002::/16, Teredo 2001::/32, NAT64 64:ff9b::/96 and
   64:ff9b:1::/48) — else `egress_refused` (URL-17, URL-18). The connection then goes to the
   address that was checked, so a second DNS answer cannot move it (DNS rebinding).

A host the operator mapped with `--resolve HOST:PORT:ADDR:PORT` skips the address rules:
mapping a name is the operator saying where it lives (curl semantics: only the TCP target
moves; SNI, Host and the certificate check keep the name). That is how tests reach
127.0.0.1.

Decision (clauses silent): when a name resolves to several addresses and any one of them is
refused, the whole host is refused rather than quietly using the others — a public name
that also answers with a private address is a misconfiguration or an attack, and either
way the operator should look.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping
from urllib.parse import urlsplit

from collection import urls

Resolver = Callable[[str, int], Iterable[str]]
ResolveMap = Mapping[tuple[str, int], tuple[str, int]]

_EMBEDDING_V6 = (
    (ipaddress.ip_network("::ffff:0:0/96"), "IPv4-mapped IPv6 address"),
    (ipaddress.ip_network("::/96"), "IPv4-compatible IPv6 address"),
    (ipaddress.ip_network("64:ff9b::/96"), "NAT64 IPv6 address"),
    (ipaddress.ip_network("64:ff9b:1::/48"), "NAT64 IPv6 address"),
    (ipaddress.ip_network("2002::/16"), "6to4 IPv6 address"),
    (ipaddress.ip_network("2001::/32"), "Teredo IPv6 address"),
)
_CGNAT = ipaddress.ip_network("100.64.0.0/10")


class EgressRefused(Exception):
    """This address may not be reached. `code` is `skipped_origin` or `egress_refused`."""

    def __init__(self, code: str, reason: str, url: str | None = None):
        super().__init__(f"{reason}: {url}" if url else reason)
        self.code = code
        self.reason = reason
        self.url = url


@dataclass(frozen=True)
class Target:
    """Where a request for `host` goes on the wire: TCP to (address, port), TLS name `host`."""

    host: str
    port: int
    address: str
    connect_port: int
    mapped: bool            # the operator mapped it with --resolve; address rules not applied


def address_problem(text: str) -> str | None:
    """Why an IP address may not be connected to, or None for a globally routable one (pure)."""
    try:
        ip = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return "not an IP address"
    if ip.version == 6:
        for network, reason in _EMBEDDING_V6:
            if ip in network:
                return reason
    if ip.is_unspecified:
        return "unspecified address"
    if ip.is_loopback:
        return "loopback address"
    if ip.is_link_local:
        return "link-local address"
    if ip.is_multicast:
        return "multicast address"
    if ip.version == 4 and ip in _CGNAT:
        return "shared address space (CGNAT)"
    if ip.is_private:
        return "private address"
    if ip.is_reserved:
        return "reserved address"
    if not ip.is_global:
        return "address not globally routable"
    return None


def parse_resolve(text: str) -> tuple[tuple[str, int], tuple[str, int]]:
    """curl's `HOST:PORT:ADDR:PORT` (ADDR may be `[v6]`) → ((host, port), (addr, port))."""
    host, sep, rest = text.partition(":")
    port_text, sep2, rest = rest.partition(":")
    if not (sep and sep2) or not host:
        raise ValueError(f"--resolve wants HOST:PORT:ADDR:PORT, got {text!r}")
    if rest.startswith("["):
        addr, _, tail = rest[1:].partition("]")
        if not tail.startswith(":"):
            raise ValueError(f"--resolve wants HOST:PORT:[ADDR]:PORT, got {text!r}")
        addr_port_text = tail[1:]
    else:
        addr, _, addr_port_text = rest.rpartition(":")
    try:
        ipaddress.ip_address(addr)
        port, addr_port = int(port_text), int(addr_port_text)
    except ValueError as exc:
        raise ValueError(f"--resolve wants HOST:PORT:ADDR:PORT with a numeric address, got {text!r}") from exc
    if not (0 < port < 65536 and 0 < addr_port < 65536):
        raise ValueError(f"--resolve port out of range in {text!r}")
    return (host.lower().rstrip("."), port), (addr, addr_port)


def system_resolver(host: str, port: int) -> list[str]:
    """Every address DNS gives for `host` (the one DNS lookup of the run for that host)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        if sockaddr[0] not in seen:
            seen.append(sockaddr[0])
    return seen


class Egress:
    """Checks addresses and pins each host to the address that was checked (thread-safe).

    One instance per run: a host is resolved at most once per run, and every later request
    and redirect hop to it reuses that answer.
    """

    def __init__(self, resolve_map: ResolveMap | None = None, resolver: Resolver = system_resolver):
        self._map = {(h.lower(), p): a for (h, p), a in (resolve_map or {}).items()}
        self._resolver = resolver
        self._cache: dict[tuple[str, int], Target | EgressRefused] = {}
        self._lock = threading.Lock()

    def check_url(self, url: str, allowed_origins: Iterable[str]) -> Target:
        """The target for `url`, or EgressRefused (`skipped_origin` or `egress_refused`)."""
        reason = urls.unreachable_reason(url, frozenset(allowed_origins))
        if reason is not None:
            raise EgressRefused("skipped_origin", reason, url)
        host = urlsplit(url).hostname or ""
        try:
            return self.target(host, 443)
        except EgressRefused as exc:
            raise EgressRefused(exc.code, exc.reason, url) from None

    def target(self, host: str, port: int = 443) -> Target:
        key = (host, port)
        with self._lock:
            cached = self._cache.get(key)
        if cached is None:
            cached = self._decide(host, port)
            # A failed lookup may be transient (D-08 retries network errors); only answers stick.
            if not (isinstance(cached, EgressRefused) and cached.code == "connection_error"):
                with self._lock:
                    cached = self._cache.setdefault(key, cached)
        if isinstance(cached, EgressRefused):
            raise EgressRefused(cached.code, cached.reason)
        return cached

    def _decide(self, host: str, port: int) -> Target | EgressRefused:
        mapped = self._map.get((host, port))
        if mapped is not None:
            return Target(host, port, mapped[0], mapped[1], mapped=True)
        problem = urls.host_problem(host)
        if problem is not None:
            return EgressRefused("skipped_origin", problem)
        try:
            addresses = list(self._resolver(host, port))
        except OSError as exc:
            return EgressRefused("connection_error", f"name resolution failed for {host}: {exc}")
        if not addresses:
            return EgressRefused("connection_error", f"no address for {host}")
        for addr in addresses:
            problem = address_problem(addr)
            if problem is not None:
                return EgressRefused("egress_refused", f"{host} resolves to {addr}: {problem}")
        return Target(host, port, addresses[0].split("%", 1)[0], port, mapped=False)
