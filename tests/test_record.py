"""Recording (collection/recording/record.py): live exchanges through the real urllib3 transport
against the loopback server, written as a fixture, replayed through ReplayTransport, compared
byte for byte. Also: runs into one fixture, determinism, body placement, failures as behaviours."""

import gzip
import json
import os
import time

import pytest

from collection.fetch.clock import VirtualClock
from fetch_helpers import read_all as _read_all
from collection.fetch.egress import Egress
from collection.recording.format import parse_fixture
from collection.fetch.transport import Request, TransportError
from collection.recording.record import INLINE_LIMIT, Recorder, RecordingTransport, fixture_text
from collection.recording.replay import ReplayTransport, load_fixture
from collection.fetch.urllib3_transport import Urllib3Transport
from fetch_helpers import HTML, make_fetcher, page
from loopback import Reply

ORIGIN = "https://www.example.com"
BIG = ("<html><body>" + "<p>a large page</p>" * 20_000 + "</body></html>").encode()   # > INLINE_LIMIT
RANGED = bytes(range(256)) * 1200
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
ENCODING_HEADERS = ("content-encoding", "content-length", "transfer-encoding")


def _program(server):
    server.route("/robots.txt", Reply(200, [("Content-Type", "text/plain")], b"User-agent: *\nDisallow: /private/\n"))
    server.route("/page", Reply(200, HTML + (("ETag", '"p1"'),), "<h1>Décision</h1>".encode()))
    server.route("/gz", Reply(200, HTML, b"<p>compressed</p>" * 50, gzip=True))
    server.route("/chunked", Reply(200, HTML, b"<p>chunked</p>" * 500, chunked=True))
    server.route("/chunked-gz", Reply(200, HTML, b"<p>both</p>" * 500, chunked=True, gzip=True))
    server.route("/redir", Reply(301, [("Location", "/redir/")]))
    server.route("/redir/", Reply(200, HTML, b"<p>canonical</p>"))
    server.route("/missing", Reply(404, HTML, b"<p>not here</p>"))
    server.route("/flaky", Reply(503, [("Retry-After", "1"), ("Content-Type", "text/plain")], b"busy"),
                 Reply(200, HTML, b"<p>recovered</p>"))
    server.route("/reset", Reply(reset=True))
    server.route("/cut", Reply(200, HTML, b"x" * 10, content_length=100))   # ends early
    server.route("/bin", Reply(200, [("Content-Type", "image/png")], PNG))
    server.route("/big", Reply(200, HTML, BIG))
    server.route("/ranged", Reply(200, HTML, RANGED, ranges=True, etag='"r1"'))
    server.route("/api", Reply(200, [("Content-Type", "application/json")], b'[{"id": 1}]'))


PATHS = ["/page", "/gz", "/chunked", "/chunked-gz", "/redir", "/missing", "/flaky", "/reset", "/cut",
         "/bin", "/big", "/ranged", "/api?page=1"]


def _spec(path):
    accepted = {"/bin": (), "/api?page=1": ("application/json",)}.get(path, ("text/html",))
    return page(path, accepted=accepted)


def _summary(outcome, exact_code=True):
    return (outcome.outcome, outcome.status, outcome.body, outcome.content_sha256, outcome.final_url,
            outcome.failure_code if exact_code else outcome.liveness,
            outcome.requests, outcome.retries, outcome.redirects, outcome.ranges)


def _record(loopback, tmp_path, name="fx.json", run=1, paths=PATHS):
    path = str(tmp_path / name)
    recorder = Recorder.load(path, run=run)
    fetcher = make_fetcher(loopback, range_threshold=100_000, range_size=100_000, retries=2)
    fetcher.transport = RecordingTransport(fetcher.transport, recorder)
    live = {p: fetcher.fetch(_spec(p)) for p in paths}
    recorder.save(path)
    return path, live


def _replay(path, run=1, paths=PATHS):
    clock = VirtualClock()
    fetcher = make_fetcher(_NoServer(), clock=clock, range_threshold=100_000, range_size=100_000, retries=2)
    fetcher.transport = ReplayTransport(load_fixture(path), clock, run=run)
    return {p: fetcher.fetch(_spec(p)) for p in paths}, fetcher.transport


class _NoServer:
    ca_pem_path = None

    def resolve_map(self):
        return {("www.example.com", 443): ("127.0.0.1", 1)}


