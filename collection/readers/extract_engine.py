"""Main-text extraction for `html.web_extract` (pure, one lxml tree, no third-party extractor).

`main_text(root)` returns the page's story: one paragraph, heading, list item ("- " first),
quote, table cell or code line per line, boilerplate left out. It prunes the tree it is given.

Three steps, each cheap enough to keep the whole Reader within a few times the parse:
1. Drop what is never story: scripts, styles, form controls, navigation, headers, footers,
   asides, figures. These drops run inside libxml2; only elements with a class, id, role or
   style reach Python, for step 2's name check.
2. Split the text into blocks (the nearest block-level ancestor of each text node) and
   score every ancestor container by the text of its paragraphs (long, few links) minus
   its link lists. The best container is the tightest one holding most of the paragraph
   text, so an article interrupted by ads or split over sibling divs is read whole while
   the page's link lists stay outside. Before scoring, elements named as boilerplate
   (class/id words such as comment, share, related, sidebar, cookie; ARIA roles such as
   navigation or dialog; hidden ones) are set aside unless they wrap the article itself.
3. Emit the container's blocks in document order, leaving out link lists, the <h1> (the
   title, which is its own column) and lines that only label an ad slot.

Every rule is about the shape of a page, never about a particular site, and nothing here
reads anything but the tree, so given bytes give the same story for as long as this file's
code is unchanged, which the Reader version pins.
"""

from __future__ import annotations

import re
from typing import Any

from lxml import etree

from collection.readers.text import BLOCK_TAGS, normalize_block

# Never story, wherever they are. `form` is not here: some sites wrap the whole page in one.
_DROP_TAGS = ("script", "style", "noscript", "template", "iframe", "svg", "math", "object", "embed", "canvas",
              "video", "audio", "map", "head", "title", "nav", "footer", "aside", "header", "button", "select",
              "input", "textarea", "label", "dialog", "menu", "figure", "figcaption", "picture", "img")
_BLOCK = BLOCK_TAGS | {"li", "pre", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "td", "th", "dd", "dt",
                       "figure", "figcaption", "section", "article", "main", "table", "tr", "ul", "ol", "dl",
                       "form", "fieldset", "address", "details", "summary", "hr", "br"}
_ROLES = {"navigation", "banner", "contentinfo", "complementary", "menu", "menubar", "search", "dialog",
          "alertdialog", "toolbar", "tablist", "button"}

# Words in a class or id that name boilerplate. Matched on the name's parts (split at
# non-letters and camelCase), so "articleComments" and "share-bar" hit but "shared" not.
_NEGATIVE_WORDS = frozenset("""
comment comments commentlist disqus respond reply replies share sharing sharebar social socials sociallinks
related recommended recommendations recommend outbrain taboola trending popular mostpopular mostread
newsletter newsletters subscribe subscription signup sign paywall promo promos promotion sponsored sponsor
cookie cookies consent gdpr banner breadcrumb breadcrumbs sidebar widget widgets advert advertisement ad ads
adslot adunit dfp popup modal overlay masthead menu navbar nav navigation footer header toolbar skip tags tag
tagline byline author authors meta metadata dateline timestamp caption credit credits print hidden hide
pagination pager prev next jump more readmore rail teaser teasers topics keywords disclaimer copyright
""".split())
_STRONG_WORDS = frozenset("cookie cookies consent gdpr".split())
# Names that say "this is the article body": never dropped on a negative word.
_POSITIVE = re.compile(r"article-?body|articlebody|story-?body|post-?body|entry-?content|post-?content|"
                       r"article-?content|story-?content|article-?text|body-?text|main-?content|content-?body",
                       re.I)
# Lines that label a slot rather than say anything (ad placeholders left in the text flow).
_LABELS = frozenset({"advertisement", "advert", "ad", "ads", "sponsored", "story continues below advertisement",
                     "article continues below advertisement", "continue reading below", "skip advertisement"})
_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_SPACE = re.compile(r"\s+")
_NAMED = ".//*[@class or @id or @role or @hidden or @aria-hidden or @style]"
# A link-dense block with at least this much other text is a paragraph full of links
# (or of link hover-cards), not a link list: kept, and only its link text counts against.
_KEEP = 100


def main_text(root: Any) -> str:
    body = root.find("body")
    if body is None:
        body = root
    etree.strip_elements(body, *_DROP_TAGS, with_tail=False)
    blocks = _blocks(body)
    if not blocks:
        return ""
    chains = _chains(body, blocks)
    # A name is a hint, not proof: "page-with-sidebar" or "ad-margins" may wrap the whole
    # article. So a weakly named element is kept when it holds the core: the element directly
    # holding the most paragraph text (readability's parent/grandparent vote), which is the
    # article body on nearly every page and rarely a teaser list, whose cards hold one each.
    # A dialog, a hidden element or a cookie notice is dropped whatever it holds.
    votes: dict = {}
    for block, (length, links) in blocks.items():
        if _is_good(length, links):
            for weight, element in zip((1.0, 0.5), chains[block][1:3]):
                votes[element] = votes.get(element, 0) + weight * (length - links)
    kept = set(chains.get(max(votes, key=votes.__getitem__), ())) if votes else set()
    removed = [element for element in body.xpath(_NAMED)
               if (strength := _is_boilerplate(element)) == 2 or (strength == 1 and element not in kept)]
    fitness = _fitness(blocks, chains, set(removed))
    for element in removed:  # document order, so the text left behind is the same every time
        if element.getparent() is not None:
            _remove_keep_tail(element)
    if not fitness:
        return ""
    return _emit(max(fitness, key=fitness.__getitem__), blocks)


