"""One table-driven test per MERGE and COV clause (and the REF clauses the merge owns).

Each row of CASES names the clause it covers; its check builds runs with the tiny run
loop of test_merge_kit and asserts on ledger facts, coverage members and relation rows.
"""

from __future__ import annotations

import io
import re

import pytest

from collection.merge.coverage import Coverage, is_complete
from collection.merge.ledger import check_ledger_header, read_ledger
from collection.merge.ledger import MergeInvalid
from collection.merge.engine import check_predecessor
from collection.merge.planner import Revisit
from collection.merge.relation import check_relation_header, scan_relation
from collection.merge.states import COVERAGE_MEMBERS
from test_merge_kit import COLS, body, Publisher, State, listing, relation_rows, rows_by_page, run, sha, t

PID, URL, FETCHED_AT, SHA, REV, DISC_AT, ORD = range(2, 9)


def base(*ids, n=2, content=None):
    """A first run that fetched every page in `ids` (content 'v1:<id>', n rows each)."""
    pub = Publisher()
    for pid in ids:
        pub.ok(pid, (content or "v1:") + pid, n)
    return run(State(), listing(*ids), pub, now=t(0)), pub


# --- MERGE -----------------------------------------------------------------------------------

def merge_01():
    r1, pub = base("a", "b")
    r2 = run(r1.state, listing("a", "b"), Publisher(), now=t(1))
    assert rows_by_page(r2.state) == rows_by_page(r1.state)


def merge_02():
    r = run(State(), listing(), Publisher(), now=t(0))
    assert r.state.relation == ",".join(COLS) + ",page_id,page_url,page_fetched_at,page_content_sha256," \
        "page_revision,page_discovered_at,page_ordinal\n"
    assert r.cov.known == 0


def merge_03():
    r = run(State(), listing("a", requests=7), Publisher().ok("a", "x"), now=t(0))
    assert r.cov.discovery_requests == 7


def merge_04():
    r1, _ = base("a")
    r2 = run(r1.state, listing("a", "b", "c"), Publisher().ok("b", "b"), now=t(1), max_fetches=1)
    assert [c.page_id for c in r2.chosen] == ["b"]
    assert (r2.row("c").state, r2.row("c").discovered_at) == ("pending", t(1))
    assert r2.row("b").discovery_ordinal < r2.row("c").discovery_ordinal


def merge_05():
    r1, _ = base("a", "b")
    r2 = run(r1.state, listing("a"), Publisher(), now=t(5))
    assert r2.row("a").last_seen_at == t(5) and r2.row("b").last_seen_at == t(0)


def merge_06():
    r1 = run(State(), listing("a", hints={"a": "h1"}), Publisher().ok("a", "x"), now=t(0))
    r2 = run(r1.state, listing("a", hints={"a": "h2"}), Publisher(), now=t(1))
    assert (r2.row("a").revision_hint, r2.row("a").revision_hint_at_fetch) == ("h2", "h1")


def merge_07():
    ids = [f"p{i}" for i in range(5)]
    pub = Publisher()
    for pid in ids:
        pub.ok(pid, pid)
    r = run(State(), listing(*ids), pub, now=t(0), max_fetches=2)
    assert len(r.chosen) == 2 and r.cov.budget_exhausted == "max_fetches_per_run"
    r = run(State(), listing(*ids), pub, now=t(0), exhausted_after=3, exhausted="max_requests")
    assert len(r.chosen) == 3 and r.cov.budget_exhausted == "max_requests"


def merge_08():
    r1 = run(State(), listing("z", "y", "x"), Publisher(), now=t(0), max_fetches=1, exhausted_after=0)
    r2 = run(r1.state, listing("w", "x", "y", "z"), Publisher(), now=t(1), exhausted_after=0)
    ledger = r2.state.ledger_rows()
    order = sorted((row for row in ledger.values() if row.state == "pending"), key=lambda r: r.discovery_ordinal)
    assert [row.page_id for row in order] == ["z", "y", "x", "w"]
    r3 = run(r2.state, listing(), Publisher(), now=t(2))
    assert [c.page_id for c in r3.chosen] == ["z", "y", "x", "w"]


