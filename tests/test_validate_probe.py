"""`validate --probe` (D-59) against a real loopback HTTPS server with trustme certificates.

Registration makes no request (REG-37); `--probe` makes exactly one to the first discovery
address (robots.txt honoured, not charged), checks its media type and that the records
pointer names an array.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from collection.cli import cli
from loopback import Reply

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "fixtures" / "recipes" / "council_decisions.json"
FIRST = "/wp-json/wp/v2/decisions?per_page=100&page=1"
JSON = [("Content-Type", "application/json; charset=utf-8")]
RECORDS = json.dumps([{"id": 1, "link": "https://www.example.com/decisions/1", "modified": "2026-01-01"}]).encode()


def probe(server, tmp_path, document=None, *extra):
    path = tmp_path / "recipe.json"
    path.write_text(json.dumps(document) if document is not None else EXAMPLE.read_text())
    args = ["validate", "--json", "--probe", "--ca-bundle", server.ca_pem_path, *extra]
    for flag in server.resolve_flags("www.example.com"):
        args += ["--resolve", flag]
    result = CliRunner().invoke(cli, args + [str(path)])
    return result.exit_code, json.loads(result.stdout)


def codes(report):
    return [r["code"] for r in report["files"][0]["refusals"]]


def test_validate_without_probe_makes_no_request(loopback, tmp_path):
    """REG-37: registration runs on the document alone."""
    result = CliRunner().invoke(cli, ["validate", str(EXAMPLE)])
    assert result.exit_code == 0
    assert loopback.requests == []


def test_probe_accepts_a_listing_that_names_an_array(loopback, tmp_path):
    """D-59: one request to the first discovery address, robots.txt first and honoured."""
    loopback.route("/robots.txt", Reply(200, [("Content-Type", "text/plain")], b"User-agent: *\nAllow: /\n"))
    loopback.route(FIRST, Reply(200, JSON, RECORDS))
    code, report = probe(loopback, tmp_path)
    assert code == 0, report
    (entry,) = report["files"][0]["probes"]
    assert entry["status"] == 200 and entry["records"] == 1 and entry["media_type"] == "application/json"
    paths = [r.target for r in loopback.requests]
    assert paths == ["/robots.txt", FIRST]                       # exactly one listing request
    assert loopback.requests[1].header("User-Agent").startswith("CollectionBot-PublicHttps/1.0 (+")


def test_probe_refuses_a_records_pointer_that_names_no_array(loopback, tmp_path):
    """REG-36, D-13: a body of the wrong shape."""
    loopback.route(FIRST, Reply(200, JSON, b'{"items": []}'))
    code, report = probe(loopback, tmp_path)
    assert code == 1 and codes(report) == ["PROBE_RECORDS_NOT_ARRAY"]
    assert report["files"][0]["refusals"][0]["pointer"] == "/collection/discovery/records/pointer"


def test_probe_refuses_the_wrong_media_type_before_reading(loopback, tmp_path):
    """DISC-28, DISC-31: a json_api listing answering text/html."""
    loopback.route(FIRST, Reply(200, [("Content-Type", "text/html")], b"<html></html>"))
    code, report = probe(loopback, tmp_path)
    assert code == 1 and codes(report) == ["PROBE_MEDIA_TYPE"]


def test_probe_honours_robots_and_sends_nothing_else(loopback, tmp_path):
    """FETCH-22: a disallowed listing is not requested."""
    loopback.route("/robots.txt", Reply(200, [("Content-Type", "text/plain")],
                                        b"User-agent: CollectionBot\nDisallow: /wp-json/\n"))
    loopback.route(FIRST, Reply(200, JSON, RECORDS))
    code, report = probe(loopback, tmp_path)
    assert code == 1 and codes(report) == ["PROBE_FAILED"]
    assert "robots_disallowed" in report["files"][0]["refusals"][0]["message"]
    assert [r.target for r in loopback.requests] == ["/robots.txt"]


def test_probe_makes_one_request_even_when_redirected(loopback, tmp_path):
    """D-59: exactly one request; a redirect is reported, not followed."""
    loopback.route(FIRST, Reply(301, [("Location", "https://www.example.com/elsewhere")], b""))
    loopback.route("/elsewhere", Reply(200, JSON, RECORDS))
    code, report = probe(loopback, tmp_path)
    assert code == 1 and codes(report) == ["PROBE_FAILED"]
    assert [r.target for r in loopback.requests if r.target != "/robots.txt"] == [FIRST]


def test_probe_reports_an_http_error(loopback, tmp_path):
    loopback.route(FIRST, Reply(404, JSON, b'{"code": "rest_no_route"}'))
    code, report = probe(loopback, tmp_path)
    assert code == 1 and codes(report) == ["PROBE_FAILED"]
    assert "http_status_404" in report["files"][0]["refusals"][0]["message"]


def test_probe_skips_explicit_discovery(loopback, tmp_path):
    """DISC-26: explicit discovery makes no listing request, so there is nothing to probe."""
    document = json.loads(EXAMPLE.read_text())
    document["collection"]["discovery"] = {"kind": "explicit", "members": [
        {"page_id": "a", "url": "https://www.example.com/a"}]}
    document["collection"]["pages"]["revisit"] = {"kind": "never"}
    code, report = probe(loopback, tmp_path, document)
    assert code == 0 and report["files"][0]["probes"] == []
    assert loopback.requests == []


def test_probe_refuses_a_first_listing_with_no_usable_link(loopback, tmp_path):
    """D-59, D-27: records whose link pointer names nothing would make a run discover 0."""
    loopback.route("/robots.txt", Reply(200, [("Content-Type", "text/plain")], b"User-agent: *\nAllow: /\n"))
    loopback.route(FIRST, Reply(200, JSON, json.dumps([{"id": 1, "url": "https://www.example.com/d/1"}]).encode()))
    code, report = probe(loopback, tmp_path)
    assert code == 1 and codes(report) == ["PROBE_NO_LINKS"]
    refusal = report["files"][0]["refusals"][0]
    assert refusal["pointer"] == "/collection/discovery/link/pointer"
    assert "1 record dropped, no usable link at /link" in refusal["message"]


def test_probe_refuses_an_empty_first_listing(loopback, tmp_path):
    loopback.route("/robots.txt", Reply(200, [("Content-Type", "text/plain")], b"User-agent: *\nAllow: /\n"))
    loopback.route(FIRST, Reply(200, JSON, b"[]"))
    code, report = probe(loopback, tmp_path)
    assert code == 1 and codes(report) == ["PROBE_NO_LINKS"]
