"""Main-text extraction for `html.web_extract` (pure, one lxml tree, no third-party extractor).

`main_text(root)` returns the page's story: one paragraph, heading, list item ("- " first),
quote, table cell, caption or code line per line, boilerplate left out. It prunes the tree it
is given (the drops of step 1; what step 2 sets aside is skipped while emitting). `shows_text(root)` says whether a page's body shows any text at all, so a story that
comes out empty can be told from a page that says nothing.

Three steps, each cheap enough to keep the whole Reader within a few times the parse:
1. Drop what is never story: scripts, styles, raw-text elements (noframes, noembed, xmp),
   form controls, navigation, headers, footers, asides, images. These drops run inside
   libxml2. (A <header> or <footer> holding two thirds of the page's text is read as a <div>:
   libxml2 knows no HTML5 elements, and nests the rest of a page in one a template left open.)
   Then one walk over the tree in Python gives every text its block and lists the elements
   step 2 looks at: every further walk costs about a tenth of the parse.
2. Split the text into blocks (the nearest block-level ancestor of each text node) and give
   each a value: prose counts for itself (a long paragraph with few links, or a short one
   shaped like a sentence: several words and a full stop, so a two-line notice or a
   Japanese paragraph counts as well as a long English one), a fact (a table cell, a
   definition, a list item, a caption without links) for half of itself, a link list
   against itself, anything else (headings, labels) nothing but its links. A link to a
   document (a PDF, a spreadsheet) is content, not a link. Every ancestor container scores
   the sum of its blocks; the best is the tightest one holding most of the value, so an
   article interrupted by ads or split over sibling divs is read whole while the page's link
   lists stay outside. A `<main>` holding most of it bounds the choice. Before scoring,
   elements named as boilerplate (class/id words such as comment, share, related, sidebar,
   cookie, feedback; ARIA roles such as navigation or dialog; hidden ones), short forms
   (search, newsletter, "was this page useful?") and teaser grids (two or more cards under
   one parent, each led by a linked headline) are set aside unless they hold the page's
   core: the element directly holding the most prose, where prose inside something named
   as boilerplate counts a tenth (a third where the element holds an article's worth), so a
   short notice beats the long comments under it but a blog post inside "widget Blog" beats
   the blog's one-paragraph description. What follows a heading that announces comments
   ("Comments", "12 Responses", "Leave a reply") is named as boilerplate however the page
   names it. When the core holds nine tenths of the best container's value, the core is the
   container (the rest is a bio or a teaser beside the article).
   A dialog, a `display:none` element or a cookie notice (by name, or any small box with a
   button that asks for consent to cookies) is dropped whatever it holds. An element named as
   one blog post (hentry, type-post, entry-<id>) is never boilerplate by its other class words
   (the post's taxonomy: author-x, category-y), and the elements around a core of several
   paragraphs damp nothing (Blogger wraps its posts in "widget Blog"). A class word that runs
   a chrome word into others ("sectionheaderbar") names boilerplate like the word alone.
   Issue 27: D-78, D-79, D-82.
3. Emit the container's blocks in document order, leaving out link lists, the <h1> (the
   title, which is its own column), captions beside an article's paragraphs and lines that
   only label an ad slot. When no block has any value (a page that is only a heading and a
   list of plain links), the container is the page's `<main>`, else its body.

Every rule is about the shape of a page, never about a particular site, and nothing here
reads anything but the tree, so given bytes give the same story for as long as this file's
code is unchanged, which the Reader version pins.
"""

from __future__ import annotations

import re
from typing import Any

from lxml import etree

from collection.readers.text import BLOCK_TAGS, normalize

# Never shown, or shown as literal markup: dropped before anything looks at the text.
_INVISIBLE = ("script", "style", "noscript", "template", "head", "title", "noframes", "noembed", "xmp")
# Never story, wherever they are. `form` is not here: some sites wrap the whole page in one.
_DROP_TAGS = ("iframe", "svg", "math", "object", "embed", "canvas", "video", "audio", "map", "nav", "footer",
              "aside", "header", "button", "select", "input", "textarea", "label", "dialog", "menu", "picture", "img")
