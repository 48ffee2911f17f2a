"""A dataset's tables (the transform) at registration: the schema's shape and bounds (D-69), the
rules a schema cannot state (D-70), and the SQL contract's refusals (PROV-16 to PROV-20, REF-08,
D-49) as `collection validate` shows them in every format, from a file whose SQL is spread over
lines (issue 25 points 1 to 3)."""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st
from referencing import Registry, Resource

from collection import codes
from collection.cli import cli
from collection.recipe.registration import register_bytes, register_document
from collection.recipe.resources import load_schema
from collection.recipe.schemacheck import compile_check
from collection.transform.types import DECLARED_TYPES

ROOT = Path(__file__).resolve().parent.parent
SOURCE = json.loads((ROOT / "fixtures" / "recipes" / "council_decisions.json").read_text())
SCHEMA = load_schema("dataset.schema.json")
SPEC_TABLE = SCHEMA["properties"]["tables"]["examples"][0][0]
NEW_CODES = ("TABLE_DUPLICATE_NAME", "TABLE_NAME_IS_SOURCE", "TABLE_DUPLICATE_COLUMN", "TABLE_SOURCE_NOT_COLLECTION")


def feed() -> dict:
    """A valid source that is not a collection (another adapter: no Reader pin, no known columns)."""
    other = {k: copy.deepcopy(v) for k, v in SOURCE.items() if k not in ("collection", "limits")}
    other["name"] = "notes"
    other["connector"] = {"adapter_id": "public.https.feed@1.0.0", "credential_mode": "none"}
    return other


def dataset(*tables, sources=None) -> dict:
    return {"name": "council", "sources": sources or [copy.deepcopy(SOURCE)], "tables": [copy.deepcopy(t) for t in tables]}


def table(name="decisions", sql=None, columns=(("page_id", "string"), ("page_ordinal", "integer"))) -> dict:
    sql = sql or "select page_id, cast(page_ordinal as integer) as page_ordinal from council_decisions"
    return {"name": name, "sql": sql, "columns": [{"name": n, "type": t} for n, t in columns]}


def codes_at(document) -> list[tuple[str, str]]:
    return [(r.code, r.pointer) for r in register_document(document).refusals]


# --- the shape (D-69) ----------------------------------------------------------------------

def test_the_spec_transform_registers_as_written_and_reaches_the_model():
    """D-69, PROV-19, PROV-21: the spec's own SELECT (the schema's example) registers beside its source."""
    registration = register_document(dataset(SPEC_TABLE))
    assert registration.registrable, [str(r) for r in registration.refusals]
    (built,) = registration.dataset.tables
    assert built.name == "decisions" and built.sql == SPEC_TABLE["sql"]
    assert built.declared == tuple((c["name"], c["type"]) for c in SPEC_TABLE["columns"])
    assert "cast(page_fetched_at as timestamp with time zone)" in built.sql


def test_a_dataset_without_tables_is_unchanged():
    registration = register_document({"name": "council", "sources": [SOURCE]})
    assert registration.registrable and registration.dataset.tables == ()


@pytest.mark.parametrize("mutate, code, pointer", [
    (lambda d: d.update(tables=[]), "SCHEMA_LENGTH", "/tables"),
    (lambda d: d.update(tables=[table(f"t{i}") for i in range(65)]), "SCHEMA_LENGTH", "/tables"),
    (lambda d: d["tables"][0].update(sql=""), "SCHEMA_LENGTH", "/tables/0/sql"),
    (lambda d: d["tables"][0].update(sql="select 1 " + " " * 65536), "SCHEMA_LENGTH", "/tables/0/sql"),
    (lambda d: d["tables"][0].update(columns=[]), "SCHEMA_LENGTH", "/tables/0/columns"),
    (lambda d: d["tables"][0].update(columns=[{"name": f"c{i}", "type": "string"} for i in range(1025)]),
     "SCHEMA_LENGTH", "/tables/0/columns"),
    (lambda d: d["tables"][0]["columns"][1].update(type="varchar"), "SCHEMA_ENUM", "/tables/0/columns/1/type"),
    (lambda d: d["tables"][0]["columns"][1].update(type="timestamptz"), "SCHEMA_ENUM", "/tables/0/columns/1/type"),
    (lambda d: d["tables"][0].update(name="Decisions"), "SCHEMA_FORMAT", "/tables/0/name"),
    (lambda d: d["tables"][0].update(name="decisions\n"), "SCHEMA_FORMAT", "/tables/0/name"),
    (lambda d: d["tables"][0]["columns"][0].update(name="page id"), "SCHEMA_FORMAT", "/tables/0/columns/0/name"),
    (lambda d: d["tables"][0]["columns"][0].update(name="page_id\n"), "SCHEMA_FORMAT", "/tables/0/columns/0/name"),
    (lambda d: d["tables"][0].update(select="x"), "SCHEMA_UNKNOWN_MEMBER", "/tables/0/select"),
    (lambda d: d["tables"][0].pop("columns"), "SCHEMA_REQUIRED", "/tables/0/columns"),
    (lambda d: d["tables"][0]["columns"][0].pop("type"), "SCHEMA_REQUIRED", "/tables/0/columns/0/type"),
], ids=["none", "65-tables", "empty-sql", "long-sql", "no-columns", "1025-columns", "type-varchar",
        "type-timestamptz", "upper-name", "name-newline", "column-space", "column-newline", "unknown-member",
        "no-columns-member", "no-type"])