def merge_09():
    timeout = Publisher({p: ("fail", "timeout") for p in "abcd"})
    r1 = run(State(), listing("c"), timeout, now=t(0))                                   # c fails at t0
    r2 = run(r1.state, listing("b", "a"), timeout, now=t(1), exhausted_after=2)          # b, a fail at t1
    assert r2.row("c").failed_at == t(0) and r2.row("a").failed_at == t(1)
    r3 = run(r2.state, listing("d"), Publisher().ok("d", "d"), now=t(2))
    assert [(c.page_id, c.why) for c in r3.chosen] == \
        [("d", "pending"), ("c", "failed"), ("b", "failed"), ("a", "failed")]


def merge_10():
    r1 = run(State(), listing("a", "b", hints={"a": "1", "b": "1"}), Publisher().ok("a", "a").ok("b", "b"),
             now=t(0))
    r2 = run(r1.state, listing("a", "b", "c", hints={"a": "2", "b": "1"}),
             Publisher({"c": ("fail", "timeout")}).ok("a", "a"), now=t(1), revisit=Revisit("revision_hint"))
    r3 = run(r2.state, listing("a", "d", hints={"a": "3"}), Publisher().ok("a", "a").ok("d", "d").ok("c", "c"),
             now=t(2), revisit=Revisit("revision_hint"))
    assert [(c.page_id, c.why) for c in r3.chosen] == [("d", "pending"), ("c", "failed"), ("a", "revisit")]


def merge_11():
    r = run(State(), listing("a", "b"), Publisher({"a": ("bad", 2)}).ok("b", "b"), now=t(0))
    assert r.row("a").failure_code == "column_mismatch" and r.row("b").state == "fetched"


def merge_12():
    r, _ = base("a")
    assert r.state.ledger.startswith("ledger_version,page_id,") and len(relation_rows(r.state)) == 2
    assert isinstance(r.cov, Coverage)


def merge_13():
    r1, pub = base("a")
    r2 = run(r1.state, listing("a"), pub, now=t(5), revisit=Revisit("interval", 3600))
    assert r2.row("a").state == "fetched" and r2.cov.unchanged == 1 and r2.row("a").revision == 1
    assert r2.row("a").last_fetched_at == t(5)                                   # D-32


def merge_14():
    r1, pub = base("a", "b")
    r2 = run(r1.state, listing("a", "b"), pub, now=t(5), revisit=Revisit("interval", 3600))
    assert rows_by_page(r2.state)["a"] == rows_by_page(r1.state)["a"]
    assert rows_by_page(r2.state)["a"][0][FETCHED_AT] == t(0)                  # D-31


def merge_15():
    r1, pub = base("a", "b", "c")
    r2 = run(r1.state, listing("a", "b", "c"), pub, now=t(5), revisit=Revisit("interval", 3600))
    assert r2.cov.unchanged == 3 and r2.state.relation == r1.state.relation


def merge_16():
    r1, pub = base("a", "b", "c")
    pub.ok("b", "v2:b", 3)
    r2 = run(r1.state, listing("a", "b", "c"), pub, now=t(5), revisit=Revisit("interval", 3600))
    old, new = rows_by_page(r1.state), rows_by_page(r2.state)
    assert new["a"] == old["a"] and new["c"] == old["c"]
    assert [r[0] for r in new["b"]] == ["v2:b #1", "v2:b #2", "v2:b #3"]
    assert [r[ORD] for r in new["b"]] == ["1", "2", "3"]


def merge_17():
    r1, pub = base("a")
    pub.ok("a", "v2")
    r2 = run(r1.state, listing("a"), pub, now=t(5), revisit=Revisit("interval", 3600))
    assert r2.row("a").revision == 2 and {r[REV] for r in relation_rows(r2.state)} == {"2"}


