"""The politeness gate's backends, called directly (collection.fetch.gate, redis_gate): the
machine-local fcntl directory and a real redis-server. FETCH-16, FETCH-18, FETCH-19, D-08, D-10
held across processes; leases of dead holders freed; the source lock of a fleet.

Waits are read from the gate's answers (seconds to wait), so these tests sleep only where a
lease must expire."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from collection.fetch.gate import GateUnavailable, Lease, LocalGate, SourceHeld, parse_gate
from collection.fetch.redis_gate import RedisGate

HOST = "a.example.com"


def _lease(gate, host: str, interval: float = 1.0) -> Lease:
    """A lease for `host`, after the fence: the fleet gate makes the first start on an origin it
    has no record of wait one interval (issue 24 point 3), the local gate grants it at once."""
    gap = max(interval, 1.0)                                       # FETCH-19: the floor
    deadline = time.monotonic() + gap + 2
    while not isinstance(answer := gate.acquire(host, interval, 30), Lease):
        assert answer <= gap + 0.01 and time.monotonic() < deadline, answer
        time.sleep(answer)
    return answer


def test_a_lease_then_the_gap_then_two_in_flight_at_most(gate):
    first = _lease(gate, HOST)
    wait = gate.acquire(HOST, 1.0, 30)
    assert isinstance(wait, float) and 0.9 < wait <= 1.0          # FETCH-19: the gap from the last start
    _lease(gate, "b.example.com")                                  # another origin is not held
    gate.sent(first)
    time.sleep(1.0)
    second = gate.acquire(HOST, 1.0, 30)
    assert isinstance(second, Lease)
    gate.sent(second)
    time.sleep(1.0)
    third = gate.acquire(HOST, 1.0, 30)
    assert isinstance(third, float)                                # FETCH-18: two in flight already
    gate.release(first)
    assert isinstance(gate.acquire(HOST, 1.0, 30), Lease)


def test_a_lease_not_yet_sent_holds_its_origin_past_the_gap(gate):
    """FETCH-19 where the origin sees it: a lease whose request is still being set up (a slow
    TLS handshake) has no start yet, so no other is granted until it is sent, and the gap then
    counts from that write, not from the grant."""
    first = _lease(gate, HOST)
    time.sleep(1.1)                                                # past the gap, still unsent
    assert isinstance(gate.acquire(HOST, 1.0, 30), float)
    gate.sent(first)
    wait = gate.acquire(HOST, 1.0, 30)
    assert isinstance(wait, float) and 0.9 < wait <= 1.0          # the gap from the write
    time.sleep(wait)
    assert isinstance(gate.acquire(HOST, 1.0, 30), Lease)


def test_the_stricter_interval_and_the_floor_hold(gate):
    _lease(gate, HOST, 3.0)                                        # a source asking 3 s
    wait = gate.acquire(HOST, 1.0, 30)                             # another asking 1 s waits the 3 s
    assert 2.9 < wait <= 3.0
    _lease(gate, "b.example.com", 0.2)
    assert 0.9 < gate.acquire("b.example.com", 0.2, 30) <= 1.0    # the 1 s floor, whatever is asked


def test_crawl_delay_and_retry_after_hold_for_every_holder(gate):
    """D-08, D-09: what one process learnt (robots Crawl-delay, a 503's Retry-After) holds for all."""
    lease = _lease(gate, HOST)
    gate.set_crawl_delay(HOST, 4)
    assert 3.9 < gate.acquire(HOST, 1.0, 30) <= 4.0
    gate.release(lease, retry_after=9)
    assert 8.9 < gate.acquire(HOST, 1.0, 30) <= 9.0
    gate.set_crawl_delay(HOST, 2)                                  # a lower Crawl-delay never lowers it
    assert gate.acquire(HOST, 1.0, 30) > 8.0


_HOLDER = """
import os, sys, time
from collection.fetch.gate import Lease, parse_gate
gate = parse_gate(sys.argv[1], 0.0)
gate.check()
def lease():
    while not isinstance(answer := gate.acquire("a.example.com", 1.0, float(sys.argv[2])), Lease):
        time.sleep(answer)
    return answer
got = [lease()]
gate.sent(got[0])
got.append(lease())
print(" ".join(type(g).__name__ for g in got), flush=True)
time.sleep(60)
"""


def _kill_a_holder_of_two_slots(spec: str, ttl: float) -> None:
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, spec, str(ttl)], stdout=subprocess.PIPE, text=True,
                              cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        assert holder.stdout.readline().split() == ["Lease", "Lease"]
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()


def test_a_killed_holder_frees_its_slots_at_once_on_one_machine(tmp_path):
    """SIGKILL never wedges an origin: the local gate sees the holder's pid is gone."""
    spec = f"local:{tmp_path / 'gate'}"
    _kill_a_holder_of_two_slots(spec, 600)
    gate = parse_gate(spec, 0.0)
    deadline = time.monotonic() + 2
    while isinstance(answer := gate.acquire(HOST, 1.0, 30), float):
        assert answer <= 1.0 and time.monotonic() < deadline        # only the gap, not the 600 s leases
        time.sleep(answer)


def test_a_killed_holder_frees_its_slots_when_the_leases_expire_in_redis(redis_server):
    """The fleet gate cannot see another server's processes: the lease's TTL frees the slot."""
    _kill_a_holder_of_two_slots(redis_server.url, 2.0)
    gate = RedisGate(redis_server.url)
    started = time.monotonic()
    while isinstance(answer := gate.acquire(HOST, 1.0, 30), float):
        assert time.monotonic() - started < 3.0                     # not beyond the lease
        time.sleep(min(answer, 0.1))
    assert time.monotonic() - started > 0.5                         # it was held until then


def test_the_source_lock_names_its_holder_and_is_released(redis_server):
    one, two = RedisGate(redis_server.url), RedisGate(redis_server.url)
    with one.source_lock("council_decisions"):
        with pytest.raises(SourceHeld) as held:
            with two.source_lock("council_decisions"):
                pass
        assert f"pid {os.getpid()}" in held.value.holder
        with two.source_lock("council_minutes"):                    # another source is free
            pass
    with two.source_lock("council_decisions"):
        pass


def test_an_unreachable_gate_is_unavailable_never_looser(tmp_path, redis_server):
    from redis_helper import free_port

    with pytest.raises(GateUnavailable):
        RedisGate(f"redis://127.0.0.1:{free_port()}/0", timeout=0.5).check()
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(GateUnavailable):
        LocalGate(str(blocker / "gate")).check()
    gate = RedisGate(redis_server.url)
    lease = _lease(gate, HOST)
    redis_server.stop()
    with pytest.raises(GateUnavailable):
        gate.acquire(HOST, 1.0, 30)
    with pytest.raises(GateUnavailable):
        gate.release(lease)
    assert parse_gate("none", 0.0) is None
    with pytest.raises(ValueError):
        parse_gate("memcached://x", 0.0)
