"""Web archives (WARC, ISO 28500) to and from fixtures, with warcio (shell). docs/fixtures.md.

Import (`import_warcs`): every `response` record whose block is an HTTP response
(`application/http; msgtype=response`) for an https:// target becomes a recorded response:
status and headers as archived, body with transfer- and content-encoding removed (the fixture
stores decoded bodies); a body the archiver already stored decoded under its Content-Encoding
(wabac.js) is taken as stored when the record vouches for it (`_stored_decoded`). `request`
records give the request headers of the response they are concurrent to (Host dropped: the URL
carries it). `revisit` records are resolved to the payload
they refer to — by WARC-Refers-To, else WARC-Payload-Digest, else target URI and date — when
that payload is in the input, and skipped (with a note) when it is not; a revisit's own HTTP
status and headers are kept unless it is a 304 (server-not-modified), which takes the
original's. `warcinfo`, `metadata`, `resource` and other records are skipped, each counted
under its reason (SKIP_REASONS). Several captures of one URL become a per-run sequence in
WARC-Date order (capture n is run n).

Export (`export_warc`): a warcinfo record, then per recorded response a request record and a
response record whose HTTP block is consistent (Content-Encoding and Transfer-Encoding dropped,
Content-Length the decoded length). Deterministic: WARC-Record-IDs are name-based UUIDs of the
content, WARC-Date is the response's Date header (else 2024-01-01T00:00:00Z plus one day per
run index), gzip per record with a zero timestamp. What HTTP cannot say — a sequence position,
`per`, behaviours, a comment, headers that differ from the consistent ones — travels in one
extension field, `WARC-Fixture` (compact JSON), which import honours, so fixture → WARC →
fixture is the identity. A response that never had a status line (a connection dropped or
hung before the headers) is exported as a `metadata` record with that field instead.
"""

from __future__ import annotations

import base64
import datetime as dt
import email.utils
import hashlib
import http
import io
import json
import uuid
from dataclasses import dataclass, field

from warcio.archiveiterator import ArchiveIterator
from warcio.bufferedreaders import ChunkedDataReader
from warcio.exceptions import ArchiveLoadFailed
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from collection import urls
from collection.recording import decoding
from collection.recording.format import (Exchange, Fixture, FixtureError, RecordedResponse, dump_response,
                                         parse_fixture)

FIXTURE_FIELD = "WARC-Fixture"
EPOCH = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
_NAMESPACE = uuid.UUID("6f1c7c1e-5b0e-4d55-9a53-3c2f5d8f0a11")
_ENCODING_HEADERS = ("content-encoding", "transfer-encoding", "content-length")


class WarcError(Exception):
    """An archive that cannot be read."""


@dataclass
class _Capture:
    url: str
    date: str
    order: int
    response: RecordedResponse
    request_headers: tuple[tuple[str, str], ...] | None = None
    extra: dict = field(default_factory=dict)      # the WARC-Fixture field
    record_id: str = ""
    concurrent: tuple[str, ...] = ()
    kind: str = "response"                          # its WARC-Type


def _target(record) -> str | None:
    uri = (record.rec_headers.get_header("WARC-Target-URI") or "").strip()
    if uri.startswith("<") and uri.endswith(">"):        # WARC 1.1 examples bracket it
        uri = uri[1:-1]
    return uri or None


# The largest body an import decodes: twice the fetcher's per-body cap, so that every body a
# live run could have read is imported, and a bomb in an archive is a skipped record.
MAX_DECODED_BYTES = 64 * 1024 * 1024

