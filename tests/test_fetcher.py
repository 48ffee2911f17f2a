"""The fetcher against a loopback HTTPS server through the real urllib3 transport.

Politeness waits run on a VirtualClock (they jump), except the one test that checks the
floor where the origin sees it. Clause IDs are named per test."""

import hashlib
import threading

import pytest

from collection.fetch import budgets as B
from collection.fetch.clock import SystemClock, VirtualClock
from collection.fetch.fetcher import FETCHED, FAILED, SKIPPED_ORIGIN, STOPPED, FetchSpec
from fetch_helpers import HTML, ORIGIN, listing, make_fetcher, page
from loopback import Reply


def _pages(server):
    return [r for r in server.requests if r.path != "/robots.txt"]


def test_fetch_returns_decoded_body_digest_and_final_url(loopback):  # D-30, FETCH-01
    body = "<p>décision</p>".encode() * 500
    loopback.route("/d/1", Reply(200, HTML, body, gzip=True))
    out = make_fetcher(loopback).fetch(page("/d/1"))
    assert out.outcome == FETCHED
    assert out.body == body
    assert out.content_sha256 == hashlib.sha256(body).hexdigest()
    assert out.final_url == ORIGIN + "/d/1"
    assert out.requests == 1
    assert [r.method for r in loopback.requests] == ["GET", "GET"]


def test_user_agent_accept_and_no_credentials(loopback):  # FETCH-02, FETCH-24, D-57
    loopback.route("/robots.txt", Reply(200, [("Content-Type", "text/plain"), ("Set-Cookie", "r=1")], b""))
    loopback.route("/a", Reply(200, [*HTML, ("Set-Cookie", "session=abc; Path=/"),
                                      ("WWW-Authenticate", "Basic realm=x")], b"a"))
    loopback.route("/b", Reply(200, HTML, b"b"))
    fetcher = make_fetcher(loopback)
    fetcher.fetch(page("/a"))
    fetcher.fetch(page("/b"))
    assert len(loopback.requests) == 3
    for rec in loopback.requests:
        assert rec.header("User-Agent") == "CollectionBot-PublicHttps/1.0 (+https://collection.invalid/crawler)"
        assert rec.header("Cookie") is None and rec.header("Authorization") is None
        assert rec.method == "GET"
    assert loopback.requests[1].header("Accept") == "text/html"


def test_robots_fetched_first_once_per_origin_and_not_charged(loopback):  # FETCH-22, D-06, D-58
    loopback.route("/robots.txt", Reply(200, [("Content-Type", "text/plain")], b"User-agent: *\nAllow: /\n"))
    loopback.route("*", Reply(200, HTML, b"x"))
    fetcher = make_fetcher(loopback)
    for n in range(3):
        assert fetcher.fetch(page(f"/p{n}")).outcome == FETCHED
    assert [r.path for r in loopback.requests] == ["/robots.txt", "/p0", "/p1", "/p2"]
    counts = fetcher.budget.counts()
    assert counts.robots == 1 and counts.charged == 3


def test_robots_disallow_for_own_token_makes_no_request(loopback):  # FETCH-23, D-48, D-57
    loopback.route("/robots.txt", Reply(200, [("Content-Type", "text/plain")],
                                        b"User-agent: CollectionBot\nDisallow: /private\n\nUser-agent: *\nAllow: /\n"))
    loopback.route("*", Reply(200, HTML, b"x"))
    fetcher = make_fetcher(loopback)
    out = fetcher.fetch(page("/private/1"))
    assert (out.outcome, out.failure_code, out.liveness) == (FAILED, "robots_disallowed", "blocked")
    assert out.requests == 0
    assert fetcher.fetch(page("/public")).outcome == FETCHED
    assert [r.path for r in loopback.requests] == ["/robots.txt", "/public"]


