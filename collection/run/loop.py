"""The run loop: the one place where the shell drives the core (see docs/run.md).

    registration → action plan → lock the state directory → predecessor checks
    → discovery (listings through the fetcher) → prepare (merge step 1) → planner (step 2)
    → page workers: fetch + decode (step 3) → merge + write a generation (step 4)
    → the run record

Every decision is made by a pure module (registration, discovery, planner, merge,
politeness, budgets, readers); this module moves values between them, owns the threads,
and turns run-level contradictions into refusals *before* anything is requested or
written. The clock and the transport are injected (`Shell`), so a replay on a
VirtualClock runs the very same code as a live run. Timestamps come from the fetches, not
from separate clock reads: a page's time is when its fetch ended (`FetchOutcome.completed_at`,
which a recording stores and its replay gives back), the discovery time is when the run's
first listing answer ended (explicit discovery: the run's start), and the run's start is the
one its transport reports when it has one (a replayed recording's), else the clock's wall.
"""

from __future__ import annotations

import csv
import io
import json
import os
import threading
import time
from collections import deque
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, Generator, Mapping
from urllib.parse import urlsplit

from collection.fetch import budgets as B
from collection import codes
from collection.canonical import ordered_json
from collection.fetch.clock import VirtualClock
from collection.discover.driver import EXPLICIT, DiscoveryShapeError, start as start_discovery
from collection.fetch.egress import Egress
from collection.fetch.gate import GateUnavailable, SourceHeld, source_identity
from collection.redact import redact_url, scrub
from collection.fetch.pacer import Pacer
from collection.fetch.fetcher import (ARRIVAL_MARGIN_SECONDS, FAILED as F_FAILED, FETCHED as F_FETCHED,
                                SKIPPED_ORIGIN as F_SKIPPED, Fetcher, FetchSpec)
from collection.run import failed_pages as FP
from collection.run.gcpause import paused_gc
from collection.merge.ledger import MergeInvalid, check_ledger_header, read_ledger, write_ledger
from collection.discover.common import ListingFailure, ListingResponse
from collection.discover.findings import discovery_warning
from collection.fetch.mediatypes import page_accepted
from collection.merge.engine import merge, prepare
from collection.recipe.model import Source
from collection.merge.outcomes import FAILED, FETCHED, SKIPPED_ORIGIN, DiscoveryOutcome, PageResult, rfc3339
from collection.merge.planner import Choice, Planner, Revisit, Stop, Wait
from collection.fetch.politeness import PER_ORIGIN_IN_FLIGHT, WORKER_CAP, Politeness
from collection.readers.base import DecodeFailure, Pin, decode
from collection.recipe.refusal import Refusal, RefusedError
from collection.recipe.registration import register_bytes
from collection.merge.relation import check_relation_header, scan_relation
from collection.store.groupsync import Committer, Early, drive
from collection.store.generations import (FILES as GENERATION_FILES, LEDGER, RELATION, RUN_RECORD, StateDamaged,
                                         StateLocked, StateStore)
from collection.merge.states import DEADLINE
from collection.fetch.transport import DEFAULT_TOKEN, Transport, header_value

RECORD_VERSION = 1
_IDLE_POLL_SECONDS = 0.05     # a worker with nothing to take looks again this much later
_INLINE_POLL_SECONDS = 1.0    # a dataset source's thread looks again this much later for its workers
_LOOKAHEAD_PER_WORKER = 4     # choices pulled ahead so workers can pick a ready host


class RunUsageError(ValueError):
    """The command line or the files it names cannot start a run (exit 2)."""


# --- what the caller injects --------------------------------------------------------------

@dataclass
class Shell:
    """The I/O a run uses. `transport_for(run_number)` builds the transport once the state
    directory says which run of it this is (a replay fixture may answer per run);
    `egress_for(source)` the egress checker (a replay maps every allowed host, so no name
    is ever resolved)."""

    clock: Any
    transport_for: Callable[[int], Transport]
    egress_for: Callable[[Source], Egress] = lambda source: Egress()
    token: str = DEFAULT_TOKEN
    # The politeness gate shared with other processes (collection.fetch.gate); None: the
    # in-process scheduler alone (replays, --gate none, tests that build a Shell).
    gate: Any = None
    # Where a warning an operator must see goes (a hold: collection.fetch.holds), off a
    # terminal too; None: stderr. `--log-json` silences it (the JSON event says it instead).
    warn: Callable[[str], None] | None = None

    @property
    def virtual(self) -> bool:
        return isinstance(self.clock, VirtualClock)


@dataclass(frozen=True)
class RunSettings:
    state_dir: str
    resync: bool = False
    deadline_seconds: float | None = None     # D-60: the operator's, else none
    keep: int = 3
    plan: Mapping[str, Any] | None = None     # an action-plan document (D-61)


