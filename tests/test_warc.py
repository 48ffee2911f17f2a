"""WARC import/export (collection/recording/warc.py, `collection fixture import-warc / export-warc`).

The archives are written here with warcio's WARCWriter in the shapes crawlers write: wget
(warcinfo first, request then response, the response concurrent to the request), Heritrix
(response then request, the request concurrent to the response, payload digests, revisits),
with chunked transfer-encoding and gzip content-encoding inside the HTTP payload."""

import gzip
import io
import json

import pytest
from click.testing import CliRunner
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from collection.cli import cli
from collection.recording.format import parse_fixture
from collection.recording.replay import load_fixture
from collection.recording.warc import export_warc, import_warcs

ORIGIN = "https://www.example.com"
PAGE = "<html><body><h1>Décision 1</h1><p>Approved.</p></body></html>".encode()


def _http(status_line, headers, body):
    head = status_line + "\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers) + "\r\n"
    return head.encode("latin-1") + body


def _chunked(data, size=7):
    out = b"".join(b"%x\r\n%s\r\n" % (len(data[i:i + size]), data[i:i + size]) for i in range(0, len(data), size))
    return out + b"0\r\n\r\n"


def _writer(buffer):
    return WARCWriter(buffer, gzip=True, warc_version="1.0")


def _response(writer, url, http_bytes, rid, date="2024-03-01T10:00:00Z", **extra):
    return writer.create_warc_record(url, "response", payload=io.BytesIO(http_bytes), length=len(http_bytes),
                                     warc_headers_dict={"WARC-Record-ID": rid, "WARC-Date": date, **extra})


def _request(writer, url, path, rid, date="2024-03-01T10:00:00Z", **extra):
    req = _http(f"GET {path} HTTP/1.1", [("Host", "www.example.com"), ("User-Agent", "Wget/1.21"),
                                          ("Accept", "*/*"), ("Accept-Encoding", "gzip")], b"")
    return writer.create_warc_record(url, "request", payload=io.BytesIO(req), length=len(req),
                                     warc_headers_dict={"WARC-Record-ID": rid, "WARC-Date": date, **extra})


def _wget_warc(path):
    """wget --warc-file: warcinfo, then request/response pairs."""
    buffer = io.BytesIO()
    w = _writer(buffer)
    info = b"software: Wget/1.21.3\r\nformat: WARC File Format 1.0\r\n"
    w.write_record(w.create_warc_record("", "warcinfo", payload=io.BytesIO(info), length=len(info),
                                        warc_content_type="application/warc-fields",
                                        warc_headers_dict={"WARC-Record-ID": "<urn:uuid:00000000-0000-0000-0000-000000000001>",
                                                           "WARC-Date": "2024-03-01T10:00:00Z"}))
    pairs = [
        ("/d/1", _http("HTTP/1.1 200 OK", [("Content-Type", "text/html; charset=utf-8"), ("Content-Length", str(len(PAGE)))], PAGE)),
        ("/d/2", _http("HTTP/1.1 200 OK", [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked"),
                                           ("Content-Encoding", "gzip")], _chunked(gzip.compress(b"<p>two</p>" * 40, mtime=0)))),
        ("/d/3", _http("HTTP/1.1 301 Moved Permanently", [("Location", "/d/3/"), ("Content-Length", "0")], b"")),
        ("/api?page=1", _http("HTTP/1.1 200 OK", [("Content-Type", "application/json"), ("Content-Encoding", "gzip")],
                              gzip.compress(b'[{"id":1}]', mtime=0))),
    ]
    for n, (p, http_bytes) in enumerate(pairs, start=1):
        req_id, resp_id = f"<urn:uuid:00000000-0000-0000-0000-0000000001{n:02d}>", f"<urn:uuid:00000000-0000-0000-0000-0000000002{n:02d}>"
        w.write_record(_request(w, ORIGIN + p, p, req_id))
        w.write_record(_response(w, ORIGIN + p, http_bytes, resp_id, **{"WARC-Concurrent-To": req_id}))
    # a plain-http capture and a metadata record: skipped
    w.write_record(_response(w, "http://www.example.com/old", _http("HTTP/1.1 200 OK", [("Content-Type", "text/html")], b"x"),
                             "<urn:uuid:00000000-0000-0000-0000-000000000300>"))
    meta = b"outlink: https://www.example.com/elsewhere\r\n"
    w.write_record(w.create_warc_record(ORIGIN + "/d/1", "metadata", payload=io.BytesIO(meta), length=len(meta),
                                        warc_content_type="application/warc-fields",
                                        warc_headers_dict={"WARC-Record-ID": "<urn:uuid:00000000-0000-0000-0000-000000000301>",
                                                           "WARC-Date": "2024-03-01T10:00:00Z"}))
    path.write_bytes(buffer.getvalue())


