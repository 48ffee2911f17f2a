"""The politeness floor and the connections an origin sees, measured at the loopback HTTPS
publisher on the real clock (arrivals stamped with the kernel's receive time, TLS connections
counted by the server), for each gate: none, the machine-local gate and a real redis-server.
FETCH-16, FETCH-18, FETCH-19, D-09, D-10.

bench/floor.py holds the floor over 10,000 requests at concurrency 6 and 25; these are the short
versions: a few origins, tens of requests each, every test well under 30 s."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time

import pytest
from dataset_kit import JSON_HEADERS, source_doc
from loopback import PeakInFlight, Reply

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLAIN = (("Content-Type", "text/plain"),)
HOSTS = ("a.example.com", "b.example.com", "c.example.com")


def _rows_body(target: str, rows: int) -> bytes:
    return json.dumps([{"title": f"{target} {n}", "body": "text " * 40} for n in range(rows)]).encode()


def _origin(seconds: float = 0.01, rows: int = 1) -> PeakInFlight:
    """JSON pages of `rows` rows, each served after `seconds`."""
    return PeakInFlight(lambda rec: Reply(200, JSON_HEADERS, _rows_body(rec.target, rows)), seconds)


def _gate(request, tmp_path, backend: str) -> str:
    if backend == "redis":
        return request.getfixturevalue("redis_server").url
    return "none" if backend == "none" else f"local:{tmp_path / 'gate'}"


def _run(loopback, tmp_path, urls: list[str], gate: str, **doc_options) -> dict:
    recipe = tmp_path / "floor.json"
    recipe.write_text(json.dumps(source_doc("floor", urls, max_fetches=len(urls), **doc_options)))
    args = [sys.executable, "-m", "collection", "run", str(recipe), "--state", str(tmp_path / "state"),
            "--ca-bundle", loopback.ca_pem_path, "--gate", gate, "--json"]
    for flag in loopback.resolve_flags():
        args += ["--resolve", flag]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _kernel_gaps(loopback, host: str) -> list[float]:
    """Gaps between the raw kernel receive stamps of the requests to `host` (no clock conversion)."""
    seen = loopback.requests_for(host=host)
    assert all(r.kernel_wall is not None for r in seen)
    stamps = sorted(r.kernel_wall for r in seen)
    return [b - a for a, b in zip(stamps, stamps[1:])]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["none", "local", "redis"])
def test_one_connection_per_origin_while_one_request_is_in_flight(loopback, tmp_path, request, backend):
    """FETCH-18, FETCH-19: at a 1 s gap and fast answers only one request is ever in flight per
    origin, so each origin sees exactly one TLS connection, whichever gate paces the run (a worker
    waiting for its turn opens none of its own), and the gaps hold at the server."""
    origin = _origin(0.01)
    for host in HOSTS:
        loopback.route("/robots.txt", Reply(404, PLAIN, b"none"), host=host)
        loopback.route("*", Reply(handler=origin), host=host)
    urls = [f"https://{host}/p/{n}" for n in range(4) for host in HOSTS]
    record = _run(loopback, tmp_path, urls, _gate(request, tmp_path, backend), concurrency=6)
    assert record["coverage"]["fetched_this_run"] == 12
    for host in HOSTS:
        assert len(loopback.requests_for(host=host)) == 5
        assert len(loopback.connections_for(host)) == 1, (backend, host, loopback.connections_for(host))
        assert min(_kernel_gaps(loopback, host)) >= 1.0
    assert len(loopback.connections) == 3


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["none", "local", "redis"])
def test_a_second_connection_only_while_two_requests_are_in_flight(loopback, tmp_path, request, backend):
    """FETCH-18: answers slower than the gap put two requests in flight at one origin, and only
    then is a second connection opened; never a third, and the gap still holds (FETCH-19)."""
    origin = _origin(1.6)
    loopback.route("/robots.txt", Reply(404, PLAIN, b"none"), host="a.example.com")
    loopback.route("*", Reply(handler=origin), host="a.example.com")
    urls = [f"https://a.example.com/p/{n}" for n in range(4)]
    record = _run(loopback, tmp_path, urls, _gate(request, tmp_path, backend), concurrency=2)
    assert record["coverage"]["fetched_this_run"] == 4
    assert origin.peak["a.example.com"] == 2
    assert len(loopback.connections_for("a.example.com")) == 2
    assert min(_kernel_gaps(loopback, "a.example.com")) >= 1.0


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["none", "local", "redis"])
def test_a_connection_slow_to_set_up_delays_the_next_start_with_it(loopback, tmp_path, request, backend):
    """FETCH-19 where the origin sees it: a request whose new connection takes longer than the
    gap to set up has no start until it is written, so the next request waits a gap after that
    write, even though a connection of the origin has been idle meanwhile."""
    host = "a.example.com"
    pages = itertools.count()

    def answer(rec):
        if next(pages) == 0:
            time.sleep(1.5)                    # the first page is slow: the next one needs a connection
        return Reply(200, JSON_HEADERS, _rows_body(rec.target, 1))
    loopback.route("/robots.txt", Reply(404, PLAIN, b"none"), host=host)
    loopback.route("*", Reply(handler=answer), host=host)
    loopback.slow_handshakes[2] = 1.5          # that second connection is slow to set up
    urls = [f"https://{host}/p/{n}" for n in range(4)]
    record = _run(loopback, tmp_path, urls, _gate(request, tmp_path, backend), concurrency=2)
    assert record["coverage"]["fetched_this_run"] == 4
    assert len(loopback.connections_for(host)) == 2
    assert min(_kernel_gaps(loopback, host)) >= 1.0


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["none", "local"])
def test_the_floor_holds_at_the_server_with_decoding_running(loopback, tmp_path, request, backend):
    """FETCH-16, FETCH-19, D-09, D-10: eight origins served at once, every page a JSON document of
    300 rows the Reader decodes while other requests are being written; every gap between two
    arrivals at one origin, by the kernel's receive stamps, is at least 1 s, and no origin sees
    more than one connection."""
    hosts = [f"o{n}.example.com" for n in range(8)]
    with_names = type(loopback)(names=tuple(hosts))
    with with_names as server:
        origin = _origin(0.05, rows=300)
        for host in hosts:
            server.route("/robots.txt", Reply(404, PLAIN, b"none"), host=host)
        server.route("*", Reply(handler=origin))
        urls = [f"https://{host}/p/{n}" for n in range(5) for host in hosts]
        record = _run(server, tmp_path, urls, _gate(request, tmp_path, backend), concurrency=8)
        assert record["coverage"]["fetched_this_run"] == 40
        assert record["rows"] == 40 * 300                       # every page decoded into its rows
        gaps = [g for host in hosts for g in _kernel_gaps(server, host)]
        assert len(gaps) == 8 * 5 and min(gaps) >= 1.0
        assert all(len(server.connections_for(host)) == 1 for host in hosts)
