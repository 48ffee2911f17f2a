"""Step 2, work choice: which page the run loop fetches next, or why it stops (pure).

The planner fixes its whole queue when it is made, from the ledger as discovery and the
missing-rows repair left it: pending pages by discovery ordinal (D-51), then failed
pages oldest failure first (MERGE-09), then the pages `revisit` names (MERGE-10,
MERGE-28..30). `skipped_origin` pages are never in it (MERGE-31). Each page appears once,
so no page is chosen twice in a run (D-47).

The run loop owns requests, bytes and the clock; it tells the planner when one of those
ceilings is spent (`next(exhausted=...)`) and reports each result (`report`). The
planner owns the one budget that depends on outcomes: max_fetches_per_run caps
successful fetches only (D-15), so while fetches are in flight at the cap it answers
WAIT, because a failure would free a slot.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Mapping

from collection.merge.ledger import LedgerRow
from collection.merge.outcomes import FETCHED, PageResult
from collection.merge.states import (
    BUDGETS, FAILED, MAX_FETCHES_PER_RUN, PENDING, REVISIT_INTERVAL, REVISIT_KINDS,
    REVISIT_NEVER, REVISIT_REVISION_HINT, WHY_FAILED, WHY_PENDING, WHY_REVISIT,
)


@dataclass(frozen=True)
class Revisit:
    kind: str = REVISIT_NEVER
    seconds: int | None = None    # interval only

    def __post_init__(self) -> None:
        if self.kind not in REVISIT_KINDS:
            raise ValueError(f"revisit kind {self.kind!r}")
        if self.kind == REVISIT_INTERVAL and (self.seconds is None or self.seconds < 1):
            raise ValueError("interval revisit needs seconds")


@dataclass(frozen=True)
class Choice:
    """Fetch this page."""

    page_id: str
    url: str
    why: str          # WHY_PENDING, WHY_FAILED or WHY_REVISIT


@dataclass(frozen=True)
class Wait:
    """Choose nothing now: fetches in flight may still free a slot under max_fetches_per_run."""

    in_flight: int


@dataclass(frozen=True)
class Stop:
    """Choose nothing more. `budget` names the ceiling that left work undone, or None."""

    budget: str | None


def parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def revisit_due(row: LedgerRow, revisit: Revisit, now: datetime) -> bool:
    """Whether `revisit` names this fetched page (MERGE-28..30, D-32, D-33)."""
    if revisit.kind == REVISIT_NEVER:
        return False
    if revisit.kind == REVISIT_REVISION_HINT:
        # a page with no hint now is never revisited; any string inequality is a move
        return row.revision_hint is not None and row.revision_hint != row.revision_hint_at_fetch
    if row.last_fetched_at is None:
        return True
    # D-63: "older than seconds" (MERGE-30) is strict: a page fetched exactly `seconds`
    # ago is not yet due
    return (now - parse_time(row.last_fetched_at)).total_seconds() > revisit.seconds


def work_order(ledger: Mapping[str, LedgerRow], revisit: Revisit, now: str) -> tuple[Choice, ...]:
    """The whole of step 2's order for this ledger, before any budget applies."""
    rows = ledger.values()
    pending = sorted((r for r in rows if r.state == PENDING), key=lambda r: (r.discovery_ordinal, r.page_id))
    failed = sorted((r for r in rows if r.state == FAILED),
                    key=lambda r: (r.failed_at or "", r.discovery_ordinal, r.page_id))
    at = parse_time(now)
    due = [r for r in rows if r.state == FETCHED and revisit_due(r, revisit, at)]
    if revisit.kind == REVISIT_INTERVAL:
        due.sort(key=lambda r: (r.last_fetched_at or "", r.discovery_ordinal, r.page_id))
    else:
        due.sort(key=lambda r: (r.discovery_ordinal, r.page_id))
    return (tuple(Choice(r.page_id, r.url, WHY_PENDING) for r in pending)
            + tuple(Choice(r.page_id, r.url, WHY_FAILED) for r in failed)
            + tuple(Choice(r.page_id, r.url, WHY_REVISIT) for r in due))


class Planner:
    """A small state machine; pure, but not a value: it advances as the run loop reports."""

    def __init__(self, ledger: Mapping[str, LedgerRow], *, revisit: Revisit = Revisit(),
                 max_fetches_per_run: int, now: str):
        if max_fetches_per_run < 1:
            raise ValueError("max_fetches_per_run must be at least 1")
        self._queue = work_order(ledger, revisit, now)
        self._next = 0
        self._max_fetches = max_fetches_per_run
        self._in_flight: set[str] = set()
        self._done: set[str] = set()
        self.fetched = 0          # successful fetches reported (D-15)
        self.reported = 0
        self._stop: Stop | None = None

    @property
    def queue(self) -> tuple[Choice, ...]:
        return self._queue

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    @property
    def remaining(self) -> int:
        """Pages still to choose (for progress lines)."""
        return len(self._queue) - self._next

    @property
    def stop_reason(self) -> str | None:
        """The ceiling that left work undone, once the planner has stopped; else None."""
        return self._stop.budget if self._stop else None

    def next(self, exhausted: str | None = None) -> Choice | Wait | Stop:
        """The next page to fetch, WAIT, or STOP.

        `exhausted` is a ceiling the run loop found spent (max_requests, max_source_bytes,
        deadline). A ceiling is named only when work remained (D-21): the first one that
        stopped further work wins and later calls repeat it.
        """
        if exhausted is not None and exhausted not in BUDGETS:
            raise ValueError(f"{exhausted!r} is not a budget")
        if self._stop is not None:
            return self._stop
        if self._next >= len(self._queue):
            self._stop = Stop(None)
            return self._stop
        if exhausted is not None:
            self._stop = Stop(exhausted)
            return self._stop
        if self.fetched + len(self._in_flight) >= self._max_fetches:
            if self._in_flight:
                return Wait(len(self._in_flight))
            self._stop = Stop(MAX_FETCHES_PER_RUN)
            return self._stop
        choice = self._queue[self._next]
        self._next += 1
        self._in_flight.add(choice.page_id)
        return choice

    def report(self, result: PageResult) -> None:
        """The outcome of a chosen page. Only FETCHED uses up max_fetches_per_run (D-15)."""
        if result.page_id not in self._in_flight:
            raise ValueError(f"page {result.page_id!r} was not chosen or was already reported")
        self._in_flight.discard(result.page_id)
        self._done.add(result.page_id)
        self.reported += 1
        if result.outcome == FETCHED:
            self.fetched += 1
