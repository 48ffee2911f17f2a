"""Messages that say the fix (issue 19): each refusal names its cause first and prints what to
write instead; one refusal per root cause; every clause or decision ID a message cites can be
looked up with `collection explain ID`. These tests assert the text of the fix, as the issue asks.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from collection import clauses, codes
from collection.cli import cli
from collection.recipe.registration import register_document

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = json.loads((ROOT / "fixtures" / "recipes" / "council_decisions.json").read_text())


def refusals(edit):
    doc = copy.deepcopy(EXAMPLE)
    edit(doc)
    return [(r.code, r.pointer, r.message) for r in register_document(doc).refusals]


def test_decode_options_written_as_an_object_prints_the_corrected_parameter():
    """READ-02: the options are a JSON string; the fix is that string, canonical, ready to paste."""
    def edit(doc):
        doc["connector"]["parameters"][2]["value"] = {"selectors": {"title": "h1.titré"}, "metadata": ["author"]}
    (refusal,) = refusals(edit)
    code, pointer, message = refusal
    assert (code, pointer) == ("SCHEMA_TYPE", "/connector/parameters/2/value")
    assert "lacks" not in message
    assert message.startswith("write the options as a JSON string")
    pasted = message.split(": ", 1)[1]
    assert pasted == ('{"name": "reader.decode_options", "value": '
                      '"{\\"metadata\\":[\\"author\\"],\\"selectors\\":{\\"title\\":\\"h1.titré\\"}}"}')
    # pasting it back registers
    doc = copy.deepcopy(EXAMPLE)
    doc["connector"]["parameters"][2] = json.loads(pasted)
    assert register_document(doc).registrable


@pytest.mark.parametrize("written, cause, corrected", [
    ("https://WWW.Example.com/", "it ends with a slash; the host is not lowercase", '"https://www.example.com"'),
    ("https://www.example.com:443", "it names the default port :443", '"https://www.example.com"'),
    ("http://www.example.com", "the scheme is http, and collections fetch only https", '"https://www.example.com"'),
    ("https://www.example.com.", "the host ends with a dot", '"https://www.example.com"'),
])
def test_non_canonical_origin_names_the_cause_first_and_the_corrected_origin(written, cause, corrected):
    """REG-21, D-40; one refusal: the discovery origin it meant is not refused again (REG-22)."""
    (refusal,) = refusals(lambda d: d["collection"]["pages"].update(allowed_origins=[written]))
    code, pointer, message = refusal
    assert (code, pointer) == ("ORIGIN_NOT_CANONICAL", "/collection/pages/allowed_origins/0")
    assert message == f"{json.dumps(written)} is not a canonical https origin: {cause}; write {corrected}"


def test_an_origin_on_another_port_has_no_correction():
    found = {code: message for code, _, message in refusals(
        lambda d: d["collection"]["pages"].update(allowed_origins=["https://www.example.com:8443"]))}
    # two causes: the entry is not an origin, and no entry allows the discovery origin
    assert set(found) == {"ORIGIN_NOT_CANONICAL", "DISCOVERY_ORIGIN_NOT_ALLOWED"}
    message = found["ORIGIN_NOT_CANONICAL"]
    assert "port 8443" in message and "no origin this source may fetch" in message


def test_a_fractional_number_is_one_refusal_with_the_range():
    """REG-26, REG-27, D-41: `0.5` is one mistake, not three."""
    (refusal,) = refusals(lambda d: d["collection"]["pages"].update(min_interval_seconds=0.5))
    code, pointer, message = refusal
    assert (code, pointer) == ("JSON_FRACTIONAL_NUMBER", "/collection/pages/min_interval_seconds")
    assert message.endswith("write an integer within 1 ≤ collection.pages.min_interval_seconds ≤ 3600 (REG-26)")


@pytest.mark.parametrize("written, meant", [
    ("meta.next_cursor", "/meta/next_cursor"),       # as dlt writes it
    ("$.meta.next_cursor", "/meta/next_cursor"),     # JSONPath
    ("data[0].id", "/data/0/id"),
    ("meta/next_cursor", "/meta/next_cursor"),
])
def test_a_dotted_pointer_suggests_the_rfc6901_pointer(written, meant):
    def edit(doc):
        doc["collection"]["discovery"]["pagination"] = {"kind": "cursor", "parameter": "cursor", "pointer": written}
    (refusal,) = refusals(edit)
    code, pointer, message = refusal
    assert (code, pointer) == ("POINTER_SYNTAX", "/collection/discovery/pagination/pointer")
    assert message.endswith(f'did you mean "{meant}"?')


def test_a_dotted_pointer_inside_decode_options_suggests_too():
    options = {"columns": [{"name": "title", "pointer": "attributes.title"}], "records": {"pointer": "/data"}}

    def edit(doc):
        doc["connector"]["parameters"][0]["value"] = "json.tabular"
        doc["connector"]["parameters"][1]["value"] = "1.0.0"
        doc["connector"]["parameters"][2]["value"] = json.dumps(options, sort_keys=True, separators=(",", ":"))
    (code, _, message), = refusals(edit)
    assert code == "POINTER_SYNTAX" and message.endswith('did you mean "/attributes/title"?')


@pytest.mark.parametrize("column, corrected", [
    ({"name": "item_id", "path": "@id"}, '{"attribute":"id","name":"item_id"}'),
    ({"name": "permalink", "path": "guid/@isPermaLink"}, '{"attribute":"isPermaLink","name":"permalink","path":"guid"}'),
])
def test_an_xml_attribute_path_points_at_the_attribute_member(column, corrected):
    options = {"columns": [column], "records": {"path": "channel/item"}}

    def edit(doc):
        doc["connector"]["parameters"][0]["value"] = "xml.tabular"
        doc["connector"]["parameters"][1]["value"] = "1.0.0"
        doc["connector"]["parameters"][2]["value"] = json.dumps(options, sort_keys=True, separators=(",", ":"))
    (code, _, message), = refusals(edit)
    assert code == "READER_OPTIONS_INVALID"
    assert f"write the column as {corrected}, that is the parameter " in message
    assert _pasted_member_registers(edit, message.split("that is the parameter ", 1)[1])


def _pasted_member_registers(edit, pasted: str) -> bool:
    """Paste the printed parameter over the one written: it must be JSON and register."""
    doc = copy.deepcopy(EXAMPLE)
    edit(doc)
    member = json.loads(pasted)
    assert member["name"] == "reader.decode_options"
    doc["connector"]["parameters"][2] = member
    return register_document(doc).registrable


@pytest.mark.parametrize("selector, registers", [
    ('h1[title="quoted"]', True),               # quotes
    ("h1,\nh2.subtitle", True),                 # a newline is whitespace between selectors
    ("h1.titré, h1.标题", True),                 # non-ASCII, kept as written (canonical JSON keeps it)
    ('h1[data-path="a\\b"]', False),            # a backslash: JSON either way, refused later (SEL-*)
])
def test_non_canonical_options_print_the_parameter_ready_to_paste(selector, registers):
    """Issue 26 point 5, READ-02: the fix for non-canonical decode_options is the whole parameter as
    JSON; pasted back it parses to the same options, and registers where the selector is valid."""
    options = {"records": {"columns": [{"name": "title", "selector": selector}], "selector": "html"}}

    def edit(doc):
        doc["connector"]["parameters"][0]["value"] = "html.tabular"
        doc["connector"]["parameters"][1]["value"] = "1.0.0"
        doc["connector"]["parameters"][2]["value"] = json.dumps(options, indent=2, ensure_ascii=False)
    (code, _, message), = refusals(edit)
    assert code == "READER_OPTIONS_NOT_CANONICAL"
    pasted = message.split("write the parameter as ", 1)[1]
    assert json.loads(json.loads(pasted)["value"]) == options
    assert _pasted_member_registers(edit, pasted) is registers
    # and as `collection validate` prints it in text and in JSON
    with_text = CliRunner().invoke(cli, ["validate", "-"], input=json.dumps(_edited(edit), ensure_ascii=False))
    assert with_text.exit_code == 1 and pasted in with_text.output


def _edited(edit):
    doc = copy.deepcopy(EXAMPLE)
    edit(doc)
    return doc


def test_missing_max_requests_prints_the_smallest_value_that_fits():
    """REG-11, REG-33: 40 listing requests + 500 fetches."""
    (refusal,) = refusals(lambda d: d["limits"].pop("max_requests"))
    code, pointer, message = refusal
    assert (code, pointer) == ("MAX_REQUESTS_REQUIRED", "/limits/max_requests")
    assert 'the smallest value that fits is 540' in message and 'add "max_requests": 540 to limits' in message
    doc = copy.deepcopy(EXAMPLE)
    doc["limits"]["max_requests"] = 540
    assert register_document(doc).registrable
    doc["limits"]["max_requests"] = 539
    assert not register_document(doc).registrable


def test_explain_prints_a_clause_or_decision_cited_in_a_message():
    result = CliRunner().invoke(cli, ["explain", "REG-33"])
    assert result.exit_code == 0 and "discovery.max_requests + pages.max_fetches_per_run" in result.stdout
    result = CliRunner().invoke(cli, ["explain", "d-21", "--json"])
    assert json.loads(result.stdout)["clause"] == "D-21"
    assert CliRunner().invoke(cli, ["explain", "REG-999"]).exit_code == 2


def test_every_id_a_message_or_code_cites_can_be_looked_up():
    """No message cites an ID a user cannot look up: the catalogue's clauses and every ID
    written in the registration rules and the probe resolve to a shipped clause text."""
    cited = {clause for entry in codes.CATALOGUE.values() for clause in entry.clauses}
    for module in ("recipe/registration.py", "run/probe.py", "run/loop.py", "discover/driver.py"):
        cited |= set(re.findall(r"\b(?:REG|DISC|PAG|URL|FETCH|READ|PROV|MERGE|COV|REF|OPS|D)-\d+\b",
                                (ROOT / "collection" / module).read_text()))
    missing = sorted(c for c in cited if clauses.lookup(c) is None)
    assert not missing, missing
