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
