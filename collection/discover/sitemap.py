"""`sitemap` listings (DISC-05, DISC-06, DISC-18 to DISC-23, D-35, D-36): bytes in, locs out (pure).

A sitemap is the one listing whose size the publisher, not the recipe, decides, so it is
read as a stream: decompressed chunk by chunk under a byte cap, screened for DOCTYPE and
entity declarations, fed to a pull parser, and the entries completed by each chunk read
together and cleared. The tree in memory never holds more than one chunk's entries.
"""

from __future__ import annotations

import re
import zlib
from collections import deque
from collections.abc import Iterator
from functools import lru_cache

from lxml import etree

from collection.discover.common import DiscoveryShapeError, ListingUnreadable, ParsedListing

# The sitemaps.org protocol's own limits, per sitemap file.
MAX_SITEMAP_URLS = 50_000
MAX_SITEMAP_BYTES = 50 * 1024 * 1024
# One chunk is one batch: 64 KiB measured fastest on a 50,000-URL sitemap, ahead of 32 KiB
# (more XPath calls per URL) and 128 KiB (a batch no longer sits in the CPU cache while it
# is read), and the tree never holds more than one chunk's entries.
CHUNK = 1 << 16

_GZIP_MAGIC = b"\x1f\x8b"
# D-35: a DOCTYPE or any entity declaration refuses the listing; the five predefined
# entities and character references need neither, so they pass. Case-insensitive because
# a refusal that a lowercase spelling dodges would be no refusal.
_DECLARATION = re.compile(rb"<!\s*(?:[Dd][Oo][Cc][Tt][Yy][Pp][Ee]|[Ee][Nn][Tt][Ii][Tt][Yy])")
_DECLARATION_OVERLAP = 16
_LEADING = b" \t\r\n"
_BOM = b"\xef\xbb\xbf"


def _decompressed(body: bytes, max_bytes: int) -> Iterator[bytes]:
    """The body's bytes, gunzipped when they carry the gzip magic, under `max_bytes`."""
    if not body.startswith(_GZIP_MAGIC):
        if len(body) > max_bytes:
            raise ListingUnreadable("sitemap_too_large", f"the sitemap is larger than {max_bytes} bytes")
        for start in range(0, len(body), CHUNK):
            yield body[start:start + CHUNK]
        return
    total = 0
    data = body
    while data:
        inflater = zlib.decompressobj(wbits=31)
        pending = data
        while pending:
            try:
                # max_length bounds what one call may inflate, so a gzip bomb is caught
                # after at most CHUNK bytes past the cap, never after inflating it all.
                out = inflater.decompress(pending, CHUNK)
            except zlib.error as exc:
                raise ListingUnreadable("gzip_invalid", f"the sitemap's gzip stream is broken: {exc}") from None
            total += len(out)
            if total > max_bytes:
                raise ListingUnreadable("sitemap_too_large",
                                        f"the sitemap inflates to more than {max_bytes} bytes")
            if out:
                yield out
            pending = inflater.unconsumed_tail
            if inflater.eof:
                break
        if not inflater.eof:
            raise ListingUnreadable("gzip_invalid", "the sitemap's gzip stream ends early")
        # RFC 1952 allows several members one after another.
        data = inflater.unused_data
        if data and not data.startswith(_GZIP_MAGIC):
            raise ListingUnreadable("gzip_invalid", "bytes after the sitemap's gzip stream")


