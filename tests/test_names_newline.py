"""No name pattern lets a line break through (issue 24 point 8; REG-17, D-40).

Python's `$` matches before a final "\\n" as well as at the end, and jsonschema applies a
`pattern` with `re.search`, so `^[a-z][a-z0-9_]{0,62}$` accepted "decisions\\n". ECMA-262's `$`
(the dialect JSON Schema names) matches only at the end. Every pattern in schemas/ now ends
`$(?!\\n)`: the lookahead is in JSON Schema's recommended regex subset, means nothing in
ECMA-262 (nothing follows the end) and, in Python, refuses the position before a final line
break, so both dialects read each pattern alike (docs/recipes.md, "Decided:").

The differential check runs every pattern of every schema through the compiled fast path
(collection/recipe/schemacheck.py), jsonschema, and, where node is installed, ECMA-262 itself
(with and without the `u` flag), on valid values and their line-break forms.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings, strategies as st

from collection.recipe.registration import register_bytes
from collection.recipe.schemacheck import compile_check
from collection.recording.format import FixtureError, parse_fixture

ROOT = Path(__file__).resolve().parent.parent
NODE = shutil.which("node")


def _patterns() -> dict[str, list[str]]:
    """Every `pattern` value in schemas/, with where it sits (file and JSON pointer)."""
    found: dict[str, list[str]] = {}

    def walk(node, where):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "pattern" and isinstance(value, str):
                    found.setdefault(value, []).append(where)
                if key == "patternProperties":
                    for name in value:
                        found.setdefault(name, []).append(f"{where}/patternProperties")
                walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for index, item in enumerate(node):
                walk(item, f"{where}/{index}")

    for path in sorted((ROOT / "schemas").glob("*.json")):
        walk(json.loads(path.read_text()), path.name + "#")
    return found


PATTERNS = _patterns()

# One valid value per pattern. A pattern added to a schema fails the coverage test below until
# it is given one here, so no pattern escapes the differential check.
VALID = {
    r"^[a-z][a-z0-9_]{0,62}$(?!\n)": "council_decisions",
    r"^[a-z][a-z0-9_]*$(?!\n)": "public_records",
    r"^https://[^\r\n]*$(?!\n)": "https://www.example.com/decisions?page=1",
    r"^sha256:[0-9a-f]{64}$(?!\n)": "sha256:" + "ab" * 32,
    r"^failed-bodies/[0-9a-f]{24}[.]body$(?!\n)": "failed-bodies/" + "0a" * 12 + ".body",
    r"^[a-z][a-z0-9_.-]*@[0-9]+\.[0-9]+\.[0-9]+$(?!\n)": "public.https.collection@2.0.0",
    r"^(/([^~]|~[01])*)*$(?!\n)": "/data/items~1x",
    r"^https://[a-z0-9.-]+$(?!\n)": "https://www.example.com",
    r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$(?!\n)": "json-api-cursor-1",
    r"^(REG|DISC|PAG|URL|FETCH|READ|PROV|MERGE|COV|REF|OPS|D)-[0-9]{2}$(?!\n)": "FETCH-14",
    r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$(?!\n)": "Content-Type",
    r"^[^\r\n\u0000]*$(?!\n)": "text/html; charset=utf-8",
    r"^(?!/)(?!([^/]*/)*\.\.(/|$(?!\n)))[^\r\n\u2028\u2029]*$(?!\n)": "bodies/page 1.html",
    r"^[0-9.]+:[0-9]+$(?!\n)": "127.0.0.1:8443",
    r"^[A-Za-z_][A-Za-z0-9_]*$(?!\n)": "title_2",
    r"^[A-Za-z_][A-Za-z0-9_.-]*$(?!\n)": "dc.terms-1",
    r"^[0-9a-f]{64}$(?!\n)": "0f" * 32,
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$(?!\n)": "2026-12-01T20:46:28Z",
    r"^[0-9]{6,}$(?!\n)": "000042",
    r"^[a-z][a-z0-9_]{0,62}\.parquet$(?!\n)": "decisions.parquet",
}

# A JSON Pointer token may hold any character, a line break included (RFC 6901): a member named
# "a\n" is addressable, so the pointer pattern rightly accepts the embedded forms; all engines
# must still agree on it.
NEWLINE_IS_DATA = {r"^(/([^~]|~[01])*)*$(?!\n)"}


def _newline_forms(value: str) -> list[str]:
    middle = max(1, len(value) // 2)
    return [value + "\n", value + "\r\n", value + "\r", value + "\n\n", value[:middle] + "\n" + value[middle:],
            "\n" + value, value + "\u2028"]


def _fast(pattern: str):
    return compile_check({"type": "string", "pattern": pattern})


def _jsonschema(pattern: str):
    return jsonschema.Draft202012Validator({"type": "string", "pattern": pattern}).is_valid


_NODE_SCRIPT = r"""
let input = ''; process.stdin.on('data', d => input += d); process.stdin.on('end', () => {
  const out = JSON.parse(input).map(([p, v]) => [new RegExp(p, 'u').test(v), new RegExp(p).test(v)]);
  process.stdout.write(JSON.stringify(out));
});
"""


def _ecma(pairs: list[tuple[str, str]]) -> list[tuple[bool, bool]]:
    """ECMA-262's answer for each (pattern, value), with the `u` flag (as Ajv compiles) and without."""
    done = subprocess.run([NODE, "-e", _NODE_SCRIPT], input=json.dumps(pairs), capture_output=True, text=True,
                          timeout=120, check=True)
    return [tuple(answer) for answer in json.loads(done.stdout)]


