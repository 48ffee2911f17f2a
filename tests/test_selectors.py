"""The closed selector grammar (DISC-04, DISC-13, PAG-13; docs/selectors.md)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from lxml import html

from collection.readers.selectors import MAX_SELECTOR_LENGTH, Selector, SelectorError, compile_selector

PAGE = html.fromstring(
    """<html><body>
    <div id="main" class="content wide">
      <ul class="items">
        <li data-id="1" class="item first">One</li>
        <!-- a comment is not a child element -->
        <li data-id="2" class="item">Two <a href="/doc/2.pdf" rel="next noopener">2</a></li>
        <li data-id="3" class="item last" title='say "hi"'>Three</li>
      </ul>
      <p lang="en-GB">Para <span>in</span></p>
    </div>
    <div class="aside"><p>Other</p></div>
    </body></html>"""
)


def texts(selector: str) -> list[str]:
    return [(e.get("data-id") or e.text or "").strip() for e in compile_selector(selector).select(PAGE)]


ACCEPTED = [
    # selector, expected texts (data-id for li, text otherwise), in document order
    ("li", ["1", "2", "3"]),
    ("LI", ["1", "2", "3"]),
    ("ul > li", ["1", "2", "3"]),
    ("div   li", ["1", "2", "3"]),
    ("div>ul>li", ["1", "2", "3"]),
    ("body > li", []),
    ("#main > p", ["Para"]),
    ("div#main.content.wide p", ["Para"]),
    (".aside p", ["Other"]),
    ("li.item.last", ["3"]),
    ("[data-id]", ["1", "2", "3"]),
    ("li[data-id=2]", ["2"]),
    ("li[data-id='2']", ["2"]),
    ('li[data-id="2"]', ["2"]),
    ("li[ data-id = 2 ]", ["2"]),
    ("a[href^='/doc/']", ["2"]),
    ("a[href$=\".pdf\"]", ["2"]),
    ("a[href*=doc]", ["2"]),
    ("a[rel~=next]", ["2"]),
    ("a[rel~='nex']", []),
    ("li[title='say \"hi\"']", ["3"]),
    ("li:first-child", ["1"]),
    ("li:last-child", ["3"]),
    ("li:nth-child(2)", ["2"]),
    ("li:NTH-CHILD( 3 )", ["3"]),
    ("li:nth-child(4)", []),
    ("li:last-child, li:first-child", ["1", "3"]),  # document order, not list order
    ("p, li.first", ["1", "Para", "Other"]),
    ("*.item:first-child", ["1"]),
    ("  li.first  ", ["1"]),
    ("ul\n>\tli.last", ["3"]),
    ("[lang]", ["Para"]),
    ("-x-y, li.first", ["1"]),
]


@pytest.mark.parametrize("selector,expected", ACCEPTED)
def test_accepted_selectors_match_in_document_order_DISC_13(selector: str, expected: list[str]) -> None:
    assert texts(selector) == expected


REFUSED = [
    # selector, 0-based position of the offending character
    ("", 0),
    ("   ", 3),
    ("a:hover", 1),
    ("p::before", 1),
    ("a + b", 2),
    ("a+b", 1),
    ("a ~ b", 2),
    ("a:not(.x)", 1),
    ("a:has(b)", 1),
    ("li:nth-of-type(2)", 2),
    ("li:first-child()", 14),
    ("[a|=v]", 2),
    ("ns|a", 2),
    ("*|a", 1),
    ("|a", 0),
    ("[*|a]", 1),
    ("a,,b", 2),
    ("a,", 2),
    (",a", 0),
    ("a >", 3),
    ("> a", 0),
    ("a > > b", 4),
    ("li:nth-child(2n+1)", 14),
    ("li:nth-child(odd)", 13),
    ("li:nth-child(0)", 13),
    ("li:nth-child(01)", 13),
    ("li:nth-child(-1)", 13),
    ("li:nth-child(2", 14),
    ("[a=v i]", 5),
    ("[a", 2),
    ("[a=", 3),
    ("[a=]", 3),
    ('a[b="x', 6),
    ("a[b='x\ny']", 6),
    ("#1", 1),
    ("#", 1),
    (".", 1),
    (".1a", 1),
    ("a\\:b", 1),
    ("[a='\\x']", 4),
    ("a!", 1),
    ("a$", 1),
    ("1a", 0),
    ("a:", 2),
    ("a[b!=c]", 3),
    ("a[b]c", 4),
    ("a, b:hover", 4),
    ("div >\nspan::after", 10),
]


@pytest.mark.parametrize("selector,position", REFUSED)
def test_refused_selectors_name_the_offending_position_DISC_13(selector: str, position: int) -> None:
    with pytest.raises(SelectorError) as caught:
        compile_selector(selector)
    assert caught.value.position == position
    assert isinstance(caught.value, ValueError)
    assert caught.value.message


def test_too_long_selector_is_refused() -> None:
    with pytest.raises(SelectorError) as caught:
        compile_selector("a" * (MAX_SELECTOR_LENGTH + 1))
    assert caught.value.position == MAX_SELECTOR_LENGTH


def test_compile_is_cached_and_value_like() -> None:
    first = compile_selector("ul > li")
    assert compile_selector("ul > li") is first
    again = Selector(first.text, first.xpath)
    assert again == first
    assert [e.get("data-id") for e in again.select(PAGE)] == ["1", "2", "3"]


def test_select_on_a_subtree_includes_the_root_itself() -> None:
    ul = compile_selector("ul").select(PAGE)[0]
    assert [e.get("data-id") for e in compile_selector("li, ul").select(ul)][1:] == ["1", "2", "3"]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab.#[]=^$*~|:>+, ()'\"-1nx\\")), max_size=24))
def test_any_text_compiles_or_is_refused_with_a_position_in_range(text: str) -> None:
    try:
        selector = compile_selector(text)
    except SelectorError as error:
        assert 0 <= error.position <= len(text)
    else:
        selector.select(PAGE)  # a compiled selector always evaluates