def test_fetcher_outcomes_replay_byte_for_byte(loopback, tmp_path):
    _program(loopback)
    path, live = _record(loopback, tmp_path)
    replayed, transport = _replay(path)
    for p in PATHS:
        # A body cut mid-way is body_incomplete live and connection_error on replay (both
        # transient, same liveness); the fixture's comment keeps the code that was seen.
        assert _summary(replayed[p], exact_code=p != "/cut") == _summary(live[p], exact_code=p != "/cut"), p
    assert live["/ranged"].ranges >= 1 and live["/flaky"].retries == 1 and live["/redir"].redirects == 1
    # robots.txt was fetched live and is served from the recording, not the unrecorded-404 rule
    by_url = load_fixture(path).by_url()
    assert by_url[ORIGIN + "/robots.txt"].responses[0].status == 200
    assert "body_incomplete" in (by_url[ORIGIN + "/cut"].comment or "")
    assert [r.url for r in transport.requests if r.url.endswith("robots.txt")] == [ORIGIN + "/robots.txt"]


def test_transport_responses_replay_byte_for_byte(loopback, tmp_path):
    _program(loopback)
    recorder = Recorder()
    live_transport = RecordingTransport(Urllib3Transport(ca_bundle=loopback.ca_pem_path), recorder)
    egress = Egress(loopback.resolve_map())
    live = {}
    for p in ["/page", "/gz", "/chunked", "/chunked-gz", "/redir", "/missing", "/bin", "/big", "/api?page=1"]:
        response = live_transport.send(Request(ORIGIN + p, (("Accept", "*/*"),), egress.target("www.example.com")),
                                       time.monotonic() + 5)
        live[p] = (response.status, response.headers, _read_all(response))
    path = str(tmp_path / "t.json")
    recorder.save(path)
    replay = ReplayTransport(load_fixture(path), VirtualClock())
    for p, (status, headers, body) in live.items():
        response = replay.send(Request(ORIGIN + p), 1e9)
        assert (response.status, _read_all(response)) == (status, body), p
        strip = lambda hs: [(k, v) for k, v in hs if k.lower() not in ENCODING_HEADERS]  # noqa: E731
        assert strip(response.headers) == strip(headers), p
        assert response.header("Content-Length") == str(len(body))
    # the recorded headers are as received (Content-Encoding kept, informational)
    gz = load_fixture(path).by_url()[ORIGIN + "/gz"].responses[0]
    assert ("Content-Encoding", "gzip") in gz.headers and gz.body == b"<p>compressed</p>" * 50




def test_failures_are_recorded_as_behaviours(loopback, tmp_path):
    loopback.route("/slow", Reply(200, HTML, b"late", delay=2))
    loopback.route("/reset", Reply(reset=True))
    loopback.route("/cut", Reply(200, HTML, b"y" * 10, content_length=100))
    recorder = Recorder()
    transport = RecordingTransport(Urllib3Transport(ca_bundle=loopback.ca_pem_path), recorder)
    target = Egress(loopback.resolve_map()).target("www.example.com")
    with pytest.raises(TransportError) as slow:
        transport.send(Request(ORIGIN + "/slow", (), target), time.monotonic() + 0.3)
    assert slow.value.code == "timeout"
    with pytest.raises(TransportError):
        transport.send(Request(ORIGIN + "/reset", (), target), time.monotonic() + 5)
    response = transport.send(Request(ORIGIN + "/cut", (), target), time.monotonic() + 5)
    with pytest.raises(TransportError):
        _read_all(response)
    by_url = recorder.fixture().by_url()
    assert by_url[ORIGIN + "/slow"].responses[0].hang == "before_headers"
    assert by_url[ORIGIN + "/reset"].responses[0].drop_before_headers
    cut = by_url[ORIGIN + "/cut"].responses[0]
    assert cut.drop_after == len(cut.body) and cut.body == b"y" * len(cut.body)
    # and they replay as failures of the same kind
    replay = ReplayTransport(recorder.fixture(), VirtualClock())
    with pytest.raises(TransportError) as again:
        replay.send(Request(ORIGIN + "/slow"), 30.0)
    assert again.value.code == "timeout"
    with pytest.raises(TransportError) as again:
        replay.send(Request(ORIGIN + "/reset"), 30.0)
    assert again.value.code == "connection_error"


