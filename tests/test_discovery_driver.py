"""The discovery driver over listings shaped like real publishers (DISC, PAG, URL, D-03, D-04, D-13, D-21..D-24, D-28)."""

import gzip
import json

import pytest

from collection.discover.driver import (
    STOP_REASONS,
    DiscoveryConfig,
    DiscoveryShapeError,
    ListingFailure,
    ListingResponse,
    json_response,
    run_offline,
    start,
)

ORIGINS = ["https://www.example.com"]
WP_BASE = "https://www.example.com/wp-json/wp/v2/decisions?per_page=100"
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def wp_config(**extra):
    return DiscoveryConfig.from_mapping({
        "kind": "json_api", "url": WP_BASE,
        "pagination": {"kind": "page_parameter", "parameter": "page", "first": 1},
        "records": {"pointer": ""}, "link": {"pointer": "/link"},
        "identity": {"pointer": "/id"}, "revision": {"pointer": "/modified"}, "max_requests": 40, **extra})


def wp_page(n, count, start=0):
    return [{"id": start + i, "link": f"https://www.example.com/decisions/{start + i}/",
             "modified": f"2024-01-01T00:00:{i % 60:02d}"} for i in range(count)]


def wp_responses(records, per_page=100, end="400"):
    """A WordPress listing of `records` posts; past the last page WordPress answers 400."""
    responses = {}
    pages = (records + per_page - 1) // per_page
    for n in range(1, pages + 1):
        url = f"{WP_BASE}&page={n}"
        responses[url] = json_response(url, wp_page(n, min(per_page, records - (n - 1) * per_page), (n - 1) * per_page),
                                       headers=(("X-WP-Total", str(records)), ("X-WP-TotalPages", str(pages))))
    url = f"{WP_BASE}&page={pages + 1}"
    if end == "400":
        responses[url] = json_response(url, {"code": "rest_post_invalid_page_number",
                                             "message": "The page number requested is larger than the number of pages available.",
                                             "data": {"status": 400}}, status=400)
    else:
        responses[url] = json_response(url, [])
    return responses


# --- json_api, page_parameter: the worked example's WordPress listing ------------------

def test_wordpress_listing_stops_at_the_400_past_the_last_page():
    outcome = run_offline(wp_config(), ORIGINS, wp_responses(2819))
    assert len(outcome.pages) == 2819
    assert outcome.requests == 30             # D-04: the terminating request counts
    assert outcome.complete and outcome.failure is None
    assert outcome.stop_reason == "past_last_page"
    first = outcome.pages[0]
    assert (first.page_id, first.url, first.revision_hint) == (
        "0", "https://www.example.com/decisions/0/", "2024-01-01T00:00:00")      # DISC-09..11
    # the listing's order is the discovery order (D-51): record k of page n is post 100(n-1)+k
    assert [p.page_id for p in outcome.pages] == [str(i) for i in range(2819)]


def test_wordpress_listing_of_an_exact_multiple_and_an_empty_array_end():
    assert run_offline(wp_config(), ORIGINS, wp_responses(300)).stop_reason == "past_last_page"
    outcome = run_offline(wp_config(), ORIGINS, wp_responses(250, end="empty"))
    assert (outcome.stop_reason, outcome.complete, outcome.requests, len(outcome.pages)) == ("empty_page", True, 4, 250)


def test_requests_carry_the_page_parameter_from_the_first_D_23_PAG_18():
    state = start(wp_config(), ORIGINS)
    request = state.next_request()
    assert request.url == f"{WP_BASE}&page=1" and request.ordinal == 1
    assert "application/json" in request.accept
    state = state.feed(wp_responses(150)[request.url])
    assert state.next_request().url == f"{WP_BASE}&page=2"


@pytest.mark.parametrize("status, body, reason", [
    (400, {"code": "rest_invalid_param"}, "listing_failed"),      # another 400 is an HTTP error
    (500, {"code": "internal_server_error"}, "listing_failed"),
    (404, {"code": "rest_no_route"}, "listing_failed"),
])
def test_other_http_errors_after_the_first_page_are_failures_D_13(status, body, reason):
    responses = wp_responses(150)
    responses[f"{WP_BASE}&page=2"] = json_response(f"{WP_BASE}&page=2", body, status=status)
    outcome = run_offline(wp_config(), ORIGINS, responses)
    assert (outcome.stop_reason, outcome.complete, outcome.failure) == (reason, False, f"{WP_BASE}&page=2")
    assert len(outcome.pages) == 100       # what was listed before the failure stays listed (REF-12)


