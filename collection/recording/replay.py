"""The replay transport: recorded exchanges served with no network, on the run's clock.

Same interface as the urllib3 transport (collection/fetch/transport.py), so the fetcher cannot
tell them apart. Behaviours a recording cannot show are simulated on the clock it is given
(a VirtualClock in offline crawls and tests): `delay_seconds` and `hang` sleep, `drip`
advances time by bytes / rate, `drop_connection` raises a connection error. A request with
no recorded exchange fails with `replay_missing` naming the address — except
`/robots.txt`, which answers 404 when unrecorded (a fixture that records none describes an
origin that has none; RFC 9309 then allows everything).

Byte ranges: a 200 recorded with `Accept-Ranges: bytes` answers `Range` requests with 206
slices, honouring `If-Range` against its ETag or Last-Modified.

Recorded times: an answer with a `completed_at` of the run being replayed moves the clock
forward to it (never back) and reports it as the response's (or the failure's)
`completed_at`, so the fetcher timestamps the fetch as the live run did; `started_at` is
the run's recorded start (the shell sets the virtual clock there before the run).
"""

from __future__ import annotations

import json
import os
import stat
import threading
from dataclasses import replace
from typing import Callable
from urllib.parse import urlsplit

from collection import urls
from collection.recording import decoding
from collection.recording.format import Fixture, FixtureError, FixtureTooLarge, RecordedResponse, parse_fixture
from collection.fetch.transport import Request, TransportError, check_request_headers, header_value

_DRIP_STEP_SECONDS = 0.1


# The largest fixture document read (decompressed), and the largest body file: a fixture is
# test material or a recorded corpus, and a gzip bomb or a device must stay a refusal.
MAX_FIXTURE_BYTES = 1024 * 1024 * 1024
MAX_BODY_FILE_BYTES = 64 * 1024 * 1024
# Parsed JSON takes several times its text in memory (and the text, the compressed bytes and
# the parse live at once), so under an address-space limit a fixture may decompress to at
# most this fraction of it: a bomb is refused by its size before memory runs out.
MEMORY_SHARE = 8
_CHUNK = 1024 * 1024


