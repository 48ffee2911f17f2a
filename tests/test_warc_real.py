"""`fixture import-warc` on real archives written by other crawlers (tests/data/warc/, sources in
its README): bodies decoded whatever their coding (gzip, chunked, and — re-encoded from the
real example.com body — br and zstd), a record cut short never imported as a complete answer,
a coding nobody can decode refused with a note. Issue 15.

Issue 24 point 11: a body stored decoded under its Content-Encoding (wabac.js, from
webrecorder/py-wacz) imports as stored and runs; every record left out is counted by reason;
hostile variants of that record (a real bomb, a damaged stream, bytes nothing vouches for)
are still refused."""

from __future__ import annotations

import base64
import csv
import gzip
import hashlib
import io
import json
import zlib
from pathlib import Path

import brotli
import pytest
import zstandard
from click.testing import CliRunner
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from collection.cli import cli
from collection.fetch.budgets import Budget
from collection.fetch.clock import VirtualClock
from collection.fetch.egress import Egress
from collection.fetch.fetcher import FAILED, FETCHED, Fetcher, FetchSpec
from collection.fetch.politeness import Politeness
from collection.recording.replay import ReplayTransport
from collection.recording.warc import import_warcs

DATA = Path(__file__).resolve().parent / "data" / "warc"


def _https(name: str, tmp_path: Path, cut_at: int | None = None) -> str:
    """The real archive with its targets moved to https (the blocks are unchanged)."""
    data = (DATA / name).read_bytes().replace(b"WARC-Target-URI: http://", b"WARC-Target-URI: https://")
    if cut_at is not None:
        data = data[:cut_at]
    out = tmp_path / name
    out.write_bytes(data)
    return str(out)


def _replay(fixture, url: str):
    clock = VirtualClock()
    # as `run --replay` does: every recorded host is mapped, so no name is ever resolved
    egress = Egress({(e.url.split("/")[2], 443): ("127.0.0.1", 443) for e in fixture.exchanges})
    fetcher = Fetcher(ReplayTransport(fixture, clock), egress, allowed_origins=("https://example.com",),
                      budget=Budget(100, 10, 10**9, None), politeness=Politeness(1, 1), clock=clock, retries=0,
                      robots=False)
    return fetcher.fetch(FetchSpec(url, "page", ()))


EXAMPLE_BODY_START = b"<!doctype html>"


def test_real_gzip_archive_imports_the_decoded_page_and_resolves_its_revisit(tmp_path):
    fixture, stats = import_warcs([_https("example.warc", tmp_path)])
    (exchange,) = fixture.exchanges
    assert exchange.url == "https://example.com/"
    first = exchange.responses[0]
    assert first.status == 200 and first.body.startswith(EXAMPLE_BODY_START) and first.drop_after is None
    assert stats["revisits_resolved"] == 1 and stats["truncated"] == 0
    out = _replay(fixture, "https://example.com/")
    assert out.outcome == FETCHED and out.body == first.body


def test_real_chunked_archive_is_dechunked(tmp_path):
    fixture, stats = import_warcs([_https("example-iana.org-chunked.warc", tmp_path)])
    (exchange,) = fixture.exchanges
    body = exchange.responses[0].body
    assert body.lstrip().lower().startswith(b"<!doctype html") and body.rstrip().endswith(b"</html>")
    assert stats["truncated"] == 0


def test_real_https_redirect_archive(tmp_path):
    fixture, _ = import_warcs([str(DATA / "redirect.warc")])
    (exchange,) = fixture.exchanges
    response = exchange.responses[0]
    assert exchange.url == "https://www.iana.org/domains/example" and response.status == 301
    assert any(k.lower() == "location" for k, _ in response.headers)


def test_real_record_cut_short_is_never_imported_as_complete(tmp_path):
    """example-trunc.warc: the body holds 604 of the 606 bytes its Content-Length announces."""
    fixture, stats = import_warcs([_https("example-trunc.warc", tmp_path)])
    (exchange,) = fixture.exchanges
    response = exchange.responses[0]
    assert stats["truncated"] == 1
    assert response.drop_after == len(response.body)        # replays as a dropped connection
    out = _replay(fixture, "https://example.com/")
    assert (out.outcome, out.failure_code) == (FAILED, "connection_error")


def test_archive_cut_off_mid_record_marks_its_last_record(tmp_path):
    whole = (DATA / "example.warc").read_bytes()
    cut = whole.index(b"WARC-Type: response") + 1000          # inside the response's HTTP body
    fixture, stats = import_warcs([_https("example.warc", tmp_path, cut_at=cut)])
    (exchange,) = fixture.exchanges
    assert stats["truncated"] == 1 and exchange.responses[0].drop_after is not None
    assert _replay(fixture, "https://example.com/").outcome == FAILED