def merge_18():
    r1, pub = base("a")
    pub.ok("a", "v2")
    r2 = run(r1.state, listing("a"), pub, now=t(5), revisit=Revisit("interval", 3600))
    assert r2.row("a").previous_content_sha256 == sha(body("v1:a")) and r2.row("a").content_sha256 == sha(body("v2"))


def merge_19():
    r1, pub = base("a", "b")
    pub.ok("b", "v2")
    r2 = run(r1.state, listing("a", "b"), pub, now=t(5), revisit=Revisit("interval", 3600))
    assert [(c.page_id, c.previous_content_sha256, c.revision) for c in r2.result.corrections] == \
        [("b", sha(body("v1:b")), 2)]


def _refused(code):
    r1, _ = base("a")
    r2 = run(r1.state, listing("a"), Publisher({"a": ("fail", code)}), now=t(5), revisit=Revisit("interval", 1))
    assert r2.row("a").state == "failed" and r2.row("a").failure_code == code


def merge_20():
    for code in ("robots_disallowed", "http_status_403", "max_source_bytes", "egress_refused"):
        _refused(code)


def merge_21():
    _refused("decode_error")


def merge_22():
    r1, _ = base("a")
    r2 = run(r1.state, listing("a"), Publisher({"a": ("bad", 1)}), now=t(5), revisit=Revisit("interval", 1))
    assert r2.row("a").state == "failed" and r2.row("a").failure_code == "column_mismatch"
    assert rows_by_page(r2.state)["a"] == rows_by_page(r1.state)["a"]


def merge_23():
    r = run(State(), listing("a", "b", "c"),
            Publisher({"a": ("fail", "http_status_410"), "b": ("fail", "robots_disallowed"),
                       "c": ("fail", "http_status_503")}), now=t(0))
    assert [(r.row(p).failure_code, r.row(p).failure_class) for p in "abc"] == \
        [("http_status_410", "gone"), ("robots_disallowed", "blocked"), ("http_status_503", "error")]
    assert r.result.failures_by_class == {"blocked": 1, "error": 1, "gone": 1}
    assert read_ledger(io.StringIO(r.state.ledger))["a"].failure_class == "gone"


def merge_24():
    r1, _ = base("a", "b")
    r2 = run(r1.state, listing("a", "b"), Publisher({"a": ("fail", "http_status_404")}), now=t(5),
             revisit=Revisit("interval", 1))
    assert rows_by_page(r2.state)["a"] == rows_by_page(r1.state)["a"]


def merge_25():
    r1, _ = base("a", "b")
    r2 = run(r1.state, listing("b"), Publisher(), now=t(5))
    assert rows_by_page(r2.state)["a"] == rows_by_page(r1.state)["a"]


def merge_26():
    r1, _ = base("a", "b")
    r2 = run(r1.state, listing(), Publisher(), now=t(5))
    assert r2.row("a") == r1.row("a") and r2.cov.known == 2


def merge_27():
    r1, pub = base("a", "b", "c", "d")
    behaviours = Publisher({"a": ("fail", "http_status_404"), "b": ("skip", "https://elsewhere.example/b")})
    behaviours.ok("c", "v1:c").ok("d", "v2:d")
    r2 = run(r1.state, listing("a", "b", "c"), behaviours, now=t(5), revisit=Revisit("interval", 1))
    old, new = rows_by_page(r1.state), rows_by_page(r2.state)
    assert new["a"] == old["a"] and new["b"] == old["b"] and new["c"] == old["c"]
    assert new["d"] != old["d"] and len(new["d"]) == len(old["d"])


