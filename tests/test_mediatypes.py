"""Media types (DISC-28..DISC-31, READ-06, D-37)."""

from __future__ import annotations

import pytest

from collection.fetch.mediatypes import (
    LISTING_MEDIA_TYPES, accept_header, accepts, listing_accepted, media_type, page_accepted,
)
from collection.readers.registry import FAMILIES


@pytest.mark.parametrize("kind, expected", [
    ("json_api", {"application/json", "application/ld+json", "application/vnd.api+json", "text/json"}),  # DISC-28
    ("sitemap", {"application/xml", "text/xml", "application/rss+xml"}),                                 # DISC-29
    ("html_index", {"text/html", "application/xhtml+xml"}),                                              # DISC-30
    ("explicit", set()),                                                                                 # DISC-26
])
def test_listing_sets(kind, expected):
    assert set(listing_accepted(kind)) == expected


@pytest.mark.parametrize("family, expected", [
    ("html.web_extract", {"text/html"}),
    ("html.tabular", {"text/html", "application/xhtml+xml"}),
    ("json.tabular", set(LISTING_MEDIA_TYPES["json_api"])),
    ("xml.tabular", {"application/xml", "text/xml"}),
])
def test_d37_page_sets_come_from_the_reader_registry(family, expected):
    assert set(page_accepted(family)) == expected
    assert page_accepted(family) is FAMILIES[family].media_types


@pytest.mark.parametrize("header, expected", [
    ("application/json", "application/json"),
    ("Application/JSON; charset=UTF-8", "application/json"),
    ("  text/html ;charset=utf-8", "text/html"),
    ("application/vnd.api+json", "application/vnd.api+json"),
    (None, None), ("", None), ("text", None), ("text/", None), ("/html", None),
    ("text/html/x", None), ("text html", None), ("tëxt/html", None),
])
def test_media_type(header, expected):
    assert media_type(header) == expected


@pytest.mark.parametrize("header, kind, expected", [
    ("application/json; charset=utf-8", "json_api", True),
    ("TEXT/JSON", "json_api", True),
    ("text/html", "json_api", False),          # DISC-31
    ("application/json", "sitemap", False),
    ("application/rss+xml", "sitemap", True),
    ("application/xhtml+xml", "html_index", True),
    (None, "html_index", False),               # D-37: missing is refused
    ("text/html", "explicit", False),
    ("text/plain", "html_index", False),
])
def test_accepts_listing(header, kind, expected):
    assert accepts(header, listing_accepted(kind)) is expected


def test_accept_header():
    assert accept_header(listing_accepted("html_index")) == "text/html, application/xhtml+xml"
    assert accept_header(page_accepted("html.web_extract")) == "text/html"
    assert "*/*" not in accept_header(listing_accepted("json_api"))
