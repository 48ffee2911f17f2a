"""`html_index` discovery on pages nobody on this team wrote: Scrapy's link-extractor samples
(tests/data/listings/scrapy/). Scrapy's own tests expect, of the same pages:

- `linkextractor_no_href.html`, `response.follow_all(css="div.pagination a")`: the links
  /page/1/, /page/3/, /page/4/ and nothing for the <a> without href;
- `linkextractor.html`, the default LinkExtractor: sample1 (from <area>), sample2, sample3,
  sample3#foo, www.google.com/something, innertag, page%204.html, resolved against
  <base href='http://example.com'>.

Where this tool differs, it does so by its clauses: links resolve against the listing's own
address (URL-01), a fragment names the same page (URL-06, so sample3#foo collapses onto
sample3, DISC-33), only https is fetched and other origins are listed but unreachable
(URL-09..URL-12), and an href with a space is kept as the publisher wrote it and not fetched.
"""

from __future__ import annotations

from pathlib import Path

from collection.discover.common import ListingResponse
from collection.discover.driver import DiscoveryConfig, run_offline
from collection.discover.html_index import HtmlListingSpec, _from_tree, parse_html_listing
from collection.readers.selectors import compile_selector

PAGES = Path(__file__).resolve().parent / "data" / "listings" / "scrapy"
LISTING = "https://example.com/list"


def discover(name: str, selector: str):
    body = (PAGES / name).read_bytes()
    config = DiscoveryConfig.from_mapping({"kind": "html_index", "url": LISTING, "records": {"selector": selector}})
    response = ListingResponse(LISTING, 200, (("Content-Type", "text/html"),), body)
    return run_offline(config, ["https://example.com"], {LISTING: response})


def test_follow_all_on_the_pagination_skips_the_anchor_without_href():  # DISC-13, DISC-14, D-27
    outcome = discover("linkextractor_no_href.html", "div.pagination a")
    assert [page.url for page in outcome.pages] == [
        "https://example.com/page/1/", "https://example.com/page/3/", "https://example.com/page/4/"]
    assert outcome.dropped_records == 1 and outcome.complete


def test_the_link_extractor_sample_lists_scrapys_links_by_this_tools_rules():  # DISC-13, DISC-33, URL-01, URL-06, URL-09
    outcome = discover("linkextractor.html", "#wrapper a, area")
    assert [(page.url, page.unreachable is None) for page in outcome.pages] == [
        ("https://example.com/sample1.html", True),
        ("https://example.com/sample2.html", True),
        ("http://example.com/sample3.html", False),          # Scrapy's sample3 as written: not https
        ("https://example.com/sample3.html", True),          # sample3.html, again, and sample3.html#foo
        ("http://www.google.com/something", False),
        ("http://example.com/innertag.html", False),
        ("https://example.com/page 4.html", False),          # Scrapy requests page%204.html
    ]
    assert outcome.duplicates_dropped == 2


def test_the_streamed_reader_reads_the_real_pages_as_the_whole_tree_does():  # DISC-13, PAG-13
    for name in ("linkextractor.html", "linkextractor_no_href.html"):
        body = (PAGES / name).read_bytes()
        for selector in ("a", "div a", "#wrapper > a", "span a", "a:first-child", "div.pagination a:nth-child(2)"):
            spec = HtmlListingSpec(selector)
            assert parse_html_listing(body, spec) == _from_tree(body, spec, compile_selector(selector), None, None), (
                name, selector)