def _heritrix_warc(path):
    """Heritrix: response before request, payload digests, revisits (identical-payload-digest)."""
    buffer = io.BytesIO()
    w = _writer(buffer)
    body = b"<p>same bytes</p>"
    first = _response(w, ORIGIN + "/same", _http("HTTP/1.1 200 OK", [("Content-Type", "text/html")], body),
                      "<urn:uuid:00000000-0000-0000-0000-000000000401>", "2024-03-01T11:00:00Z")
    w.write_record(first)
    w.write_record(_request(w, ORIGIN + "/same", "/same", "<urn:uuid:00000000-0000-0000-0000-000000000402>",
                            "2024-03-01T11:00:00Z", **{"WARC-Concurrent-To": "<urn:uuid:00000000-0000-0000-0000-000000000401>"}))
    digest = first.rec_headers.get_header("WARC-Payload-Digest")
    # a second capture a day later with the same payload: a revisit naming the first
    revisit = w.create_revisit_record(ORIGIN + "/same", digest, ORIGIN + "/same", "2024-03-01T11:00:00Z",
                                      http_headers=StatusAndHeaders("200 OK", [("Content-Type", "text/html"), ("X-Capture", "2")],
                                                                    protocol="HTTP/1.1"),
                                      warc_headers_dict={"WARC-Record-ID": "<urn:uuid:00000000-0000-0000-0000-000000000403>",
                                                         "WARC-Date": "2024-03-02T11:00:00Z",
                                                         "WARC-Refers-To": "<urn:uuid:00000000-0000-0000-0000-000000000401>"})
    w.write_record(revisit)
    # a revisit whose payload is not in the input: skipped
    w.write_record(w.create_revisit_record(ORIGIN + "/gone", "sha1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", ORIGIN + "/gone",
                                           "2023-01-01T00:00:00Z",
                                           http_headers=StatusAndHeaders("200 OK", [], protocol="HTTP/1.1"),
                                           warc_headers_dict={"WARC-Record-ID": "<urn:uuid:00000000-0000-0000-0000-000000000404>",
                                                              "WARC-Date": "2024-03-02T11:00:00Z"}))
    path.write_bytes(buffer.getvalue())


def test_import_wget_shaped_warc(tmp_path):
    _wget_warc(tmp_path / "wget.warc.gz")
    fixture, stats = import_warcs([str(tmp_path / "wget.warc.gz")])
    by_url = fixture.by_url()
    assert sorted(by_url) == sorted(ORIGIN + p for p in ("/d/1", "/d/2", "/d/3", "/api?page=1"))
    assert by_url[ORIGIN + "/d/1"].responses[0].body == PAGE
    assert by_url[ORIGIN + "/d/2"].responses[0].body == b"<p>two</p>" * 40           # de-chunked and gunzipped
    assert by_url[ORIGIN + "/api?page=1"].responses[0].body == b'[{"id":1}]'
    redirect = by_url[ORIGIN + "/d/3"].responses[0]
    assert (redirect.status, dict(redirect.headers)["Location"]) == (301, "/d/3/")
    assert by_url[ORIGIN + "/d/1"].request_headers == (("User-Agent", "Wget/1.21"), ("Accept", "*/*"),
                                                       ("Accept-Encoding", "gzip"))
    assert stats["responses"] == 4 and stats["skipped_by_type"] == {"warcinfo": 1, "response": 1, "metadata": 1}


