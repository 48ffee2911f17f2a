"""`fixture import-warc` on real archives written by other crawlers (tests/data/warc/, sources in
its README): bodies decoded whatever their coding (gzip, chunked, and — re-encoded from the
real example.com body — br and zstd), a record cut short never imported as a complete answer,
a coding nobody can decode refused with a note. Issue 15."""

from __future__ import annotations

import gzip
import io
import json
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
