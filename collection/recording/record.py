"""Recording: a Transport wrapper that writes every exchange into the fixture format (shell).

    recorder = Recorder.load(path, run=n)          # or Recorder(run=n) for a new fixture
    transport = RecordingTransport(inner, recorder)  # a drop-in Transport (collection/fetch/transport.py)
    ... run the fetcher on `transport` ...
    recorder.save(path)

What is recorded (docs/fixtures.md, "Recording"):
- every request the fetcher sends — listings, pages, robots.txt, each redirect hop (a 3xx is
  its own exchange, recorded with its Location) — with the fetcher's request headers and the
  response's status, headers (as received) and body (decoded: content-encoding removed, the
  bytes replay serves);
- failures as the behaviours the format has: a connection that failed before the status line
  (reset, refused, TLS) is `drop_connection: true`; one that broke after n body bytes is
  `drop_connection: n`; a timeout before the headers is `hang: "before_headers"`, during the
  body `hang: "after_headers"`. The failure code that was seen is kept in the exchange's
  `comment` when replay would report it under another code (tls_error, body_incomplete).
- what the fetcher read, no more: a body the fetcher stopped reading (a redirect, a refused
  media type, a cap) is recorded as far as it was read, which replays to the same outcome.
  Byte ranges of one object (206 answers continuing a 200 that advertised them) are stitched
  back into that 200, so replay serves the ranges from it with the same request counts.
- Behaviours of time are not recorded (no `delay_seconds`, no `drip`). When the transport is
  given the run's clock, it stamps each exchange's end (`completed_at`: the body read, the
  response closed, or the failure) and the run's start (`runs[].started_at`), so a replay of the
  run reproduces the live run's timestamps (the run loop takes a page's time from its response).
  Without a clock nothing is stamped and a recording is deterministic.

Runs: run n of a state directory writes `responses[n-1]` of a per-run sequence, the same
index replay serves for run n. Earlier runs missing for a URL are filled with the nearest
earlier answer (or the first one), and trailing repeats collapse (the last one repeats on
replay), so a later recording never shifts an earlier run's answers. Within one run, several
requests for one URL (retries) become a per-request sequence when the fixture holds only
that run; once several runs are recorded, each run keeps its last answer.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import threading
from dataclasses import dataclass, field, replace
from typing import Callable

from collection import urls
from collection.canonical import canonical_json
from collection.recording.format import Exchange, Fixture, RecordedResponse, RecordedRun, dump_fixture
from collection.fetch.transport import Request, TransportError, header_value
from collection.store.generations import write_atomically

# Bodies larger than this are written as files beside the fixture (content-addressed).
INLINE_LIMIT = 256 * 1024
BODY_DIR = "bodies"

# Failure codes replay reproduces exactly from the behaviour recorded for them.
_EXACT_CODES = {"connection_error", "timeout"}
# Recorded request headers: what the fetcher asked for, minus the per-attempt range headers.
_DROP_REQUEST_HEADERS = {"range", "if-range"}


@dataclass
class _Capture:
    """One request's answer, filled in as the response is read."""

    url: str
    request_headers: tuple[tuple[str, str], ...]
    range_start: int | None = None          # the first byte asked for with Range
    status: int | None = None
    headers: tuple[tuple[str, str], ...] = ()
    body: bytearray = field(default_factory=bytearray)
    drop_before_headers: bool = False
    drop_after: int | None = None
    hang: str | None = None
    note: str | None = None
    done: bool = False
    completed_at: float | None = None

    def stamp(self, at: float | None) -> float | None:
        """Note when the exchange ended (the first time only); returns the noted time."""
        if self.completed_at is None and at is not None:
            self.completed_at = at
        return self.completed_at

    def response(self) -> RecordedResponse:
        return RecordedResponse(
            # A connection that failed before the status line has no status; 200 stands in
            # (the schema needs one, and replay fails before it is ever read).
            status=self.status if self.status is not None else 200, headers=self.headers, body=bytes(self.body),
            drop_after=self.drop_after, drop_before_headers=self.drop_before_headers, hang=self.hang,
            completed_at=self.completed_at)