def fixture_cap() -> int:
    """The largest fixture text this process reads: MAX_FIXTURE_BYTES, or less under RLIMIT_AS."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return MAX_FIXTURE_BYTES
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return MAX_FIXTURE_BYTES
    return int(min(MAX_FIXTURE_BYTES, soft // MEMORY_SHARE))


def _read_at_most(handle, cap: int) -> bytes:
    """Up to cap + 1 bytes, read in chunks: read(cap + 1) would allocate the whole cap at once."""
    parts, size = [], 0
    while size <= cap:
        part = handle.read(min(_CHUNK, cap + 1 - size))
        if not part:
            break
        parts.append(part)
        size += len(part)
    return b"".join(parts)


def _body_file(base: str, name: str, pointer: str) -> bytes:
    """A `file` body: a regular file whose real path (symlinks resolved) is inside `base`."""
    full = os.path.realpath(os.path.join(base, name))
    if not full.startswith(base + os.sep):
        raise FixtureError(pointer, f"body file {name!r} resolves outside the fixture's folder")
    try:
        info = os.stat(full)
        if not stat.S_ISREG(info.st_mode):
            raise FixtureError(pointer, f"body file {name!r} is not a regular file")
        if info.st_size > MAX_BODY_FILE_BYTES:
            raise FixtureError(pointer, f"body file {name!r} is larger than {MAX_BODY_FILE_BYTES} bytes")
        with open(full, "rb") as handle:
            return _read_at_most(handle, MAX_BODY_FILE_BYTES)
    except OSError as exc:
        raise FixtureError(pointer, f"cannot read body file {name!r}: {exc.strerror or exc}") from None


def load_fixture(path: str) -> Fixture:
    """Read and validate a fixture file, reading `file` bodies relative to it (shell).

    The file may be gzip-compressed (recognised by its magic bytes, whatever its name). A file
    or a decompressed stream past `fixture_cap()`, and one whose parse runs out of memory, is
    refused as FixtureTooLarge (FIXTURE_TOO_LARGE), never a MemoryError."""
    cap = fixture_cap()
    limit = f"{cap} bytes" + ("" if cap == MAX_FIXTURE_BYTES else f" (1/{MEMORY_SHARE} of this process's memory limit)")
    try:
        return _load(path, cap, limit)
    except MemoryError:
        raise FixtureTooLarge("", f"reading the fixture ran out of memory (at most {limit} are read)") from None


def _load(path: str, cap: int, limit: str) -> Fixture:
    with open(path, "rb") as handle:
        data = _read_at_most(handle, cap)
    if len(data) > cap:
        raise FixtureTooLarge("", f"the fixture file is larger than {limit}")
    if data[:2] == b"\x1f\x8b":
        # A gzip-compressed fixture file (the demo corpus is one): same JSON inside.
        try:
            unpacked = decoding.decode(data, "gzip", cap)
        except decoding.TooLarge:
            raise FixtureTooLarge("", f"the gzip fixture file decompresses to more than {limit}") from None
        except decoding.Undecodable as exc:
            raise FixtureError("", f"broken gzip fixture file: {exc}") from None
        if not unpacked.complete:
            raise FixtureError("", "broken gzip fixture file: the stream is cut short")
        data = unpacked.body
    fixture = parse_fixture(data)
    del data
    base = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    exchanges = []
    for i, exchange in enumerate(fixture.exchanges):
        responses = []
        for j, response in enumerate(exchange.responses):
            if response.body_file is not None:
                response = replace(response, body=_body_file(base, response.body_file, f"/{i}"))
            responses.append(response)
        exchanges.append(replace(exchange, responses=tuple(responses)))
    return Fixture(tuple(exchanges), fixture.runs)


class _ReplayResponse:
    def __init__(self, status: int, headers, body: bytes, recorded: RecordedResponse, clock, deadline: float,
                 completed_at: float | None = None):
        self.completed_at = completed_at        # the recorded end of this exchange, if any
        self.status = status
        self.headers = headers
        self._body = body
        self._pos = 0
        self._recorded = recorded
        self._clock = clock
        self._deadline = deadline

    def header(self, name: str) -> str | None:
        return header_value(self.headers, name)

    def _timeout(self) -> TransportError:
        return TransportError("timeout", "attempt deadline passed while reading the body", retryable=True)

    def read(self, amt: int) -> bytes:
        r = self._recorded
        if self._clock.monotonic() >= self._deadline:
            raise self._timeout()
        if r.hang == "after_headers":
            self._clock.sleep_until(self._deadline)
            raise self._timeout()
        if r.drop_after is not None and self._pos >= r.drop_after:
            raise TransportError("connection_error", "connection dropped (recorded behaviour)", retryable=True)
        end = min(len(self._body), self._pos + amt)
        if r.drop_after is not None:
            end = min(end, r.drop_after)
        if r.drip:
            end = min(end, self._pos + max(1, int(r.drip * _DRIP_STEP_SECONDS)))
            arrival = self._clock.monotonic() + (end - self._pos) / r.drip
            if arrival > self._deadline:
                self._clock.sleep_until(self._deadline)
                raise self._timeout()
            self._clock.sleep_until(arrival)
        data = self._body[self._pos:end]
        self._pos = end
        return data

    def close(self) -> None:
        self._pos = len(self._body)


class ReplayTransport:
    """Serves a Fixture for run number `run` (1-based) on `clock`. Thread-safe."""

    def __init__(self, fixture: Fixture, clock, run: int = 1,
                 on_request: Callable[[Request], None] | None = None):
        self._exchanges = fixture.by_url()
        self._clock = clock
        self._run = run
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._on_request = on_request
        self.requests: list[Request] = []
        # The recorded start of this run (None when the fixture has no timing); the shell sets
        # the virtual clock there before the run begins.
        self.started_at = fixture.started_at(run)

    def monotonic(self) -> float:
        return self._clock.monotonic()

    def send(self, request: Request, deadline: float,
             before_write: Callable[[], None] | None = None) -> _ReplayResponse:
        check_request_headers(request.headers)
        url = urls.canonicalise(request.url)
        if before_write is not None:
            before_write()
        with self._lock:
            self.requests.append(request)
            number = self._counts[url] = self._counts.get(url, 0) + 1
        if self._on_request is not None:
            self._on_request(request)
        exchange = self._exchanges.get(url)
        if exchange is None:
            if urlsplit(url).path == "/robots.txt":
                recorded = RecordedResponse(404, (("Content-Type", "text/plain"),), b"")
            else:
                raise TransportError("replay_missing", f"no recorded exchange for {url}")
        else:
            recorded = exchange.response_for(self._run, number)
        # A recorded end time belongs to the run that recorded it, not to runs repeating it.
        completed_at = recorded.completed_at if exchange is not None and exchange.is_own(self._run, number) else None
        if recorded.body is None:
            raise TransportError("replay_missing", f"body file of {url} was not loaded (use load_fixture)")
        if recorded.hang == "before_headers":
            self._clock.sleep_until(deadline)
            self._catch_up(completed_at)
            raise _stamped(TransportError("timeout", "no answer before the attempt deadline", retryable=True),
                           completed_at)
        if recorded.delay_seconds:
            arrival = self._clock.monotonic() + recorded.delay_seconds
            if arrival >= deadline:
                self._clock.sleep_until(deadline)
                raise TransportError("timeout", "no answer before the attempt deadline", retryable=True)
            self._clock.sleep_until(arrival)
        self._catch_up(completed_at)
        if recorded.drop_before_headers:
            raise _stamped(TransportError("connection_error", "connection dropped (recorded behaviour)",
                                          retryable=True), completed_at)
        status, body = recorded.status, recorded.body
        # Bodies are recorded decoded, so an encoding header would describe bytes that are
        # not served; the length is recomputed for the same reason.
        headers = [(k, v) for k, v in recorded.headers
                   if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
        status, extra, body = _range(request, recorded, status, body)
        headers.extend(extra)
        if not any(k.lower() == "content-length" for k, _ in headers):
            headers.append(("Content-Length", str(len(body))))
        return _ReplayResponse(status, tuple(headers), body, recorded, self._clock, deadline, completed_at)

    def _catch_up(self, completed_at: float | None) -> None:
        """Move the clock to a recorded end time that is still ahead, so the replay keeps the
        live run's pace (the time the origin took, the gaps the run kept) and timestamps."""
        if completed_at is None:
            return
        now = self._clock.monotonic()
        target = now + (completed_at - self._clock.wall())
        if target > now:
            self._clock.sleep_until(target)


