"""`collection validate`: exit codes, the JSON report, positions, and bad input.

GUIDE "Interfaces users rely on": exit 0 when every file is registrable, 1 when any is
refused, 2 for usage errors or unreadable files; never a traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from collection.cli import cli
from collection.recipe.registration import register_bytes
from collection.recipe.resources import load_schema

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "fixtures" / "recipes" / "council_decisions.json"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def report(*files: str) -> tuple[int, dict]:
    code, out, _ = run("validate", "--json", *files)
    document = json.loads(out)
    jsonschema.Draft202012Validator(load_schema("validate-report.schema.json")).validate(document)
    return code, document


def write(tmp_path: Path, name: str, content: bytes | str) -> str:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return str(path)


def test_bundled_recipes_are_registrable():
    code, document = report(*map(str, sorted((ROOT / "fixtures" / "recipes").glob("*.json"))))
    assert code == 0 and document["registrable"] is True
    assert all(entry["registrable"] for entry in document["files"])


def test_refused_file_exits_1_and_reports_line_and_column(tmp_path):
    """D-46: a refusal names the JSON path and the bound it broke; plus line and column."""
    text = EXAMPLE.read_text().replace('"retries": 2', '"retries": 7')
    code, document = report(write(tmp_path, "bad.json", text))
    assert code == 1 and document["registrable"] is False
    (refusal,) = document["files"][0]["refusals"]
    line = next(i for i, l in enumerate(text.splitlines(), 1) if '"retries": 7' in l)
    assert refusal["code"] == "SCHEMA_BOUND"
    assert refusal["pointer"] == "/collection/pages/retries"
    assert refusal["line"] == line
    assert refusal["column"] == text.splitlines()[line - 1].index('"retries"') + 1
    assert "REG-29" in refusal["rule"] and "3" in refusal["rule"]


def test_all_refusals_in_document_order(tmp_path):
    """Issue 2: every refusal of a document is reported, in document order."""
    doc = json.loads(EXAMPLE.read_text())
    doc["closed"] = True                                     # last member in the file
    doc["connector"]["credential_mode"] = "oauth"            # early
    doc["collection"]["pages"]["retries"] = 9                # middle
    code, document = report(write(tmp_path, "many.json", json.dumps(doc, indent=2)))
    refusals = document["files"][0]["refusals"]
    assert code == 1
    assert [r["code"] for r in refusals] == ["CREDENTIAL_MODE_NOT_NONE", "SCHEMA_BOUND", "CLOSED_FORBIDDEN"]
    assert [r["line"] for r in refusals] == sorted(r["line"] for r in refusals)


def test_one_refused_among_several_files_exits_1(tmp_path):
    bad = write(tmp_path, "bad.json", "[]")
    code, document = report(str(EXAMPLE), bad)
    assert code == 1
    assert [f["registrable"] for f in document["files"]] == [True, False]
    assert document["files"][1]["refusals"][0]["code"] == "DOCUMENT_NOT_OBJECT"


@pytest.mark.parametrize("make", [
    lambda tmp: str(tmp / "missing.json"),
    lambda tmp: str(tmp),                       # a directory
])
def test_unreadable_file_exits_2(tmp_path, make):
    code, out, err = run("validate", str(EXAMPLE), make(tmp_path))
    assert code == 2
    assert "cannot read" in err


def test_no_file_is_a_usage_error():
    code, _, _ = run("validate")
    assert code == 2


BAD_INPUT = [
    ("invalid UTF-8", b'{"name": "\xff"}', "JSON_INVALID", (1, 11)),
    ("invalid JSON", b'{\n  "name": "x",\n  "oops"\n}', "JSON_INVALID", (4, 1)),
    ("truncated", b'{"name": ', "JSON_INVALID", (1, 10)),
    ("NaN", b'{"a": NaN}', "JSON_INVALID", (1, 7)),
    ("top-level array", b"[1, 2]", "DOCUMENT_NOT_OBJECT", (1, 1)),
    ("top-level string", b'"x"', "DOCUMENT_NOT_OBJECT", (1, 1)),
    ("empty file", b"", "JSON_INVALID", (1, 1)),
    ("huge number", b'{"a": ' + b"9" * 5000 + b"}", "JSON_NUMBER_OUT_OF_RANGE", (1, 7)),
    ("nesting 10,000 deep", b"[" * 10000 + b"]" * 10000, "JSON_TOO_DEEP", None),
    ("nesting 10,000 deep objects", b'{"a":' * 10000 + b"1" + b"}" * 10000, "JSON_TOO_DEEP", None),
    ("duplicate key", b'{"name": "a",\n "name": "b"}', "JSON_DUPLICATE_KEY", (2, 2)),
]


@pytest.mark.parametrize("label, content, code, position", BAD_INPUT, ids=[b[0] for b in BAD_INPUT])
def test_bad_input_is_a_refusal_not_a_traceback(tmp_path, label, content, code, position):
    exit_code, document = report(write(tmp_path, "bad.json", content))
    assert exit_code == 1
    refusals = document["files"][0]["refusals"]
    assert code in [r["code"] for r in refusals]
    if position is not None:
        first = next(r for r in refusals if r["code"] == code)
        assert (first["line"], first["column"]) == position


def test_50_megabyte_file_is_refused_quickly(tmp_path):
    path = tmp_path / "big.json"
    with path.open("wb") as handle:
        handle.write(b'{"description": "')
        handle.write(b"x" * (50 * 1024 * 1024))
        handle.write(b'"}')
    exit_code, document = report(str(path))
    assert exit_code == 1
    assert document["files"][0]["refusals"][0]["code"] == "DOCUMENT_TOO_LARGE"


def test_human_output_names_file_line_code_and_pointer(tmp_path):
    text = EXAMPLE.read_text().replace('"concurrency": 2', '"concurrency": 0')
    path = write(tmp_path, "bad.json", text)
    code, out, _ = run("validate", path)
    assert code == 1
    line = next(i for i, l in enumerate(text.splitlines(), 1) if '"concurrency": 0' in l)
    assert out.startswith(f"{path}:{line}:")
    assert "SCHEMA_BOUND at /collection/pages/concurrency" in out


def test_console_script_runs_as_module():
    """The module entry point (`python -m collection`) gives the same exit codes."""
    result = subprocess.run([sys.executable, "-m", "collection", "validate", str(EXAMPLE)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=12), children, max_size=6),
    max_leaves=40,
)


def _mutated_example(draw_value, pointer_choice: int) -> dict:
    doc = json.loads(EXAMPLE.read_text())
    paths = [("collection", "pages"), ("collection", "discovery"), ("connector",), ("limits",), ()]
    target = doc
    for step in paths[pointer_choice % len(paths)]:
        target = target[step]
    return doc, target


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300))
def test_validate_never_raises_on_any_bytes(data):
    registration = register_bytes(data)
    assert registration.registrable == (not registration.refusals)


@settings(max_examples=150, deadline=None)
@given(JSON_VALUES)
def test_validate_never_raises_on_any_json_value(value):
    registration = register_bytes(json.dumps(value))
    assert isinstance(registration.refusals, tuple)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 4), st.text(max_size=10), JSON_VALUES)
def test_validate_never_raises_on_an_example_with_any_member_replaced(where, key, value):
    doc, target = _mutated_example(None, where)
    target[key if key else "kind"] = value
    registration = register_bytes(json.dumps(doc))
    for refusal in registration.refusals:
        assert refusal.code and refusal.pointer is not None


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["pagination", "records", "link", "identity", "revision", "members", "url", "max_requests"]),
       JSON_VALUES)
def test_validate_never_raises_on_nested_members_replaced(member, value):
    """The rules read members defensively: any JSON value anywhere gives refusals, not a crash."""
    edits = [
        lambda d: d["collection"]["discovery"].__setitem__(member, value),
        lambda d: d["collection"]["pages"].__setitem__("revisit", {"kind": value}),
        lambda d: d["connector"]["parameters"][2].__setitem__("value", json.dumps(value, sort_keys=True)),
        lambda d: d["connector"].__setitem__("parameters", value),
        lambda d: d["collection"]["pages"].__setitem__("allowed_origins", value),
        lambda d: d["collection"].__setitem__("discovery", {"kind": "explicit", "members": value}),
    ]
    for edit in edits:
        doc = json.loads(EXAMPLE.read_text())
        edit(doc)
        assert isinstance(register_bytes(json.dumps(doc)).refusals, tuple)
