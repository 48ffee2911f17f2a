"""`json.tabular` 1.0.0: rows from a JSON document by RFC 6901 pointers (pure).

The records pointer names an array (one row per element) or an object (one row). Each
column's pointer is resolved inside a record: a string is kept exactly as it is, any other
value (number, boolean, null, array, object) becomes its canonical JSON text, and a pointer
that names nothing gives "".
"""

from __future__ import annotations

import functools
import json
from typing import Any, Mapping

from collection.canonical import canonical_json, valid_text
from collection.recipe.pointer import MISSING, PointerMissing, parse_pointer, resolve, resolve_or
from collection.readers.base import ReaderFailure, Rows, reader
from collection.readers.text import decode_text

FAMILY_ID = "json.tabular"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


@reader(FAMILY_ID)
def read(options: Mapping[str, Any], body: bytes, content_type: str, url: str) -> Rows:
    text = decode_text(body, content_type, "json")
    try:
        document = json.loads(text, parse_constant=_refuse_constant)
    except ValueError as error:
        raise ReaderFailure("decode_error", f"the page is not JSON: {error}") from None
    records_tokens = _pointer(options.get("records", {}).get("pointer", ""))
    try:
        records = resolve(document, records_tokens)
    except PointerMissing:
        raise ReaderFailure("decode_error", "the records pointer names nothing in this page") from None
    if isinstance(records, dict):
        records = [records]
    elif not isinstance(records, list):
        raise ReaderFailure("decode_error", "the records pointer names neither an array nor an object")
    columns = [_pointer(column["pointer"]) for column in options["columns"]]
    return tuple(tuple(_cell(resolve_or(record, tokens)) for tokens in columns) for record in records)


# Pins repeat on every page of a run; parsing their pointers once is most of a small page's cost.
_pointer = functools.lru_cache(maxsize=1024)(parse_pointer)


def _cell(value: Any) -> str:
    if value is MISSING:
        return ""
    text = value if isinstance(value, str) else canonical_json(value)
    return valid_text(text)
