"""Listing parsers and pagination primitives, table-driven (DISC-05..DISC-23, PAG-09, PAG-11, D-23, D-27, D-35, D-36)."""

import gzip
import json

import pytest

from collection.discover.common import DiscoveryShapeError, ListingUnreadable, media_type, scalar_text
from collection.discover.html_index import HtmlListingSpec, parse_html_listing
from collection.discover.json_index import JsonListingSpec, parse_json_listing
from collection.discover.sitemap import parse_sitemap
from collection.discover.pagination import PaginationConfig, next_link_target, numbered_url, parse_link_header, with_parameter

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def urlset(*entries: str, ns: str = NS) -> bytes:
    body = "".join(entries)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{ns}">{body}</urlset>\n'.encode()


def url(loc: str, lastmod: str | None = None) -> str:
    return f"<url><loc>{loc}</loc>" + (f"<lastmod>{lastmod}</lastmod>" if lastmod else "") + "</url>"


# --- json_api -------------------------------------------------------------------------

WP = json.dumps([
    {"id": 101, "link": "https://www.example.com/decisions/101/", "modified": "2024-03-01T10:00:00"},
    {"id": 102, "link": "https://www.example.com/decisions/102/", "modified": "2024-03-02T10:00:00"},
]).encode()


def test_json_whole_body_is_the_records_array_DISC_08():
    parsed = parse_json_listing(WP, JsonListingSpec("", "/link", "/id", "/modified"))
    assert [(e.link, e.page_id, e.revision) for e in parsed.entries] == [
        ("https://www.example.com/decisions/101/", "101", "2024-03-01T10:00:00"),
        ("https://www.example.com/decisions/102/", "102", "2024-03-02T10:00:00"),
    ]
    assert parsed.record_count == 2


def test_json_records_pointer_into_the_body_DISC_07():
    body = json.dumps({"data": {"items": [{"u": "/a"}, {"u": "/b"}]}, "next": "tok"}).encode()
    parsed = parse_json_listing(body, JsonListingSpec("/data/items", "/u", cursor="/next"))
    assert [e.link for e in parsed.entries] == ["/a", "/b"]
    assert parsed.cursor == "tok"


@pytest.mark.parametrize("record, link, page_id, dropped", [
    ({"link": "/a", "id": 7}, "/a", "7", False),                 # D-27: 123 → "123"
    ({"link": "/a", "id": "x"}, "/a", "x", False),
    ({"link": "/a", "id": None}, "/a", None, False),             # falls back to the URL later
    ({"link": "/a"}, "/a", None, False),
    ({"link": "/a", "id": True}, "/a", "true", False),
    ({"link": 123, "id": 1}, "123", "1", False),                 # a scalar link is stringified
    ({"link": None, "id": 1}, None, None, True),                 # no usable link: dropped
    ({"id": 1}, None, None, True),
    ({"link": {"href": "/a"}}, None, None, True),
    ({"link": ""}, None, None, True),
    ("just a string", None, None, True),
])
def test_json_non_string_and_missing_values_D_27(record, link, page_id, dropped):
    parsed = parse_json_listing(json.dumps([record]).encode(), JsonListingSpec("", "/link", "/id"))
    assert parsed.record_count == 1
    if dropped:
        assert parsed.entries == () and len(parsed.dropped) == 1
    else:
        assert [(e.link, e.page_id) for e in parsed.entries] == [(link, page_id)]


@pytest.mark.parametrize("body, pointer", [
    (b'{"items": {"a": 1}}', "/items"),        # an object, not an array
    (b'{"items": "x"}', "/items"),
    (b'{"other": []}', "/items"),              # names nothing
    (b'{"code": "rest_no_route"}', ""),        # an error object where the array should be
])
def test_json_wrong_shape_is_merge_invalid_D_13(body, pointer):
    with pytest.raises(DiscoveryShapeError) as info:
        parse_json_listing(body, JsonListingSpec(pointer, "/link"))
    assert info.value.code == "COLLECTION_MERGE_INVALID"


@pytest.mark.parametrize("body", [b"", b"<html>", b"[1,", b"[NaN]", b"\xff\xfe\xfa"])
def test_json_unreadable_body_is_a_listing_failure_not_a_shape_error(body):
    with pytest.raises(ListingUnreadable):
        parse_json_listing(body, JsonListingSpec("", "/link"))


