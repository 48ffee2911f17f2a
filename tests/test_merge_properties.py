"""Universal rules of the merge, as hypothesis properties over random histories of runs.

A history is a few runs, each with its own listing, publisher answers, budgets, clamp
and revisit kind, over page ids chosen to stress the CSV and the sort (a comma, a
quote, a bare CR, an LF, non-ASCII, case).
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from collection.merge.planner import Revisit
from test_merge_kit import Publisher, State, listing, rows_by_page, run, t

PIDS = ["a", "B", "b", "é", "日本", "z z", "x,y", 'q"t', "r\rr", "n\nn"]
CONTENTS = ["v0", 'v"1', "v\r2", "v\n3"]
REVISITS = [Revisit(), Revisit("interval", 3600), Revisit("revision_hint")]

behaviour = st.one_of(
    st.tuples(st.just("ok"), st.sampled_from(CONTENTS), st.integers(0, 3)),
    st.tuples(st.just("fail"), st.sampled_from(["timeout", "http_status_404", "robots_disallowed"])),
    st.tuples(st.just("skip"), st.just("https://elsewhere.example/x")),
)
run_spec = st.fixed_dictionaries({
    "listed": st.lists(st.sampled_from(PIDS), unique=True, max_size=7),
    "publisher": st.dictionaries(st.sampled_from(PIDS), behaviour),
    "max_fetches": st.integers(1, 8),
    "max_rows": st.one_of(st.none(), st.integers(1, 12)),
    "revisit": st.sampled_from(REVISITS),
    "hints": st.dictionaries(st.sampled_from(PIDS), st.sampled_from(["1", "2"])),
    "seed": st.integers(0, 2**32 - 1),
})
histories = st.lists(run_spec, min_size=1, max_size=4)
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def do(state: State, spec: dict, hour: float, order=None):
    return run(state, listing(*spec["listed"], hints=spec["hints"]), Publisher(dict(spec["publisher"])),
               now=t(hour), max_fetches=spec["max_fetches"], max_rows=spec["max_rows"], revisit=spec["revisit"],
               order=order)


def replay(history):
    """Yield (before, run, spec, hour) for each run of the history."""
    state = State()
    for i, spec in enumerate(history):
        r = do(state, spec, 2 * i)
        yield state, r, spec, 2 * i
        state = r.state


@SETTINGS
@given(histories)
def test_fetch_completion_order_never_changes_the_bytes(history):
    for before, r, spec, hour in replay(history):
        shuffled = do(before, spec, hour,
                      order=lambda rs: random.Random(spec["seed"]).sample(rs, len(rs)))
        assert shuffled.state == r.state
        assert shuffled.cov == r.cov and shuffled.result.corrections == r.result.corrections


@SETTINGS
@given(histories, st.sampled_from(REVISITS))
def test_an_idle_refresh_writes_the_predecessor_bytes(history, revisit):
    states = [r.state for _, r, _, _ in replay(history)]
    last = states[-1]
    # nothing fetched at all
    idle = run(last, listing(*history[-1]["listed"]), Publisher(), now=t(50), max_fetches=1,
               max_rows=history[-1]["max_rows"], exhausted_after=0)
    assert idle.state.relation == last.relation
    # everything settled, then every page answers as before
    settle = dict(history[-1], max_fetches=100, max_rows=None, revisit=Revisit("interval", 3600))
    settled = do(last, settle, 60).state
    again = do(settled, dict(settle, revisit=revisit), 70)
    assert again.state.relation == settled.relation
    assert again.cov.changed == 0 and again.result.corrections == ()


# A page cut through by max_rows (D-52), then refetched unchanged with the clamp lifted: the
# row it kept stays exactly as it was, provenance included (MERGE-14); only the missing row
# comes from the new fetch (COV-25, COV-26). The merge once rewrote the kept row's fetch time.
CLIPPED_THEN_RESTORED = [
    {"listed": [], "publisher": {}, "max_fetches": 1, "max_rows": None, "revisit": Revisit(), "hints": {}, "seed": 0},
    {"listed": ["a"], "publisher": {"a": ("ok", "v\r2", 2)}, "max_fetches": 1, "max_rows": 1, "revisit": Revisit(),
     "hints": {}, "seed": 0},
    {"listed": [], "publisher": {"a": ("ok", "v\r2", 2)}, "max_fetches": 1, "max_rows": None, "revisit": Revisit(),
     "hints": {}, "seed": 0},
]


@SETTINGS
@given(histories)
@example(CLIPPED_THEN_RESTORED)
def test_absence_never_deletes_and_failed_pages_keep_their_rows(history):
    for before, r, spec, _ in replay(history):
        old, new = rows_by_page(before), rows_by_page(r.state)
        answered_differently = {c.page_id for c in r.result.corrections}
        first_fetch = {x.page_id for x in r.results if x.outcome == "fetched"} - set(before.ledger_rows())
        for pid, rows in old.items():
            if pid in answered_differently or pid in r.result.clipped:
                continue
            kept = new.get(pid, [])
            assert kept[:len(rows)] == rows or [row[:2] for row in kept] == [row[:2] for row in rows], pid
        for x in r.results:
            if x.outcome != "fetched" and x.page_id in old and x.page_id not in r.result.clipped:
                assert new[x.page_id] == old[x.page_id]
        assert set(before.ledger_rows()) <= set(r.result.ledger)          # no ledger row ever goes
        assert not (first_fetch & answered_differently)


@SETTINGS
@given(histories)
def test_known_is_pending_plus_fetched_plus_failed_plus_skipped(history):
    for _, r, _, _ in replay(history):
        states = [row.state for row in r.state.ledger_rows().values()]
        fetched = states.count("fetched")
        c = r.cov
        assert c.known == len(states) == c.pending + fetched + c.failed + c.skipped
        assert c.fetched_this_run >= c.unchanged + c.changed
        assert c.complete == (c.discovery_complete and c.pending == 0 and c.failed == 0 and not r.result.truncated
                              and c.budget_exhausted is None)


@SETTINGS
@given(histories)
def test_revisions_only_grow_and_only_on_a_digest_change(history):
    for before, r, _, _ in replay(history):
        prior = before.ledger_rows()
        for pid, row in r.state.ledger_rows().items():
            was = prior.get(pid)
            if was is None or was.revision == 0:
                assert row.revision in (0, 1)
                assert (row.revision == 1) == (row.content_sha256 is not None)
                continue
            assert row.revision >= was.revision
            if row.revision != was.revision:
                assert row.revision == was.revision + 1 and row.content_sha256 != was.content_sha256
                assert row.previous_content_sha256 == was.content_sha256
            else:
                assert row.content_sha256 == was.content_sha256
        for pid, rows in rows_by_page(r.state).items():
            assert {x[6] for x in rows} == {str(r.row(pid).revision)}


# Run 2 cuts "z z" (the first page with rows) at max_rows 1; run 3 lifts the clamp but fetches
# only "a", which sorts before it: "z z" keeps its one row, pending (COV-23), until it is
# fetched again (COV-25). A split page that is not first is one kept from an earlier cut.
CUT_EARLIER_THEN_OVERTAKEN = [
    {"listed": ["a"], "publisher": {}, "max_fetches": 1, "max_rows": None,
     "revisit": Revisit("never"), "hints": {}, "seed": 0},
    {"listed": ["z z"], "publisher": {"a": ("skip", "https://elsewhere.example/x"), "z z": ("ok", "v0", 2)},
     "max_fetches": 1, "max_rows": 1, "revisit": Revisit("never"), "hints": {}, "seed": 0},
    {"listed": [], "publisher": {"a": ("ok", "v0", 1)}, "max_fetches": 1, "max_rows": None,
     "revisit": Revisit("never"), "hints": {}, "seed": 0},
]


@SETTINGS
@given(histories)
@example(CUT_EARLIER_THEN_OVERTAKEN)
def test_the_clamp_never_splits_a_page_except_the_first(history):
    for _, r, spec, _ in replay(history):
        fetched_now = {x.page_id for x in r.results if x.outcome == "fetched"}
        pages = rows_by_page(r.state)
        ordered = sorted(pages)
        assert list(pages) == ordered
        total = sum(len(rows) for rows in pages.values())
        if spec["max_rows"] is not None:
            assert total <= spec["max_rows"]
        for i, pid in enumerate(ordered):
            rows = pages[pid]
            assert [x[8] for x in rows] == [str(n) for n in range(1, len(rows) + 1)]
            expected = r.row(pid).row_count
            if len(rows) != expected:
                # COV-21, COV-22: this run cuts through the first page only; any other split
                # page was cut by an earlier run and has not been fetched since (COV-23)
                assert r.row(pid).state != "fetched" and len(rows) < expected, pid
                assert i == 0 or pid not in fetched_now, pid
        if r.result.truncated:
            assert r.cov.complete is False