# Why a record is left out: stable keys of the import's `skipped_by_reason` (docs/fixtures.md).
SKIP_REASONS = {
    "record_type": "a record type the import does not take (warcinfo, metadata, resource, ...)",
    "no_http_block": "a record whose block holds no HTTP message",
    "no_target_uri": "a record with no WARC-Target-URI",
    "not_https": "a capture of a target that is not https://",
    "no_http_status": "a capture with no HTTP status line",
    "unknown_coding": "a body in a Content-Encoding this tool cannot decode",
    "undecodable": "a body not in its declared Content-Encoding, with nothing to show it was stored decoded",
    "too_large": f"a body that decodes to more than {MAX_DECODED_BYTES} bytes",
    "revisit_unresolved": "a revisit of a payload not in the input",
    "request_unpaired": "a request record that no imported response pairs with",
    "bad_url": "a target URI this tool cannot canonicalise",
    "bad_fixture_field": f"a record whose {FIXTURE_FIELD} field is not a valid fixture response",
}
MAX_NOTES = 100         # details kept in the report; the counts above are always whole


@dataclass(frozen=True)
class _Body:
    body: bytes
    complete: bool
    stored_decoded: str | None = None      # the evidence, when the body was archived decoded


def _decode(raw: bytes, headers: list[tuple[str, str]], cut: bool, payload_digest: str | None) -> _Body:
    """The body with transfer- and content-encoding removed (the headers stay as archived:
    replay drops the coding headers of the decoded bodies it serves), and whether it is whole
    — its block was not cut (`cut`), it is as long as its Content-Length says, and its encoded
    stream reached its end. A body the archiver stored decoded under its Content-Encoding
    (wabac.js does) is taken as stored when `_stored_decoded` finds evidence for it. Raises
    decoding.UnknownCoding, decoding.Undecodable (bytes not in the coding, and no such
    evidence) or decoding.TooLarge."""
    get = lambda name: next((v for k, v in headers if k.lower() == name), None)  # noqa: E731
    chunked = "chunked" in (get("transfer-encoding") or "").lower()
    body = ChunkedDataReader(io.BytesIO(raw), decomp_type=None).read() if chunked else raw
    length = (get("content-length") or "").strip()
    declared = int(length) if length.isdigit() and not chunked else None
    whole = not cut and (declared is None or len(body) >= declared)
    header = get("content-encoding")
    codings = decoding.encodings_of(header)
    try:
        decoded = decoding.decode(body, header, MAX_DECODED_BYTES)
    except decoding.UnknownCoding:
        raise
    except decoding.Undecodable:
        evidence = _stored_decoded(raw, body, codings, cut, declared, payload_digest, prefix=False)
        if evidence is None:
            raise
        return _Body(body, whole, evidence)
    if not decoded.complete:
        # br and raw deflate have no magic number: short plain bytes can read as the start of
        # such a stream, so only a payload digest over exactly these bytes says they are plain
        evidence = _stored_decoded(raw, body, codings, cut, declared, payload_digest, prefix=True)
        if evidence is not None:
            return _Body(body, whole, evidence)
    return _Body(decoded.body, whole and decoded.complete)


def _stored_decoded(raw: bytes, body: bytes, codings: list[str], cut: bool, declared: int | None,
                    payload_digest: str | None, prefix: bool) -> str | None:
    """What shows that `body`, which is not a whole stream of its declared codings, is the
    decoded body stored as such, or None. All of: the record is whole (not cut); the bytes do
    not begin with the magic number of the last coding applied (bytes that do are a damaged
    stream, never plain); and the record vouches for exactly these bytes — its
    WARC-Payload-Digest matches them, or (no digest this tool can compute, and not a mere
    stream prefix) its Content-Length equals their length. Nothing is decompressed here, so
    no bomb can pass: a real stream that decodes too far is decoding.TooLarge before this."""
    if cut or not codings or decoding.carries_magic(body, codings[-1]):
        return None
    match = _digest_matches(payload_digest, (raw, body))
    if match is True:
        return "WARC-Payload-Digest"
    if match is None and not prefix and declared == len(body):
        return "Content-Length"
    return None


_DIGESTS = {"sha1": "sha1", "sha256": "sha256", "sha512": "sha512", "md5": "md5"}


