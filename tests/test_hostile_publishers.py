"""Hostile publishers (issue 15): whatever an origin sends, a page or listing fails with a code,
the run ends with a documented exit code, and the state stays readable by every later run.

All against the loopback HTTPS server through the real urllib3 transport.
Clauses: D-45, D-53, D-62 (failure codes and classes), REF-13 (a page failure is never a run
failure), D-11 (attempt wall-clock limit), D-19 (deadline), D-30 (decoded bodies), D-58/D-66
(robots.txt), FETCH-14 (byte cap), FETCH-25 (ranges), D-02 (state CSV read back).
"""

from __future__ import annotations

import json
import time

import pytest
from click.testing import CliRunner
from loopback import Reply
from test_run_kit import (HOST, JSON_PAGE, ORIGIN, Publisher, ledger_rows, page_body, page_requests, recipe,
                          run_cli, run_in_process)

from collection import codes
from collection.cli import cli
from collection.commands.status import summarise
from collection.fetch.clock import VirtualClock
from collection.fetch.egress import Egress
from collection.fetch.fetcher import FAILED, FETCHED
from collection.fetch.urllib3_transport import Urllib3Transport
from collection.recipe.refusal import RefusedError
from collection.run.loop import RunSettings, Shell, execute
from fetch_helpers import HTML, listing, make_fetcher, page

TEXT = (("Content-Type", "text/plain"),)


def _cli_args(server, recipe_path, state, *extra):
    args = ["run", str(recipe_path), "--state", str(state), "--ca-bundle", server.ca_pem_path]
    for flag in server.resolve_flags(HOST, "example.com"):
        args += ["--resolve", flag]
    return args + list(extra)


# --- 1. any status maps to a failure code and class -------------------------------------------

@pytest.mark.parametrize("status", [999, 600, 799])
def test_status_outside_rfc_range_fails_the_page_with_a_code(loopback, status):  # D-45, D-62
    loopback.route("/odd", Reply(status, HTML, b"go away"))
    out = make_fetcher(loopback, retries=0).fetch(page("/odd"))
    assert (out.outcome, out.failure_code, out.liveness) == (FAILED, f"http_status_{status}", codes.ERROR)
    assert codes.lookup(out.failure_code).kind == codes.PAGE


def test_every_status_names_a_code_with_a_class():  # D-45, D-62
    for status in (*range(100, 1000), 0, -1, 1000, 10**6):
        code = codes.http_status_code(status)
        assert codes.liveness(code) in codes.LIVENESS_CLASSES


def test_pages_answering_999_fail_and_the_run_ends(loopback, tmp_path):  # D-53, D-62, REF-13
    pub = Publisher(loopback, "json_api").publish("1", "2", "3")
    pub.pages["2"] = Reply(999, JSON_PAGE, b"")
    pub.pages["3"] = Reply(999, JSON_PAGE, b"")
    pub.install()
    data = recipe("json_api", retries=0)
    record = run_in_process(loopback, data, tmp_path)
    cov = record["coverage"]
    assert (cov["fetched_this_run"], cov["failed_this_run"], cov["pending"], cov["failed"]) == (1, 2, 0, 2)
    assert {p["page_id"]: p["failure_code"] for p in record["failures"]["pages"]} == \
        {"id-2": "http_status_999", "id-3": "http_status_999"}
    assert record["failures"]["by_class"]["error"] == 2
    summary = summarise(str(tmp_path))
    assert summary["failures"]["by_code"] == {"http_status_999": 2}
    # the failures are retried next run, not left pending for ever
    loopback.clear()
    again = run_in_process(loopback, data, tmp_path)
    assert sorted(page_requests(loopback)) == ["/p/2", "/p/3"]
    assert again["coverage"]["failed"] == 2


def test_listing_answering_999_is_a_coded_refusal_not_a_traceback(loopback, tmp_path):  # REF-03
    pub = Publisher(loopback, "json_api").publish("1")
    pub.listing_reply = Reply(999, JSON_PAGE, b"")
    pub.install()
    recipe_path = tmp_path / "recipe.json"
    recipe_path.write_bytes(recipe("json_api", retries=0))
    done = run_cli(*_cli_args(loopback, recipe_path, tmp_path / "state", "--json"))
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["code"] == "COLLECTION_DISCOVERY_FAILED"
    assert "Traceback" not in done.stderr