def _recoded_archive(tmp_path: Path, coding: str, encode) -> tuple[str, bytes]:
    """A response record carrying the real example.com body of example.warc, re-encoded in
    `coding` with its headers as archived (a crawler that asked for br or zstd writes this)."""
    fixture, _ = import_warcs([_https("example.warc", tmp_path)])
    original = fixture.exchanges[0].responses[0]
    payload = encode(original.body)
    headers = [(k, v) for k, v in original.headers if k.lower() not in ("content-encoding", "content-length")]
    headers += [("Content-Encoding", coding), ("Content-Length", str(len(payload)))]
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True, warc_version="1.0")
    writer.write_record(writer.create_warc_record(
        "https://example.com/", "response", payload=io.BytesIO(payload), length=len(payload),
        http_headers=StatusAndHeaders("200 OK", headers, protocol="HTTP/1.1"),
        warc_headers_dict={"WARC-Record-ID": "<urn:uuid:3b1e0000-0000-4000-8000-000000000001>",
                           "WARC-Date": "2024-03-01T10:00:00Z"}))
    path = tmp_path / f"example-{coding}.warc.gz"
    path.write_bytes(buffer.getvalue())
    return str(path), original.body


@pytest.mark.parametrize("coding,encode", [("br", brotli.compress),
                                           ("zstd", lambda b: zstandard.ZstdCompressor().compress(b)),
                                           ("gzip", lambda b: gzip.compress(b, mtime=0))])
def test_every_coding_a_browser_crawl_holds_is_decoded(tmp_path, coding, encode):
    path, body = _recoded_archive(tmp_path, coding, encode)
    fixture, stats = import_warcs([path])
    response = fixture.exchanges[0].responses[0]
    assert response.body == body and response.drop_after is None
    out = _replay(fixture, "https://example.com/")
    assert (out.outcome, out.body) == (FETCHED, body)   # replays as what a live run reads


def test_unknown_coding_and_bombs_are_refused_with_a_note(tmp_path):
    unknown, _ = _recoded_archive(tmp_path, "x-squeeze", lambda b: b"\x00squeezed" + b)
    (tmp_path / "b").mkdir()
    bomb, _ = _recoded_archive(tmp_path / "b", "br", lambda b: brotli.compress(bytes(80 * 1024 * 1024)))
    for path in (unknown, bomb):
        fixture, stats = import_warcs([path])
        assert fixture.exchanges == () and stats["skipped_by_type"] == {"response": 1}
        assert stats["notes"] and "not imported" in stats["notes"][0]
    result = CliRunner().invoke(cli, ["fixture", "import-warc", unknown, "--out", str(tmp_path / "f.json")])
    assert result.exit_code == 1 and "Traceback" not in result.output


def test_cli_reports_a_cut_record(tmp_path):
    result = CliRunner().invoke(cli, ["fixture", "import-warc", "--json", _https("example-trunc.warc", tmp_path),
                                      "--out", str(tmp_path / "f.json")])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["truncated"] == 1
    written = json.loads((tmp_path / "f.json").read_text())
    (entry,) = written if isinstance(written, list) else written["exchanges"]
    assert isinstance(entry["response"]["drop_connection"], int)


# --- issue 24 point 11: what real archivers write -----------------------------------------------

WABAC = "example-warcinfo-metadata.warc"        # wabac.js/warcio.js, from webrecorder/py-wacz
WABAC_DIGEST = "ea8fac7c65fb589b0d53560f5251f74f9e9b243478dcb6b3ea79b5e36449c8d9"

EXAMPLE_RECIPE = {
    "name": "example_domain",
    "description": "The example.com page, as wabac.js archived it.",
    "source_class": "user_url",
    "data_classification": "public",
    "locator": {"kind": "https_url", "display_locator": "https://example.com/"},
    "rights_claim": {"claimed_basis": "public_domain_asserted"},
    "connector": {"adapter_id": "public.https.collection@2.0.0", "credential_mode": "none",
                  "origin": "https://example.com",
                  "parameters": [{"name": "reader.family_id", "value": "html.web_extract"},
                                 {"name": "reader.family_version", "value": "1.1.0"},
                                 {"name": "reader.decode_options", "value": "{}"}]},
    "limits": {"max_requests": 10},
    "collection": {
        "discovery": {"kind": "explicit", "members": [{"page_id": "home", "url": "https://example.com/"}],
                      "max_requests": 1},
        "pages": {"allowed_origins": ["https://example.com"], "max_fetches_per_run": 5,
                  "revisit": {"kind": "never"}}},
}


