"""Operators know what to do (issue 24 point 9; D-45, D-62): the run record, the run summary and
`collection status` name the failed pages (code, URL, since when, how many attempts; the first
ten in text, all in --json), a decode failure's body is kept (bounded) so `collection decode`
reproduces it, advice fits the class, and `explain` takes a code in any case.

Real runs against the loopback HTTPS publisher (real TLS, real urllib3) on a virtual clock, and
the CLI as a subprocess; hostile predecessor records and planted symlinks are written by hand.
"""

from __future__ import annotations

import json
import os
import shlex

import jsonschema
from loopback import Reply
from test_run_kit import JSON_PAGE, Publisher, live_run_args as _cli_args, recipe, run_cli, run_in_process

from collection.commands import failure_lines
from collection.run import failed_pages as FP
from collection.recipe.resources import load_schema

NOT_JSON = b"<html>this is not the JSON the recipe reads</html>"


def _publisher(loopback, ids, failing: dict[str, Reply]) -> Publisher:
    pub = Publisher(loopback, "explicit").publish(*ids)
    pub.pages.update(failing)
    pub.install()
    return pub


def _failed(record) -> dict[str, dict]:
    return {e["page_id"]: e for e in record["failures"]["failed_pages"]}


def test_the_run_record_names_every_failed_page_with_since_and_attempts(loopback, tmp_path):
    """Issue 24 point 9, D-45, D-62: code, URL, since, attempts (a run is one attempt, its retries
    included); a decode failure's body is kept in the generation, a publisher error's never."""
    _publisher(loopback, ("1", "2", "3", "4"), {"2": Reply(200, JSON_PAGE, NOT_JSON),
                                                "3": Reply(503, JSON_PAGE, b"busy"),
                                                "4": Reply(403, JSON_PAGE, b"go away")})
    data = recipe("explicit", ids=("1", "2", "3", "4"), retries=1)
    first = run_in_process(loopback, data, tmp_path)
    jsonschema.Draft202012Validator(load_schema("run-record.schema.json")).validate(first)
    failed = _failed(first)
    assert {(p, e["failure_code"], e["failure_class"], e["attempts"], e["this_run"]) for p, e in failed.items()} == {
        ("id-2", "decode_error", "error", 1, True), ("id-3", "http_status_503", "error", 1, True),
        ("id-4", "http_status_403", "blocked", 1, True)}
    assert failed["id-2"]["url"] == "https://www.example.com/p/2"
    assert all(e["since"] == e["failed_at"] for e in failed.values())
    body = os.path.join(tmp_path, "current", failed["id-2"]["body"])
    assert open(body, "rb").read() == NOT_JSON and failed["id-2"]["media_type"] == "application/json"
    assert failed["id-3"]["body"] is None and failed["id-4"]["body"] is None
    assert os.listdir(os.path.join(tmp_path, "current", FP.BODIES_DIR)) == [FP.body_name("id-2")]

    second = run_in_process(loopback, data, tmp_path)
    again = _failed(second)
    assert {p: e["attempts"] for p, e in again.items()} == {"id-2": 2, "id-3": 2, "id-4": 2}
    assert {p: e["since"] for p, e in again.items()} == {p: min(e["since"], again[p]["failed_at"])
                                                        for p, e in failed.items()}

    # the page answers again: its series ends
    loopback.route("/p/3", Reply(200, JSON_PAGE, json.dumps([{"title": "t", "body": "b"}]).encode()))
    third = run_in_process(loopback, data, tmp_path)
    assert "id-3" not in _failed(third) and _failed(third)["id-2"]["attempts"] == 3


def test_a_series_restarts_after_a_success_and_starts_at_the_ledger_without_a_record():
    """Issue 24 point 9: a page that answered in between starts again at one attempt; a page
    failed under a predecessor whose record kept no series starts at its ledger failed_at."""
    from collection.merge.ledger import LedgerRow

    def row(state, failed_at=None):
        return LedgerRow("p", "https://www.example.com/p", state, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", 1,
                         failure_code="timeout" if state == "failed" else None,
                         failure_class="error" if state == "failed" else None, failed_at=failed_at)

    now = {"p": row("failed", "2026-03-01T00:00:00Z")}
    streak = {"p": {"since": "2026-01-05T00:00:00Z", "attempts": 4, "body": None, "media_type": None}}
    restarted = FP.failed_pages(now, {"p": row("fetched")}, ["p"], streak)
    assert (restarted[0]["since"], restarted[0]["attempts"]) == ("2026-03-01T00:00:00Z", 1)
    older = FP.failed_pages(now, {"p": row("failed", "2026-02-01T00:00:00Z")}, ["p"], {})
    assert (older[0]["since"], older[0]["attempts"]) == ("2026-02-01T00:00:00Z", 2)
    carried = FP.failed_pages(now, {"p": row("failed", "2026-02-01T00:00:00Z")}, ["p"], streak)
    assert (carried[0]["since"], carried[0]["attempts"]) == ("2026-01-05T00:00:00Z", 5)


