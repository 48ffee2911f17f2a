"""Shared text rules of the Readers: charset detection, HTML parsing, text normalisation (pure).

Every Reader's text goes through `normalize` (one line) or `normalize_block` (several
lines), so the same bytes give the same characters every time: Unicode NFC, entities
decoded by the parser, runs of whitespace collapsed to one space, C0/C1 controls dropped.

Encoding (docs/readers.md): a byte-order mark, then the Content-Type `charset`, then (HTML)
`<meta charset>` / `<meta http-equiv=Content-Type>` in the first 1024 bytes or (XML) the XML
declaration, then the fallback: UTF-8 when the bytes are valid UTF-8, else windows-1252.
The BOM comes first because that is what browsers do (WHATWG "decode"), and a BOM that
disagrees with the header is the page telling the truth about its own bytes.
"""

from __future__ import annotations

import codecs
import re
import threading
import unicodedata
from typing import Any

from lxml import etree, html

# WHATWG maps these labels to windows-1252; pages labelled latin-1 are cp1252 in practice
# (curly quotes in 0x80–0x9F), and reading them as true latin-1 would yield C1 controls.
_WHATWG_ALIASES = {
    "iso-8859-1": "cp1252", "iso8859-1": "cp1252", "latin1": "cp1252", "latin-1": "cp1252",
    "l1": "cp1252", "ascii": "cp1252", "us-ascii": "cp1252", "windows-1252": "cp1252",
    "cp1252": "cp1252", "x-cp1252": "cp1252", "iso_8859-1": "cp1252", "cp819": "cp1252",
    "ibm819": "cp1252", "iso-ir-100": "cp1252", "csisolatin1": "cp1252",
    "utf8": "utf-8", "unicode-1-1-utf-8": "utf-8", "x-sjis": "shift_jis", "gb2312": "gb18030", "gbk": "gb18030",
}
# Encodings a page may name that would decode bytes as something no page is (UTF-7 is a
# known XSS vector; the UTF-16/32 labels without a BOM are refused by WHATWG too).
_REFUSED = {"utf-7", "utf_7", "utf-16", "utf-32", "utf_16", "utf_32", "utf-16-le", "utf-16-be",
            "utf_16_le", "utf_16_be", "utf-32-le", "utf-32-be", "utf_32_le", "utf_32_be"}

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE, whose BOM is its prefix
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

_CHARSET_PARAM = re.compile(r""";\s*charset\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s;]+))""", re.I)
_META_CHARSET = re.compile(rb"""<meta[^>]+?charset\s*=\s*["']?\s*([A-Za-z0-9_.:\-]+)""", re.I)
_XML_DECLARATION = re.compile(rb"""\A\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9_.\-]+)["']""")
_XML_DECLARATION_TEXT = re.compile(r"""\A\s*<\?xml[^>]*\?>""")
_WHITESPACE = re.compile(r"\s+")
# Controls other than whitespace, and the noncharacters U+FFFE/U+FFFF, never reach a row.
_CONTROLS = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\ufffe\uffff]")


def media_type(content_type: str | None) -> str | None:
    """The lowercased type/subtype of a Content-Type value, parameters dropped (D-37)."""
    if content_type is None:
        return None
    essence = content_type.split(";", 1)[0].strip().lower()
    return essence or None


def charset_parameter(content_type: str | None) -> str | None:
    if not content_type:
        return None
    match = _CHARSET_PARAM.search(content_type)
    if not match:
        return None
    return next(group for group in match.groups() if group is not None).strip()


def _codec(label: str | None) -> str | None:
    """A Python codec name for a charset label, or None for an unknown or refused one."""
    if not label:
        return None
    label = label.strip().lower()
    if label in _WHATWG_ALIASES:
        return _WHATWG_ALIASES[label]
    if label in _REFUSED:
        return None
    try:
        name = codecs.lookup(label).name
    except LookupError:
        return None
    if name in _REFUSED or name.startswith(("utf-16", "utf-32", "utf_16", "utf_32")):
        return None
    return name