def _header(headers, name):
    return next((v for k, v in headers if k.lower() == name), None)


def _accounted(stats) -> bool:
    """Every record read is taken or counted as skipped under a reason."""
    return (stats["records"] == stats["responses"] + stats["revisits_resolved"] + stats["requests"]
            + stats["skipped"] == stats["responses"] + stats["revisits_resolved"] + stats["requests"]
            + sum(stats["skipped_by_reason"].values()))


def test_real_wabac_archive_imports_the_body_it_stored_decoded():
    """Issue 24 point 11: wabac.js stores the decoded body under `content-encoding: gzip`; it
    imports as stored (its WARC-Payload-Digest is of those bytes), the import says so, and the
    record replays as what a live run reads."""
    fixture, stats = import_warcs([str(DATA / WABAC)])
    (exchange,) = fixture.exchanges
    response = exchange.responses[0]
    assert exchange.url == "https://example.com/" and response.status == 200
    assert hashlib.sha256(response.body).hexdigest() == WABAC_DIGEST and response.drop_after is None
    assert response.body.startswith(EXAMPLE_BODY_START) and response.body.rstrip().endswith(b"</html>")
    assert _header(response.headers, "content-encoding") == "gzip"        # headers as archived
    assert _header(exchange.request_headers, "accept-encoding") == "gzip, deflate, br"
    assert {k: stats[k] for k in ("records", "responses", "stored_decoded", "requests", "revisits_resolved",
                                  "truncated", "skipped", "skipped_by_reason", "skipped_by_type")} == {
        "records": 4, "responses": 1, "stored_decoded": 1, "requests": 1, "revisits_resolved": 0,
        "truncated": 0, "skipped": 2, "skipped_by_reason": {"record_type": 2}, "skipped_by_type": {"warcinfo": 2}}
    out = _replay(fixture, "https://example.com/")
    assert (out.outcome, out.body) == (FETCHED, response.body)


def test_real_wabac_archive_replays_through_a_real_run(tmp_path):
    """Issue 24 point 11: `fixture import-warc` then `run --replay` on the imported fixture: the
    page is fetched and read (html.web_extract), its content digest the archive's own."""
    fixture_path = tmp_path / "example.json"
    result = CliRunner().invoke(cli, ["fixture", "import-warc", "--json", str(DATA / WABAC),
                                      "--out", str(fixture_path)])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert (report["out"], report["exchanges"], report["stored_decoded"]) == (str(fixture_path), 1, 1)
    recipe_path = tmp_path / "recipe.json"
    recipe_path.write_text(json.dumps(EXAMPLE_RECIPE))
    run = CliRunner().invoke(cli, ["run", str(recipe_path), "--state", str(tmp_path / "state"),
                                   "--replay", str(fixture_path), "--json"])
    assert run.exit_code == 0, run.output
    record = json.loads(run.stdout)
    cov = record["coverage"]
    assert (cov["fetched_this_run"], cov["failed_this_run"], cov["complete"]) == (1, 0, True)
    rows = list(csv.DictReader(io.StringIO((tmp_path / "state" / "current" / "relation.csv").read_text())))
    assert [(r["page_id"], r["title"], r["page_content_sha256"]) for r in rows] == \
        [("home", "Example Domain", WABAC_DIGEST)]


def test_cli_counts_every_skipped_record_by_reason(tmp_path):
    """Issue 24 point 11: human output and --json name each reason with its exact count."""
    path = DATA / WABAC
    human = CliRunner().invoke(cli, ["fixture", "import-warc", str(path), "--out", str(tmp_path / "h.json")])
    assert human.exit_code == 0, human.output
    lines = human.stdout.splitlines()
    assert any(line.strip().startswith("skipped 2 (record_type)") for line in lines)
    assert sum(line.strip().startswith("skipped ") for line in lines) == 1
    assert any("stored decoded" in line and "https://example.com/" in line for line in lines)


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.warc")))
def test_every_real_record_is_taken_or_counted_with_its_reason(tmp_path, name):
    """Issue 24 point 11: records == responses + revisits resolved + requests paired + skipped,
    and every skip has a reason, on every real archive (targets moved to https and not)."""
    from collection.recording.warc import SKIP_REASONS

    for path in (str(DATA / name), _https(name, tmp_path)):
        _, stats = import_warcs([path])
        assert _accounted(stats), stats
        assert set(stats["skipped_by_reason"]) <= set(SKIP_REASONS)