def test_every_schema_pattern_has_a_valid_value_in_the_table():
    """issue 24 point 8: no pattern in schemas/ escapes the differential check."""
    assert set(PATTERNS) <= set(VALID), sorted(set(PATTERNS) - set(VALID))
    assert set(VALID) <= set(PATTERNS), sorted(set(VALID) - set(PATTERNS))


def test_every_end_anchor_refuses_a_final_line_break():
    """Decided (issue 24 point 8): every `$` in a schema pattern is written `$(?!\\n)`, so a pattern
    added later cannot bring back the Python-only reading of `$`."""
    for pattern, where in PATTERNS.items():
        anchors = [i for i, c in enumerate(pattern) if c == "$" and not _inside_class(pattern, i)]
        assert anchors, (pattern, where)
        for i in anchors:
            assert pattern[i:i + 7] == "$(?!\\n)", (pattern, where)


def _inside_class(pattern: str, index: int) -> bool:
    inside, escaped = False, False
    for i, c in enumerate(pattern[:index]):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == "[" and not inside:
            inside = True
        elif c == "]" and inside:
            inside = False
    return inside


@pytest.mark.parametrize("pattern", sorted(VALID))
def test_fast_path_and_jsonschema_agree_and_refuse_line_breaks(pattern):
    """issue 24 point 8: the valid value passes; every line-break form fails, in the compiled
    fast path and in jsonschema alike (the pointer pattern excepted: there a line break is data)."""
    fast, slow = _fast(pattern), _jsonschema(pattern)
    valid = VALID[pattern]
    assert fast(valid) and slow(valid)
    for form in _newline_forms(valid):
        assert fast(form) == slow(form), (pattern, form)
        if pattern not in NEWLINE_IS_DATA and form != valid + "\u2028":
            assert not fast(form), (pattern, form)
    assert not fast(valid + "\n") or pattern in NEWLINE_IS_DATA


ALPHABET = st.sampled_from(list("az_09-./:@~TZ") + ["\n", "\r", "\u2028", "\u0000", " ", "é", "[", "$"])


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(VALID)), st.lists(ALPHABET, max_size=12).map("".join), st.booleans())
def test_fast_path_and_jsonschema_agree_on_any_text(pattern, text, prefixed):
    """issue 24 point 8: the fast path never disagrees with jsonschema, whatever the text."""
    value = VALID[pattern] + text if prefixed else text
    assert _fast(pattern)(value) == _jsonschema(pattern)(value)
    if "\n" in value and pattern not in NEWLINE_IS_DATA:
        assert not _fast(pattern)(value)


