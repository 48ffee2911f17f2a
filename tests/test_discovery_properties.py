"""Properties of every grammar over any sequence of responses (PAG-05..PAG-14, PAG-17, D-22, D-24, URL-19).

Whatever a publisher answers, discovery never asks for more than discovery.max_requests
listings, never asks for one address twice, and always ends.
"""

import json

from hypothesis import HealthCheck, given, settings, strategies as st

from collection.discover.driver import (
    DiscoveryConfig,
    DiscoveryShapeError,
    ListingFailure,
    ListingResponse,
    STOP_REASONS,
    start,
)

HOST = "https://www.example.com"
ORIGINS = [HOST]
# A small pool, so loops, repeats and off-list addresses happen often.
POOL = ["/list", "/list?page=2", "/list?page=3", "list?page=2", "/LIST", "/list#x", "https://WWW.example.com:443/list?page=3",
        "https://evil.example.net/list", "http://www.example.com/list", "/d/1", "/d/2", "/d/1#a", "", "https://"]

CONFIGS = [
    {"kind": "json_api", "url": f"{HOST}/list", "records": {"pointer": "/items"}, "link": {"pointer": "/u"},
     "pagination": {"kind": "page_parameter", "parameter": "page"}},
    {"kind": "json_api", "url": f"{HOST}/list", "records": {"pointer": "/items"}, "link": {"pointer": "/u"},
     "pagination": {"kind": "offset_parameter", "parameter": "o", "step": 2}},
    {"kind": "json_api", "url": f"{HOST}/list", "records": {"pointer": "/items"}, "link": {"pointer": "/u"},
     "identity": {"pointer": "/id"}, "pagination": {"kind": "link_header"}},
    {"kind": "json_api", "url": f"{HOST}/list", "records": {"pointer": "/items"}, "link": {"pointer": "/u"},
     "pagination": {"kind": "cursor", "parameter": "c", "pointer": "/next"}},
    {"kind": "json_api", "url": f"{HOST}/list", "records": {"pointer": "/items"}, "link": {"pointer": "/u"}},
    {"kind": "html_index", "url": f"{HOST}/list", "records": {"selector": "a.i"},
     "pagination": {"kind": "next_selector", "selector": "a.n"}},
    {"kind": "html_index", "url": f"{HOST}/list", "records": {"selector": "a.i"},
     "pagination": {"kind": "page_parameter", "parameter": "page", "first": 0}},
    {"kind": "sitemap", "url": f"{HOST}/list"},
]


def body_for(kind, draw):
    links = draw(st.lists(st.sampled_from(POOL), max_size=4))
    nxt = draw(st.one_of(st.none(), st.sampled_from(POOL)))
    if kind == "json_api":
        items = [{"u": link, "id": draw(st.sampled_from([1, 2, "a", None]))} for link in links]
        token = draw(st.sampled_from([None, "", "t1", "t2", "t3", 5]))
        return "application/json", json.dumps({"items": items, "next": token}).encode()
    if kind == "html_index":
        anchors = "".join(f'<a class="i" href="{link}">x</a>' for link in links)
        more = f'<a class="n" href="{nxt}">next</a>' if nxt is not None else ""
        return "text/html", f"<html><body>{anchors}{more}</body></html>".encode()
    if draw(st.booleans()):
        entries = "".join(f"<sitemap><loc>{link or '/x'}</loc></sitemap>" for link in links)
        return "application/xml", f"<sitemapindex>{entries}</sitemapindex>".encode()
    entries = "".join(f"<url><loc>{link or '/x'}</loc></url>" for link in links)
    return "application/xml", f"<urlset>{entries}</urlset>".encode()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(range(len(CONFIGS))), st.integers(1, 6))
def test_request_bound_and_no_repeat_hold_for_any_responses(data, which, max_requests):
    config = DiscoveryConfig.from_mapping({**CONFIGS[which], "max_requests": max_requests})
    state = start(config, ORIGINS)
    asked: list[str] = []
    for _ in range(100):
        request = state.next_request()
        if request is None:
            break
        assert state.spent < max_requests and state.listings < max_requests                               # PAG-17: never past the ceiling
        assert request.url not in asked                                    # no address twice
        asked.append(request.url)
        draw = data.draw
        choice = draw(st.sampled_from(["ok", "ok", "ok", "status", "failure", "media"]))
        cost = draw(st.integers(0, 3))
        if choice == "failure":
            result = ListingFailure(request.url, draw(st.sampled_from(["timeout", "robots_disallowed", "max_requests"])), cost)
        else:
            media, body = body_for(config.kind, draw)
            status = draw(st.sampled_from([400, 404, 500])) if choice == "status" else 200
            if choice == "media":
                media = "text/plain"
            result = ListingResponse(request.url, status, (("Content-Type", media),), body, requests=cost)
        try:
            state = state.feed(result)
        except DiscoveryShapeError as exc:
            assert exc.code == "COLLECTION_MERGE_INVALID"
            return
    else:
        raise AssertionError("discovery did not end")
    outcome = state.outcome()
    assert len(asked) <= max_requests
    assert outcome.stop_reason in STOP_REASONS
    assert outcome.complete == (STOP_REASONS[outcome.stop_reason].complete and outcome.failure is None)
    ids = [page.page_id for page in outcome.pages]
    assert len(ids) == len(set(ids))                                        # D-28
    for page in outcome.pages:
        assert page.url == page.url.split("#")[0]                           # canonical: no fragment
    if outcome.failure is None:
        assert outcome.stop_reason not in ("listing_failed", "next_unreachable")