def test_plain_http_archive_reports_its_skips_even_when_nothing_is_written(tmp_path):
    """example.warc as archived (http:// targets): nothing to write, exit 1, yet --json still
    counts each record left out under its reason."""
    result = CliRunner().invoke(cli, ["fixture", "import-warc", "--json", str(DATA / "example.warc"),
                                      "--out", str(tmp_path / "f.json")])
    assert result.exit_code == 1 and not (tmp_path / "f.json").exists()
    report = json.loads(result.stdout.strip().splitlines()[0])
    assert report["out"] is None and report["exchanges"] == 0
    assert report["skipped_by_reason"] == {"not_https": 2, "record_type": 2, "request_unpaired": 2}
    assert report["records"] == report["skipped"] == 6


# Hostile variants: the same wabac record with its body (and digest) swapped.

def _wabac_variant(tmp_path: Path, body: bytes, *, digest: str | None = "match", headers=None,
                   name: str = "variant.warc") -> str:
    """The real wabac response record's HTTP headers over `body`; `digest` "match" (warcio
    computes it over `body`), None (no WARC-Payload-Digest), or a value written as given."""
    fixture, _ = import_warcs([str(DATA / WABAC)])
    original = fixture.exchanges[0].responses[0]
    http_headers = headers if headers is not None else list(original.headers)
    warc_headers = {"WARC-Record-ID": "<urn:uuid:3b1e0000-0000-4000-8000-000000000024>",
                    "WARC-Date": "2020-11-13T01:38:39Z"}
    if digest not in ("match", None):
        warc_headers["WARC-Payload-Digest"] = digest
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=False, warc_version="1.1")
    writer.write_record(writer.create_warc_record(
        "https://example.com/", "response", payload=io.BytesIO(body), length=len(body),
        http_headers=StatusAndHeaders("200 OK", http_headers, protocol="HTTP/1.1"), warc_headers_dict=warc_headers))
    data = buffer.getvalue()
    if digest is None:      # the WARC header is outside every length, so a line can go
        start = data.index(b"WARC-Payload-Digest:")
        data = data[:start] + data[data.index(b"\r\n", start) + 2:]
    out = tmp_path / name
    out.write_bytes(data)
    return str(out)


def _only_skip(stats, reason):
    return stats["responses"] == 0 and stats["skipped_by_reason"] == {reason: 1} and stats["stored_decoded"] == 0


def test_a_true_gzip_bomb_under_content_encoding_is_refused(tmp_path):
    """Issue 24 point 11: a real gzip stream (magic number and all) that decodes past the cap is
    too_large, whatever its digest says; it is never taken as a body stored decoded."""
    bomb = gzip.compress(bytes(80 * 1024 * 1024), mtime=0)
    fixture, stats = import_warcs([_wabac_variant(tmp_path, bomb)])
    assert fixture.exchanges == () and _only_skip(stats, "too_large")
    (tmp_path / "z").mkdir()
    zbomb = zstandard.ZstdCompressor().compress(bytes(80 * 1024 * 1024))
    headers = [(k, "zstd" if k.lower() == "content-encoding" else v) for k, v in
               import_warcs([str(DATA / WABAC)])[0].exchanges[0].responses[0].headers]
    fixture, stats = import_warcs([_wabac_variant(tmp_path / "z", zbomb, headers=headers)])
    assert fixture.exchanges == () and _only_skip(stats, "too_large")


def test_a_damaged_gzip_stream_is_not_taken_for_a_decoded_body(tmp_path):
    """Bytes that begin as gzip does but break later are a damaged stream, refused
    (undecodable) even though the digest vouches for them."""
    real = gzip.compress(b"<!doctype html><p>" + bytes(range(256)) * 40, mtime=0)
    damaged = real[:30] + bytes(b ^ 0x5A for b in real[30:60]) + real[60:]
    fixture, stats = import_warcs([_wabac_variant(tmp_path, damaged)])
    assert fixture.exchanges == () and _only_skip(stats, "undecodable")


