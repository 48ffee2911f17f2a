"""Transports: urllib3 over real TLS to the loopback server (resolve map), and replay.

Clauses: FETCH-01, FETCH-02, FETCH-18, FETCH-24, D-57; the recorded-exchange format."""

import json
import threading
import time

import pytest

from collection.fetch.clock import VirtualClock
from fetch_helpers import read_all as _read_all
from collection.fetch.egress import Egress
from collection.recording.format import FixtureError, parse_fixture
from collection.fetch.transport import Request, TransportError, user_agent
from collection.recording.replay import ReplayTransport, load_fixture
from collection.fetch.urllib3_transport import Urllib3Transport
from fetch_helpers import HTML, make_fetcher, page
from loopback import Reply


def _send(server, url, headers=(), transport=None, timeout=5.0):
    transport = transport or Urllib3Transport(ca_bundle=server.ca_pem_path)
    target = Egress(server.resolve_map()).target(url.split("/")[2])
    return transport.send(Request(url, tuple(headers), target), time.monotonic() + timeout)




def test_resolve_map_moves_only_the_tcp_target(loopback):  # GUIDE: --resolve like curl
    loopback.route("/x", Reply(200, HTML, b"hi"))
    response = _send(loopback, "https://www.example.com/x?q=1")
    assert (response.status, _read_all(response)) == (200, b"hi")
    rec = loopback.requests[0]
    assert (rec.sni, rec.host, rec.target) == ("www.example.com", "www.example.com", "/x?q=1")


def test_user_agent_and_encodings(loopback):  # FETCH-24, D-57
    loopback.route("/x", Reply(200, HTML, b"hi" * 100, gzip=True))
    transport = Urllib3Transport(ca_bundle=loopback.ca_pem_path, token="ExampleOrgBot",
                                 info_url="https://example.org/bot")
    assert _read_all(_send(loopback, "https://www.example.com/x", transport=transport)) == b"hi" * 100
    rec = loopback.requests[0]
    assert rec.header("User-Agent") == "ExampleOrgBot-PublicHttps/1.0 (+https://example.org/bot)"
    assert rec.header("Accept-Encoding") == "gzip, deflate"


@pytest.mark.parametrize("token, url", [("Bad Token", "https://x.example"), ("Ok", "http://x.example"),
                                        ("Ok", "https://x.example/(a)"), ("", "https://x.example")])
def test_user_agent_settings_are_checked(token, url):  # D-57
    with pytest.raises(ValueError):
        user_agent(token, url)


@pytest.mark.parametrize("name", ["Authorization", "cookie", "Proxy-Authorization"])
def test_credential_headers_are_refused(loopback, name):  # FETCH-02
    with pytest.raises(ValueError):
        _send(loopback, "https://www.example.com/x", headers=[(name, "secret")])
    assert loopback.requests == []