@pytest.mark.parametrize("token, expected", [("abc", "abc"), (42, "42"), (None, None), ("", None)])
def test_cursor_tokens_D_23(token, expected):
    body = json.dumps({"items": [], "next": token}).encode()
    assert parse_json_listing(body, JsonListingSpec("/items", "/u", cursor="/next")).cursor == expected


def test_cursor_pointer_naming_an_object_is_a_shape_error():
    with pytest.raises(DiscoveryShapeError):
        parse_json_listing(b'{"items": [], "next": {"t": 1}}', JsonListingSpec("/items", "/u", cursor="/next"))


def test_scalar_text():
    assert [scalar_text(v) for v in ("a", 1, False, None, [], {}, "")] == ["a", "1", "false", None, None, None, None]


# --- sitemap --------------------------------------------------------------------------

def test_urlset_locs_and_lastmod_DISC_18_DISC_20():
    body = urlset(url("https://www.example.com/a?x=1&amp;y=2", "2024-01-01"), url("https://www.example.com/b"))
    parsed = parse_sitemap(body)
    assert parsed.root == "urlset"
    assert [(e.link, e.revision) for e in parsed.entries] == [
        ("https://www.example.com/a?x=1&y=2", "2024-01-01"), ("https://www.example.com/b", None)]


def test_urlset_without_namespace_and_with_whitespace_cdata_and_comments():
    body = (b"<urlset>\n <url>\n  <loc>\n   https://www.example.com/a\n  </loc>\n </url>"
            b"<url><loc><![CDATA[https://www.example.com/b?c=1&d=2]]></loc></url>"
            b"<url><loc>https://www.example.com/<!-- split -->c</loc></url></urlset>")
    assert [e.link for e in parse_sitemap(body).entries] == [
        "https://www.example.com/a", "https://www.example.com/b?c=1&d=2", "https://www.example.com/c"]


def test_extension_locs_are_not_pages():
    body = (f'<urlset xmlns="{NS}" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">'
            f'<url><loc>https://www.example.com/p</loc><image:image><image:loc>https://cdn.example.net/i.jpg'
            f'</image:loc></image:image></url></urlset>').encode()
    assert [e.link for e in parse_sitemap(body).entries] == ["https://www.example.com/p"]


def test_url_without_loc_is_dropped_D_27():
    parsed = parse_sitemap(urlset("<url><lastmod>2024</lastmod></url>", url("https://www.example.com/a")))
    assert [e.link for e in parsed.entries] == ["https://www.example.com/a"] and len(parsed.dropped) == 1
    assert parsed.record_count == 2


def test_sitemapindex_children_DISC_22():
    body = (f'<sitemapindex xmlns="{NS}"><sitemap><loc>https://www.example.com/s1.xml.gz</loc>'
            f'<lastmod>2024-01-01</lastmod></sitemap><sitemap><loc>/s2.xml</loc></sitemap></sitemapindex>').encode()
    parsed = parse_sitemap(body)
    assert parsed.root == "sitemapindex" and parsed.entries == ()
    assert parsed.children == ("https://www.example.com/s1.xml.gz", "/s2.xml")


def test_gzip_bodies_are_read():
    body = urlset(url("https://www.example.com/a"))
    assert [e.link for e in parse_sitemap(gzip.compress(body)).entries] == ["https://www.example.com/a"]
    # Two gzip members one after another (RFC 1952) are one body.
    half = len(body) // 2
    assert len(parse_sitemap(gzip.compress(body[:half]) + gzip.compress(body[half:])).entries) == 1


REFUSED_XML = [
    b'<?xml version="1.0"?><!DOCTYPE urlset><urlset/>',                                       # DISC-05
    b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY e "x">]><urlset><url><loc>&e;</loc></url></urlset>',  # DISC-06
    b'<!DOCTYPE urlset SYSTEM "http://evil.example/x.dtd"><urlset/>',
    b'<!doctype urlset><urlset/>',
    b'<urlset><url><loc>&ext;</loc></url></urlset>',                                            # undeclared entity
    '<urlset/>'.encode("utf-16"),                                                               # not UTF-8: scan unsound
    b"",
    b"   ",
    b"<urlset><url>",                                                                           # truncated
    b"not xml",
    gzip.compress(b"<urlset/>", mtime=0)[:-6],                                                     # broken gzip
]