def test_plain_bytes_need_the_record_to_vouch_for_them(tmp_path):
    """A decoded body under Content-Encoding gzip is imported only when the record vouches for
    exactly those bytes: a digest that does not match, or no digest and a Content-Length of
    other bytes (wabac's headers keep the encoded length, 648), is undecodable; no digest and
    a Content-Length equal to the stored length is stored decoded."""
    archived = import_warcs([str(DATA / WABAC)])[0].exchanges[0].responses[0]
    body = archived.body
    fixed = [(k, str(len(body)) if k.lower() == "content-length" else v) for k, v in archived.headers]
    for n, (digest, headers) in enumerate([
            ("sha-256:" + "0" * 64, None),
            ("sha1:" + "A" * 32, None),
            ("sha-256:" + "0" * 64, fixed),     # a digest that does not match outweighs the length
            (None, None),
    ]):
        (tmp_path / str(n)).mkdir()
        fixture, stats = import_warcs([_wabac_variant(tmp_path / str(n), body, digest=digest, headers=headers)])
        assert fixture.exchanges == () and _only_skip(stats, "undecodable"), (digest, stats)
    (tmp_path / "cl").mkdir()
    fixture, stats = import_warcs([_wabac_variant(tmp_path / "cl", body, digest=None, headers=fixed)])
    assert stats["stored_decoded"] == 1 and fixture.exchanges[0].responses[0].body == body
    # warcio's own digest (sha1, base32) is understood as well as wabac's sha-256 hex
    (tmp_path / "b32").mkdir()
    fixture, stats = import_warcs([_wabac_variant(tmp_path / "b32", body)])
    assert stats["stored_decoded"] == 1 and fixture.exchanges[0].responses[0].body == body


def test_a_short_plain_body_that_reads_as_a_brotli_prefix(tmp_path):
    """`[1,2,3]` is the start of a valid Brotli stream. Stored decoded under `br` with a
    matching digest it imports as stored; with no digest it stays a cut record (a dropped
    connection), never a complete answer — even when its Content-Length is the stored length,
    as a stream cut at the origin would have it."""
    body = b"[1,2,3]"
    headers = [("Content-Type", "application/json"), ("Content-Encoding", "br")]
    fixture, stats = import_warcs([_wabac_variant(tmp_path, body, headers=headers)])
    response = fixture.exchanges[0].responses[0]
    assert (response.body, response.drop_after, stats["stored_decoded"]) == (body, None, 1)
    (tmp_path / "n").mkdir()
    fixture, stats = import_warcs([_wabac_variant(tmp_path / "n", body, digest=None,
                                                  headers=[*headers, ("Content-Length", "7")])])
    response = fixture.exchanges[0].responses[0]
    assert stats["stored_decoded"] == 0 and stats["truncated"] == 1 and response.drop_after == len(response.body)


def test_unknown_coding_is_refused_even_when_the_digest_matches(tmp_path):
    """A coding this tool cannot decode has no magic to test: unknown_coding, never guessed."""
    body = b"<!doctype html><p>plain</p>"
    fixture, stats = import_warcs([_wabac_variant(tmp_path, body, headers=[("Content-Encoding", "x-squeeze")])])
    assert fixture.exchanges == () and _only_skip(stats, "unknown_coding")


@pytest.mark.parametrize("coding,data,expected", [
    ("gzip", gzip.compress(b"x", mtime=0), True), ("x-gzip", gzip.compress(b"x", mtime=0), True), ("gzip", b"<!doctype", False),
    ("zstd", zstandard.ZstdCompressor().compress(b"x"), True),
    ("zstd", b"\x50\x2a\x4d\x18\x00\x00\x00\x00", True),           # a skippable frame
    ("zstd", b"{\"a\":1}", False),
    ("deflate", zlib.compress(b"x"), True), ("deflate", b"[1,2,3]", False),
    ("br", brotli.compress(b"x"), False),                          # Brotli has no magic number
])
def test_magic_numbers(coding, data, expected):
    """Issue 24 point 11: which bytes are certainly a stream of their coding (never plain)."""
    from collection.recording.decoding import carries_magic

    assert carries_magic(data, coding) is expected


@pytest.mark.parametrize("value,expected", [
    ("sha-256:" + hashlib.sha256(b"abc").hexdigest(), True),        # wabac.js
    ("sha256:" + hashlib.sha256(b"abc").hexdigest().upper(), True),  # ArchiveWeb.page, any case
    ("sha1:" + base64.b32encode(hashlib.sha1(b"abc").digest()).decode(), True),   # warcio, Heritrix
    ("sha1:" + base64.b32encode(hashlib.sha1(b"abd").digest()).decode(), False),
    ("sha256:" + "0" * 64, False),
    ("sha256:not-base32!", None), ("blake3:abcd", None), ("sha1:", None), ("", None), (None, None),
])
def test_payload_digest_forms(value, expected):
    from collection.recording.warc import _digest_matches

    assert _digest_matches(value, (b"abc",)) is expected