@dataclass
class SharedRun:
    """What the sources of one dataset run share: one transport (one connection pool per
    origin) and one pacer (one scheduler, one connection cap per origin, one gate).
    `sharers`: host -> how many of the dataset's sources may fetch from it (their
    allowed_origins), so each takes its share of the host's slots (`_worker_count`)."""

    transport: Transport
    pacer: Pacer
    sharers: Mapping[str, int] = field(default_factory=dict)
    # Every source's generation is written by one committer thread, in rounds that share
    # their syncs (collection/store/groupsync.py). None: each source writes its own.
    committer: Committer | None = None
    # The dataset's name: part of what identifies each source to the fleet's source lock.
    dataset: str | None = None


class GateFault(RefusedError):
    """GATE_UNAVAILABLE once the run had begun (issue 24 point 2): `requests` the requests made
    before the fault (the run record's shape), `record` the run record of the generation written
    with the pages fetched before it (None: nothing was fetched, nothing was written)."""

    def __init__(self, refusal: Refusal, requests: dict, record: dict | None = None):
        super().__init__(refusal)
        self.requests = requests
        self.record = record


def _request_counts(counts: B.Counts) -> dict:
    return {"listing": counts.listing, "page": counts.page, "redirect": counts.redirect, "retry": counts.retry,
            "range": counts.range, "robots": counts.robots, "total": counts.charged}


def gate_refusal(exc: GateUnavailable | str, gate, counts: B.Counts | None = None,
                 record: dict | None = None) -> RefusedError:
    """GATE_UNAVAILABLE. Before the first request (`counts` None) nothing was requested; once
    the run had begun the message says how many requests were made and whether a generation
    was written (`record`: the pages fetched before the fault were)."""
    # scrub: the gate's text and the error's may come from outside (issue 24 point 1)
    where = getattr(gate, "description", None) or redact_url(str(gate))
    text = f"the politeness gate {where} cannot be used: {exc}"
    rule = "the promise to an origin holds across runs"
    if counts is None:
        return RefusedError(Refusal("GATE_UNAVAILABLE", "", scrub(text + "; nothing was requested and the previous "
                                                                  "generation is unchanged"), rule))
    made = counts.charged + counts.robots
    text += (f"; {made} request{' was' if made == 1 else 's were'} made before it failed ({counts.listing} listing, "
             f"{counts.page} page, {counts.robots} robots.txt)")
    if record is None:
        text += "; no page was fetched, so nothing was written and the previous generation is unchanged"
    else:
        cov = record["coverage"]
        text += (f"; generation {record['generation']} was written with the {cov['fetched_this_run']} pages fetched "
                 f"and {cov['failed_this_run']} failed before the fault, {cov['pending']} pages stay pending; "
                 "run again once the gate works")
    return GateFault(Refusal("GATE_UNAVAILABLE", "", scrub(text), rule), _request_counts(counts), record)


def source_held_refusal(exc: SourceHeld) -> RefusedError:
    return RefusedError(Refusal("STATE_LOCKED", "", f"source {exc.name} is being run by {exc.holder} "
                                f"(its lock in the fleet gate); wait for that run to finish", "one run per source"))


# --- action plans (D-44, D-61) ----------------------------------------------------------------

PLAN_ACTIONS = ("refresh", "resync")


def load_plan(data: bytes, name: str = "the action plan") -> dict:
    """An action-plan document: a JSON object, optionally {"action": "refresh"|"resync"}.

    Raises RunUsageError when it is not one; a `schedule` member is *not* a usage error
    but a run-level refusal (`plan_refusal`), because the plan is well formed and asks for
    something a collection does not do."""
    try:
        plan = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise RunUsageError(f"{name} is not JSON: {exc}") from None
    except RecursionError:
        raise RunUsageError(f"JSON_TOO_DEEP: {name} nests arrays or objects too deeply to read") from None
    if not isinstance(plan, dict):
        raise RunUsageError("the action plan is not a JSON object")
    action = plan.get("action", "refresh")
    if action not in PLAN_ACTIONS:
        raise RunUsageError(f"action plan action {action!r} is not one of {PLAN_ACTIONS}")
    return plan


def plan_refusal(plan: Mapping[str, Any] | None) -> Refusal | None:
    if plan is not None and "schedule" in plan:
        return Refusal("RESYNC_REQUIRED", "/schedule",
                       "the action plan carries a schedule; a collection has no scheduled refresh — "
                       "remove it and run (or run --resync) explicitly", "OPS-01..OPS-03, D-61")
    return None


# --- the recipe -------------------------------------------------------------------------------

def collection_source(data: bytes) -> Source:
    """The one collection source of a recipe, or RefusedError with registration's refusals."""
    registration = register_bytes(data)
    if not registration.registrable:
        raise RefusedError(list(registration.refusals))
    sources = [s for s in registration.sources if s.is_collection]
    if len(sources) != 1:
        raise RunUsageError(f"the recipe holds {len(sources)} collection sources; `run` takes a source "
                            "document, or a dataset holding exactly one collection source")
    return sources[0]


# --- the run ---------------------------------------------------------------------------------

@dataclass
class _Predecessor:
    ledger: dict
    relation_rows: dict
    relation_path: str | None
    run_number: int
    streaks: dict = field(default_factory=dict)    # failed pages' series, from its run.json


def _merge_invalid(exc: MergeInvalid) -> RefusedError:
    return RefusedError(exc.to_refusal())