def _detect(body: bytes, content_type: str | None, kind: str) -> tuple[str, int]:
    # The order issue 6 fixes: the HTTP header, then the BOM, then the document's own
    # declaration, then the fallback. A BOM of the declared encoding is still skipped.
    bom_codec, bom_length = next(((name, len(bom)) for bom, name in _BOMS if body.startswith(bom)), (None, 0))
    declared = _codec(charset_parameter(content_type))
    if declared:
        return declared, bom_length if bom_codec == declared else 0
    if bom_codec:
        return bom_codec, bom_length
    head = body[:1024]
    if kind == "html":
        match = _META_CHARSET.search(head)
        if match:
            inner = _codec(match.group(1).decode("ascii", "replace"))
            if inner:
                return inner, 0
    elif kind == "xml":
        match = _XML_DECLARATION.match(head)
        if match:
            inner = _codec(match.group(1).decode("ascii", "replace"))
            if inner:
                return inner, 0
    return _FALLBACK, 0


# Marks "no declared encoding": UTF-8 when the bytes are valid UTF-8, else windows-1252
# (JSON: UTF-8 with U+FFFD, RFC 8259 §8.1 allows nothing else).
_FALLBACK = "fallback"


def _fallback(body: bytes, kind: str) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return body.decode("utf-8" if kind == "json" else "cp1252", errors="replace")


def detect_encoding(body: bytes, content_type: str | None, kind: str = "html") -> tuple[str, int]:
    """(codec, number of BOM bytes to skip) for `body`; `kind` is "html", "xml" or "json"."""
    codec, skip = _detect(body, content_type, kind)
    if codec == _FALLBACK:
        try:
            body.decode("utf-8")
        except UnicodeDecodeError:
            return ("utf-8" if kind == "json" else "cp1252"), 0
        return "utf-8", 0
    return codec, skip


def decode_text(body: bytes, content_type: str | None, kind: str = "html") -> str:
    """The page as text under the encoding rule; undecodable bytes become U+FFFD."""
    codec, skip = _detect(body, content_type, kind)
    if codec == _FALLBACK:
        return _fallback(body, kind)
    return body[skip:].decode(codec, errors="replace")


def normalize(text: str | None) -> str:
    """One line of text: NFC, controls dropped, whitespace runs collapsed, trimmed."""
    if not text:
        return ""
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    if text.isprintable():
        # Printable text holds no controls (they are all unprintable), and its only whitespace is " "
        # (every other whitespace character is unprintable): the control scan below would change nothing.
        # (Printable ASCII is already NFC.)
        return text.strip() if "  " not in text else " ".join(text.split())
    # (split() cuts at exactly the whitespace \s matches, checked over every code point, and faster.)
    return " ".join(_CONTROLS.sub("", text).split())


