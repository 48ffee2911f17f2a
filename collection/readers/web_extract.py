"""`html.web_extract` 1.1.0: one row per page — title, story and the chosen metadata (pure).

`story` is the page's main text with block structure kept (one paragraph, heading, list
item, quote or code block per line) and boilerplate removed. When the engine finds no story
on a page that shows text, the page fails with `story_not_found` rather than giving a row
whose empty story looks like success (docs/readers.md). Unless the options name a
`story` selector, the engine is our own (extract_engine.py): on the article-extraction set
(bench/extraction.py) it scores above trafilatura's defaults at a few times the cost of the
parse, and because its rules live in this repository the same bytes give the same story
for as long as the Reader version stays 1.1.0, with no third-party release to pin.

Title and metadata are our own, from the page's declared metadata (Open Graph, meta
names, JSON-LD, <time>, <link rel=canonical>, <html lang>), so they are exact and cheap.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Iterator, Mapping
from urllib.parse import urljoin

from collection.readers.base import ReaderFailure, Rows, reader
from collection.readers.extract_engine import main_text, shows_text
from collection.readers.text import block_text, inline_text, normalize, normalize_block, parse_html
from collection.readers.selectors import compile_selector

FAMILY_ID = "html.web_extract"

# Metadata found in <meta>: (attribute, value) pairs in order of preference.
_META = {
    "title": (("property", "og:title"), ("name", "twitter:title"), ("name", "dc.title")),
    "published_at": (("property", "article:published_time"), ("itemprop", "datePublished"),
                     ("name", "article:published_time"), ("name", "date"), ("name", "pubdate"),
                     ("name", "publishdate"), ("name", "dc.date.issued"), ("name", "dcterms.created"),
                     ("name", "sailthru.date"), ("property", "og:published_time")),
    "modified_at": (("property", "article:modified_time"), ("itemprop", "dateModified"),
                    ("property", "og:updated_time"), ("name", "last-modified"), ("name", "dcterms.modified")),
    "author": (("name", "author"), ("property", "article:author"), ("name", "dc.creator"),
               ("name", "sailthru.author"), ("name", "byl"), ("itemprop", "author")),
    "description": (("name", "description"), ("property", "og:description"), ("name", "twitter:description"),
                    ("name", "dc.description")),
    "canonical_url": (("property", "og:url"),),
    "language": (("http-equiv", "content-language"), ("name", "language"), ("name", "dc.language")),
}
_JSON_LD = {"title": ("headline", "name"), "published_at": ("datePublished", "dateCreated"),
            "modified_at": ("dateModified",), "author": ("author", "creator"), "description": ("description",),
            "canonical_url": ("url", "mainEntityOfPage"), "language": ("inLanguage",)}
_ARTICLE_TYPES = {"article", "newsarticle", "blogposting", "reportagenewsarticle", "analysisnewsarticle",
                  "webpage", "report", "scholarlyarticle", "techarticle", "opinionnewsarticle", "legislation"}


@reader(FAMILY_ID)
def read(options: Mapping[str, Any], body: bytes, content_type: str, url: str) -> Rows:
    root = parse_html(body, content_type)
    selectors = options.get("selectors", {})
    metadata = tuple(options.get("metadata", ()))
    values: dict[str, str] = {}
    head = _Declared(root)
    meta = head.meta
    ld = _JsonLd(head.scripts)
    for name in ("title", *metadata):
        if name in selectors:
            values[name] = _by_selector(root, selectors[name], name, url)
        else:
            values[name] = _found(root, head, ld, name, url)
    # The story comes last: the engine prunes the tree it is given.
    if "story" in selectors:
        matches = compile_selector(selectors["story"]).select(root)
        values["story"] = normalize_block("\n".join(block_text(element) for element in _outermost(matches)))
    else:
        values["story"] = main_text(root)
        if not values["story"] and shows_text(parse_html(body, content_type)):
            raise ReaderFailure("story_not_found", "the page shows text, but none of it reads as the page's story "
                                                   "(only navigation, headings, link lists or boilerplate)")
    return ((values["title"], values["story"], *(values[name] for name in metadata)),)


def _outermost(elements: list) -> Iterable:
    """Matches not inside another match, so a nested match is not read twice."""
    chosen = set()
    for element in elements:
        if not any(ancestor in chosen for ancestor in element.iterancestors()):
            chosen.add(element)
            yield element


def _value(element: Any, name: str, url: str) -> str:
    """What an element says for a field: meta content, link href, time datetime, else its text."""
    tag = element.tag.lower() if isinstance(element.tag, str) else ""
    if tag == "meta":
        text = normalize(element.get("content"))
    elif name == "canonical_url" and element.get("href") is not None:
        text = normalize(element.get("href"))
    elif name in ("published_at", "modified_at") and element.get("datetime") is not None:
        text = normalize(element.get("datetime"))
    elif name == "language" and element.get("lang") is not None:
        text = normalize(element.get("lang"))
    else:
        text = inline_text(element)
    if name == "canonical_url" and text:
        text = _absolute(url, text)
    return text


def _absolute(base: str, reference: str) -> str:
    try:
        return urljoin(base, reference) if base else reference
    except ValueError:
        return reference


def _by_selector(root: Any, selector: str, name: str, url: str) -> str:
    for element in compile_selector(selector).select(root):
        text = _value(element, name, url)
        if text:
            return text
    return ""


class _Declared:
    """The elements metadata is read from (<meta>, <link>, <title>, <time>, <script>), each kind in document
    order, found in one walk: each walk over a parsed page costs about a tenth of the parse."""

    def __init__(self, root: Any) -> None:
        self.meta: dict[tuple[str, str], str] = {}
        self.links: list = []
        self.titles: list = []
        self.times: list = []
        self.scripts: list = []
        for element in root.iter("meta", "link", "title", "time", "script"):
            tag = element.tag
            if tag == "meta":
                content = normalize(element.get("content"))
                if not content:
                    continue
                for attribute in ("property", "name", "itemprop", "http-equiv"):
                    key = element.get(attribute)
                    if key:
                        self.meta.setdefault((attribute, key.strip().lower()), content)
            elif tag == "link":
                self.links.append(element)
            elif tag == "title":
                self.titles.append(element)
            elif tag == "time":
                self.times.append(element)
            else:
                self.scripts.append(element)


def _found(root: Any, head: _Declared, ld: _JsonLd, name: str, url: str) -> str:
    meta = head.meta
    for key in _META.get(name, ()):
        value = meta.get(key)
        if value and not (name == "author" and value.startswith(("http://", "https://"))):
            return _absolute(url, value) if name == "canonical_url" else value
    if name == "canonical_url":
        for link in head.links:
            if "canonical" in (link.get("rel") or "").lower().split() and normalize(link.get("href")):
                return _absolute(url, normalize(link.get("href")))
    if name == "language":
        lang = normalize(root.get("lang") or root.get("{http://www.w3.org/XML/1998/namespace}lang"))
        if lang:
            return lang
    declared = _json_ld_value(ld, name)
    if declared:
        return _absolute(url, declared) if name == "canonical_url" else declared
    if name == "title":
        for element in head.titles:
            # An inline <svg>'s <title> names an icon, not the page.
            if any(ancestor.tag in ("svg", "math") for ancestor in element.iterancestors()):
                continue
            text = inline_text(element)
            if text:
                return text
        for element in root.iter("h1"):
            text = inline_text(element)
            if text:
                return text
    if name in ("published_at", "modified_at"):
        for element in head.times:
            if element.get("datetime") and (name == "published_at" or "updated" in (element.get("class") or "")):
                return normalize(element.get("datetime"))
    if name == "author":
        for element in root.iter("a", "span", "div", "p"):
            # (Its attribute names first: most elements have neither, and each get costs a string.
            # An XPath doing the same inside libxml2 takes three times as long.)
            keys = element.keys()
            if keys and ("rel" in keys and "author" in (element.get("rel") or "").split()
                         or "itemprop" in keys and element.get("itemprop") == "author"):
                text = inline_text(element)
                if text:
                    return text
    return ""


def _json_ld_objects(scripts: list) -> Iterable[dict]:
    for script in scripts:
        if (script.get("type") or "").strip().lower() != "application/ld+json" or not script.text:
            continue
        try:
            data = json.loads(script.text)
        except ValueError:
            continue
        stack = [data]
        while stack:
            item = stack.pop(0)
            if isinstance(item, list):
                stack.extend(item)
            elif isinstance(item, dict):
                yield item
                if isinstance(item.get("@graph"), list):
                    stack.extend(item["@graph"])


class _JsonLd:
    """A page's JSON-LD objects, each script parsed once however many fields look (and only as far as
    a field needs: the objects are read lazily, in document order, and remembered)."""

    def __init__(self, scripts: list) -> None:
        self._pending = _json_ld_objects(scripts)
        self._seen: list[dict] = []

    def __iter__(self) -> Iterator[dict]:
        index = 0
        while True:
            if index == len(self._seen):
                item = next(self._pending, None)
                if item is None:
                    return
                self._seen.append(item)
            yield self._seen[index]
            index += 1


def _json_ld_value(ld: _JsonLd, name: str) -> str:
    for item in ld:
        types = item.get("@type")
        types = {str(t).lower() for t in (types if isinstance(types, list) else [types])}
        if not types & _ARTICLE_TYPES:
            continue
        for key in _JSON_LD.get(name, ()):
            text = _ld_text(item.get(key))
            if text:
                return text
    return ""


def _ld_text(value: Any) -> str:
    if isinstance(value, str):
        return normalize(value)
    if isinstance(value, dict):
        return _ld_text(value.get("name") or value.get("@id") or value.get("url"))
    if isinstance(value, list):
        names = [_ld_text(item) for item in value]
        return ", ".join(name for name in names if name)
    return ""
