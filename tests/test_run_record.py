"""The run record validates against schemas/run-record.schema.json, refusals included."""

from __future__ import annotations

import json

import jsonschema
from loopback import Reply
from test_run_kit import HOST, JSON_PAGE, Publisher, recipe, run_cli, run_in_process

from collection.recipe.resources import load_schema
from collection.merge.states import COVERAGE_MEMBERS


def _validator():
    schema = load_schema("run-record.schema.json")
    return jsonschema.Draft202012Validator(schema)


def test_schema_lists_the_coverage_members_in_the_specification_order():
    schema = load_schema("run-record.schema.json")
    coverage = schema["$defs"]["coverage"]
    assert tuple(coverage["required"]) == COVERAGE_MEMBERS == tuple(coverage["properties"])


def test_records_of_real_runs_validate(loopback, tmp_path):
    validator = _validator()
    pub = Publisher(loopback, "json_api").publish("1", "2", "3")
    pub.pages["3"] = Reply(403, JSON_PAGE, b"{}")
    pub.install()
    data = recipe("json_api", revisit="revision_hint")
    first = run_in_process(loopback, data, tmp_path)
    pub.change("1", 2)
    pub.install()
    second = run_in_process(loopback, data, tmp_path)
    for record in (first, second):
        validator.validate(record)
    assert second["failures"]["pages"] == [{"page_id": "id-3", "failure_code": "http_status_403",
                                            "failure_class": "blocked"}]
    assert len(second["corrections"]) == 1


def test_refusal_output_validates(loopback, tmp_path):
    recipe_path = tmp_path / "recipe.json"
    recipe_path.write_bytes(recipe("sitemap"))
    plan = tmp_path / "plan.json"
    plan.write_text('{"schedule": "daily"}')
    done = run_cli("run", str(recipe_path), "--state", str(tmp_path / "s"), "--plan", str(plan), "--json",
                   "--resolve", loopback.resolve_flags(HOST)[0])
    assert done.returncode == 1
    _validator().validate(json.loads(done.stdout))
