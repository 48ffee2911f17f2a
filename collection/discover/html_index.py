"""`html_index` listings (DISC-13 to DISC-16) and the next_selector grammar (PAG-13) (pure).

The listing is inert data: lxml's HTML parser builds a tree, nothing runs, nothing is
fetched, and only the closed selector grammar reaches into it (DISC-04).
"""

from __future__ import annotations

import codecs
import io
import re
from dataclasses import dataclass

from lxml import etree, html

from collection.discover.common import Nones, ParsedListing, TextPacker
from collection.readers.selectors import compile_selector

# Why records were dropped is said for this many; the rest are counted (a page of a million
# anchors without an href must not cost a million messages).
_NAMED_DROPS = 100

# Past this many siblings to keep for a position test, pruning costs more walking than it
# saves memory: such a selector keeps every sibling (the whole-tree reader's footprint).
_PRUNE_LIMIT = 64

_META_CHARSET = re.compile(rb"<meta[^>]{0,512}charset", re.IGNORECASE)


@dataclass(frozen=True)
class HtmlListingSpec:
    records: str                    # records.selector
    attribute: str = "href"         # link.attribute (DISC-14)
    next_selector: str | None = None


def _encoding(body: bytes, charset: str | None) -> str | None:
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
    return encoding


def _parser(body: bytes, charset: str | None) -> html.HTMLParser:
    return html.HTMLParser(encoding=_encoding(body, charset), no_network=True, huge_tree=False,
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
    if not body.strip():
        return ParsedListing()
    records = compile_selector(spec.records)
    following = compile_selector(spec.next_selector) if spec.next_selector is not None else None
    if records.streamable and (following is None or following.streamable):
        streamed = _streamed(body, spec, records, following, charset)
        if streamed is not None:
            return streamed
    return _from_tree(body, spec, records, following, charset)


class _Matches:
    """The listing's columns taken straight from each match's attribute value, packed as
    they come (an index of a million links would otherwise pass through a million entry
    objects, then a million loose strings, on the way)."""

    def __init__(self, attribute: str) -> None:
        self.attribute = attribute
        self.links = TextPacker()
        self.count = 0
        self.dropped: list[str] = []
        self.unnamed = 0

    def add(self, value: str | None) -> None:
        if value is None or not value.strip():
            # D-27: no usable link. An empty href would name the listing page itself.
            if len(self.dropped) < _NAMED_DROPS:
                self.dropped.append(f"match {self.count}: no usable {self.attribute!r} attribute")
            else:
                self.unnamed += 1
        else:
            self.links.append(value)
        self.count += 1

    def listing(self, next_href: str | None) -> ParsedListing:
        nothing = Nones(len(self.links))     # an HTML index states no page ids and no revisions
        next_link = next_href if next_href is not None and next_href.strip() else None
        return ParsedListing(self.links.packed(), nothing, nothing, self.count, tuple(self.dropped),
                             dropped_unnamed=self.unnamed, next_link=next_link)


def _from_tree(body, spec, records, following, charset) -> ParsedListing:
    root = parse_html(body, charset)
    if root is None:
        return ParsedListing()
    matches = _Matches(spec.attribute)
    for element in records.select(root):
        matches.add(element.get(spec.attribute))
    next_href = None
    if following is not None:
        found = following.select(root)
        next_href = found[0].get("href") if found else None  # PAG-13: the first match's href
    return matches.listing(next_href)


def _streamed(body, spec, records, following, charset) -> ParsedListing | None:
    """The listing read as the parser goes, holding only the open elements and a few
    preceding siblings of each: a million-link index would otherwise stand as a whole
    libxml2 tree of about fifteen times its size (bench/discovery.py).

    Each element is judged when it starts (document order, the same as `select` on the
    whole tree); a streamable selector needs nothing that comes later. When it ends, its
    content is dropped, and so are preceding siblings beyond the ones a `:first-child` or
    `:nth-child(N)` test can still ask about. None when libxml2 cannot read the body as a
    stream, for the whole-tree reader to decide."""
    kept = max(records.siblings_kept, following.siblings_kept if following is not None else 0)
    matches = _Matches(spec.attribute)
    next_href = None
    want_next = following is not None
    attribute = spec.attribute
    try:
        events = etree.iterparse(io.BytesIO(body), events=("start", "end"), html=True,
                                 encoding=_encoding(body, charset), no_network=True, huge_tree=False,
                                 remove_comments=True, remove_pis=True)
        for event, element in events:
            if event == "start":
                if records.matches(element):
                    matches.add(element.get(attribute))
                if want_next and following.matches(element):
                    next_href = element.get("href")           # PAG-13: the first match's href
                    want_next = False
                continue
            element.clear(keep_tail=False)
            parent = element.getparent()
            if parent is not None and kept <= _PRUNE_LIMIT:
                # Siblings end in order and each end prunes, so `element` has at most kept + 1
                # preceding siblings here: drop the oldest when it has that many. (The parser
                # reads ahead of its events, so the parent may already hold later siblings;
                # only preceding ones are counted.)
                previous = element
                for _ in range(kept + 1):
                    previous = previous.getprevious()
                    if previous is None:
                        break
                else:
                    del parent[0]
    except (etree.XMLSyntaxError, etree.ParserError, ValueError):
        return None
    return matches.listing(next_href)
