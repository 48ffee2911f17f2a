"""Issue 9, acceptance point 1: `collection run --record F` against a live site, then
`collection run --replay F` with no network on the virtual clock, give the same coverage,
ledger and relation — timestamps included, because a page's time is when its fetch ended
and the recording keeps that (and each run's start) for the replay to give back.

The live runs are real: the loopback HTTPS site, real TLS, the real clock, politeness
1 s between requests (so each live run takes a few seconds). The replays run on the
virtual clock and the site sees no request.
"""

from __future__ import annotations

import json

from loopback import Reply
from test_run_kit import HOST, JSON_PAGE, ORIGIN, current, ledger_rows, page_body, recipe, run_cli

TEXT = (("Content-Type", "text/plain"),)


class Site:
    """A json_api listing over two pages (then the empty page), seven detail pages: four
    plain, one behind a redirect, one 404, one refused by robots.txt."""

    def __init__(self, server):
        self.server = server
        self.hints = {pid: "2024-01-01" for pid in "1234567"}
        self.versions = {pid: 1 for pid in "1234567"}
        self.pages = ["1", "2", "3", "4", "5", "6", "7"]

    def install(self) -> None:
        s = self.server
        items = [{"id": f"id-{pid}", "link": f"{ORIGIN}/p/{pid}", "modified": self.hints[pid]} for pid in self.pages]
        s.route("/api/items?per_page=100&page=1", Reply(200, JSON_PAGE, json.dumps(items[:4]).encode()))
        s.route("/api/items?per_page=100&page=2", Reply(200, JSON_PAGE, json.dumps(items[4:]).encode()))
        s.route("/api/items?per_page=100&page=3", Reply(200, JSON_PAGE, b"[]"))
        s.route("/robots.txt", Reply(200, TEXT, b"User-agent: *\nDisallow: /p/7\n"))
        for pid in self.pages:
            s.route(f"/p/{pid}", Reply(200, JSON_PAGE, page_body(pid, self.versions.get(pid, 1))))
        s.route("/p/5", Reply(301, [("Location", f"{ORIGIN}/p/5b")]))
        s.route("/p/5b", Reply(200, JSON_PAGE, page_body("5")))
        s.route("/p/6", Reply(404, JSON_PAGE, b"{}"))


def _args(loopback, recipe_path, state, *extra):
    args = ["run", str(recipe_path), "--state", str(state), "--json"]
    return args + list(extra)