def test_a_400_on_the_first_page_is_a_failure_even_with_the_wordpress_code():
    responses = {f"{WP_BASE}&page=1": json_response(f"{WP_BASE}&page=1", {"code": "rest_post_invalid_page_number"}, status=400)}
    outcome = run_offline(wp_config(), ORIGINS, responses)
    assert (outcome.stop_reason, outcome.failure, outcome.pages) == ("listing_failed", f"{WP_BASE}&page=1", ())


@pytest.mark.parametrize("content_type", ["text/html", "application/xml", "application/jsonx", None])
def test_refused_media_type_is_decided_from_headers_DISC_28_DISC_31(content_type):
    state = start(wp_config(), ORIGINS)
    url = state.next_request().url
    headers = (("Content-Type", content_type),) if content_type else ()
    assert state.refusal(200, headers) == "media_type_refused"
    # Fed with a body anyway, the driver refuses it the same way without reading it.
    state = state.feed(ListingResponse(url, 200, headers, b"[not json"))
    outcome = state.outcome()
    assert (outcome.failure, outcome.complete, outcome.stop_reason) == (url, False, "listing_failed")


@pytest.mark.parametrize("media", ["application/json", "application/ld+json", "application/vnd.api+json", "text/json",
                                   "Application/JSON; charset=UTF-8"])
def test_accepted_json_media_types_DISC_28(media):
    assert start(wp_config(), ORIGINS).refusal(200, (("Content-Type", media),)) is None


@pytest.mark.parametrize("reason, requests", [("robots_disallowed", 0), ("timeout", 3), ("connection_error", 1)])
def test_fetch_failures_are_fed_in_as_values_D_48(reason, requests):
    state = start(wp_config(), ORIGINS)
    state = state.feed(wp_responses(150)[f"{WP_BASE}&page=1"])
    state = state.feed(ListingFailure(f"{WP_BASE}&page=2", reason, requests))
    outcome = state.outcome()
    assert outcome.failure == f"{WP_BASE}&page=2" and not outcome.complete
    assert outcome.requests == 1 + requests and len(outcome.pages) == 100


def test_wrong_shape_mid_listing_is_merge_invalid_D_13():
    responses = wp_responses(250)
    responses[f"{WP_BASE}&page=2"] = json_response(f"{WP_BASE}&page=2", {"posts": []})
    with pytest.raises(DiscoveryShapeError) as info:
        run_offline(wp_config(), ORIGINS, responses)
    assert info.value.code == "COLLECTION_MERGE_INVALID" and info.value.url == f"{WP_BASE}&page=2"


def test_unreadable_body_is_a_failure_not_a_shape_error():
    responses = wp_responses(250)
    url = f"{WP_BASE}&page=2"
    responses[url] = ListingResponse(url, 200, (("Content-Type", "application/json"),), b'[{"id": 1, "li')
    outcome = run_offline(wp_config(), ORIGINS, responses)
    assert (outcome.failure, outcome.stop_reason) == (url, "listing_failed")


def test_ceiling_is_incomplete_without_a_failure_PAG_17_D_21_D_22():
    outcome = run_offline(wp_config(max_requests=5), ORIGINS, wp_responses(2819))
    assert (outcome.requests, outcome.complete, outcome.failure, outcome.stop_reason) == (5, False, None, "max_requests")
    assert len(outcome.pages) == 500


def test_a_last_allowed_request_that_ends_naturally_is_complete():
    outcome = run_offline(wp_config(max_requests=3), ORIGINS, wp_responses(200, end="empty"))
    assert (outcome.requests, outcome.complete, outcome.stop_reason) == (3, True, "empty_page")


def test_redirect_hops_and_retries_count_against_the_ceiling_D_05():
    responses = {url: ListingResponse(r.url, r.status, r.headers, r.body, requests=2)
                 for url, r in wp_responses(2819).items()}
    outcome = run_offline(wp_config(max_requests=7), ORIGINS, responses)
    assert outcome.requests == 8 and outcome.stop_reason == "max_requests" and len(outcome.pages) == 400
    state = start(wp_config(max_requests=7), ORIGINS)
    assert state.requests_left == 7


