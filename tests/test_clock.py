"""The injected clock (GUIDE "Time"): the virtual clock jumps to deadlines, and with
several participant threads it advances only when all of them wait (FETCH-19 relies on it
for replayed runs). No timed assertions: every check reads virtual time."""

from __future__ import annotations

import threading

import pytest

from collection.fetch.clock import Clock, SystemClock, VirtualClock


def test_both_clocks_satisfy_the_protocol():
    assert isinstance(SystemClock(), Clock)
    assert isinstance(VirtualClock(), Clock)


def test_system_clock_sleep_until_a_past_deadline_returns():
    clock = SystemClock()
    clock.sleep_until(clock.monotonic() - 10)
    assert clock.monotonic() > 0 and clock.wall() > 1_500_000_000


@pytest.mark.parametrize("start, deadlines, expected", [
    (0.0, [5.0], 5.0),
    (0.0, [5.0, 3.0], 5.0),        # a past deadline never moves time backwards
    (10.0, [10.0, 10.5], 10.5),
])
def test_virtual_clock_jumps_to_deadlines(start, deadlines, expected):
    clock = VirtualClock(start_wall=1000.0, start_monotonic=start)
    for deadline in deadlines:
        clock.sleep_until(deadline)
    assert clock.monotonic() == expected
    assert clock.wall() == 1000.0 + (expected - start)


def test_advance_refuses_going_backwards():
    clock = VirtualClock()
    clock.advance(2)
    assert clock.monotonic() == 2
    with pytest.raises(ValueError):
        clock.advance(-1)


def _run_workers(clock, plans):
    """Each plan is a list of deadlines a worker sleeps until; record (worker, time woken)."""
    log = []
    lock = threading.Lock()
    participants = [clock.enroll() for _ in plans]

    def work(index, plan, participant):
        with participant:
            for deadline in plan:
                clock.sleep_until(deadline)
                with lock:
                    log.append((index, deadline, clock.monotonic()))

    threads = [threading.Thread(target=work, args=(i, plan, p)) for i, (plan, p) in enumerate(zip(plans, participants))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
        assert not thread.is_alive(), "virtual clock deadlocked"
    return log


def test_participants_wake_at_their_own_deadlines_not_later():
    clock = VirtualClock()
    log = _run_workers(clock, [[5.0, 9.0], [1.0, 2.0, 3.0], [4.0]])
    # every worker woke exactly at its deadline: nobody was dragged into another's future
    assert all(deadline == woken for _, deadline, woken in log)
    assert [d for _, d, _ in log] == sorted(d for _, d, _ in log)
    assert clock.monotonic() == 9.0
    assert clock.participants == 0


def test_many_participants_many_rounds():
    clock = VirtualClock()
    plans = [[float(i + k * 7) for k in range(1, 20)] for i in range(6)]
    log = _run_workers(clock, plans)
    assert len(log) == 6 * 19
    assert all(deadline == woken for _, deadline, woken in log)


def test_time_holds_still_while_a_participant_is_running():
    clock = VirtualClock()
    busy, sleeper = clock.enroll(), clock.enroll()
    seen = []
    started = threading.Event()

    def sleeping():
        with sleeper:
            started.set()
            clock.sleep_until(100.0)
            seen.append(clock.monotonic())

    thread = threading.Thread(target=sleeping)
    with busy:
        thread.start()
        started.wait(10)
        # the other participant is asleep, this one is running: time must not move
        for _ in range(1000):
            assert clock.monotonic() == 0.0
    thread.join(10)
    assert seen == [100.0]


def test_outsider_sleep_does_not_count_as_a_participant_waiting():
    clock = VirtualClock()
    worker = clock.enroll()
    log = []

    def outsider():
        clock.sleep_until(50.0)
        log.append(("outsider", clock.monotonic()))

    out = threading.Thread(target=outsider)
    with worker:
        out.start()
        # while the enrolled worker runs, the outsider's sleep cannot advance time
        for _ in range(1000):
            assert clock.monotonic() == 0.0
        clock.sleep_until(10.0)
        log.append(("worker", clock.monotonic()))
    out.join(10)
    assert log == [("worker", 10.0), ("outsider", 50.0)]


def test_turns_make_a_multi_worker_replay_deterministic():
    """Issue 9, GUIDE determinism: with turns, which worker runs at which virtual instant is
    decided by deadlines and enrollment order, never by real thread scheduling."""
    import random
    import threading
    import time as real_time

    from collection.fetch.clock import VirtualClock

    def one_replay(seed: int) -> list[tuple[int, float]]:
        clock = VirtualClock(turns=True)
        trace: list[tuple[int, float]] = []
        jitter = random.Random(seed)
        delays = [[jitter.random() / 500 for _ in range(6)] for _ in range(3)]

        def work(index, participant):
            with participant:
                for step in range(6):
                    real_time.sleep(delays[index][step])     # real work of varying length
                    trace.append((index, clock.monotonic()))
                    clock.sleep_until(clock.monotonic() + 1 + index % 2)

        participants = [clock.enroll() for _ in range(3)]
        threads = [threading.Thread(target=work, args=(i, p)) for i, p in enumerate(participants)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        return trace

    first = one_replay(0)
    assert len(first) == 18
    assert all(one_replay(seed) == first for seed in range(1, 6))
    assert first[:3] == [(0, 0.0), (1, 0.0), (2, 0.0)]       # ties go to the first enrolled
