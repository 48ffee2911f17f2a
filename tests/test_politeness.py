"""The politeness scheduler (FETCH-16, FETCH-18, FETCH-19, D-08, D-09, D-10): pure, so every
check feeds `now` in and reads "ready at" out."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st

from collection.fetch.politeness import MAX_DELAY_SECONDS, NEVER, PER_ORIGIN_IN_FLIGHT, WORKER_CAP, Politeness


@pytest.mark.parametrize("min_interval, crawl_delay, expected_gap", [
    (1, None, 1.0),
    (5, None, 5.0),
    (1, 3, 3.0),          # Crawl-delay raises the gap
    (5, 2, 5.0),          # ... and never lowers it
    (1, 0.5, 1.0),
    (0, None, 1.0),       # FETCH-19: never less than the limiter's own 1 s
    (1, 10**9, MAX_DELAY_SECONDS),
    (1, float("nan"), 1.0),
    (1, -4, 1.0),
])
def test_fetch_19_gap(min_interval, crawl_delay, expected_gap):
    p = Politeness(min_interval, 2)
    p.set_crawl_delay("a.example", crawl_delay)
    assert p.gap("a.example") == expected_gap
    assert p.gap("b.example") == max(min_interval, 1)


def test_d10_start_to_start_per_host():
    p = Politeness(2, 10)
    t1 = p.start("a", 0.0)
    assert p.try_start("a", 1.9) is None
    assert p.ready_at("a", 1.0) == 2.0
    assert p.try_start("b", 0.5) is not None        # another host is independent
    p.finish(t1, 0.1)
    assert p.try_start("a", 2.0) is not None        # measured from start, not finish


def test_fetch_18_at_most_two_in_flight_per_origin():
    p = Politeness(1, 25)
    p.start("a", 0.0)
    second = p.start("a", 1.0)
    assert p.ready_at("a", 2.0) == NEVER             # a third waits for a finish, not for time
    assert p.try_start("a", 50.0) is None
    p.finish(second, 50.0)
    assert p.try_start("a", 50.0) is not None


@pytest.mark.parametrize("concurrency, cap", [(1, 1), (2, 2), (25, 25), (10_000, WORKER_CAP)])
def test_fetch_16_d09_overall_cap(concurrency, cap):
    p = Politeness(1, concurrency)
    started = [p.try_start(f"h{i}", 0.0) for i in range(40)]
    assert sum(t is not None for t in started) == cap
    assert p.in_flight() == cap


def test_retry_after_holds_the_host_from_the_finish():
    p = Politeness(1, 2)
    t = p.start("a", 0.0)
    p.finish(t, 3.0, retry_after=30)
    assert p.ready_at("a", 4.0) == 33.0
    t = p.start("a", 33.0)
    p.finish(t, 34.0, retry_after=2)                # a shorter later hint does not shorten an earlier hold
    assert p.ready_at("a", 34.0) == 36.0
    t = p.start("a", 36.0)
    p.finish(t, 36.5, retry_after=10 ** 9)
    assert p.ready_at("a", 37.0) == 36.5 + MAX_DELAY_SECONDS


def test_choose_earliest_ready_then_least_recently_served():
    p = Politeness(1, 25)
    assert p.choose([], 0.0) is None
    assert p.choose(["b", "a"], 0.0) == ("a", 0.0)       # neither served: by name
    p.finish(p.start("a", 0.0), 0.1)
    assert p.choose(["a", "b"], 0.2) == ("b", 0.2)       # b ready now, a at 1.0
    p.finish(p.start("b", 0.2), 0.3)
    assert p.choose(["a", "b"], 5.0) == ("a", 5.0)       # both ready: a served longer ago


def test_choose_skips_capped_hosts():
    p = Politeness(1, 25)
    p.start("a", 0.0)
    p.start("a", 1.0)
    assert p.choose(["a"], 2.0) is None
    assert p.choose(["a", "b"], 2.0) == ("b", 2.0)


def test_finish_twice_is_refused():
    p = Politeness(1, 2)
    t = p.start("a", 0.0)
    p.finish(t, 1.0)
    with pytest.raises(RuntimeError):
        p.finish(t, 1.0)
    with pytest.raises(RuntimeError):
        p.start("a", 0.5)


def test_margin_widens_every_gap():
    p = Politeness(1, 2, margin=0.05)
    p.start("a", 0.0)
    assert p.ready_at("a", 0.0) == pytest.approx(1.05)


# --- universal rules -------------------------------------------------------------------------

steps = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.floats(0, 3), st.booleans(),
                           st.one_of(st.none(), st.floats(0, 20)), st.one_of(st.none(), st.floats(0, 4))),
                 max_size=120)


@settings(max_examples=300)
@given(st.integers(1, 4), st.integers(1, 30), steps)
def test_property_gap_and_caps_always_hold(min_interval, concurrency, plan):
    """However the fetcher drives it, no two starts to one host are closer than the gap
    in force, no origin has more than 2 in flight, and the run never more than the cap."""
    p = Politeness(min_interval, concurrency)
    now = 0.0
    starts: dict[str, list[float]] = {}
    open_tickets = []
    for host, dt, finish_one, retry_after, crawl_delay in plan:
        now += dt
        if crawl_delay is not None:
            p.set_crawl_delay(host, crawl_delay)
        if finish_one and open_tickets:
            p.finish(open_tickets.pop(0), now, retry_after)
        choice = p.choose([host, "a"], now)
        if choice is not None and choice[1] <= now:
            ticket = p.start(choice[0], now)
            previous = starts.setdefault(choice[0], [])
            if previous:
                assert now - previous[-1] >= p.gap(choice[0]) - 1e-9
            previous.append(now)
            open_tickets.append(ticket)
        for name in "abc":
            assert p.in_flight(name) <= PER_ORIGIN_IN_FLIGHT
        assert p.in_flight() <= min(concurrency, WORKER_CAP)
        assert p.in_flight() == len(open_tickets)


@given(st.floats(0, 1e6), st.sampled_from(["a", "b"]))
def test_property_ready_at_is_never_before_now(now, host):
    p = Politeness(1, 1)
    assert p.ready_at(host, now) >= now
    t = p.start(host, now)
    assert p.ready_at(host, now) == NEVER
    p.finish(t, now)
    assert p.ready_at(host, now) == now + 1 and not math.isnan(p.ready_at(host, now))


def test_the_next_gap_counts_from_when_the_request_left_fetch_19():
    """FETCH-19, GUIDE: a write delayed after its slot pushes the next start back."""
    from collection.fetch.politeness import Politeness

    p = Politeness(1, 2)
    ticket = p.start("h", 10.0)
    p.sent(ticket, 10.3)                       # the bytes left 0.3 s after the slot
    assert p.ready_at("h", 10.5) == 11.3
    p.sent(ticket, 10.1)                       # never earlier than what was recorded
    assert p.ready_at("h", 10.5) == 11.3
    p.finish(ticket, 10.4)
    p.sent(ticket, 12.0)                       # a finished ticket changes nothing
    assert p.ready_at("h", 10.5) == 11.3