def test_identity_pointer_duplicates_collapse_on_page_id_D_28_DISC_33_DISC_34():
    url1, url2 = f"{WP_BASE}&page=1", f"{WP_BASE}&page=2"
    responses = {
        url1: json_response(url1, [{"id": 1, "link": "/a"}, {"id": 1, "link": "/b"}, {"id": 2, "link": "/a"}]),
        url2: json_response(url2, [{"id": 2, "link": "/c"}, {"id": 3, "link": "/d"}]),
    }
    outcome = run_offline(wp_config(max_requests=2), ORIGINS, responses)
    assert [(p.page_id, p.url) for p in outcome.pages] == [
        ("1", "https://www.example.com/a"), ("2", "https://www.example.com/a"), ("3", "https://www.example.com/d")]
    assert outcome.duplicates_dropped == 2


def test_links_without_identity_collapse_on_the_canonical_url_URL_19():
    config = DiscoveryConfig.from_mapping({"kind": "json_api", "url": "https://www.example.com/api/list",
                                           "records": {"pointer": "/items"}, "link": {"pointer": "/url"}})
    url = "https://www.example.com/api/list"
    body = {"items": [{"url": "/a"}, {"url": "https://WWW.EXAMPLE.COM:443/a#top"}, {"url": "/A"}, {"url": "/a/"},
                      {"url": None}, {"url": "https://"}]}
    outcome = run_offline(config, ORIGINS, {url: json_response(url, body)})
    assert [p.page_id for p in outcome.pages] == [
        "https://www.example.com/a", "https://www.example.com/A", "https://www.example.com/a/"]    # URL-06, URL-07
    assert outcome.duplicates_dropped == 1 and outcome.dropped_records == 2
    assert outcome.stop_reason == "single_request" and outcome.requests == 1                     # PAG-02


@pytest.mark.parametrize("link, reason", [
    ("http://www.example.com/a", "not https"),                       # URL-09
    ("https://other.example.org/a", "origin not in allowed_origins"),  # URL-10
    ("https://www.example.com:8443/a", "port other than 443"),      # URL-11
    ("https://user:pw@www.example.com/a", "userinfo in address"),   # URL-12
    ("ftp://www.example.com/a", "not https"),
])
def test_unreachable_links_are_listed_but_marked_URL_09_to_URL_12(link, reason):
    config = DiscoveryConfig.from_mapping({"kind": "json_api", "url": "https://www.example.com/api",
                                           "records": {"pointer": ""}, "link": {"pointer": "/u"}})
    url = "https://www.example.com/api"
    outcome = run_offline(config, ORIGINS, {url: json_response(url, [{"u": link}, {"u": "/ok"}])})
    assert [(p.unreachable is not None) for p in outcome.pages] == [True, False]
    assert outcome.pages[0].unreachable == reason


def test_offset_parameter_PAG_06_to_PAG_08():
    config = DiscoveryConfig.from_mapping({
        "kind": "json_api", "url": "https://www.example.com/api/items?limit=2",
        "pagination": {"kind": "offset_parameter", "parameter": "offset", "step": 2},
        "records": {"pointer": "/results"}, "link": {"pointer": "/href"}})
    base = "https://www.example.com/api/items?limit=2"
    responses = {f"{base}&offset={o}": json_response(f"{base}&offset={o}", {"results": [{"href": f"/i/{o + k}"} for k in range(2)]})
                 for o in (0, 2, 4)}
    responses[f"{base}&offset=6"] = json_response(f"{base}&offset=6", {"results": []})
    outcome = run_offline(config, ORIGINS, responses)
    assert [p.url.rsplit("/", 1)[1] for p in outcome.pages] == ["0", "1", "2", "3", "4", "5"]
    assert (outcome.stop_reason, outcome.requests, outcome.complete) == ("empty_page", 4, True)


# --- link_header: a GitHub-style API -------------------------------------------------------

GH = "https://api.example.com/repos/o/r/issues?per_page=2"


