"""RFC 6901 JSON Pointers (DISC-07, DISC-08, D-14)."""

import pytest
from hypothesis import given, strategies as st

from collection.recipe.pointer import MISSING, PointerMissing, escape_token, parse_pointer, resolve, resolve_or

# The example document of RFC 6901 §5.
DOC = {"foo": ["bar", "baz"], "": 0, "a/b": 1, "c%d": 2, "e^f": 3, "g|h": 4, "i\\j": 5,
       'k"l': 6, " ": 7, "m~n": 8}


@pytest.mark.parametrize("pointer, expected", [
    ("", DOC), ("/foo", ["bar", "baz"]), ("/foo/0", "bar"), ("/", 0), ("/a~1b", 1),
    ("/c%d", 2), ("/e^f", 3), ("/g|h", 4), ("/i\\j", 5), ('/k"l', 6), ("/ ", 7), ("/m~0n", 8),
])
def test_rfc6901_examples(pointer, expected):
    assert resolve(DOC, parse_pointer(pointer)) == expected


@pytest.mark.parametrize("text", ["foo", "#/foo", "/a~", "/a~2", "~0"])
def test_invalid_syntax_is_refused(text):
    with pytest.raises(ValueError):
        parse_pointer(text)


def test_escape_order_keeps_literal_tilde_one():
    assert parse_pointer("/~01") == ("~1",)


@pytest.mark.parametrize("pointer", ["/foo/2", "/foo/-", "/foo/01", "/foo/+1", "/nope", "/foo/0/x", "/ /x"])
def test_absent_values_raise_pointer_missing(pointer):
    with pytest.raises(PointerMissing):
        resolve(DOC, parse_pointer(pointer))
    assert resolve_or(DOC, parse_pointer(pointer)) is MISSING


def test_null_is_a_value_not_absence():
    assert resolve_or({"a": None}, parse_pointer("/a")) is None


@given(st.lists(st.text(max_size=5), max_size=4))
def test_escaped_tokens_round_trip(tokens):
    text = "".join("/" + escape_token(t) for t in tokens)
    assert parse_pointer(text) == tuple(tokens)
