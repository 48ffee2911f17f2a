"""Budgets (FETCH-05..FETCH-09, FETCH-14, FETCH-15, D-05, D-20, D-21, D-58, D-60, COV-16)."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from collection.fetch.budgets import (
    DEADLINE, DISCOVERY_MAX_REQUESTS, INITIAL, LISTING, MAX_REQUESTS, MAX_SOURCE_BYTES, PAGE,
    RANGE, REDIRECT, RETRY, Budget, Denied, Reservation,
)


def spend(budget, kind, cause=INITIAL, now=0.0):
    reservation = budget.try_reserve(kind, cause, now)
    assert isinstance(reservation, Reservation), reservation
    budget.commit(reservation)


def test_fetch_08_a_redirect_costs_two_and_a_retry_more():
    budget = Budget(max_requests=10, discovery_max_requests=5)
    spend(budget, PAGE)
    spend(budget, PAGE, REDIRECT)
    assert budget.counts().charged == 2
    spend(budget, PAGE, RETRY)
    counts = budget.counts()
    assert (counts.page, counts.redirect, counts.retry, counts.charged) == (3, 1, 1, 3)


def test_d05_listing_requests_count_against_both_budgets():
    budget = Budget(max_requests=3, discovery_max_requests=2)
    spend(budget, LISTING)
    spend(budget, LISTING, RETRY)
    assert budget.try_reserve(LISTING, INITIAL, 0) == Denied(DISCOVERY_MAX_REQUESTS)
    assert budget.exhausted is None            # D-21: the discovery ceiling is not a COV-16 value
    spend(budget, PAGE)
    assert budget.try_reserve(PAGE, INITIAL, 0) == Denied(MAX_REQUESTS)
    assert budget.exhausted == MAX_REQUESTS    # FETCH-09


def test_fetch_10_exact_sum_budget_runs_out_when_anything_redirects():
    discovery, fetches = 2, 3
    budget = Budget(max_requests=discovery + fetches, discovery_max_requests=discovery)
    spend(budget, LISTING)
    spend(budget, LISTING)
    spend(budget, PAGE)
    spend(budget, PAGE, REDIRECT)
    spend(budget, PAGE)
    assert budget.try_reserve(PAGE, INITIAL, 0) == Denied(MAX_REQUESTS)


def test_d07_range_requests_each_count():
    budget = Budget(max_requests=3, discovery_max_requests=1)
    for _ in range(3):
        spend(budget, PAGE, RANGE)
    assert budget.counts().range == 3
    assert isinstance(budget.try_reserve(PAGE, RANGE, 0), Denied)


def test_d58_robots_requests_are_counted_not_charged():
    budget = Budget(max_requests=1, discovery_max_requests=1)
    for _ in range(5):
        budget.count_robots()
    assert budget.counts().robots == 5
    assert budget.requests_left() == 1


def test_reservations_in_flight_block_overshoot_and_release_refunds():
    budget = Budget(max_requests=2, discovery_max_requests=2)
    first = budget.try_reserve(PAGE, INITIAL, 0)
    second = budget.try_reserve(PAGE, INITIAL, 0)
    assert isinstance(first, Reservation) and isinstance(second, Reservation)
    assert budget.try_reserve(PAGE, INITIAL, 0) == Denied(MAX_REQUESTS)
    budget.release(second)       # e.g. robots disallowed it after reserving
    assert budget.counts().charged == 0
    budget.commit(first)
    assert isinstance(budget.try_reserve(PAGE, INITIAL, 0), Reservation)
    with pytest.raises(RuntimeError):
        budget.commit(first)


def test_fetch_14_bytes_stop_at_the_cap_and_never_pass_it():
    budget = Budget(max_requests=10, discovery_max_requests=1, max_source_bytes=100)
    assert budget.charge_bytes(60)
    assert budget.charge_bytes(40)           # exactly full is still fine for this body
    assert budget.bytes_remaining() == 0
    assert budget.exhausted is None
    assert budget.try_reserve(PAGE, INITIAL, 0) == Denied(MAX_SOURCE_BYTES)
    assert budget.exhausted == MAX_SOURCE_BYTES


def test_charge_over_the_cap_says_stop():
    budget = Budget(max_requests=10, discovery_max_requests=1, max_source_bytes=100)
    assert budget.charge_bytes(70)
    assert not budget.charge_bytes(31)
    assert budget.counts().bytes == 100
    assert budget.exhausted == MAX_SOURCE_BYTES


def test_fetch_15_d60_deadline():
    budget = Budget(max_requests=10, discovery_max_requests=1, deadline=100.0)
    assert not budget.deadline_passed(99.9)
    assert isinstance(budget.try_reserve(PAGE, INITIAL, 99.9), Reservation)
    assert budget.deadline_passed(100.0)
    assert budget.try_reserve(PAGE, INITIAL, 100.0) == Denied(DEADLINE)
    assert budget.exhausted == DEADLINE
    assert not Budget(1, 1).deadline_passed(1e12)      # D-60: no deadline given, none applies


def test_d21_first_ceiling_is_kept():
    budget = Budget(max_requests=1, discovery_max_requests=1, deadline=5.0)
    spend(budget, PAGE)
    assert budget.try_reserve(PAGE, INITIAL, 1.0) == Denied(MAX_REQUESTS)
    assert budget.try_reserve(PAGE, INITIAL, 9.0) == Denied(DEADLINE)
    assert budget.exhausted == MAX_REQUESTS


ops = st.lists(st.tuples(st.sampled_from(["reserve-listing", "reserve-page", "commit", "release", "bytes"]),
                         st.integers(0, 50)), max_size=80)


@given(st.integers(0, 12), st.integers(0, 12), st.integers(0, 200), ops)
def test_property_no_budget_is_ever_overshot(max_requests, discovery, max_bytes, operations):
    budget = Budget(max_requests, discovery, max_bytes)
    open_reservations = []
    for op, n in operations:
        if op.startswith("reserve"):
            r = budget.try_reserve(LISTING if op == "reserve-listing" else PAGE, INITIAL, 0)
            if isinstance(r, Reservation):
                open_reservations.append(r)
        elif op in ("commit", "release") and open_reservations:
            r = open_reservations.pop(n % len(open_reservations))
            (budget.commit if op == "commit" else budget.release)(r)
        elif op == "bytes":
            budget.charge_bytes(n)
        counts = budget.counts()
        in_flight = len(open_reservations)
        assert counts.charged + in_flight <= max_requests
        assert counts.listing + sum(r.kind == LISTING for r in open_reservations) <= discovery
        assert counts.bytes <= max_bytes