def _live(loopback, recipe_path, state, fixture):
    args = _args(loopback, recipe_path, state, "--record", str(fixture), "--ca-bundle", loopback.ca_pem_path)
    for flag in loopback.resolve_flags(HOST):
        args += ["--resolve", flag]
    done = run_cli(*args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _replay(loopback, recipe_path, state, fixture):
    loopback.clear()
    done = run_cli(*_args(loopback, recipe_path, state, "--replay", str(fixture)))
    assert done.returncode == 0, done.stderr
    assert loopback.requests == []                      # no network
    return json.loads(done.stdout)


def _facts(state) -> dict:
    return {pid: (row["state"], row["revision"], row["failure_code"]) for pid, row in ledger_rows(state).items()}


def _assert_same(live: dict, replayed: dict, state_a, state_b) -> None:
    assert replayed["clock"] == "virtual" and live["clock"] == "system"
    assert replayed["coverage"] == live["coverage"]
    assert replayed["started_at"] == live["started_at"]
    assert replayed["corrections"] == live["corrections"]
    assert replayed["failures"] == live["failures"]
    assert (replayed["requests"], replayed["bytes"]) == (live["requests"], live["bytes"])
    assert _facts(state_b) == _facts(state_a)
    assert current(state_b, "ledger.csv") == current(state_a, "ledger.csv")
    assert current(state_b, "relation.csv") == current(state_a, "relation.csv")


def test_replay_of_a_recording_is_the_live_run(loopback, tmp_path):
    site = Site(loopback)
    site.install()
    recipe_path = tmp_path / "recipe.json"
    recipe_path.write_bytes(recipe("json_api", revisit="revision_hint", concurrency=1))
    fixture = tmp_path / "site.fixture.json"
    state_a, state_b = tmp_path / "live", tmp_path / "replay"

    live1 = _live(loopback, recipe_path, state_a, fixture)
    cov = live1["coverage"]
    assert (cov["discovered"], cov["fetched_this_run"], cov["failed_this_run"], cov["discovery_requests"]) == \
        (7, 5, 2, 3)
    assert _facts(state_a)["id-6"] == ("failed", "0", "http_status_404")
    assert _facts(state_a)["id-7"] == ("failed", "0", "robots_disallowed")
    assert ledger_rows(state_a)["id-5"]["url"] == f"{ORIGIN}/p/5"
    stored = json.loads(fixture.read_text())
    assert [r["run"] for r in stored["runs"]] == [1]
    assert all("completed_at" in e["response"] for e in stored["exchanges"])
    replay1 = _replay(loopback, recipe_path, state_b, fixture)
    _assert_same(live1, replay1, state_a, state_b)

    # the site changes: page 2 is revised, page 8 is added
    site.hints["2"], site.versions["2"] = "2024-02-02", 2
    site.pages.append("8")
    site.hints["8"] = "2024-02-02"
    site.install()
    live2 = _live(loopback, recipe_path, state_a, fixture)
    assert live2["run_number"] == 2
    assert [c["page_id"] for c in live2["corrections"]] == ["id-2"]
    assert live2["coverage"]["discovered"] == 8
    stored = json.loads(fixture.read_text())
    assert [r["run"] for r in stored["runs"]] == [1, 2]
    replay2 = _replay(loopback, recipe_path, state_b, fixture)
    assert replay2["run_number"] == 2
    _assert_same(live2, replay2, state_a, state_b)

    print(f"\nlive run 1: {live1['duration_seconds']} s, replay 1: {replay1['wall_seconds']} s wall "
          f"({replay1['duration_seconds']} s virtual); live run 2: {live2['duration_seconds']} s, "
          f"replay 2: {replay2['wall_seconds']} s wall ({replay2['duration_seconds']} s virtual)")


def test_recorded_times_round_trip_and_replay_only_for_their_run():
    """The format members in isolation: `completed_at` and `runs` survive parse/dump; replay
    moves the virtual clock to a recorded end of the run it serves, not of a run it repeats."""
    import pytest

    from collection.fetch.clock import VirtualClock
    from collection.recording.format import FixtureError, dump_fixture, parse_fixture
    from collection.fetch.transport import Request
    from collection.recording.replay import ReplayTransport

    doc = {"exchanges": [{"request": {"url": f"{ORIGIN}/a"},
                          "response": {"status": 200, "body": {"text": "x"}, "completed_at": 1_800_000_010.25}}],
           "runs": [{"run": 1, "started_at": 1_800_000_000.5}]}
    fixture = parse_fixture(doc)
    assert parse_fixture(dump_fixture(fixture)) == fixture and fixture.started_at(1) == 1_800_000_000.5
    assert fixture.started_at(2) is None
    with pytest.raises(FixtureError) as refused:
        parse_fixture({"exchanges": [{"request": {"url": f"{ORIGIN}/a"}, "response": {"status": 99}}]})
    assert refused.value.pointer == "/exchanges/0/response/status"

    for run, ends in ((1, 1_800_000_010.25), (2, None)):
        clock = VirtualClock()
        clock.set_wall(1_800_000_000.5)
        response = ReplayTransport(fixture, clock, run=run).send(Request(f"{ORIGIN}/a"), clock.monotonic() + 30)
        response.close()
        assert response.completed_at == ends
        assert clock.wall() == (ends or 1_800_000_000.5)

    clock = VirtualClock()
    with clock.enroll():
        with pytest.raises(RuntimeError):
            clock.set_wall(0)
