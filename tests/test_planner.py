"""Work choice (step 2) and the decisions around it: D-15, D-18, D-21, D-26, D-33, D-34, D-47, D-50, D-51."""

from __future__ import annotations

import pytest

from collection.merge.ledger import LedgerRow
from collection.merge.outcomes import FAILED, FETCHED, SKIPPED_ORIGIN, PageResult
from collection.merge.planner import Choice, Planner, Revisit, Stop, Wait, work_order
from test_merge_kit import Publisher, State, listing, rows_by_page, run, t


def row(pid, state, ordinal, **kw):
    return LedgerRow(pid, f"https://www.example.com/{pid}", state, t(0), t(0), ordinal, **kw)


LEDGER = {r.page_id: r for r in [
    row("f-old", "failed", 1, failed_at=t(1)),
    row("p-late", "pending", 9),
    row("x-fetched", "fetched", 2, last_fetched_at=t(0), revision_hint="2", revision_hint_at_fetch="1"),
    row("p-early", "pending", 3),
    row("f-new", "failed", 0, failed_at=t(2)),
    row("s", "skipped_origin", 4),
    row("y-fetched", "fetched", 5, last_fetched_at=t(-1), revision_hint=None, revision_hint_at_fetch="1"),
    row("z-fetched", "fetched", 6, last_fetched_at=t(3)),
]}


@pytest.mark.parametrize("revisit,expected", [
    (Revisit(), ["p-early", "p-late", "f-old", "f-new"]),
    (Revisit("revision_hint"), ["p-early", "p-late", "f-old", "f-new", "x-fetched"]),            # D-33
    (Revisit("interval", 3600), ["p-early", "p-late", "f-old", "f-new", "y-fetched", "x-fetched"]),  # D-32
])
def test_work_order(revisit, expected):
    assert [c.page_id for c in work_order(LEDGER, revisit, now=t(3.5))] == expected


def ok(c, at=t(5)):
    return PageResult(c.page_id, FETCHED, at, "0" * 64, ())


def test_failures_do_not_use_up_max_fetches_per_run_d15():
    p = Planner(LEDGER, max_fetches_per_run=1, now=t(4))
    a = p.next()
    p.report(PageResult(a.page_id, FAILED, t(5), failure_code="timeout"))
    b = p.next()
    p.report(ok(b))
    assert p.next() == Stop("max_fetches_per_run") and p.stop_reason == "max_fetches_per_run"
    assert p.next() == Stop("max_fetches_per_run")


def test_at_the_cap_with_fetches_in_flight_the_planner_waits():
    p = Planner(LEDGER, max_fetches_per_run=2, now=t(4))
    a, b = p.next(), p.next()
    assert p.next() == Wait(2)
    p.report(PageResult(a.page_id, FAILED, t(5), failure_code="timeout"))
    c = p.next()
    assert isinstance(c, Choice) and c.page_id not in (a.page_id, b.page_id)
    p.report(ok(b))
    p.report(ok(c))
    assert p.next() == Stop("max_fetches_per_run")


def test_no_page_is_chosen_twice_d47():
    p = Planner(LEDGER, revisit=Revisit("interval", 1), max_fetches_per_run=100, now=t(10))
    seen = []
    while isinstance(c := p.next(), Choice):
        seen.append(c.page_id)
        p.report(ok(c))
    assert len(seen) == len(set(seen)) == 7 and "s" not in seen
    with pytest.raises(ValueError):
        p.report(ok(Choice(seen[0], "", "pending")))


def test_budget_named_only_when_work_remained_d21():
    p = Planner(LEDGER, max_fetches_per_run=4, now=t(4))
    for _ in range(4):
        p.report(ok(p.next()))
    assert p.next() == Stop(None)                      # the queue ran dry exactly at the cap
    p = Planner(LEDGER, max_fetches_per_run=100, now=t(4))
    assert p.next(exhausted="deadline") == Stop("deadline")
    assert p.next(exhausted="max_requests") == Stop("deadline")   # the first ceiling wins
    with pytest.raises(ValueError):
        Planner(LEDGER, max_fetches_per_run=1, now=t(4)).next(exhausted="max_rows")


def test_skipped_by_own_address_becomes_pending_when_allowed_now_d34():
    r1 = run(State(), listing("a", unreachable={"a": "origin not in allowed_origins"}), Publisher(), now=t(0))
    assert r1.row("a").state == SKIPPED_ORIGIN
    r2 = run(r1.state, listing("a"), Publisher().ok("a", "a"), now=t(1))
    assert [c.page_id for c in r2.chosen] == ["a"] and r2.row("a").state == FETCHED


def test_skipped_by_redirect_is_rechecked_d26():
    landed = "https://elsewhere.example/a"
    r1 = run(State(), listing("a"), Publisher({"a": ("skip", landed)}), now=t(0))
    same = run(r1.state, listing("a"), Publisher().ok("a", "a"), now=t(1))
    assert same.chosen == [] and same.row("a").landed_url == landed
    moved = run(r1.state, listing("a", urls={"a": "https://www.example.com/new-a"}), Publisher().ok("a", "a"),
                now=t(1))
    assert [c.url for c in moved.chosen] == ["https://www.example.com/new-a"]
    widened = run(r1.state, listing("a"), Publisher().ok("a", "a"), now=t(1),
                  allowed_origins=("https://www.example.com", "https://elsewhere.example"))
    assert [c.page_id for c in widened.chosen] == ["a"]


def test_a_page_now_outside_the_allowlist_is_skipped_and_keeps_its_rows():
    r1 = run(State(), listing("a"), Publisher().ok("a", "a"), now=t(0))
    r2 = run(r1.state, listing("a", unreachable={"a": "origin not in allowed_origins"}), Publisher(), now=t(1),
             revisit=Revisit("interval", 1))
    assert r2.chosen == [] and r2.row("a").state == SKIPPED_ORIGIN and rows_by_page(r2.state) == rows_by_page(r1.state)


def test_max_pages_caps_distinct_ledger_pages_d18():
    r1 = run(State(), listing("a", "b"), Publisher().ok("a", "a").ok("b", "b"), now=t(0), max_pages=3)
    r2 = run(r1.state, listing("c", "d", "e"), Publisher().ok("c", "c"), now=t(1), max_pages=3)
    assert r2.cov.known == 3 and "d" not in r2.result.ledger and r2.cov.discovered == 3
    assert r2.cov.budget_exhausted == "max_pages" and r2.cov.complete is False


def test_zero_row_pages_are_fetched_and_add_no_rows_d50():
    r = run(State(), listing("a", "b"), Publisher().ok("a", "a", 0).ok("b", "b", 1), now=t(0), max_rows=1)
    assert r.row("a").state == FETCHED and r.row("a").row_count == 0 and "a" not in rows_by_page(r.state)
    assert r.cov.complete and not r.result.truncated
    r2 = run(r.state, listing("a", "b"), Publisher(), now=t(1))
    assert r2.result.ledger["a"].state == FETCHED                     # zero rows present is not "missing"


def test_discovery_stopped_at_max_pages_is_reported_as_the_budget_d18():
    """D-18, FETCH-13: discovery stops admitting ids at max_pages itself; the run names it."""
    from dataclasses import replace

    stopped = replace(listing("a", "b"), complete=False, stop_reason="max_pages")
    r = run(State(), stopped, Publisher().ok("a", "a").ok("b", "b"), now=t(0), max_pages=2)
    assert r.cov.known == 2 and r.cov.budget_exhausted == "max_pages" and r.cov.complete is False
