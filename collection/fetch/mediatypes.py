"""Which media types a response may carry (pure): DISC-28..DISC-31, READ-06, D-37.

A listing accepts what its discovery kind accepts; a detail page accepts what the pinned
Reader family reads (collection.readers.registry is the one place that says so). Matching
compares the lowercased type/subtype with parameters ignored; a missing or malformed
Content-Type is refused.
"""

from __future__ import annotations

import re

from collection.readers.registry import FAMILIES, HTML_MEDIA_TYPES, JSON_MEDIA_TYPES

LISTING_MEDIA_TYPES: dict[str, tuple[str, ...]] = {
    "json_api": JSON_MEDIA_TYPES,                                          # DISC-28
    "sitemap": ("application/xml", "text/xml", "application/rss+xml"),     # DISC-29
    "html_index": HTML_MEDIA_TYPES,                                        # DISC-30
    "explicit": (),                                                        # DISC-26: no request
}

# RFC 9110 §8.3.1: type "/" subtype, both tokens.
_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_MEDIA_TYPE = re.compile(rf"\s*({_TOKEN})/({_TOKEN})\s*(?:;.*)?\Z", re.DOTALL)


def listing_accepted(kind: str) -> tuple[str, ...]:
    return LISTING_MEDIA_TYPES[kind]


def page_accepted(family_id: str) -> tuple[str, ...]:
    return FAMILIES[family_id].media_types


def media_type(content_type: str | None) -> str | None:
    """`type/subtype`, lowercased, from a Content-Type value; None if absent or malformed."""
    if content_type is None:
        return None
    match = _MEDIA_TYPE.match(content_type)
    if match is None:
        return None
    return f"{match.group(1)}/{match.group(2)}".lower()


def accepts(content_type: str | None, accepted: tuple[str, ...] | list[str]) -> bool:
    found = media_type(content_type)
    return found is not None and found in {item.lower() for item in accepted}


def accept_header(accepted: tuple[str, ...] | list[str]) -> str:
    """The `Accept` value asking for exactly the accepted set, in its order of preference.

    No `*/*`: anything else would be refused unread, so asking for it only wastes the
    origin's bytes."""
    return ", ".join(dict.fromkeys(item.lower() for item in accepted))