def gh_config(**extra):
    return DiscoveryConfig.from_mapping({"kind": "json_api", "url": GH, "pagination": {"kind": "link_header"},
                                         "records": {"pointer": ""}, "link": {"pointer": "/html_url"},
                                         "identity": {"pointer": "/number"}, **extra})


GH_ORIGINS = ["https://api.example.com", "https://www.example.com"]


def gh_page(url, numbers, link=None):
    headers = (("Link", link),) if link else ()
    return json_response(url, [{"number": n, "html_url": f"https://www.example.com/o/r/issues/{n}"} for n in numbers],
                         headers=headers)


def test_link_header_chain_PAG_09_PAG_10():
    p2 = "https://api.example.com/repositories/9/issues?per_page=2&page=2"
    p3 = "https://api.example.com/repositories/9/issues?per_page=2&page=3"
    responses = {
        GH: gh_page(GH, [1, 2], f'<{p2}>; rel="next", <{p3}>; rel="last"'),
        p2: gh_page(p2, [3, 4], f'<https://api.example.com/repositories/9/issues?per_page=2&page=1>; rel="prev", '
                                f'<{p3}>; rel="next"'),
        p3: gh_page(p3, [5], f'<{p2}>; rel="prev"'),
    }
    outcome = run_offline(gh_config(), GH_ORIGINS, responses)
    assert [p.page_id for p in outcome.pages] == ["1", "2", "3", "4", "5"]
    assert (outcome.stop_reason, outcome.complete, outcome.requests) == ("no_next", True, 3)


def test_link_header_relative_target_resolves_against_the_listing_URL_01():
    responses = {GH: gh_page(GH, [1], '<?per_page=2&page=2>; rel=next'),
                 "https://api.example.com/repos/o/r/issues?per_page=2&page=2":
                     gh_page("https://api.example.com/repos/o/r/issues?per_page=2&page=2", [2])}
    outcome = run_offline(gh_config(), GH_ORIGINS, responses)
    assert [p.page_id for p in outcome.pages] == ["1", "2"] and outcome.complete


def test_link_header_that_loops_back_is_a_natural_stop_D_22():
    responses = {GH: gh_page(GH, [1], f'<{GH.replace("https://api.example.com", "HTTPS://API.Example.com:443")}#x>; rel="next"')}
    outcome = run_offline(gh_config(), GH_ORIGINS, responses)
    assert (outcome.stop_reason, outcome.complete, outcome.requests) == ("repeated_address", True, 1)


def test_link_header_empty_page_stops_even_with_a_next_link():
    responses = {GH: gh_page(GH, [], '<https://api.example.com/p2>; rel="next"')}
    outcome = run_offline(gh_config(), GH_ORIGINS, responses)
    assert (outcome.stop_reason, outcome.requests) == ("empty_page", 1)


@pytest.mark.parametrize("target", ["https://evil.example.net/p2", "http://api.example.com/p2",
                                    "https://api.example.com:8443/p2", "https://u:p@api.example.com/p2"])
def test_off_list_next_address_ends_discovery_naming_it_D_24(target):
    outcome = run_offline(gh_config(), GH_ORIGINS, {GH: gh_page(GH, [1], f'<{target}>; rel="next"')})
    assert (outcome.stop_reason, outcome.complete, outcome.failure) == ("next_unreachable", False, target)
    assert [p.page_id for p in outcome.pages] == ["1"]


# --- cursor ------------------------------------------------------------------------------

CUR = "https://www.example.com/api/v1/records"


def cursor_config():
    return DiscoveryConfig.from_mapping({"kind": "json_api", "url": CUR,
                                         "pagination": {"kind": "cursor", "parameter": "cursor", "pointer": "/meta/next"},
                                         "records": {"pointer": "/data"}, "link": {"pointer": "/url"}})


def cur_page(url, names, token):
    return json_response(url, {"data": [{"url": f"/r/{n}"} for n in names], "meta": {"next": token}})


def test_cursor_until_the_token_goes_null_PAG_11_PAG_12():
    responses = {CUR: cur_page(CUR, ["a", "b"], "eyJpZCI6Mn0="),
                 f"{CUR}?cursor=eyJpZCI6Mn0%3D": cur_page(f"{CUR}?cursor=eyJpZCI6Mn0%3D", ["c"], 17),
                 f"{CUR}?cursor=17": cur_page(f"{CUR}?cursor=17", ["d"], None)}
    outcome = run_offline(cursor_config(), ORIGINS, responses)
    assert [p.url.rsplit("/", 1)[1] for p in outcome.pages] == ["a", "b", "c", "d"]
    assert (outcome.stop_reason, outcome.complete, outcome.requests) == ("no_next", True, 3)