_BLOCK = BLOCK_TAGS | {"li", "pre", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "td", "th", "dd", "dt",
                       "figure", "figcaption", "section", "article", "main", "table", "tr", "ul", "ol", "dl",
                       "form", "fieldset", "address", "details", "summary", "hr", "br", "caption"}
# Blocks that carry facts in a few words: a cell, a definition, a list item, a caption.
_FACTS = frozenset({"td", "th", "dd", "dt", "li", "summary", "caption", "figcaption", "address", "legend"})
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
pagination pager prev next jump readmore rail teaser teasers topics keywords disclaimer copyright
feedback survey helpful rating onetrust cookiebot
""".split())
_STRONG_WORDS = frozenset("cookie cookies consent gdpr onetrust cookiebot".split())
# Names that say "this is the article body": never dropped on a negative word.
_POSITIVE = re.compile(r"article-?body|articlebody|story-?body|post-?body|entry-?content|post-?content|"
                       r"article-?content|story-?content|article-?text|body-?text|main-?content|content-?body",
                       re.I)
# Names of an article's information line (CMS "article-info": author, category, hits).
_NEGATIVE_NAMES = re.compile(r"article-?info|^[a-z]*(?:header|footer|sidebar|navbar|toolbar|masthead|breadcrumb)[a-z]*$")
# Lines that label a slot rather than say anything (ad placeholders left in the text flow).
_LABELS = frozenset({"advertisement", "advert", "ad", "ads", "sponsored", "story continues below advertisement",
                     "article continues below advertisement", "continue reading below", "skip advertisement"})
_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_SPACE = re.compile(r"\s+")
# Attributes that can name an element as boilerplate (or as the page's main part).
_MARKS = frozenset(("class", "id", "role", "hidden", "aria-hidden", "style"))
_MARKS_BUT_CLASS = _MARKS - {"class"}
# A link-dense block with at least this much other text is a paragraph full of links
# (or of link hover-cards), not a link list: kept, and only its link text counts against.
_KEEP = 100
# A paragraph this long (in Latin letters' worth, see _weight) is prose without further evidence.
_PROSE = 80
# Scripts whose one character carries about what three Latin letters do (CJK ideographs,
# kana, Hangul, full-width forms), so 80 characters of Japanese weigh like a long paragraph.
_WIDE = re.compile("[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")
_SENTENCE_END = frozenset(".!?\u3002\uff01\uff1f\u2026")
_CLOSERS = "\"')]\u00bb\u201d\u2019\u300d\u300f\uff09"
# A link to a document is the page's payload (a list of minutes, an attachment), not navigation.
_DOCUMENT = re.compile(r"\.(?:pdf|docx?|xlsx?|od[tsp]|pptx?|csv|rtf|zip)(?:[?#]|$)", re.I)
# Prose inside an element named as boilerplate counts this much toward the core (per name).
_DAMP = 0.1
# A form with less text than this is a widget (search, newsletter, "was this page useful?").
_WIDGET_FORM = 200
# A teaser card holds a headline and a summary, not an article.
_CARD = 600
# Share of the container's value the core holds that makes the core the container.
_TIGHT = 0.9
# Prose held directly by one element that makes it an article's body rather than a box's blurb.
_ARTICLE = 500
# Block tags the walk collects: landmarks (the <h1> and <main> anchor the story; a <form> may be a widget)
# and the headings that may lead teaser cards.
_LANDMARKS = frozenset(("form", "h1", "main"))
_HEADINGS = frozenset(("h2", "h3", "h4", "h5", "h6"))
# An element's whole text (what lxml.html's text_content() is; the tree's elements are plain etree ones).
_string = etree.XPath("string()")


def _body(root: Any) -> Any:
    """The page's <body>, else the document element. (lxml's find() parses its path in Python each time:
    a child iterator with a tag asks libxml2 alone.)"""
    return next(root.iterchildren("body"), root)


def shows_text(root: Any) -> bool:
    """Whether the page's body shows any text at all (scripts, styles and raw-text elements aside).
    Asked of a fresh tree only when the story comes out empty, so it costs nothing on other pages."""
    body = _body(root)
    etree.strip_elements(body, *_INVISIBLE, with_tail=False)
    return any(text.strip() and normalize(text) for text in body.itertext())  # stops at the first word


def main_text(root: Any) -> str:
    body = _body(root)
    etree.strip_elements(body, *_INVISIBLE, etree.Comment, etree.ProcessingInstruction, with_tail=False)
    # One walk finds the controls (for consent banners) and the headers and footers (for _unwrap).
    found = list(body.iter("button", "input", "header", "footer"))
    strength = _cookie_boxes([element for element in found if element.tag in ("button", "input")])
    _unwrap([element for element in found if element.tag in ("header", "footer")], body)
    etree.strip_elements(body, *_DROP_TAGS, with_tail=False)
    blocks, marked, landmarks, headings = _walk(body)
    if not blocks:
        return ""
    mains = []
    for element, keys, names in marked:
        level = _is_boilerplate(element, keys, names)
        if level:
            strength.setdefault(element, level)
        elif "role" in keys and element.get("role") == "main":
            mains.append(element)
    anchors = []
    for element in landmarks:
        if element.tag != "form":
            anchors.append(element)
        elif element not in strength and _weight(_string(element)) < _WIDGET_FORM:
            strength[element] = 1
    for grid in _teaser_grids(headings, blocks):
        strength.setdefault(grid, 1)
    for element in _comment_sections(headings):
        strength.setdefault(element, 1)
    # A boilerplate name around the page's <h1> or <main> names the layout ("with-sidebar",
    # "sticky-sidebar"), not a box beside the story: it does not damp.
    for anchor in anchors[:8]:  # the page's own few; a hostile page may nest thousands
        for element in anchor.iterancestors():
            if strength.get(element) == 1:
                del strength[element]
    chains, damp, order = _chains(body, blocks, strength)
    values = {block: _value(block, stats) for block, stats in blocks.items()}
    # A name is a hint, not proof: "page-with-sidebar" or "ad-margins" may wrap the whole
    # article. So a weakly named element is kept when it holds the core: the element directly
    # holding the most prose (readability's parent/grandparent vote), which is the article
    # body on nearly every page. Inside something named as boilerplate every value counts a
    # tenth, so comments or teasers longer than a short notice do not outvote it.
    # An element directly holding an article's worth of prose (_ARTICLE) is damped less, by the square
    # root (a third per name): a blog post inside "widget Blog" outvotes the blog's one-paragraph
    # description, while a short notice still outvotes the cards and comments below it.
    votes: dict = {}
    prose: dict = {}
    for block, value in values.items():
        if value > 0:
            for element in chains[block][1:2]:
                prose[element] = prose.get(element, 0) + value
    for block, value in values.items():
        if value > 0:
            for weight, element in zip((1.0, 0.5), chains[block][1:3]):
                factor = damp[block]
                if factor < 1 and prose.get(element, 0) >= _ARTICLE:
                    factor **= 0.5
                votes[element] = votes.get(element, 0) + weight * value * factor
    core = max(votes, key=votes.__getitem__) if votes else None
    kept = set(chains.get(core, ()))
    # What holds a core of several paragraphs is not boilerplate, whatever its name ("widget Blog"
    # around a Blogger post): it damps nothing, so the story is not outscored by a sidebar that merely
    # has no name. (A short core may be a newsletter box's blurb: that one stays damped.)
    undamped = [element for element in kept if strength.get(element) == 1] if prose.get(core, 0) >= _ARTICLE else []
    if undamped:
        for element in undamped:
            del strength[element]
        chains, damp, order = _chains(body, blocks, strength)
    dropped = {element for element, level in strength.items() if level == 2}
    fitness = _fitness(values, chains, damp, order, dropped)
    main = next((element for element in anchors if element.tag == "main"), mains[0] if mains else None)
    container = _container(body, main, fitness, chains)
    # The tightest holder of the story: when the core (directly holding an article's worth of prose) has
    # nine tenths of its container's value, the rest is an author's bio or a teaser beside the article.
    if (prose.get(core, 0) >= _ARTICLE and container in chains.get(core, ())
            and fitness.get(core, 0) >= _TIGHT * fitness.get(container, 0) > 0):
        container = core
    around = set(chains.get(container, ()))
    removed = {element for element, level in strength.items()
               if level == 2 or (level == 1 and element not in kept and element not in around)}
    # A caption describes a picture: beside an article's paragraphs it is an aside (and no
    # article-extraction truth keeps it); on a page that is mostly the picture it is the story.
    captions = not any(stats[0] >= _PROSE and stats[1] * 3 < stats[0] and block.tag != "figcaption"
                       and container in chains[block] for block, stats in blocks.items())
    return _emit(container, blocks, captions, removed)


def _unwrap(landmarks: list, body: Any) -> None:
    """A <header> or <footer> holding most of the page's text is neither: libxml2, which knows no HTML5
    elements, nests the rest of the page inside one that a template left open. It is read as a <div>
    rather than dropped with the story in it. (An <aside> or <nav> holding most of it is left alone: a
    long sidebar beside a short post is one.)"""
    whole = None
    for element in landmarks:
        length = len(_string(element))
        if length >= _ARTICLE:
            if whole is None:
                whole = len(_string(body))
            if length * 3 >= whole * 2:
                element.tag = "div"


def _container(body: Any, main: Any, fitness: dict, chains: dict) -> Any:
    """The best container (see the module docstring, step 2), bounded by the page's <main>."""
    best = max(fitness, key=fitness.__getitem__) if fitness else None
    if best is None or fitness[best] <= 0:
        return main if main is not None and main.getparent() is not None else body
    if main is not None and fitness.get(main, 0) * 2 >= fitness[best] and main not in chains[best]:
        inside = [element for element in fitness if main in chains[element]]
        if inside:
            return max(inside, key=fitness.__getitem__)
    return best