def _digest_matches(value: str | None, candidates: tuple[bytes, ...]) -> bool | None:
    """Whether a WARC-Payload-Digest (`sha1:BASE32`, `sha256:hex`, `sha-256:hex`, …) is the
    digest of one of `candidates`; None when there is none, or none this tool can compute."""
    algorithm, _, encoded = (value or "").strip().partition(":")
    name = _DIGESTS.get(algorithm.lower().replace("-", ""))
    if name is None or not encoded:
        return None
    size = hashlib.new(name).digest_size
    encoded = encoded.strip()
    try:
        if len(encoded) == 2 * size and all(c in "0123456789abcdefABCDEF" for c in encoded):
            expected = bytes.fromhex(encoded)
        else:
            expected = base64.b32decode(encoded.upper() + "=" * (-len(encoded) % 8))
    except ValueError:
        return None
    if len(expected) != size:
        return None
    return any(hashlib.new(name, data).digest() == expected for data in candidates)


def _extra(record) -> dict:
    value = record.rec_headers.get_header(FIXTURE_FIELD)
    if not value:
        return {}
    try:
        extra = json.loads(value)
    except ValueError:
        return {}
    return extra if isinstance(extra, dict) else {}


def _with_extra(response: RecordedResponse, extra: dict) -> RecordedResponse:
    """Apply the WARC-Fixture members (headers, behaviours) to an imported response."""
    doc = dump_response(response)
    if "headers" in extra:
        doc["headers"] = extra["headers"]
    elif extra.get("content_length") is False:
        doc["headers"] = [[k, v] for k, v in response.headers if k.lower() != "content-length"]
    for name in ("delay_seconds", "drip", "drop_connection", "hang"):
        if name in extra:
            doc[name] = extra[name]
    exchange = parse_fixture([{"request": {"url": "https://x.invalid/"}, "response": doc}]).exchanges[0]
    return exchange.responses[0]