def test_cursor_first_request_is_the_bare_address_D_23():
    assert start(cursor_config(), ORIGINS).next_request().url == CUR


def test_cursor_repeated_token_is_a_natural_stop():
    responses = {CUR: cur_page(CUR, ["a"], "t1"), f"{CUR}?cursor=t1": cur_page(f"{CUR}?cursor=t1", ["b"], "t1")}
    outcome = run_offline(cursor_config(), ORIGINS, responses)
    assert (outcome.stop_reason, outcome.complete, outcome.requests) == ("repeated_token", True, 2)


@pytest.mark.parametrize("token", ["", None])
def test_cursor_absent_token(token):
    outcome = run_offline(cursor_config(), ORIGINS, {CUR: cur_page(CUR, ["a"], token)})
    assert outcome.stop_reason == "no_next" and outcome.complete


# --- html_index with next_selector ------------------------------------------------------

IDX = "https://www.example.com/decisions/"


def html_page(items, next_href=None):
    links = "".join(f'<li><a class="item" href="{h}">{h}</a></li>' for h in items)
    nav = f'<a class="next" href="{next_href}">next</a>' if next_href is not None else ""
    return f"<html><body><ul>{links}</ul><nav>{nav}</nav></body></html>".encode()


def html_config(**extra):
    return DiscoveryConfig.from_mapping({"kind": "html_index", "url": IDX, "records": {"selector": "ul a.item"},
                                         "pagination": {"kind": "next_selector", "selector": "nav a.next"}, **extra})


def html(url, body):
    return ListingResponse(url, 200, (("Content-Type", "text/html; charset=utf-8"),), body)


def test_html_index_with_next_links_that_loop_back_PAG_13_PAG_14():
    responses = {
        IDX: html(IDX, html_page(["2024/a", "/decisions/2024/b"], "?page=2")),
        IDX + "?page=2": html(IDX + "?page=2", html_page(["2024/c", "2024/a"], "?page=3")),
        IDX + "?page=3": html(IDX + "?page=3", html_page(["2024/d"], "/decisions/")),       # back to page 1
    }
    outcome = run_offline(html_config(), ORIGINS, responses)
    assert [p.url for p in outcome.pages] == [IDX + "2024/a", IDX + "2024/b", IDX + "2024/c", IDX + "2024/d"]
    assert outcome.duplicates_dropped == 1
    assert (outcome.stop_reason, outcome.complete, outcome.requests) == ("repeated_address", True, 3)


def test_html_index_stops_when_nothing_matches_the_next_selector():
    outcome = run_offline(html_config(), ORIGINS, {IDX: html(IDX, html_page(["a"]))})
    assert (outcome.stop_reason, outcome.complete) == ("no_next", True)


def test_html_index_links_resolve_against_the_page_they_appeared_on_after_a_redirect():
    response = ListingResponse(IDX, 200, (("Content-Type", "text/html"),), html_page(["x"]),
                               requests=2, final_url="https://www.example.com/archive/")
    config = DiscoveryConfig.from_mapping({"kind": "html_index", "url": IDX, "records": {"selector": "a.item"}})
    outcome = run_offline(config, ORIGINS, {IDX: response})
    assert outcome.pages[0].url == "https://www.example.com/archive/x" and outcome.requests == 2


def test_html_index_page_parameter_stops_on_an_empty_page():
    config = DiscoveryConfig.from_mapping({"kind": "html_index", "url": IDX, "records": {"selector": "a.item"},
                                           "pagination": {"kind": "page_parameter", "parameter": "p"}})
    responses = {IDX + "?p=1": html(IDX + "?p=1", html_page(["a"])),
                 IDX + "?p=2": html(IDX + "?p=2", html_page([]))}
    outcome = run_offline(config, ORIGINS, responses)
    assert (outcome.stop_reason, outcome.requests, len(outcome.pages)) == ("empty_page", 2, 1)


