"""Whatever a publisher sends, nothing raises (issue 15): random status codes and header values
through the real fetcher at the loopback server, and random listing scalars through discovery
into a ledger written and read back as the state file it becomes.

The fetcher turns any exception it did not plan for into `internal_error` (so a worker never
dies); these properties assert that no answer ever gets that far — every answer maps to a
planned outcome and a code with a liveness class (D-45, D-62, REF-13). Discovery may refuse a
listing with DiscoveryShapeError (REF-07) and nothing else; every page it lists must be text
a UTF-8 ledger can hold and give back (D-01, D-02).
"""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st
from loopback import LoopbackServer, Reply

from collection import codes
from collection.discover.driver import DiscoveryConfig, DiscoveryShapeError, ListingResponse, run_offline
from collection.fetch.fetcher import FAILED, FETCHED, SKIPPED_ORIGIN, STOPPED
from collection.fetch.holds import HELD
from collection.merge.engine import prepare
from collection.merge.ledger import read_ledger, write_ledger
from collection.merge.outcomes import rfc3339
from fetch_helpers import listing, make_fetcher, page

HOST = "https://www.example.com"


@pytest.fixture(scope="module")
def server():
    with LoopbackServer() as running:
        running.route("/robots.txt", Reply(404, (("Content-Type", "text/plain"),), b""))
        yield running


# Header values a server can put on the wire (http.server writes latin-1): controls, quotes,
# separators, non-ASCII, numbers that overflow, dates that do not parse.
latin1 = st.text(st.characters(min_codepoint=0, max_codepoint=255, blacklist_characters="\r\n"), max_size=40)
header_value = st.one_of(
    latin1,
    st.sampled_from(["", "0", "-1", "99999999999999999999999", "1e400", "nan", "bytes 0-3/2", "bytes */0",
                     "gzip", "br", "zstd", "gzip, br", "identity", "chunked", "text/html; charset=\x00",
                     "application/json; charset=utf-99", "https://[::1", "//x", "https://evil.example.net/",
                     "Wed, 31 Dec 9999 23:59:59 GMT", "Thu, 01 Jan 1970 00:00:00 GMT", "W/\"x\"", "\"e\""]),
)
header_name = st.sampled_from(["Content-Type", "Content-Encoding", "Location", "Retry-After", "Content-Range",
                               "Accept-Ranges", "ETag", "Last-Modified", "Link", "X-Anything"])
answer = st.fixed_dictionaries({
    "status": st.one_of(st.integers(100, 999), st.sampled_from([200, 206, 301, 302, 404, 429, 503, 999])),
    "headers": st.lists(st.tuples(header_name, header_value), max_size=5),
    "body": st.binary(max_size=64),
    "listing": st.booleans(),
})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(answer)
@example({"status": 429, "headers": [("Retry-After", "301")], "body": b"", "listing": False})
@example({"status": 503, "headers": [("Retry-After", "120")], "body": b"", "listing": False})
def test_any_status_and_header_values_give_a_planned_outcome(server, example):
    headers = [*example["headers"]]
    if not any(k == "Content-Type" for k, _ in headers):
        headers.append(("Content-Type", "application/json" if example["listing"] else "text/html"))
    server.route("/x", Reply(example["status"], headers, example["body"]))
    server.route("/y", Reply(200, (("Content-Type", "text/html"),), b"<p>y</p>"))
    fetcher = make_fetcher(server, retries=1, request_timeout=2)
    spec = listing("/x") if example["listing"] else page("/x")
    out = fetcher.fetch(spec)
    assert out.outcome in (FETCHED, FAILED, SKIPPED_ORIGIN, STOPPED)
    assert out.failure_code != "internal_error", out.detail
    if out.outcome == FAILED:
        assert codes.liveness(out.failure_code) in codes.LIVENESS_CLASSES
    if out.outcome == FETCHED:
        assert 200 <= out.status < 300 and out.status != 206
    # the fetcher is still whole: the next page of the same host is fetched, unless the answer was
    # an overload (429/503) whose Retry-After holds the origin past what a run waits (issue 24
    # point 6): then that origin's other pages stop as HELD and stay pending
    after = fetcher.fetch(page("/y"))
    overload_hold = example["status"] in (429, 503) and any(k == "Retry-After" for k, _ in headers)
    if overload_hold and after.outcome == STOPPED:
        assert after.stopped_by == HELD and fetcher.held_hosts == {"www.example.com"}, after
    else:
        assert after.outcome == FETCHED, after


# --- discovery: any listing scalar ---------------------------------------------------------------

scalar = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),                                                   # any code point, surrogates too
    st.sampled_from(["\ud800x", "x\udfff", "/d/\ud800", "https://www.example.com/\udc80", "", " ", "\x00",
                     "https://[::1", "//www.example.com/p", "javascript:alert(1)", "../../p", "?q=\ud800",
                     "a" * 200_000]),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
record = st.fixed_dictionaries({"link": scalar, "id": scalar, "rev": scalar})
CONFIG = DiscoveryConfig.from_mapping({
    "kind": "json_api", "url": f"{HOST}/list", "records": {"pointer": "/items"}, "link": {"pointer": "/link"},
    "identity": {"pointer": "/id"}, "revision": {"pointer": "/rev"},
    "pagination": {"kind": "cursor", "parameter": "c", "pointer": "/next"}, "max_requests": 3})


@settings(max_examples=150, deadline=None)
@given(st.lists(record, max_size=6), scalar)
def test_any_listing_scalar_becomes_state_that_reads_back(records, cursor):
    body = json.dumps({"items": records, "next": cursor}, ensure_ascii=True).encode()
    responses = {f"{HOST}/list": ListingResponse(f"{HOST}/list", 200, (("Content-Type", "application/json"),), body)}
    try:
        outcome = run_offline(CONFIG, [HOST], responses)
    except DiscoveryShapeError as exc:
        assert exc.code == "COLLECTION_MERGE_INVALID"
        return
    prepared = prepare({}, outcome, {}, now=rfc3339(0), max_pages=1000)
    out = io.StringIO()
    write_ledger(prepared.ledger, out)
    text = out.getvalue()
    data = text.encode("utf-8")                                  # the ledger file's bytes
    back = read_ledger(io.StringIO(data.decode("utf-8"), newline=""))
    assert set(back) == set(prepared.ledger)
    assert all(back[pid] == prepared.ledger[pid] for pid in back)