def test_a_page_not_tried_keeps_its_series_and_its_body_but_never_a_planted_link(loopback, tmp_path):
    """Issue 24 point 9: a failed page the run did not reach (max_fetches_per_run) keeps since,
    attempts and its kept body (linked into the new generation); a body file replaced by a
    symlink in the predecessor is not followed."""
    _publisher(loopback, ("1", "2"), {"1": Reply(200, JSON_PAGE, NOT_JSON), "2": Reply(200, JSON_PAGE, NOT_JSON)})
    data = recipe("explicit", ids=("1", "2"), max_fetches=2)
    first = run_in_process(loopback, data, tmp_path)
    assert set(_failed(first)) == {"id-1", "id-2"}
    planted = os.path.join(tmp_path, "current", FP.BODIES_DIR, FP.body_name("id-2"))
    secret = tmp_path / "secret.txt"
    secret.write_text("not yours")
    os.unlink(planted)
    os.symlink(secret, planted)

    # a new pending page goes first and takes the one fetch: the failed pages are not tried
    data = recipe("explicit", ids=("0", "1", "2"), max_fetches=1)
    loopback.route("/p/0", Reply(200, JSON_PAGE, json.dumps([{"title": "t", "body": "b"}]).encode()))
    second = run_in_process(loopback, data, tmp_path)
    failed = _failed(second)
    assert {p: (e["attempts"], e["this_run"]) for p, e in failed.items()} == {"id-1": (1, False), "id-2": (1, False)}
    assert failed["id-1"]["since"] == _failed(first)["id-1"]["since"]
    kept = os.path.join(tmp_path, "current", failed["id-1"]["body"])
    assert open(kept, "rb").read() == NOT_JSON and not os.path.islink(kept)
    assert failed["id-2"]["body"] is None
    assert os.listdir(os.path.join(tmp_path, "current", FP.BODIES_DIR)) == [FP.body_name("id-1")]


def test_kept_bodies_are_bounded_in_count_and_bytes_and_only_for_decode_failures():
    """Issue 24 point 9: a generation never keeps more than MAX_BODIES bodies, nor one above
    MAX_BODY_BYTES, nor more than MAX_TOTAL_BYTES together, nor any body of a non-decode failure."""
    keeper = FP.BodyKeeper(max_bodies=3, max_body_bytes=10, max_total_bytes=15)
    assert not keeper.keep("a", "http_status_503", b"x", None)
    assert not keeper.keep("a", "timeout", b"x", None)
    assert not keeper.keep("big", "decode_error", b"x" * 11, None)
    assert keeper.keep("p1", "decode_error", b"x" * 8, None)
    assert not keeper.keep("p2", "column_mismatch", b"x" * 8, None)          # 16 > 15 bytes in all
    assert keeper.keep("p3", "story_not_found", b"x" * 7, "text/html")
    assert keeper.keep("p4", "column_mismatch", b"", None)                   # 15 bytes, 3 bodies
    assert not keeper.keep("p5", "decode_error", b"", None)                  # count reached
    assert sorted(keeper.bodies) == ["p1", "p3", "p4"] and keeper.total == 15
    assert keeper.bodies["p3"].media_type == "text/html"
    hostile = FP.BodyKeeper()
    hostile.keep("e", "decode_error", b"x", "text/html\x1b]0;owned\x07")       # a terminal escape
    assert hostile.bodies["e"].media_type is None