def merge_28():
    r1, pub = base("a", "b")
    r2 = run(r1.state, listing("a", "b", "c"), Publisher({"a": ("fail", "timeout")}).ok("b", "v1:b").ok("c", "c"),
             now=t(1), revisit=Revisit("interval", 1))
    r3 = run(r2.state, listing("a", "b", "c", "d"), Publisher().ok("a", "a").ok("d", "d"), now=t(100))
    assert [c.page_id for c in r3.chosen] == ["d", "a"]


def merge_29():
    r1 = run(State(), listing("a", "b", "c", hints={"a": "1", "b": "1"}),
             Publisher().ok("a", "a").ok("b", "b").ok("c", "c"), now=t(0))
    r2 = run(r1.state, listing("a", "b", "c", hints={"a": "1", "b": "2"}),
             Publisher().ok("b", "b"), now=t(1), revisit=Revisit("revision_hint"))
    assert [c.page_id for c in r2.chosen] == ["b"]
    assert r2.row("b").revision_hint_at_fetch == "2" and r2.row("b").revision == 1
    r3 = run(r2.state, listing("a", "b", "c", hints={"a": "1", "b": "2"}),
             Publisher(), now=t(2), revisit=Revisit("revision_hint"))
    assert r3.chosen == []


def merge_30():
    pub = Publisher().ok("a", "a").ok("b", "b").ok("c", "c")
    r1 = run(State(), listing("a"), pub, now=t(0))
    r2 = run(r1.state, listing("a", "b", "c"), pub, now=t(1))          # b, c fetched at t(1)
    r3 = run(r2.state, listing("c"), pub, now=t(1.5),
             revisit=Revisit("interval", 3600))                        # nothing older than 1 h but a
    assert [c.page_id for c in r3.chosen] == ["a"]
    r4 = run(r3.state, listing("a", "b", "c"), pub, now=t(2.75), revisit=Revisit("interval", 3600))
    assert [c.page_id for c in r4.chosen] == ["b", "c", "a"]
    r5 = run(r2.state, listing(), pub, now=t(3), revisit=Revisit("interval", 3600))
    assert [c.page_id for c in r5.chosen] == ["a", "b", "c"]           # oldest first
    # D-63: exactly `seconds` since the last fetch is not yet due; one second later it is
    r6 = run(r1.state, listing("a"), pub, now=t(1), revisit=Revisit("interval", 3600))
    assert [c.page_id for c in r6.chosen] == []
    r7 = run(r1.state, listing("a"), pub, now=t(1 + 1 / 3600), revisit=Revisit("interval", 3600))
    assert [c.page_id for c in r7.chosen] == ["a"]


def merge_31():
    r1 = run(State(), listing("a", "b", unreachable={"a": "origin not in allowed_origins"}),
             Publisher({"b": ("skip", "https://elsewhere.example/x")}), now=t(0))
    assert r1.row("a").state == "skipped_origin" and r1.row("b").state == "skipped_origin"
    assert [c.page_id for c in r1.chosen] == ["b"]
    r2 = run(r1.state, listing("a", "b", unreachable={"a": "not https"}), Publisher(), now=t(1),
             revisit=Revisit("interval", 1))
    assert r2.chosen == [] and r2.cov.skipped == 2 and r2.row("b").landed_url == "https://elsewhere.example/x"


# --- COV -------------------------------------------------------------------------------------

def cov_01():
    ids = [f"p{i}" for i in range(4)]
    r = run(State(), listing(*ids), Publisher({p: ("ok", p, 1) for p in ids}), now=t(0), max_fetches=1)
    assert r.cov.fetched_this_run == 1 and r.cov.complete is False          # returned, not raised


def cov_02():
    for budget in ("max_requests", "max_source_bytes", "deadline"):
        r = run(State(), listing("a", "b"), Publisher().ok("a", "a").ok("b", "b"), now=t(0),
                exhausted_after=1, exhausted=budget)
        assert (r.cov.budget_exhausted, r.cov.complete) == (budget, False)