class _Damaged(Exception):
    """The predecessor's files are damaged (not merely another run's format, REF-05/06)."""

    def __init__(self, refusal: Refusal):
        super().__init__(refusal.message)
        self.refusal = refusal


def _read_state_file(path: str, name: str, read):
    """`read(handle)` over one state file; damage comes back naming that file (D-02)."""
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            return read(handle)
    except MergeInvalid as exc:
        if exc.rule in ("REF-05", "REF-06"):
            raise _merge_invalid(exc) from None        # another format: --resync is the answer
        raise _Damaged(exc.to_refusal()) from None
    except UnicodeDecodeError as exc:
        raise _Damaged(Refusal("COLLECTION_MERGE_INVALID", "", f"{name}: not UTF-8 ({exc})", "D-02")) from None
    except csv.Error as exc:
        raise _Damaged(Refusal("COLLECTION_MERGE_INVALID", "", f"{name}: not readable CSV ({exc})", "D-02")) from None


def _load_predecessor(store: StateStore, current: str, columns: tuple[str, ...], run_number: int) -> _Predecessor:
    ledger_path, relation_path = os.path.join(current, LEDGER), os.path.join(current, RELATION)

    def ledger_of(handle):
        problem = check_ledger_header(handle)
        if problem is not None:
            raise problem
        handle.seek(0)
        with paused_gc():
            return read_ledger(handle)

    def rows_of(handle):
        problem = check_relation_header(handle, columns)
        if problem is not None:
            raise problem
        handle.seek(0)
        with paused_gc():
            return scan_relation(handle, columns)

    ledger = _read_state_file(ledger_path, LEDGER, ledger_of)
    rows = _read_state_file(relation_path, RELATION, rows_of)
    try:
        # the relation must not hold pages its ledger does not know (MERGE-01): prepare
        # checks that, so ask it now with an empty discovery rather than after the listings
        prepare(ledger, DiscoveryOutcome((), 0, True, None, "explicit"), rows, now=rfc3339(0),
                max_pages=len(ledger) or 1)
    except MergeInvalid as exc:
        raise _Damaged(exc.to_refusal()) from None
    return _Predecessor(ledger, rows, relation_path, run_number)


def _read_predecessor(store: StateStore, columns: tuple[str, ...], resync: bool, log) -> _Predecessor:
    """The predecessor's ledger and row counts, every check done before any request.

    A damaged state directory (StateDamaged: the pointer, a missing or irregular file,
    run.json; or damaged ledger/relation contents) refuses a refresh, naming the file. A
    resync reads the predecessor all the same, and sets a damaged one aside (never
    deleting it) so that a run can always get going again."""
    try:
        current = store.check()
        if current is None:
            return _Predecessor({}, {}, None, store.next_number() - 1)
        previous_record = store.read_record()
        run_number = previous_record["run_number"]
        predecessor = _load_predecessor(store, current, columns, run_number)
        predecessor.streaks = FP.streaks_of(previous_record)
    except (StateDamaged, _Damaged) as exc:
        refusal = exc.to_refusal() if isinstance(exc, StateDamaged) else exc.refusal
        if not resync:
            raise RefusedError(refusal) from None
        run_number = store.next_number() - 1
        moved = store.set_aside(exc)
        log("state_set_aside", problem=refusal.message, moved_to=moved)
        return _Predecessor({}, {}, None, run_number)
    except RefusedError:
        if not resync:
            raise
        return _Predecessor({}, {}, None, run_number)    # another format: a resync starts afresh
    if resync:
        return _Predecessor({}, {}, None, run_number)
    return predecessor


def _discover(source: Source, fetcher: Fetcher, log) -> tuple[DiscoveryOutcome, float | None]:
    """Discovery's state machine driven with listing fetches (docs/discovery.md); with it,
    when the first listing fetch ended (None when discovery requested nothing)."""
    config = source.collection.discovery
    pages = source.collection.pages
    state = start_discovery(config, pages.allowed_origins, max_pages=pages.max_pages)
    first_at: float | None = None
    while (request := state.next_request()) is not None:
        out = fetcher.fetch(FetchSpec(request.url, B.LISTING, request.accept))
        if first_at is None:
            first_at = out.completed_at
        if out.outcome == F_FETCHED:
            result = ListingResponse(request.url, out.status, out.headers, out.body or b"",
                                     requests=out.requests, final_url=out.final_url)
        elif out.outcome == F_FAILED and out.status is not None and 400 <= out.status < 500 and out.body is not None:
            # discovery decides from the body whether a 4xx is "past the last page" (WordPress)
            result = ListingResponse(request.url, out.status, out.headers, out.body, requests=out.requests,
                                     final_url=out.final_url)
        elif out.outcome == F_FAILED or out.outcome == F_SKIPPED:
            result = ListingFailure(request.url, out.failure_code or out.outcome, out.requests)
        else:
            # A ceiling (limits.max_requests, discovery.max_requests, the deadline) ended the
            # listing: discovery stops incomplete with no failure named (D-21).
            result = ListingFailure(request.url, "max_requests", out.requests)
        log("listing", url=request.url, outcome=out.outcome, status=out.status,
            code=out.failure_code or out.stopped_by)
        state = state.feed(result)     # DiscoveryShapeError propagates: COLLECTION_MERGE_INVALID
    return state.outcome(), first_at