def _screened(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """Refuse what the declaration scan could not see through, then scan every chunk.

    The scan reads bytes, so it is only sound for an ASCII-compatible encoding: a body
    must begin with "<" (after an optional UTF-8 BOM and whitespace) and hold no NUL,
    which turns away UTF-16/32 and EBCDIC (sitemaps are UTF-8 by protocol).
    """
    tail = b""
    first = True
    for chunk in chunks:
        if first:
            head = chunk[len(_BOM):] if chunk.startswith(_BOM) else chunk
            head = head.lstrip(_LEADING)
            if head and not head.startswith(b"<"):
                raise ListingUnreadable("xml_invalid", "the sitemap does not begin with '<' (or is not UTF-8)")
            first = not head
        if b"\x00" in chunk:
            raise ListingUnreadable("xml_invalid", "the sitemap holds a NUL byte (not UTF-8 XML)")
        # A declaration needs a "!": a one-byte search (memchr) for it spares the regex's
        # scan, and the copy into a window, for nearly every chunk.
        if b"!" in chunk or b"!" in tail:
            window = tail + chunk
            if _DECLARATION.search(window):
                raise ListingUnreadable("xml_declaration_refused",
                                        "the sitemap carries a DOCTYPE or an entity declaration (DISC-05, DISC-06)")
        tail = chunk[-_DECLARATION_OVERLAP:] if len(chunk) >= _DECLARATION_OVERLAP \
            else (tail + chunk)[-_DECLARATION_OVERLAP:]
        yield chunk


def _text(element) -> str | None:
    text = element.text or ""
    if len(element):
        # A comment or processing instruction inside <loc> splits its text.
        text += "".join(child.tail or "" for child in element)
    text = text.strip()
    return text or None


def _local(tag: str) -> tuple[str, str]:
    if tag[:1] == "{":
        namespace, _, local = tag[1:].partition("}")
        return namespace, local
    return "", tag


_PARSER_OPTIONS = dict(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


def _root_tag(chunks: Iterator[bytes], seen: list[bytes]) -> str | None:
    """The root element's tag, read by a throwaway pull parser from the first chunks.

    Knowing the root before the real parse lets that parse report one event in all (the
    root's start) instead of one per element, and refuse a foreign root (D-36) without
    building its tree. The chunks read are kept in `seen` for the real parse.
    """
    peek = etree.XMLPullParser(events=("start",), **_PARSER_OPTIONS)
    for chunk in chunks:
        seen.append(chunk)
        peek.feed(chunk)
        for _event, element in peek.read_events():
            return element.tag
    peek.close()   # raises XMLSyntaxError for an empty or truncated document
    return None


# A processing instruction fed just after the XML declaration (or first, without one). Its
# one "pi" event hands over the document, and so the root, without asking the parser for
# "start" events: those intercept every element's start (re-taking the GIL each time),
# which cost about a sixth of the whole parse. A PI in the prolog changes nothing the document
# says; the screen has already read the publisher's own bytes.
_MARKER = b"<?collection-sitemap?>"
_XML_DECLARATION = re.compile(rb"<\?xml[ \t\r\n][^<>]*\?>")

def _marked(head: bytes) -> bytes | None:
    """`head` with the marker PI where the prolog allows one, or None when unsure where."""
    start = len(_BOM) if head.startswith(_BOM) else 0
    if len(head) < start + 6:
        return None
    if head.startswith(b"<?xml", start):
        declaration = _XML_DECLARATION.match(head, start)
        if declaration is None:
            return None   # "<?xml-stylesheet", a broken declaration: the plain path decides
        start = declaration.end()
    return head[:start] + _MARKER + head[start:]


@lru_cache(maxsize=32)
def _xpath(namespace: str, path: str) -> etree.XPath:
    """`path` compiled with its names ("{url}", "{loc}") in the root's namespace, or in
    none; text comes back as plain str."""
    if not namespace:
        return etree.XPath(path.replace("{", "").replace("}", ""), smart_strings=False)
    return etree.XPath(re.sub(r"\{(\w+)\}", r"s:\1", path), namespaces={"s": namespace}, smart_strings=False)


def _field_paths(namespace: str, entry: str, field_name: str) -> tuple[etree.XPath, etree.XPath]:
    """XPaths to every child node of the last <field_name> of each <entry> child of the
    root, and of one entry alone (to take the incomplete last entry's share back out)."""
    return (_xpath(namespace, f"{{{entry}}}/{{{field_name}}}[last()]/node()"),
            _xpath(namespace, f"{{{field_name}}}[last()]/node()"))


def _bulk(root, entries: int, last, paths: tuple[etree.XPath, etree.XPath],
          optional: bool = False) -> list | None:
    """The stripped text of the last <field> of each entry child of the root, in order, read
    for the whole batch in C; None when that would not be what entry-by-entry reading gives.

    `entries` is how many complete entries the root holds. An XPath to the nodes inside
    each entry's last field returns text nodes as plain str and anything else (a comment,
    PI or element) as an object, which str.strip refuses. The parser merges adjacent text
    (CDATA, character and predefined entity references, text cut by a chunk boundary) into
    one node, so when every node found is a str each field holds at most one, and `entries`
    of them mean every entry's field holds exactly one. With `optional` (<lastmod>),
    finding none at all also holds: every value is None. Anything else (a missing or split
    field, an empty <loc>, a count that is off) returns None and the batch is read entry
    by entry. `last` is the incomplete entry after the batch, if any: its field (what of
    it has been read) comes last and is taken back out.
    """
    every, one = paths
    nodes = every(root)
    if last is not None:
        own = len(one(last))
        if own:
            del nodes[-own:]
    if not nodes and optional:
        return [None] * entries
    if len(nodes) != entries:
        return None
    try:
        values = list(map(str.strip, nodes))
    except TypeError:
        return None   # a node that is not text: str.strip takes nothing else
    if not all(values):
        if not optional:
            return None   # an empty <loc> is a dropped entry (D-27)
        values = [value or None for value in values]
    return values


def parse_sitemap(body: bytes, url: str = "", *, max_urls: int = MAX_SITEMAP_URLS,
                  max_bytes: int = MAX_SITEMAP_BYTES) -> ParsedListing:
    """A urlset's <url><loc>/<lastmod>, or a sitemapindex's <sitemap><loc>, in document order.

    ListingUnreadable for bytes that are not a readable sitemap; DiscoveryShapeError for a
    well-formed document whose root is neither urlset nor sitemapindex (D-36).
    """
    chunks = _screened(_decompressed(body, max_bytes))
    seen: list[bytes] = []
    try:
        root_tag = _root_tag(chunks, seen)
    except etree.XMLSyntaxError as exc:
        raise ListingUnreadable("xml_invalid", f"the sitemap is not well-formed XML: {exc}") from None
    if not isinstance(root_tag, str):
        raise ListingUnreadable("xml_invalid", "the sitemap has no root element")
    namespace, kind = _local(root_tag)
    if kind not in ("urlset", "sitemapindex"):
        raise DiscoveryShapeError(url, f"<{kind}>", "the sitemap root is neither <urlset> nor <sitemapindex>")
    # An entry and its fields are read in the root's own namespace (or none), so an
    # extension's <loc> (image:loc, video:player_loc) is never taken for a page.
    prefix = f"{{{namespace}}}" if namespace else ""
    entry_local = "url" if kind == "urlset" else "sitemap"
    entry_tag = prefix + entry_local
    loc_tag, lastmod_tag = prefix + "loc", prefix + "lastmod"
    is_urlset = kind == "urlset"
    loc_paths = _field_paths(namespace, entry_local, "loc")
    lastmod_paths = _field_paths(namespace, entry_local, "lastmod")
    count_entries = _xpath(namespace, f"count({{{entry_local}}})")

    # Columns of str, which the cyclic GC does not track; a sitemapindex needs no revisions.
    links: list[str] = []
    revisions: list[str | None] = []
    dropped: list[str] = []
    count = 0

    def take(elements) -> None:
        nonlocal count
        for element in elements:
            if element.tag != entry_tag:
                continue
            count += 1
            if count > max_urls:
                raise ListingUnreadable("sitemap_too_many_urls", f"the sitemap lists more than {max_urls} entries")
            loc = lastmod = None
            for child in element:
                tag = child.tag
                if tag == loc_tag:
                    loc = _text(child)
                elif tag == lastmod_tag:
                    lastmod = _text(child)
            if loc is None:
                dropped.append(f"entry {count}: no <loc>")  # D-27
            else:
                links.append(loc)
                revisions.append(lastmod)

    def take_batch(done: int, last) -> None:
        nonlocal count
        tail = last if last is not None and last.tag == entry_tag else None
        entries = done
        locs = _bulk(root, entries, tail, loc_paths)
        if locs is None:
            # A comment or a foreign element between entries need not cost the bulk read.
            entries = int(count_entries(root)) - (tail is not None)
            if entries != done:
                locs = _bulk(root, entries, tail, loc_paths)
        lastmods = None
        if locs is not None and is_urlset:
            lastmods = _bulk(root, entries, tail, lastmod_paths, optional=True)
        if locs is None or (is_urlset and lastmods is None):
            take(root[:done])
            return
        if count + entries > max_urls:
            raise ListingUnreadable("sitemap_too_many_urls", f"the sitemap lists more than {max_urls} entries")
        count += entries
        links.extend(locs)
        if lastmods is not None:
            revisions.extend(lastmods)

    marked = _marked(seen[0])
    if marked is not None:
        seen[0] = marked
        parser = etree.XMLPullParser(events=("pi",), **_PARSER_OPTIONS)
    else:
        parser = etree.XMLPullParser(events=("start",), tag=root_tag, **_PARSER_OPTIONS)
    anchor = root = None
    try:
        for chunk in _chain(seen, chunks):
            parser.feed(chunk)
            events = parser.read_events()
            if root is None:
                for _event, element in events:
                    if marked is None:
                        root = element
                    elif anchor is None:
                        anchor = element   # the marker: the first PI of all
                    break
                if anchor is not None:
                    # A fresh tree each time: an ElementTree fixes its root when made, and
                    # there is none until the root's start tag has been read.
                    root = anchor.getroottree().getroot()
            deque(events, maxlen=0)   # the document's own PIs (or nested roots): not wanted
            if root is not None:
                # Every child but the last is complete; read them and let them go, so the
                # tree never holds more than one chunk's entries.
                done = len(root) - 1
                if done > 0:
                    take_batch(done, root[done])
                    del root[:done]
        parser.close()
    except etree.XMLSyntaxError as exc:
        raise ListingUnreadable("xml_invalid", f"the sitemap is not well-formed XML: {exc}") from None
    if root is not None and len(root):
        take_batch(len(root), None)
    if is_urlset:
        return ParsedListing(tuple(links), (None,) * len(links), tuple(revisions), count, tuple(dropped), root=kind)
    return ParsedListing(record_count=count, dropped=tuple(dropped), children=tuple(links), root=kind)


def _chain(first: list[bytes], rest: Iterator[bytes]) -> Iterator[bytes]:
    yield from first
    yield from rest