def _range_start(headers: tuple[tuple[str, str], ...]) -> int | None:
    spec = header_value(headers, "Range")
    if not spec or not spec.startswith("bytes="):
        return None
    first = spec[len("bytes="):].partition("-")[0]
    return int(first) if first.isdigit() else None


def _content_range_start(value: str | None) -> tuple[int, int] | None:
    """(first byte, total) of `bytes a-b/total`."""
    if not value or not value.startswith("bytes "):
        return None
    span, _, total = value[len("bytes "):].partition("/")
    first = span.partition("-")[0]
    if not first.isdigit() or not total.isdigit():
        return None
    return int(first), int(total)


class Recorder:
    """Collects the exchanges of run `run` (1-based) on top of an earlier fixture. Thread-safe."""

    def __init__(self, run: int = 1, base: Fixture | None = None, started_at: float | None = None):
        if run < 1:
            raise ValueError("run numbers start at 1")
        self.run = run
        self.started_at = started_at            # when run `run` started (wall clock), if known
        self._base = {e.url: e for e in (base.exchanges if base is not None else ())}
        self._base_runs = {r.run: r for r in (base.runs if base is not None else ())}
        self._captures: dict[str, list[_Capture]] = {}
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: str, run: int = 1) -> "Recorder":
        """A recorder for run `run` on top of the fixture at `path` (if the file exists)."""
        from collection.recording.replay import load_fixture

        base = load_fixture(path) if os.path.exists(path) else None
        return cls(run, base)

    # -- capture (called by RecordingTransport) --------------------------------------------
    def begin(self, request: Request) -> _Capture:
        url = urls.canonicalise(request.url)
        headers = tuple((k, v) for k, v in request.headers if k.lower() not in _DROP_REQUEST_HEADERS)
        capture = _Capture(url, headers, _range_start(request.headers))
        with self._lock:
            self._captures.setdefault(url, []).append(capture)
        return capture

    def forget(self, capture: _Capture) -> None:
        with self._lock:
            items = self._captures.get(capture.url, [])
            items[:] = [c for c in items if c is not capture]

    # -- the result ------------------------------------------------------------------------
    def _run_answers(self, captures: list[_Capture]) -> tuple[list[RecordedResponse], list[str]]:
        """This run's answers for one URL, range continuations stitched into their 200."""
        answers: list[_Capture] = []
        notes: list[str] = []
        for capture in captures:
            if capture.note:
                notes.append(capture.note)
            span = _content_range_start(header_value(capture.headers, "Content-Range"))
            if capture.status == 206 and span is not None and answers:
                whole = answers[-1]
                if whole.status == 200 and span[0] == len(whole.body) and whole.drop_after is None \
                        and whole.hang is None:
                    whole.body.extend(capture.body)
                    if capture.completed_at is not None:
                        whole.completed_at = capture.completed_at   # the object ended with its last range
                    continue
            if capture.status == 206 and answers and capture.range_start is not None:
                notes.append(f"a range answer at byte {capture.range_start} did not continue the recorded body")
            answers.append(capture)
        return [a.response() for a in answers], notes

    def fixture(self) -> Fixture:
        """The fixture as it stands: the earlier runs plus this run's answers, sorted by URL."""
        with self._lock:
            captures = {url: list(items) for url, items in self._captures.items()}
        exchanges: dict[str, Exchange] = dict(self._base)
        for url, items in captures.items():
            answers, notes = self._run_answers(items)
            if not answers:
                continue
            comment = "; ".join(dict.fromkeys(notes)) or None
            earlier = self._base.get(url)
            exchanges[url] = self._merge(url, earlier, answers, items[0].request_headers, comment)
        runs = dict(self._base_runs)
        if self.started_at is not None:
            runs[self.run] = RecordedRun(self.run, self.started_at)
        return Fixture(tuple(exchanges[url] for url in sorted(exchanges)), tuple(runs[n] for n in sorted(runs)))

    def _merge(self, url: str, earlier: Exchange | None, answers: list[RecordedResponse],
               request_headers, comment: str | None) -> Exchange:
        if earlier is None and self.run == 1:
            per = "request" if len(answers) > 1 else "run"
            return Exchange(url, request_headers, tuple(answers), per, comment)
        # Several runs: one answer per run (the last one of this run), other runs kept.
        history: list[RecordedResponse] = []
        if earlier is not None:
            history = list(earlier.responses) if earlier.per == "run" else [earlier.responses[-1]]
            request_headers = earlier.request_headers or request_headers
            comment = "; ".join(c for c in dict.fromkeys((earlier.comment, comment)) if c) or None
        if not history:
            history = [replace(answers[-1], completed_at=None)]
        while len(history) < self.run:
            # runs in between saw the previous answer (it repeats); its time was another run's
            history.append(replace(history[-1], completed_at=None))
        history[self.run - 1] = answers[-1]
        while len(history) > 1 and history[-1] == history[-2]:
            history.pop()
        return Exchange(url, request_headers, tuple(history), "run", comment)

    def save(self, path: str, *, inline_limit: int = INLINE_LIMIT) -> Fixture:
        """Write the fixture to `path` (gzip-compressed when it ends in .gz); returns it."""
        fixture = self.fixture()
        write_fixture(path, fixture, inline_limit=inline_limit)
        return fixture