def import_warcs(paths) -> tuple[Fixture, dict]:
    """A fixture from WARC files (plain or gzip), and counts of what was taken and skipped.

    Every record read is accounted for: `records` == `responses` + `revisits_resolved` +
    `requests` + `skipped`, and every skipped record is counted under its reason
    (`skipped_by_reason`, keys of SKIP_REASONS) and its WARC-Type (`skipped_by_type`)."""
    captures: list[_Capture] = []
    requests_by_id: dict[str, tuple] = {}       # request key -> request headers
    request_for: dict[str, str] = {}            # response record id -> request key
    payload_by_id: dict[str, RecordedResponse] = {}
    payload_by_digest: dict[str, RecordedResponse] = {}
    payload_by_uri_date: dict[tuple[str, str], RecordedResponse] = {}
    revisits: list[tuple] = []
    stats = {"files": len(paths), "records": 0, "responses": 0, "revisits_resolved": 0, "requests": 0,
             "skipped": 0, "skipped_by_type": {}, "skipped_by_reason": {}, "stored_decoded": 0, "truncated": 0,
             "notes": [], "notes_left_off": 0}
    order = 0

    def note(text: str) -> None:
        if len(stats["notes"]) < MAX_NOTES:
            stats["notes"].append(text)
        else:
            stats["notes_left_off"] += 1

    def skip(kind: str, reason: str, detail: str | None = None) -> None:
        stats["skipped"] += 1
        stats["skipped_by_type"][kind] = stats["skipped_by_type"].get(kind, 0) + 1
        stats["skipped_by_reason"][reason] = stats["skipped_by_reason"].get(reason, 0) + 1
        if detail:
            note(f"{detail}; not imported ({reason})")

    def canonical(kind: str, url: str, record) -> str | None:
        try:
            return urls.canonicalise(url)
        except urls.UrlError as exc:
            skip(kind, "bad_url", f"{url}: {exc}")
            record.raw_stream.read()
            return None

    def take(kind: str, url: str, date: str, response: RecordedResponse, extra: dict, record) -> None:
        capture = _Capture(url, date, order, response, None, extra, kind=kind)
        _link(record, capture)
        captures.append(capture)

    for path in paths:
        with open(path, "rb") as stream:
            try:
                for record in ArchiveIterator(stream, arc2warc=True):
                    stats["records"] += 1
                    order += 1
                    kind = record.rec_type or "unknown"
                    record_id = record.rec_headers.get_header("WARC-Record-ID") or ""
                    url = _target(record)
                    date = record.rec_headers.get_header("WARC-Date") or ""
                    extra = _extra(record)
                    if kind == "request" and record.http_headers is not None:
                        headers = tuple((k, v) for k, v in record.http_headers.headers if k.lower() != "host")
                        key = record_id or f"#{order}"
                        requests_by_id[key] = headers
                        for other in (record.rec_headers.get_header("WARC-Concurrent-To") or "").split():
                            request_for[other] = key
                        record.raw_stream.read()
                        continue
                    if kind == "metadata" and extra.get("response") is not None and url:
                        if (target := canonical(kind, url, record)) is None:
                            continue
                        try:
                            response = parse_fixture([{"request": {"url": "https://x.invalid/"},
                                                       "response": extra["response"]}]).exchanges[0].responses[0]
                        except FixtureError as exc:
                            skip(kind, "bad_fixture_field", f"{url}: its {FIXTURE_FIELD} field is invalid ({exc})")
                            continue
                        stats["responses"] += 1
                        take(kind, target, date, response, extra, record)
                        continue
                    reason = ("record_type" if kind not in ("response", "revisit", "request")
                              else "no_http_block" if record.http_headers is None
                              else "no_target_uri" if not url else None)
                    if reason is not None:
                        skip(kind, reason)
                        record.raw_stream.read()
                        continue
                    if not url.lower().startswith("https://"):
                        skip(kind, "not_https", f"{url}: not https")
                        record.raw_stream.read()
                        continue
                    if (target := canonical(kind, url, record)) is None:
                        continue
                    try:
                        status = int(record.http_headers.get_statuscode())
                    except (TypeError, ValueError):
                        skip(kind, "no_http_status", f"{url}: no HTTP status in the {kind} record")
                        continue
                    headers = [(k, v) for k, v in record.http_headers.headers]
                    raw = record.raw_stream.read()
                    cut = getattr(record.raw_stream, "limit", 0) > 0    # the archive ends inside the block
                    digest = record.rec_headers.get_header("WARC-Payload-Digest")
                    if kind == "revisit":
                        revisits.append((target, date, order, status, tuple(headers), extra, record_id,
                                         tuple((record.rec_headers.get_header("WARC-Concurrent-To") or "").split()),
                                         record.rec_headers.get_header("WARC-Refers-To"), digest,
                                         record.rec_headers.get_header("WARC-Refers-To-Target-URI"),
                                         record.rec_headers.get_header("WARC-Refers-To-Date")))
                        continue
                    try:
                        decoded = _decode(raw, headers, cut, digest)
                    except decoding.UnknownCoding as exc:
                        skip(kind, "unknown_coding", f"{url}: {exc}")
                        continue
                    except decoding.Undecodable as exc:
                        skip(kind, "undecodable", f"{url}: {exc}")
                        continue
                    except decoding.TooLarge as exc:
                        skip(kind, "too_large", f"{url}: {exc}")
                        continue
                    body = decoded.body
                    # a short record is never a complete answer: it replays as a
                    # connection that dropped after the bytes the archive holds
                    drop_after = None if decoded.complete else len(body)
                    response = RecordedResponse(status, tuple(headers), body, drop_after=drop_after)
                    if extra:
                        try:
                            response = _with_extra(response, extra)
                        except FixtureError as exc:
                            skip(kind, "bad_fixture_field", f"{url}: its {FIXTURE_FIELD} field is invalid ({exc})")
                            continue
                    if decoded.stored_decoded:
                        stats["stored_decoded"] += 1
                        coding = next(v for k, v in headers if k.lower() == "content-encoding").strip()
                        note(f"{url}: stored decoded under Content-Encoding {coding} (the bytes are not {coding} "
                             f"data and its {decoded.stored_decoded} matches them); imported as stored")
                    if not decoded.complete:
                        stats["truncated"] += 1
                        note(f"{url}: the record is cut short ({len(body)} bytes); "
                             "imported as a connection dropped after them")
                    stats["responses"] += 1
                    payload_by_id[record_id] = response
                    if digest:
                        payload_by_digest[digest] = response
                    payload_by_uri_date[(url, date)] = response
                    take(kind, target, date, response, extra, record)
            except ArchiveLoadFailed as exc:
                raise WarcError(f"{path}: not a readable WARC: {exc}") from None
    for (url, date, position, status, headers, extra, record_id, concurrent, refers_to, digest, refers_uri,
         refers_date) in revisits:
        original = (payload_by_id.get(refers_to or "") or payload_by_digest.get(digest or "")
                    or payload_by_uri_date.get((refers_uri or "", refers_date or "")))
        if original is None:
            skip("revisit", "revisit_unresolved", f"{url}: revisit of a payload not in the input")
            continue
        if status == 304:
            status, headers = original.status, original.headers
        response = RecordedResponse(status, headers, original.body)
        if extra:
            try:
                response = _with_extra(response, extra)
            except FixtureError as exc:
                skip("revisit", "bad_fixture_field", f"{url}: its {FIXTURE_FIELD} field is invalid ({exc})")
                continue
        stats["revisits_resolved"] += 1
        captures.append(_Capture(url, date, position, response, None, extra, record_id, concurrent, "revisit"))
    # Pair requests with responses either way round (wget: the response names its request;
    # Heritrix: the request, written after, names its response).
    used: set[str] = set()
    for capture in captures:
        key = request_for.get(capture.record_id) or next(
            (other for other in capture.concurrent if other in requests_by_id), None)
        if key is not None:
            capture.request_headers = requests_by_id[key]
            used.add(key)
    stats["requests"] = len(used)
    for key in sorted(set(requests_by_id) - used):
        skip("request", "request_unpaired")
    return _fixture(captures), stats


