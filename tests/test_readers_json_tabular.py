"""json.tabular 1.0.0: records and columns by RFC 6901 pointers (READ-05, READ-10, D-50)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings, strategies as st

from collection.readers.base import Decoded, DecodeFailure, Pin, decode

# A JSON:API-style record page, as a planning portal serves one application.
RECORD = {
    "data": {
        "type": "application", "id": "24/00117/FUL",
        "attributes": {"address": "12 Mill Lane", "decision": "Granted", "received": "2024-01-09",
                       "fee": 578, "conditions": ["C1", "C2"], "appeal": None, "listed": False,
                       "officer": {"name": "R. Patel"}, "a/b": "slash", "m~n": "tilde", "note": "  spaced  "},
    },
    "links": {"self": "https://planning.example.gov/api/applications/24%2F00117%2FFUL"},
}
LISTING = {"results": [{"ref": "A1", "n": 1.5}, {"ref": "A2"}, {"ref": 3}]}


def pin(columns: list, records: str | None = None) -> Pin:
    options: dict = {"columns": [{"name": f"c{i}", "pointer": p} for i, p in enumerate(columns)]}
    if records is not None:
        options["records"] = {"pointer": records}
    return Pin("json.tabular", "1.0.0", options)


CASES = [
    # (document, records pointer, column pointers, expected rows or failure code)
    (RECORD, "/data", ["/id", "/attributes/address", "/attributes/fee", "/attributes/conditions",
                       "/attributes/appeal", "/attributes/listed", "/attributes/officer", "/attributes/missing"],
     (("24/00117/FUL", "12 Mill Lane", "578", '["C1","C2"]', "null", "false", '{"name":"R. Patel"}', ""),)),
    (RECORD, "/data/attributes", ["/a~1b", "/m~0n", "/note", "/conditions/1", "/conditions/2", "/conditions/-"],
     (("slash", "tilde", "  spaced  ", "C2", "", ""),)),  # strings exactly as they are
    (RECORD, None, ["/data/id", "/links/self"],
     (("24/00117/FUL", "https://planning.example.gov/api/applications/24%2F00117%2FFUL"),)),
    (RECORD, "", [""], ((json.dumps(RECORD, sort_keys=True, separators=(",", ":")),),)),
    (LISTING, "/results", ["/ref", "/n"], (("A1", "1.5"), ("A2", ""), ("3", ""))),
    ({"results": []}, "/results", ["/ref"], ()),  # D-50
    ({"results": "x"}, "/results", ["/ref"], "decode_error"),
    ({"other": []}, "/results", ["/ref"], "decode_error"),
    ([{"id": 1}, "scalar", [2]], "", ["/id", "/0"], (("1", ""), ("", ""), ("", "2"))),
]


@pytest.mark.parametrize("document,records,columns,expected", CASES)
def test_records_and_columns(document, records, columns, expected) -> None:
    result = decode(pin(columns, records), json.dumps(document).encode(), "application/vnd.api+json", "")
    if isinstance(expected, str):
        assert isinstance(result, DecodeFailure) and result.code == expected
    else:
        assert isinstance(result, Decoded) and result.rows == expected


BODIES = [
    (b'{"id": NaN}', "decode_error"),
    (b'{"id": Infinity}', "decode_error"),
    (b'{"id": 1', "decode_error"),
    (b"", "decode_error"),
    (b"[" * 100_000 + b"]" * 100_000, "decode_error"),
    (b'\xef\xbb\xbf{"id": "bom"}', (("bom",),)),
    ('{"id": "caf\u00e9"}'.encode("utf-16"), (("caf\u00e9",),)),
    (b'{"id": "\\ud800x"}', (("\ufffdx",),)),
    (b'{"id": 12345678901234567890}', (("12345678901234567890",),)),
]


@pytest.mark.parametrize("body,expected", BODIES)
def test_bodies(body: bytes, expected) -> None:
    result = decode(pin(["/id"]), body, "application/json", "")
    if isinstance(expected, str):
        assert isinstance(result, DecodeFailure) and result.code == expected
    else:
        assert result.rows == expected


JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5)
                           | st.floats(allow_nan=False, allow_infinity=False),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
                           max_leaves=10)


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES, st.sampled_from(["", "/a", "/0", "/a/b"]))
def test_any_json_gives_rows_or_decode_error_and_the_same_twice(document, records: str) -> None:
    body = json.dumps(document).encode()
    first = decode(pin(["/a", "/b", ""], records), body, "application/json", "")
    assert first == decode(pin(["/a", "/b", ""], records), body, "application/json", "")
    if isinstance(first, DecodeFailure):
        assert first.code == "decode_error"
    else:
        assert all(len(row) == 3 for row in first.rows)