def _fitness(blocks: dict, chains: dict, removed: set) -> dict:
    """Every container's good text minus its link text (see the module docstring, step 2)."""
    fitness: dict = {}
    for block, (length, links) in blocks.items():
        chain = chains[block]
        if removed and not removed.isdisjoint(chain):
            continue
        if _is_good(length, links):
            value = length - links
        elif links * 2 > length and length - links < _KEEP:
            value = -length  # a link list: navigation, related stories, tags
        else:
            value = -links  # a short line, or a long paragraph with many links: neutral but for its links
        for element in chain:
            fitness[element] = fitness.get(element, 0) + value
    return fitness


def _is_good(length: int, links: int) -> bool:
    """A paragraph: long enough to be prose, mostly not link text."""
    return length >= 80 and links * 3 < length


def _chains(body: Any, blocks: dict) -> dict:
    """Each block's ancestors up to `body`, itself first (shared tails memoised: pages nest deep)."""
    chains: dict = {body: (body,)}
    for block in blocks:
        pending = []
        element = block
        while element is not None and element not in chains:
            pending.append(element)
            element = element.getparent()
        tail = chains[element] if element is not None else ()
        for element in reversed(pending):
            tail = chains[element] = (element,) + tail
    return chains


def _is_boilerplate(element: Any) -> int:
    """2: surely boilerplate (a dialog, a cookie notice); 1: named like boilerplate; 0: no sign."""
    role = element.get("role")
    if role and role.strip().lower() in _ROLES:
        return 2
    if element.get("hidden") is not None or element.get("aria-hidden") == "true":
        return 1
    style = element.get("style")
    if style and "none" in style and _SPACE.sub("", style).lower().find("display:none") >= 0:
        return 2
    names = f"{element.get('class') or ''} {element.get('id') or ''}"
    if names == " " or element.tag in ("body", "html", "article", "main") or element.get("itemprop") == "articleBody":
        return 0
    strength = _NAMES.get(names)
    if strength is None:
        strength = _name_strength(names)
        if len(_NAMES) < 50_000:
            _NAMES[names] = strength
    return strength


# Pages repeat their class names ("menu-item", "col-md-6") across elements and pages, and a
# name's verdict depends on the name alone; bounded, so a hostile page cannot grow it forever.
_NAMES: dict[str, int] = {}


def _name_strength(names: str) -> int:
    if _POSITIVE.search(names):
        return 0
    parts = {part.lower() for part in _PARTS.findall(names)}
    if not parts.isdisjoint(_STRONG_WORDS):
        return 2
    return 1 if not parts.isdisjoint(_NEGATIVE_WORDS) else 0


def _remove_keep_tail(element: Any) -> None:
    parent = element.getparent()
    tail = element.tail
    if tail:
        previous = element.getprevious()
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(element)


def _block_of(text: Any) -> tuple[Any, bool]:
    """The nearest block-level element owning a text node, and whether the text is a link's."""
    element = text.getparent()
    if text.is_tail:  # a tail belongs to the element's parent, not to the element
        element = element.getparent()
    link = False
    while element is not None and element.tag not in _BLOCK:
        if element.tag == "a":
            link = True
        element = element.getparent()
    return element, link


def _blocks(body: Any) -> dict:
    """Block element -> [text length, link text length], lengths without surrounding whitespace."""
    blocks: dict = {}
    # Blocks inside a link (<a><h3>headline</h3></a>, card teasers) are link text too.
    linked = set(body.xpath(".//a//*"))
    for text in body.xpath(".//text()"):
        length = len(text.strip())
        if not length:
            continue
        block, link = _block_of(text)
        if block is None:
            continue
        if not link and linked and block in linked:
            link = True
        entry = blocks.get(block)
        if entry is None:
            entry = blocks[block] = [0, 0]
        entry[0] += length
        if link:
            entry[1] += length
    return blocks


def _emit(container: Any, blocks: dict) -> str:
    lines: list[str] = []
    current: list[str] = []
    owner = None
    for text in container.xpath(".//text()"):
        block, _ = _block_of(text)
        stats = blocks.get(block)
        # Left out: link lists inside the story (related links, tags, share bars), and the
        # <h1>, which is the page's title (its own column) rather than its story.
        if stats is None or (stats[1] * 2 > stats[0] and stats[0] - stats[1] < _KEEP) or block.tag == "h1":
            continue
        if block is not owner or (text.is_tail and text.getparent().tag == "br"):
            if block is not owner and not text.strip():
                continue  # whitespace before a block's first word is layout
            if current:
                lines.append("".join(current))
            current = ["- "] if block.tag == "li" and block is not owner else []
            owner = block
        current.append(text if block.tag == "pre" else _SPACE.sub(" ", text))
    if current:
        lines.append("".join(current))
    story = normalize_block("\n".join(lines))
    return "\n".join(line for line in story.split("\n") if line.lower() not in _LABELS)