def _link(record, capture: _Capture) -> None:
    """Remember the ids that pair this capture with its request (resolved once all is read)."""
    capture.record_id = record.rec_headers.get_header("WARC-Record-ID") or ""
    capture.concurrent = tuple((record.rec_headers.get_header("WARC-Concurrent-To") or "").split())


def _fixture(captures: list[_Capture]) -> Fixture:
    by_url: dict[str, list[_Capture]] = {}
    for capture in captures:
        by_url.setdefault(capture.url, []).append(capture)
    exchanges = []
    for url in sorted(by_url):
        items = sorted(by_url[url], key=lambda c: (c.extra.get("index", 0) if c.extra else 0, c.date, c.order))
        first = items[0]
        extra = first.extra or {}
        per = extra.get("per", "run")
        headers = next((c.request_headers for c in items if c.request_headers is not None), ())
        exchanges.append(Exchange(url, tuple(headers), tuple(c.response for c in items), per,
                                  extra.get("comment")))
    return Fixture(tuple(exchanges))


# --- export -------------------------------------------------------------------------------------

def _record_id(*parts: str) -> str:
    return f"<urn:uuid:{uuid.uuid5(_NAMESPACE, chr(31).join(parts))}>"


def _warc_date(response: RecordedResponse, index: int) -> str:
    value = next((v for k, v in response.headers if k.lower() == "date"), None)
    moment = None
    if value:
        try:
            moment = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            moment = None
    if moment is None or moment.tzinfo is None:
        moment = EPOCH + dt.timedelta(days=index)
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _consistent_headers(response: RecordedResponse) -> list[tuple[str, str]]:
    headers = [(k, v) for k, v in response.headers if k.lower() not in _ENCODING_HEADERS]
    headers.append(("Content-Length", str(len(response.body or b""))))
    return headers