@pytest.mark.parametrize("robots, allowed", [
    (Reply(404), True),                                    # 4xx: allow all
    (Reply(500), False),                                   # 5xx: disallow all
    (Reply(200, [("Content-Type", "text/plain")], b"User-agent: *\nDisallow: /", reset_after=5,
           content_length=50), False),                     # truncated body: disallow all
    (Reply(301, [("Location", "/robots-real.txt")]), True),  # redirect followed to a 404
])
def test_robots_status_rules(loopback, robots, allowed):  # D-58
    loopback.route("/robots.txt", robots)
    loopback.route("/robots-real.txt", Reply(404))
    loopback.route("/p", Reply(200, HTML, b"x"))
    out = make_fetcher(loopback).fetch(page("/p"))
    assert (out.outcome == FETCHED) is allowed
    if not allowed:
        assert out.failure_code == "robots_disallowed"


def test_redirect_once_costs_two_requests(loopback):  # FETCH-06, FETCH-08, D-25
    loopback.route("/old", Reply(301, [("Location", "/new")]))
    loopback.route("/new", Reply(200, HTML, b"new"))
    fetcher = make_fetcher(loopback)
    out = fetcher.fetch(page("/old"))
    assert out.outcome == FETCHED and out.final_url == ORIGIN + "/new"
    assert (out.requests, out.redirects) == (2, 1)
    assert fetcher.budget.counts().redirect == 1


def test_redirect_and_retry_costs_three(loopback):  # FETCH-07, FETCH-08
    loopback.route("/old", Reply(301, [("Location", "/new")]))
    loopback.route("/new", Reply(503), Reply(200, HTML, b"new"))
    out = make_fetcher(loopback).fetch(page("/old"))
    assert out.outcome == FETCHED and out.requests == 3 and out.retries == 1


@pytest.mark.parametrize("location, landed", [
    ("https://elsewhere.example.net/x", "https://elsewhere.example.net/x"),   # URL-13
    ("http://www.example.com/x", "http://www.example.com/x"),                   # not https
    ("https://www.example.com:8443/x", "https://www.example.com:8443/x"),       # URL-11
    ("https://user:pw@www.example.com/x", "https://user:pw@www.example.com/x"), # URL-12
])
def test_redirect_off_allowlist_is_skipped_and_never_requested(loopback, location, landed):  # URL-13..15, D-26
    loopback.route("/p", Reply(302, [("Location", location)]))
    loopback.route("*", Reply(200, HTML, b"must not be read"))
    fetcher = make_fetcher(loopback)
    out = fetcher.fetch(page("/p"))
    assert out.outcome == SKIPPED_ORIGIN and out.landed_url == landed and out.body is None
    assert [r.target for r in _pages(loopback)] == ["/p"]
    assert fetcher.budget.counts().bytes == 0


def test_budget_stops_before_sending_what_it_cannot_pay(loopback):  # FETCH-09, FETCH-10
    loopback.route("/a", Reply(200, HTML, b"a"))
    loopback.route("/b", Reply(301, [("Location", "/b2")]))
    loopback.route("/b2", Reply(200, HTML, b"b"))
    fetcher = make_fetcher(loopback, max_requests=2)
    assert fetcher.fetch(page("/a")).outcome == FETCHED
    out = fetcher.fetch(page("/b"))
    assert (out.outcome, out.stopped_by) == (STOPPED, B.MAX_REQUESTS)
    assert [r.target for r in _pages(loopback)] == ["/a", "/b"]
    assert fetcher.budget.exhausted == B.MAX_REQUESTS