def cov_03():
    r, _ = base("a")
    assert tuple(r.cov.as_dict()) == COVERAGE_MEMBERS and len(COVERAGE_MEMBERS) == 15


def cov_04():
    r = run(State(), listing("a", "b", "c", duplicates=2), Publisher(), now=t(0), exhausted_after=0)
    assert r.cov.discovered == 3


def cov_05():
    r = run(State(), listing("a", requests=29), Publisher().ok("a", "a"), now=t(0))
    assert r.cov.discovery_requests == 29


def cov_06():
    r = run(State(), listing("a", complete=False), Publisher().ok("a", "a"), now=t(0))
    assert r.cov.discovery_complete is False and r.cov.complete is False


def cov_07():
    r = run(State(), listing("a", complete=False, failure="https://www.example.com/list?page=3"),
            Publisher().ok("a", "a"), now=t(0))
    assert r.cov.discovery_failure == "https://www.example.com/list?page=3"
    r = run(State(), listing("a"), Publisher().ok("a", "a"), now=t(0))
    assert r.cov.discovery_failure is None


def cov_08():
    r = run(State(), listing("a", duplicates=4), Publisher().ok("a", "a"), now=t(0))
    assert r.cov.duplicates_dropped == 4


def cov_09():
    r1, _ = base("a", "b")
    r2 = run(r1.state, listing("c"), Publisher(), now=t(1), exhausted_after=0)
    assert r2.cov.known == 3 and r2.cov.discovered == 1


def cov_10():
    r1, pub = base("a", "b")
    pub.ok("b", "v2").ok("c", "c")
    pub.pages["d"] = ("fail", "timeout")
    r2 = run(r1.state, listing("a", "b", "c", "d"), pub, now=t(5), revisit=Revisit("interval", 3600))
    assert r2.cov.fetched_this_run == 3 == 1 + r2.cov.unchanged + r2.cov.changed     # D-16


def cov_11():
    r1, pub = base("a", "b", "c")
    pub.ok("c", "v2")
    r2 = run(r1.state, listing("a", "b", "c"), pub, now=t(5), revisit=Revisit("interval", 3600))
    assert (r2.cov.unchanged, r2.cov.changed) == (2, 1)


def cov_12():
    r, _ = base("a", "b")
    assert (r.cov.fetched_this_run, r.cov.unchanged, r.cov.changed) == (2, 0, 0)


def cov_13():
    r1 = run(State(), listing("a", "b"), Publisher({"a": ("fail", "timeout"), "b": ("fail", "timeout")}), now=t(0))
    r2 = run(r1.state, listing("a", "b"), Publisher({"a": ("fail", "timeout")}), now=t(1), exhausted_after=1)
    assert (r2.cov.failed_this_run, r2.cov.failed) == (1, 2)


def cov_14():
    r = run(State(), listing("a", "b", "c"), Publisher().ok("a", "a", 2).ok("b", "b", 2), now=t(0),
            max_rows=3, exhausted_after=2)
    assert r.result.clipped == ("b",) and r.cov.pending == 2                       # b clipped + c never fetched


def cov_15():
    r = run(State(), listing("a", "b", unreachable={"a": "port other than 443"}),
            Publisher({"b": ("skip", "http://www.example.com/b")}), now=t(0))
    assert r.cov.skipped == 2


def cov_16():
    with pytest.raises(ValueError):
        Coverage(0, 0, True, None, 0, 0, 0, 0, 0, 0, 0, 0, 0, "max_rows", True)


def cov_17():
    r = run(State(), listing("a", "b"), Publisher().ok("a", "a").ok("b", "b"), now=t(0), max_fetches=2)
    assert r.cov.budget_exhausted is None and r.cov.complete is True