# A box that says "cookie" is a consent banner only if it also asks for consent ("Chocolate chip
# cookies" beside a Print button is a recipe).
_CONSENT = re.compile(r"accept|agree|consent|allow|reject|polic|privacy|setting|preference|\buses?\b|"
                      r"akzept|zustimm|einverstanden|datenschutz|accepter|refuser|aceptar|rechazar|accett|rifiut")


def _cookie_boxes(controls: list) -> dict:
    """A box with a button that asks about cookies is a consent banner, whatever its name:
    the button's own box, or the one around its button group (never a bigger one, so a short
    page that merely holds the banner is not taken for it)."""
    found: dict = {}
    seen = set()  # each box's text is read once, however many buttons share it (a hostile page has thousands)
    for control in controls:
        if control.tag == "input" and control.get("type") not in ("button", "submit"):
            continue
        box = control.getparent()
        for _ in range(2):
            if box is None or box in seen:
                break
            seen.add(box)
            text = _string(box)
            if len(text) > 1000:
                break
            lowered = text.lower()
            if "cookie" in lowered and _CONSENT.search(lowered):
                found[box] = 2
                break
            box = box.getparent()
    return found


def _teaser_grids(headings: list, blocks: dict) -> list:
    """Parents of two or more teaser cards: a card is led by a headline linking elsewhere (`headings`: the
    page's <h2>-<h6>, in document order)."""
    cards: dict = {}
    for block in headings:
        length, links, *_ = blocks.get(block) or (0, 0)
        if links < length or not length:
            continue
        parent = block.getparent()
        link = parent if parent is not None and parent.tag == "a" else block.find(".//a")
        if link is None or (link.get("href") or "#").startswith("#"):
            continue
        card = parent.getparent() if parent is not None and parent.tag == "a" else parent
        if card is None or card.getparent() is None:
            continue
        cards.setdefault(card.getparent(), []).append(card)
    return [grid for grid, members in cards.items()
            if len(members) >= 2 and all(_weight(_string(card)) < _CARD for card in members)]


