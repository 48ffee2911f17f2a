"""The runner against the faulty fake harness: seq, crashes, hangs, malformed and wrong answers."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET

import pytest

from conformance import report
from conformance.runner import ERRORED, FAIL, PASS, SKIPPED, run_suite
from conformance.suite import Case

FAKE = f"{sys.executable} -m conformance.harnesses.fake"


def _cases(tmp_path, n=3):
    from conformance.harnesses.fake import COVERAGE, RELATION

    cases = [Case("reg-fake", tmp_path, "registration",
                  {"id": "reg-fake", "description": "fake registration", "clauses": ["REG-01"], "kind": "registration",
                   "recipe": {}, "expect": {"registrable": True}})]
    for i in range(n):
        cid = f"run-fake-{i}"
        cases.append(Case(cid, tmp_path, "runs", {
            "id": cid, "description": "fake run", "clauses": ["COV-03"], "kind": "runs", "recipe": {},
            "runs": [{"exchanges": [], "expect": {"outcome": "ok", "coverage": COVERAGE, "relation": RELATION,
                                                  "ledger": {}, "requests": {"count": 1}}}]}))
    return cases


def _run(tmp_path, fault, **kw):
    return run_suite(f"{FAKE} --fault {fault} --marker {tmp_path / 'marker'}", cases=_cases(tmp_path), **kw)


def _statuses(outcome):
    return {v.case: v.status for v in outcome.verdicts}


def test_correct_fake_passes(tmp_path):
    outcome = _run(tmp_path, "none", jobs=2)
    assert set(_statuses(outcome).values()) == {PASS} and outcome.ok
    assert outcome.implementation["name"] == "fake"


@pytest.mark.parametrize("fault, kind", [("wrong-seq", "seq"), ("crash", "crashed"), ("malformed", "malformed"),
                                         ("invalid", "invalid")])
def test_protocol_faults_are_errors(tmp_path, fault, kind):
    outcome = _run(tmp_path, fault)
    assert set(_statuses(outcome).values()) == {ERRORED}
    assert all(v.message.startswith(kind) for v in outcome.verdicts), [v.message for v in outcome.verdicts]
    assert not outcome.ok and outcome.restarts >= 3      # restarted after each broken case


def test_hang_times_out_and_restarts(tmp_path):
    outcome = run_suite(f"{FAKE} --fault hang", cases=_cases(tmp_path, n=1), timeout=0.5)
    statuses = _statuses(outcome)
    assert statuses["run-fake-0"] == ERRORED and statuses["reg-fake"] == ERRORED
    assert all("timeout" in v.message for v in outcome.verdicts)


def test_crash_once_then_recovers(tmp_path):
    outcome = _run(tmp_path, "crash-once")
    values = list(_statuses(outcome).values())
    assert values.count(ERRORED) == 1 and values.count(PASS) == 3


def test_wrong_answers_fail_with_diffs(tmp_path):
    outcome = _run(tmp_path, "wrong-answer")
    statuses = _statuses(outcome)
    assert set(statuses.values()) == {FAIL}
    run_verdict = next(v for v in outcome.verdicts if v.case == "run-fake-0")
    assert {"what": "coverage.pending", "expected": 0, "actual": 7} in run_verdict.diffs
    reg_verdict = next(v for v in outcome.verdicts if v.case == "reg-fake")
    assert reg_verdict.diffs[0]["what"] == "registrable"


def test_skip_and_error_answers(tmp_path):
    assert set(_statuses(_run(tmp_path, "skip")).values()) == {SKIPPED}
    assert set(_statuses(_run(tmp_path, "error")).values()) == {ERRORED}


def test_bad_handshake(tmp_path):
    outcome = _run(tmp_path, "bad-start")
    assert set(_statuses(outcome).values()) == {ERRORED}
    assert "did not start" in outcome.verdicts[0].message


def test_reports(tmp_path):
    outcome = _run(tmp_path, "wrong-answer")
    path = tmp_path / "out.jsonl"
    with open(path, "w") as out:
        report.write_jsonl(outcome, out)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0]["implementation"]["name"] == "fake" and len(lines) == 1 + len(outcome.verdicts)
    junit = tmp_path / "out.xml"
    report.write_junit(outcome, str(junit))
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("failures") == str(len(outcome.verdicts))
    assert "coverage.pending" in suite.find("testcase/failure").text or suite.find("testcase/failure") is not None
    import io
    text = io.StringIO()
    report.write_summary(outcome, text)
    assert "failures:" in text.getvalue() and "COV" in text.getvalue()


def test_select_by_pattern(tmp_path):
    from conformance.runner import select

    cases = _cases(tmp_path)
    assert [c.id for c in select(cases, "reg-")] == ["reg-fake"]
    assert len(select(cases, "COV-03")) == 3
    assert len(select(cases, "run-fake-[01]")) == 2