def test_at_most_two_connections_per_host(loopback):  # FETCH-18
    loopback.route("*", Reply(200, HTML, b"x", delay=0.3))
    transport = Urllib3Transport(ca_bundle=loopback.ca_pem_path)
    threads = [threading.Thread(target=lambda: _read_all(_send(loopback, "https://www.example.com/x", transport=transport)))
               for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(loopback.requests) == 5
    assert len({r.connection for r in loopback.requests}) <= 2


def test_no_redirect_followed_by_the_transport(loopback):  # D-25: the fetcher follows, hop by hop
    loopback.route("/a", Reply(301, [("Location", "/b")]))
    response = _send(loopback, "https://www.example.com/a")
    assert response.status == 301 and response.header("location") == "/b"
    response.close()
    assert [r.target for r in loopback.requests] == ["/a"]


# --- the recorded-exchange format and the replay transport -----------------------------------

FIXTURE = [
    {"request": {"url": "https://www.example.com/a"},
     "response": {"status": 200, "headers": [["Content-Type", "text/html"]], "body": {"text": "<p>a</p>"}}},
    {"request": {"method": "GET", "url": "https://WWW.example.com:443/b#frag", "headers": [["Accept", "text/html"]]},
     "responses": [{"status": 200, "headers": [["Content-Type", "text/html"]], "body": {"base64": "cnVuMQ=="}},
                   {"status": 200, "headers": [["Content-Type", "text/html"]], "body": {"text": "run2"}}]},
    {"request": {"url": "https://www.example.com/flaky"}, "per": "request",
     "responses": [{"status": 503, "headers": [["Retry-After", "20"]]},
                   {"status": 200, "headers": [["Content-Type", "text/html"]], "body": {"text": "ok"}}]},
    {"request": {"url": "https://www.example.com/slow"},
     "response": {"status": 200, "headers": [["Content-Type", "text/html"]], "body": {"text": "x" * 100},
                  "delay_seconds": 2, "drip": 10}},
    {"request": {"url": "https://www.example.com/hang"}, "response": {"status": 200, "hang": "after_headers"}},
    {"request": {"url": "https://www.example.com/drop"},
     "response": {"status": 200, "body": {"text": "abcdef"}, "drop_connection": 3}},
    {"request": {"url": "https://www.example.com/file"},
     "response": {"status": 200, "headers": [["Content-Type", "text/html"]], "body": {"file": "bodies/file.html"}}},
]


def _replay_fetcher(fixture, run=1, **kwargs):
    clock = VirtualClock()
    fetcher = make_fetcher(_NoServer(), clock=clock, **kwargs)
    fetcher.transport = ReplayTransport(fixture, clock, run=run)
    return fetcher


class _NoServer:
    ca_pem_path = None
    port = 1

    def resolve_map(self):
        return {("www.example.com", 443): ("127.0.0.1", 1)}


def test_fixture_schema_and_loader(tmp_path):
    (tmp_path / "bodies").mkdir()
    (tmp_path / "bodies" / "file.html").write_bytes(b"<p>from a file</p>")
    path = tmp_path / "fixture.json"
    path.write_text(json.dumps(FIXTURE))
    fixture = load_fixture(str(path))
    by_url = fixture.by_url()
    assert "https://www.example.com/b" in by_url                  # canonicalised (URL-02..05)
    assert by_url["https://www.example.com/file"].responses[0].body == b"<p>from a file</p>"
    assert by_url["https://www.example.com/b"].response_for(2, 1).body == b"run2"


@pytest.mark.parametrize("doc, pointer", [
    ({"request": {"url": "https://x.example/"}}, ""),                                  # not a list
    ([{"request": {"url": "https://x.example/"}}], "/0"),                               # no response
    ([{"request": {"url": "https://x.example/", "method": "POST"}, "response": {"status": 200}}], "/0/request/method"),
    ([{"request": {"url": "http://x.example/"}, "response": {"status": 200}}], "/0/request/url"),
    ([{"request": {"url": "https://x.example/"}, "response": {"status": 200, "body": {"text": "a", "base64": "YQ=="}}}], "/0/response/body"),
    ([{"request": {"url": "https://x.example/"}, "response": {"status": 200, "body": {"file": "../etc/passwd"}}}], "/0/response/body"),
    ([{"request": {"url": "https://x.example/"}, "response": {"status": 200, "headers": [["X", "a\r\nb"]]}}], "/0/response/headers/0/1"),
    ([{"request": {"url": "https://x.example/a"}, "response": {"status": 200}},
      {"request": {"url": "https://X.example/a"}, "response": {"status": 200}}], "/1/request/url"),
])
def test_fixture_refusals_name_the_member(doc, pointer):
    with pytest.raises(FixtureError) as info:
        parse_fixture(doc)
    assert info.value.pointer == pointer


def test_replay_serves_runs_and_requests_in_sequence():
    fixture = parse_fixture([e for e in FIXTURE if "file" not in json.dumps(e)])
    assert _replay_fetcher(fixture, run=1).fetch(page("/b")).body == b"run1"
    assert _replay_fetcher(fixture, run=2).fetch(page("/b")).body == b"run2"
    fetcher = _replay_fetcher(fixture)
    out = fetcher.fetch(page("/flaky"))
    assert (out.body, out.retries) == (b"ok", 1)
    assert fetcher.clock.monotonic() >= 20                       # Retry-After on the virtual clock


def test_replay_behaviours_on_the_clock():
    fixture = parse_fixture([e for e in FIXTURE if "file" not in json.dumps(e)])
    fetcher = _replay_fetcher(fixture, retries=0, request_timeout=30)
    start = fetcher.clock.monotonic()
    assert fetcher.fetch(page("/slow")).body == b"x" * 100
    assert fetcher.clock.monotonic() - start == pytest.approx(1.005 + 2 + 10)   # gap (+margin) after robots, delay, 100 B at 10 B/s
    start = fetcher.clock.monotonic()
    assert fetcher.fetch(page("/hang", accepted=())).failure_code == "timeout"
    assert fetcher.clock.monotonic() - start >= 30
    assert fetcher.fetch(page("/drop", accepted=())).failure_code == "connection_error"


def test_replay_missing_names_the_address():
    fetcher = _replay_fetcher(parse_fixture(FIXTURE[:1]))
    out = fetcher.fetch(page("/nowhere"))
    assert (out.failure_code, out.liveness) == ("replay_missing", "error")
    assert "https://www.example.com/nowhere" in out.detail
    with pytest.raises(TransportError) as info:
        ReplayTransport(parse_fixture(FIXTURE[:1]), VirtualClock()).send(
            Request("https://www.example.com/nowhere"), 10.0)
    assert "https://www.example.com/nowhere" in str(info.value)


def test_replay_ranges_match_the_live_behaviour():  # FETCH-25, D-07
    body = bytes(range(256)) * 1000
    import base64
    fixture = parse_fixture([{"request": {"url": "https://www.example.com/big"},
                              "response": {"status": 200, "headers": [["Content-Type", "text/html"], ["Accept-Ranges", "bytes"],
                                                                       ["ETag", "\"e\""]],
                                           "body": {"base64": base64.b64encode(body).decode()}}}])
    fetcher = _replay_fetcher(fixture, range_threshold=100_000, range_size=100_000)
    out = fetcher.fetch(page("/big"))
    assert out.body == body and out.ranges == 2