# A heading that announces readers' comments ("Comments", "12 Responses", "Leave a reply"), in a few languages.
_COMMENTS_HEADING = re.compile(
    r"(?:\d+\s+|reader\s+)?(?:comments?|responses?|replies|kommentare?|commentaires?|comentarios?|commenti)"
    r"(?:\s*\(\d+\))?|(?:leave|post|add|write|submit)\s+(?:a|your)\s+(?:comment|reply|response)", re.I)


def _comment_sections(headings: list) -> list:
    """What follows a heading that announces comments, up to the end of its parent: each element after it
    is named as boilerplate (the heading itself, too), however the page names them (an unnamed <div>
    per comment under "COMMENTS"). Its parent is not: it may hold the article above the heading."""
    found = []
    for heading in headings:
        text = _string(heading).strip().rstrip(":.").strip()
        if len(text) < 40 and _COMMENTS_HEADING.fullmatch(text):
            found.append(heading)
            # A heading alone in its box (<div class="commentform"><h2>Comments</h2></div>) announces what
            # follows the box: up to three such boxes are climbed.
            section = heading
            for _ in range(3):
                parent = section.getparent()
                if section.getnext() is not None or parent is None or parent.getparent() is None:
                    break
                section = parent
            found.extend(section.itersiblings())
    return found