def test_bounds_and_shape_are_the_schemas(mutate, code, pointer):
    """D-69: each bound refused at its member, alone (a broken table is not handed to the SQL check)."""
    document = dataset(table())
    mutate(document)
    assert codes_at(document) == [(code, pointer)]


def test_every_declared_type_is_accepted_and_the_enum_is_types_py():
    """D-67, D-69: the schema's enum is DECLARED_TYPES, so validate and build speak of one set."""
    column = SCHEMA["properties"]["tables"]["items"]["properties"]["columns"]["items"]
    assert tuple(column["properties"]["type"]["enum"]) == DECLARED_TYPES


_REGISTRY = Registry().with_resource(load_schema("source.schema.json")["$id"],
                                     Resource.from_contents(load_schema("source.schema.json")))
_FAST = compile_check(SCHEMA, {load_schema("source.schema.json")["$id"]: load_schema("source.schema.json")})
_SLOW = jsonschema.Draft202012Validator(SCHEMA, registry=_REGISTRY).is_valid

NAMES = st.sampled_from(["decisions", "Decisions", "d", "decisions\n", "", "9x", "page_id", "a" * 63, "a" * 64,
                         "title_2", "x y", "é"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.fixed_dictionaries({
    "name": NAMES, "sql": st.sampled_from(["", "select 1", "select\n1"]),
    "columns": st.lists(st.fixed_dictionaries({"name": NAMES, "type": st.sampled_from([*DECLARED_TYPES, "varchar", 1])}),
                        max_size=3)}, optional={"description": st.sampled_from(["x", 5])}), max_size=3))
def test_fast_path_and_jsonschema_agree_on_tables(tables):
    """D-69: the compiled check registration trusts for valid documents says what jsonschema says."""
    document = {"name": "council", "sources": [SOURCE], "tables": tables}
    assert _FAST(document) == _SLOW(document)


# --- rules a schema cannot state (D-70) ----------------------------------------------------------

def test_table_names_are_distinct_and_never_a_sources():
    document = dataset(table(), table("council_decisions"), table())
    assert codes_at(document) == [("TABLE_NAME_IS_SOURCE", "/tables/1/name"), ("TABLE_DUPLICATE_NAME", "/tables/2/name")]


def test_column_names_are_distinct_ignoring_case():
    """D-70: DuckDB compares identifiers ignoring case, so Title and title are one column."""
    document = dataset(table(columns=(("Title", "string"), ("page_id", "string"), ("title", "string"))))
    (refusal,) = register_document(document).refusals
    assert (refusal.code, refusal.pointer) == ("TABLE_DUPLICATE_COLUMN", "/tables/0/columns/2/name")
    assert "'Title'" in refusal.message


def test_a_table_reading_a_source_that_is_not_a_collection_is_refused_at_the_name():
    """D-70, PROV-02: only a collection's relation has known columns; one refusal, at the name's place."""
    sql = "select d.title\nfrom council_decisions d\n  join notes n on d.page_id = n.page_id"
    document = dataset(table(sql=sql, columns=(("title", "string"),)), sources=[copy.deepcopy(SOURCE), feed()])
    text = json.dumps(document, indent=2)
    (refusal,) = register_bytes(text).refusals
    assert (refusal.code, refusal.pointer) == ("TABLE_SOURCE_NOT_COLLECTION", "/tables/0/sql")
    assert "'notes'" in refusal.message and "line 3" in refusal.message
    line = text.splitlines()[refusal.line - 1]
    assert line[refusal.column - 1:].startswith("notes n on")


