"""The runner as an outsider meets it (issue 16): what a broken harness looks like, skips that
cannot hide failure, output a user can act on, and a runner that leaves nothing behind.

Every harness here is the deliberately faulty `conformance.harnesses.fake`."""

from __future__ import annotations

import glob
import io
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

from conformance import compare, report
from conformance.runner import ERRORED, PASS, SKIPPED, run_suite
from conformance.suite import Case
from test_conformance_runner import FAKE, _cases, _run, _statuses


# --- item 7: a broken harness is reported as what it is ---------------------------------------
@pytest.mark.parametrize("fault, words", [
    ("non-utf8", "not UTF-8"),
    ("no-newline", "without its closing newline"),
    ("close-stdout", "closed its stdout but is still running"),
])
def test_broken_streams_are_named(tmp_path, fault, words):
    outcome = _run(tmp_path, fault, timeout=5)
    run_verdicts = [v for v in outcome.verdicts if v.case.startswith("run-")]
    assert all(v.status == ERRORED for v in run_verdicts)
    assert all(words in v.message for v in run_verdicts), [v.message for v in run_verdicts]
    assert not any("timeout" in v.message for v in run_verdicts)


def test_crash_shows_the_stderr_tail(tmp_path):
    outcome = _run(tmp_path, "crash-stderr")
    verdict = next(v for v in outcome.verdicts if v.case == "run-fake-0")
    assert verdict.status == ERRORED and "exited (status 4)" in verdict.message
    assert "ValueError: the fake harness broke" in verdict.message


def test_output_out_of_turn_is_blamed_on_the_case_that_wrote_it(tmp_path):
    cases = _cases(tmp_path, n=2)
    outcome = run_suite(f"{FAKE} --fault stray", cases=cases, jobs=1, keep_order=True)
    statuses = _statuses(outcome)
    # every case's reply was right; each wrote one line too many after it
    assert set(statuses.values()) == {ERRORED}
    assert all(v.message.startswith("out_of_turn") for v in outcome.verdicts)
    assert not any("seq" in v.message.split(":")[0] for v in outcome.verdicts)


def test_sigterm_kills_the_harness_process_group(tmp_path):
    marker = tmp_path / "child.pid"
    case_dir = tmp_path / "cases" / "runs"
    case_dir.mkdir(parents=True)
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "conformance-ca-*")))
    script = (
        "import sys; sys.argv=['x']\n"
        "from conformance.cli import main\n"
        f"raise SystemExit(main(['--impl', {FAKE + ' --fault child --marker ' + str(marker)!r}, '-k', 'disc-json-api-basic']))\n")
    runner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while not (marker.exists() and marker.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(marker.read_text())
    os.kill(child, 0)                                   # the grandchild is alive
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=10) == 128 + signal.SIGTERM
    for _ in range(100):
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        os.kill(child, signal.SIGKILL)
        pytest.fail("the harness's grandchild outlived the runner")
    assert set(glob.glob(os.path.join(tempfile.gettempdir(), "conformance-ca-*"))) <= before


def test_loopback_leaves_no_ca_directory(tmp_path):
    pytest.importorskip("trustme")
    before = set(glob.glob(os.path.join(tempfile.gettempdir(), "conformance-ca-*")))
    outcome = run_suite(FAKE, cases=_cases(tmp_path, n=1), mode="loopback")
    assert outcome.verdicts
    assert set(glob.glob(os.path.join(tempfile.gettempdir(), "conformance-ca-*"))) <= before


# --- item 5: skips that cannot hide failure ---------------------------------------------------------
def test_a_skipped_required_case_is_not_green(tmp_path):
    outcome = _run(tmp_path, "skip")
    assert set(_statuses(outcome).values()) == {SKIPPED}
    assert not outcome.ok and all(v.required_skip for v in outcome.verdicts)
    text = io.StringIO()
    report.write_summary(outcome, text)
    assert "NOT GREEN" in text.getvalue() and "required" in text.getvalue()


def test_an_optional_capability_may_be_skipped(tmp_path):
    cases = _cases(tmp_path, n=1)
    optional = Case("run-needs-deadline", tmp_path, "runs", {**cases[1].data, "id": "run-needs-deadline",
                                                               "requires": ["deadline"]})
    outcome = run_suite(FAKE, cases=[cases[0], optional])
    statuses = _statuses(outcome)
    assert statuses == {"reg-fake": PASS, "run-needs-deadline": SKIPPED}
    assert outcome.ok                      # the fake does not announce deadline: an optional skip
    counts = report.capability_counts(outcome)
    assert counts["deadline"][SKIPPED] == 1 and counts["registration"][PASS] == 1