def test_reservations_hold_with_requests_in_flight(loopback):  # FETCH-05, D-09
    loopback.route("*", Reply(200, HTML, b"x", delay=0.2))
    loopback.route("/robots.txt", Reply(404))
    fetcher = make_fetcher(loopback, max_requests=3, concurrency=25,
                           clock=SystemClock(), min_interval=1, robots=False)
    hosts = ["www.example.com", "a.example.com", "b.example.com", "c.example.com", "cdn.example.com"]
    fetcher.allowed = frozenset(f"https://{h}" for h in hosts)
    outcomes = []
    threads = [threading.Thread(target=lambda h=h: outcomes.append(fetcher.fetch(FetchSpec(f"https://{h}/x", "page", ("text/html",)))))
               for h in hosts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(loopback.requests) == 3
    assert sorted(o.outcome for o in outcomes) == [FETCHED] * 3 + [STOPPED] * 2


def test_listing_charges_both_budgets(loopback):  # D-05
    loopback.route("*", Reply(200, [("Content-Type", "application/json")], b"[]"))
    fetcher = make_fetcher(loopback, discovery_max_requests=2)
    assert fetcher.fetch(listing("/l?page=1")).outcome == FETCHED
    assert fetcher.fetch(listing("/l?page=2")).outcome == FETCHED
    out = fetcher.fetch(listing("/l?page=3"))
    assert (out.outcome, out.stopped_by) == (STOPPED, B.DISCOVERY_MAX_REQUESTS)
    assert fetcher.budget.counts().listing == 2 and fetcher.budget.requests_left() == 998


@pytest.mark.parametrize("headers", [[("Content-Type", "application/pdf")], []])
def test_media_type_refused_before_the_body_is_read(loopback, headers):  # D-37, DISC-31
    loopback.route("/p", Reply(200, headers, b"%PDF" * 100000))
    fetcher = make_fetcher(loopback)
    out = fetcher.fetch(page("/p"))
    assert (out.outcome, out.failure_code) == (FAILED, "media_type_refused")
    assert fetcher.budget.counts().bytes == 0


def test_max_source_bytes_fails_page_and_names_ceiling(loopback):  # FETCH-14, D-20
    loopback.route("/p", Reply(200, HTML, b"x" * 300_000))
    fetcher = make_fetcher(loopback, max_source_bytes=100_000)
    out = fetcher.fetch(page("/p"))
    assert (out.outcome, out.failure_code) == (FAILED, "max_source_bytes")
    assert fetcher.budget.counts().bytes == 100_000
    assert fetcher.budget.exhausted == B.MAX_SOURCE_BYTES


@pytest.mark.parametrize("status, liveness", [(404, "gone"), (410, "gone"), (403, "blocked"), (400, "error")])
def test_4xx_fails_without_retry(loopback, status, liveness):  # D-08, D-53, D-62
    loopback.route("/p", Reply(status, HTML, b"no"))
    out = make_fetcher(loopback, retries=3).fetch(page("/p"))
    assert (out.outcome, out.failure_code, out.liveness) == (FAILED, f"http_status_{status}", liveness)
    assert out.requests == 1 and len(_pages(loopback)) == 1


def test_byte_ranges_each_charged_and_guarded_by_if_range(loopback):  # FETCH-25, D-07
    body = bytes(range(256)) * 4096          # 1 MiB
    loopback.route("/big", Reply(200, HTML, body, ranges=True, etag='"v1"'))
    fetcher = make_fetcher(loopback, range_threshold=256 * 1024, range_size=256 * 1024)
    out = fetcher.fetch(page("/big"))
    assert out.outcome == FETCHED and out.body == body
    assert out.content_sha256 == hashlib.sha256(body).hexdigest()
    assert (out.requests, out.ranges) == (4, 3)
    ranged = _pages(loopback)[1:]
    assert [r.header("Range") for r in ranged] == [
        "bytes=262144-524287", "bytes=524288-786431", "bytes=786432-1048575"]
    assert all(r.header("If-Range") == '"v1"' for r in ranged)
    assert fetcher.budget.counts().range == 3


def test_changed_object_is_never_stitched(loopback):  # FETCH-25
    old, new = b"A" * 600_000, b"B" * 600_000
    loopback.route("/big", Reply(200, HTML, old, ranges=True, etag='"v1"'),
                   Reply(200, HTML, new, ranges=True, etag='"v2"'))
    fetcher = make_fetcher(loopback, range_threshold=100_000, range_size=200_000)
    out = fetcher.fetch(page("/big"))
    assert out.outcome == FETCHED and out.body == new


def test_no_ranges_without_a_validator(loopback):  # FETCH-25
    body = b"z" * 600_000
    loopback.route("/big", Reply(200, HTML, body, ranges=True))
    out = make_fetcher(loopback, range_threshold=100_000, range_size=200_000).fetch(page("/big"))
    assert out.outcome == FETCHED and out.body == body and out.requests == 1


def test_run_deadline_stops_new_work(loopback):  # FETCH-15, D-60
    loopback.route("*", Reply(200, HTML, b"x"))
    clock = VirtualClock()
    fetcher = make_fetcher(loopback, clock=clock, deadline=2.5, robots=False)
    results = [fetcher.fetch(page(f"/p{n}")).outcome for n in range(5)]
    assert results == [FETCHED, FETCHED, FETCHED, STOPPED, STOPPED]
    assert fetcher.budget.exhausted == B.DEADLINE


def test_politeness_floor_holds_at_the_server(loopback):  # FETCH-19, D-10 (wall clock)
    loopback.route("*", Reply(200, HTML, b"x"))
    fetcher = make_fetcher(loopback, clock=SystemClock())
    for n in range(2):
        fetcher.fetch(page(f"/p{n}"))
    arrivals = [r.arrived for r in loopback.requests]
    assert len(arrivals) == 3
    assert min(b - a for a, b in zip(arrivals, arrivals[1:])) >= 1.0


def _fetch_in_threads(fetcher, clock, jobs, workers: int) -> list:
    """`jobs` dealt round-robin to `workers` threads enrolled on the virtual `clock`, all
    sharing `fetcher`; the outcomes in the order they finished."""
    results, lock = [], threading.Lock()
    participants = [clock.enroll() for _ in range(workers)]

    def worker(part, mine):
        with part:
            for spec in mine:
                out = fetcher.fetch(spec)
                with lock:
                    results.append(out)

    threads = [threading.Thread(target=worker, args=(participants[i], jobs[i::workers])) for i in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_threads_share_one_fetcher(loopback):  # FETCH-16, FETCH-18
    loopback.route("*", Reply(200, HTML, b"x", delay=0.01))
    clock = VirtualClock()
    hosts = ["www.example.com", "a.example.com", "b.example.com"]
    fetcher = make_fetcher(loopback, clock=clock, concurrency=4,
                           allowed=tuple(f"https://{h}" for h in hosts))
    jobs = [FetchSpec(f"https://{h}/p{n}", "page", ("text/html",)) for h in hosts for n in range(4)]
    results = _fetch_in_threads(fetcher, clock, jobs, 4)
    assert sorted(o.outcome for o in results) == [FETCHED] * 12
    assert fetcher.budget.counts().page == 12 and fetcher.budget.counts().robots == 3


def test_more_threads_than_connections_on_one_host_never_stall_the_virtual_clock(loopback):  # FETCH-18
    """Five threads, one host, two pooled connections. A thread holding a connection while
    it sleeps for its politeness slot must never leave another blocked inside the pool:
    that block is invisible to the virtual clock, so time stood still until the request
    timed out and was retried."""
    loopback.route("*", Reply(200, HTML, b"x", delay=0.005))
    clock = VirtualClock()
    fetcher = make_fetcher(loopback, clock=clock, concurrency=5)
    jobs = [FetchSpec(f"https://www.example.com/p{n}", "page", ("text/html",)) for n in range(15)]
    results = _fetch_in_threads(fetcher, clock, jobs, 5)
    assert sorted(o.outcome for o in results) == [FETCHED] * 15
    counts = fetcher.budget.counts()
    assert (counts.page, counts.retry) == (15, 0)
    assert all(o.retries == 0 for o in results)


def test_a_listing_4xx_keeps_its_error_body_for_discovery(loopback):
    """D-03, D-13: WordPress answers 400 past the last page; discovery must read that body."""
    body = b'{"code":"rest_post_invalid_page_number","data":{"status":400}}'
    loopback.route("/wp-json/wp/v2/decisions", Reply(400, [("Content-Type", "application/json")], body))
    loopback.route("/gone", Reply(404, list(HTML), b"<p>missing</p>"))
    fetcher = make_fetcher(loopback)
    outcome = fetcher.fetch(listing("/wp-json/wp/v2/decisions?page=30"))
    assert (outcome.outcome, outcome.failure_code, outcome.status) == (FAILED, "http_status_400", 400)
    assert outcome.body == body and outcome.retries == 0
    page_outcome = fetcher.fetch(page("/gone"))          # a detail page's error body is never kept
    assert (page_outcome.failure_code, page_outcome.body) == ("http_status_404", None)