def _weight(text: str) -> int:
    """Length in Latin letters' worth: a CJK or Hangul character counts three."""
    length = len(text.strip())
    if length and not text.isascii():
        length += 2 * len(_WIDE.findall(text))
    return length


def _value(block: Any, stats: list) -> float:
    """What a block adds to its containers (see the module docstring, step 2)."""
    length, links, last, spaced, document = stats
    if links * 2 > length and length - links < _KEEP:
        return -length  # a link list: navigation, related stories, tags
    if length >= _PROSE and links * 3 < length or links * 2 <= length and _is_sentence(last, length, spaced):
        return length - links
    if links * 3 < length and (document or block.tag in _FACTS and (spaced or _has_figure(last))):
        return (length - links) / 2
    return -links  # a heading, a label, a long paragraph with many links: neutral but for its links


def _has_figure(text: str) -> bool:
    """A fact of one word carries a figure ("£48.00", "06:42") or is in a script without spaces;
    a lone token of letters ("Monday", "landscape-tablet") is a label."""
    return not text.isascii() or any(character.isdigit() for character in text)


def _is_sentence(last: str, length: int, spaced: bool) -> bool:
    """Several words ending in a full stop, question or exclamation mark (in any script)."""
    if length < 12:
        return False
    end = last.rstrip().rstrip(_CLOSERS)
    if not end or end[-1] not in _SENTENCE_END:
        return False
    return spaced or _WIDE.search(last) is not None


def _chains(body: Any, blocks: dict, strength: dict) -> tuple[dict, dict, list]:
    """Each block's ancestors up to `body`, itself first (shared tails memoised: pages nest
    deep); each element's damping: _DAMP for every ancestor named as boilerplate; and the
    elements in the order the blocks first reach them (each block, then its new ancestors
    upward; the body last), which is the order ties between containers are settled in."""
    chains: dict = {body: (body,)}
    damp: dict = {body: 1.0}
    order: list = []
    for block in blocks:
        pending = []
        element = block
        while element is not None and element not in chains:
            pending.append(element)
            element = element.getparent()
        order.extend(pending)
        tail = chains[element] if element is not None else ()
        factor = damp[element] if element is not None else 1.0
        for element in reversed(pending):
            tail = chains[element] = (element,) + tail
            if strength.get(element) == 1:
                factor *= _DAMP
            damp[element] = factor
    order.append(body)
    return chains, damp, order


