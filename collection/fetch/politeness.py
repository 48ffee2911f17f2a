"""The politeness scheduler (pure): `now` in, "ready at t" out.

What it holds the fetcher to (FETCH-16, FETCH-18, FETCH-19, D-08, D-09, D-10):

- per host, the gap between two request *starts* is at least
  `max(min_interval_seconds, Crawl-delay, 1 s)`; Crawl-delay raises the gap, never lowers it;
- after a 429 or 503 carrying `Retry-After`, no request to that host starts before
  `finish time + Retry-After`;
- at most 2 requests in flight per origin; at most min(`pages.concurrency`, 25) overall;
- listing, page, redirect-hop and retry requests all share it (D-10); robots.txt requests
  share it too, because the origin's operator sees them like any other request;
- fairness: among hosts with work, the one ready earliest goes first; ties go to the host
  served least recently, then to the smaller host name (so a replay is deterministic).

Hosts and origins: every address this product may fetch is `https://host` on port 443
(URL rules), so an origin is identified by its host and the two caps are kept per host.

Sources that share an origin (a dataset run, D-10 applied across sources): every request
may name its own `interval` (its source's min_interval_seconds); a start then waits for its
own gap after the previous start *and* for the gap the previous start's source asked for,
so the stricter of two sources sharing an origin always holds.

Where the floor holds: the fetcher takes a ticket (`try_start`) when it admits a request,
before its connection, and moves the start (`sent`) to the instant the request is written on
the established connection and again once it has left — see docs/politeness.md.

The scheduler is a plain object, not thread-safe: the fetcher guards it (and the budget)
with one lock held only for these calls, never across a sleep or a request.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable

PER_ORIGIN_IN_FLIGHT = 2      # FETCH-18
WORKER_CAP = 25               # FETCH-16
FLOOR_SECONDS = 1.0           # FETCH-19: the limiter's own gap, whatever the recipe says
MAX_DELAY_SECONDS = 3600.0    # cap for Crawl-delay and Retry-After (docs/politeness.md)

NEVER = math.inf


@dataclass(frozen=True)
class Ticket:
    """One request in flight: handed out by `try_start`, returned through `finish`."""

    host: str
    started_at: float
    serial: int
    gap: float = 0.0          # the gap this start asked for (see `sent`)


@dataclass
class _Host:
    last_start: float = -math.inf
    next_start: float = -math.inf     # the previous start plus the gap its own source asked for
    not_before: float = -math.inf     # Retry-After from the last 429/503
    crawl_delay: float = 0.0
    in_flight: int = 0
    tickets: set[int] = field(default_factory=set)


class Politeness:
    def __init__(self, min_interval: float, concurrency: int, *, margin: float = 0.0) -> None:
        """`margin` is added to every gap: the transport may use it to absorb jitter
        between the moment it writes a request and the moment the origin reads it."""
        if concurrency < 1:
            raise ValueError("concurrency is at least 1")
        if margin < 0:
            raise ValueError("margin is not negative")
        self.min_interval = max(float(min_interval), FLOOR_SECONDS)
        self.capacity = min(int(concurrency), WORKER_CAP)
        self.margin = float(margin)
        self._hosts: dict[str, _Host] = {}
        self._in_flight = 0
        self._serial = 0

    # --- settings learnt during the run ----------------------------------------------
    def set_crawl_delay(self, host: str, seconds: float | None) -> None:
        """robots.txt `Crawl-delay` for `host`: raises the gap, never lowers it (capped)."""
        if seconds is None or not math.isfinite(seconds) or seconds <= 0:
            return
        state = self._host(host)
        state.crawl_delay = max(state.crawl_delay, min(float(seconds), MAX_DELAY_SECONDS))

    def gap(self, host: str, interval: float | None = None) -> float:
        """The gap before a start to `host`; `interval` is the requesting source's own
        min_interval_seconds when it differs from the scheduler's (a dataset run)."""
        state = self._hosts.get(host)
        crawl_delay = state.crawl_delay if state else 0.0
        own = self.min_interval if interval is None else max(float(interval), FLOOR_SECONDS)
        return max(own, crawl_delay) + self.margin

    # --- questions --------------------------------------------------------------------
    def in_flight(self, host: str | None = None) -> int:
        if host is None:
            return self._in_flight
        state = self._hosts.get(host)
        return state.in_flight if state else 0

    def has_capacity(self, host: str) -> bool:
        return self._in_flight < self.capacity and self.in_flight(host) < PER_ORIGIN_IN_FLIGHT

    def time_ready_at(self, host: str, interval: float | None = None) -> float:
        """The earliest start the time rules allow, ignoring the in-flight caps."""
        state = self._hosts.get(host)
        if state is None:
            return -math.inf
        return max(state.last_start + self.gap(host, interval), state.next_start, state.not_before)

    def ready_at(self, host: str, now: float, interval: float | None = None) -> float:
        """When a request to `host` may start: `now` or later, or `NEVER` (infinity) while
        a cap is full — then only a `finish` can make it ready, not the passing of time."""
        if not self.has_capacity(host):
            return NEVER
        return max(now, self.time_ready_at(host, interval))

    def choose(self, hosts: Iterable[str], now: float, interval: float | None = None) -> tuple[str, float] | None:
        """Of the hosts that have work waiting, the one to serve next and when.

        Earliest ready first; ties to the least recently served host, then by name.
        None when every candidate is blocked by a cap (wait for a `finish`)."""
        best: tuple[float, float, str] | None = None
        for host in set(hosts):
            ready = self.ready_at(host, now, interval)
            if ready == NEVER:
                continue
            state = self._hosts.get(host)
            key = (ready, state.last_start if state else -math.inf, host)
            if best is None or key < best:
                best = key
        return None if best is None else (best[2], best[0])

    # --- transitions -------------------------------------------------------------------
    def try_start(self, host: str, now: float, interval: float | None = None) -> Ticket | None:
        """Reserve the start of one request at `now`, or None if it may not start yet."""
        if self.ready_at(host, now, interval) > now:
            return None
        state = self._host(host)
        self._serial += 1
        ticket = Ticket(host, now, self._serial, self.gap(host, interval))
        state.last_start = now
        state.next_start = max(state.next_start, now + ticket.gap)
        state.in_flight += 1
        state.tickets.add(ticket.serial)
        self._in_flight += 1
        return ticket

    def start(self, host: str, now: float) -> Ticket:
        ticket = self.try_start(host, now)
        if ticket is None:
            raise RuntimeError(f"politeness: {host} is not ready at {now} (ready at {self.ready_at(host, now)})")
        return ticket

    def sent(self, ticket: Ticket, now: float) -> None:
        """The request of `ticket` finished leaving at `now`. The next start to its host is
        counted from here when that is later than the reserved start, so a write delayed
        after its slot (a busy machine, a slow socket) cannot bring two arrivals at the
        origin closer than the gap (GUIDE: the floor holds where the origin sees it)."""
        state = self._hosts.get(ticket.host)
        if state is not None and ticket.serial in state.tickets and now > state.last_start:
            state.last_start = now
            state.next_start = max(state.next_start, now + ticket.gap)

    def finish(self, ticket: Ticket, now: float, retry_after: float | None = None) -> None:
        """The request has ended (any outcome). `retry_after`: seconds from a 429 or 503
        `Retry-After` (already parsed, see collection.fetch.retry), which holds the whole host."""
        state = self._hosts.get(ticket.host)
        if state is None or ticket.serial not in state.tickets:
            raise RuntimeError("politeness: unknown or already finished ticket")
        state.tickets.discard(ticket.serial)
        state.in_flight -= 1
        self._in_flight -= 1
        if retry_after is not None and math.isfinite(retry_after) and retry_after > 0:
            state.not_before = max(state.not_before, now + min(float(retry_after), MAX_DELAY_SECONDS))

    def hold_state(self, host: str) -> tuple[float, float, float, float]:
        """(last start, next start, Retry-After not-before, Crawl-delay) of `host`: what a hold
        is read from (collection.fetch.holds.hold_of)."""
        state = self._hosts.get(host)
        if state is None:
            return -math.inf, -math.inf, -math.inf, 0.0
        return state.last_start, state.next_start, state.not_before, state.crawl_delay

    def _host(self, host: str) -> _Host:
        state = self._hosts.get(host)
        if state is None:
            state = self._hosts[host] = _Host()
        return state
