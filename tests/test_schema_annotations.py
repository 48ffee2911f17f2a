"""The schemas carry `title`, `description` and `examples` on every member an author writes, so
an editor mapping recipe files to them shows help and completions (issue 19); every example
is valid against its own member's schema, and a document may name the schema in `$schema`
(only that schema's `$id`)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
from referencing import Registry, Resource

from collection.recipe.pointer import escape_token
from collection.recipe.registration import register_document
from collection.recipe.resources import load_schema

ROOT = Path(__file__).resolve().parent.parent
AUTHORED = ["source.schema.json", "dataset.schema.json", "reader-html.tabular.options.schema.json",
            "reader-html.web_extract.options.schema.json", "reader-json.tabular.options.schema.json",
            "reader-xml.tabular.options.schema.json"]
EXAMPLE = json.loads((ROOT / "fixtures" / "recipes" / "council_decisions.json").read_text())


def members(schema, pointer=""):
    """(JSON pointer of the member's subschema, member name, subschema) for every member."""
    if not isinstance(schema, dict):
        return
    for name, sub in (schema.get("properties") or {}).items():
        here = f"{pointer}/properties/{escape_token(name)}"
        if isinstance(sub, dict):
            yield here, name, sub
        yield from members(sub, here)
    for key in ("items", "then", "else", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            yield from members(schema[key], f"{pointer}/{key}")
    for key in ("allOf", "anyOf", "oneOf"):
        for index, sub in enumerate(schema.get(key) or ()):
            yield from members(sub, f"{pointer}/{key}/{index}")
    for name, sub in (schema.get("$defs") or {}).items():
        yield from members(sub, f"{pointer}/$defs/{name}")


@pytest.mark.parametrize("name", AUTHORED)
def test_every_member_has_title_description_and_valid_examples(name):
    schema = load_schema(name)
    resources = [(load_schema(n)["$id"], Resource.from_contents(load_schema(n))) for n in AUTHORED]
    registry = Registry().with_resources(resources)
    found = list(members(schema))
    assert found
    for pointer, member, sub in found:
        for keyword in ("title", "description", "examples"):
            assert sub.get(keyword), f"{name}{pointer} ({member}) lacks {keyword}"
        if sub.get("x-code") == "INTERVAL_TOO_SHORT" or member in ("window", "closed"):
            continue   # members whose examples show what is refused on a collection
        validator = jsonschema.Draft202012Validator({"$ref": f"{schema['$id']}#{pointer}"}, registry=registry)
        for example in sub["examples"]:
            errors = [e.message for e in validator.iter_errors(example)]
            assert not errors, f"{name}{pointer} example {example!r}: {errors}"


def test_schema_member_names_only_our_schema():
    """$schema is accepted only as the schema's own $id (a typo would otherwise pass silently)."""
    source_id = load_schema("source.schema.json")["$id"]
    good = {"$schema": source_id, **copy.deepcopy(EXAMPLE)}
    assert register_document(good).registrable
    for other in ("https://json-schema.org/draft/2020-12/schema", load_schema("dataset.schema.json")["$id"]):
        refused = register_document({**good, "$schema": other})
        assert [r.code for r in refused.refusals] == ["SCHEMA_ENUM"] and refused.refusals[0].pointer == "/$schema"
    dataset = {"$schema": load_schema("dataset.schema.json")["$id"], "name": "d", "sources": [copy.deepcopy(EXAMPLE)]}
    assert register_document(dataset).registrable