def _fitness(values: dict, chains: dict, damp: dict, order: list, dropped: set) -> dict:
    """Every container's summed block values, damped inside boilerplate names (module docstring,
    step 2); nothing inside a dropped element counts or is a candidate. Summed bottom-up once:
    `chains` lists ancestors before descendants, so its reverse takes children first."""
    fitness = dict.fromkeys(order, 0.0)
    for block, value in values.items():
        fitness[block] += value * damp[block]
    for element, chain in reversed(chains.items()):
        if len(chain) > 1 and element not in dropped:
            fitness[chain[1]] += fitness[element]
    if dropped:
        # Top-down, so each element asks only its parent (a chain is as long as the page is deep).
        inside = set()
        for element, chain in chains.items():
            if element in dropped or len(chain) > 1 and chain[1] in inside:
                inside.add(element)
        for element in inside:
            del fitness[element]
    return fitness


def _is_boilerplate(element: Any, keys: list, names: str | None = None) -> int:
    """2: surely boilerplate (a dialog, a cookie notice); 1: named like boilerplate; 0: no sign.
    `keys` are the element's attribute names; `names` its class when that is its only mark (_MARKS),
    as _walk read it (each attribute read costs as much as the rest of this check)."""
    if names is None:
        if "role" in keys:
            role = element.get("role")
            if role and role.strip().lower() in _ROLES:
                return 2
        if "hidden" in keys or "aria-hidden" in keys and element.get("aria-hidden") == "true":
            return 1
        if "style" in keys:
            style = element.get("style")
            if style and "none" in style and _SPACE.sub("", style).lower().find("display:none") >= 0:
                return 2
        # (An attribute the element lacks is not asked for. A class alone is its own key: its words'
        # verdict is the same with or without the id's empty words.)
        names = element.get("class") or "" if "class" in keys else ""
        if "id" in keys:
            names = f"{names} {element.get('id') or ''}"
    strength = _NAMES.get(names)
    if strength is None:
        strength = _name_strength(names) if names.strip() else 0
        if len(_NAMES) >= _REMEMBER:
            _NAMES.clear()
        _NAMES[names] = strength
    if strength and (element.tag in ("body", "html", "article", "main")
                     or "itemprop" in keys and element.get("itemprop") == "articleBody"):
        return 0
    return strength


# Pages repeat their class names ("menu-item", "col-md-6") across elements and pages, and a
# name's verdict depends on the name alone; bounded, so a hostile page cannot grow it forever
# (emptied when full, so a long run of pages keeps its hits instead of missing on every new name).
_NAMES: dict[str, int] = {}
# The same per whitespace-separated word of a name: ids are often unique ("post-4711 comment-9"),
# their words are not.
_WORDS: dict[str, int] = {}
_REMEMBER = 50_000
_DIGIT = re.compile(r"\d")


# Class words that name one post of a blog or CMS (hAtom's `hentry`, WordPress's `post_class()` and
# Typepad's `entry entry-<id>`): such an element is the article, and the taxonomy its class list also
# carries ("author-matt", "category-news", "entry-author-x", "tag-y") names the post's metadata, not a box
# beside it.
_POST = re.compile(r"(?:^|\s)(?:h-?entry|type-post|(?:post|entry)(?:-[0-9a-f]{3,})?)(?=\s|$)", re.I)


def _name_strength(names: str) -> int:
    """0 when any word of the names says article or post; else 2 when a word's part is a strong
    word (cookie, consent), 1 when one is a negative word; else 0. No pattern above matches
    across whitespace, so the verdict is the words' verdicts combined, and each word's is remembered."""
    strength = 0
    for word in names.split():
        verdict = _WORDS.get(word)
        if verdict is None:
            # A word's verdict does not depend on which digits it holds ("post-4711", "comment-98"), so
            # unique ids share the verdict of their shape.
            shape = _DIGIT.sub("0", word)
            verdict = _WORDS.get(shape)
            if verdict is None:
                verdict = _word_strength(shape)
            if len(_WORDS) >= _REMEMBER:
                _WORDS.clear()
            _WORDS[word] = _WORDS[shape] = verdict
        if verdict == 3:
            return 0
        if verdict > strength:
            strength = verdict
    return strength


