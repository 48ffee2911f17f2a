"""The compiled schema check agrees with jsonschema (the authority) on every document.

Registration skips jsonschema's error report when the compiled check says "valid", so a
document the check wrongly passes would register unchecked: the two must never disagree.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings, strategies as st

from collection.readers.registry import FAMILIES, options_schema
from collection.recipe.resources import load_schema
from collection.recipe.schemacheck import UnsupportedSchema, compile_check
from referencing import Registry, Resource

EXAMPLE = json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "recipes" / "council_decisions.json").read_text())
SOURCE = load_schema("source.schema.json")
SOURCE_CHECK = compile_check(SOURCE)
SOURCE_VALIDATOR = jsonschema.Draft202012Validator(SOURCE)

LEAVES = st.none() | st.booleans() | st.integers(-5, 70000) | st.sampled_from(
    [1.0, 1.5, "", "none", "json_api", "html_index", "sitemap", "explicit", "page_parameter", "cursor", "interval",
     "revision_hint", "never", "next_selector", "https://www.example.com", "https://www.example.com/x", "/id", "~",
     "a[rel=next]", "sha256:" + "0" * 64, "public.https.collection@2.0.0"])
VALUES = st.recursive(LEAVES, lambda c: st.lists(c, max_size=3) | st.dictionaries(
    st.sampled_from(["kind", "url", "pointer", "parameter", "first", "step", "seconds", "selector", "x"]), c, max_size=4),
    max_leaves=12)
PATHS = [(), ("connector",), ("limits",), ("collection",), ("collection", "discovery"),
         ("collection", "discovery", "pagination"), ("collection", "discovery", "records"),
         ("collection", "pages"), ("collection", "pages", "revisit"), ("collection", "pages", "allowed_origins"),
         ("rights_claim",), ("locator",)]
KEYS = ["kind", "url", "max_requests", "pagination", "records", "link", "revision", "members", "seconds",
        "parameter", "first", "step", "pointer", "selector", "allowed_origins", "retries", "concurrency",
        "max_pages", "display_locator", "claim_evidence_digest", "adapter_id", "origin", "parameters",
        "max_rows", "window", "closed", "unknown", 0]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(PATHS), st.sampled_from(KEYS), VALUES, st.booleans())
def test_compiled_check_agrees_with_jsonschema_on_mutated_recipes(path, key, value, delete):
    doc = copy.deepcopy(EXAMPLE)
    target = doc
    for step in path:
        target = target[step]
    if isinstance(target, list):
        if isinstance(key, int):
            target.append(value)
    elif delete and key in target:
        del target[key]
    elif isinstance(key, str):
        target[key] = value
    assert SOURCE_CHECK(doc) == SOURCE_VALIDATOR.is_valid(doc)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(FAMILIES)), VALUES)
def test_compiled_check_agrees_with_jsonschema_on_reader_options(family, value):
    schema = options_schema(family)
    assert compile_check(schema)(value) == jsonschema.Draft202012Validator(schema).is_valid(value)


def test_dataset_check_follows_the_reference_to_the_source_schema():
    dataset = load_schema("dataset.schema.json")
    check = compile_check(dataset, {SOURCE["$id"]: SOURCE})
    registry = Registry().with_resource(SOURCE["$id"], Resource.from_contents(SOURCE))
    validator = jsonschema.Draft202012Validator(dataset, registry=registry)
    good = {"name": "d", "sources": [EXAMPLE]}
    bad = {"name": "d", "sources": [dict(EXAMPLE, name="Bad Name")]}
    assert check(good) and validator.is_valid(good)
    assert not check(bad) and not validator.is_valid(bad)


@pytest.mark.parametrize("schema", [{"patternProperties": {"a": {}}}, {"dependentRequired": {}}, {"type": "decimal"}])
def test_unknown_keywords_refuse_to_compile(schema):
    with pytest.raises(UnsupportedSchema):
        compile_check(schema)


@pytest.mark.parametrize("schema, value, valid", [
    ({"type": "integer"}, True, False),         # a boolean is not an integer in JSON Schema
    ({"type": "integer"}, 1.0, True),           # but 1.0 is (the strict-JSON layer refuses it separately)
    ({"enum": [1]}, True, False),
    ({"const": 0}, False, False),
    ({"uniqueItems": True}, [1, True], True),
    ({"uniqueItems": True}, [1, 1.0], False),
    ({"minimum": 3}, "2", True),                # bounds apply only to numbers
])
def test_json_schema_equality_and_type_rules(schema, value, valid):
    assert compile_check(schema)(value) is valid
    assert jsonschema.Draft202012Validator(schema).is_valid(value) is valid