def test_probe_of_a_listing_answering_999_is_probe_failed(loopback, tmp_path):  # D-59
    loopback.route("/api/items?per_page=100&page=1", Reply(999, JSON_PAGE, b""))
    path = tmp_path / "recipe.json"
    path.write_bytes(recipe("json_api"))
    args = ["validate", "--json", "--probe", "--ca-bundle", loopback.ca_pem_path]
    for flag in loopback.resolve_flags(HOST):
        args += ["--resolve", flag]
    result = CliRunner().invoke(cli, args + [str(path)])
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert [r["code"] for r in report["files"][0]["refusals"]] == ["PROBE_FAILED"]


class _SurprisingTransport(Urllib3Transport):
    """The real transport, but one address makes it raise something nobody planned for:
    stands for any bug met while handling one page."""

    def send(self, request, deadline, before_write=None):
        if request.url.endswith("/p/2"):
            raise RuntimeError("surprise")
        return super().send(request, deadline, before_write)


def test_an_unexpected_error_fails_that_page_and_the_workers_go_on(loopback, tmp_path):  # REF-13
    Publisher(loopback, "explicit").publish("1", "2", "3", "4").install()
    data = recipe("explicit", ids=("1", "2", "3", "4"), concurrency=1)
    shell = Shell(VirtualClock(), lambda n: _SurprisingTransport(ca_bundle=loopback.ca_pem_path),
                  lambda source: Egress(loopback.resolve_map()))
    record = execute(data, RunSettings(str(tmp_path)), shell)
    cov = record["coverage"]
    assert (cov["fetched_this_run"], cov["failed_this_run"], cov["pending"]) == (3, 1, 0)
    assert record["failures"]["pages"] == [{"page_id": "id-2", "failure_code": "internal_error",
                                            "failure_class": "error"}]
    assert ledger_rows(tmp_path)["id-2"]["state"] == "failed"
    assert summarise(str(tmp_path))["failures"]["by_code"] == {"internal_error": 1}


# --- 2. lone surrogates in listing text ----------------------------------------------------------

def test_lone_surrogates_in_a_json_listing_become_replacement_characters(loopback, tmp_path):  # D-02
    pub = Publisher(loopback, "json_api").publish("1", "2")
    # raw JSON escapes: "\ud800x" is valid JSON text naming a lone surrogate
    items = (b'[{"id":"\\ud800x","link":"https://www.example.com/p/1","modified":"\\udfffrev"},'
             b'{"id":"id-2","link":"https://www.example.com/p/2\\ud800","modified":"r"}]')
    pub.listing_reply = Reply(200, JSON_PAGE, items)
    pub.install()
    loopback.route("/p/2%EF%BF%BD", Reply(200, JSON_PAGE, page_body("2")))
    data = recipe("json_api")
    for _ in range(2):                       # the second run reads what the first wrote
        record = run_in_process(loopback, data, tmp_path)
        assert record["coverage"]["failed"] == 0
    ledger = ledger_rows(tmp_path)
    assert set(ledger) == {"\ufffdx", "id-2"}
    assert ledger["\ufffdx"]["revision_hint"] == "\ufffdrev"
    assert ledger["id-2"]["url"] == "https://www.example.com/p/2\ufffd"
    assert summarise(str(tmp_path))["pages"]["fetched"] == 2


# --- 3. huge fields are read back --------------------------------------------------------------

def test_fields_over_the_csv_default_limit_are_read_back(loopback, tmp_path):  # D-02, MERGE-01
    pub = Publisher(loopback, "json_api").publish("1")
    big_id = "i" * 200_000
    story = "s" * 150_000
    pub.listing_reply = Reply(200, JSON_PAGE, json.dumps(
        [{"id": big_id, "link": f"{ORIGIN}/p/1", "modified": "m"}]).encode())
    pub.pages["1"] = Reply(200, JSON_PAGE, json.dumps([{"title": story, "body": "b"}]).encode())
    pub.install()
    data = recipe("json_api", revisit="revision_hint")
    first = run_in_process(loopback, data, tmp_path)
    second = run_in_process(loopback, data, tmp_path)            # reads the 200 KB id and 150 KB cell
    third = run_in_process(loopback, data, tmp_path, resync=True)
    assert [r["coverage"]["known"] for r in (first, second, third)] == [1, 1, 1]
    (row,) = _rows(tmp_path)
    assert row["page_id"] == big_id and row["title"] == story
    assert summarise(str(tmp_path))["pages"]["fetched"] == 1