def _word_strength(word: str) -> int:
    """3: names an article or a post; 2: a strong boilerplate word; 1: a boilerplate word; 0: none."""
    if _POSITIVE.search(word) or _POST.search(word):
        return 3
    parts = {part.lower() for part in _PARTS.findall(word)}
    if not parts.isdisjoint(_STRONG_WORDS):
        return 2
    return 1 if not parts.isdisjoint(_NEGATIVE_WORDS) or _NEGATIVE_NAMES.search(word) else 0


def _walk(body: Any) -> tuple[dict, list, list, list]:
    """The page's blocks, and (in document order) the elements below `body` with an attribute that can name
    them (_MARKS; each with its attribute names and, when its class is its only mark, the class), its <form>,
    <h1> and <main> elements, and its <h2>-<h6>: one walk over the tree, since
    every further walk costs about a tenth of the parse however little it does at each element.

    Blocks: block element -> [weight, link weight, last text, whether any text had a space, whether it
    links a document]. A text belongs to the nearest block-level element holding it (a tail to its
    element's parent's), and is a link's when an `<a>` lies between (a document's link counts as content)
    or a link holds the block (<a><h3>headline</h3></a>, card teasers). Each open element's answer is kept
    on a stack, where asking per text node would climb the tree each time."""
    blocks: dict = {}
    marked: list = []
    landmarks: list = []
    headings: list = []
    # Per open element: (its text's block, link kind 0/1/2, whether it is inside a link); the first entry
    # stands for the parent of `body`. An inline element shares its parent's entry.
    stack: list = [(None, 0, False)]
    # (Hot loop: every name it uses is a local, and a text with no letters costs two tests.)
    push, pop, entry_of = stack.append, stack.pop, blocks.get
    unmarked, unmarked_but_class, known = _MARKS.isdisjoint, _MARKS_BUT_CLASS.isdisjoint, _NAMES.get
    block_tags, landmark_tags, heading_tags = _BLOCK, _LANDMARKS, _HEADINGS
    wide, document = _WIDE.findall, _DOCUMENT.search

    def count(owner: tuple, text: str, stripped: str) -> None:
        length = len(stripped)
        if not stripped.isascii():
            length += 2 * len(wide(stripped))
        block = owner[0]
        entry = entry_of(block)
        if entry is None:
            entry = blocks[block] = [0, 0, "", False, False]
        entry[0] += length
        link = owner[1]
        if link == 1:
            entry[1] += length
        elif link == 2:
            entry[4] = True
        entry[2] = text
        if not entry[3] and " " in stripped:
            entry[3] = True

    # The body opens the walk (its own attributes are not listed: only the elements below it are). It is the
    # <body> or the <html> element, both blocks.
    push((body, 0, False) if body.tag in block_tags else stack[0])
    # The open elements themselves. The tree is walked in document order by lxml's iterdescendants(),
    # which gives no "end" of an element: an element ends when one comes whose parent it is not, and its
    # tail comes then. (Half the steps of iterwalk's start and end events, each a tuple.)
    open_elements: list = [body]
    top = body
    text = body.text
    if text:
        stripped = text.strip()
        if stripped:
            count(stack[-1], text, stripped)
    for element in body.iterdescendants():
        parent_element = element.getparent()
        while top is not parent_element:  # the open elements that are not this one's ancestors end here
            ended = open_elements.pop()
            pop()
            top = open_elements[-1]
            text = ended.tail
            if text:
                stripped = text.strip()
                if stripped:
                    count(stack[-1], text, stripped)
        parent = stack[-1]
        tag = element.tag
        if tag in block_tags:
            owner = (element, 1, True) if parent[2] else (element, 0, False)
            if tag in landmark_tags:
                landmarks.append(element)
            elif tag in heading_tags:
                headings.append(element)
        elif tag == "a":
            owner = (parent[0], 2 if document(element.get("href") or "") else 1, True)
        else:
            owner = parent
        push(owner)
        open_elements.append(element)
        top = element
        keys = element.keys()
        if keys and not unmarked(keys):
            if unmarked_but_class(keys):
                # Most are marked by a class alone, already known to name nothing: not listed. The class
                # of those listed goes with them, so it is read once.
                names = element.get("class") or ""
                if known(names, 1):
                    marked.append((element, keys, names))
            else:
                marked.append((element, keys, None))
        text = element.text
        if text:
            stripped = text.strip()
            if stripped:
                count(owner, text, stripped)
    for ended in reversed(open_elements[1:]):  # the last ones end with the page (the body's tail is not in it)
        pop()
        text = ended.tail
        if text:
            stripped = text.strip()
            if stripped:
                count(stack[-1], text, stripped)
    return blocks, marked, landmarks, headings