class _Dispatcher:
    """Hands chosen pages to workers, host by host, under the politeness scheduler.

    The planner fixes *which* pages and in what order (pure); the dispatcher only pulls a
    few choices ahead so that a worker can take a page of whichever host the scheduler can
    serve soonest (`Politeness.choose`) instead of queueing behind a host that must wait.
    Per host the planner's order is kept.

    A host has at most `per_host` pages handed out and unfinished (2, or 1 when
    pages.concurrency is 1, so a one-at-a-time recipe keeps its order exactly), and hosts
    nobody is working on are preferred: a worker never sleeps a gap on a host another
    worker is already waiting for while some other host is ready. How many requests are
    in flight at once is the scheduler's capacity (min(concurrency, 25), D-09), enforced
    where the request is written; workers beyond it only wait.
    """

    def __init__(self, planner: Planner, fetcher: Fetcher, clock, lookahead: int, per_host: int = 2):
        self.planner = planner
        self.fetcher = fetcher
        self.clock = clock
        self.lookahead = lookahead
        self.per_host = per_host
        self.claims: dict[str, int] = {}
        self.lock = threading.Lock()
        self.buffers: dict[str, deque[tuple[int, Choice]]] = {}
        self.buffered = 0
        self.serial = 0
        self.planner_done = False
        self.stopped = False
        self.results: list[PageResult] = []
        self.unfinished = 0          # chosen but stopped by a ceiling before its fetch
        self.failed = 0
        self.counts = {"fetched": 0, "failed": 0, "skipped_origin": 0}
        self.bodies = FP.BodyKeeper()   # decode failures' bodies, for `collection decode`

    def _exhausted(self, now: float) -> str | None:
        budget = self.fetcher.budget
        if budget.exhausted is None and budget.deadline_passed(now):
            with self.fetcher._lock:
                budget.record_stop(DEADLINE)       # D-19: stop choosing work at the deadline
        return budget.exhausted

    def _refill(self, exhausted: str | None) -> None:
        while not self.planner_done and self.buffered < self.lookahead:
            choice = self.planner.next(exhausted)
            if isinstance(choice, Stop):
                self.planner_done = True
                return
            if isinstance(choice, Wait):
                return
            self.serial += 1
            host = urlsplit(choice.url).hostname or ""
            self.buffers.setdefault(host, deque()).append((self.serial, choice))
            self.buffered += 1

    def take(self) -> Choice | None:
        while True:
            with self.lock:
                now = self.clock.monotonic()
                if self.fetcher.pacer.failed is not None:
                    self.stopped = True        # the gate failed: the pages not taken stay pending
                exhausted = self._exhausted(now)
                if exhausted is not None and not self.stopped:
                    self.stopped = True
                    self.planner.next(exhausted)       # lets the planner name the ceiling (D-21)
                if self.stopped:
                    return None
                self._refill(None)
                hosts = [h for h, q in self.buffers.items() if q and self.claims.get(h, 0) < self.per_host]
                if hosts:
                    idle = [h for h in hosts if not self.claims.get(h)]
                    with self.fetcher._lock:
                        pick = self.fetcher.politeness.choose(idle or hosts, now, self.fetcher.interval)
                    host = pick[0] if pick else min(hosts, key=lambda h: self.buffers[h][0][0])
                    self.buffered -= 1
                    self.claims[host] = self.claims.get(host, 0) + 1
                    return self.buffers[host].popleft()[1]
                if self.planner_done and not self.buffered:
                    return None
            # Wait: fetches in flight at max_fetches_per_run may still fail and free a slot.
            # A worker may block only in sleep_until on a virtual clock (fetch/clock.py).
            self.clock.sleep_until(self.clock.monotonic() + _IDLE_POLL_SECONDS)

    def report(self, choice: Choice, result: PageResult | None) -> None:
        with self.lock:
            host = urlsplit(choice.url).hostname or ""
            self.claims[host] -= 1
            if result is None:
                self.unfinished += 1
                return
            self.planner.report(result)
            self.results.append(result)
            self.counts[result.outcome] = self.counts.get(result.outcome, 0) + 1

    @property
    def left_undone(self) -> bool:
        return self.buffered > 0 or self.unfinished > 0 or self.planner.remaining > 0


def _fetch_page(choice: Choice, fetcher: Fetcher, pin: Pin, accepted: tuple[str, ...], clock, log=None,
                bodies: FP.BodyKeeper | None = None) -> PageResult | None:
    try:
        return _fetch_and_decode(choice, fetcher, pin, accepted, clock, bodies)
    except Exception as exc:  # noqa: BLE001 - one page's surprise must not kill its worker
        # The page fails with a code (retried next run, counted in the run record and in
        # `status`); the worker goes on with the next page.
        if log is not None:
            log("page_internal_error", page_id=choice.page_id, error=f"{type(exc).__name__}: {exc}")
        return PageResult(choice.page_id, FAILED, rfc3339(clock.wall()), failure_code="internal_error")