def fixture_text(document: list | dict) -> str:
    """The canonical text of a fixture document: one exchange per line, keys sorted (the
    object form: its exchanges the same way, then the per-run metadata on one line)."""
    if isinstance(document, dict):
        rest = {k: v for k, v in document.items() if k != "exchanges"}
        body = fixture_text(document["exchanges"]).rstrip("\n")
        return ('{"exchanges":' + body + "".join(f',\n{canonical_json(k)}:{canonical_json(rest[k])}'
                                                for k in sorted(rest)) + "}\n")
    if not document:
        return "[]\n"
    return "[\n" + ",\n".join(canonical_json(entry) for entry in document) + "\n]\n"


def write_fixture(path: str, fixture: Fixture, *, inline_limit: int = INLINE_LIMIT) -> None:
    """Write `fixture` deterministically: exchanges as given (the recorder sorts by URL),
    bodies over `inline_limit` bytes to `bodies/<sha256>` beside the fixture, the rest inline
    (text for valid UTF-8 under a text media type, else base64). A path ending in `.gz` is
    gzip-compressed with a zero timestamp and no file name, so the bytes repeat."""
    base = os.path.dirname(os.path.abspath(path))
    files: dict[str, bytes] = {}

    def body_file(response: RecordedResponse) -> str | None:
        if response.body is None or len(response.body) <= inline_limit:
            return None
        name = f"{BODY_DIR}/{hashlib.sha256(response.body).hexdigest()}"
        files[name] = response.body
        return name

    text = fixture_text(dump_fixture(fixture, body_file=body_file)).encode("utf-8")
    for name, body in files.items():
        full = os.path.join(base, name)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        _atomic_write(full, body)
    if path.endswith(".gz"):
        text = gzip_bytes(text)
    _atomic_write(path, text)


def gzip_bytes(data: bytes) -> bytes:
    """gzip with mtime 0 and no file name: the same bytes in give the same bytes out."""
    return gzip.compress(data, compresslevel=9, mtime=0)


_atomic_write = write_atomically    # the state store's one atomic writer


