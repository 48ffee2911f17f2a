"""Holds in the gates themselves (issue 24 point 6; D-08, D-09): who set a hold is stored with
it, `hold`/`show` read it (in UTC, from the gate's own clock) without changing anything,
`clear` lifts the hold and the Crawl-delay but never the gap, and a record the tool did not
write is a gate fault, never a hold. Real gates: a tmp directory and a real redis-server.
Also the `collection gate` and `status --gate` command lines (usage errors, read-only)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from collection.fetch.gate import GateUnavailable, Lease, LocalGate
from collection.fetch.holds import CRAWL_DELAY, RETRY_AFTER, HoldBook, hold_of, setter
from collection.fetch.redis_gate import RedisGate
from collection.run.progress import held_text

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = "a.example.com"
BY = setter(f"https://{HOST}/p/1", 503, time.time(), "test pid 1")


def _lease(gate, host: str = HOST) -> Lease:
    """A lease, after the fence: the fleet gate makes the first start on an origin it has no
    record of wait one interval (issue 24 point 3); the local gate grants it at once."""
    lease = gate.acquire(host, 1.0, 30)
    if not isinstance(lease, Lease):
        assert lease <= 1.01
        time.sleep(lease)
        lease = gate.acquire(host, 1.0, 30)
    assert isinstance(lease, Lease)
    return lease


def _retry_after(gate, seconds: float, by: dict = BY, lease: Lease | None = None) -> None:
    if lease is None:
        lease = _lease(gate)
        gate.sent(lease)
    gate.release(lease, seconds)
    gate.mark_hold(HOST, RETRY_AFTER, seconds, by)


def test_a_retry_after_hold_names_the_response_that_set_it_in_utc(gate):
    """Issue 24 point 6: origin, until when (UTC, this machine's wall clock), how long, who."""
    assert gate.hold(HOST) is None
    _retry_after(gate, 7200)
    hold = gate.hold(HOST)
    assert hold is not None and hold.kind == RETRY_AFTER and hold.origin == f"https://{HOST}"
    assert 3590 < hold.seconds <= 3600                                   # D-08's one-hour cap
    assert abs(hold.until - (time.time() + hold.seconds)) < 5            # the gate's clock, shown in UTC
    assert hold.set_by == BY
    assert hold.to_json()["until"].endswith("Z")


def test_the_setter_of_the_hold_in_force_is_kept(gate):
    """A shorter Retry-After received later does not shorten the hold, nor take its setter."""
    _retry_after(gate, 600)
    other = setter(f"https://{HOST}/p/2", 429, time.time(), "test pid 2")
    time.sleep(1.1)
    _retry_after(gate, 5, other, Lease(HOST, "second-1", 1.0))    # a request that was in flight
    hold = gate.hold(HOST)
    assert hold.seconds > 500 and hold.set_by == BY


def test_a_crawl_delay_holds_after_the_last_start_and_names_robots_txt(gate):
    robots = setter(f"https://{HOST}/robots.txt", 200, time.time(), "test pid 1")
    gate.set_crawl_delay(HOST, 600)
    gate.mark_hold(HOST, CRAWL_DELAY, 600, robots)
    assert gate.hold(HOST) is None                                      # nothing started yet: no wait
    lease = gate.acquire(HOST, 1.0, 30)
    if isinstance(lease, Lease):
        gate.sent(lease)
        gate.release(lease)
    # else the fleet gate's fence (issue 24 point 3): a start noted now, the Crawl-delay after it
    hold = gate.hold(HOST)
    assert hold.kind == CRAWL_DELAY and 590 < hold.seconds <= 601 and hold.set_by == robots


def test_show_lists_every_origin_with_its_state(gate):
    _retry_after(gate, 120)
    lease = _lease(gate, "b.example.com")                                # one request in flight
    rows = {row["origin"]: row for row in gate.show()}
    assert set(rows) == {f"https://{HOST}", "https://b.example.com"}
    assert rows[f"https://{HOST}"]["hold"].set_by == BY and rows[f"https://{HOST}"]["leases"] == 0
    assert rows["https://b.example.com"]["hold"] is None and rows["https://b.example.com"]["leases"] == 1
    assert rows[f"https://{HOST}"]["last_start"].endswith("Z")
    gate.release(lease)


def test_clear_lifts_hold_and_crawl_delay_keeps_the_gap_and_is_recorded(gate):
    """Issue 24 point 6: after `clear` the origin is granted again, but never sooner than the
    gap after the last start (FETCH-19); who cleared it and when stays in the record."""
    _retry_after(gate, 3600)
    gate.set_crawl_delay(HOST, 600)
    lifted = gate.clear(HOST, "operator on test")
    assert lifted["hold"] is not None
    assert gate.hold(HOST) is None
    wait = gate.acquire(HOST, 1.0, 30)
    assert isinstance(wait, float) and wait <= 1.1                        # the gap only, not the hour
    time.sleep(wait)
    assert isinstance(gate.acquire(HOST, 1.0, 30), Lease)
    [row] = [r for r in gate.show() if r["host"] == HOST]
    assert row["cleared"]["by"] == "operator on test" and row["cleared"]["at"].endswith("Z")
    assert row["crawl_delay"] is None
    assert gate.clear("never.example.com", "operator") is None           # nothing to clear


def test_reading_holds_changes_nothing_in_the_local_gate(tmp_path):
    """`status` and `gate show` only read: an unknown origin gets no record, a known one is not
    rewritten."""
    directory = tmp_path / "gate"
    gate = LocalGate(str(directory))
    gate.check()
    _retry_after(gate, 60)
    before = {name: (directory / name).read_bytes() for name in os.listdir(directory)}
    assert gate.hold("b.example.com") is None
    assert gate.hold(HOST) is not None and gate.show()
    assert {name: (directory / name).read_bytes() for name in os.listdir(directory)} == before
    assert LocalGate(str(tmp_path / "absent")).show() == [] and not (tmp_path / "absent").exists()


@pytest.mark.parametrize("member, value", [("not_before", "nan"), ("not_before", "1e300"),
                                           ("last_start", "twelve"), ("crawl_delay", "inf")])
def test_a_record_the_tool_did_not_write_is_a_gate_fault_not_a_hold(tmp_path, redis_server, member, value):
    """Issue 24 point 2 applied to holds: a value from the backend steers nothing."""
    local = LocalGate(str(tmp_path / "gate"))
    local.check()
    (tmp_path / "gate" / HOST).write_text(json.dumps({"boot": local._boot, member: value}))
    redis = RedisGate(redis_server.url)
    redis._redis.hset(f"collection:gate:{{{HOST}}}", member, value)
    for gate in (local, redis):
        with pytest.raises(GateUnavailable):
            gate.hold(HOST)
        with pytest.raises(GateUnavailable):
            gate.show()
    redis.close()


def test_a_setter_the_tool_did_not_write_is_shown_as_unknown(gate):
    _retry_after(gate, 60, {"url": ["not", "a", "url"], "status": "x", "at": 1, "by": None})
    assert gate.hold(HOST).set_by is None


def test_hold_of_and_the_announcement_book():
    """Pure rules: a hold is the later of the Retry-After and the Crawl-delay wait; a hold is
    announced once, again only when it is a new one."""
    assert hold_of(HOST, now=100, wall=1000, last_start=99, not_before=-1, crawl_delay=0, margin=0) is None
    hold = hold_of(HOST, now=100, wall=1000, last_start=99, not_before=160, crawl_delay=10, margin=0)
    assert (hold.kind, hold.seconds, hold.until) == (RETRY_AFTER, 60, 1060)
    crawl = hold_of(HOST, now=100, wall=1000, last_start=99, not_before=101, crawl_delay=30, margin=0)
    assert (crawl.kind, crawl.seconds) == (CRAWL_DELAY, 29)
    said = []
    book = HoldBook(notify=lambda h, ends: said.append((h.kind, ends)))
    book.saw(hold, False)
    book.saw(hold, False)
    book.saw(hold, True)                       # it now ends the origin's work: said again
    book.saw(crawl, False)
    assert said == [(RETRY_AFTER, False), (RETRY_AFTER, True), (CRAWL_DELAY, False)]
    assert held_text(book.waiting(1000)) == f" · held {HOST} until 00:17:09Z"


def _collection(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "collection", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


@pytest.mark.parametrize("origin", ["http://a.example.com", "https://a.example.com:8443", "https://A.example.com",
                                    "https://a.example.com/p", "a.example.com\n", "", "user@a.example.com",
                                    "127.0.0.1", "https://", "a..example.com", "-a.example.com"])
def test_gate_clear_refuses_an_origin_that_is_not_one(tmp_path, origin):
    """Issue 24 point 6: ORIGIN is validated (usage error, exit 2), and nothing is touched."""
    done = _collection("gate", "clear", origin, "--gate", f"local:{tmp_path / 'gate'}")
    assert done.returncode == 2
    assert not (tmp_path / "gate").exists()


def test_gate_commands_usage_and_unreachable_gate(tmp_path):
    from redis_helper import free_port

    assert _collection("gate", "show", "--gate", "none").returncode == 2
    assert _collection("gate", "show", "--gate", "bogus://x").returncode == 2
    unreachable = _collection("gate", "show", "--gate", f"redis://127.0.0.1:{free_port()}/0")
    assert unreachable.returncode == 1 and unreachable.stderr.startswith("GATE_UNAVAILABLE")
    empty = _collection("gate", "show", "--gate", f"local:{tmp_path / 'gate'}", "--json")
    assert empty.returncode == 0 and json.loads(empty.stdout)["origins"] == []


def test_gate_show_and_clear_on_the_command_line(tmp_path):
    """`gate show` prints the hold and its setter; `gate clear` (a bare host works too) says who
    cleared it, and `gate show` keeps that."""
    value = f"local:{tmp_path / 'gate'}"
    gate = LocalGate(str(tmp_path / "gate"))
    gate.check()
    _retry_after(gate, 3600)
    shown = json.loads(_collection("gate", "show", "--gate", value, "--json").stdout)
    [row] = shown["origins"]
    assert row["origin"] == f"https://{HOST}" and row["hold"]["set_by"] == BY and row["hold"]["kind"] == RETRY_AFTER
    cleared = _collection("gate", "clear", HOST, "--gate", value, "--json")
    assert cleared.returncode == 0
    answer = json.loads(cleared.stdout)
    assert answer["cleared"] is True and answer["was"]["hold"]["set_by"] == BY
    [row] = json.loads(_collection("gate", "show", "--gate", value, "--json").stdout)["origins"]
    assert row["hold"] is None and row["cleared"]["by"] == answer["by"]


def test_status_with_an_unreachable_gate_still_summarises(tmp_path):
    """`status` is about the state directory: a gate it cannot read is said, not fatal."""
    from redis_helper import free_port

    from collection.commands.run import build_shell
    from collection.run.loop import RunSettings, execute

    recipe = os.path.join(ROOT, "fixtures/recipes/council_decisions.json")
    fixture = os.path.join(ROOT, "fixtures/council_decisions/council_decisions.fixture.json.gz")
    shell = build_shell(replay=fixture, record=None, ca_bundle=None, resolve=(), token=None, info_url=None)
    with open(recipe, "rb") as handle:
        execute(handle.read(), RunSettings(str(tmp_path / "state")), shell)
    done = _collection("status", str(tmp_path / "state"), "--json", "--gate", f"redis://127.0.0.1:{free_port()}/0")
    assert done.returncode == 0
    summary = json.loads(done.stdout)
    assert summary["holds"] is None and any(line.startswith("holds: not known") for line in summary["next"])
    done = _collection("status", str(tmp_path / "state"), "--json", "--gate", f"local:{tmp_path / 'gate'}")
    assert done.returncode == 0 and json.loads(done.stdout)["holds"] == []
    assert not (tmp_path / "gate").exists()                               # read-only: no gate made


def test_another_sources_long_interval_is_a_hold_too(gate):
    """No silent wait (issue 24 point 6): a source asking min_interval_seconds 600 holds the
    origin for a source asking 1 s; the gate says so (its setter is not a response: unknown)."""
    lease = gate.acquire(HOST, 600.0, 30)
    if isinstance(lease, Lease):                  # else the fleet gate's fence: a start noted now
        gate.sent(lease)
        gate.release(lease)
    hold = gate.hold(HOST)
    assert hold.kind == "interval" and 590 < hold.seconds <= 601 and hold.set_by is None


def test_a_hold_shows_on_the_progress_line_and_in_the_summary_on_a_replay(tmp_path):
    """Issue 24 point 6 on the virtual clock (a replay has no shared gate: its own scheduler):
    a 120 s Retry-After is waited out with ` · held HOST until …` on the progress line; a 7200 s
    one ends the origin's work, and the summary names the held origin."""
    import io

    from dataset_kit import fixture_for, source_doc

    from collection.commands.run import build_shell, human_summary
    from collection.run.loop import RunSettings, execute
    from collection.run.progress import Progress

    def replay(retry_after: str, name: str):
        urls = [f"https://c.example.com/p/{n}" for n in (1, 2, 3)]
        fixture = tmp_path / f"{name}.json"
        fixture.write_text(json.dumps(fixture_for(urls[1:]) + [
            {"request": {"url": urls[0]},
             "response": {"status": 503, "headers": [["Retry-After", retry_after], ["Content-Type", "text/plain"]],
                          "body": {"text": "busy"}}}]))
        stream, warnings = io.StringIO(), []
        shell = build_shell(replay=str(fixture), record=None, ca_bundle=None, resolve=(), token=None, info_url=None)
        shell.warn = warnings.append
        doc = source_doc(name, urls, concurrency=1)
        record = execute(json.dumps(doc).encode(), RunSettings(str(tmp_path / name)), shell,
                         progress_factory=lambda *a: Progress(*a, stream=stream, every=0.0))
        return record, stream.getvalue(), warnings

    record, drawn, warnings = replay("120", "short")
    assert record["coverage"]["fetched_this_run"] == 2 and "held_until" not in record
    assert " · held c.example.com until " in drawn and len(warnings) == 1
    record, drawn, warnings = replay("7200", "long")
    assert record["coverage"]["pending"] == 2 and "https://c.example.com" in record["held_until"]
    assert len(warnings) == 1
    assert "held: https://c.example.com until " + record["held_until"]["https://c.example.com"] in human_summary(record)


def test_status_advice_names_the_hold_when_discovery_ended_with_an_origin_held():
    """Issue 24 point 6 with D-21: a held listing origin ends discovery as a ceiling would, so
    the advice must name the hold and not send the operator to raise a budget alone."""
    from collections import Counter

    from collection.commands.status import advice

    cov = {"discovery_failure": None, "discovery_complete": False, "budget_exhausted": None, "complete": False,
           "pending": 0, "failed": 0}
    plain = advice(cov, False, Counter(), Counter())
    held = advice(cov, False, Counter(), Counter(), held=["https://a.example.com"])
    assert any("raise discovery.max_requests" in line for line in plain)
    assert not any("https://a.example.com" in line for line in plain)
    assert any("https://a.example.com" in line and "held" in line for line in held)