def _corpus(pattern: str) -> list[str]:
    rng = random.Random(pattern)
    valid = VALID[pattern]
    pieces = list("az_09-./:@~TZ\\") + ["\n", "\r", "\r\n", "\u2028", "\u2029", "\u0000", " ", "é", "😀"]
    values = [valid, "", *_newline_forms(valid)]
    for _ in range(60):
        cut = rng.randrange(len(valid) + 1)
        values.append(valid[:cut] + "".join(rng.choice(pieces) for _ in range(rng.randrange(4))) + valid[cut:])
    return values


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_python_and_ecma262_read_every_pattern_alike():
    """issue 24 point 8: patterns stay ECMA-262 for other implementers, and mean there what they
    mean in Python: the fast path's answer equals node's, with and without the `u` flag."""
    pairs = [(pattern, value) for pattern in sorted(VALID) for value in _corpus(pattern)]
    answers = _ecma(pairs)
    disagreements = [(p, v, a) for (p, v), a in zip(pairs, answers) if a != (_fast(p)(v),) * 2]
    assert not disagreements, disagreements[:5]


# --- through registration and the fixture reader -----------------------------------------------------

EXAMPLE = json.loads((ROOT / "fixtures" / "recipes" / "council_decisions.json").read_text())


def _codes(document) -> list[tuple[str, str]]:
    return [(r.code, r.pointer) for r in register_bytes(json.dumps(document).encode()).refusals]


@pytest.mark.parametrize("suffix", ["\n", "\r\n"])
def test_a_source_name_with_a_line_break_is_refused(suffix):
    """issue 24 point 8, REG-17: `name` is usable bare in SQL; "decisions\\n" is not a name."""
    assert _codes(dict(EXAMPLE, name=EXAMPLE["name"] + suffix)) == [("SCHEMA_FORMAT", "/name")]
    assert _codes(EXAMPLE) == []


def test_a_dataset_name_with_a_trailing_newline_is_refused():
    """issue 24 point 8: the dataset envelope's name pattern, through the dataset fast path."""
    good = {"name": "council", "sources": [EXAMPLE]}
    assert _codes(good) == []
    assert ("SCHEMA_FORMAT", "/name") in _codes(dict(good, name="council\n"))


def test_a_discovery_url_with_a_line_break_is_refused_once():
    """issue 24 point 8, REG-35: a listing address is one line; the schema's refusal stands alone."""
    document = json.loads(json.dumps(EXAMPLE))
    document["collection"]["discovery"]["url"] += "\n"
    assert _codes(document) == [("SCHEMA_FORMAT", "/collection/discovery/url")]


def test_an_allowed_origin_with_a_trailing_newline_is_refused():
    """issue 24 point 8, REG-21: an origin is compared exactly; "https://host\\n" is not one."""
    document = json.loads(json.dumps(EXAMPLE))
    document["collection"]["pages"]["allowed_origins"][0] += "\n"
    assert ("ORIGIN_NOT_CANONICAL", "/collection/pages/allowed_origins/0") in _codes(document)


@pytest.mark.parametrize("member", [("name",), ("header",), ("value",)])
def test_a_fixture_header_with_a_trailing_newline_is_refused(member):
    """issue 24 point 8: a recorded header name or value ending in a line break would be a
    header-splitting value on replay; the fixture schema refuses it."""
    header = ["Content-Type", "text/html"]
    if member == ("name",):
        header[0] += "\n"
    else:
        header[1] += "\n"
    document = [{"request": {"url": "https://www.example.com/p"},
                 "response": {"status": 200, "headers": [header], "body": {"text": "x"}}}]
    parse_fixture(json.dumps([{**document[0], "response": {"status": 200, "headers": [["Content-Type", "text/html"]],
                                                           "body": {"text": "x"}}}]))
    with pytest.raises(FixtureError):
        parse_fixture(json.dumps(document))
