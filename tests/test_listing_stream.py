"""Large HTML indexes (issue 15 item 7): selectors compile to one location step, and an
`html_index` listing is read as a stream when its selector allows.

Both are checked differentially against what they replace, on random documents (malformed
ones included) and random selectors of the closed grammar (DISC-13, DISC-14, PAG-13, D-27):
- `compile_selector(s).xpath` selects exactly what cssselect's own step-by-step translation
  of the same canonical selector selects, in the same order;
- the streamed listing (each element judged at its start tag, content dropped at its end,
  old siblings pruned) equals the listing read from the whole tree: the same links, record
  count, dropped records and next link.
"""

from __future__ import annotations

from cssselect import HTMLTranslator
from hypothesis import given, settings, strategies as st
from lxml import etree

from collection.discover import html_index
from collection.discover.common import ListingResponse, TextPacker
from collection.discover.driver import DiscoveryConfig, run_offline
from collection.discover.html_index import HtmlListingSpec, parse_html, parse_html_listing
from collection.readers.selectors import _Parser, compile_selector

TAGS = ("div", "ul", "li", "a", "p", "span", "section")
CLASSES = ("x", "y", "d")


@st.composite
def documents(draw, depth=0):
    def element(level):
        tag = draw(st.sampled_from(TAGS))
        attrs = []
        if draw(st.booleans()):
            attrs.append(f'class="{" ".join(draw(st.lists(st.sampled_from(CLASSES), min_size=1, max_size=2)))}"')
        if draw(st.integers(0, 4)) == 0:
            attrs.append(f'id="{draw(st.sampled_from(("m", "n")))}"')
        if tag == "a" or draw(st.integers(0, 3)) == 0:
            href = draw(st.sampled_from(("/p/1", "/p/2", "/x/3", "", " ", "/p/4?q=1")))
            attrs.append(f'href="{href}"')
        children = []
        if level < 4:
            for _ in range(draw(st.integers(0, 4 if level < 2 else 2))):
                children.append(element(level + 1))
        text = draw(st.sampled_from(("", "t", "text ")))
        close = "" if tag in ("li", "p") and draw(st.integers(0, 3)) == 0 else f"</{tag}>"
        return f"<{tag} {' '.join(attrs)}>{text}{''.join(children)}{close}"
    body = "".join(element(0) for _ in range(draw(st.integers(1, 4))))
    prefix = draw(st.sampled_from(("<html><body>", "<!doctype html><html><head><title>t</title></head><body>", "")))
    return (prefix + body).encode()


@st.composite
def compounds(draw, last_child=True):
    tag = draw(st.sampled_from(("", "*") + TAGS))
    parts = [tag]
    if draw(st.booleans()):
        parts.append("." + draw(st.sampled_from(CLASSES)))
    if draw(st.integers(0, 4)) == 0:
        parts.append("#" + draw(st.sampled_from(("m", "n"))))
    if draw(st.integers(0, 3)) == 0:
        parts.append(draw(st.sampled_from(('[href]', '[href^="/p"]', '[class~="y"]', '[href$="1"]'))))
    pseudo = ["", ":first-child", ":nth-child(1)", ":nth-child(2)", ":nth-child(3)"]
    if last_child:
        pseudo.append(":last-child")
    parts.append(draw(st.sampled_from(pseudo)))
    text = "".join(parts)
    return text or "*"


@st.composite
def selectors(draw, last_child=True):
    def complex_():
        out = draw(compounds(last_child))
        for _ in range(draw(st.integers(0, 2))):
            out += draw(st.sampled_from((" ", " > "))) + draw(compounds(last_child))
        return out
    return ", ".join(complex_() for _ in range(draw(st.integers(1, 2))))


@settings(max_examples=150, deadline=None)
@given(documents(), selectors())
def test_one_step_xpath_selects_what_cssselect_selects(body, selector):
    root = parse_html(body)
    if root is None:
        return
    canonical = _Parser(selector).selector_list()
    reference = etree.XPath(HTMLTranslator().css_to_xpath(canonical))
    expected = [e for e in reference(root) if isinstance(e.tag, str)]
    assert compile_selector(selector).select(root) == expected, (selector, compile_selector(selector).xpath)