@pytest.mark.parametrize("body", REFUSED_XML)
def test_refused_or_unreadable_sitemaps_D_35(body):
    with pytest.raises(ListingUnreadable):
        parse_sitemap(body)


def test_doctype_refused_even_when_split_across_chunks():
    filler = b"<!--" + b"x" * (65536 - 10) + b"-->"
    with pytest.raises(ListingUnreadable) as info:
        parse_sitemap(filler + b"<!DOCTYPE urlset><urlset/>")
    assert info.value.reason == "xml_declaration_refused"


def test_predefined_entities_and_character_references_are_allowed_D_35():
    body = urlset(url("https://www.example.com/a?b=1&amp;c=&#50;&#x33;&lt;&gt;&quot;&apos;"))
    assert parse_sitemap(body).entries[0].link == "https://www.example.com/a?b=1&c=23<>\"'"


@pytest.mark.parametrize("body", [b"<rss version='2.0'><channel/></rss>", b"<feed/>", b"<html><body/></html>"])
def test_foreign_root_is_a_shape_error_D_36(body):
    with pytest.raises(DiscoveryShapeError) as info:
        parse_sitemap(body)
    assert info.value.code == "COLLECTION_MERGE_INVALID"


def test_url_cap():
    body = urlset(*(url(f"https://www.example.com/{i}") for i in range(11)))
    assert len(parse_sitemap(body, max_urls=11).entries) == 11
    with pytest.raises(ListingUnreadable) as info:
        parse_sitemap(body, max_urls=10)
    assert info.value.reason == "sitemap_too_many_urls"


def test_decompressed_size_cap_catches_a_gzip_bomb_early():
    bomb = gzip.compress(b"<urlset>" + b" " * (20 * 1024 * 1024) + b"</urlset>")
    assert len(bomb) < 100_000
    with pytest.raises(ListingUnreadable) as info:
        parse_sitemap(bomb, max_bytes=1024 * 1024)
    assert info.value.reason == "sitemap_too_large"
    with pytest.raises(ListingUnreadable):
        parse_sitemap(b"<urlset>" + b" " * 2048 + b"</urlset>", max_bytes=1024)


def test_large_sitemap_order_is_kept_across_chunks():
    body = urlset(*(url(f"https://www.example.com/p/{i}", f"2024-01-{i % 28 + 1:02d}") for i in range(5000)))
    parsed = parse_sitemap(body)
    assert [e.link for e in parsed.entries] == [f"https://www.example.com/p/{i}" for i in range(5000)]
    assert parsed.entries[29].revision == "2024-01-02"


# --- html_index ------------------------------------------------------------------------

INDEX = b"""<!doctype html><html><head><title>Decisions</title></head><body>
<ul class="decisions">
  <li><a class="d" href="/decisions/1">One</a></li>
  <li><a class="d" href="decisions/2" data-url="https://www.example.com/alt/2">Two</a></li>
  <li><a class="d">No link</a></li>
  <li><a class="d" href="">Empty</a></li>
</ul>
<nav><a rel="next" class="next" href="?page=2">Next</a><a class="next" href="?page=9">Last</a></nav>
<script>location.href = "/evil"</script>
</body></html>"""


def test_html_records_and_href_DISC_13_DISC_14():
    parsed = parse_html_listing(INDEX, HtmlListingSpec("ul.decisions a.d", next_selector="nav a.next"))
    assert [e.link for e in parsed.entries] == ["/decisions/1", "decisions/2"]
    assert parsed.record_count == 4 and len(parsed.dropped) == 2
    assert parsed.next_link == "?page=2"                       # PAG-13: the first match


def test_html_link_attribute_DISC_14():
    parsed = parse_html_listing(INDEX, HtmlListingSpec("a.d", attribute="data-url"))
    assert [e.link for e in parsed.entries] == ["https://www.example.com/alt/2"]


@pytest.mark.parametrize("body", [b"", b"   ", b"<html><body><p>nothing</p></body></html>"])
def test_html_without_matches_is_an_empty_page(body):
    parsed = parse_html_listing(body, HtmlListingSpec("a.d", next_selector="a.next"))
    assert parsed.record_count == 0 and parsed.next_link is None