def _fetch_and_decode(choice: Choice, fetcher: Fetcher, pin: Pin, accepted: tuple[str, ...], clock,
                      bodies: FP.BodyKeeper | None = None) -> PageResult | None:
    out = fetcher.fetch(FetchSpec(choice.url, B.PAGE, accepted))
    at = rfc3339(out.completed_at if out.completed_at is not None else clock.wall())
    if out.outcome == F_FETCHED:
        decoded = decode(pin, out.body or b"", header_value(out.headers, "Content-Type"), out.final_url or choice.url)
        if isinstance(decoded, DecodeFailure):
            if bodies is not None:
                bodies.keep(choice.page_id, decoded.code, out.body or b"", header_value(out.headers, "Content-Type"))
            return PageResult(choice.page_id, FAILED, at, failure_code=decoded.code)
        return PageResult(choice.page_id, FETCHED, at, out.content_sha256, decoded.rows)
    if out.outcome == F_FAILED:
        return PageResult(choice.page_id, FAILED, at, failure_code=out.failure_code or "connection_error")
    if out.outcome == F_SKIPPED:
        return PageResult(choice.page_id, SKIPPED_ORIGIN, at, landed_url=out.landed_url)
    return None          # stopped by a ceiling: the page stays as it was (pending)


def _run_workers(dispatcher: _Dispatcher, count: int, fetcher: Fetcher, pin: Pin, accepted, clock,
                 progress, log, inline: bool = False) -> None:
    """`inline`: the calling thread (a source of a dataset run) works as the first worker
    rather than starting one more thread and waiting for it. On a virtual clock it is a
    participant, so it waits for the others in `sleep_until`, the only place a participant
    may block."""
    died: list[BaseException] = []

    def work(participant) -> None:
        try:
            with participant if participant is not None else nullcontext():
                while (choice := dispatcher.take()) is not None:
                    result = _fetch_page(choice, fetcher, pin, accepted, clock, log, dispatcher.bodies)
                    dispatcher.report(choice, result)
                    if progress is not None:
                        progress.tick()
                    log("page", page_id=choice.page_id, why=choice.why,
                        outcome=result.outcome if result else "stopped",
                        code=result.failure_code if result else fetcher.budget.exhausted)
        except BaseException as exc:  # noqa: BLE001 - never a traceback from a worker thread
            # The calling thread raises it once every worker has ended (INTERNAL_ERROR, or
            # the refusal it is), and the others stop taking work meanwhile.
            with dispatcher.lock:
                dispatcher.stopped = True
                died.append(exc)

    # Every participant is enrolled before any starts: a virtual clock that takes turns
    # must know all of them before it hands out the first (fetch/clock.py).
    virtual = isinstance(clock, VirtualClock)
    participants = [clock.enroll() if virtual else None for _ in range(count - (1 if inline else 0))]
    threads = [threading.Thread(target=work, args=(participant,), daemon=True, name="collection-worker")
               for participant in participants]
    for thread in threads:
        thread.start()
    if inline:
        work(None)
        while virtual and any(thread.is_alive() for thread in threads):
            # a sibling's last page may wait behind other sources' requests to its host;
            # the source's finish is noted within this much virtual time of it
            clock.sleep_until(clock.monotonic() + _INLINE_POLL_SECONDS)
    for thread in threads:
        while thread.is_alive():
            thread.join(timeout=0.5)
            if progress is not None:
                progress.tick()
    if died:
        raise died[0]


def _per_host(source: Source) -> int:
    return min(PER_ORIGIN_IN_FLIGHT, source.collection.pages.effective_concurrency)


def _lookahead(planner: Planner, workers: int) -> int:
    """Choices pulled ahead of the workers. On one host a few per worker will do; over several,
    the whole queue (the planner still holds it to max_fetches_per_run), or a source listing one
    origin's pages before another's would leave the second origin idle while the first is paced
    (bench/fleet.py: 2 origins served one after the other for a third of the run)."""
    if len({urlsplit(c.url).hostname for c in planner.queue}) > 1:
        return max(8, workers * _LOOKAHEAD_PER_WORKER, len(planner.queue))
    return max(8, workers * _LOOKAHEAD_PER_WORKER)