@settings(max_examples=150, deadline=None)
@given(documents(), selectors(last_child=False), st.one_of(st.none(), selectors(last_child=False)),
       st.sampled_from(("href", "class")))
def test_streamed_listing_equals_the_whole_tree_listing(body, records, following, attribute):
    spec = HtmlListingSpec(records, attribute, following)
    selected = compile_selector(records)
    nxt = compile_selector(following) if following is not None else None
    assert selected.streamable and (nxt is None or nxt.streamable)
    streamed = html_index._streamed(body, spec, selected, nxt, None)
    whole = html_index._from_tree(body, spec, selected, nxt, None)
    assert streamed == whole


def test_last_child_is_read_from_the_whole_tree():
    """:last-child needs the siblings that follow, which a stream has not read yet."""
    assert not compile_selector("li:last-child a").streamable
    body = b"<ul><li><a href='/1'>1</a></li><li><a href='/2'>2</a></li></ul>"
    assert parse_html_listing(body, HtmlListingSpec("li:last-child a")).links == ("/2",)


def test_streaming_keeps_only_the_siblings_a_position_test_needs():
    """A list of 5,000 items: position tests stay exact whether siblings are pruned (:nth-child(40))
    or, past the pruning limit, kept (:nth-child(4000))."""
    body = ("<ul>" + "".join(f"<li><a href='/p/{i}'>{i}</a></li>" for i in range(1, 5001)) + "</ul>").encode()
    assert compile_selector("li:nth-child(4000) a").siblings_kept == 4000
    assert parse_html_listing(body, HtmlListingSpec("li:nth-child(4000) a")).links == ("/p/4000",)
    assert parse_html_listing(body, HtmlListingSpec("li:nth-child(40) a")).links == ("/p/40",)
    assert parse_html_listing(body, HtmlListingSpec("li:first-child > a")).links == ("/p/1",)
    listing = parse_html_listing(body, HtmlListingSpec("ul a", next_selector="li:nth-child(2) a"))
    assert len(listing.links) == 5000 and listing.next_link == "/p/2"


@given(st.lists(st.text(max_size=12), max_size=40))
def test_packed_links_read_back_as_the_strings_packed(texts):
    """The link column of an HTML index is packed into one string (bench/discovery.py): every
    href, empty or not, ASCII or not, reads back exactly, in order, by index, slice and iteration."""
    packer = TextPacker()
    packer._BATCH = 3                      # several joined batches even for a short list
    for text in texts:
        packer.append(text)
    packed = packer.packed()
    assert len(packed) == len(texts) and list(packed) == texts and packed == tuple(texts)
    assert [packed[i] for i in range(-len(texts), len(texts))] == texts + texts
    assert packed[1:4] == tuple(texts[1:4])
    if texts:
        assert packed != tuple(texts) + ("extra",)


def test_a_page_of_anchors_without_href_names_a_hundred_drops_and_counts_them_all():
    """D-27: every record without a usable link is dropped and counted; a hostile page of
    20,000 bare anchors gets the first hundred reasons named, not 20,000 messages."""
    body = ("<main>" + "<a>x</a>" * 20_000 + "<a href='/kept'>k</a></main>").encode()
    listing = parse_html_listing(body, HtmlListingSpec("main a"))
    assert listing.links == ("/kept",) and listing.record_count == 20_001
    assert len(listing.dropped) == 100 and listing.dropped_count == 20_000
    assert listing.dropped[99] == "match 99: no usable 'href' attribute"
    config = DiscoveryConfig.from_mapping({"kind": "html_index", "url": "https://www.example.com/all",
                                           "records": {"selector": "main a"}})
    response = ListingResponse("https://www.example.com/all", 200, (("Content-Type", "text/html"),), body)
    outcome = run_offline(config, ["https://www.example.com"], {response.url: response})
    assert outcome.dropped_records == 20_000
    assert [page.url for page in outcome.pages] == ["https://www.example.com/kept"]