def _stamped(error: TransportError, completed_at: float | None) -> TransportError:
    """A failure carries the recorded end of its exchange, as a response does."""
    error.completed_at = completed_at
    return error


def _range(request: Request, recorded: RecordedResponse, status: int, body: bytes):
    spec = header_value(request.headers, "Range")
    advertised = "bytes" in (header_value(recorded.headers, "Accept-Ranges") or "").lower()
    if not spec or status != 200 or not advertised or not spec.startswith("bytes="):
        return status, [], body
    if_range = header_value(request.headers, "If-Range")
    validators = {header_value(recorded.headers, "ETag"), header_value(recorded.headers, "Last-Modified")} - {None}
    if if_range is not None and if_range not in validators:
        return 200, [], body
    first_text, _, last_text = spec[len("bytes="):].partition("-")
    try:
        first = int(first_text)
        last = min(int(last_text), len(body) - 1) if last_text else len(body) - 1
    except ValueError:
        return status, [], body
    if first >= len(body) or last < first:
        return 416, [("Content-Range", f"bytes */{len(body)}"), ("Content-Length", "0")], b""
    return 206, [("Content-Range", f"bytes {first}-{last}/{len(body)}")], body[first:last + 1]


def fixture_from_json(text: str) -> Fixture:
    """A fixture from JSON text whose bodies are all inline (no `file`)."""
    return parse_fixture(json.loads(text))
