"""xml.tabular 1.0.0: records and columns by element paths, namespaces, XML safety (READ-05, READ-10)."""

from __future__ import annotations

import pytest

from collection.readers.base import Decoded, DecodeFailure, Pin, decode
from collection.readers.xml_tabular import compile_path

FEED = """<?xml version="1.0" encoding="UTF-8"?>
<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:atom="http://www.w3.org/2005/Atom">
<channel>
  <title>Example City Council: decisions</title>
  <atom:link href="https://council.example.gov/feed" rel="self"/>
  <!-- generated nightly -->
  <item>
    <title>Riverside car park tariffs &amp; charges</title>
    <link>https://council.example.gov/decisions/2024/117</link>
    <dc:creator>Democratic  Services</dc:creator>
    <pubDate>Tue, 05 Mar 2024 09:30:00 GMT</pubDate>
    <guid isPermaLink="false">dec-2024-117</guid>
    <description><![CDATA[<p>Cabinet agreed new tariffs.</p>]]></description>
    <category>Transport</category><category>Parking</category>
  </item>
  <item>
    <title>Street lighting upgrade</title>
    <link>https://council.example.gov/decisions/2024/118</link>
    <guid>https://council.example.gov/decisions/2024/118</guid>
  </item>
</channel></rss>"""

NS = {"dc": "http://purl.org/dc/elements/1.1/", "atom": "http://www.w3.org/2005/Atom"}


def pin(records: str, columns: list, namespaces: dict | None = NS) -> Pin:
    options: dict = {"records": {"path": records},
                     "columns": [dict(name=f"c{i}", **column) for i, column in enumerate(columns)]}
    if namespaces is not None:
        options["namespaces"] = namespaces
    return Pin("xml.tabular", "1.0.0", options)


CASES = [
    ("channel/item", [{"path": "title"}, {"path": "link"}, {"path": "dc:creator"}, {"path": "guid", "attribute": "isPermaLink"},
                      {"path": "description"}, {"path": "category"}],
     (("Riverside car park tariffs & charges", "https://council.example.gov/decisions/2024/117", "Democratic Services",
       "false", "<p>Cabinet agreed new tariffs.</p>", "Transport"),
      ("Street lighting upgrade", "https://council.example.gov/decisions/2024/118", "", "", "", ""))),
    ("/rss/channel/item", [{"path": "/rss/channel/title"}, {"path": "//atom:link", "attribute": "href"}],
     (("Example City Council: decisions", "https://council.example.gov/feed"),) * 2),
    ("//item", [{"attribute": "missing"}, {"path": "*"}], (("", "Riverside car park tariffs & charges"), ("", "Street lighting upgrade"))),
    ("channel", [{"path": "item//title"}], (("Riverside car park tariffs & charges",),)),
    ("/channel", [{"path": "title"}], ()),  # D-50: the root is rss, so nothing matches
    ("channel/nothing", [{"path": "title"}], ()),
    ("channel/item", [{"path": "x:title"}], "decode_error"),  # undeclared prefix
    ("channel/item[1]", [{"path": "title"}], "decode_error"),  # predicates are outside the path grammar
    ("channel/item", [{"path": "guid", "attribute": "atom:rel"}], (("",), ("",))),
]


@pytest.mark.parametrize("records,columns,expected", CASES)
def test_rss_feed(records: str, columns: list, expected) -> None:
    result = decode(pin(records, columns), FEED.encode(), "application/xml", "")
    if isinstance(expected, str):
        assert isinstance(result, DecodeFailure) and result.code == expected
    else:
        assert isinstance(result, Decoded) and result.rows == expected


ATOM = b"""<feed xmlns="http://www.w3.org/2005/Atom"><entry><title>One</title><link href="/1"/></entry></feed>"""


def test_default_namespace_needs_a_declared_prefix() -> None:
    assert decode(pin("entry", [{"path": "title"}]), ATOM, "text/xml", "").rows == ()
    result = decode(pin("a:entry", [{"path": "a:title"}, {"path": "a:link", "attribute": "href"}],
                        {"a": "http://www.w3.org/2005/Atom"}), ATOM, "text/xml", "")
    assert result.rows == (("One", "/1"),)


UNSAFE = [
    b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x "boom">]><r><a>&x;</a></r>',
    b'<!DOCTYPE r SYSTEM "http://evil.example/r.dtd"><r/>',
    b'<r><!ENTITY x "y"></r>',
    b'<!doctype r><r/>',
    '<!DOCTYPE r [<!ENTITY x "boom">]><r/>'.encode("utf-16"),
    b"<r><a>&unknown;</a></r>",
    b"<r><a>unclosed</r>",
    b"",
    b"not xml",
]


@pytest.mark.parametrize("body", UNSAFE)
def test_unsafe_or_broken_xml_is_a_decode_error(body: bytes) -> None:
    result = decode(pin("a", [{"attribute": "x"}]), body, "application/xml", "")
    assert isinstance(result, DecodeFailure) and result.code == "decode_error"


ENCODED = [
    ('<?xml version="1.0" encoding="ISO-8859-1"?><r><a>caf\u00e9</a></r>'.encode("latin-1"), "text/xml"),
    ('<r><a>caf\u00e9</a></r>'.encode("latin-1"), "text/xml; charset=iso-8859-1"),
    ('<?xml version="1.0" encoding="UTF-8"?><r><a>caf\u00e9</a></r>'.encode("utf-16"), "text/xml"),
    ('<r><a>cafe\u0301</a></r>'.encode("utf-8"), "application/xml"),
]


@pytest.mark.parametrize("body,content_type", ENCODED)
def test_encodings_and_nfc(body: bytes, content_type: str) -> None:
    assert decode(pin("a", [{}], None), body, content_type, "") == Decoded(("c0",), (("caf\u00e9",),))


PATHS = [("a", True), ("/a/b", True), ("//a", True), ("a//b", True), ("dc:a/*", True), ("a/../b", False),
         ("a[1]", False), ("@a", False), ("a/", False), ("/", False), ("x:a", False), ("a|b", False), ("text()", False)]


@pytest.mark.parametrize("path,ok", PATHS)
def test_path_grammar(path: str, ok: bool) -> None:
    if ok:
        compile_path(path, NS)
    else:
        with pytest.raises(ValueError):
            compile_path(path, NS)