def test_import_heritrix_revisits_across_files(tmp_path):
    _wget_warc(tmp_path / "a.warc.gz")
    _heritrix_warc(tmp_path / "b.warc.gz")
    fixture, stats = import_warcs([str(tmp_path / "a.warc.gz"), str(tmp_path / "b.warc.gz")])
    same = fixture.by_url()[ORIGIN + "/same"]
    assert [r.body for r in same.responses] == [b"<p>same bytes</p>"] * 2           # revisit resolved
    assert ("X-Capture", "2") in same.responses[1].headers and same.per == "run"  # capture 2 = run 2
    assert same.request_headers[0] == ("User-Agent", "Wget/1.21")                 # request written after
    assert ORIGIN + "/gone" not in fixture.by_url()
    assert stats["revisits_resolved"] == 1 and stats["skipped_by_type"]["revisit"] == 1


ROUND_TRIP = [
    {"request": {"url": ORIGIN + "/a", "headers": [["Accept", "text/html"]]},
     "response": {"status": 200, "headers": [["Content-Type", "text/html"], ["Content-Encoding", "gzip"],
                                             ["Date", "Tue, 05 Mar 2024 09:30:00 GMT"]], "body": {"text": "<p>a</p>"}}},
    {"request": {"url": ORIGIN + "/b"}, "comment": "changes in run 2",
     "responses": [{"status": 200, "headers": [["Content-Type", "text/html"]], "body": {"text": "run1"}},
                   {"status": 200, "headers": [["Content-Type", "text/html"]], "body": {"text": "run2"}}]},
    {"request": {"url": ORIGIN + "/flaky"}, "per": "request",
     "responses": [{"status": 503, "headers": [["Retry-After", "20"]]},
                   {"status": 200, "headers": [["Content-Type", "text/html"]], "body": {"text": "ok"},
                    "delay_seconds": 0.5, "drip": 1000}]},
    {"request": {"url": ORIGIN + "/reset"}, "response": {"status": 200, "drop_connection": True}},
    {"request": {"url": ORIGIN + "/hang"}, "response": {"status": 200, "hang": "before_headers"}},
    {"request": {"url": ORIGIN + "/cut"},
     "response": {"status": 200, "headers": [["Content-Type", "text/html"]], "body": {"text": "abcdef"}, "drop_connection": 3}},
    {"request": {"url": ORIGIN + "/img.png"},
     "response": {"status": 200, "headers": [["Content-Type", "image/png"], ["Content-Length", "4"]], "body": {"base64": "iVBORw=="}}},
    {"request": {"url": ORIGIN + "/moved"}, "response": {"status": 301, "headers": [["Location", "/moved/"]]}},
    {"request": {"url": ORIGIN + "/wp-json/wp/v2/decisions?per_page=100&page=2"},
     "response": {"status": 400, "headers": [["Content-Type", "application/json"]],
                  "body": {"text": "{\"code\":\"rest_post_invalid_page_number\"}"}}},
]


def test_round_trip_is_identity_and_export_is_deterministic(tmp_path):
    fixture = parse_fixture(ROUND_TRIP)
    first, second = tmp_path / "one" / "x.warc.gz", tmp_path / "two" / "x.warc.gz"
    first.parent.mkdir()
    second.parent.mkdir()
    export_warc(fixture, str(first))
    export_warc(fixture, str(second))
    assert first.read_bytes() == second.read_bytes()
    back, _ = import_warcs([str(first)])
    assert back == parse_fixture(sorted(ROUND_TRIP, key=lambda e: e["request"]["url"]))