class _RecordingResponse:
    def __init__(self, inner, capture: _Capture, clock=None):
        self._inner = inner
        self._capture = capture
        self._clock = clock
        self.status = inner.status
        self.headers = inner.headers
        self.completed_at: float | None = None      # set when the exchange ends (with a clock)

    def _stamp(self) -> None:
        # A replayed inner response already knows its recorded end; else read the run's clock.
        at = getattr(self._inner, "completed_at", None)
        if at is None and self._clock is not None:
            at = _now(self._clock)
        self.completed_at = self._capture.stamp(at)

    def header(self, name: str) -> str | None:
        return self._inner.header(name)

    def read(self, amt: int) -> bytes:
        capture = self._capture
        try:
            data = self._inner.read(amt)
        except TransportError as exc:
            if not capture.done:
                if exc.code == "timeout":
                    capture.hang = "after_headers"
                else:
                    capture.drop_after = len(capture.body)
                if exc.code not in _EXACT_CODES:
                    capture.note = f"recorded {exc.code} during the body as a dropped connection"
                capture.done = True
                self._stamp()
            raise
        if not capture.done:
            if data:
                capture.body.extend(data)
            else:
                capture.done = True
        return data

    def close(self) -> None:
        self._capture.done = True
        self._inner.close()
        if self.completed_at is None:
            self._stamp()


def _now(clock) -> float:
    """The clock's wall time to the microsecond: what the fixture keeps, so the live run and
    its replay hold the very same number."""
    return round(clock.wall(), 6)


class RecordingTransport:
    """Wraps any Transport; every exchange through it lands in `recorder`.

    `recorder` may also be a fixture path: the transport then loads it (for run `run`) and
    saves it when closed — the form `collection run --record FIXTURE` uses. Without `run`,
    a path that exists is recorded as the run after its longest per-run sequence (pass the
    state directory's run number when it is known: repeats collapse, so the count can be low).
    """

    def __init__(self, inner, recorder: "Recorder | str", *, run: int | None = None, clock=None):
        self.inner = inner
        self.clock = clock
        self.path: str | None = None
        if isinstance(recorder, (str, os.PathLike)):
            self.path = os.fspath(recorder)
            if run is None:
                run = 1
                if os.path.exists(self.path):
                    from collection.recording.replay import load_fixture

                    base = load_fixture(self.path)
                    run = max([len(e.responses) for e in base.exchanges if e.per == "run"] + [0]) + 1
            recorder = Recorder.load(self.path, run=run)
        self.recorder = recorder
        if recorder.started_at is None:
            # The run's start: a replayed run's recorded one, else now (the run loop takes
            # `started_at` from its transport when it has one, so both agree).
            inner_start = getattr(inner, "started_at", None)
            recorder.started_at = inner_start if inner_start is not None else (
                _now(clock) if clock is not None else None)

    @property
    def started_at(self) -> float | None:
        return self.recorder.started_at

    def monotonic(self) -> float:
        return self.inner.monotonic()

    def send(self, request: Request, deadline: float,
             before_write: Callable[[], None] | None = None):
        capture = self.recorder.begin(request)
        try:
            response = self.inner.send(request, deadline, before_write)
        except TransportError as exc:
            if exc.code == "timeout":
                capture.hang = "before_headers"
            else:
                capture.drop_before_headers = True
            if exc.code not in _EXACT_CODES:
                capture.note = f"recorded {exc.code} before the status line as a dropped connection"
            capture.done = True
            at = getattr(exc, "completed_at", None)
            exc.completed_at = capture.stamp(at if at is not None or self.clock is None else _now(self.clock))
            raise
        except BaseException:
            # Not an exchange (a refused header, the run's own deadline): nothing to record.
            self.recorder.forget(capture)
            raise
        capture.status = response.status
        capture.headers = tuple(response.headers)
        return _RecordingResponse(response, capture, self.clock)

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        try:
            if close is not None:
                close()
        finally:
            if self.path is not None:
                path, self.path = self.path, None
                self.recorder.save(path)
