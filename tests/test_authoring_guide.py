"""Every recipe in the docs is extracted, validated and run against its replay fixture, so no
doc example can rot (issue 19). docs/authoring.md marks each recipe with the fixture it runs
against (`<!-- fixture: PATH -->`) and each partial block with the recipe it completes
(`<!-- fragment-of: NAME -->`); together its recipes cover every discovery kind, pagination
grammar and Reader family."""

from __future__ import annotations

import copy
import csv
import importlib.util
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from collection.cli import cli
from collection.recipe.registration import register_document
from collection.recipe.resources import load_schema

ROOT = Path(__file__).resolve().parent.parent
DOCS = sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]
BLOCK = re.compile(r"(?:<!-- (fixture|fragment-of): (\S+) -->\n)?```json\n(.*?)```", re.S)


def blocks():
    for doc in DOCS:
        for match in BLOCK.finditer(doc.read_text(encoding="utf-8")):
            marker, target, text = match.groups()
            if marker or '"connector"' in text:
                yield doc.name, marker, target, text


RECIPES = [(doc, target, json.loads(text)) for doc, marker, target, text in blocks() if '"connector"' in text]
FRAGMENTS = [(doc, target, json.loads(text)) for doc, marker, target, text in blocks() if marker == "fragment-of"]


def test_every_recipe_block_names_its_fixture():
    assert len(RECIPES) >= 8
    for doc, fixture, recipe in RECIPES:
        assert fixture is not None, f"{doc}: recipe {recipe.get('name')} has no <!-- fixture: ... --> marker"


def test_the_guide_covers_every_kind_grammar_and_family():
    kinds = {r["collection"]["discovery"]["kind"] for _, _, r in RECIPES}
    grammars = {r["collection"]["discovery"].get("pagination", {"kind": "none"})["kind"] for _, _, r in RECIPES}
    families = {p["value"] for _, _, r in RECIPES for p in r["connector"]["parameters"] if p["name"] == "reader.family_id"}
    assert kinds == {"json_api", "html_index", "sitemap", "explicit"}
    assert grammars == {"none", "page_parameter", "offset_parameter", "link_header", "cursor", "next_selector"}
    assert families == {"html.tabular", "html.web_extract", "json.tabular", "xml.tabular"}