def cov_18():
    for dc, pending, failed, truncated, budget in [(a, b, c, d, e) for a in (True, False) for b in (0, 1)
                                                   for c in (0, 1) for d in (False, True)
                                                   for e in (None, "max_pages")]:
        assert is_complete(discovery_complete=dc, pending=pending, failed=failed, truncated=truncated,
                           budget_exhausted=budget) == \
            (dc and pending == 0 and failed == 0 and not truncated and budget is None)   # and COV-02


def cov_19():
    ids = [f"decision-{i:04d}" for i in range(1, 2820)]
    pub = Publisher({pid: ("ok", pid, 1) for pid in ids})
    for pid in ids[10:13]:
        pub.pages[pid] = ("fail", "http_status_500")
    r = run(State(), listing(*ids, requests=29), pub, now=t(0), max_fetches=500, max_pages=4000)
    assert r.cov.as_dict() == {
        "discovered": 2819, "discovery_requests": 29, "discovery_complete": True,
        "discovery_failure": None, "duplicates_dropped": 0, "known": 2819, "fetched_this_run": 500,
        "unchanged": 0, "changed": 0, "failed_this_run": 3, "pending": 2316, "failed": 3, "skipped": 0,
        "budget_exhausted": "max_fetches_per_run", "complete": False}


def cov_20():
    r = run(State(), listing("a", "b"), Publisher().ok("a", "a", 2).ok("b", "b", 2), now=t(0), max_rows=4)
    assert r.result.truncated is False and r.cov.complete
    r = run(State(), listing("a", "b"), Publisher().ok("a", "a", 2).ok("b", "b", 2), now=t(0), max_rows=3)
    assert r.result.truncated is True


def cov_21():
    r = run(State(), listing("a", "b", "c"), Publisher().ok("a", "a", 2).ok("b", "b", 2).ok("c", "c", 1),
            now=t(0), max_rows=3)
    assert [row[PID] for row in relation_rows(r.state)] == ["a", "a"]                # c would fit; the cut is a prefix
    assert r.result.clipped == ("b", "c")


def cov_22():
    r = run(State(), listing("b", "a"), Publisher().ok("a", "a", 5).ok("b", "b", 1), now=t(0), max_rows=3)
    assert [(row[PID], row[ORD]) for row in relation_rows(r.state)] == [("a", "1"), ("a", "2"), ("a", "3")]
    assert r.row("a").state == "pending" and r.result.truncated


def cov_23():
    r = run(State(), listing("a", "b"), Publisher().ok("a", "a", 2).ok("b", "b", 2), now=t(0), max_rows=3)
    assert r.row("b").state == "pending" and r.row("b").content_sha256 == sha(body("b"))


def cov_24():
    r = run(State(), listing("a", "b"), Publisher().ok("a", "a", 2).ok("b", "b", 2), now=t(0), max_rows=3)
    assert r.cov.complete is False and r.cov.pending == 1 and r.cov.failed == 0


def cov_25():
    pub = Publisher().ok("a", "a", 2).ok("b", "b", 2)
    r1 = run(State(), listing("a", "b"), pub, now=t(0), max_rows=3)
    r2 = run(r1.state, listing("a", "b"), pub, now=t(1), max_rows=10)
    assert len(rows_by_page(r2.state)["b"]) == 2 and r2.cov.complete and not r2.result.truncated
    assert r2.cov.unchanged == 1


def cov_26():
    pub = Publisher().ok("a", "a", 5)
    r1 = run(State(), listing("a"), pub, now=t(0), max_rows=3)
    r2 = run(r1.state, listing("a"), pub, now=t(1), max_rows=10)
    assert r2.row("a").revision == 1 and {row[REV] for row in relation_rows(r2.state)} == {"1"}
    assert [row[ORD] for row in relation_rows(r2.state)] == ["1", "2", "3", "4", "5"]
    assert r2.result.corrections == ()