def _worker_count(source: Source, planner: Planner, sharers: Mapping[str, int] | None = None) -> int:
    """Threads, not requests in flight: a worker spends most of its life waiting for a
    host's gap, so one per host slot keeps every host busy; the scheduler's capacity
    still caps requests in flight at min(concurrency, 25) (D-09).

    In a dataset run one pacer holds a host to PER_ORIGIN_IN_FLIGHT for every source that
    reads it, so a host's slots are shared: `sharers[host]` sources split them, each keeping
    at least one worker per host it reads. Sixteen sources of one origin then run sixteen
    workers between them rather than thirty-two threads waiting for the same two slots
    (bench/fleet.py: the second thread of each source cost a dataset replay a fifth of its
    time, in thread starts and turns of the virtual clock, and fetched nothing sooner)."""
    per_host = _per_host(source)
    hosts = {urlsplit(c.url).hostname for c in planner.queue}
    sharers = sharers or {}
    slots = sum(max(1, -(-per_host // max(1, sharers.get(host, 1)))) for host in hosts)
    return max(1, min(WORKER_CAP, slots, len(planner.queue) or 1))


def execute(data: bytes, settings: RunSettings, shell: Shell, *, log=None, progress_factory=None) -> dict:
    """Run one collection; returns the run record. Raises RefusedError for a run-level or
    registration refusal (nothing written, nothing requested beyond what the code says),
    StateLocked for a busy state directory, RunUsageError for a recipe `run` cannot take."""
    return run_source(collection_source(data), settings, shell, log=log, progress_factory=progress_factory)


def run_source(source: Source, settings: RunSettings, shell: Shell, *, shared: SharedRun | None = None,
               log=None, progress_factory=None, join_clock: Callable[[], None] | None = None,
               leave_clock: Callable[[], None] | None = None) -> dict:
    """One source's run (`execute`'s body). With `shared` it is one source of a dataset run:
    the transport and the pacer are the dataset's, checked and closed by its caller.
    `join_clock`: called once the state directory is locked and its predecessor read, before
    the clock is read for the first time; `leave_clock`: once the run has read the clock for
    the last time, before the generation is written. A dataset source's thread takes part in
    the virtual clock only in between, so its disk work never runs in a turn that holds up
    the other sources (on a virtual clock that takes turns, a turn's disk wait is everyone's)."""
    log = log or (lambda event, **fields: None)
    wall_start = time.monotonic()
    refusal = plan_refusal(settings.plan)
    if refusal is not None:
        raise RefusedError(refusal)                       # OPS-03: before any request
    resync = settings.resync or (settings.plan or {}).get("action") == "resync"
    pin_model = source.reader
    pin = Pin.from_parameters(pin_model.family_id, pin_model.family_version, pin_model.decode_options)
    columns = tuple(pin_model.columns)
    pages = source.collection.pages
    clock = shell.clock
    gate = shell.gate
    if gate is not None and shared is None:
        try:
            gate.check()                                  # before any request
        except GateUnavailable as exc:
            raise gate_refusal(exc, gate) from None
    try:
        identity = source_identity(source.name, dataset=shared.dataset if shared is not None else None,
                                   allowed_origins=pages.allowed_origins)
        source_lock = gate.source_lock(source.name, identity) if gate is not None else nullcontext()
        with source_lock:
            return _run_locked(source, settings, shell, shared, log, progress_factory, wall_start, resync, pin,
                               columns, pages, clock, join_clock, leave_clock)
    except SourceHeld as exc:
        raise source_held_refusal(exc) from None
    except GateUnavailable as exc:
        raise gate_refusal(exc, gate) from None


def _run_locked(source, settings, shell, shared, log, progress_factory, wall_start, resync, pin, columns, pages,
                clock, join_clock=None, leave_clock=None) -> dict:
    committer = shared.committer if shared is not None else None
    with StateStore(settings.state_dir, keep=settings.keep, sync=committer.sync if committer else None) as store, \
            ExitStack() as on_exit:
        predecessor = _read_predecessor(store, columns, resync, log)
        run_number = predecessor.run_number + 1
        early = None
        if committer is not None:
            # the committer makes the generation's directory and files while this source fetches;
            # a run that ends without writing removes them (before the lock is let go)
            early = committer.early(lambda: store.begin(GENERATION_FILES))
            on_exit.callback(early.discard)
        if join_clock is not None:
            join_clock()
        transport = shared.transport if shared is not None else shell.transport_for(run_number)
        started_mono = clock.monotonic()
        # A replayed recording (or a recording) reports the run's start; else read the clock.
        started_wall = getattr(transport, "started_at", None)
        started_wall = clock.wall() if started_wall is None else started_wall
        started_at = rfc3339(started_wall)
        deadline = None if settings.deadline_seconds is None else started_mono + settings.deadline_seconds
        budget = B.Budget(source.limits.max_requests, source.collection.discovery.max_requests,
                          source.limits.max_source_bytes, deadline)
        if shared is None:
            margin = 0.0 if shell.virtual else ARRIVAL_MARGIN_SECONDS
            politeness = Politeness(pages.min_interval_seconds, pages.effective_concurrency, margin=margin)
            pacer, interval, concurrency = Pacer(politeness, shell.gate), None, None
        else:
            pacer, interval, concurrency = shared.pacer, pages.min_interval_seconds, pages.effective_concurrency
        fetcher = Fetcher(transport, shell.egress_for(source), allowed_origins=pages.allowed_origins, budget=budget,
                          politeness=pacer.politeness, clock=clock, retries=pages.retries,
                          request_timeout=pages.request_timeout_seconds, token=shell.token, pacer=pacer,
                          interval=interval, concurrency=concurrency)
        drawn: list = []           # the progress line, once there is one (a hold's line goes above it)
        if pacer.holds.notify is None:
            pacer.holds.notify = _hold_notice(log, shell.warn, drawn)
        log("run_started", source=source.name, run_number=run_number, resync=resync, state=store.directory)
        try:
            try:
                discovery, first_listing_at = _discover(source, fetcher, log)
            except DiscoveryShapeError as exc:
                raise RefusedError(Refusal(exc.code, "/collection/discovery/records/pointer",
                                           f"{exc.url}: {exc.message} (at {exc.pointer})", "REF-07, D-13")) from None
            if pacer.failed is not None:
                # the gate failed during discovery: no page was fetched; nothing is written and
                # no listing failure is blamed on the publisher
                raise gate_refusal(pacer.failed, shell.gate, budget.counts())
            if (discovery.failure is not None and not predecessor.ledger and not discovery.pages
                    and source.collection.discovery.kind != EXPLICIT):
                # REF-03, REF-04: nothing to continue from; write nothing
                raise RefusedError(Refusal(
                    "COLLECTION_DISCOVERY_FAILED", "/collection/discovery/url",
                    f"listing failed at {discovery.failure} and there is nothing to continue from"
                    + (f" ({discovery.diagnostics[-1]})" if discovery.diagnostics else ""), "REF-03, REF-04"))
            now = rfc3339(started_wall if first_listing_at is None else first_listing_at)
            with paused_gc():
                prepared = prepare(predecessor.ledger, discovery, predecessor.relation_rows, now=now,
                                   max_pages=pages.max_pages, allowed_origins=pages.allowed_origins)
            planner = Planner(prepared.ledger, revisit=Revisit(pages.revisit.kind, pages.revisit.seconds),
                              max_fetches_per_run=pages.max_fetches_per_run, now=now)
            log("discovered", discovered=len(discovery.pages), complete=discovery.complete,
                failure=discovery.failure, chosen_queue=len(planner.queue))
            workers = _worker_count(source, planner, shared.sharers if shared is not None else None)
            dispatcher = _Dispatcher(planner, fetcher, clock, _lookahead(planner, workers), per_host=_per_host(source))
            progress = progress_factory(dispatcher, fetcher, planner, pages) if progress_factory else None
            if progress is not None:
                drawn.append(progress)
            _run_workers(dispatcher, workers, fetcher, pin, page_accepted(pin.family_id), clock, progress, log,
                         inline=shared is not None)
            if progress is not None:
                progress.done()
            gate_failure = pacer.failed
            if gate_failure is not None and not dispatcher.results:
                # The gate failed before any page was fetched: nothing is written, `current`
                # stays as it was (docs/running-many-sources.md, "When the gate is down").
                raise gate_refusal(gate_failure, shell.gate, budget.counts())
            # D-21: the planner names the ceiling it stopped on; a ceiling the fetcher met
            # (requests, bytes, deadline) counts only when it left work undone
            undone = dispatcher.left_undone or not discovery.complete
            budget_exhausted = planner.stop_reason or (budget.exhausted if undone else None)
            if budget_exhausted is None and budget.exhausted == B.MAX_SOURCE_BYTES:
                # FETCH-14: reaching the byte cap ends the run with "max_source_bytes", even
                # when the page that reached it was the last one chosen (it failed on it)
                budget_exhausted = B.MAX_SOURCE_BYTES
            ended = None            # a single run reads the clock when its generation is written
            if leave_clock is not None:
                ended = (clock.wall(), clock.monotonic())
                leave_clock()
            steps = _generation_steps(store, predecessor, prepared, dispatcher, columns, source, budget,
                                      budget_exhausted, run_number, resync, started_at, started_mono, wall_start,
                                      ended, clock, shell, discovery, early, gate_failure)
            if committer is not None:
                record = committer.write(steps)     # it has left the virtual clock: it may block
            else:
                with paused_gc():
                    record = drive(steps)
        finally:
            close = getattr(transport, "close", None)
            if close is not None and shared is None:
                close()
    if gate_failure is not None:
        # Decided (issue 24 point 2): the pages fetched before the gate failed were fetched
        # politely (every start up to the fault was granted by the gate and the process's
        # own scheduler), so they are kept rather than fetched again; the pages not reached
        # stay pending. The run still exits 1 with GATE_UNAVAILABLE, so cron sees it.
        log("run_finished", complete=record["coverage"]["complete"], generation=record["generation"],
            gate_failure=gate_failure)
        raise gate_refusal(gate_failure, shell.gate, budget.counts(), record)
    log("run_finished", complete=record["coverage"]["complete"], generation=record["generation"])
    return record


def _hold_notice(log, warn, drawn: list):
    """A hold met by a worker: one line on stderr (above the progress line when there is one)
    and one `origin_held` event (issue 24 point 6)."""
    from collection.fetch.holds import line

    def notify(hold, ends: bool) -> None:
        # an origin's event, once per process: no source (a dataset's sources share the hold)
        log("origin_held", ends_origin=ends, source=None, **hold.to_json())
        text = line(hold, ends)
        if warn is not None:
            warn(text)
            for progress in drawn:
                progress.tick(force=True)
        elif drawn:
            drawn[0].warn(text)
        else:
            import sys

            sys.stderr.write(text + "\n")
            sys.stderr.flush()
    return notify


def _generation_steps(store, predecessor, prepared, dispatcher, columns, source, budget, budget_exhausted,
                      run_number, resync, started_at, started_mono, wall_start, ended, clock, shell,
                      discovery, early: Early | None = None,
                      gate_failure: str | None = None) -> Generator[str, None, dict]:
    """Write the run's generation and make it current, as steps (StateStore.commit_steps):
    yields each directory that must be on the disk before it goes on; returns the record.
    `early`: the generation the committer began while the source fetched."""
    generation = early.take() if early is not None else store.begin()
    try:
        out = generation.open_text(RELATION)
        if predecessor.relation_path is not None:
            with open(predecessor.relation_path, newline="", encoding="utf-8") as previous:
                result = merge(prepared, dispatcher.results, previous, out, reader_columns=columns,
                               max_rows=source.limits.max_rows, budget_exhausted=budget_exhausted)
        else:
            result = merge(prepared, dispatcher.results, io.StringIO(""), out, reader_columns=columns,
                           max_rows=source.limits.max_rows, budget_exhausted=budget_exhausted)
        relation_digest = generation.close_text(RELATION)
        write_ledger(result.ledger, generation.open_text(LEDGER))
        ledger_digest = generation.close_text(LEDGER)
        counts = budget.counts()
        failures = sorted((r for r in dispatcher.results if r.outcome == FAILED), key=lambda r: r.page_id)
        failing = FP.failed_pages(result.ledger, predecessor.ledger, (r.page_id for r in dispatcher.results),
                                  predecessor.streaks)
        FP.write_bodies(generation, failing, dispatcher.bodies,
                        os.path.dirname(predecessor.relation_path) if predecessor.relation_path else None)
        record = {
            "record_version": RECORD_VERSION,
            "source": source.name,
            "run_number": run_number,
            "generation": generation.name,
            "mode": "resync" if resync else "refresh",
            "started_at": started_at,
            "finished_at": rfc3339(ended[0] if ended else clock.wall()),
            "coverage": result.coverage.as_dict(),
            "truncated": result.truncated,
            "rows": result.rows_written,
            "corrections": [{"page_id": c.page_id, "previous_content_sha256": c.previous_content_sha256,
                             "content_sha256": c.content_sha256, "revision": c.revision, "at": c.at}
                            for c in result.corrections],
            "failures": {
                "by_class": {k: result.failures_by_class.get(k, 0) for k in codes.LIVENESS_CLASSES},
                "pages": [{"page_id": r.page_id, "failure_code": result.ledger[r.page_id].failure_code,
                           "failure_class": result.ledger[r.page_id].failure_class} for r in failures],
                "failed_pages": failing,
            },
            "clipped": list(result.clipped),
            "requests": {"listing": counts.listing, "page": counts.page, "redirect": counts.redirect,
                         "retry": counts.retry, "range": counts.range, "robots": counts.robots,
                         "total": counts.charged},
            "bytes": counts.bytes,
            "discovery": {"stop_reason": discovery.stop_reason, "dropped_records": discovery.dropped_records,
                          "diagnostics": list(discovery.diagnostics),
                          "warning": discovery_warning(source.collection.discovery, discovered=len(discovery.pages),
                                                       dropped=discovery.dropped_records,
                                                       first_run=not predecessor.ledger,
                                                       stop_reason=discovery.stop_reason,
                                                       children=discovery.children)},
            "clock": "virtual" if shell.virtual else "system",
            "duration_seconds": round((ended[1] if ended else clock.monotonic()) - started_mono, 3),
            "wall_seconds": round(time.monotonic() - wall_start, 3),
            "gate_wait_seconds": round(getattr(dispatcher.fetcher, "gate_wait_seconds", 0.0), 3),
            "files": {RELATION: relation_digest.as_dict(), LEDGER: ledger_digest.as_dict()},
        }
        unreachable = getattr(dispatcher.fetcher, "robots_unreachable", {})
        if unreachable:
            # D-66: origins whose robots.txt redirected outside allowed_origins (status advises)
            record["robots_unreachable"] = [{"origin": origin, "redirect": target}
                                            for origin, target in sorted(unreachable.items())]
        held = sorted(getattr(dispatcher.fetcher, "held_hosts", ()))
        if held:
            from collection.fetch.holds import utc

            # issue 24 point 6: origins whose work a hold ended; their pages stay pending
            ended = dispatcher.fetcher.pacer.holds.ended
            record["held_until"] = {f"https://{host}": utc(ended[host].until) for host in held if host in ended}
        if gate_failure is not None:
            record["gate_failure"] = {"code": "GATE_UNAVAILABLE", "message": gate_failure}
        generation.write_bytes(RUN_RECORD, (ordered_json(record) + "\n").encode("utf-8"))
        yield from store.commit_steps(generation)
    except BaseException:
        generation.abandon()
        raise
    return record


def record_json(record: Mapping[str, Any]) -> str:
    return ordered_json(record)


__all__ = ["Shell", "RunSettings", "RunUsageError", "StateLocked", "RefusedError", "execute", "load_plan",
           "plan_refusal", "collection_source", "record_json"]
