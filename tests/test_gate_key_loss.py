"""Key loss cannot shorten a gap (issue 24 point 3; FETCH-16, FETCH-18, FETCH-19): when Redis
forgets an origin's record — FLUSHALL, a restart without persistence, a deleted key, a record
recreated by a release or a Crawl-delay after it vanished, a record reset to an older start —
the next start waits at least a full interval (plus the margin) from the last start any process
of the fleet made. Against a real redis-server; the process tests read one loopback origin from
two and three `collection run` processes and check every pair of arrivals at the server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest
from dataset_kit import JSON_HEADERS, page_body, source_doc
from loopback import Reply

from collection.fetch.gate import Lease
from collection.fetch.redis_gate import RedisGate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = "a.example.com"
STATE = f"collection:gate:{{{HOST}}}"
LEASES = STATE + ":leases"
MARGIN = 0.005


@pytest.fixture
def fleet(redis_server):
    import redis

    client = redis.Redis.from_url(redis_server.url)
    gates = [RedisGate(redis_server.url, margin=MARGIN) for _ in range(3)]     # three processes' views
    yield gates, client
    for gate in gates:
        gate.close()
    client.close()


def _lease(gate: RedisGate, host: str = HOST) -> Lease:
    deadline = time.monotonic() + 5
    while not isinstance(answer := gate.acquire(host, 1.0, 30), Lease):
        assert time.monotonic() < deadline, answer
        time.sleep(answer)
    return answer


def test_a_fresh_origin_waits_one_interval_the_cost_of_the_fence(fleet):
    gates, _ = fleet
    assert gates[0].acquire(HOST, 1.0, 30) >= 1.0 + MARGIN        # nobody can say when it was last read
    assert gates[1].acquire(HOST, 1.0, 30) >= 0.99                 # the fence holds for everyone


@pytest.mark.parametrize("loss", ["FLUSHALL", "DEL record", "HDEL last_start", "DEL everything of the origin",
                                  "recreated by a Retry-After", "recreated by a Crawl-delay"])
def test_a_vanished_record_makes_the_next_start_wait_a_full_interval(fleet, loss):
    gates, client = fleet
    lease = _lease(gates[0])
    gates[0].sent(lease)
    if loss == "FLUSHALL":
        client.flushall()
    elif loss == "DEL record":
        client.delete(STATE)
    elif loss == "HDEL last_start":
        client.hdel(STATE, "last_start")
    elif loss == "DEL everything of the origin":
        client.delete(STATE, LEASES, STATE + ":unsent")
    elif loss == "recreated by a Retry-After":
        client.flushall()
        gates[0].release(lease, 0.5)           # writes not_before into a record that has no start
    else:
        client.flushall()
        gates[0].set_crawl_delay(HOST, 0.5)
    lost_at = time.monotonic()
    wait = gates[1].acquire(HOST, 1.0, 30)
    assert isinstance(wait, float) and wait >= 1.0 + MARGIN
    assert isinstance(gates[2].acquire(HOST, 1.0, 30), float)      # and no one else goes first
    _lease(gates[1])
    assert time.monotonic() - lost_at >= 1.0                       # a full interval after the loss


def test_a_request_written_after_the_loss_counts_and_its_lease_is_learnt_again(fleet):
    """A lease granted before the loss and written after it: its start is put back (the next
    start waits a gap from it) and the lost lease set knows it is in flight (the cap of two)."""
    gates, client = fleet
    lease = _lease(gates[0])
    client.flushall()
    gates[1].acquire(HOST, 1.0, 30)                                 # the fence
    gates[0].sent(lease)                                            # written now
    written = float(client.hget(STATE, "last_start"))
    assert client.zscore(LEASES, lease.lease_id) is not None
    time_now = client.time()
    assert abs(written - (time_now[0] + time_now[1] / 1e6)) < 0.5
    assert gates[1].acquire(HOST, 1.0, 30) >= 0.9                   # a gap from that write


def test_a_record_reset_to_an_older_start_is_fenced_by_whoever_saw_a_later_one(fleet):
    """Each process keeps the latest start it read for an origin: a record that goes back in
    time (another writer, a restore of an old snapshot) is fenced by every process that saw it."""
    gates, client = fleet
    _lease(gates[0])
    old = f"{time.time() - 3600:.6f}"
    client.hset(STATE, mapping={"last_start": old, "next_start": old})
    assert gates[0].acquire(HOST, 1.0, 30) >= 1.0 + MARGIN


# --- processes -------------------------------------------------------------------------------

# A `collection run` process with its imports done, that starts its run when a line arrives on
# stdin: it then asks the gate within milliseconds, the way a process already running (or a
# cron job started at that instant) would, rather than after a second of interpreter start-up.
_ARMED = """
import sys
import redis, urllib3
import collection.cli, collection.commands.run, collection.run.loop, collection.fetch.redis_gate
sys.stdin.readline()
sys.argv = ["collection"] + sys.argv[1:]
collection.cli.main()
"""


def _armed(loopback, tmp_path, name: str, urls: list[str], gate: str) -> subprocess.Popen:
    recipe = tmp_path / f"{name}.json"
    recipe.write_text(json.dumps(source_doc(name, urls)))
    args = [sys.executable, "-c", _ARMED, "run", str(recipe), "--state", str(tmp_path / f"state-{name}"),
            "--ca-bundle", loopback.ca_pem_path, "--json", "--gate", gate]
    for flag in loopback.resolve_flags():
        args += ["--resolve", flag]
    return subprocess.Popen(args, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _go(process: subprocess.Popen) -> None:
    process.stdin.write("go\n")
    process.stdin.flush()


def _outcome(process: subprocess.Popen) -> tuple[int, dict, str]:
    out, err = process.communicate(timeout=120)
    try:
        return process.returncode, json.loads(out), err
    except ValueError:
        raise AssertionError(f"exit {process.returncode}: {err}") from None


class _Saboteur(threading.Thread):
    """Right after a request reaches the origin — the moment its record is most worth losing —
    forget the gate's keys (FLUSHALL), or kill redis-server and start it again on its port, and
    then start the next waiting process, whose first request would go at once if the gate took
    the empty record at its word."""

    def __init__(self, loopback, redis_server, how: str, waiting: list[subprocess.Popen]):
        super().__init__(daemon=True)
        self.loopback, self.redis_server, self.how = loopback, redis_server, how
        self.waiting = list(waiting)
        self.done = threading.Event()
        self.losses = 0

    def run(self) -> None:
        import redis

        seen = 0
        while not self.done.is_set():
            count = len(self.loopback.requests_for(host=HOST))
            if count > seen:
                seen = count
                if self.how == "flush":
                    with redis.Redis.from_url(self.redis_server.url) as client:
                        client.flushall()
                else:
                    self.redis_server.stop()
                    self.redis_server.start()
                self.losses += 1
                if self.waiting:
                    _go(self.waiting.pop(0))
            time.sleep(0.001)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["flush", "restart"])
@pytest.mark.parametrize("processes", [2, 3])
def test_key_loss_mid_run_never_brings_two_arrivals_closer_than_the_interval(loopback, tmp_path, redis_server,
                                                                            how, processes):
    """Every pair of arrivals at the origin is at least min_interval_seconds (1 s) apart while
    Redis forgets everything right after every request and a process that was waiting starts
    its run at that moment; each process ends clearly: exit 0 with its pages fetched, or (a
    restart caught it mid-call) exit 1 GATE_UNAVAILABLE with what it fetched kept, no traceback
    either way. (Without the fence the next process's robots.txt request arrives within tens of
    milliseconds of the previous request.)"""
    loopback.route("/robots.txt", Reply(404, (("Content-Type", "text/plain"),), b""), host=HOST)
    loopback.route("*", Reply(handler=lambda rec: Reply(200, JSON_HEADERS, page_body(rec.target))), host=HOST)
    runs = [_armed(loopback, tmp_path, f"source_{n}", [f"https://{HOST}/p/{n}/{k}" for k in range(2)],
                   redis_server.url) for n in range(processes)]
    saboteur = _Saboteur(loopback, redis_server, how, runs[1:])
    saboteur.start()
    _go(runs[0])
    try:
        outcomes = [_outcome(run) for run in runs]
    finally:
        saboteur.done.set()
        saboteur.join()
    arrivals = _arrivals(loopback)
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    assert saboteur.losses >= processes and len(arrivals) >= processes
    assert min(gaps) >= 1.0, gaps
    for code, shown, err in outcomes:
        assert "Traceback" not in err
        if code == 0:
            assert shown["coverage"]["complete"] is True
        else:
            assert code == 1 and shown["code"] == "GATE_UNAVAILABLE", (code, shown)
            kept = shown["record"]
            assert kept is None or kept["coverage"]["failed_this_run"] == 0
    if how == "flush":
        assert all(code == 0 for code, _, _ in outcomes)            # a flush is no fault: the fence absorbs it


def _arrivals(loopback) -> list[float]:
    return sorted(r.arrived for r in loopback.requests_for(host=HOST))


def test_a_fenced_record_is_not_fenced_again_by_the_process_that_saw_more(fleet):
    """After the fence the record's start is what the process remembers, so a record reset to
    an older start costs one interval, not one per acquire."""
    gates, client = fleet
    lease = _lease(gates[0])
    gates[0].sent(lease)
    gates[0].release(lease)
    old = f"{time.time() - 3600:.6f}"
    client.hset(STATE, mapping={"last_start": old, "next_start": old})
    wait = gates[0].acquire(HOST, 1.0, 30)
    assert wait >= 1.0 + MARGIN
    time.sleep(wait)
    assert isinstance(gates[0].acquire(HOST, 1.0, 30), Lease)
