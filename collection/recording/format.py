"""Recorded exchanges: parse and validate a fixture document (pure). See docs/fixtures.md.

A fixture is a JSON array of exchanges (schemas/fixture.schema.json), or an object holding
that array and per-run metadata (a recording's run start times): a request (GET, URL,
headers as pairs) and either one response or a sequence of responses (for successive runs,
or successive requests within a run), plus behaviours a recording cannot show: a delay
before the status line, a slow drip, a dropped connection, a hang.

This module never touches the file system: a body given as `file` stays a relative path in
`RecordedResponse.body_file`, and the replay transport's loader reads it (`load_fixture`).
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

import jsonschema

from collection import urls
from collection.recipe.resources import load_schema

SCHEMA_NAME = "fixture.schema.json"


class FixtureError(ValueError):
    """A fixture document that cannot be served. `pointer` is the JSON pointer of the member."""

    code: str | None = None

    def __init__(self, pointer: str, message: str):
        super().__init__(f"{pointer or '/'}: {message}")
        self.pointer = pointer
        self.message = message


class FixtureTooLarge(FixtureError):
    """A fixture (or its decompressed form) past what this process may read: a coded refusal."""

    code = "FIXTURE_TOO_LARGE"


@dataclass(frozen=True)
class RecordedResponse:
    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = b""            # None while `body_file` is not read yet
    body_file: str | None = None
    delay_seconds: float = 0.0
    drip: float | None = None           # bytes per second
    drop_after: int | None = None       # drop the connection after this many body bytes
    drop_before_headers: bool = False
    hang: str | None = None             # None, "before_headers" or "after_headers"
    completed_at: float | None = None   # recorded: wall-clock epoch seconds the exchange ended


@dataclass(frozen=True)
class Exchange:
    url: str                            # canonical (URL-02..08)
    request_headers: tuple[tuple[str, str], ...]
    responses: tuple[RecordedResponse, ...]
    per: str                            # "run" or "request"
    comment: str | None = None

    def response_for(self, run: int, request_number: int) -> RecordedResponse:
        """Run `run` (1-based), `request_number`-th request for this URL in the run (1-based)."""
        index = (run if self.per == "run" else request_number) - 1
        return self.responses[min(max(index, 0), len(self.responses) - 1)]


    def is_own(self, run: int, request_number: int) -> bool:
        """Whether `response_for(run, request_number)` was recorded for exactly this run (not
        a repeat of another run's answer): only then does its `completed_at` apply."""
        if self.per == "run":
            return run <= len(self.responses)
        return run == 1 and request_number <= len(self.responses)


@dataclass(frozen=True)
class RecordedRun:
    """Per-run metadata of a recording: when run `run` started (wall-clock epoch seconds)."""

    run: int
    started_at: float


@dataclass(frozen=True)
class Fixture:
    exchanges: tuple[Exchange, ...]
    runs: tuple[RecordedRun, ...] = ()

    def by_url(self) -> dict[str, Exchange]:
        return {exchange.url: exchange for exchange in self.exchanges}

    def started_at(self, run: int) -> float | None:
        """The recorded start of run `run`, or None (a fixture written without timing)."""
        return next((r.started_at for r in self.runs if r.run == run), None)


def _pointer(path) -> str:
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in path)


def _response(doc: dict, pointer: str) -> RecordedResponse:
    body, body_file = b"", None
    spec = doc.get("body")
    if spec is not None:
        if "text" in spec:
            body = spec["text"].encode("utf-8")
        elif "base64" in spec:
            try:
                body = base64.b64decode(spec["base64"], validate=True)
            except (binascii.Error, ValueError) as exc:
                raise FixtureError(pointer + "/body/base64", f"not valid base64: {exc}") from None
        else:
            body, body_file = None, spec["file"]
    drop = doc.get("drop_connection", False)
    hang = doc.get("hang", False)
    return RecordedResponse(
        status=doc["status"],
        headers=tuple((k, v) for k, v in doc.get("headers", [])),
        body=body, body_file=body_file,
        delay_seconds=float(doc.get("delay_seconds", 0)),
        drip=float(doc["drip"]) if "drip" in doc else None,
        drop_after=drop if isinstance(drop, int) and not isinstance(drop, bool) else None,
        drop_before_headers=drop is True or drop == "before_headers",
        hang="before_headers" if hang is True else (hang or None),
        completed_at=float(doc["completed_at"]) if "completed_at" in doc else None,
    )


def schema_errors(document) -> list:
    """The schema's errors for `document`. The top level is one of two forms (an array, an
    object); the errors reported are those of the form the document has, so they point at the
    offending member rather than at the whole document."""
    validator = jsonschema.Draft202012Validator(load_schema(SCHEMA_NAME))
    out = []
    for error in validator.iter_errors(document):
        if error.validator == "oneOf" and not error.absolute_path:
            branch = 0 if isinstance(document, list) else 1
            inner = [e for e in error.context if e.relative_schema_path and e.relative_schema_path[0] == branch]
            if inner:
                out.extend(inner)
                continue
        out.append(error)
    return out