def _rows(state_dir):
    from collection.merge import csvio
    with open(state_dir / "current" / "relation.csv", newline="", encoding="utf-8") as handle:
        rows = csvio.reader(handle)
        header = next(rows)
        return [dict(zip(header, r)) for r in rows]


# --- 4. D-66: robots.txt redirecting outside allowed_origins -----------------------------------

def test_robots_redirect_off_the_allowlist_disallows_the_origin(loopback, tmp_path):  # D-66, D-58
    Publisher(loopback, "explicit").publish("1", "2").install()
    loopback.route("/robots.txt", Reply(301, [("Location", "https://example.com/robots.txt")]), host=HOST)
    loopback.route("/robots.txt", Reply(200, TEXT, b"User-agent: *\nDisallow: /p/2\n"), host="example.com")
    record = run_in_process(loopback, recipe("explicit", ids=("1", "2")), tmp_path)
    assert page_requests(loopback) == []                       # nothing of www was fetched
    assert {p["page_id"]: (p["failure_code"], p["failure_class"]) for p in record["failures"]["pages"]} == \
        {"id-1": ("robots_disallowed", "blocked"), "id-2": ("robots_disallowed", "blocked")}
    assert record["robots_unreachable"] == [{"origin": ORIGIN, "redirect": "https://example.com/robots.txt"}]
    import jsonschema
    from collection.recipe.resources import load_schema
    jsonschema.Draft202012Validator(load_schema("run-record.schema.json")).validate(record)
    assert loopback.requests_for("/robots.txt", host="example.com") == []     # never followed
    advice = summarise(str(tmp_path))["next"]
    assert any("https://example.com/robots.txt" in line and "allowed_origins" in line for line in advice)


def test_robots_redirect_to_an_allowed_origin_is_followed(loopback):  # D-66, D-58
    loopback.route("/robots.txt", Reply(301, [("Location", "https://example.com/robots.txt")]), host=HOST)
    loopback.route("/robots.txt", Reply(200, TEXT, b"User-agent: *\nDisallow: /p/2\n"), host="example.com")
    loopback.route("/p/1", Reply(200, HTML, b"<p>1</p>"))
    loopback.route("/p/2", Reply(200, HTML, b"<p>2</p>"))
    fetcher = make_fetcher(loopback, allowed=(ORIGIN, "https://example.com"))
    assert fetcher.fetch(page("/p/1")).outcome == FETCHED
    out = fetcher.fetch(page("/p/2"))
    assert (out.outcome, out.failure_code) == (FAILED, "robots_disallowed")   # the apex's rule holds
    assert [r.target for r in loopback.requests if r.path == "/p/2"] == []
    assert fetcher.robots_unreachable == {}


# --- 5. a trickled head is bounded by the attempt's wall time, and the run by its deadline -----

def test_status_line_and_headers_trickled_are_cut_at_the_attempt_limit(loopback):  # D-11, FETCH-20
    loopback.route("/slow-head", Reply(200, [*HTML, ("X-Padding", "p" * 200)], b"x", head_drip=4))
    fetcher = make_fetcher(loopback, request_timeout=2, retries=0)
    started = time.monotonic()
    out = fetcher.fetch(page("/slow-head"))
    elapsed = time.monotonic() - started
    assert (out.outcome, out.failure_code) == (FAILED, "timeout")
    assert elapsed < 4.5, elapsed                              # the head alone would take ~60 s


def test_deadline_ends_the_run_whatever_the_listing_trickles(loopback, tmp_path):  # D-19, D-60, FETCH-15
    pub = Publisher(loopback, "json_api").publish("1")
    pub.listing_reply = Reply(200, [*JSON_PAGE, ("X-Padding", "p" * 400)], b"[]", head_drip=4)
    pub.install()
    recipe_path = tmp_path / "recipe.json"
    recipe_path.write_bytes(recipe("json_api", retries=2))     # request_timeout_seconds 5
    started = time.monotonic()
    done = run_cli(*_cli_args(loopback, recipe_path, tmp_path / "state", "--json", "--deadline", "3"))
    elapsed = time.monotonic() - started
    assert done.returncode == 0 and "Traceback" not in done.stderr      # a budget stop (REF-14)
    assert json.loads(done.stdout)["coverage"]["budget_exhausted"] == "deadline"
    # one attempt in flight at the deadline ends by its own 5 s limit (D-11, D-19); no retry starts
    assert elapsed < 3 + 5 + 3, elapsed


