"""Discovery's pages held as columns (issue 27 point 4, D-80).

`ListedPages` replaces the tuple of ListedPage objects discovery used to hand the merge;
everything that reads it (the merge's admission in discovery order, `collection discover`,
`check`, the run summary) must see the same pages: same ids (DISC-10: an id defaults to
the canonical address), same revision hints (DISC-20), same unreachable reasons (D-24), in
the same order (the n-th page has discovery ordinal n), equal to the tuple it replaces.
"""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from collection.discover.driver import DiscoveryConfig, ListingResponse, start
from collection.merge.outcomes import ListedPage, ListedPages, PageColumns

URLS = st.sampled_from([f"https://www.example.com/p/{n}" for n in range(6)])
ROWS = st.lists(st.tuples(URLS, st.one_of(st.none(), st.sampled_from(("7", "a-id"))),
                          st.one_of(st.none(), st.sampled_from(("2024-05-01", "2024-05-02"))),
                          st.one_of(st.none(), st.sampled_from(("origin_not_allowed", "unsafe")))), max_size=12)


def expected(rows):
    return tuple(ListedPage(url if page_id is None else page_id, url, hint, reason)
                 for url, page_id, hint, reason in rows)


def columns(rows, after=None):
    built = PageColumns(after)
    for url, page_id, hint, reason in rows:
        built.append(url if page_id is None else page_id, url, hint, reason)
    return built.done()


@settings(max_examples=200, deadline=None)
@given(ROWS)
def test_columns_read_back_as_the_pages_appended_DISC_10_DISC_20_D_24(rows):
    pages, want = columns(rows), expected(rows)
    assert pages == want and want == pages and tuple(pages) == want and list(pages) == list(want)
    assert len(pages) == len(want) and hash(pages) == hash(want)
    assert [pages[i] for i in range(-len(want), len(want))] == [want[i] for i in range(-len(want), len(want))]
    assert pages[1:-1] == want[1:-1] and pages[::2] == want[::2]
    assert pages != want + (ListedPage("x", "https://www.example.com/x", None),)


@settings(max_examples=100, deadline=None)
@given(ROWS, ROWS)
def test_continuing_a_column_leaves_the_earlier_pages_as_they_were(first_rows, more_rows):
    first = columns(first_rows)
    both = columns(more_rows, first)
    assert first == expected(first_rows)
    assert both == expected(first_rows) + expected(more_rows)


def test_an_index_past_the_end_raises_as_a_tuple_does():
    pages = columns([("https://www.example.com/p/1", None, None, None)])
    for index in (1, -2):
        try:
            pages[index]
        except IndexError:
            continue
        raise AssertionError(f"pages[{index}] did not raise")
    assert ListedPages() == () and not ListedPages()


def html(url, links, next_href=None):
    anchors = "".join(f'<a class="item" href="{h}">{h}</a>' for h in links)
    nav = f'<nav><a class="next" href="{next_href}">next</a></nav>' if next_href else ""
    return ListingResponse(url, 200, (("Content-Type", "text/html"),),
                           f"<html><body><main>{anchors}</main>{nav}</body></html>".encode())


def test_a_discovery_state_keeps_its_pages_after_the_next_listing_is_read_PAG_13():
    idx = "https://www.example.com/decisions/"
    config = DiscoveryConfig.from_mapping({"kind": "html_index", "url": idx, "records": {"selector": "main a.item"},
                                           "pagination": {"kind": "next_selector", "selector": "nav a.next"}})
    first = start(config, ["https://www.example.com"]).feed(html(idx, ["a", "b"], "?page=2"))
    second = first.feed(html(idx + "?page=2", ["b", "c"]))
    assert [p.url for p in first.outcome().pages] == [idx + "a", idx + "b"]
    assert [p.url for p in second.outcome().pages] == [idx + "a", idx + "b", idx + "c"]
    assert second.outcome().duplicates_dropped == 1