def test_recording_is_deterministic_and_placed_by_size(loopback, tmp_path):
    _program(loopback)
    first, _ = _record(loopback, tmp_path, "a.json")
    _program(loopback)   # fresh reply sequences for the second recording
    second, _ = _record(loopback, tmp_path, "b.json")
    a, b = open(first, "rb").read(), open(second, "rb").read()
    assert a == b
    doc = json.loads(a)
    assert [e["request"]["url"] for e in doc] == sorted(e["request"]["url"] for e in doc)
    assert fixture_text(doc).encode() == a
    bodies = {e["request"]["url"]: (e.get("response") or e["responses"][-1]).get("body", {}) for e in doc}
    assert set(bodies[ORIGIN + "/page"]) == {"text"}                 # UTF-8 text/html
    assert set(bodies[ORIGIN + "/bin"]) == {"base64"}                # image/png
    assert bodies[ORIGIN + "/api?page=1"] == {"text": '[{"id": 1}]'}
    big = bodies[ORIGIN + "/big"]["file"]                            # larger than INLINE_LIMIT
    assert len(BIG) > INLINE_LIMIT and open(os.path.join(tmp_path, big), "rb").read() == BIG
    flaky = next(e for e in doc if e["request"]["url"].endswith("/flaky"))
    assert flaky["per"] == "request" and [r["status"] for r in flaky["responses"]] == [503, 200]


def test_gzip_fixture_file(loopback, tmp_path):
    loopback.route("/page", Reply(200, HTML, b"<p>zipped</p>"))
    path, _ = _record(loopback, tmp_path, "fx.json.gz", paths=["/page"])
    data = open(path, "rb").read()
    assert data[:2] == b"\x1f\x8b"
    assert json.loads(gzip.decompress(data))[0]["request"]["url"] in (ORIGIN + "/page", ORIGIN + "/robots.txt")
    replayed, _ = _replay(path, paths=["/page"])
    assert replayed["/page"].body == b"<p>zipped</p>"


def test_later_runs_become_sequences(loopback, tmp_path):
    loopback.route("/a", Reply(200, HTML, b"a1"))
    loopback.route("/b", Reply(200, HTML, b"b1"))
    path, _ = _record(loopback, tmp_path, paths=["/a", "/b"], run=1)
    loopback.route("/a", Reply(200, HTML, b"a2"))                   # /a changed, /b did not
    loopback.route("/c", Reply(200, HTML, b"c2"))                   # /c is new in run 2
    _record(loopback, tmp_path, paths=["/a", "/b", "/c"], run=2)
    loopback.route("/a", Reply(200, HTML, b"a3"))
    _record(loopback, tmp_path, paths=["/a"], run=3)
    by_url = load_fixture(path).by_url()
    assert [r.body for r in by_url[ORIGIN + "/a"].responses] == [b"a1", b"a2", b"a3"]
    assert [r.body for r in by_url[ORIGIN + "/b"].responses] == [b"b1"]          # repeats collapse
    assert by_url[ORIGIN + "/a"].per == "run"
    for run, expected in ((1, b"a1"), (2, b"a2"), (3, b"a3"), (4, b"a3")):
        assert _replay(path, run=run, paths=["/a"])[0]["/a"].body == expected
    assert _replay(path, run=2, paths=["/c"])[0]["/c"].body == b"c2"
    # re-recording run 1 keeps the later runs
    loopback.route("/a", Reply(200, HTML, b"a1-again"))
    _record(loopback, tmp_path, paths=["/a"], run=1)
    assert [r.body for r in load_fixture(path).by_url()[ORIGIN + "/a"].responses] == [b"a1-again", b"a2", b"a3"]


def test_dump_parse_round_trip_keeps_behaviours_and_comments():
    doc = [{"comment": "kept", "request": {"method": "GET", "url": ORIGIN + "/x", "headers": [["Accept", "text/html"]]},
            "per": "request",
            "responses": [{"status": 200, "headers": [], "delay_seconds": 1.5, "drip": 10, "drop_connection": 3,
                           "body": {"text": "abcdef"}},
                          {"status": 200, "headers": [], "hang": "after_headers"},
                          {"status": 200, "headers": [], "drop_connection": True}]}]
    from collection.recording.format import dump_fixture
    fixture = parse_fixture(doc)
    assert parse_fixture(dump_fixture(fixture)) == fixture
    assert dump_fixture(fixture)[0]["comment"] == "kept"


def test_a_path_recorder_saves_on_close(loopback, tmp_path):
    """The form the run loop uses: RecordingTransport(inner, path); close() writes the fixture."""
    loopback.route("/a", Reply(200, HTML, b"a1"))
    path = str(tmp_path / "rec.json")
    for run, body in ((1, b"a1"), (2, b"a2")):
        loopback.route("/a", Reply(200, HTML, body))
        transport = RecordingTransport(Urllib3Transport(ca_bundle=loopback.ca_pem_path), path)
        target = Egress(loopback.resolve_map()).target("www.example.com")
        _read_all(transport.send(Request(ORIGIN + "/a", (), target), time.monotonic() + 5))
        transport.close()
        assert transport.recorder.run == run
    assert [r.body for r in load_fixture(path).by_url()[ORIGIN + "/a"].responses] == [b"a1", b"a2"]
