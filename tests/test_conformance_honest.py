"""The suite tells implementers the truth (issue 26, items 1 and 2; D-75, D-76).

- Protocol honesty: the version the harness negotiated is in the summary, -v, JSON lines and
  JUnit; a case whose expectations that version cannot express is `not applicable` (never
  pass, never fail), counted and listed. The acceptance: the standalone pyz against a harness
  that speaks protocol v1 only (tests/v1_harness.py, collection's harness behind it).
- Blame the right side: the runner's own missing package is one line naming it and how to
  install it, for every entry point and subcommand; `re-run:` lines work as printed from the
  pyz, `python -m conformance` and `collection conformance`; a failure shows its description,
  clauses, the exchanges served and the harness's own codes and ledger facts.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance import versions
from conformance.runner import FAIL, NOT_APPLICABLE, run_suite
from conformance.suite import Case, load_cases

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import build_zipapp  # noqa: E402

PY = sys.executable
FAKE = f"{PY} -m conformance.harnesses.fake"
V1_HARNESS = f"{PY} {ROOT / 'tests' / 'v1_harness.py'}"
V2_HARNESS = f"{PY} -m conformance.harnesses.collection_harness"
# the cases whose point is a v2 ledger fact, and two plain ones beside them
V2_CASES = {"merge-failure-facts", "merge-interval-exact", "merge-ledger-digests", "merge-ledger-times"}
SELECTION = ["-k", "merge-ledger", "-k", "merge-failure-facts", "-k", "merge-interval", "-k", "fetch-robots-4xx"]


@pytest.fixture(scope="module")
def pyz(tmp_path_factory):
    return build_zipapp.build_conformance(tmp_path_factory.mktemp("pyz") / "collection-conformance.pyz")


def _env(*front: Path | str) -> dict:
    path = os.pathsep.join([*(str(p) for p in front), str(ROOT), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


# --- D-75: which members need which protocol, read from the protocol schema ---------------------
def test_ledger_members_per_version_come_from_the_protocol_schema():
    assert versions.ledger_members(1) == {"page_id", "state", "revision", "failure_code", "landed_url"}
    assert {"content_sha256", "previous_content_sha256", "revision_hint", "failed_at", "failure_class",
            "discovered_at", "last_seen_at", "last_fetched_at", "url"} <= versions.ledger_members(2)
    assert versions.fact_version("failure_code") == 1 and versions.fact_version("revision_hint") == 2
    assert versions.fact_version("no_such_member") is None


def test_cases_needing_v2_are_those_with_v2_facts_or_orders():
    """D-75: derived, not declared; registration cases and v1 facts are v1."""
    by_case = {c.id: versions.minimum_protocol(c.data) for c in load_cases()}
    assert {cid for cid, v in by_case.items() if v == 2} >= V2_CASES
    assert all(by_case[c.id] == 1 for c in load_cases() if c.kind == "registration")
    times = next(c for c in load_cases() if c.id == "merge-ledger-times")
    orders = [m for n, m, _ in versions.beyond(times.data, 1) if m.startswith("time_order")]
    # run 1's orders bind on relation placeholders (v1); run 2's only on v2 ledger times
    assert orders and all(n == 2 for n, m, _ in versions.beyond(times.data, 1) if m.startswith("time_order"))
    assert versions.beyond(times.data, 2) == []


# --- the acceptance: the standalone suite against a v1 harness -------------------------------------
def _pyz_run(pyz, *args, env=None):
    return subprocess.run([PY, str(pyz), *args], capture_output=True, text=True, cwd=ROOT,
                          env=env or _env(pyz), timeout=600)


def test_standalone_suite_against_a_v1_harness(pyz, tmp_path):
    """Issue 26 acceptance: the whole standalone suite against a v1 harness. Every report format
    names protocol v1; the cases with v2 facts are `not applicable`, counted and listed; nothing
    fails, and the run stays green (D-75)."""
    expected_na = {c.id for c in load_cases() if versions.minimum_protocol(c.data) > 1}
    assert expected_na >= V2_CASES
    jsonl, junit = tmp_path / "r.jsonl", tmp_path / "r.xml"
    proc = _pyz_run(pyz, "--impl", V1_HARNESS, "-j", "2", "-v", "--report", str(jsonl), "--junit", str(junit))
    out = proc.stdout
    assert proc.returncode == 0, out + proc.stderr
    # text summary
    assert "mode inline, protocol v1 (the runner speaks up to v2)" in out.splitlines()[0]
    counts = re.search(r"cases: (\d+)  pass (\d+)  fail 0  errored 0  skipped (\d+)  not applicable (\d+)", out)
    total, passed, skipped, na = (int(g) for g in counts.groups())
    assert total == len(load_cases()) and na == len(expected_na) and passed == total - skipped - na
    assert f"NOT APPLICABLE at protocol v1: {na} case(s)" in out
    listed = set(re.findall(r"^  [a-z]+/([a-z0-9-]+) \([A-Z]", out.split("NOT APPLICABLE")[1].split("\n\n")[0], re.M))
    assert listed == expected_na
    assert "run 1: ledger[a].content_sha256" in out
    assert out.rstrip().splitlines()[-1].startswith(f"protocol v1: {na} of {total} case(s) not applicable")
    # -v: one line per case, with its verdict and protocol
    verbose = [line for line in proc.stderr.splitlines() if line.endswith("[protocol v1]")]
    assert len(verbose) == total
    assert {line.split()[2].split("/")[1] for line in verbose if line.startswith("not applicable ")} == expected_na
    # JSON lines
    records = [json.loads(line) for line in jsonl.read_text().splitlines()]
    assert records[0]["record"] == "start" and records[0]["runner_protocols"] == [1, 2]
    cases = {r["case"]: r for r in records[1:-1]}
    assert {c for c, r in cases.items() if r["status"] == NOT_APPLICABLE} == expected_na
    assert all(r["protocol"] == 1 for r in cases.values())
    assert cases["merge-ledger-digests"]["needs_protocol"] == 2
    assert "run 3: ledger[a].previous_content_sha256" in cases["merge-ledger-digests"]["beyond_protocol"]
    end = records[-1]
    assert end["record"] == "end" and end["protocol"] == [1] and end["ok"] is True
    assert end["counts"][NOT_APPLICABLE] == na and sorted(end["not_applicable"]) == sorted(expected_na)
    # JUnit
    suite = ET.parse(junit).getroot().find("testsuite")
    assert "protocol v1" in suite.get("name")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["protocol"] == "1" and props["not_applicable"] == str(na)
    skipped = {tc.get("name"): tc.find("skipped") for tc in suite.findall("testcase")}
    assert {n for n, s in skipped.items() if s is not None and s.get("message").startswith("not applicable")} == expected_na
    assert suite.get("failures") == "0"


def test_the_same_cases_pass_at_protocol_v2(pyz):
    proc = _pyz_run(pyz, "--impl", V2_HARNESS, *SELECTION, "-j", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "protocol v2" in proc.stdout.splitlines()[0] and "not applicable 0" in proc.stdout
    assert "NOT APPLICABLE" not in proc.stdout


def test_a_v1_failure_in_a_v2_case_is_a_failure_with_the_harness_facts():
    """D-75: what v1 can express is still compared; a difference there fails the case (not
    `not applicable`). The failure shows the harness's own codes beside the expected ones and
    the exchanges the failing run served."""
    case = next(c for c in load_cases() if c.id == "merge-failure-facts")
    data = copy.deepcopy(case.data)
    data["runs"][1]["expect"]["ledger"]["a"]["failure_code"] = "http_status_410"
    outcome = run_suite(V1_HARNESS, cases=[Case(case.id, case.path, case.area, data)])
    verdict = outcome.verdicts[0]
    assert verdict.status == FAIL and verdict.run == 2 and verdict.protocol == 1
    assert {"what": "ledger[a].failure_code", "expected": "http_status_410", "actual": "http_status_404"} in verdict.diffs
    row = next(r for r in verdict.facts["ledger"] if r["page_id"] == "a")
    assert row["expected"]["failure_code"] == "http_status_410" and row["harness"]["failure_code"] == "http_status_404"
    assert row["harness"]["failure_class"] == "<not reported>"          # a v1 row has no class
    statuses = {(e["url"].rsplit("/", 1)[-1], e["status"]) for e in verdict.served}
    assert ("a", 404) in statuses and ("b", 503) in statuses
    assert all({"method", "url", "status", "media_type", "bytes"} <= set(e) for e in verdict.served)


# --- failures a user can act on ------------------------------------------------------------------------
def test_a_failure_prints_description_clauses_exchanges_and_facts(tmp_path):
    jsonl, junit = tmp_path / "r.jsonl", tmp_path / "r.xml"
    proc = subprocess.run([PY, "-m", "conformance", "--impl", f"{FAKE} --fault wrong-answer", "--case",
                           "disc-json-api-basic", "--report", str(jsonl), "--junit", str(junit)],
                          capture_output=True, text=True, cwd=ROOT, env=_env())
    assert proc.returncode == 1
    case = next(c for c in load_cases() if c.id == "disc-json-api-basic")
    out = proc.stdout
    assert case.data["description"] in out and ", ".join(case.clauses) in out
    assert "exchanges served in run 1 (method URL -> status, media type, body bytes):" in out
    assert "  GET https://www.example.com/list -> 200, application/json, " in out
    assert "ledger facts (expected | the harness's):" in out and '| (no row)' in out
    record = json.loads(jsonl.read_text().splitlines()[1])
    assert record["description"] == case.data["description"] and record["served"][0]["status"] == 200
    assert record["rerun"].endswith("--case disc-json-api-basic")
    failure = ET.parse(junit).getroot().find("testsuite/testcase/failure").text
    assert case.data["description"] in failure and "re-run:" in failure and "exchanges served" in failure


# --- re-run lines work as printed --------------------------------------------------------------------
def _rerun_line(text: str) -> str:
    lines = [line.strip()[len("re-run: "):] for line in text.splitlines() if line.strip().startswith("re-run: ")]
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize("entry", ["pyz", "python -m conformance", "collection conformance", "collection script"])
def test_rerun_line_runs_that_case_alone(entry, pyz):
    """D-76: the printed line starts the same runner again and selects that id alone, although
    `pag-cursor` is a prefix of other ids (counted from the suite itself, which grows)."""
    prefixed = sorted(p.stem for p in (ROOT / "conformance" / "cases").rglob("pag-cursor*.json"))
    assert "pag-cursor" in prefixed and len(prefixed) > 1, prefixed
    if entry == "pyz":
        start, env = [PY, str(pyz)], _env(pyz)
    elif entry == "python -m conformance":
        start, env = [PY, "-m", "conformance"], _env()
    elif entry == "collection conformance":
        start, env = [PY, "-m", "collection", "conformance"], _env()
    else:       # the console script `pip install -e .` put beside this interpreter
        script = Path(PY).parent / "collection"
        assert script.is_file(), "the package is installed (pip install -e '.[test]'), so its script is here"
        start, env = [str(script), "conformance"], _env()
    first = subprocess.run([*start, "--impl", f"{FAKE} --fault wrong-answer", "-k", "pag-cursor"],
                           capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert first.returncode == 1 and re.search(rf"cases: {len(prefixed)} ", first.stdout), first.stdout + first.stderr
    block = first.stdout.split("- pagination/pag-cursor [fail]")[1].split("\n- ")[0]
    line = _rerun_line(block)
    if entry == "pyz":
        assert str(pyz) in line
    again = subprocess.run(line, shell=True, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert again.returncode == 1, again.stdout + again.stderr
    assert re.search(r"cases: 1  pass 0  fail 1 ", again.stdout) and "- pagination/pag-cursor [fail]" in again.stdout
    assert _rerun_line(again.stdout) == line


def test_collection_conformance_help_names_itself():
    proc = subprocess.run([PY, "-m", "collection", "conformance", "--help"], capture_output=True, text=True,
                          cwd=ROOT, env=_env())
    assert proc.returncode == 0 and proc.stdout.startswith("usage: collection conformance")
    assert "python -m conformance" not in proc.stdout


# --- the runner's own missing packages: one line, every entry point and subcommand ------------------
@pytest.fixture(scope="module")
def blocker(tmp_path_factory):
    """A PYTHONPATH entry whose jsonschema and trustme refuse to import, as if not installed."""
    root = tmp_path_factory.mktemp("blocker")
    for name in ("jsonschema", "trustme"):
        (root / name).mkdir()
        (root / name / "__init__.py").write_text(
            f"raise ModuleNotFoundError(\"No module named '{name}'\", name={name!r})\n")
    return root


@pytest.mark.parametrize("entry", ["pyz", "python -m conformance", "collection conformance"])
@pytest.mark.parametrize("args, package", [
    (["check"], "jsonschema"),
    (["--impl", FAKE, "-k", "reg-worked-example"], "jsonschema"),
    (["--impl", FAKE, "-k", "reg-worked-example", "--mode", "loopback"], "jsonschema"),
    (["run", "--impl", FAKE, "-k", "reg-worked-example", "--mode", "loopback"], "trustme"),
], ids=["check", "run-inline", "run-loopback", "run-loopback-trustme"])
def test_missing_runner_package_is_one_line(entry, args, package, pyz, blocker, tmp_path):
    blocked = blocker
    if package == "trustme":          # jsonschema importable, trustme not
        blocked = tmp_path / "only-trustme"
        (blocked / "trustme").mkdir(parents=True)
        (blocked / "trustme" / "__init__.py").write_text((blocker / "trustme" / "__init__.py").read_text())
    if entry == "pyz":
        start, env = [PY, str(pyz)], _env(blocked, pyz)
    elif entry == "python -m conformance":
        start, env = [PY, "-m", "conformance"], _env(blocked)
    else:
        start, env = [PY, "-m", "collection", "conformance"], _env(blocked)
    proc = subprocess.run([*start, *args], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert f"needs the Python package {package}" in lines[0] and f"-m pip install {package}" in lines[0]
    assert "Traceback" not in proc.stderr and "did not start" not in proc.stdout + proc.stderr
    assert "pass" not in proc.stdout         # no case was run and blamed


def test_clauses_needs_no_package(blocker):
    proc = subprocess.run([PY, "-m", "conformance", "clauses"], capture_output=True, text=True, cwd=ROOT,
                          env=_env(blocker))
    assert proc.returncode == 0 and "observable" in proc.stdout, proc.stderr


def test_run_suite_raises_the_missing_package(blocker):
    """Called as a library (bench/mutation.py), the runner says the same before any harness starts."""
    code = ("import sys\nfrom conformance.needs import MissingDependency\nfrom conformance.runner import run_suite\n"
            "try:\n    run_suite('false', pattern='reg-worked-example')\n"
            "except MissingDependency as exc:\n    print(exc.package); sys.exit(0)\nsys.exit(1)")
    proc = subprocess.run([PY, "-c", code], capture_output=True, text=True, cwd=ROOT, env=_env(blocker))
    assert proc.returncode == 0 and proc.stdout.strip() == "jsonschema", proc.stderr