@pytest.mark.parametrize("doc, fixture, recipe", RECIPES, ids=[r[2]["name"] for r in RECIPES])
def test_doc_recipe_registers_and_runs_against_its_fixture(tmp_path, doc, fixture, recipe):
    registration = register_document(recipe)
    assert registration.registrable, [str(r) for r in registration.refusals]
    path = tmp_path / "recipe.json"
    path.write_text(json.dumps(recipe))
    state = tmp_path / "state"
    result = CliRunner().invoke(cli, ["run", str(path), "--state", str(state), "--replay", str(ROOT / fixture), "--json"])
    assert result.exit_code == 0, result.output
    record = json.loads(result.stdout)
    cov = record["coverage"]
    assert cov["discovered"] >= 2 and cov["discovery_complete"] and cov["discovery_failure"] is None
    assert cov["fetched_this_run"] == cov["discovered"] and cov["failed"] == 0 and cov["complete"] is True
    assert record["discovery"]["warning"] is None and record["discovery"]["dropped_records"] == 0
    with open(state / "current" / "relation.csv", newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert rows and len(rows) == record["rows"]
    reader_columns = [c for c in rows[0] if not c.startswith("page_")]
    assert all(any(row[c] for row in rows) for c in reader_columns), "a Reader column is empty on every page"


@pytest.mark.parametrize("doc, target, fragment", FRAGMENTS, ids=[f[1] for f in FRAGMENTS])
def test_doc_fragment_registers_inside_its_recipe(doc, target, fragment):
    (recipe,) = [r for _, _, r in RECIPES if r["name"] == target]

    def merge(into, patch):
        for key, value in patch.items():
            if isinstance(value, dict) and isinstance(into.get(key), dict):
                merge(into[key], value)
            else:
                into[key] = value
    merged = copy.deepcopy(recipe)
    merge(merged, fragment)
    registration = register_document(merged)
    assert registration.registrable, [str(r) for r in registration.refusals]


def test_the_fixtures_are_what_the_generator_writes():
    spec = importlib.util.spec_from_file_location("guide_fixtures", ROOT / "docs" / "examples" / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in module.FIXTURES:
        assert (ROOT / "docs" / "examples" / f"{name}.fixture.json").read_text(encoding="utf-8") == module.render(name)
    saved = module.saved_pages()
    assert len(saved) == 5
    for name, text in saved.items():      # the guide's "From saved pages to an offline crawl"
        assert (ROOT / "docs" / "examples" / "saved" / name).read_text(encoding="utf-8") == text


# --- "Typed tables": each transform registers beside its recipe, runs in DuckDB over that recipe's
# relation, and each column left bare is refused exactly as the guide shows (issue 25 point 6) ------

GUIDE = (ROOT / "docs" / "authoring.md").read_text(encoding="utf-8")
TABLE_BLOCK = re.compile(r"<!-- (tables-for|bare-for): (\S+) -->\n```json\n(.*?)```"
                         r"(?:\s*<!-- refusal -->\n```text\n(.*?)```)?", re.S)
TABLES = [(kind, target, json.loads(text), shown) for kind, target, text, shown in TABLE_BLOCK.findall(GUIDE)]
DEMO = {"fixtures/recipes/council_decisions.json": "fixtures/council_decisions/council_decisions.fixture.json.gz"}


def _recipe_and_fixture(target):
    if target in DEMO:
        return json.loads((ROOT / target).read_text(encoding="utf-8")), DEMO[target]
    (found,) = [(recipe, fixture) for _, fixture, recipe in RECIPES if recipe["name"] == target]
    return found


def _dataset_file(tmp_path, target, block):
    recipe, _ = _recipe_and_fixture(target)
    path = tmp_path / "dataset.json"
    path.write_text(json.dumps({"name": "guide", "sources": [recipe], **block}, indent=2), encoding="utf-8")
    return path


def test_the_guide_has_a_transform_and_a_bare_column_for_every_family_and_the_spec():
    """issue 25 point 6: one transform per Reader family, and the specification's own example."""
    families = set()
    for kind in ("tables-for", "bare-for"):
        targets = [target for k, target, _, _ in TABLES if k == kind]
        assert "fixtures/recipes/council_decisions.json" in targets, kind
        for target in targets:
            recipe, _ = _recipe_and_fixture(target)
            families |= {p["value"] for p in recipe["connector"]["parameters"] if p["name"] == "reader.family_id"}
    assert families == {"html.tabular", "html.web_extract", "json.tabular", "xml.tabular"}
    spec = load_schema("dataset.schema.json")["properties"]["tables"]["examples"][0][0]
    assert [b for k, t, b, _ in TABLES if k == "tables-for" and t in DEMO] == [{"tables": [spec]}]
    assert all(shown for k, _, _, shown in TABLES if k == "bare-for")


@pytest.mark.parametrize("target, block", [(t, b) for k, t, b, _ in TABLES if k == "tables-for"],
                         ids=[t.rsplit("/", 1)[-1] for k, t, _, _ in TABLES if k == "tables-for"])
def test_guide_transform_registers_and_duckdb_builds_it_with_the_declared_types(tmp_path, target, block):
    """PROV-16, PROV-19, PROV-21, D-69: validate accepts it; DuckDB, over the relation the recipe's
    fixture gives (every column VARCHAR), runs it and gives types that fit the declared ones."""
    import duckdb

    from collection.transform.types import accepts

    path = _dataset_file(tmp_path, target, block)
    result = CliRunner().invoke(cli, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    recipe, fixture = _recipe_and_fixture(target)
    source = tmp_path / "source.json"
    source.write_text(json.dumps(recipe), encoding="utf-8")
    state = tmp_path / "state"
    run = CliRunner().invoke(cli, ["run", str(source), "--state", str(state), "--replay", str(ROOT / fixture)])
    assert run.exit_code == 0, run.output
    db = duckdb.connect()
    db.execute(f"create table {recipe['name']} as select * from read_csv(?, header = true, all_varchar = true, "
               "delim = ',', quote = '\"', escape = '\"')", [str(state / "current" / "relation.csv")])
    for table in block["tables"]:
        described = db.execute(f"describe {table['sql']}").fetchall()
        assert [row[0] for row in described] == [c["name"] for c in table["columns"]]
        for row, column in zip(described, table["columns"]):
            assert accepts(column["type"], row[1]), (table["name"], column, row[1])
        rows = db.execute(f"select count(*) from ({table['sql']})").fetchone()[0]
        assert rows > 0, table["name"]


@pytest.mark.parametrize("target, block, shown", [(t, b, s) for k, t, b, s in TABLES if k == "bare-for"],
                         ids=[t.rsplit("/", 1)[-1] for k, t, _, _ in TABLES if k == "bare-for"])
def test_guide_bare_column_is_refused_exactly_as_shown(tmp_path, target, block, shown):
    """PROV-18, REF-08, D-49, D-70: the refusal the guide prints is validate's own text output for the
    dataset written as `json.dumps(document, indent=2)` in `dataset.json`."""
    path = _dataset_file(tmp_path, target, block)
    result = CliRunner().invoke(cli, ["validate", str(path)])
    assert result.exit_code == 1
    got = result.stdout.replace(str(path), "dataset.json").strip()
    assert " TRANSFORM_COLUMN_TYPE_MISMATCH at /tables/0/sql: " in got
    assert got == shown.strip()
