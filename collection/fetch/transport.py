"""The transport interface: one HTTPS GET out, a streaming response back (shell boundary).

The fetcher (collection/fetch/fetcher.py) owns every decision — budgets, redirects, retries,
ranges, caps, deadlines; a transport only moves bytes. Two transports implement it:
`fetch.urllib3_transport.Urllib3Transport` (the network) and `recording.replay.ReplayTransport`
(recorded exchanges on a virtual clock). A transport never follows a redirect, never
retries and never sends a credential.

Deadlines are absolute times on the transport's own clock (`clock.monotonic()`); the fetcher
and its transport share one clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Protocol

PRODUCT_VERSION = "1.0"
DEFAULT_TOKEN = "CollectionBot"
# The project has no public website of its own; an operator running against real
# publishers sets --user-agent-url to a page listing their addresses (OPS-10). `.invalid`
# can never name somebody else's page, which is the point of D-57.
DEFAULT_INFO_URL = "https://collection.invalid/crawler"

_TOKEN = re.compile(r"\A[A-Za-z_-]{1,64}\Z")   # RFC 9309 product token characters

# Headers that carry credentials or state; a transport refuses to send them (FETCH-02).
FORBIDDEN_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "cookie2"})


def user_agent(token: str = DEFAULT_TOKEN, info_url: str = DEFAULT_INFO_URL) -> str:
    """`<Token>-PublicHttps/1.0 (+<info URL>)` (FETCH-24, D-57)."""
    if not _TOKEN.match(token):
        raise ValueError(f"user-agent token {token!r} must be 1-64 letters, '_' or '-' (RFC 9309)")
    if not info_url.startswith("https://") or any(c in info_url for c in " ()\r\n"):
        raise ValueError(f"user-agent info URL {info_url!r} must be an https URL without spaces or parentheses")
    return f"{token}-PublicHttps/{PRODUCT_VERSION} (+{info_url})"


class TransportError(Exception):
    """A request that produced no usable response. `code` is a page failure code of
    collection.codes (timeout, connection_error, tls_error, body_incomplete, replay_missing,
    egress_refused); `retryable` says whether D-08 lets the fetcher try again."""

    def __init__(self, code: str, message: str, *, retryable: bool = False):
        super().__init__(message)
        self.code = code
        self.retryable = retryable


@dataclass(frozen=True)
class Request:
    """An HTTPS GET of `url` (canonical, already egress-checked) with extra `headers`.

    `headers` holds only what the fetcher adds (Accept, Range, If-Range); the transport adds
    User-Agent and Accept-Encoding itself. `target` is the egress Target the connection must
    go to (None for transports that open no connection).
    """

    url: str
    headers: tuple[tuple[str, str], ...] = ()
    target: object | None = None


class Response(Protocol):
    status: int
    headers: tuple[tuple[str, str], ...]

    def header(self, name: str) -> str | None:
        """The first value of header `name` (case-insensitive), or None."""

    def read(self, amt: int) -> bytes:
        """Up to `amt` body bytes with content-encoding removed; b"" at the end.

        Returns what has arrived without waiting for `amt` (a drip yields small reads), and
        never blocks past the deadline given to `send`. Raises TransportError.
        """

    def close(self) -> None:
        """Give the connection back (or drop it when the body was not read to the end)."""


class Transport(Protocol):
    def monotonic(self) -> float:
        """The clock that `deadline` is measured on (real time for the network)."""

    def send(self, request: Request, deadline: float,
             before_write: Callable[[], Callable[[], None] | None] | None = None) -> Response:
        """Send `request` and return once the status and headers arrived (before the body).

        `before_write` is called once the connection is established, just before the request
        is written: the fetcher stamps the request's start there, so the gap between two
        requests holds where the origin sees it (arrival), not where they leave (GUIDE).
        It may return a callable, which a network transport calls once the request has been
        written (or its write failed), so the next gap counts from the moment it actually left.
        Raises TransportError (code timeout when `deadline` passes first)."""


def header_value(headers: tuple[tuple[str, str], ...], name: str) -> str | None:
    lowered = name.lower()
    for key, value in headers:
        if key.lower() == lowered:
            return value
    return None


def check_request_headers(headers: tuple[tuple[str, str], ...]) -> None:
    """Refuse credential headers however they got here (FETCH-02)."""
    for key, _ in headers:
        if key.lower() in FORBIDDEN_HEADERS:
            raise ValueError(f"refusing to send credential header {key!r}")
