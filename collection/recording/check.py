"""`fixture check`: is a fixture valid, and can it answer everything a recipe would ask? (shell)

Validation lists every schema error with its JSON pointer (not only the first, as the
loader does), then the loader's own refusals (a URL recorded twice, bad base64, a body file
that is missing or leaves the fixture's folder).

With a recipe, each run the fixture records (1 .. the longest per-run sequence) is walked
the way a replayed run would walk it: discovery runs offline (collection/discover/driver.py's
driver) over the fixture's answers for that run, following recorded redirects hop by hop;
then every page discovery lists (and may reach) is resolved the same way. An address with
no exchange is a gap — replay would fail it with `replay_missing`. robots.txt is not a gap
(replay answers an unrecorded one 404: allow all), so it is reported as a note.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from collection import urls
from collection.discover.driver import ListingFailure, ListingResponse, start
from collection.recording import decoding
from collection.recording.format import (Exchange, Fixture, FixtureError, RecordedResponse, parse_fixture,
                                schema_errors)

MAX_REDIRECTS = 5
REDIRECTS = (301, 302, 303, 307, 308)


@dataclass
class Problem:
    pointer: str
    message: str

    def as_json(self) -> dict:
        return {"pointer": self.pointer, "message": self.message}


def _pointer(path) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def read_document(data: bytes) -> tuple[object | None, list[Problem]]:
    """The parsed document, or the problem: decompressed within the loader's cap (a gzip bomb is
    a problem, not a MemoryError), parsed without RecursionError."""
    from collection.recording.replay import fixture_cap

    cap = fixture_cap()
    try:
        if data[:2] == b"\x1f\x8b":
            try:
                unpacked = decoding.decode(data, "gzip", cap)
            except decoding.TooLarge:
                return None, [Problem("", f"FIXTURE_TOO_LARGE: the gzip stream decompresses to more than {cap} bytes")]
            except decoding.Undecodable as exc:
                return None, [Problem("", f"broken gzip: {exc}")]
            if not unpacked.complete:
                return None, [Problem("", "broken gzip: the stream is cut short")]
            data = unpacked.body
        return json.loads(data), []
    except ValueError as exc:
        return None, [Problem("", f"not JSON: {exc}")]
    except RecursionError:
        return None, [Problem("", "JSON_TOO_DEEP: the document nests arrays or objects too deeply to read")]
    except MemoryError:
        return None, [Problem("", f"FIXTURE_TOO_LARGE: reading the fixture ran out of memory (cap {cap} bytes)")]


def validate(data: bytes, folder: str | None) -> tuple[Fixture | None, list[Problem]]:
    """The fixture (bodies loaded when `folder` is given) and every problem found."""
    document, problems = read_document(data)
    if problems:
        return None, problems
    try:
        errors = sorted(schema_errors(document), key=lambda e: [str(p) for p in e.absolute_path])
    except RecursionError:
        return None, [Problem("", "JSON_TOO_DEEP: the document nests too deeply to check")]
    if errors:
        return None, [Problem(_pointer(e.absolute_path), e.message) for e in errors]
    try:
        fixture = parse_fixture(document)
    except FixtureError as exc:
        return None, [Problem(exc.pointer, exc.message)]
    if folder is None:
        return fixture, []
    base = os.path.abspath(folder)
    exchanges = []
    for i, exchange in enumerate(fixture.exchanges):
        responses = []
        for j, response in enumerate(exchange.responses):
            if response.body_file is not None:
                entries = document["exchanges"] if isinstance(document, dict) else document
                prefix = "/exchanges" if isinstance(document, dict) else ""
                where = f"{prefix}/{i}/{'response' if 'response' in entries[i] else f'responses/{j}'}/body/file"
                full = os.path.normpath(os.path.join(base, response.body_file))
                if not full.startswith(base + os.sep):
                    problems.append(Problem(where, f"body file {response.body_file!r} leaves the fixture's folder"))
                else:
                    try:
                        with open(full, "rb") as handle:
                            response = RecordedResponse(**{**response.__dict__, "body": handle.read()})
                    except OSError as exc:
                        problems.append(Problem(where, f"cannot read body file {response.body_file!r}: {exc.strerror}"))
            responses.append(response)
        exchanges.append(Exchange(exchange.url, exchange.request_headers, tuple(responses), exchange.per,
                                  exchange.comment))
    return Fixture(tuple(exchanges), fixture.runs), problems


def recorded_runs(fixture: Fixture) -> int:
    """How many runs the fixture distinguishes (the longest per-run sequence; at least 1)."""
    return max([len(e.responses) for e in fixture.exchanges if e.per == "run"] + [1])


@dataclass
class RunReport:
    run: int
    discovery: dict
    addresses: int = 0                        # distinct addresses the run would request
    gaps: list[dict] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        return {"run": self.run, "discovery": self.discovery, "addresses": self.addresses,
                "gaps": self.gaps, "notes": self.notes}


def _failure_code(response: RecordedResponse) -> str | None:
    if response.drop_before_headers or response.drop_after is not None:
        return "connection_error"
    if response.hang is not None:
        return "timeout"
    return None


class _Walker:
    """Answers addresses from the fixture for one run, recording gaps."""

    def __init__(self, fixture: Fixture, run: int, report: RunReport):
        self.by_url = fixture.by_url()
        self.run = run
        self.report = report
        self.seen: set[str] = set()
        self.gap_urls: set[str] = set()
        self.origins: set[str] = set()

    def _gap(self, url: str, role: str, via: str | None) -> None:
        if url not in self.gap_urls:
            self.gap_urls.add(url)
            gap = {"url": url, "role": role}
            if via is not None:
                gap["redirected_from"] = via
            self.report.gaps.append(gap)

    def resolve(self, url: str, role: str) -> tuple[RecordedResponse | None, str]:
        """The answer for `url` after recorded redirects (None: a gap), and the final URL."""
        current, via = url, None
        for _hop in range(MAX_REDIRECTS + 1):
            self.seen.add(current)
            self.origins.add(urls.origin_of(current))
            exchange = self.by_url.get(current)
            if exchange is None:
                self._gap(current, role, via)
                return None, current
            response = exchange.response_for(self.run, 1)
            location = next((v for k, v in response.headers if k.lower() == "location"), None)
            if response.status not in REDIRECTS or not location or _failure_code(response):
                return response, current
            try:
                target = urls.canonicalise(urljoin(current, location))
            except urls.UrlError:
                return response, current
            if urlsplit(target).scheme != "https":
                return response, current
            current, via = target, url
        return response, current


def check_recipe(fixture: Fixture, source, run: int) -> RunReport:
    """What run `run` of `source` (a registered collection Source) would ask the fixture."""
    collection = source.collection
    report = RunReport(run, {})
    walker = _Walker(fixture, run, report)
    state = start(collection.discovery, collection.pages.allowed_origins, max_pages=collection.pages.max_pages)
    while (request := state.next_request()) is not None:
        response, final = walker.resolve(request.url, "listing")
        if response is None:
            result = ListingFailure(request.url, "replay_missing")
        elif (code := _failure_code(response)) is not None:
            result = ListingFailure(request.url, code)
        else:
            refusal = state.refusal(response.status, response.headers)
            result = (ListingFailure(request.url, refusal) if refusal is not None else
                      ListingResponse(request.url, response.status, response.headers, response.body or b"", 1, final))
        state = state.feed(result)
    outcome = state.outcome()
    report.discovery = {"discovered": len(outcome.pages), "requests": outcome.requests,
                        "complete": outcome.complete, "stop_reason": outcome.stop_reason,
                        "failure": outcome.failure}
    for listed in outcome.pages:
        if listed.unreachable is None:
            walker.resolve(listed.url, "page")
    for origin in sorted(walker.origins):
        robots = origin + "/robots.txt"
        walker.seen.add(robots)
        if robots not in walker.by_url:
            report.notes.append(f"{robots} is not recorded: replay answers 404 (no robots.txt, allow all)")
    report.addresses = len(walker.seen)
    return report