def parse_fixture(document) -> Fixture:
    """A validated Fixture from a parsed JSON value (or JSON text). Raises FixtureError."""
    if isinstance(document, (str, bytes)):
        try:
            document = json.loads(document)
        except ValueError as exc:
            raise FixtureError("", f"not JSON: {exc}") from None
        except RecursionError:
            raise FixtureError("", "the document nests too deeply to read") from None
    try:
        errors = sorted(schema_errors(document), key=lambda e: (len(e.absolute_path), list(map(str, e.absolute_path))))
    except RecursionError:
        raise FixtureError("", "the document nests too deeply to check") from None
    if errors:
        first = errors[0]
        raise FixtureError(_pointer(first.absolute_path), first.message)
    # Two forms: an array of exchanges, or {"exchanges": [...], "runs": [...]} (a recording
    # with per-run metadata).
    prefix, runs = "", ()
    if isinstance(document, dict):
        prefix = "/exchanges"
        runs_doc = document.get("runs", [])
        numbers = [r["run"] for r in runs_doc]
        for i, number in enumerate(numbers):
            if number in numbers[:i]:
                raise FixtureError(f"/runs/{i}/run", f"run {number} is already described")
        runs = tuple(sorted((RecordedRun(r["run"], float(r["started_at"])) for r in runs_doc), key=lambda r: r.run))
        document = document["exchanges"]
    exchanges, seen = [], {}
    for index, doc in enumerate(document):
        pointer = f"{prefix}/{index}"
        try:
            url = urls.canonicalise(doc["request"]["url"])
        except urls.UrlError as exc:
            raise FixtureError(pointer + "/request/url", str(exc)) from None
        if url in seen:
            raise FixtureError(pointer + "/request/url", f"{url} is already recorded at {prefix}/{seen[url]}")
        seen[url] = index
        if "response" in doc:
            responses = (_response(doc["response"], pointer + "/response"),)
        else:
            responses = tuple(_response(r, f"{pointer}/responses/{i}") for i, r in enumerate(doc["responses"]))
        exchanges.append(Exchange(url, tuple((k, v) for k, v in doc["request"].get("headers", [])),
                                  responses, doc.get("per", "run"), doc.get("comment")))
    return Fixture(tuple(exchanges), runs)


# Media types whose bodies are written as text when they are valid UTF-8 (else base64).
_TEXT_SUFFIXES = ("+json", "+xml")
_TEXT_TYPES = frozenset({"application/json", "application/xml", "application/javascript", "application/ecmascript",
                         "application/x-javascript", "application/xhtml+xml", "application/rss+xml",
                         "application/atom+xml", "application/ld+json", "application/vnd.api+json",
                         "application/x-www-form-urlencoded", "image/svg+xml"})


def is_text_media_type(content_type: str | None) -> bool:
    """text/*, JSON and XML types (parameters ignored): bodies a person can read in the fixture."""
    mt = (content_type or "").split(";", 1)[0].strip().lower()
    return mt.startswith("text/") or mt in _TEXT_TYPES or mt.endswith(_TEXT_SUFFIXES)


def body_member(body: bytes, content_type: str | None) -> dict:
    """`{"text": …}` for valid UTF-8 under a text media type, else `{"base64": …}`."""
    if is_text_media_type(content_type):
        try:
            return {"text": body.decode("utf-8")}
        except UnicodeDecodeError:
            pass
    return {"base64": base64.b64encode(body).decode("ascii")}


def dump_response(r: RecordedResponse, body_file=None) -> dict:
    """The JSON value of one response. `body_file(response)` may return a relative path to
    write the body as a file member instead of inline (the caller writes the file)."""
    doc: dict = {"status": r.status, "headers": [list(p) for p in r.headers]}
    path = body_file(r) if body_file is not None and r.body else None
    if path is not None:
        doc["body"] = {"file": path}
    elif r.body_file is not None and r.body is None:
        doc["body"] = {"file": r.body_file}
    elif r.body:
        content_type = next((v for k, v in r.headers if k.lower() == "content-type"), None)
        doc["body"] = body_member(r.body, content_type)
    if r.delay_seconds:
        doc["delay_seconds"] = int(r.delay_seconds) if float(r.delay_seconds).is_integer() else r.delay_seconds
    if r.drip is not None:
        doc["drip"] = int(r.drip) if float(r.drip).is_integer() else r.drip
    if r.drop_before_headers:
        doc["drop_connection"] = True
    elif r.drop_after is not None:
        doc["drop_connection"] = r.drop_after
    if r.hang is not None:
        doc["hang"] = r.hang
    if r.completed_at is not None:
        doc["completed_at"] = r.completed_at
    return doc


def dump_fixture(fixture: Fixture, *, body_file=None) -> list | dict:
    """The JSON value of a fixture, in the fixture's exchange order: an array of exchanges,
    or `{"exchanges": [...], "runs": [...]}` when the fixture records per-run metadata.

    Bodies are inline — text when the media type is textual and the bytes are valid UTF-8,
    else base64 — unless `body_file(response)` returns a relative path for one (the caller
    writes that file). Behaviours and comments are kept, so parse(dump(f)) == f for a
    fixture whose bodies are loaded."""
    out = []
    for exchange in fixture.exchanges:
        responses = [dump_response(r, body_file) for r in exchange.responses]
        entry: dict = {"request": {"method": "GET", "url": exchange.url,
                                   "headers": [list(p) for p in exchange.request_headers]}}
        if exchange.comment is not None:
            entry["comment"] = exchange.comment
        if len(responses) == 1 and exchange.per == "run":
            entry["response"] = responses[0]
        else:
            entry["responses"] = responses
            entry["per"] = exchange.per
        out.append(entry)
    if fixture.runs:
        return {"exchanges": out, "runs": [{"run": r.run, "started_at": r.started_at} for r in fixture.runs]}
    return out
