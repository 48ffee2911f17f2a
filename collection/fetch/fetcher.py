"""The fetcher: from "the run wants this address" to a verified body or a classified failure.

Shell code around pure decisions. The pure parts sit at the top of this module
(`status_decision`, `redirect_decision`, `range_plan`, `parse_content_range`; retry policy
in collection.fetch.retry, media types in collection.fetch.mediatypes); `Fetcher` strings them together with the transport, the egress check,
the budgets, the politeness scheduler, robots.txt and the clock. See docs/fetcher.md.

One logical fetch per call (D-47): its redirect hops, retries and range requests belong to
it, and every one of them is an HTTP request reserved against the budget before it is sent
(FETCH-05..08, D-05, D-07) and paced by the politeness scheduler (D-10). Thread-safe: the
run loop calls `fetch` from up to min(concurrency, 25) worker threads; the budget and the
scheduler are plain objects guarded here by one lock held only for their calls.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from typing import Callable, Iterable
from urllib.parse import urlsplit

from collection.fetch import budgets as B
from collection import codes
from collection import urls
from collection.fetch.mediatypes import accept_header, accepts, media_type
from collection.fetch.retry import NETWORK_ERROR, TIMEOUT, RetryPolicy, parse_retry_after
from collection.fetch.egress import Egress, EgressRefused
from collection.fetch.gate import LEASE_MARGIN_SECONDS, GateUnavailable, Lease, holder_description
from collection.fetch.holds import (CRAWL_DELAY, HELD, HOLD_NOTICE_SECONDS, HOLD_POLL_SECONDS, HOLD_WAIT_SECONDS,
                                    RETRY_AFTER, _TOLERANCE_SECONDS, hold_of, setter)
from collection.fetch.pacer import GATE_UNAVAILABLE, Pacer
from collection.fetch.politeness import FLOOR_SECONDS, NEVER, Politeness, Ticket
from collection.fetch.transport import (
    DEFAULT_TOKEN,
    Request,
    Response,
    Transport,
    TransportError,
    header_value,
)

FETCHED = "fetched"
FAILED = "failed"
SKIPPED_ORIGIN = "skipped_origin"
STOPPED = "stopped"          # a budget or the run deadline refused the next request: not a failure

MAX_REDIRECTS = 5                        # D-25
RANGE_THRESHOLD = 4 * 1024 * 1024        # bodies above this are fetched in ranges (FETCH-25)
RANGE_SIZE = 4 * 1024 * 1024             # bytes per range request
MAX_BODY_BYTES = 32 * 1024 * 1024        # one body held in memory at most (decoded)
READ_SIZE = 64 * 1024
ROBOTS_PARSE_BYTES = 512 * 1024          # D-58: parse at least 500 KiB
# Give Politeness(margin=ARRIVAL_MARGIN_SECONDS) on the real clock. The next start to a host
# counts from when the previous request's bytes left (Fetcher._writing), so on one machine two
# arrivals are at least the gap apart by construction (bench/floor.py: 10,000 requests, kernel
# receive stamps); across a network, a request's transit time varies from one request to the
# next, and the margin absorbs that jitter.
ARRIVAL_MARGIN_SECONDS = 0.005
# A listing's 4xx body is kept up to this size (an API's error document, D-03/D-13).
ERROR_BODY_BYTES = 64 * 1024
_POLL_SECONDS = 0.05                     # how often a worker looks again while a host's cap is full

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


# --- values -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class FetchSpec:
    """What the run wants: a canonical address, listing or page, and the media types it takes."""

    url: str
    kind: str = B.PAGE                  # budgets.LISTING or budgets.PAGE
    accepted: tuple[str, ...] = ()      # lowercase type/subtype; empty accepts anything


@dataclass(frozen=True)
class FetchOutcome:
    url: str
    outcome: str                                    # FETCHED, FAILED, SKIPPED_ORIGIN or STOPPED
    final_url: str | None = None                    # where the body came from after redirects
    status: int | None = None
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None                       # content-encoding removed (D-30)
    content_sha256: str | None = None               # lowercase hex of `body` (D-30)
    media_type: str | None = None
    failure_code: str | None = None                 # a page failure code of collection.codes
    liveness: str | None = None                     # D-62
    landed_url: str | None = None                   # SKIPPED_ORIGIN after a redirect (URL-15)
    stopped_by: str | None = None                   # STOPPED: the ceiling (budgets names)
    detail: str = ""                                # human text; tests never assert on it
    requests: int = 0                               # HTTP requests charged to this fetch
    retries: int = 0
    redirects: int = 0
    ranges: int = 0
    # When the fetch ended (wall clock, epoch seconds): the last exchange's `completed_at`
    # when the transport reports one (a recording, a replay of one), else the clock's wall
    # time when the outcome was made. The run loop timestamps the page with it.
    completed_at: float | None = None


# --- pure decisions -----------------------------------------------------------------------

def status_decision(status: int) -> str:
    """'ok', 'redirect', 'retry' (D-08: 429 and 5xx) or 'fail' for a response status."""
    if 200 <= status < 300:
        return "ok"
    if status in REDIRECT_STATUSES:
        return "redirect"
    if status == 429 or 500 <= status < 600:
        return "retry"
    return "fail"


def redirect_decision(current: str, location: str | None, allowed: Iterable[str],
                      seen: Iterable[str], hops_taken: int) -> tuple[str, str | None, str]:
    """Where a redirect hop goes: ('follow', url, ''), ('skipped_origin', landed, why) or
    ('too_many_redirects', url_or_None, why). `hops_taken` counts hops already followed."""
    if not location:
        return "fail_no_location", None, "redirect without a Location"
    try:
        target = urls.canonicalise(location, current)
    except urls.UrlError as exc:
        return "skipped_origin", location, f"unusable Location: {exc}"
    reason = urls.unreachable_reason(target, frozenset(allowed))
    if reason is not None:
        return "skipped_origin", target, reason       # URL-13, URL-15: never requested
    if target in set(seen):
        return "too_many_redirects", target, "redirect loop"
    if hops_taken >= MAX_REDIRECTS:
        return "too_many_redirects", target, f"more than {MAX_REDIRECTS} redirects"
    return "follow", target, ""


@dataclass(frozen=True)
class RangePlan:
    total: int
    validator: str                  # If-Range value: a strong ETag, else Last-Modified


def range_plan(status: int, headers: tuple[tuple[str, str], ...], threshold: int) -> RangePlan | None:
    """Whether to fetch the rest of a 200 body in ranges (FETCH-25, D-07), and how.

    Only for an identity-encoded body whose length is known and above `threshold`, from an
    origin advertising `Accept-Ranges: bytes`, with a validator for If-Range — without one a
    changed object could be stitched from two versions, so the body is read in one go."""
    if status != 200:
        return None
    if "bytes" not in (header_value(headers, "Accept-Ranges") or "").lower():
        return None
    encoding = (header_value(headers, "Content-Encoding") or "identity").strip().lower()
    if encoding not in ("", "identity"):
        return None
    length = header_value(headers, "Content-Length")
    if length is None or not length.strip().isdigit():
        return None
    total = int(length.strip())
    if total <= threshold:
        return None
    etag = header_value(headers, "ETag")
    if etag and not etag.strip().startswith("W/"):
        return RangePlan(total, etag.strip())
    modified = header_value(headers, "Last-Modified")
    if modified:
        return RangePlan(total, modified.strip())
    return None


def parse_content_range(value: str | None) -> tuple[int, int, int] | None:
    """`bytes first-last/total` → (first, last, total), or None."""
    if not value or not value.strip().lower().startswith("bytes "):
        return None
    spec = value.strip()[6:]
    span, _, total = spec.partition("/")
    first, _, last = span.partition("-")
    try:
        return int(first), int(last), int(total)
    except ValueError:
        return None


# What the transport asks for (Accept-Encoding: gzip, deflate) and so can decode (D-30).
DECODED_ENCODINGS = frozenset({"identity", "gzip", "x-gzip", "deflate"})


def unrequested_body(status: int, headers: tuple[tuple[str, str], ...], ranged: bool) -> tuple[str, str] | None:
    """(code, why) when a 2xx body is not the page we asked for, else None: a content
    encoding we did not ask for (its digest and rows would be taken over compressed bytes),
    or a `206 Partial Content` answering a request that named no range."""
    encoding = header_value(headers, "Content-Encoding")
    if encoding is not None:
        tokens = [t.strip().lower() for t in encoding.split(",") if t.strip()]
        unknown = [t for t in tokens if t not in DECODED_ENCODINGS]
        if unknown:
            return "content_encoding_refused", f"content encoding {', '.join(unknown)!r} was not asked for"
    if status == 206 and not ranged:
        return "partial_content_refused", "206 Partial Content to a request for the whole page"
    return None


def _failed(url: str, code: str, detail: str, **kw) -> FetchOutcome:
    return FetchOutcome(url, FAILED, failure_code=code, liveness=codes.liveness(code), detail=detail, **kw)


# --- the shell ------------------------------------------------------------------------------

class _Stop(Exception):
    def __init__(self, ceiling: str):
        super().__init__(ceiling)
        self.ceiling = ceiling


class _Fail(Exception):
    def __init__(self, code: str, detail: str, status: int | None = None, retry_kind: str | None = None):
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.status = status
        self.retry_kind = retry_kind     # retry.TIMEOUT / NETWORK_ERROR when D-08 may retry it


@dataclass
class _Tally:
    requests: int = 0
    retries: int = 0
    redirects: int = 0
    ranges: int = 0
    completed_at: float | None = None     # the last exchange's end, as its transport reported it
    held: list = field(default_factory=list)   # responses not yet closed (released on a surprise)
    answer: tuple | None = None           # robots.txt: (URL, status) of the answer read (a hold's setter)

    def ended(self, at: float | None) -> None:
        if at is not None:
            self.completed_at = at

    def release_all(self) -> None:
        for response in list(self.held):
            try:
                response.close()
            except Exception:  # noqa: BLE001 - giving back the slot matters more than the socket
                pass


@dataclass
class _RobotsEntry:
    lock: threading.Lock = field(default_factory=threading.Lock)
    rules: object | None = None
    completed_at: float | None = None     # when the robots.txt answer ended (if reported)
    unreachable: str | None = None        # D-66: where it redirected outside the allowlist


class Fetcher:
    """Fetches addresses for one run. Construct one per run and share it between workers."""

    def __init__(self, transport: Transport, egress: Egress, *, allowed_origins: Iterable[str],
                 budget: B.Budget, politeness: Politeness, clock, retries: int = 2,
                 request_timeout: float = 30.0, token: str = DEFAULT_TOKEN, robots: bool = True,
                 range_threshold: int = RANGE_THRESHOLD, range_size: int = RANGE_SIZE,
                 max_body_bytes: int = MAX_BODY_BYTES, pacer: Pacer | None = None,
                 interval: float | None = None, concurrency: int | None = None):
        """`pacer`: the scheduler, lock and gate shared with other fetchers of this process (a
        dataset run; by default this fetcher's own around `politeness`). `interval`: this
        source's min_interval_seconds when the shared scheduler serves several sources;
        `concurrency`: this source's own cap on requests in flight within a shared one."""
        self.transport = transport
        self.egress = egress
        self.allowed = frozenset(allowed_origins)
        self.budget = budget
        self.pacer = pacer if pacer is not None else Pacer(politeness)
        self.politeness = self.pacer.politeness
        self.interval = interval
        self.concurrency = concurrency
        self._active = 0                       # this fetcher's requests admitted and not finished
        # time spent asleep because the shared gate said "not yet" (the run record, --metrics-file)
        self.gate_wait_seconds = 0.0
        self.clock = clock
        self.retries = int(retries)
        self.request_timeout = float(request_timeout)
        self.token = token
        self.robots_enabled = robots
        self.range_threshold = int(range_threshold)
        self.range_size = int(range_size)
        self.max_body_bytes = int(max_body_bytes)
        self._lock = self.pacer.lock           # guards budget, politeness and the pacer's counts
        # (origin, allowlist) -> its robots.txt answer, shared with the pacer's other fetchers
        self._robots: dict[tuple[str, frozenset], _RobotsEntry] = self.pacer.robots
        # origin → where its robots.txt redirected outside allowed_origins (D-66)
        self.robots_unreachable: dict[str, str] = {}
        self._robots_lock = self.pacer.robots_lock
        # hosts whose work this fetcher ended for a hold (the run record's `held_until`)
        self.held_hosts: set[str] = set()

    # --- public ---------------------------------------------------------------------------
    def fetch(self, spec: FetchSpec) -> FetchOutcome:
        """One logical fetch of `spec.url` (D-47). Never raises for anything the origin does."""
        tally = _Tally()
        try:
            outcome = self._fetch(spec, tally)
        except _Stop as stop:
            outcome = FetchOutcome(spec.url, STOPPED, stopped_by=stop.ceiling,
                                   detail=f"stopped: {stop.ceiling}")
        except _Fail as fail:
            outcome = _failed(spec.url, fail.code, fail.detail, status=fail.status)
        except Exception as exc:  # noqa: BLE001 - one page's surprise must not kill its worker
            # Whatever went wrong is this page's failure (retried next run, counted in the
            # run record), never a dead worker thread and a page left pending for ever —
            # unless the gate failed on the way: then the page is not the publisher's fault
            # and stays pending (issue 24 point 2).
            tally.release_all()
            if self.pacer.failed is not None:
                outcome = FetchOutcome(spec.url, STOPPED, stopped_by=GATE_UNAVAILABLE, detail="stopped: gate fault")
            else:
                outcome = _failed(spec.url, "internal_error", f"{type(exc).__name__}: {exc}")
        at = tally.completed_at if tally.completed_at is not None else self.clock.wall()
        return _with_tally(outcome, tally, at)

    def robots_rules(self, origin: str):
        """The robots.txt rules of `origin` for this run (fetched once, D-58)."""
        with self._robots_lock:
            entry = self._robots.setdefault((origin, self.allowed), _RobotsEntry())
        # Wait for a sibling fetching this robots.txt in sleep_until, not on the lock: the
        # sibling may itself be sleeping for its politeness turn, and on a virtual clock a
        # thread blocked on a lock held by a sleeper holds time still for ever (clock.py).
        # In a dataset run the sibling may wait behind other sources' requests for seconds,
        # and its page cannot start sooner than a floor after the robots.txt request anyway.
        poll = FLOOR_SECONDS if self.pacer.fair else _POLL_SECONDS
        while not entry.lock.acquire(blocking=False):
            self.clock.sleep_until(self.clock.monotonic() + poll)
        try:
            if entry.rules is None:
                robots_tally = _Tally()
                try:
                    entry.rules = self._fetch_robots(origin, robots_tally)
                except _Stop:
                    raise                  # a ceiling, not robots.txt's answer: asked again later
                except Exception:  # noqa: BLE001 - robots.txt that cannot be read: disallow all (D-58)
                    robots_tally.release_all()
                    if self.pacer.failed is not None:
                        # the gate failed, not robots.txt: no verdict for this origin, and
                        # none of its pages is refused in the publisher's name
                        raise _Stop(GATE_UNAVAILABLE) from None
                    from collection.fetch import robots as R
                    entry.rules = R.DISALLOW_ALL
                entry.completed_at = robots_tally.completed_at
                entry.unreachable = self.robots_unreachable.get(origin)
                delay = entry.rules.crawl_delay(self.token)
                host = urlsplit(origin).hostname or ""
                with self._lock:
                    self.politeness.set_crawl_delay(host, delay)
                    self.pacer.gate_quietly("set_crawl_delay", host, delay)
                    if delay:
                        url, status = robots_tally.answer or (f"{origin}/robots.txt", None)
                        self._note_setter(host, CRAWL_DELAY, delay, url, status)
            elif entry.unreachable is not None:
                self.robots_unreachable[origin] = entry.unreachable    # another source's answer
            return entry.rules
        finally:
            entry.lock.release()

    # --- the logical fetch ------------------------------------------------------------------
    def _fetch(self, spec: FetchSpec, tally: _Tally) -> FetchOutcome:
        url = spec.url
        reason = urls.unreachable_reason(url, self.allowed)
        if reason is not None:
            return FetchOutcome(url, SKIPPED_ORIGIN, failure_code="skipped_origin",
                                liveness=codes.liveness("skipped_origin"), detail=reason)
        current, seen, cause = url, [url], B.INITIAL
        while True:
            if self.robots_enabled and not self._robots_allow(current):
                # refused by the robots.txt answer: the fetch ends when that answer did
                entry = self._robots.get((urls.origin_of(current), self.allowed))
                tally.ended(entry.completed_at if entry is not None else None)
                origin = urls.origin_of(current)
                if origin in self.robots_unreachable:
                    raise _Fail("robots_disallowed",
                                f"robots.txt of {origin} redirects to {self.robots_unreachable[origin]}, outside "
                                "allowed_origins, so it counts as unreachable: disallow all (D-66); add that "
                                "origin to allowed_origins to follow it")
                raise _Fail("robots_disallowed", f"robots.txt disallows {current} for {self.token}")
            result = self._attempts(spec, current, cause, tally)
            if isinstance(result, FetchOutcome):
                return result
            response, final_status = result, result.status
            decision = status_decision(final_status)
            if decision == "redirect":
                location = response.header("Location")
                response.close()
                verdict, target, why = redirect_decision(current, location, self.allowed, seen, tally.redirects)
                if verdict == "follow":
                    current, cause = target, B.REDIRECT
                    seen.append(target)
                    continue
                if verdict == "skipped_origin":
                    return FetchOutcome(url, SKIPPED_ORIGIN, status=final_status,
                                        failure_code="skipped_origin",
                                        liveness=codes.liveness("skipped_origin"),
                                        landed_url=target, detail=why)
                if verdict == "too_many_redirects":
                    raise _Fail("too_many_redirects", why, final_status)
                raise _Fail(codes.http_status_code(final_status), why, final_status)
            if spec.kind == B.LISTING and 400 <= final_status < 500:
                return self._error_body(spec, url, response)
            response.close()
            raise _Fail(codes.http_status_code(final_status), f"HTTP {final_status}", final_status)

    def _error_body(self, spec: FetchSpec, url: str, response: "_Held") -> FetchOutcome:
        """A listing's 4xx keeps a small body: discovery reads it to recognise an API's
        "past the last page" answer (WordPress's 400 rest_post_invalid_page_number), which
        is the natural end of a listing rather than a failure (docs/discovery.md)."""
        status, headers = response.status, response.headers
        parts: list[bytes] = []
        if unrequested_body(200, headers, ranged=True) is not None:
            response.close()
            code = codes.http_status_code(status)
            return FetchOutcome(spec.url, FAILED, final_url=url, status=status, headers=headers,
                                failure_code=code, liveness=codes.liveness(code), detail=f"HTTP {status}")
        try:
            self._read(response, hashlib.sha256(), parts, None, charge=True, cap=ERROR_BODY_BYTES, retryable=False)
        except _Fail as fail:
            if fail.code != "body_too_large":
                raise
            parts = []          # larger than any API error document: not worth keeping
        code = codes.http_status_code(status)
        return FetchOutcome(spec.url, FAILED, final_url=url, status=status, headers=headers, body=b"".join(parts),
                            media_type=media_type(response.header("Content-Type")), failure_code=code,
                            liveness=codes.liveness(code), detail=f"HTTP {status}")

    def _attempts(self, spec: FetchSpec, url: str, cause: str, tally: _Tally):
        """Send `url` (and read its body when it is a 2xx) until it answers something other
        than a retryable failure (D-08). Returns a FetchOutcome for a body, or the held
        response (body unread) of a redirect or a final non-2xx status; raises _Fail / _Stop."""
        policy = RetryPolicy(self.retries, self.politeness.gap(urlsplit(url).hostname or "", self.interval))
        retries_done = 0
        while True:
            status, error, retry_after, failure = None, None, None, None
            try:
                response = self._send(spec.kind, url, cause if retries_done == 0 else B.RETRY,
                                      tally, (("Accept", accept_header(spec.accepted) or "*/*"),))
                status = response.status
                decision = status_decision(status)
                if decision == "ok":
                    return self._body(spec, url, response, tally)
                if decision != "retry":
                    return response
                retry_after = parse_retry_after(response.header("Retry-After"), self.clock.wall())
                response.close()
                failure = _Fail(codes.http_status_code(status), f"HTTP {status}", status)
            except TransportError as exc:
                error = _retry_kind(exc)
                failure = _Fail(exc.code, str(exc))
            except _Fail as exc:
                if exc.retry_kind is None:
                    raise
                status, error, failure = None, exc.retry_kind, exc
            verdict = policy.decide(retries_done, status, error, retry_after)
            if not verdict.retry or verdict.delay > HOLD_WAIT_SECONDS:
                # a retry further off than a run waits for a hold (issue 24 point 6): this
                # answer is the page's, and the origin's hold ends its other pages' work
                raise failure
            retries_done += 1
            self._sleep_for(verdict.delay)

    def _sleep_for(self, seconds: float) -> None:
        until = self.clock.monotonic() + seconds
        deadline = self.budget.deadline
        if deadline is not None and until >= deadline:
            with self._lock:
                self.budget.record_stop(B.DEADLINE)
            raise _Stop(B.DEADLINE)
        self.clock.sleep_until(until)

    # --- one HTTP request ---------------------------------------------------------------------
    def _send(self, kind: str | None, url: str, cause: str, tally: _Tally,
              headers: tuple[tuple[str, str], ...]) -> "_Held":
        """Reserve (unless robots), wait for politeness, send; the response holds its ticket.

        `kind` None means robots.txt: counted, never charged (D-58)."""
        host = urlsplit(url).hostname or ""
        try:
            target = self.egress.check_url(url, self.allowed | {urls.origin_of(url)} if kind is None else self.allowed)
        except EgressRefused as exc:
            if exc.code == "skipped_origin":
                raise _Fail("skipped_origin", str(exc)) from None
            raise TransportError(exc.code, str(exc), retryable=exc.code == "connection_error") from None
        reservation = None
        if kind is not None:
            with self._lock:
                reservation = self.budget.try_reserve(kind, cause, self.clock.monotonic())
            if isinstance(reservation, B.Denied):
                raise _Stop(reservation.ceiling)
        try:
            slot = self._wait_ready(host)
        except _Stop:
            if reservation is not None:
                with self._lock:
                    self.budget.release(reservation)
            raise

        # D-11: a total wall-clock limit per attempt, head included (the transport enforces
        # it whatever the server trickles). The run's deadline stops choosing work (D-19);
        # an attempt already in flight ends by this limit, so a run ends at most one
        # request_timeout_seconds after its deadline (conformance case fetch-deadline).
        deadline = self.transport.monotonic() + self.request_timeout
        try:
            response = self.transport.send(Request(url, headers, target), deadline, lambda: self._writing(slot))
        except TransportError as exc:
            self._commit(kind, reservation, tally, cause)
            self._finish(slot, None)
            tally.ended(getattr(exc, "completed_at", None))
            raise
        except _Stop:
            with self._lock:
                if reservation is not None:
                    self.budget.release(reservation)
            self._finish(slot, None)
            raise
        except BaseException:
            self._commit(kind, reservation, tally, cause)
            self._finish(slot, None)
            raise
        self._commit(kind, reservation, tally, cause)
        retry_after = None
        if response.status in (429, 503):
            retry_after = parse_retry_after(response.header("Retry-After"), self.clock.wall())
        return _Held(response, lambda: self._finish(slot, retry_after, (url, response.status)), tally)

    def _commit(self, kind, reservation, tally: _Tally, cause: str) -> None:
        with self._lock:
            if reservation is None:
                self.budget.count_robots()
                return
            self.budget.commit(reservation)
        tally.requests += 1
        if cause == B.RETRY:
            tally.retries += 1
        elif cause == B.REDIRECT:
            tally.redirects += 1
        elif cause == B.RANGE:
            tally.ranges += 1

    def _wait_ready(self, host: str) -> "_Slot":
        """Sleep until `host` may start a request now, then take its politeness slot (a
        Ticket: the host's start and one of its PER_ORIGIN_IN_FLIGHT places) and, with a
        shared gate, a lease. Before all that: politeness lets the host start, none of its
        admitted requests is still unwritten, fewer than PER_ORIGIN_IN_FLIGHT of them are in
        flight (and, with a fair pacer, this worker is the first in line for the host).

        The slot is taken before the connection is opened, so a worker waiting for its turn
        holds no connection, and a second one is opened only when two requests really are in
        flight. Its start is stamped again when the request is written (`_writing`), and
        the host waits for that: a connection slow to set up (a TLS
        handshake, a busy machine) delays the next start with it, never brings the two
        arrivals closer than the gap. A request sleeping for its turn never holds a place
        in the transport's per-host pool either, which a virtual clock could not see
        (clock.py): time would stand still until the pool gave up."""
        pacer = self.pacer
        token = object()
        with self._lock:
            pacer.join(host, token)
        admitted = False
        try:
            while True:
                now = self.clock.monotonic()
                gate_said_wait = False
                with self._lock:
                    if self.budget.deadline_passed(now):
                        self.budget.record_stop(B.DEADLINE)
                        raise _Stop(B.DEADLINE)
                    if pacer.failed is not None:
                        raise _Stop(GATE_UNAVAILABLE)     # not a budget: the run loop reads pacer.failed
                    if host in pacer.holds.ended:
                        self.held_hosts.add(host)          # its work ended for a hold this run
                        raise _Stop(HELD)
                    ready = self.politeness.ready_at(host, now, self.interval)
                    timed = ready                          # what the time rules alone ask
                    if pacer.unwritten.get(host, 0) or (
                            self.concurrency is not None and self._active >= self.concurrency):
                        ready = NEVER
                    elif not pacer.is_head(host, token):
                        # The first in line goes first, and any two starts at one host are at
                        # least the floor apart: the k-th in line cannot start before k floors
                        # after the head's earliest start, so it need not wake any sooner.
                        earliest = max(now, self.politeness.time_ready_at(host, FLOOR_SECONDS))
                        ready = max(ready, earliest + max(1, pacer.ahead(host, token)) * FLOOR_SECONDS)
                    elif ready <= now:
                        lease = None
                        if pacer.gate is not None:
                            try:
                                granted = pacer.gate_acquire(host, self.interval or self.politeness.min_interval,
                                                             self.request_timeout + LEASE_MARGIN_SECONDS)
                            except GateUnavailable:
                                raise _Stop(GATE_UNAVAILABLE) from None
                            if isinstance(granted, Lease):
                                lease = granted
                            else:
                                ready = timed = now + granted
                                gate_said_wait = True
                        if pacer.gate is None or lease is not None:
                            ticket = self.politeness.try_start(host, now, self.interval)
                            pacer.leave(host, token)
                            admitted = True
                            pacer.unwritten[host] = pacer.unwritten.get(host, 0) + 1
                            self._active += 1
                            return _Slot(host, ticket, lease)
                    if timed != NEVER and timed - now > self._own_gap() + _TOLERANCE_SECONDS:
                        ready = self._held(host, now, ready)
                wake = now + _POLL_SECONDS if ready == NEVER else ready
                deadline = self.budget.deadline
                if deadline is not None and wake >= deadline and ready != NEVER:
                    with self._lock:
                        self.budget.record_stop(B.DEADLINE)
                    raise _Stop(B.DEADLINE)
                self.clock.sleep_until(wake)
                if gate_said_wait:
                    with self._lock:
                        self.gate_wait_seconds += max(0.0, self.clock.monotonic() - now)
        finally:
            if not admitted:
                with self._lock:
                    pacer.leave(host, token)

    def _own_gap(self) -> float:
        own = self.politeness.min_interval if self.interval is None else float(self.interval)
        return max(own, FLOOR_SECONDS) + self.politeness.margin

    def _writing(self, slot: "_Slot") -> Callable[[], None]:
        """The transport's before_write: the request is about to be written on a ready
        connection. Its start is stamped here, and the callback returned stamps it again once
        the bytes have left: the next start to the host counts from the later of the two."""
        with self._lock:
            self._stamp(slot)

        def written() -> None:
            with self._lock:
                self._stamp(slot)
                if slot.lease is not None:
                    self.pacer.gate_quietly("sent", slot.lease)
        return written

    def _stamp(self, slot: "_Slot") -> None:
        # under self._lock
        self.politeness.sent(slot.ticket, self.clock.monotonic())
        self._release_host(slot)

    def _release_host(self, slot: "_Slot") -> None:
        # under self._lock: the request is being written (or never will be), so its host may
        # admit the next one
        if not slot.written:
            slot.written = True
            self.pacer.unwritten[slot.host] -= 1

    def _finish(self, slot: "_Slot", retry_after: float | None, answer: tuple | None = None) -> None:
        """The request has ended (any outcome): its politeness slot and its gate lease are
        given back; a request that never got as far as being written stops holding its host.
        `answer`: (URL, status) of the response, which set the hold when it had a Retry-After."""
        with self._lock:
            self._release_host(slot)
            self._active -= 1
            self.politeness.finish(slot.ticket, self.clock.monotonic(), retry_after)
            if slot.lease is not None:
                self.pacer.gate_quietly("release", slot.lease, retry_after)
            if retry_after and retry_after > 0 and answer is not None:
                self._note_setter(slot.host, RETRY_AFTER, retry_after, *answer)

    # --- holds (issue 24 point 6, collection.fetch.holds) -------------------------------------
    def _note_setter(self, host: str, kind: str, seconds: float, url: str, status: int | None) -> None:
        # under self._lock: who set a hold, for every run that will wait on it
        by = setter(url, status, self.clock.wall(), holder_description())
        self.pacer.holds.setters[(host, kind)] = by
        self.pacer.gate_quietly("mark_hold", host, kind, seconds, by)

    def _held(self, host: str, now: float, ready: float) -> float:
        """Under self._lock, when the time rules make `host` wait longer than this source's own
        gap: the hold behind it (the shared gate's, else this process's own). A hold the run
        cannot usefully wait for (longer than HOLD_WAIT_SECONDS, or ending after the deadline)
        ends the host's work for this run (_Stop(HELD): its pages stay pending); a shorter one
        is waited out, asking again every HOLD_POLL_SECONDS. Announced once either way."""
        pacer = self.pacer
        hold = None
        if pacer.gate is not None:
            try:
                hold = pacer.gate_ask("hold", host)
            except GateUnavailable:
                raise _Stop(GATE_UNAVAILABLE) from None     # not a budget: the run loop reads pacer.failed
        if hold is None:
            last, nxt, not_before, crawl = self.politeness.hold_state(host)
            hold = hold_of(host, now=now, wall=self.clock.wall(), last_start=last, next_start=nxt,
                           not_before=not_before,
                           crawl_delay=crawl, margin=self.politeness.margin,
                           hold_by=pacer.holds.setters.get((host, RETRY_AFTER)),
                           crawl_by=pacer.holds.setters.get((host, CRAWL_DELAY)))
        if hold is None:
            return ready
        deadline = self.budget.deadline
        ends = hold.seconds > HOLD_WAIT_SECONDS or (deadline is not None and now + hold.seconds >= deadline)
        if not ends and hold.kind != RETRY_AFTER and hold.seconds <= HOLD_NOTICE_SECONDS:
            return ready                       # the origin's standing pace, not a hold to announce
        pacer.holds.saw(hold, ends)
        if ends:
            self.held_hosts.add(host)
            raise _Stop(HELD)
        return min(ready, now + HOLD_POLL_SECONDS)

    # --- bodies -----------------------------------------------------------------------------
    def _body(self, spec: FetchSpec, url: str, response: "_Held", tally: _Tally) -> FetchOutcome:
        status, headers = response.status, response.headers
        refused = unrequested_body(status, headers, ranged=False)
        if refused is not None:
            response.close()
            raise _Fail(refused[0], refused[1], status)
        mt = media_type(response.header("Content-Type"))
        if spec.accepted and not accepts(response.header("Content-Type"), spec.accepted):
            response.close()   # refused before the body is read (DISC, D-37)
            raise _Fail("media_type_refused", f"media type {mt!r} not in {list(spec.accepted)}", status)
        plan = range_plan(status, headers, self.range_threshold)
        digest = hashlib.sha256()
        parts: list[bytes] = []
        limit = self.range_size if plan else None
        got = self._read(response, digest, parts, limit, charge=True)
        response.close()
        if plan is not None and got < plan.total:
            replaced = self._ranges(spec, url, plan, got, digest, parts, tally)
            if replaced is not None:
                status, headers, digest, parts = replaced
        body = b"".join(parts)
        return FetchOutcome(spec.url, FETCHED, final_url=url, status=status, headers=headers, body=body,
                            content_sha256=digest.hexdigest(), media_type=mt)

    def _read(self, response: "_Held", digest, parts: list[bytes], limit: int | None,
              charge: bool, cap: int | None = None, retryable: bool = True) -> int:
        """Read the body into `parts`, charging bytes; returns the bytes read.

        Stops after `limit` bytes (a range's worth) without closing; closes at the end."""
        got = 0
        held = sum(len(p) for p in parts)
        cap = self.max_body_bytes if cap is None else cap
        try:
            while limit is None or got < limit:
                amt = READ_SIZE if limit is None else min(READ_SIZE, limit - got)
                chunk = response.read(amt)
                if not chunk:
                    response.close()
                    return got
                if charge:
                    with self._lock:
                        fits = self.budget.charge_bytes(len(chunk))
                    if not fits:
                        raise _Fail("max_source_bytes", "limits.max_source_bytes reached while reading", response.status)
                if held + got + len(chunk) > cap:
                    raise _Fail("body_too_large", f"body larger than {cap} bytes", response.status)
                digest.update(chunk)
                parts.append(chunk)
                got += len(chunk)
            return got
        except TransportError as exc:
            response.close()
            raise _Fail(exc.code, str(exc), response.status, _retry_kind(exc) if retryable else None) from None
        except _Fail:
            response.close()
            raise

    def _ranges(self, spec: FetchSpec, url: str, plan: RangePlan, offset: int, digest,
                parts: list[bytes], tally: _Tally):
        """Fetch bytes `offset`.. of `url` as ranges guarded by If-Range (FETCH-25, D-07).

        Returns None when the ranges completed the body, or (status, headers, digest, parts)
        when the origin answered 200 to a range request: the object changed, so the whole
        new representation replaces what was read, and nothing is stitched."""
        while offset < plan.total:
            last = min(plan.total, offset + self.range_size) - 1
            headers = (("Accept", accept_header(spec.accepted) or "*/*"), ("Range", f"bytes={offset}-{last}"),
                       ("If-Range", plan.validator))
            try:
                response = self._send(spec.kind, url, B.RANGE, tally, headers)
            except TransportError as exc:
                raise _Fail(exc.code, f"range request failed: {exc}") from None
            refused = unrequested_body(response.status, response.headers, ranged=True)
            if refused is not None:
                response.close()
                raise _Fail(refused[0], refused[1], response.status)
            if response.status == 200:
                if spec.accepted and not accepts(response.header("Content-Type"), spec.accepted):
                    response.close()
                    raise _Fail("media_type_refused", "changed object has a refused media type", 200)
                fresh_digest, fresh = hashlib.sha256(), []
                self._read(response, fresh_digest, fresh, None, charge=True, retryable=False)
                return 200, response.headers, fresh_digest, fresh
            span = parse_content_range(response.header("Content-Range"))
            if response.status != 206 or span is None or span[0] != offset or span[2] != plan.total \
                    or span[1] != last:
                response.close()
                raise _Fail("body_incomplete", f"range answer {response.status} {response.header('Content-Range')!r} "
                                               f"does not continue the body at {offset}", response.status)
            got = self._read(response, digest, parts, None, charge=True, retryable=False)
            if got != last - offset + 1:
                raise _Fail("body_incomplete", "range body shorter than its Content-Range", 206)
            offset += got
        return None

    # --- robots.txt ---------------------------------------------------------------------------
    def _robots_allow(self, url: str) -> bool:
        parts = urlsplit(url)
        rules = self.robots_rules(urls.origin_of(url))
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return bool(rules.verdict(self.token, path).allowed)

    def _fetch_robots(self, origin: str, tally: _Tally):
        """robots.txt per RFC 9309 and D-58: ≤5 redirects, 4xx allow, 5xx/network/truncated
        disallow, at least 500 KiB parsed; counted, never charged; paced like any request."""
        from collection.fetch import robots as R

        current, seen = f"{origin}/robots.txt", []
        robots_allowed = self.allowed | {origin}
        for _hop in range(MAX_REDIRECTS + 1):
            seen.append(current)
            try:
                response = self._send(None, current, B.INITIAL, tally, (("Accept", "text/plain, */*"),))
            except TransportError:
                return R.robots_policy_for_response(None, b"", False)
            except _Fail:
                return R.robots_policy_for_response(404, b"", True)   # unreachable target: unavailable
            status = response.status
            if status in REDIRECT_STATUSES:
                location = response.header("Location")
                response.close()
                verdict, target, _ = redirect_decision(current, location, robots_allowed, seen, 0)
                if verdict == "skipped_origin":
                    # D-66: following it would reach an address the allowlist forbids;
                    # ignoring it would read "allow all". robots.txt is unreachable for
                    # this origin in this run: disallow all, and say where it pointed.
                    self.robots_unreachable[origin] = target or ""
                    return R.DISALLOW_ALL
                if verdict != "follow":
                    # RFC 9309 2.3.1.2: a robots.txt that cannot be reached by redirects is
                    # "unavailable", i.e. allow all.
                    return R.robots_policy_for_response(404, b"", True)
                current = target
                continue
            if not 200 <= status < 300:
                response.close()
                return R.robots_policy_for_response(status, b"", True)
            tally.answer = (current, status)
            parts: list[bytes] = []
            complete = True
            try:
                self._read(response, hashlib.sha256(), parts, ROBOTS_PARSE_BYTES, charge=False)
            except _Fail:
                complete = False
            response.close()
            return R.robots_policy_for_response(status, b"".join(parts), complete)
        return R.robots_policy_for_response(404, b"", True)    # more than 5 redirects: unavailable


@dataclass
class _Slot:
    """One admitted request: its host, its politeness ticket, its gate lease (if any), and
    whether its bytes have started to leave (until then its host admits nobody else)."""

    host: str
    ticket: Ticket
    lease: Lease | None
    written: bool = False


class _Held:
    """A transport response that gives its politeness slot back when closed (once)."""

    def __init__(self, response: Response, on_close: Callable[[], None], tally: _Tally | None = None):
        self._response = response
        self._on_close = on_close
        self._tally = tally
        self.status = response.status
        self.headers = response.headers
        if tally is not None:
            tally.held.append(self)

    def header(self, name: str) -> str | None:
        return self._response.header(name)

    def read(self, amt: int) -> bytes:
        return self._response.read(amt)

    def close(self) -> None:
        if self._on_close is not None:
            on_close, self._on_close = self._on_close, None
            try:
                self._response.close()
            finally:
                on_close()
                if self._tally is not None:
                    if self in self._tally.held:
                        self._tally.held.remove(self)
                    self._tally.ended(getattr(self._response, "completed_at", None))


def _retry_kind(exc: TransportError) -> str | None:
    """The retry.py error kind of a transport failure, or None when retrying cannot help:
    a certificate that fails verification or a broken content encoding will fail again."""
    if not exc.retryable:
        return None
    return TIMEOUT if exc.code == "timeout" else NETWORK_ERROR


def _with_tally(outcome: FetchOutcome, tally: _Tally, completed_at: float | None = None) -> FetchOutcome:
    from dataclasses import replace

    return replace(outcome, requests=tally.requests, retries=tally.retries,
                   redirects=tally.redirects, ranges=tally.ranges, completed_at=completed_at)