def test_a_name_that_is_not_read_as_a_table_is_no_refusal():
    """D-70: the name of a non-collection source as a column alias or a string reads nothing."""
    sql = "select title as notes, 'notes' as page_id from council_decisions"
    document = dataset(table(sql=sql, columns=(("notes", "string"), ("page_id", "string"))),
                       sources=[copy.deepcopy(SOURCE), feed()])
    assert register_document(document).registrable, [str(r) for r in register_document(document).refusals]


def test_a_source_whose_reader_pin_is_refused_gives_one_refusal_not_one_per_table():
    """D-70, one refusal per cause: the table reading it is not checked against unknown columns."""
    broken = copy.deepcopy(SOURCE)
    broken["connector"]["parameters"][0]["value"] = "html.nope"
    document = dataset(table(sql="select page_id, page_ordinal from council_decisions"), sources=[broken])
    assert codes_at(document) == [("READER_FAMILY_UNSUPPORTED", "/sources/0/connector/parameters/0/value")]


def test_a_source_refused_for_another_reason_still_types_its_tables():
    """D-70: a refused origin leaves the Reader pin's columns known, so the table is checked too."""
    broken = copy.deepcopy(SOURCE)
    broken["collection"]["pages"]["retries"] = 9
    document = dataset(table(sql="select page_id, page_ordinal from council_decisions"), sources=[broken])
    assert [c for c, _ in codes_at(document)] == ["SCHEMA_BOUND", "TRANSFORM_COLUMN_TYPE_MISMATCH"]


# --- the SQL contract's refusals, placed in the file -------------------------------------------

BARE = ("select page_id,\n"
        "       page_ordinal,\n"
        "       title\n"
        "from council_decisions")


def bare_file(tmp_path) -> tuple[Path, str]:
    document = dataset(table(sql=BARE, columns=(("page_id", "string"), ("page_ordinal", "integer"), ("title", "string"))))
    text = json.dumps(document, indent=2)
    path = tmp_path / "dataset.json"
    path.write_text(text)
    return path, text


def test_a_bare_page_ordinal_declared_integer_is_the_mismatch_at_its_own_character(tmp_path):
    """PROV-18, REF-08, D-49, D-70: pointer /tables/0/sql, the file's line and column of the bare
    column inside the JSON string (its \\n escapes counted), the SQL's own line in the message."""
    path, text = bare_file(tmp_path)
    (refusal,) = register_bytes(text).refusals
    assert (refusal.code, refusal.pointer) == ("TRANSFORM_COLUMN_TYPE_MISMATCH", "/tables/0/sql")
    line = text.splitlines()[refusal.line - 1]
    assert line[refusal.column - 1:].startswith("page_ordinal,\\n")
    assert "page_ordinal" in refusal.message and "line 2" in refusal.message
    assert "\n" not in refusal.message


def test_the_same_sql_written_plainly_is_pointed_at_the_same_way():
    """D-70: with the SQL on one line the column is that of the bare name in the file."""
    sql = "select page_id, page_ordinal from council_decisions"
    text = json.dumps(dataset(table(sql=sql)))
    (refusal,) = register_bytes(text).refusals
    assert refusal.line == 1 and text[refusal.column - 1:].startswith("page_ordinal from")


def test_refusals_come_in_document_order_across_sources_and_tables():
    broken = copy.deepcopy(SOURCE)
    broken["collection"]["pages"]["retries"] = 9
    document = dataset(table(sql="select page_id, page_ordinal from council_decisions"),
                       table("council_decisions"), sources=[broken])
    refusals = register_document(document).refusals
    assert [r.code for r in refusals] == ["SCHEMA_BOUND", "TRANSFORM_COLUMN_TYPE_MISMATCH", "TABLE_NAME_IS_SOURCE"]
    assert [(r.line, r.column) for r in refusals] == sorted((r.line, r.column) for r in refusals)
    assert register_document(document).refusals == refusals


# --- every format of `collection validate`, end to end ---------------------------------------------

