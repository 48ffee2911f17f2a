"""Request and byte budgets of one run (pure).

Charged per HTTP request (FETCH-05..FETCH-08): a redirect hop, a retry and a byte-range
request each cost one. Listing requests cost against both `limits.max_requests` and
`discovery.max_requests` (D-05). robots.txt requests are counted, never charged (D-58).
Bytes are the decoded body bytes of every listing and page request (D-20).
`pages.max_fetches_per_run` and `pages.max_pages` belong to the planner, not to this module.

Never overshoot: a request is *reserved* before it is sent and only then may it go out, so
with several requests in flight nothing is sent that the budget cannot pay for. A
reservation is committed once the attempt has begun (a connection was attempted or the
request written) and released if the request is never attempted (robots, egress or
origin refusals found after reserving). Bytes are charged chunk by chunk as a body
streams; `charge_bytes` answers False — "stop reading, the cap is reached" — and never
lets the total pass the cap.

`exhausted` names the first ceiling that stopped further work, with the names of COV-16
(`max_requests`, `max_source_bytes`, `deadline`). Running out of `discovery.max_requests`
ends only discovery and is reported through `discovery_complete: false` (D-21), so it is
never recorded there.

Like the scheduler, a Budget is a plain object the fetcher guards with its one lock.
"""

from __future__ import annotations

from dataclasses import dataclass

LISTING = "listing"
PAGE = "page"
KINDS = (LISTING, PAGE)

INITIAL = "initial"
REDIRECT = "redirect"
RETRY = "retry"
RANGE = "range"
CAUSES = (INITIAL, REDIRECT, RETRY, RANGE)

MAX_REQUESTS = "max_requests"
MAX_SOURCE_BYTES = "max_source_bytes"
DEADLINE = "deadline"
DISCOVERY_MAX_REQUESTS = "discovery.max_requests"   # ends discovery only; not a COV-16 value


@dataclass(frozen=True)
class Reservation:
    serial: int
    kind: str
    cause: str


@dataclass(frozen=True)
class Denied:
    ceiling: str    # MAX_REQUESTS, MAX_SOURCE_BYTES, DEADLINE or DISCOVERY_MAX_REQUESTS


@dataclass(frozen=True)
class Counts:
    """Requests made (committed), for the run record. `listing` and `page` include their
    hops, retries and ranges; `redirect`, `retry` and `range` break those down again."""

    listing: int = 0
    page: int = 0
    redirect: int = 0
    retry: int = 0
    range: int = 0
    robots: int = 0
    bytes: int = 0

    @property
    def charged(self) -> int:
        return self.listing + self.page


class Budget:
    def __init__(self, max_requests: int, discovery_max_requests: int,
                 max_source_bytes: int | None = None, deadline: float | None = None) -> None:
        """`deadline` is on the caller's monotonic scale (D-60); None means no deadline."""
        self.max_requests = int(max_requests)
        self.discovery_max_requests = int(discovery_max_requests)
        self.max_source_bytes = None if max_source_bytes is None else int(max_source_bytes)
        self.deadline = deadline
        self._serial = 0
        self._open: dict[int, Reservation] = {}
        self._reserved_total = 0
        self._reserved_listing = 0
        self._used = {kind: 0 for kind in KINDS}
        self._by_cause = {cause: 0 for cause in CAUSES}
        self._robots = 0
        self._bytes = 0
        self._exhausted: str | None = None

    # --- questions -----------------------------------------------------------------------
    @property
    def exhausted(self) -> str | None:
        return self._exhausted

    def deadline_passed(self, now: float) -> bool:
        return self.deadline is not None and now >= self.deadline

    def requests_left(self) -> int:
        """What may still be reserved against limits.max_requests."""
        return self.max_requests - self._used[LISTING] - self._used[PAGE] - self._reserved_total

    def listing_requests_left(self) -> int:
        return min(self.requests_left(),
                   self.discovery_max_requests - self._used[LISTING] - self._reserved_listing)

    def bytes_remaining(self) -> int | None:
        if self.max_source_bytes is None:
            return None
        return self.max_source_bytes - self._bytes

    def counts(self) -> Counts:
        return Counts(listing=self._used[LISTING], page=self._used[PAGE],
                      redirect=self._by_cause[REDIRECT], retry=self._by_cause[RETRY],
                      range=self._by_cause[RANGE], robots=self._robots, bytes=self._bytes)

    # --- requests -------------------------------------------------------------------------
    def try_reserve(self, kind: str, cause: str, now: float) -> Reservation | Denied:
        if kind not in KINDS or cause not in CAUSES:
            raise ValueError(f"unknown request kind {kind!r} or cause {cause!r}")
        if self.deadline_passed(now):
            return self._deny(DEADLINE)
        if self.requests_left() <= 0:
            return self._deny(MAX_REQUESTS)
        if self.bytes_remaining() is not None and self.bytes_remaining() <= 0:
            # Any body would pass the cap, so no request can be worth sending.
            return self._deny(MAX_SOURCE_BYTES)
        if kind == LISTING and self.listing_requests_left() <= 0:
            return Denied(DISCOVERY_MAX_REQUESTS)
        self._serial += 1
        reservation = Reservation(self._serial, kind, cause)
        self._open[reservation.serial] = reservation
        self._reserved_total += 1
        if kind == LISTING:
            self._reserved_listing += 1
        return reservation

    def commit(self, reservation: Reservation) -> None:
        """The request was attempted: charge it."""
        self._close(reservation)
        self._used[reservation.kind] += 1
        self._by_cause[reservation.cause] += 1

    def release(self, reservation: Reservation) -> None:
        """The request was never attempted: give the reservation back."""
        self._close(reservation)

    def count_robots(self) -> None:
        """A robots.txt request was made: counted for the run record, never charged (D-58)."""
        self._robots += 1

    def record_stop(self, ceiling: str) -> None:
        """The run loop stopped work for `ceiling` (e.g. the deadline between two pages);
        only the first ceiling is kept (D-21)."""
        if ceiling == DISCOVERY_MAX_REQUESTS:
            return
        if self._exhausted is None:
            self._exhausted = ceiling

    # --- bytes ------------------------------------------------------------------------------
    def charge_bytes(self, count: int) -> bool:
        """Charge `count` decoded body bytes just read. False means "stop reading": the cap
        is reached, and what did not fit is not charged, so the total never passes it."""
        if count < 0:
            raise ValueError("a byte count is not negative")
        remaining = self.bytes_remaining()
        if remaining is None or count <= remaining:
            # Exactly full is not a stop for this body (it may end here); the next
            # reservation is the one refused.
            self._bytes += count
            return True
        self._bytes += remaining
        self._deny(MAX_SOURCE_BYTES)
        return False

    # --- internals ---------------------------------------------------------------------------
    def _deny(self, ceiling: str) -> Denied:
        self.record_stop(ceiling)
        return Denied(ceiling)

    def _close(self, reservation: Reservation) -> None:
        if self._open.pop(reservation.serial, None) is None:
            raise RuntimeError("budget: unknown or already closed reservation")
        self._reserved_total -= 1
        if reservation.kind == LISTING:
            self._reserved_listing -= 1