# How a block's text is emitted: left out, as it is, as a list item, as preformatted lines.
_OMIT, _PLAIN, _ITEM, _PRE = 0, 1, 2, 3


def _kind(block: Any, stats: list | None, captions: bool) -> int:
    """Left out: link lists inside the story (related links, tags, share bars), the <h1>, which is the
    page's title (its own column) rather than its story, and captions beside prose."""
    if stats is None or stats[1] * 2 > stats[0] and stats[0] - stats[1] < _KEEP:
        return _OMIT
    tag = block.tag
    if tag == "h1" or not captions and tag == "figcaption":
        return _OMIT
    return _ITEM if tag == "li" else _PRE if tag == "pre" else _PLAIN


def _joins_break(element: Any, removed: set) -> bool:
    """Whether a left-out element's tail starts a line: it does when it follows a <br> with nothing shown
    between (the tail then reads as the <br>'s own)."""
    previous = element.getprevious()
    while previous is not None and previous in removed and not (previous.tail or "").strip():
        previous = previous.getprevious()
    return previous is not None and previous.tag == "br" and not (previous.tail or "").strip()


def _emit(container: Any, blocks: dict, captions: bool, removed: set) -> str:
    """The container's text, block by block; what is inside a `removed` element is left out, its tail kept."""
    lines: list[str] = []
    current: list[str] = []  # the pieces of the line being read, all of `owner`'s text
    owner = None
    current_kind = _OMIT
    outer = container  # the block the container's own text belongs to (as _walk saw it)
    while outer is not None and outer.tag not in _BLOCK:
        outer = outer.getparent()
    stack: list = [outer]  # per open element: its text's block (first: the container's parent's)
    kinds: dict = {}  # block -> how its text is emitted (a tag is a new string each time it is asked)
    push, pop, kind_of, block_tags = stack.append, stack.pop, kinds.get, _BLOCK
    walk = etree.iterwalk(container, events=("start", "end"))
    for event, element in walk:
        if event == "start":
            block = element if element.tag in block_tags else stack[-1]
            push(block)
            if element in removed and element is not container:  # (a container set aside is still read)
                walk.skip_subtree()  # its end still comes, with its tail
                continue
            text = element.text
            if not text:
                continue
            after_break = False
        else:
            if element is container:
                break
            pop()
            text = element.tail
            if not text:
                continue
            block = stack[-1]
            after_break = element.tag == "br" or element in removed and _joins_break(element, removed)
        kind = kind_of(block)
        if kind is None:
            kind = kinds[block] = _kind(block, blocks.get(block), captions)
        if not kind:
            continue
        if block is not owner or after_break:
            if block is not owner and not text.strip():
                continue  # whitespace before a block's first word is layout
            if current:
                _add_line(lines, "".join(current), current_kind)
            current = ["- "] if kind == _ITEM and block is not owner else []
            owner, current_kind = block, kind
        current.append(text)
    if current:
        _add_line(lines, "".join(current), current_kind)
    return "\n".join(line for line in lines if line and line.lower() not in _LABELS)


def _add_line(lines: list, text: str, kind: int) -> None:
    """One emitted line of a block's text, normalised: line breaks inside it are layout (but in <pre>,
    where each is a line of the code), and so is every other run of whitespace."""
    if kind == _PRE:
        lines.extend(normalize(line) for line in text.splitlines())
    else:
        # (Whitespace is made spaces before normalize drops controls, so a control that is whitespace
        # separates words. split() cuts at the same whitespace as the pattern \s, in a third of the time.)
        lines.append(normalize(text if text.isprintable() else " ".join(text.split())))
