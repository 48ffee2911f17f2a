"""The suite lints itself: schema, ids, clauses, exchanges, expectations; and check can fail."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from conformance import suite


def test_committed_suite_is_clean():
    assert suite.check() == []


def test_every_observable_clause_has_a_case():
    by_clause, clauses, reasons = suite.coverage_table()
    missing = [c["id"] for c in clauses if c["id"] not in by_clause and c["id"] not in reasons]
    assert missing == []


def test_clauses_json_matches_ids():
    ids = [c["id"] for c in suite.clauses()]
    assert len(ids) == len(set(ids)) and {"REG-01", "COV-18", "D-62"} <= set(ids)


def test_conformance_imports_nothing_from_collection():
    code = ("import sys, conformance.cli, conformance.runner, conformance.report, conformance.compare, "
            "conformance.suite, conformance.protocol, conformance.harnesses.fake; "
            "bad = [m for m in sys.modules if m == 'collection' or m.startswith('collection.')]; "
            "bad += [m for m in sys.modules if m == 'trustme']; print(bad); sys.exit(1 if bad else 0)")
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


@pytest.fixture
def broken_suite(tmp_path):
    root = tmp_path / "cases"
    shutil.copytree(suite.CASES_DIR / "discovery", root / "discovery")
    return root


def _mutate(root, name, change):
    path = root / "discovery" / f"{name}.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


@pytest.mark.parametrize("change, needle", [
    (lambda d: d["clauses"].append("REG-99"), "does not exist"),
    (lambda d: d.pop("description"), "schema"),
    (lambda d: d["runs"][0]["expect"].pop("relation"), "no relation"),
    (lambda d: d["runs"][0]["expect"].pop("ledger"), "no ledger"),
    (lambda d: d["runs"][0]["exchanges"].append(d["runs"][0]["exchanges"][0]), "recorded twice"),
    (lambda d: d["runs"][0]["exchanges"][0]["response"].__setitem__("body", {"base64": "!!!"}), "base64"),
    (lambda d: d["runs"][0]["exchanges"][0]["response"].__setitem__("status", 1000), "schema"),   # 100-999 are statuses (issue 15)
    (lambda d: d.__setitem__("id", "disc-explicit"), "also used"),
])
def test_check_finds_broken_cases(broken_suite, change, needle):
    _mutate(broken_suite, "disc-json-api-basic", change)
    problems = suite.check(broken_suite)
    assert any(needle in p for p in problems), problems


def test_cli_check_exit_status():
    assert subprocess.run([sys.executable, "-m", "conformance", "check"], capture_output=True).returncode == 0
    out = subprocess.run([sys.executable, "-m", "conformance", "clauses", "--strict"], capture_output=True, text=True)
    assert out.returncode == 0 and "observable" in out.stdout