def normalize_block(text: str | None) -> str:
    """Several lines: each line normalised, empty lines dropped, joined with "\\n"."""
    if not text:
        return ""
    lines = (normalize(line) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


# --- HTML ----------------------------------------------------------------------------

# One parser per thread: lxml parsers are reusable but not safe to share between threads.
_LOCAL = threading.local()


def _html_parser() -> etree.HTMLParser:
    if not hasattr(_LOCAL, "parser"):
        # huge_tree lifts libxml2's nesting limit from 256 to 2048 elements: real pages built
        # of nested page-builder wrappers pass 256, and past the limit libxml2 drops the rest
        # of the page without an error (PageTooDeep below turns that into a failure).
        # etree's parser, not lxml.html's: the same libxml2 parse, but its elements are plain
        # `etree._Element`s, where lxml.html picks each element's Python class in a Python
        # callback every time an element object is made (a third of the extraction engine's
        # time, issue 27). Nothing here uses lxml.html's element methods.
        # collect_ids=False: libxml2 then keeps no table of the page's id attributes, which only XPath's
        # id() and DTD validation read (neither is used here); the tree is the same and its parse and
        # free cost a few per cent less.
        _LOCAL.parser = etree.HTMLParser(encoding="utf-8", remove_comments=True, remove_pis=True,
                                         no_network=True, default_doctype=False, huge_tree=True,
                                         collect_ids=False)
    return _LOCAL.parser


class PageTooDeep(ValueError):
    """The page nests elements deeper than the HTML parser goes, so part of it would be lost."""


def parse_html(body: bytes, content_type: str | None) -> Any:
    """The document element of `body`, parsed after our own charset decision.

    The text is re-encoded as UTF-8 (bytes that already are valid UTF-8 go as they are) and the
    parser told so, so a `<meta charset>` or XML declaration inside the page cannot make libxml2
    decode the bytes a second, different way.
    Raises ValueError when there is no document at all.
    """
    codec, skip = _detect(body, content_type, "html")
    data = None  # the bytes for the parser when they are already the UTF-8 of the text
    text = None
    if not skip and codec in (_FALLBACK, "utf-8"):
        try:
            text = body.decode("utf-8")
            data = body  # valid UTF-8: re-encoding the text would give these same bytes back
        except UnicodeDecodeError:
            pass
    if text is None:
        text = decode_text(body, content_type, "html")
    declaration = _XML_DECLARATION_TEXT.match(text)
    if declaration:
        text, data = text[declaration.end():], None
    # A NUL is no character of any page: browsers drop it from the text (WHATWG "in body"),
    # where libxml2 would turn it into U+FFFD.
    if b"\x00" in body:  # (the bytes are searched: a memchr, where the text would cost a scan per page)
        text, data = text.replace("\x00", ""), None
    if not text or text.isspace():
        raise ValueError("the page is empty")
    parser = _html_parser()
    try:
        root = html.document_fromstring(text.encode("utf-8") if data is None else data, parser=parser)
    except etree.ParserError:
        raise ValueError("the page holds no HTML document") from None
    if any(error.type == _TOO_DEEP for error in parser.error_log):
        raise PageTooDeep(f"the page nests elements more than {_MAX_DEPTH} deep, past what the HTML parser reads")
    if root is None:
        raise ValueError("the page holds no HTML document")
    return root


# libxml2's error for a document nested past its limit ("Excessive depth in document").
_TOO_DEEP = etree.ErrorTypes.ERR_RESOURCE_LIMIT
_MAX_DEPTH = 2048


# Elements whose start and end break a line of text; everything else is inline.
BLOCK_TAGS = frozenset("""
address article aside blockquote body br caption center dd details dialog div dl dt fieldset figcaption figure
footer form h1 h2 h3 h4 h5 h6 header hr html legend li main nav ol p pre section summary table tbody td tfoot th
thead tr ul option
""".split())
SKIP_TAGS = frozenset({"script", "style", "noscript", "template", "head", "title", "iframe", "object", "svg", "math",
                       "noframes", "noembed", "xmp"})


def inline_text(element: Any) -> str:
    """The element's text on one line: block boundaries and <br> count as whitespace."""
    parts: list[str] = []
    _gather(element, parts, top=True)
    return normalize("".join(parts))


def block_text(element: Any) -> str:
    """The element's text with block structure kept: each block on its own line."""
    parts: list[str] = []
    _gather(element, parts, top=True, newline="\n")
    return normalize_block("".join(parts))


def _gather(element: Any, parts: list[str], top: bool = False, newline: str = " ", pre: bool = False) -> None:
    tag = element.tag.lower() if isinstance(element.tag, str) else None
    if tag is not None and (top or tag not in SKIP_TAGS):
        block = tag in BLOCK_TAGS
        inner_pre = pre or tag == "pre"
        if block:
            parts.append(newline)
        if element.text:
            parts.append(_flow(element.text, newline, inner_pre))
        for child in element:
            _gather(child, parts, newline=newline, pre=inner_pre)
        if block:
            parts.append(newline)
    if not top and element.tail:
        parts.append(_flow(element.tail, newline, pre))


def _flow(text: str, newline: str, pre: bool) -> str:
    """Source line breaks are layout, not structure — except inside <pre>, where they are the code's lines."""
    if newline == "\n" and not pre:
        return _WHITESPACE.sub(" ", text)
    return text
