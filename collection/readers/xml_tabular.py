"""`xml.tabular` 1.0.0: rows from an XML document by element paths (pure).

Paths (docs/readers.md) are a closed subset of XPath's abbreviated syntax: steps of `name`,
`prefix:name` or `*`, separated by `/` (child) or `//` (descendant); a leading `/` starts
at the document, a leading `//` anywhere, otherwise the records path starts at the root
element and a column path at its record. Prefixes are the ones declared in the options'
`namespaces`; an unprefixed name matches only an element in no namespace (as in XPath 1.0),
so a feed with a default namespace (Atom) needs a declared prefix.

XML safety (GUIDE): bytes carrying `<!DOCTYPE` or `<!ENTITY` are refused before parsing,
and the parser never resolves entities, loads a DTD, touches the network or grows a huge
tree; `collect_ids` is never passed.
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Any, Mapping

from lxml import etree

from collection.readers.base import ReaderFailure, Rows, reader
from collection.readers.text import decode_text, normalize

FAMILY_ID = "xml.tabular"

_NAME = r"[A-Za-z_][A-Za-z0-9_.\-]*"
_STEP = re.compile(rf"\*|(?:({_NAME}):)?({_NAME})\Z")
_FORBIDDEN = re.compile(rb"<!\s*(?:DOCTYPE|ENTITY)", re.I)
_XML_DECLARATION = re.compile(r"\A\s*<\?xml[^>]*\?>")


# One parser per thread: lxml parsers are reusable but not safe to share between threads.
_LOCAL = threading.local()


def _parser() -> etree.XMLParser:
    if not hasattr(_LOCAL, "parser"):
        _LOCAL.parser = etree.XMLParser(encoding="utf-8", resolve_entities=False, no_network=True, load_dtd=False,
                           huge_tree=False, remove_comments=True, remove_pis=True, dtd_validation=False)
    return _LOCAL.parser


def compile_path(path: str, namespaces: Mapping[str, str], relative_to: str = ".") -> etree.XPath:
    """The XPath for an element path; raises ValueError for a path outside the grammar."""
    return _compile(path, tuple(sorted(namespaces.items())), relative_to)


@functools.lru_cache(maxsize=512)
def _compile(path: str, namespaces: tuple[tuple[str, str], ...], relative_to: str) -> etree.XPath:
    declared = dict(namespaces)
    if path.startswith("//"):
        prefix, rest = "//", path[2:]
    elif path.startswith("/"):
        prefix, rest = "/", path[1:]
    else:
        prefix, rest = relative_to + "/", path
    if not rest:
        raise ValueError(f"the path {path!r} names no element")
    steps = re.split(r"(//|/)", rest)
    out = [prefix]
    for index, part in enumerate(steps):
        if index % 2:
            out.append(part)
            continue
        match = _STEP.match(part)
        if not match:
            raise ValueError(f"the path step {part!r} of {path!r} is outside the path grammar")
        if match.group(1) and match.group(1) not in declared:
            raise ValueError(f"the prefix {match.group(1)!r} of {path!r} is not declared in namespaces")
        out.append(part)
    return etree.XPath("".join(out), namespaces=declared or None, smart_strings=False)


def _attribute_name(attribute: str, namespaces: Mapping[str, str]) -> str:
    if ":" in attribute:
        prefix, local = attribute.split(":", 1)
        if prefix == "xml":
            return f"{{http://www.w3.org/XML/1998/namespace}}{local}"
        if prefix not in namespaces:
            raise ValueError(f"the prefix {prefix!r} of attribute {attribute!r} is not declared")
        return f"{{{namespaces[prefix]}}}{local}"
    return attribute


def parse_xml(body: bytes, content_type: str | None) -> Any:
    if _FORBIDDEN.search(body):
        raise ReaderFailure("decode_error", "the page carries <!DOCTYPE or <!ENTITY, which XML pages may not")
    text = decode_text(body, content_type, "xml")
    # Checked again on the text: a UTF-16 page hides the markup from a byte search.
    if _FORBIDDEN.search(text.encode("utf-8", "replace")):
        raise ReaderFailure("decode_error", "the page carries <!DOCTYPE or <!ENTITY, which XML pages may not")
    text = _XML_DECLARATION.sub("", text, count=1)
    try:
        return etree.fromstring(text.encode("utf-8"), parser=_parser())
    except etree.XMLSyntaxError as error:
        raise ReaderFailure("decode_error", f"the page is not well-formed XML: {error}") from None


@reader(FAMILY_ID)
def read(options: Mapping[str, Any], body: bytes, content_type: str, url: str) -> Rows:
    root = parse_xml(body, content_type)
    namespaces = dict(options.get("namespaces", {}))
    try:
        records_path = compile_path(options["records"]["path"], namespaces)
        columns = [(compile_path(column["path"], namespaces) if column.get("path") else None,
                    _attribute_name(column["attribute"], namespaces) if column.get("attribute") else None)
                   for column in options["columns"]]
    except (ValueError, etree.XPathError) as error:
        raise ReaderFailure("decode_error", f"the options' paths do not compile: {error}") from None
    rows = []
    for record in records_path(root):
        if not isinstance(record, etree._Element) or not isinstance(record.tag, str):
            continue
        row = []
        for path, attribute in columns:
            targets = [record] if path is None else [e for e in path(record)
                                                     if isinstance(e, etree._Element) and isinstance(e.tag, str)]
            value = ""
            if targets:
                element = targets[0]
                value = normalize(element.get(attribute)) if attribute else normalize("".join(element.itertext()))
            row.append(value)
        rows.append(tuple(row))
    return tuple(rows)
