"""Hostile origins, each against the loopback server through the real urllib3 transport.

Clauses: FETCH-20/D-11 (attempt deadline), FETCH-14/D-20 (byte caps), D-08 (retries),
D-25 (redirects), D-62 (failure classes), FETCH-02 (no credentials)."""

import tracemalloc

import trustme

from collection.fetch.fetcher import FETCHED, FAILED
from fetch_helpers import HTML, make_fetcher, page
from loopback import Reply, gzip_bomb


def _pages(server):
    return [r for r in server.requests if r.path != "/robots.txt"]


def test_one_byte_per_second_drip_is_cut_at_the_attempt_deadline(loopback):  # FETCH-20, D-11
    loopback.route("/drip", Reply(200, HTML, b"x" * 1000, drip=1))
    fetcher = make_fetcher(loopback, request_timeout=1.5, retries=0, read_gap_seconds=0.5)
    out = fetcher.fetch(page("/drip"))
    assert (out.outcome, out.failure_code, out.liveness) == (FAILED, "timeout", "error")
    assert fetcher.budget.counts().bytes < 10     # a few drips, never the 1000 bytes


def test_hang_before_headers_times_out_and_is_retried(loopback):  # FETCH-20, FETCH-21, D-08
    loopback.route("/hang", Reply(200, HTML, b"x", delay=30))
    out = make_fetcher(loopback, request_timeout=0.5, retries=1).fetch(page("/hang"))
    assert (out.failure_code, out.requests, out.retries) == ("timeout", 2, 1)


def test_oversized_body_stops_within_64_kib_of_the_cap(loopback):  # FETCH-14, D-20
    cap = 1_000_000
    loopback.route("/big", Reply(200, HTML, b"y" * (8 * cap)))
    fetcher = make_fetcher(loopback, max_source_bytes=cap)
    out = fetcher.fetch(page("/big"))
    assert out.failure_code == "max_source_bytes"
    assert cap - 64 * 1024 <= fetcher.budget.counts().bytes <= cap


def test_endless_chunked_body_is_cut(loopback):  # FETCH-14
    loopback.route("/endless", Reply(200, HTML, b"z" * 8192, endless=True))
    fetcher = make_fetcher(loopback, max_body_bytes=2_000_000)
    out = fetcher.fetch(page("/endless"))
    assert out.failure_code == "body_too_large"
    assert fetcher.budget.counts().bytes <= 2_000_000 + 64 * 1024


def test_lying_content_length(loopback):  # D-62
    loopback.route("/lie", Reply(200, HTML, b"short body", content_length=5000))
    out = make_fetcher(loopback, retries=0, request_timeout=2).fetch(page("/lie"))
    assert (out.outcome, out.failure_code) == (FAILED, "body_incomplete")


def test_broken_gzip(loopback):  # D-62
    loopback.route("/gz", Reply(200, [*HTML, ("Content-Encoding", "gzip")], raw_body=b"\x1f\x8b\x08\x00garbage-not-deflate" * 10))
    out = make_fetcher(loopback, retries=2).fetch(page("/gz"))
    assert (out.outcome, out.failure_code, out.requests) == (FAILED, "body_incomplete", 1)


