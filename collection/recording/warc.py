"""Web archives (WARC, ISO 28500) to and from fixtures, with warcio (shell). docs/fixtures.md.

Import (`import_warcs`): every `response` record whose block is an HTTP response
(`application/http; msgtype=response`) for an https:// target becomes a recorded response:
status and headers as archived, body with transfer- and content-encoding removed (the fixture
stores decoded bodies). `request` records give the request headers of the response they are
concurrent to (Host dropped: the URL carries it). `revisit` records are resolved to the payload
they refer to — by WARC-Refers-To, else WARC-Payload-Digest, else target URI and date — when
that payload is in the input, and skipped (with a note) when it is not; a revisit's own HTTP
status and headers are kept unless it is a 304 (server-not-modified), which takes the
original's. `warcinfo`, `metadata`, `resource` and other records are skipped. Several captures
of one URL become a per-run sequence in WARC-Date order (capture n is run n).

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
from collection.recording.format import Exchange, Fixture, RecordedResponse, dump_response, parse_fixture

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


def _target(record) -> str | None:
    uri = (record.rec_headers.get_header("WARC-Target-URI") or "").strip()
    if uri.startswith("<") and uri.endswith(">"):        # WARC 1.1 examples bracket it
        uri = uri[1:-1]
    return uri or None


# The largest body an import decodes: twice the fetcher's per-body cap, so that every body a
# live run could have read is imported, and a bomb in an archive is a skipped record.
MAX_DECODED_BYTES = 64 * 1024 * 1024


def _decode(raw: bytes, headers: list[tuple[str, str]], cut: bool):
    """(body, complete, headers): transfer- and content-encoding removed (the headers stay as
    archived: replay drops the coding headers of the decoded bodies it serves), and whether the
    body is whole — its block was not cut (`cut`), it is as long as its Content-Length
    says, and its encoded stream reached its end. Raises decoding.Undecodable (an unknown
    coding, or bytes not in it) or decoding.TooLarge."""
    get = lambda name: next((v for k, v in headers if k.lower() == name), None)  # noqa: E731
    complete = not cut
    chunked = "chunked" in (get("transfer-encoding") or "").lower()
    if chunked:
        raw = ChunkedDataReader(io.BytesIO(raw), decomp_type=None).read()
    else:
        length = (get("content-length") or "").strip()
        if length.isdigit() and len(raw) < int(length):
            complete = False
    decoded = decoding.decode(raw, get("content-encoding"), MAX_DECODED_BYTES)
    return decoded.body, complete and decoded.complete, headers


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
    """A fixture from WARC files (plain or gzip), and counts of what was taken and skipped."""
    captures: list[_Capture] = []
    requests_by_id: dict[str, tuple] = {}
    request_for: dict[str, tuple] = {}          # response record id -> request headers
    payload_by_id: dict[str, RecordedResponse] = {}
    payload_by_digest: dict[str, RecordedResponse] = {}
    payload_by_uri_date: dict[tuple[str, str], RecordedResponse] = {}
    revisits: list[tuple] = []
    stats = {"files": len(paths), "records": 0, "responses": 0, "revisits_resolved": 0, "skipped": 0,
             "skipped_by_type": {}, "truncated": 0, "notes": []}
    order = 0

    def skip(kind: str, note: str | None = None) -> None:
        stats["skipped"] += 1
        stats["skipped_by_type"][kind] = stats["skipped_by_type"].get(kind, 0) + 1
        if note and len(stats["notes"]) < 100:
            stats["notes"].append(note)

    for path in paths:
        with open(path, "rb") as stream:
            try:
                for record in ArchiveIterator(stream, arc2warc=True):
                    stats["records"] += 1
                    order += 1
                    kind = record.rec_type
                    record_id = record.rec_headers.get_header("WARC-Record-ID") or ""
                    url = _target(record)
                    date = record.rec_headers.get_header("WARC-Date") or ""
                    extra = _extra(record)
                    if kind == "request" and record.http_headers is not None:
                        headers = tuple((k, v) for k, v in record.http_headers.headers if k.lower() != "host")
                        requests_by_id[record_id] = headers
                        for other in (record.rec_headers.get_header("WARC-Concurrent-To") or "").split():
                            request_for[other] = headers
                        record.raw_stream.read()
                        continue
                    if kind == "metadata" and extra.get("response") is not None and url:
                        doc = extra["response"]
                        response = parse_fixture([{"request": {"url": "https://x.invalid/"},
                                                   "response": doc}]).exchanges[0].responses[0]
                        captures.append(_Capture(url, date, order, response, None, extra))
                        _link(record, captures[-1], request_for, requests_by_id)
                        continue
                    if kind not in ("response", "revisit") or record.http_headers is None or not url:
                        skip(kind)
                        record.raw_stream.read()
                        continue
                    if not url.lower().startswith("https://"):
                        skip(kind, f"{url}: not https, skipped")
                        record.raw_stream.read()
                        continue
                    try:
                        status = int(record.http_headers.get_statuscode())
                    except (TypeError, ValueError):
                        skip(kind, f"{url}: no HTTP status in the {kind} record")
                        continue
                    headers = [(k, v) for k, v in record.http_headers.headers]
                    raw = record.raw_stream.read()
                    cut = getattr(record.raw_stream, "limit", 0) > 0    # the archive ends inside the block
                    if kind == "revisit":
                        revisits.append((url, date, order, status, tuple(headers), extra, record_id,
                                         record.rec_headers.get_header("WARC-Refers-To"),
                                         record.rec_headers.get_header("WARC-Payload-Digest"),
                                         record.rec_headers.get_header("WARC-Refers-To-Target-URI"),
                                         record.rec_headers.get_header("WARC-Refers-To-Date")))
                        continue
                    try:
                        body, complete, headers = _decode(raw, headers, cut)
                    except (decoding.Undecodable, decoding.TooLarge) as exc:
                        skip(kind, f"{url}: {exc}; the record is not imported")
                        continue
                    drop_after = None
                    if not complete:
                        # a short record is never a complete answer: it replays as a
                        # connection that dropped after the bytes the archive holds
                        stats["truncated"] += 1
                        stats["notes"].append(f"{url}: the record is cut short ({len(body)} bytes); "
                                              "imported as a connection dropped after them")
                        drop_after = len(body)
                    response = RecordedResponse(status, tuple(headers), body, drop_after=drop_after)
                    if extra:
                        response = _with_extra(response, extra)
                    stats["responses"] += 1
                    payload_by_id[record_id] = response
                    digest = record.rec_headers.get_header("WARC-Payload-Digest")
                    if digest:
                        payload_by_digest[digest] = response
                    payload_by_uri_date[(url, date)] = response
                    captures.append(_Capture(url, date, order, response, None, extra))
                    _link(record, captures[-1], request_for, requests_by_id)
            except ArchiveLoadFailed as exc:
                raise WarcError(f"{path}: not a readable WARC: {exc}") from None
    for (url, date, position, status, headers, extra, record_id, refers_to, digest, refers_uri,
         refers_date) in revisits:
        original = (payload_by_id.get(refers_to or "") or payload_by_digest.get(digest or "")
                    or payload_by_uri_date.get((refers_uri or "", refers_date or "")))
        if original is None:
            skip("revisit", f"{url}: revisit of a payload not in the input, skipped")
            continue
        if status == 304:
            status, headers = original.status, original.headers
        response = RecordedResponse(status, headers, original.body)
        if extra:
            response = _with_extra(response, extra)
        stats["revisits_resolved"] += 1
        captures.append(_Capture(url, date, position, response, None, extra, record_id))
    # Pair requests with responses either way round (wget: the response names its request;
    # Heritrix: the request, written after, names its response).
    for capture in captures:
        capture.request_headers = request_for.get(capture.record_id) or next(
            (requests_by_id[other] for other in capture.concurrent if other in requests_by_id), None)
    return _fixture(captures, stats), stats


def _link(record, capture: _Capture, request_for: dict, requests_by_id: dict) -> None:
    """Remember the ids that pair this capture with its request (resolved once all is read)."""
    capture.record_id = record.rec_headers.get_header("WARC-Record-ID") or ""
    capture.concurrent = tuple((record.rec_headers.get_header("WARC-Concurrent-To") or "").split())


def _fixture(captures: list[_Capture], stats: dict) -> Fixture:
    # Requests written after their response (Heritrix) are linked once everything is read.
    by_url: dict[str, list[_Capture]] = {}
    for capture in captures:
        try:
            url = urls.canonicalise(capture.url)
        except urls.UrlError as exc:
            stats["skipped"] += 1
            stats["notes"].append(f"{capture.url}: {exc}")
            continue
        by_url.setdefault(url, []).append(capture)
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