def test_html_charset_utf8_default_and_header():
    body = '<a class="d" href="/d/é">x</a>'.encode("utf-8")
    assert parse_html_listing(body, HtmlListingSpec("a.d")).entries[0].link == "/d/é"
    latin = '<a class="d" href="/d/é">x</a>'.encode("latin-1")
    assert parse_html_listing(latin, HtmlListingSpec("a.d"), "ISO-8859-1").entries[0].link == "/d/é"


# --- pagination primitives --------------------------------------------------------------

@pytest.mark.parametrize("url, name, value, expected", [
    ("https://h/x?per_page=100", "page", "2", "https://h/x?per_page=100&page=2"),     # D-23
    ("https://h/x", "page", "1", "https://h/x?page=1"),
    ("https://h/x?", "page", "1", "https://h/x?page=1"),
    ("https://h/x?a=1&", "page", "1", "https://h/x?a=1&page=1"),
    ("https://h/x", "cursor", "a b&c=d/+=", "https://h/x?cursor=a%20b%26c%3Dd%2F%2B%3D"),
])
def test_with_parameter_D_23(url, name, value, expected):
    assert with_parameter(url, name, value) == expected


@pytest.mark.parametrize("config, urls", [
    (PaginationConfig("page_parameter", "page"), ["?page=1", "?page=2", "?page=3"]),            # PAG-03, PAG-04
    (PaginationConfig("page_parameter", "p", first=0), ["?p=0", "?p=1", "?p=2"]),
    (PaginationConfig("offset_parameter", "offset"), ["?offset=0", "?offset=1", "?offset=2"]),  # PAG-06, PAG-07
    (PaginationConfig("offset_parameter", "offset", first=10, step=100), ["?offset=10", "?offset=110", "?offset=210"]),
])
def test_numbered_grammars(config, urls):
    assert [numbered_url(config, "https://h/x", i) for i in range(3)] == ["https://h/x" + u for u in urls]


GITHUB = ('<https://api.github.com/repositories/1/issues?page=2>; rel="next", '
          '<https://api.github.com/repositories/1/issues?page=5>; rel="last"')


@pytest.mark.parametrize("headers, target", [
    ([GITHUB], "https://api.github.com/repositories/1/issues?page=2"),                           # PAG-09
    (['<https://h/p2>; rel=next'], "https://h/p2"),                                                # unquoted rel
    (['<https://h/p2>; rel="prev next"'], "https://h/p2"),                                         # several rels
    (['<https://h/p2>; REL="NEXT"'], "https://h/p2"),                                               # case
    (['<https://h/p1>; rel="prev"', '<https://h/p3>; rel="next"'], "https://h/p3"),                # across headers
    (['<https://h/a,b>; rel="next"'], "https://h/a,b"),                                             # comma in URI
    (['<https://h/x>; title="a, b; rel=next", <https://h/y>; rel="next"'], "https://h/y"),          # quoted text
    (['<../p2>; rel="next"'], "../p2"),                                                             # relative, unresolved
    (['<https://h/x>; rel="next"; rel="prev"'], "https://h/x"),                                     # first rel wins
    (['<https://h/x>; rel="prev"; rel="next"'], None),
    (['<https://h/x>; anchor="#foo"; rel="next"'], None),                                           # another context
    (['<https://h/x>; rel="nextpage"'], None),
    (['rel="next"'], None),
    ([], None),
    ([''], None),
    (['<https://h/x'], None),
])
def test_link_header_rfc8288(headers, target):
    assert next_link_target(headers) == target


def test_link_header_parameters():
    links = parse_link_header(['<https://h/a>; rel="next"; title="x\\"y", <https://h/b>;rel=last'])
    assert [(l.target, l.rels, l.param("title")) for l in links] == [
        ("https://h/a", ("next",), 'x"y'), ("https://h/b", ("last",), None)]


@pytest.mark.parametrize("headers, expected", [
    ((("Content-Type", "application/json; charset=utf-8"),), "application/json"),
    ((("content-type", "Text/HTML"),), "text/html"),
    ((), None),
    ((("Content-Type", ""),), None),
])
def test_media_type_D_37(headers, expected):
    assert media_type(headers) == expected