def cov_27():
    r1, pub = base("a", "b", "c")
    lines = r1.state.relation.splitlines(keepends=True)
    damaged = State(r1.state.ledger, "".join(line for line in lines if ",b,https" not in line))
    # and a ledger from before row counts were recorded
    legacy = damaged.ledger.replace(",2\n", ",\n")
    for state in (damaged, State(legacy, damaged.relation)):
        r2 = run(state, listing("a", "b", "c"), pub, now=t(1))
        assert [c.page_id for c in r2.chosen] == ["b"]
        assert rows_by_page(r2.state)["b"][0][:2] == rows_by_page(r1.state)["b"][0][:2]
        assert r2.row("b").revision == 1 and r2.cov.complete


def cov_28():
    pub = Publisher().ok("a", "a", 2).ok("b", "b", 2)
    state = State()
    for hour in range(5):
        r = run(state, listing("a", "b"), pub, now=t(hour), max_rows=3)
        assert r.cov.complete is False and r.result.truncated
        state = r.state


def cov_29():
    r1, _ = base("a")
    r2 = run(r1.state, listing(complete=False, failure="https://www.example.com/list?page=1", requests=1),
             Publisher(), now=t(1))
    assert r2.cov.discovered == 0 and r2.cov.discovery_failure and r2.cov.complete is False
    assert r2.cov.known == 1


# --- REF the merge owns ---------------------------------------------------------------------

def ref_05():
    r, _ = base("a")
    assert check_predecessor(io.StringIO(r.state.ledger), io.StringIO(r.state.relation), COLS) is None
    assert check_predecessor(io.StringIO(r.state.ledger), io.StringIO(r.state.relation), ("x",)).rule == "REF-05"
    problem = check_relation_header(io.StringIO(r.state.relation), ("title", "summary"))
    assert problem is not None and problem.code == "COLLECTION_MERGE_INVALID"
    with pytest.raises(MergeInvalid):
        scan_relation(io.StringIO(r.state.relation), ("title",))


def ref_06():
    r, _ = base("a")
    assert check_ledger_header(io.StringIO(r.state.ledger)) is None
    wrong = r.state.ledger.replace("row_count", "rows", 1)
    assert check_ledger_header(io.StringIO(wrong)).code == "COLLECTION_MERGE_INVALID"
    other_version = r.state.ledger.replace("\n1,", "\n2,", 1)
    assert check_ledger_header(io.StringIO(other_version)).code == "COLLECTION_MERGE_INVALID"
    with pytest.raises(MergeInvalid) as info:
        read_ledger(io.StringIO(other_version))
    refusal = info.value.to_refusal()
    assert (refusal.code, refusal.rule, refusal.line) == ("COLLECTION_MERGE_INVALID", "REF-06", 2)


def ref_12():
    r1, _ = base("a", "b")
    r2 = run(r1.state, listing("a", complete=False, failure="https://www.example.com/list?page=2"),
             Publisher(), now=t(1))
    assert r2.state.relation == r1.state.relation and r2.cov.discovery_complete is False


def ref_13():
    r = run(State(), listing("a", "b"), Publisher({"a": ("fail", "http_status_500")}).ok("b", "b"), now=t(0))
    assert r.cov.failed_this_run == 1 and r.row("b").state == "fetched"


def ref_14():
    r = run(State(), listing("a", "b"), Publisher().ok("a", "a").ok("b", "b"), now=t(0), exhausted_after=0,
            exhausted="deadline")
    assert r.cov.budget_exhausted == "deadline" and r.cov.pending == 2


CASES = [(name.replace("_", "-").upper(), fn) for name, fn in sorted(globals().items())
         if re.fullmatch(r"(merge|cov|ref)_\d\d", name)]


@pytest.mark.parametrize("clause,check", CASES, ids=[c for c, _ in CASES])
def test_clause(clause, check):
    check()


def test_every_merge_and_cov_clause_has_a_case():
    named = {c for c, _ in CASES}
    assert {f"MERGE-{i:02d}" for i in range(1, 32)} <= named
    assert {f"COV-{i:02d}" for i in range(1, 30)} <= named