def invoke(*args):
    result = CliRunner().invoke(cli, ["validate", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def all_refusals_file(tmp_path) -> Path:
    """One file holding each refusal of the transform: the four document rules and the mismatch."""
    document = dataset(table(sql=BARE, columns=(("page_id", "string"), ("page_ordinal", "integer"), ("title", "string"))),
                       table("council_decisions", columns=(("Title", "string"), ("title", "string"))),
                       table(sql="select title from notes", columns=(("title", "string"),)),
                       sources=[copy.deepcopy(SOURCE), feed()])
    path = tmp_path / "dataset.json"
    path.write_text(json.dumps(document, indent=2))
    return path


def test_every_format_shows_the_transforms_refusals_alike(tmp_path):
    """issue 25 point 2: text, json, github, sarif and junit carry the same refusals, same places."""
    path = all_refusals_file(tmp_path)
    report = json.loads(invoke("--format", "json", str(path)).stdout)
    want = [(r["code"], r["line"], r["column"]) for r in report["files"][0]["refusals"]]
    assert [c for c, _, _ in want] == ["TRANSFORM_COLUMN_TYPE_MISMATCH", "TABLE_NAME_IS_SOURCE",
                                       "TABLE_DUPLICATE_COLUMN", "TABLE_DUPLICATE_NAME", "TABLE_SOURCE_NOT_COLLECTION"]
    assert report["files"][0]["refusals"][0]["pointer"] == "/tables/0/sql" and report["registrable"] is False

    text = invoke("--format", "text", str(path))
    assert text.exit_code == 1
    got = [re.match(r".*:(\d+):(\d+): (\S+) at /tables/", line).groups() for line in text.stdout.splitlines()]
    assert [(c, int(l), int(col)) for l, col, c in got] == want

    github = invoke("--format", "github", str(path))
    got = [re.match(r"::error file=.*,line=(\d+),col=(\d+),title=([A-Z_]+)::", line).groups()
           for line in github.stdout.splitlines()]
    assert github.exit_code == 1 and [(c, int(l), int(col)) for l, col, c in got] == want

    sarif = json.loads(invoke("--format", "sarif", str(path)).stdout)
    run = sarif["runs"][0]
    got = [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"],
            r["locations"][0]["physicalLocation"]["region"]["startColumn"]) for r in run["results"]]
    assert got == want
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    for code in NEW_CODES:
        assert rules[code]["shortDescription"]["text"] == codes.lookup(code).summary

    junit = ET.fromstring(invoke("--format", "junit", str(path)).stdout)
    (case,) = junit.findall("./testsuite/testcase")
    lines = case.find("failure").text.splitlines()
    got = [re.match(r".*:(\d+):(\d+): (\S+) at ", line).groups() for line in lines]
    assert [(c, int(l), int(col)) for l, col, c in got] == want


def test_a_good_transform_is_registrable_in_every_format(tmp_path):
    path = tmp_path / "good.json"
    path.write_text(json.dumps(dataset(SPEC_TABLE), indent=2))
    for fmt in ("text", "json", "github", "sarif", "junit"):
        assert invoke("--format", fmt, str(path)).exit_code == 0, fmt
    assert "registrable dataset" in invoke(str(path)).stdout


@pytest.mark.parametrize("code", NEW_CODES)
def test_explain_prints_each_new_code(code):
    """`collection explain` knows each code the transform's rules give (docs/codes.md lists them)."""
    result = CliRunner().invoke(cli, ["explain", code])
    assert result.exit_code == 0 and result.stdout.startswith(f"{code} (registration)")
    entry = json.loads(CliRunner().invoke(cli, ["explain", code, "--json"]).stdout)
    assert entry["fix"] and {"D-69", "D-70"} & set(entry["clauses"])


def test_explain_prints_the_mismatch_code():
    result = CliRunner().invoke(cli, ["explain", "TRANSFORM_COLUMN_TYPE_MISMATCH"])
    assert result.exit_code == 0 and "cast(page_ordinal as integer)" in result.stdout


def test_escapes_before_the_bare_column_count_as_one_character_each():
    """D-70: a \\u escape (and a surrogate pair) inside the JSON string is the one character it stands
    for in the SQL, so the file column still lands on the bare column."""
    sql = "select 'é😀' as page_id,\n  page_ordinal from council_decisions"
    text = json.dumps(dataset(table(sql=sql)))          # ensure_ascii: é and 😀 written as \\u escapes
    assert "\\ud83d\\ude00" in text
    (refusal,) = register_bytes(text).refusals
    assert refusal.code == "TRANSFORM_COLUMN_TYPE_MISMATCH"
    assert text[refusal.column - 1:].startswith("page_ordinal from")


def test_a_with_query_named_as_a_non_collection_source_reads_no_source():
    """D-70: what a table reads is what the SQL contract's parser reads, WITH queries excepted."""
    sql = "with notes as (select page_id from council_decisions) select page_id from notes"
    document = dataset(table(sql=sql, columns=(("page_id", "string"),)), sources=[copy.deepcopy(SOURCE), feed()])
    registration = register_document(document)
    assert registration.registrable, [str(r) for r in registration.refusals]