def test_export_dates_and_ids_come_from_the_content(tmp_path):
    from warcio.archiveiterator import ArchiveIterator
    export_warc(parse_fixture(ROUND_TRIP), str(tmp_path / "x.warc.gz"))
    with open(tmp_path / "x.warc.gz", "rb") as stream:
        records = [(r.rec_type, r.rec_headers.get_header("WARC-Target-URI"), r.rec_headers.get_header("WARC-Date"),
                    r.rec_headers.get_header("WARC-Record-ID")) for r in ArchiveIterator(stream)]
    assert records[0][0] == "warcinfo"
    dates = {(t, u): d for t, u, d, _ in records}
    assert dates[("response", ORIGIN + "/a")] == "2024-03-05T09:30:00Z"            # the Date header
    assert dates[("response", ORIGIN + "/moved")] == "2024-01-01T00:00:00Z"        # the fixed epoch
    assert len({i for *_, i in records}) == len(records)


def test_cli_import_and_export(tmp_path):
    _wget_warc(tmp_path / "wget.warc.gz")
    runner = CliRunner()
    result = runner.invoke(cli, ["fixture", "import-warc", str(tmp_path / "wget.warc.gz"), "--out",
                                 str(tmp_path / "f.json"), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["responses"] == 4
    assert len(load_fixture(str(tmp_path / "f.json")).exchanges) == 4
    result = runner.invoke(cli, ["fixture", "export-warc", str(tmp_path / "f.json"), "--out", str(tmp_path / "o.warc.gz")])
    assert result.exit_code == 0, result.output
    (tmp_path / "bad.warc").write_bytes(b"this is not a warc\r\n\r\n")
    result = runner.invoke(cli, ["fixture", "import-warc", str(tmp_path / "bad.warc"), "--out", str(tmp_path / "g.json")])
    assert result.exit_code == 1
    result = runner.invoke(cli, ["fixture", "import-warc", str(tmp_path / "missing.warc"), "--out", str(tmp_path / "g.json")])
    assert result.exit_code == 2


def test_a_hostile_fixture_field_is_a_counted_skip_not_a_crash(tmp_path):
    """Issue 24 point 11: a WARC-Fixture field that is not a valid fixture response (on a
    response record, and on a metadata record standing for one) is skipped as
    bad_fixture_field and counted; the rest of the archive imports."""
    buffer = io.BytesIO()
    w = _writer(buffer)
    good = _http("HTTP/1.1 200 OK", [("Content-Type", "text/html"), ("Content-Length", str(len(PAGE)))], PAGE)
    w.write_record(_response(w, ORIGIN + "/d/1", good, "<urn:uuid:00000000-0000-0000-0000-000000000501>"))
    w.write_record(_response(w, ORIGIN + "/d/2", good, "<urn:uuid:00000000-0000-0000-0000-000000000502>",
                             **{"WARC-Fixture": '{"drip": "fast"}'}))
    w.write_record(w.create_warc_record(ORIGIN + "/d/3", "metadata", payload=io.BytesIO(b""), length=0,
                                        warc_content_type="application/warc-fields",
                                        warc_headers_dict={"WARC-Record-ID": "<urn:uuid:00000000-0000-0000-0000-000000000503>",
                                                           "WARC-Date": "2024-03-01T10:00:00Z",
                                                           "WARC-Fixture": '{"response": {"status": "x"}}'}))
    (tmp_path / "h.warc.gz").write_bytes(buffer.getvalue())
    fixture, stats = import_warcs([str(tmp_path / "h.warc.gz")])
    assert [e.url for e in fixture.exchanges] == [ORIGIN + "/d/1"]
    assert stats["skipped_by_reason"] == {"bad_fixture_field": 2}
    assert stats["skipped_by_type"] == {"response": 1, "metadata": 1}
    assert stats["records"] == stats["responses"] + stats["skipped"] == 3
