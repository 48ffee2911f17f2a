"""The Reader interface, media types and the shared text rules (READ-05, READ-09, READ-10, D-12, D-37, D-50)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from collection import codes
from collection.readers import registry
from collection.readers.base import Decoded, DecodeFailure, Pin, accepts, columns, decode
from collection.readers.text import decode_text, detect_encoding, inline_text, normalize, normalize_block, parse_html

JSON_PIN = Pin("json.tabular", "1.0.0", {"columns": [{"name": "id", "pointer": "/id"}]})
HTML_TABLE_PIN = Pin("html.tabular", "1.0.0", {"table": {"selector": "table", "columns": ["a"]}})
XML_PIN = Pin("xml.tabular", "1.0.0", {"records": {"path": "r"}, "columns": [{"name": "a", "path": "a"}]})
WEB_PIN = Pin("html.web_extract", "1.1.0", {"metadata": ["language"]})

MEDIA = [
    # D-37: (pin, Content-Type, accepted?)
    (WEB_PIN, "text/html", True),
    (WEB_PIN, "TEXT/HTML; charset=UTF-8", True),
    (WEB_PIN, " text/html ;q=1", True),
    (WEB_PIN, "application/xhtml+xml", False),
    (WEB_PIN, None, False),
    (WEB_PIN, "", False),
    (HTML_TABLE_PIN, "text/html", True),
    (HTML_TABLE_PIN, "application/xhtml+xml; charset=utf-8", True),
    (HTML_TABLE_PIN, "text/plain", False),
    (JSON_PIN, "application/json", True),
    (JSON_PIN, "application/vnd.api+json", True),
    (JSON_PIN, "application/ld+json", True),
    (JSON_PIN, "text/html", False),
    (XML_PIN, "application/xml", True),
    (XML_PIN, "text/xml; charset=iso-8859-1", True),
    (XML_PIN, "application/rss+xml", False),
    (XML_PIN, "application/atom+xml", False),
]


@pytest.mark.parametrize("pin,content_type,accepted", MEDIA)
def test_media_types_D_37_READ_06(pin: Pin, content_type: str | None, accepted: bool) -> None:
    assert accepts(pin.family_id, content_type) is accepted
    result = decode(pin, b"<html></html>", content_type, "https://example.com/")
    if not accepted:
        assert result == DecodeFailure("media_type_refused", result.message)


def test_failure_codes_are_catalogued_page_codes_D_45() -> None:
    for code in ("decode_error", "column_mismatch", "media_type_refused"):
        assert codes.CATALOGUE[code].kind == codes.PAGE


def test_columns_come_from_the_registry_D_12() -> None:
    assert columns(WEB_PIN) == registry.FAMILIES["html.web_extract"].columns({"metadata": ["language"]}) \
        == ("title", "story", "language")
    pin = Pin("html.tabular", "1.0.0", {"table": {"selector": "t", "columns": ["a", {"name": "b", "header": "B b"}]}})
    assert columns(pin) == ("a", "b")


def test_pin_from_connector_parameters_READ_02() -> None:
    pin = Pin.from_parameters("json.tabular", "1.0.0", '{"columns":[{"name":"id","pointer":"/id"}]}')
    assert pin == JSON_PIN


def test_unknown_family_or_version_is_a_decode_failure_not_an_exception() -> None:
    assert decode(Pin("json.tabular", "9.9.9", JSON_PIN.options), b"{}", "application/json", "").code == "decode_error"
    assert decode(Pin("pdf.text", "1.0.0", {}), b"{}", "application/json", "").code == "decode_error"


def test_zero_rows_is_success_D_50() -> None:
    assert decode(JSON_PIN, b"[]", "application/json", "") == Decoded(("id",), ())


ENCODINGS = [
    # (body, Content-Type, kind, expected codec) — charset, then BOM, then meta/declaration, then fallback
    (b"\xef\xbb\xbfhi", "text/html; charset=iso-8859-1", "html", "cp1252"),
    (b"\xef\xbb\xbfhi", "text/html; charset=utf-8", "html", "utf-8"),
    (b"\xef\xbb\xbfhi", "text/html", "html", "utf-8"),
    (b"\xff\xfeh\x00i\x00", None, "html", "utf-16-le"),
    (b"\xff\xfeh\x00", "text/html", "html", "utf-16-le"),
    (b"<meta charset=utf-8>caf\xe9", "text/html; charset=windows-1252", "html", "cp1252"),
    (b"<meta charset=utf-8>x", "text/html; charset=ISO-8859-1", "html", "cp1252"),
    (b'<meta charset="shift_jis">x', "text/html", "html", "shift_jis"),
    (b'<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">', "text/html", "html", "koi8-r"),
    (b"<meta charset=utf-7>x", "text/html", "html", "utf-8"),
    (b"x", "text/html; charset=nonsense", "html", "utf-8"),
    (b"caf\xe9", "text/html", "html", "cp1252"),
    (b"caf\xc3\xa9", "text/html", "html", "utf-8"),
    (b'<?xml version="1.0" encoding="ISO-8859-1"?><a/>', "text/xml", "xml", "cp1252"),
    (b'<meta charset="koi8-r">', "text/xml", "xml", "utf-8"),
    (b'{"a":"caf\xe9"}', "application/json", "json", "utf-8"),
]


@pytest.mark.parametrize("body,content_type,kind,codec", ENCODINGS)
def test_encoding_rule(body: bytes, content_type: str, kind: str, codec: str) -> None:
    assert detect_encoding(body, content_type, kind)[0] == codec


def test_fallback_decodes_every_byte_deterministically() -> None:
    assert decode_text(b"caf\xe9 \x81", "text/html") == "café \ufffd"


NORMALIZE = [
    ("  a \t b\n", "a b"),
    ("Cafe\u0301", "Café"),  # NFC
    ("a\u00a0b\u2003c", "a b c"),
    ("a\x00b\x1fc\x85d", "abcd"),
    (" caf\u00e9  cr\u00e8me ", "caf\u00e9 cr\u00e8me"),  # printable, not ASCII: runs of spaces still collapse
    ("Cafe\u0301  au lait", "Caf\u00e9 au lait"),  # NFC first, then the printable text's runs
    ("a\ufffeb\uffff", "ab"),  # noncharacters never reach a row
    ("", ""),
    (None, ""),
]


@pytest.mark.parametrize("text,expected", NORMALIZE)
def test_normalize(text, expected) -> None:
    assert normalize(text) == expected


def test_block_text_keeps_blocks_on_their_own_lines() -> None:
    root = parse_html(b"<div><h2>Head</h2><p>One <b>bold</b>\n word</p><ul><li>i</li><li>ii</li></ul>"
                      b"<p>a<br>b</p><script>x()</script></div>", "text/html")
    div = root.find(".//div")
    assert normalize_block("  x \n\n  y ") == "x\ny"
    assert inline_text(div) == "Head One bold word i ii a b"
    from collection.readers.text import block_text
    assert block_text(div) == "Head\nOne bold word\ni\nii\na\nb"


def test_entities_are_decoded() -> None:
    root = parse_html(b"<p>Fish &amp; chips &eacute;t&#233; &#x2014;</p>", "text/html")
    assert inline_text(root.find(".//p")) == "Fish & chips été —"


PINS = [WEB_PIN, HTML_TABLE_PIN, JSON_PIN, XML_PIN,
        Pin("html.tabular", "1.0.0", {"records": {"selector": "li", "columns": [{"name": "a", "selector": "a",
                                                                                   "attribute": "href"}]}})]
TYPES = {"html.web_extract": "text/html", "html.tabular": "text/html", "json.tabular": "application/json",
         "xml.tabular": "application/xml"}
FRAGMENTS = [b"<", b">", b"<html>", b"<table><tr><td>", b"<li><a href='x'>", b"{", b"}", b'"id"', b":", b"[", b"]",
             b"<r><a>", b"</a></r>", b"\xef\xbb\xbf", b"\xff\xfe", b"&amp;", b"<!DOCTYPE", b"\x00", b"\xe9", b" ",
             b"<meta charset=utf-16>", b"<?xml version='1.0'?>", b"<th>a</th>", b"colspan=999", b"rowspan=0"]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(PINS), st.one_of(st.binary(max_size=300),
                                         st.lists(st.sampled_from(FRAGMENTS), max_size=20).map(b"".join)))
def test_any_bytes_give_rows_or_a_failure_never_a_crash_and_the_same_twice_READ_10(pin: Pin, body: bytes) -> None:
    first = decode(pin, body, TYPES[pin.family_id], "https://example.com/p")
    assert isinstance(first, (Decoded, DecodeFailure))
    if isinstance(first, Decoded):
        assert all(len(row) == len(first.columns) for row in first.rows)
    else:
        assert first.code in ("decode_error", "column_mismatch", "story_not_found", "page_too_deep")
    assert decode(pin, body, TYPES[pin.family_id], "https://example.com/p") == first


def test_a_bom_of_the_declared_encoding_is_skipped_and_another_is_not():
    """Issue 6: header first, then BOM; the declared encoding's own BOM is not text."""
    assert detect_encoding(b"\xef\xbb\xbfhi", "text/html; charset=utf-8", "html") == ("utf-8", 3)
    assert detect_encoding(b"\xef\xbb\xbfhi", "text/html; charset=iso-8859-1", "html") == ("cp1252", 0)