def test_html_index_refuses_json():
    state = start(html_config(), ORIGINS)
    assert state.refusal(200, [("Content-Type", "application/json")]) == "media_type_refused"   # DISC-30
    assert state.refusal(200, [("Content-Type", "application/xhtml+xml")]) is None


# --- sitemap index with gzipped children ----------------------------------------------------

SM = "https://www.example.com/sitemap_index.xml"


def xml(url, body, media="application/xml"):
    return ListingResponse(url, 200, (("Content-Type", media),), body)


def urlset(*locs):
    entries = "".join(f"<url><loc>{loc}</loc><lastmod>2024-05-0{i % 9 + 1}</lastmod></url>" for i, loc in enumerate(locs))
    return f'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="{NS}">{entries}</urlset>'.encode()


def index(*locs):
    entries = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="{NS}">{entries}</sitemapindex>'.encode()


def sitemap_config(max_requests=64):
    return DiscoveryConfig.from_mapping({"kind": "sitemap", "url": SM, "max_requests": max_requests})


def sitemap_responses():
    c1, c2, c3 = ("https://www.example.com/sitemaps/posts-1.xml.gz", "https://www.example.com/sitemaps/posts-2.xml.gz",
                  "https://www.example.com/sitemaps/nested.xml")
    return {
        SM: xml(SM, index("/sitemaps/posts-1.xml.gz", c2, c3, "https://cdn.example.net/s.xml", c2)),
        c1: xml(c1, gzip.compress(urlset("https://www.example.com/p/1", "https://www.example.com/p/2"))),
        c2: xml(c2, gzip.compress(urlset("https://www.example.com/p/2", "https://www.example.com/p/3")), "text/xml"),
        c3: xml(c3, index("https://www.example.com/sitemaps/deeper.xml")),
        "https://www.example.com/sitemaps/deeper.xml": xml("https://www.example.com/sitemaps/deeper.xml",
                                                            urlset("https://www.example.com/p/never")),
    }


def test_sitemap_index_one_level_with_gzipped_children_DISC_22_DISC_23_D_24():
    state = start(sitemap_config(), ORIGINS)
    responses = sitemap_responses()
    asked = []
    while (request := state.next_request()) is not None:
        asked.append((request.url, request.role))
        state = state.feed(responses[request.url])
    outcome = state.outcome()
    assert asked == [(SM, "listing"), ("https://www.example.com/sitemaps/posts-1.xml.gz", "child"),
                     ("https://www.example.com/sitemaps/posts-2.xml.gz", "child"),
                     ("https://www.example.com/sitemaps/nested.xml", "child")]          # nothing deeper, no cdn
    assert [p.url for p in outcome.pages] == [f"https://www.example.com/p/{n}" for n in (1, 2, 3)]
    assert [p.revision_hint for p in outcome.pages] == ["2024-05-01", "2024-05-02", "2024-05-02"]   # DISC-20
    assert outcome.duplicates_dropped == 1
    assert (outcome.stop_reason, outcome.complete, outcome.requests) == ("sitemap_index_read", True, 4)
    assert any("nested sitemapindex" in line for line in outcome.diagnostics)
    assert any("cdn.example.net" in line for line in outcome.diagnostics)


def test_a_failed_child_is_named_and_its_siblings_still_read():
    responses = sitemap_responses()
    del responses["https://www.example.com/sitemaps/posts-1.xml.gz"]
    outcome = run_offline(sitemap_config(), ORIGINS, responses)
    assert outcome.failure == "https://www.example.com/sitemaps/posts-1.xml.gz"
    assert [p.url for p in outcome.pages] == [f"https://www.example.com/p/{n}" for n in (2, 3)]
    assert (outcome.complete, outcome.stop_reason, outcome.requests) == (False, "listing_failed", 4)


def test_sitemap_children_are_held_to_the_ceiling():
    outcome = run_offline(sitemap_config(max_requests=2), ORIGINS, sitemap_responses())
    assert (outcome.requests, outcome.stop_reason, outcome.complete) == (2, "max_requests", False)