def test_a_hostile_predecessor_record_cannot_steer_the_series():
    """Issue 24 point 9: run.json is a file on disk; a malformed entry is ignored (the page's
    series restarts from its ledger row), and a body path outside failed-bodies/ is never used."""
    good = {"page_id": "p", "since": "2026-01-01T00:00:00Z", "attempts": 3, "body": "failed-bodies/"
            + FP.body_name("p"), "media_type": "text/html"}
    hostile = [
        {**good, "attempts": True}, {**good, "attempts": 0}, {**good, "attempts": 10 ** 12},
        {**good, "attempts": "3"}, {**good, "attempts": float("nan")}, {**good, "since": "yesterday"},
        {**good, "since": "2026-01-01T00:00:00Z\n"}, {**good, "page_id": 7}, "not an object", None,
    ]
    for entry in hostile:
        assert FP.streaks_of({"failures": {"failed_pages": [entry]}}) == {}, entry
    for record in (None, [], {"failures": []}, {"failures": {"failed_pages": {}}}):
        assert FP.streaks_of(record) == {}
    escaped = FP.streaks_of({"failures": {"failed_pages": [{**good, "body": "../../../etc/passwd"}]}})
    assert escaped["p"]["body"] is None and escaped["p"]["attempts"] == 3
    assert FP.streaks_of({"failures": {"failed_pages": [good]}})["p"]["body"] == good["body"]


def test_summary_and_status_name_the_first_ten_and_json_names_all_with_fitting_advice(loopback, tmp_path):
    """Issue 24 point 9, D-62: twelve decode failures, a 503 and a robots block. The summary and
    `status` name ten pages (code, URL, since, attempts) and say how many more; --json lists all
    fourteen; the advice for decode failures is to fix the recipe (with a `collection decode` line
    that really reproduces the failure on the kept body), never "run again"; the 503 is retried;
    the block names robots and the User-Agent."""
    ids = tuple(str(i) for i in range(1, 16))
    failing = {str(i): Reply(200, JSON_PAGE, NOT_JSON + str(i).encode()) for i in range(1, 13)}
    failing["13"] = Reply(503, JSON_PAGE, b"busy")
    _publisher(loopback, ids, failing)
    loopback.route("/robots.txt", Reply(200, (("Content-Type", "text/plain"),), b"User-agent: *\nDisallow: /p/14\n"))
    recipe_path = tmp_path / "recipe.json"
    recipe_path.write_bytes(recipe("explicit", ids=ids, retries=0, concurrency=4))
    state = tmp_path / "state"
    done = run_cli(*_cli_args(loopback, recipe_path, state))
    assert done.returncode == 0, done.stderr
    text = done.stdout
    listed = [line for line in text.splitlines() if line.startswith("  failed ") and ": https://" in line]
    assert len(listed) == 10 and all("attempt" in line and "since " in line for line in listed)
    assert "… and 4 more failed pages" in text
    reproduce = [line.split("reproduce: ", 1)[1] for line in text.splitlines() if "reproduce: collection decode" in line]
    assert reproduce, text
    words = shlex.split(reproduce[0])
    assert words[:3] == ["collection", "decode", str(recipe_path)]
    again = run_cli(*words[1:], "--json")
    assert again.returncode == 1 and json.loads(again.stdout)["failure"]["code"] == "decode_error"

    status = run_cli("status", str(state))
    assert status.returncode == 0, status.stderr
    lines = status.stdout.splitlines()
    assert len([line for line in lines if line.startswith("  failed ") and ": https://" in line]) == 10
    advice = [line for line in lines if line.startswith("  → ")]
    decode_advice = [line for line in advice if "decode_error" in line]
    assert len(decode_advice) == 1 and "fix the recipe" in decode_advice[0] and "run again" not in decode_advice[0]
    assert any("http_status_503" in line and "retries" in line for line in advice)
    assert any("robots_disallowed" in line and "robots.txt" in line and "User-Agent" in line for line in advice)

    summary = json.loads(run_cli("status", str(state), "--json").stdout)
    failed = {e["page_id"]: e for e in summary["failed_pages"]}
    assert len(failed) == 14
    assert {e["failure_code"] for e in failed.values()} == {"decode_error", "http_status_503", "robots_disallowed"}
    assert all(e["attempts"] == 1 and e["since"] and e["url"].startswith("https://www.example.com/p/")
               for e in failed.values())
    kept = [e for e in failed.values() if e["body"]]
    assert 1 <= len(kept) <= FP.MAX_BODIES and all(e["failure_code"] == "decode_error" for e in kept)


def test_advice_kind_follows_the_code_and_its_class():
    """Issue 24 point 9, D-62: decode failures are the recipe's; gone, blocked, retried otherwise."""
    table = {"column_mismatch": failure_lines.RECIPE_FIX, "story_not_found": failure_lines.RECIPE_FIX,
             "decode_error": failure_lines.RECIPE_FIX, "page_too_deep": failure_lines.RECIPE_FIX,
             "http_status_503": failure_lines.RETRIED, "timeout": failure_lines.RETRIED,
             "connection_error": failure_lines.RETRIED, "http_status_404": failure_lines.GONE,
             "http_status_410": failure_lines.GONE, "robots_disallowed": failure_lines.BLOCKED,
             "http_status_403": failure_lines.BLOCKED, "waf_challenge": failure_lines.BLOCKED}
    from collection import codes

    for code, kind in table.items():
        assert failure_lines.kind_of(code, codes.liveness(code)) == kind, code


