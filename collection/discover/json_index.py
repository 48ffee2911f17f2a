"""`json_api` listings (DISC-07 to DISC-11, PAG-11): JSON in, records out (pure)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from collection.canonical import valid_text
from collection.discover.common import (
    DiscoveryShapeError,
    ListingEntry,
    ListingUnreadable,
    ParsedListing,
    scalar_text,
)
from collection.recipe.pointer import MISSING, parse_pointer, resolve_or


@dataclass(frozen=True)
class JsonListingSpec:
    records: str                 # records.pointer; "" is the whole body (DISC-08)
    link: str                    # link.pointer, against each record (DISC-09)
    identity: str | None = None  # identity.pointer (DISC-10)
    revision: str | None = None  # revision.pointer (DISC-11)
    cursor: str | None = None    # pagination.pointer of the cursor grammar, against the body


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def load_json(body: bytes) -> Any:
    """Parse a listing body; ListingUnreadable for anything that is not JSON text."""
    try:
        # json.loads detects UTF-8/16/32 from the bytes (RFC 8259 §8.1); NaN and Infinity
        # are Python's extension, not JSON.
        return json.loads(body, parse_constant=_refuse_constant)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ListingUnreadable("json_invalid", f"the listing body is not JSON: {exc}") from None
    except RecursionError:
        raise ListingUnreadable("json_too_deep", "the listing body nests too deeply to read") from None


def parse_json_listing(body: bytes, spec: JsonListingSpec, url: str = "") -> ParsedListing:
    doc = load_json(body)
    return read_json_document(doc, spec, url)


def read_json_document(doc: Any, spec: JsonListingSpec, url: str = "") -> ParsedListing:
    records = resolve_or(doc, parse_pointer(spec.records))
    if records is MISSING:
        raise DiscoveryShapeError(url, spec.records, "records.pointer names nothing in the listing body")
    if not isinstance(records, list):
        raise DiscoveryShapeError(url, spec.records,
                                  f"records.pointer names a JSON {type(records).__name__}, not an array")
    link_tokens = parse_pointer(spec.link)
    identity_tokens = parse_pointer(spec.identity) if spec.identity is not None else None
    revision_tokens = parse_pointer(spec.revision) if spec.revision is not None else None
    entries: list[ListingEntry] = []
    dropped: list[str] = []
    for index, record in enumerate(records):
        link = scalar_text(resolve_or(record, link_tokens, None))
        if link is None:
            # D-27: a record without a usable link names no page; it is dropped and
            # shows only in the diagnostics.
            dropped.append(f"record {index}: no usable link at {spec.link!r}")
            continue
        page_id = None
        if identity_tokens is not None:
            page_id = scalar_text(resolve_or(record, identity_tokens, None))
        revision = None
        if revision_tokens is not None:
            value = resolve_or(record, revision_tokens, None)
            # D-33 compares hints as strings; structured hints keep a stable text form.
            revision = scalar_text(value) if not isinstance(value, (dict, list)) else valid_text(json.dumps(
                value, sort_keys=True, separators=(",", ":"), ensure_ascii=False))
        entries.append(ListingEntry(link, page_id, revision))
    cursor = None
    if spec.cursor is not None:
        token = resolve_or(doc, parse_pointer(spec.cursor), None)
        if isinstance(token, (dict, list)):
            raise DiscoveryShapeError(url, spec.cursor, "the cursor pointer names an object or array, not a token")
        cursor = scalar_text(token)   # D-23: null and "" are absent
    return ParsedListing.of(entries, len(records), tuple(dropped), cursor=cursor)