def test_plain_urlset_and_rss_media_type_D_36():
    outcome = run_offline(sitemap_config(), ORIGINS, {SM: xml(SM, urlset("/a", "/b"), "application/rss+xml")})
    assert [p.url for p in outcome.pages] == ["https://www.example.com/a", "https://www.example.com/b"]
    assert outcome.stop_reason == "single_request" and outcome.complete
    with pytest.raises(DiscoveryShapeError):
        run_offline(sitemap_config(), ORIGINS, {SM: xml(SM, b"<rss version='2.0'><channel/></rss>", "application/rss+xml")})


def test_sitemap_with_a_doctype_is_a_failure_DISC_05():
    outcome = run_offline(sitemap_config(), ORIGINS, {SM: xml(SM, b"<!DOCTYPE urlset>" + urlset("/a"))})
    assert (outcome.failure, outcome.pages, outcome.complete) == (SM, (), False)


# --- explicit, max_pages, start-up ----------------------------------------------------------

def test_explicit_makes_no_request_DISC_24_DISC_26_D_38():
    config = DiscoveryConfig.from_mapping({"kind": "explicit", "members": [
        {"page_id": "annual-2023", "url": "https://WWW.example.com/reports/2023#summary"},
        {"page_id": "annual-2022", "url": "https://elsewhere.example.org/2022"},
        {"page_id": "annual-2023", "url": "https://www.example.com/dup"}]})
    state = start(config, ORIGINS)
    assert state.next_request() is None and state.done
    outcome = state.outcome()
    assert [(p.page_id, p.url, p.unreachable) for p in outcome.pages] == [
        ("annual-2023", "https://www.example.com/reports/2023", None),
        ("annual-2022", "https://elsewhere.example.org/2022", "origin not in allowed_origins")]
    assert (outcome.requests, outcome.complete, outcome.stop_reason, outcome.duplicates_dropped) == (0, True, "explicit", 1)


def test_max_pages_stops_admission_D_18():
    outcome = run_offline(wp_config(), ORIGINS, wp_responses(2819), max_pages=150)
    assert (len(outcome.pages), outcome.requests, outcome.stop_reason, outcome.complete) == (150, 2, "max_pages", False)


def test_feeding_the_wrong_address_is_a_programming_error():
    state = start(wp_config(), ORIGINS)
    with pytest.raises(ValueError):
        state.feed(json_response("https://www.example.com/other", []))


def test_from_mapping_defaults():
    config = DiscoveryConfig.from_mapping({"kind": "sitemap", "url": SM})
    assert (config.max_requests, config.pagination.kind) == (64, "none")                       # REG-18, REG-19
    page = DiscoveryConfig.from_mapping({"kind": "html_index", "url": IDX, "records": {"selector": "a"},
                                         "pagination": {"kind": "page_parameter", "parameter": "page"}})
    assert page.pagination.start == 1                                                            # PAG-03
    offset = DiscoveryConfig.from_mapping({"kind": "json_api", "url": IDX, "records": {"pointer": ""},
                                           "link": {"pointer": "/l"},
                                           "pagination": {"kind": "offset_parameter", "parameter": "o"}})
    assert (offset.pagination.start, offset.pagination.step) == (0, 1)                          # PAG-06


@pytest.mark.parametrize("mapping", [
    {"kind": "rss", "url": SM},
    {"kind": "sitemap", "url": SM, "pagination": {"kind": "cursor", "parameter": "c", "pointer": "/c"}},
    {"kind": "json_api", "url": SM, "records": {"pointer": "x"}, "link": {"pointer": "/l"}},
    {"kind": "json_api", "url": SM, "records": {"pointer": ""}},
    {"kind": "html_index", "url": SM},
    {"kind": "json_api", "url": SM, "records": {"pointer": ""}, "link": {"pointer": "/l"},
     "pagination": {"kind": "page_parameter"}},
    {"kind": "sitemap", "url": SM, "max_requests": 0},
])
def test_from_mapping_refuses_unreadable_blocks(mapping):
    from collection.discover.driver import DiscoveryConfigError
    with pytest.raises(DiscoveryConfigError):
        DiscoveryConfig.from_mapping(mapping)


def test_every_stop_reason_is_in_the_table_and_names_clauses():
    for name, reason in STOP_REASONS.items():
        assert reason.name == name and reason.clauses
    assert {name for name, r in STOP_REASONS.items() if not r.complete} == {
        "max_requests", "max_pages", "listing_failed", "next_unreachable"}