def test_gzip_bomb_memory_stays_bounded(loopback):  # FETCH-14, GUIDE: cap decompressed size
    bomb = gzip_bomb(128 * 1024 * 1024)
    loopback.route("/bomb", Reply(200, [*HTML, ("Content-Encoding", "gzip")], raw_body=bomb))
    fetcher = make_fetcher(loopback)
    tracemalloc.start()
    try:
        out = fetcher.fetch(page("/bomb"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.failure_code == "body_too_large"
    assert peak < 64 * 1024 * 1024


def test_redirect_loop(loopback):  # D-25
    loopback.route("/a", Reply(302, [("Location", "/b")]))
    loopback.route("/b", Reply(302, [("Location", "/a")]))
    out = make_fetcher(loopback).fetch(page("/a"))
    assert out.failure_code == "too_many_redirects"
    assert [r.target for r in _pages(loopback)] == ["/a", "/b"]


def test_six_redirects(loopback):  # D-25: at most 5 hops, each charged
    for n in range(6):
        loopback.route(f"/r{n}", Reply(301, [("Location", f"/r{n + 1}")]))
    loopback.route("/r6", Reply(200, HTML, b"never"))
    out = make_fetcher(loopback).fetch(page("/r0"))
    assert (out.failure_code, out.requests) == ("too_many_redirects", 6)
    assert "/r6" not in [r.target for r in loopback.requests]


def test_five_redirects_are_followed(loopback):  # D-25
    for n in range(5):
        loopback.route(f"/r{n}", Reply(301, [("Location", f"/r{n + 1}")]))
    loopback.route("/r5", Reply(200, HTML, b"end"))
    out = make_fetcher(loopback).fetch(page("/r0"))
    assert (out.outcome, out.requests, out.redirects) == (FETCHED, 6, 5)


def test_hostname_mismatch(loopback):  # D-62: TLS errors; D-58: robots unreachable disallows
    for robots, code in ((False, "tls_error"), (True, "robots_disallowed")):
        fetcher = make_fetcher(loopback, allowed=("https://mismatch.example.net",), robots=robots)
        fetcher.egress = type(fetcher.egress)({("mismatch.example.net", 443): ("127.0.0.1", loopback.port)})
        out = fetcher.fetch(page("/p", origin="https://mismatch.example.net"))
        assert out.outcome == FAILED and out.failure_code == code
    assert loopback.requests == []


def test_untrusted_ca(loopback, tmp_path):  # D-62
    other = tmp_path / "other-ca.pem"
    trustme.CA().cert_pem.write_to_path(str(other))
    out = make_fetcher(loopback, ca_bundle=str(other), robots=False).fetch(page("/p"))
    assert out.failure_code == "tls_error"
    assert loopback.requests == []


def test_connection_reset(loopback):  # D-08, D-62
    loopback.route("/p", Reply(reset=True))
    out = make_fetcher(loopback, retries=1).fetch(page("/p"))
    assert (out.failure_code, out.requests, out.retries) == ("connection_error", 2, 1)


def test_reset_mid_body_is_retried(loopback):  # D-08
    loopback.route("/p", Reply(200, HTML, b"x" * 100_000, reset_after=1000), Reply(200, HTML, b"ok"))
    out = make_fetcher(loopback, retries=1).fetch(page("/p"))
    assert (out.outcome, out.body, out.retries) == (FETCHED, b"ok", 1)


def test_429_and_503_honour_retry_after(loopback):  # D-08
    loopback.route("/a", Reply(429, [("Retry-After", "30")]), Reply(200, HTML, b"a"))
    loopback.route("/b", Reply(503, [("Retry-After", "45")]), Reply(200, HTML, b"b"))
    fetcher = make_fetcher(loopback)
    clock = fetcher.clock
    for path, wait in (("/a", 30), ("/b", 45)):
        before = clock.monotonic()
        out = fetcher.fetch(page(path))
        assert (out.outcome, out.retries) == (FETCHED, 1)
        assert clock.monotonic() - before >= wait


def test_500_storm_gives_up_after_retries(loopback):  # FETCH-21, D-08
    loopback.route("/p", Reply(500))
    fetcher = make_fetcher(loopback, retries=3)
    out = fetcher.fetch(page("/p"))
    assert (out.failure_code, out.liveness, out.requests, out.retries) == ("http_status_500", "error", 4, 3)
    assert fetcher.clock.monotonic() >= 1 + 2 + 4      # exponential backoff from min_interval


def test_cookies_set_by_the_origin_are_never_sent_back(loopback):  # FETCH-02
    loopback.route("*", Reply(200, [*HTML, ("Set-Cookie", "id=1; Secure"), ("Set-Cookie", "b=2")], b"x"))
    fetcher = make_fetcher(loopback)
    for n in range(3):
        fetcher.fetch(page(f"/p{n}"))
    assert len(loopback.requests) == 4
    assert all(r.header("Cookie") is None and r.header("Authorization") is None for r in loopback.requests)