def export_warc(fixture: Fixture, path: str) -> int:
    """Write `fixture` (bodies loaded) to `path` as gzip-per-record WARC/1.0; returns the record count."""
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True, warc_version="1.0")
        info = b"software: collection\r\nformat: WARC File Format 1.0\r\ndescription: exported from a fixture\r\n"
        writer.write_record(writer.create_warc_record(
            "", "warcinfo", payload=io.BytesIO(info), length=len(info), warc_content_type="application/warc-fields",
            warc_headers_dict={"WARC-Record-ID": _record_id("warcinfo", hashlib.sha256(info).hexdigest()),
                               "WARC-Date": EPOCH.strftime("%Y-%m-%dT%H:%M:%SZ"),
                               "WARC-Filename": path.rsplit("/", 1)[-1]}))
        count = 1
        for exchange in fixture.exchanges:
            for index, response in enumerate(exchange.responses):
                count += _export_one(writer, exchange, index, response)
    return count


def _export_one(writer: WARCWriter, exchange: Exchange, index: int, response: RecordedResponse) -> int:
    body = response.body or b""
    digest = hashlib.sha256(body).hexdigest()
    key = (exchange.url, str(index), str(response.status), digest)
    date = _warc_date(response, index)
    extra: dict = {}
    if len(exchange.responses) > 1 or exchange.per != "run":
        extra.update(index=index, per=exchange.per)
    if exchange.comment is not None and index == 0:
        extra["comment"] = exchange.comment
    doc = dump_response(response)
    behaviours = {k: doc[k] for k in ("delay_seconds", "drip", "drop_connection", "hang") if k in doc}
    no_status_line = response.drop_before_headers or response.hang == "before_headers"
    response_id = _record_id("response", *key)
    if no_status_line:
        extra["response"] = doc
        meta = b""
        record = writer.create_warc_record(
            exchange.url, "metadata", payload=io.BytesIO(meta), length=0, warc_content_type="application/warc-fields",
            warc_headers_dict={"WARC-Record-ID": response_id, "WARC-Date": date,
                               FIXTURE_FIELD: json.dumps(extra, sort_keys=True, separators=(",", ":"))})
        writer.write_record(record)
        return 1
    extra.update(behaviours)
    headers = _consistent_headers(response)
    if headers[:-1] == list(response.headers):
        extra["content_length"] = False            # the fixture states none; HTTP needs one
    elif headers != list(response.headers):
        extra["headers"] = [list(p) for p in response.headers]
    host = exchange.url.split("/")[2]
    path = exchange.url.split(host, 1)[1] or "/"
    request_headers = StatusAndHeaders(f"GET {path} HTTP/1.1", [("Host", host), *exchange.request_headers],
                                       is_http_request=True)
    request_id = _record_id("request", *key)
    request = writer.create_warc_record(
        exchange.url, "request", http_headers=request_headers,
        warc_headers_dict={"WARC-Record-ID": request_id, "WARC-Date": date, "WARC-Concurrent-To": response_id})
    phrase = _phrase(response.status)
    warc_headers = {"WARC-Record-ID": response_id, "WARC-Date": date}
    if extra:
        warc_headers[FIXTURE_FIELD] = json.dumps(extra, sort_keys=True, separators=(",", ":"))
    record = writer.create_warc_record(
        exchange.url, "response", payload=io.BytesIO(body), length=len(body),
        http_headers=StatusAndHeaders(f"{response.status} {phrase}".rstrip(), headers, protocol="HTTP/1.1"),
        warc_headers_dict=warc_headers)
    writer.write_record(request)
    writer.write_record(record)
    return 2


def _phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return ""