def test_explain_takes_a_code_in_any_case_and_clause_ids():
    """Issue 24 point 9: `explain COLUMN_MISMATCH`, `explain Http_Status_404`, `explain reg-33`;
    a name that folds to two codes (INTERNAL_ERROR, internal_error) shows both."""
    from click.testing import CliRunner

    from collection.cli import cli

    runner = CliRunner()
    for typed, code in (("COLUMN_MISMATCH", "column_mismatch"), ("Http_Status_404", "http_status_404"),
                        ("state_locked", "STATE_LOCKED"), (" column_mismatch ", "column_mismatch")):
        result = runner.invoke(cli, ["explain", typed, "--json"])
        assert result.exit_code == 0, (typed, result.output)
        assert json.loads(result.output)["code"] == code
    both = runner.invoke(cli, ["explain", "Internal_Error", "--json"])
    assert both.exit_code == 0 and sorted(e["code"] for e in json.loads(both.output)) == ["INTERNAL_ERROR",
                                                                                          "internal_error"]
    assert runner.invoke(cli, ["explain", "internal_error", "--json"]).exit_code == 0
    assert json.loads(runner.invoke(cli, ["explain", "internal_error", "--json"]).output)["code"] == "internal_error"
    assert json.loads(runner.invoke(cli, ["explain", "reg-33", "--json"]).output)["clause"] == "REG-33"
    assert runner.invoke(cli, ["explain", "no_such_code"]).exit_code == 2


def test_a_dataset_names_its_sources_failed_pages_and_the_decode_line_picks_the_source(tmp_path):
    """Issue 24 point 9: in a dataset run the summary and `status DIR` name each source's failed
    pages, and the `collection decode` line (with --source) reproduces the failure."""
    from dataset_kit import dataset_doc, fixture_for, pages, source_doc

    a, b = pages("a.example.com", "d", 1), pages("b.example.com", "m", 2)
    exchanges = fixture_for(a + b)
    exchanges[-1]["response"]["body"] = {"text": "not json"}
    recipe_path, replay = tmp_path / "dataset.json", tmp_path / "fixture.json"
    recipe_path.write_bytes(dataset_doc("council", source_doc("decisions", a), source_doc("minutes", b)))
    replay.write_text(json.dumps(exchanges))
    state = tmp_path / "state"
    done = run_cli("run", str(recipe_path), "--state", str(state), "--replay", str(replay))
    assert done.returncode == 0, done.stderr
    for output in (done.stdout, run_cli("status", str(state)).stdout):
        assert f"failed decode_error: {b[-1]}" in output, output
        line = next(x for x in output.splitlines() if "reproduce: collection decode" in x)
        words = shlex.split(line.split("reproduce: ", 1)[1])
        assert words[words.index("--source") + 1] == "minutes"
        words[2] = str(recipe_path)        # status cannot know the recipe's path: it prints RECIPE
        again = run_cli(*words[1:], "--json")
        assert again.returncode == 1 and json.loads(again.stdout)["failure"]["code"] == "decode_error", again.stderr


def test_a_generation_written_before_failed_pages_existed_still_names_its_failures(loopback, tmp_path):
    """Issue 24 point 9: a run.json without `failures.failed_pages` (an older version wrote it):
    status names the failed pages from the ledger (since its latest failure, attempts unknown),
    and the next run carries the series on from there."""
    _publisher(loopback, ("1", "2"), {"2": Reply(500, JSON_PAGE, b"down")})
    data = recipe("explicit", ids=("1", "2"), retries=0)
    first = run_in_process(loopback, data, tmp_path)
    old = dict(first, failures={k: v for k, v in first["failures"].items() if k != "failed_pages"})
    (tmp_path / "current" / "run.json").write_text(json.dumps(old))
    summary = json.loads(run_cli("status", str(tmp_path), "--json").stdout)
    assert [(e["page_id"], e["failure_code"], e["attempts"], e["since"]) for e in summary["failed_pages"]] == [
        ("id-2", "http_status_500", None, _failed(first)["id-2"]["failed_at"])]
    second = run_in_process(loopback, data, tmp_path)
    assert (_failed(second)["id-2"]["attempts"], _failed(second)["id-2"]["since"]) == \
        (2, _failed(first)["id-2"]["failed_at"])
