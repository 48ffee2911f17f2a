"""`html_index` listings (DISC-13 to DISC-16) and the next_selector grammar (PAG-13) (pure).

The listing is inert data: lxml's HTML parser builds a tree, nothing runs, nothing is
fetched, and only the closed selector grammar reaches into it (DISC-04).
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from lxml import etree, html

from collection.discover.common import ListingEntry, ParsedListing
from collection.readers.selectors import compile_selector

_META_CHARSET = re.compile(rb"<meta[^>]{0,512}charset", re.IGNORECASE)


@dataclass(frozen=True)
class HtmlListingSpec:
    records: str                    # records.selector
    attribute: str = "href"         # link.attribute (DISC-14)
    next_selector: str | None = None


def _parser(body: bytes, charset: str | None) -> html.HTMLParser:
    encoding = None
    if charset:
        try:
            encoding = codecs.lookup(charset).name
        except LookupError:
            encoding = None
    if encoding is None and not _META_CHARSET.search(body[:4096]):
        # Without a declared charset libxml2 guesses Latin-1; the web's default for a
        # listing that names none is UTF-8, and a wrong guess garbles non-ASCII paths.
        encoding = "utf-8"
    return html.HTMLParser(encoding=encoding, no_network=True, huge_tree=False,
                           remove_comments=True, remove_pis=True)


def parse_html(body: bytes, charset: str | None = None):
    """The document's root element, or None for a body that holds no document at all."""
    if not body.strip():
        return None
    try:
        return html.document_fromstring(body, parser=_parser(body, charset))
    except (etree.ParserError, ValueError):
        return None


def parse_html_listing(body: bytes, spec: HtmlListingSpec, charset: str | None = None) -> ParsedListing:
    root = parse_html(body, charset)
    if root is None:
        return ParsedListing()
    matches = compile_selector(spec.records).select(root)
    entries: list[ListingEntry] = []
    dropped: list[str] = []
    for index, element in enumerate(matches):
        value = element.get(spec.attribute)
        if value is None or not value.strip():
            # D-27: no usable link. An empty href would name the listing page itself.
            dropped.append(f"match {index}: no usable {spec.attribute!r} attribute")
            continue
        entries.append(ListingEntry(value))
    next_link = None
    if spec.next_selector is not None:
        found = compile_selector(spec.next_selector).select(root)
        if found:
            href = found[0].get("href")   # PAG-13: the first match's href, whatever link.attribute says
            next_link = href if href is not None and href.strip() else None
    return ParsedListing.of(entries, len(matches), tuple(dropped), next_link=next_link)