# --- 6. interim answers, unrequested encodings and partial bodies ---------------------------

def test_early_hints_before_the_final_answer_are_skipped(loopback):  # D-30
    loopback.route("/hints", Reply(200, HTML, b"<p>the page</p>",
                                   interim=((103, (("Link", "</style.css>; rel=preload"),)),
                                            (103, (("Link", "</app.js>; rel=preload"),)))))
    out = make_fetcher(loopback).fetch(page("/hints"))
    assert (out.outcome, out.status, out.body) == (FETCHED, 200, b"<p>the page</p>")


def test_only_decodable_encodings_are_asked_for(loopback):  # D-30
    loopback.route("/p", Reply(200, HTML, b"<p>x</p>"))
    make_fetcher(loopback).fetch(page("/p"))
    (request,) = [r for r in loopback.requests if r.path == "/p"]
    assert request.header("Accept-Encoding") == "gzip, deflate"


@pytest.mark.parametrize("encoding", ["br", "zstd", "x-unknown", "gzip, br"])
def test_encodings_not_asked_for_are_refused(loopback, encoding):  # D-30, D-62
    loopback.route("/enc", Reply(200, [*HTML, ("Content-Encoding", encoding)], raw_body=b"\x8b\x02\x80compressed"))
    loopback.route("/list", Reply(200, [("Content-Type", "application/json"), ("Content-Encoding", encoding)],
                                  raw_body=b"\x8b\x02\x80[]"))
    fetcher = make_fetcher(loopback, retries=2)
    for spec in (page("/enc"), listing("/list")):
        out = fetcher.fetch(spec)
        assert (out.outcome, out.failure_code, out.liveness, out.body) == \
            (FAILED, "content_encoding_refused", "error", None)
        assert out.requests == 1                               # retrying cannot help


def test_unsolicited_partial_content_is_refused(loopback):  # FETCH-25, D-62
    loopback.route("/part", Reply(206, [*HTML, ("Content-Range", "bytes 0-3/100")], b"<p>p"))
    out = make_fetcher(loopback).fetch(page("/part"))
    assert (out.outcome, out.failure_code, out.body) == (FAILED, "partial_content_refused", None)


# --- 8. the byte cap reached on the last page ends the run by it ------------------------------

def test_byte_cap_crossed_by_the_last_page_is_reported(loopback, tmp_path):  # FETCH-14, COV-16
    pub = Publisher(loopback, "explicit").publish("1", "2")
    pub.pages["2"] = Reply(200, JSON_PAGE, json.dumps([{"title": "t" * 5000, "body": "b"}]).encode())
    pub.install()
    doc = json.loads(recipe("explicit", ids=("1", "2"), concurrency=1))
    doc["limits"]["max_source_bytes"] = len(page_body("1")) + 1000
    record = run_in_process(loopback, json.dumps(doc).encode(), tmp_path)
    cov = record["coverage"]
    assert (cov["fetched_this_run"], cov["failed_this_run"], cov["budget_exhausted"], cov["complete"]) == \
        (1, 1, "max_source_bytes", False)
    assert ledger_rows(tmp_path)["id-2"]["failure_code"] == "max_source_bytes"


def test_refusal_leaves_previous_generation(loopback, tmp_path):  # REF-04
    Publisher(loopback, "json_api").publish("1").install()
    data = recipe("json_api")
    run_in_process(loopback, data, tmp_path)
    before = (tmp_path / "current" / "relation.csv").read_bytes()
    loopback.route("/api/items?per_page=100&page=1", Reply(999, JSON_PAGE, b""))
    record = run_in_process(loopback, data, tmp_path)          # a predecessor: not a refusal (REF-12)
    assert record["coverage"]["discovery_failure"] is not None
    assert (tmp_path / "current" / "relation.csv").read_bytes() == before
    with pytest.raises(RefusedError):
        run_in_process(loopback, data, tmp_path / "fresh")
