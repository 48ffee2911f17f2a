"""The Reader interface (pure): a pin and one page's bytes in, rows or a page failure out.

READ-05: every detail page is decoded with the single pinned Reader. READ-09, READ-10 and
D-12: a page whose columns are not the pin's, or whose decode raises, is a *page* failure
value (`column_mismatch`, `decode_error`), never an exception out of the Reader, so the run
carries on. D-37: a page of a media type the family does not take is `media_type_refused`.
D-50: zero rows is a success.

The declared columns come from `registry.FAMILIES[...].columns` only, so registration and
decoding can never disagree about them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from collection.readers import registry
from collection.readers.text import PageTooDeep, media_type

Rows = tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Pin:
    """A Reader pin (READ-01): family, version and the parsed decode_options."""

    family_id: str
    version: str
    options: Mapping[str, Any]

    @classmethod
    def from_parameters(cls, family_id: str, version: str, decode_options: str) -> "Pin":
        """From the three connector parameters; decode_options is its canonical-JSON text (READ-02)."""
        return cls(family_id, version, json.loads(decode_options))


@dataclass(frozen=True)
class Decoded:
    columns: tuple[str, ...]
    rows: Rows


@dataclass(frozen=True)
class DecodeFailure:
    code: str        # decode_error, column_mismatch, media_type_refused, story_not_found, page_too_deep (codes.py)
    message: str


class ReaderFailure(Exception):
    """Raised inside a family module to end the decode with a specific failure code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# family_id -> read(options, body, content_type, url) -> Rows; filled by the family modules.
_READERS: dict[str, Callable[[Mapping[str, Any], bytes, str, str], Rows]] = {}


def reader(family_id: str):
    def register(function):
        _READERS[family_id] = function
        return function
    return register


def columns(pin: Pin) -> tuple[str, ...]:
    """The pin's declared columns (D-12: what every decoded page is compared with)."""
    return registry.FAMILIES[pin.family_id].columns(dict(pin.options))


def accepts(family_id: str, content_type: str | None) -> bool:
    """D-37: lowercased type/subtype, parameters ignored; a missing Content-Type is refused."""
    essence = media_type(content_type)
    return essence is not None and essence in registry.FAMILIES[family_id].media_types


def decode(pin: Pin, body: bytes, content_type: str | None, url: str) -> Decoded | DecodeFailure:
    """Rows of one page in the pin's column order, or the page's failure. Never raises."""
    _load_families()
    try:
        family = registry.FAMILIES.get(pin.family_id)
        if family is None or pin.version not in family.versions:
            return DecodeFailure("decode_error",
                                 f"no Reader {pin.family_id}@{pin.version}")
        if not accepts(pin.family_id, content_type):
            return DecodeFailure("media_type_refused",
                                 f"{pin.family_id} does not take {media_type(content_type) or 'a page without Content-Type'}")
        declared = columns(pin)
        rows = _READERS[pin.family_id](pin.options, bytes(body), content_type or "", url)
    except ReaderFailure as failure:
        return DecodeFailure(failure.code, failure.message)
    except PageTooDeep as error:
        return DecodeFailure("page_too_deep", str(error))
    except RecursionError:
        return DecodeFailure("decode_error", "the page nests too deeply to decode")
    except ValueError as error:  # the Readers' own "what is wrong", in words (the page is empty, not JSON, ...)
        return DecodeFailure("decode_error", str(error) or "the page could not be decoded")
    except Exception as error:  # READ-10: a decode that raises fails the page, never the run
        return DecodeFailure("decode_error", f"the Reader stopped on something in this page it does not handle ({error})")
    for row in rows:
        if len(row) != len(declared) or not all(isinstance(cell, str) for cell in row):
            return DecodeFailure("column_mismatch",
                                 f"a row has {len(row)} cells for the pin's {len(declared)} columns")
    return Decoded(declared, tuple(tuple(row) for row in rows))


def _load_families() -> None:
    if len(_READERS) < len(registry.FAMILIES):
        # Imported here, not at module top, because each family module registers itself
        # through `reader` defined above.
        from collection.readers import html_tabular, json_tabular, web_extract, xml_tabular  # noqa: F401