# --- item 2: timestamps by value ----------------------------------------------------------------------
@pytest.mark.parametrize("value, ok", [
    ("2024-01-01T00:00:05Z", True), ("2024-01-01T00:00:05.250Z", True),
    ("9999-99-99T99:99:99Z", False), ("1970-01-01T00:00:00Z", False), ("2024-01-01T00:00:05+00:00", False),
    ("2024-01-01 00:00:05Z", False), ("2024-01-01T02:00:00Z", False),
])
def test_ts_placeholder_takes_only_instants_on_the_virtual_clock(value, ok):
    book = compare.TimeBook(compare.parse_instant("2024-01-01T00:00:00Z"))
    book.begin_run(0, 300)
    assert (book.check(None, value, "x") is None) is ok


def test_named_ts_binds_one_instant_across_runs():
    book = compare.TimeBook(compare.parse_instant("2024-01-01T00:00:00Z"))
    book.begin_run()
    assert book.check("disc:a", "2024-01-01T00:00:01Z", "x") is None
    book.begin_run(3601)
    assert book.check("disc:a", "2024-01-01T00:00:01Z", "x") is None
    assert book.check("disc:a", "2024-01-01T01:00:02Z", "x")["what"] == "x"      # refreshed: a difference
    assert book.order([["disc:a", 1, "disc:a"]])                                 # 0 s apart, 1 s asked


# --- item 4: failures a user can read ---------------------------------------------------------------------
HEAD = "title,page_id,page_url,page_fetched_at,page_content_sha256,page_revision,page_discovered_at,page_ordinal\n"


def test_relation_diff_is_row_level():
    expected = HEAD + "A,a,u,{{ts}},s,1,{{ts}},1\nB,b,u,{{ts}},s,1,{{ts}},1\n"
    actual = HEAD + "A2,a,u,2024-01-01T00:00:01Z,s,1,2024-01-01T00:00:01Z,1\nC,c,u,2024-01-01T00:00:01Z,s,1,2024-01-01T00:00:01Z,1\n"
    book = compare.TimeBook(compare.parse_instant("2024-01-01T00:00:00Z"))
    book.begin_run()
    whats = [d["what"] for d in compare.relation_matches(expected, actual, book)]
    assert whats == ["relation: row (page_id 'a' ordinal 1) changed", "relation: missing row (page_id 'b' ordinal 1)",
                     "relation: extra row (page_id 'c' ordinal 1)"]


def test_relation_dialect_difference_is_reported_once():
    expected = HEAD + "A,a,u,{{ts}},s,1,{{ts}},1\n"
    actual = (HEAD + "A,a,u,2024-01-01T00:00:01Z,s,1,2024-01-01T00:00:01Z,1\n").replace("\n", "\r\n")
    book = compare.TimeBook(compare.parse_instant("2024-01-01T00:00:00Z"))
    book.begin_run()
    diffs = compare.relation_matches(expected, actual, book)
    assert len(diffs) == 1 and diffs[0]["what"].startswith("relation bytes")


def test_summary_shows_rerun_command_and_progress(tmp_path):
    cases_file = tmp_path / "r.jsonl"
    proc = subprocess.run([sys.executable, "-m", "conformance", "--impl", f"{FAKE} --fault wrong-answer",
                           "-k", "reg-worked-example", "-k", "disc-json-api-basic", "--report", str(cases_file)],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert f"re-run: {sys.executable} -m conformance --impl" in proc.stdout and "--case reg-worked-example" in proc.stdout
    assert "[2/2]" in proc.stderr                      # the progress line, without -v
    records = [json.loads(line) for line in cases_file.read_text().splitlines()]
    assert records[0]["record"] == "start" and records[-1]["record"] == "end"
    assert sorted(r["case"] for r in records[1:-1]) == ["disc-json-api-basic", "reg-worked-example"]


def test_help_shows_defaults():
    out = " ".join(subprocess.run([sys.executable, "-m", "conformance", "--help"], capture_output=True, text=True).stdout.split())
    assert "(default: 60.0)" in out and "(default: inline)" in out and "repeat to add patterns" in out


def test_schema_breaking_reply_names_the_member(tmp_path):
    outcome = _run(tmp_path, "invalid")
    verdict = next(v for v in outcome.verdicts if v.case == "run-fake-0")
    assert "at /result" in verdict.message
