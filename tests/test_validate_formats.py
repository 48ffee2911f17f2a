"""`collection validate --format text|json|github|sarif|junit`, directories and `-`.

The same refusals in the same order in every format (GUIDE: recipe authors validate in CI);
SARIF checked against the official OASIS SARIF 2.1.0 schema (tests/data/sarif/README.md).
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from collection.cli import cli
from collection import codes

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = (ROOT / "fixtures" / "recipes" / "council_decisions.json").read_text()
SARIF_SCHEMA = json.loads((Path(__file__).resolve().parent / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text())


@pytest.fixture
def tree(tmp_path):
    """A directory of recipes: one good, three refused (one with a comma and a colon in its name)."""
    root = tmp_path / "recipes"
    (root / "nested").mkdir(parents=True)
    (root / "good.json").write_text(EXAMPLE)
    (root / "nested" / "retries.json").write_text(EXAMPLE.replace('"retries": 2', '"retries": 7'))
    (root / "nested" / "two, faults: here.json").write_text(
        EXAMPLE.replace('"concurrency": 2', '"concurrency": 0').replace('"public"', '"Public"'))
    (root / "broken.json").write_text('{"name": "x",\n "name": "y"}')
    (root / "notes.txt").write_text("not a recipe")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "ignored.json").write_text("{")
    return root


def invoke(*args, input=None):
    result = CliRunner().invoke(cli, ["validate", *args], input=input)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def expected(tree):
    report = json.loads(invoke("--format", "json", str(tree)).stdout)
    return [(Path(e["file"]).name, r["code"], r["line"], r["column"]) for e in report["files"] for r in e["refusals"]]


def test_directory_is_expanded_recursively_in_sorted_order(tree):
    report = json.loads(invoke("--json", str(tree)).stdout)
    assert [Path(e["file"]).relative_to(tree).as_posix() for e in report["files"]] == [
        "broken.json", "good.json", "nested/retries.json", "nested/two, faults: here.json"]
    assert invoke(str(tree)).exit_code == 1


def test_every_format_carries_the_same_refusals_in_the_same_order(tree):
    want = expected(tree)
    assert {"JSON_DUPLICATE_KEY", "SCHEMA_BOUND"} <= {c for _, c, _, _ in want}
    assert {name for name, *_ in want} == {"broken.json", "retries.json", "two, faults: here.json"}

    text = invoke("--format", "text", str(tree))
    got = [re.match(r"(.*):(\d+):(\d+): (\S+) at ", line).groups() for line in text.stdout.splitlines()
           if " at /" in line]
    assert [(Path(f).name, c, int(l), int(col)) for f, l, col, c in got] == want

    github = invoke("--format", "github", str(tree))
    assert github.exit_code == 1
    got = [re.match(r"::error file=(.*),line=(\d+),col=(\d+),title=([A-Z_]+)::", line).groups()
           for line in github.stdout.splitlines()]
    names = [f.replace("%2C", ",").replace("%3A", ":").replace("%25", "%") for f, *_ in got]
    assert [(Path(n).name, c, int(l), int(col)) for n, (_, l, col, c) in zip(names, got)] == want
    assert "two%2C faults%3A here.json" in github.stdout          # properties escaped as the toolkit does

    sarif = json.loads(invoke("--format", "sarif", str(tree)).stdout)
    results = sarif["runs"][0]["results"]
    got = [(Path(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]).name.replace("%2C", ",")
            .replace("%20", " ").replace("%3A", ":"), r["ruleId"],
            r["locations"][0]["physicalLocation"]["region"]["startLine"],
            r["locations"][0]["physicalLocation"]["region"]["startColumn"]) for r in results]
    assert got == want

    junit = ET.fromstring(invoke("--format", "junit", str(tree)).stdout)
    cases = junit.findall("./testsuite/testcase")
    assert len(cases) == 4 and junit.get("failures") == "3" and junit.get("tests") == "4"
    got = []
    for case in cases:
        failure = case.find("failure")
        if failure is not None:
            for line in failure.text.splitlines():
                f, l, col, c = re.match(r"(.*):(\d+):(\d+): (\S+) at ", line).groups()
                got.append((Path(case.get("name")).name, c, int(l), int(col)))
    assert got == want


def test_sarif_is_valid_against_the_official_schema_with_one_rule_per_code(tree):
    log = json.loads(invoke("--format", "sarif", str(tree), "-", input="[1]").stdout)
    jsonschema.Draft4Validator(SARIF_SCHEMA, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER).validate(log)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    ids = [rule["id"] for rule in rules]
    assert len(ids) == len(set(ids)) == len({r["ruleId"] for r in run["results"]})
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    for rule in rules:                                  # the `explain` text of each code
        entry = codes.lookup(rule["id"])
        assert rule["shortDescription"]["text"] == entry.summary and rule["help"]["text"] == entry.fix


def test_sarif_reports_an_unreadable_file_as_a_notification(tmp_path):
    log = json.loads(invoke("--format", "sarif", str(tmp_path / "missing.json")).stdout)
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)
    (notification,) = log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert "no such file" in notification["message"]["text"]


def test_junit_one_case_per_document_and_errors_for_unreadable(tree, tmp_path):
    result = invoke("--format", "junit", str(tree / "good.json"), str(tmp_path / "missing.json"))
    assert result.exit_code == 2
    suite = ET.fromstring(result.stdout)
    good, missing = suite.findall("./testsuite/testcase")
    assert list(good) == [] and missing.find("error").get("type") == "unreadable"


def test_junit_survives_control_characters_in_a_message(tmp_path):
    path = tmp_path / "ctl.json"
    path.write_text(EXAMPLE.replace('"council_decisions"', '"bad\\u0001name"', 1))
    result = invoke("--format", "junit", str(path))
    assert result.exit_code == 1
    ET.fromstring(result.stdout)                        # well-formed XML 1.0


def test_stdin_and_json_flag(tree):
    result = invoke("--json", "-", input=EXAMPLE)
    report = json.loads(result.stdout)
    assert result.exit_code == 0 and report["files"][0]["file"] == "-" and report["registrable"]
    assert invoke("--json", "--format", "sarif", "-", input=EXAMPLE).exit_code == 2   # one or the other


def test_a_directory_with_no_recipe_is_reported_unreadable(tmp_path):
    (tmp_path / "empty").mkdir()
    result = invoke("--format", "github", str(tmp_path / "empty"))
    assert result.exit_code == 2 and "holding no *.json" in result.stdout
