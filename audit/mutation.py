"""Strictness of the conformance suite, measured by seeding faults into collection.

    .venv/bin/python audit/mutation.py [--set ours|independent|independent-2|all] [--mode inline|loopback|both]
                                       [-j N] [--only ID,ID] [--write]

Each mutant is a monkeypatch applied inside the harness process (the project harness reads
COLLECTION_MUTANT=<id> and calls `kit.apply(id)` before any case runs); no source
file is ever edited. Three sets register into one mechanism (audit/kit.py): this
project's own faults (below) and the independent ones (audit/mutants_independent.py, from
audit/faults/independent.json, and audit/mutants_independent_2.py, from faults/independent-2.json, both
written from the specification alone). A mutant is killed when at least
one case fails or errors that passes without it. `--mode both` runs inline first, then
loopback for the inline survivors and the faults their author marked loopback. Cases naming
the fault's clauses run first and the run stops at the first kill, so killed mutants cost
little; survivors run the whole suite. `--write` records the kills in audit/kills.json and
conformance/fault_kills.json (which `python -m conformance clauses` reads: a clause is covered
when a fault of it is killed).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kit import (MUTANTS, _canonical, _coverage, _drop_rows, _provenance, _reorder,  # noqa: E402
                          _replace_everywhere, _split, _wrap, apply, failures_use_fetches, mutant)

# --- ordering ------------------------------------------------------------------------------
@mutant("order-pending-reversed", "ordering", "pending pages taken in reverse discovery order")
def _():
    _reorder(lambda cs: (lambda p, f, r: tuple(p[::-1] + f + r))(*_split(cs)))


@mutant("ours-order-failed-newest-first", "ordering", "failed pages taken newest failure first")
def _():
    _reorder(lambda cs: (lambda p, f, r: tuple(p + f[::-1] + r))(*_split(cs)))


@mutant("ours-order-failed-before-pending", "ordering", "failed pages before pending ones")
def _():
    _reorder(lambda cs: (lambda p, f, r: tuple(f + p + r))(*_split(cs)))


@mutant("order-revisit-first", "ordering", "revisits before pending and failed pages")
def _():
    _reorder(lambda cs: (lambda p, f, r: tuple(r + p + f))(*_split(cs)))


@mutant("ours-revisit-never-skips-failed", "ordering", "failed pages are never retried on a later run")
def _():
    _reorder(lambda cs: tuple(c for c in cs if c.why != "failed"))


# --- revisions and digests ---------------------------------------------------------------
@mutant("revision-never-increments", "revisions", "page_revision stays 1 when the digest changes")
def _():
    _provenance(lambda a: a[:5] + [1] + a[6:])


@mutant("revision-starts-at-zero", "revisions", "a first fetch writes page_revision 0")
def _():
    _provenance(lambda a: a[:5] + [a[5] - 1] + a[6:])


@mutant("ordinal-zero-based", "revisions", "page_ordinal counts from 0")
def _():
    _provenance(lambda a: a[:7] + [a[7] - 1])


@mutant("digest-uppercase", "canonicalisation", "page_content_sha256 in uppercase hex")
def _():
    _provenance(lambda a: a[:4] + [a[4].upper()] + a[5:])


@mutant("page-url-is-id", "revisions", "page_url holds the page id")
def _():
    _provenance(lambda a: a[:2] + [a[1]] + a[3:])


# --- coverage counters ---------------------------------------------------------------------
@mutant("coverage-unchanged-zero", "coverage", "unchanged is always 0")
def _():
    _coverage(lambda d: {**d, "unchanged": 0})


@mutant("coverage-no-duplicates", "coverage", "duplicates_dropped is always 0")
def _():
    _coverage(lambda d: {**d, "duplicates_dropped": 0})


@mutant("coverage-known-without-skipped", "coverage", "known leaves out skipped_origin pages")
def _():
    _coverage(lambda d: {**d, "known": d["known"] - d["skipped"]})


@mutant("coverage-member-order", "coverage", "coverage members sorted alphabetically")
def _():
    _coverage(lambda d: dict(sorted(d.items())))


@mutant("coverage-discovery-requests-off", "coverage", "discovery_requests leaves out the terminating request")
def _():
    _coverage(lambda d: {**d, "discovery_requests": max(0, d["discovery_requests"] - 1)})


@mutant("complete-ignores-failed", "coverage", "complete is true even with failed pages")
def _():
    import collection.merge.coverage as cov
    original = cov.is_complete
    _replace_everywhere(original, lambda **kw: original(**{**kw, "failed": 0}))


@mutant("complete-ignores-truncation", "coverage", "complete ignores the truncated relation")
def _():
    import collection.merge.coverage as cov
    original = cov.is_complete
    _replace_everywhere(original, lambda **kw: original(**{**kw, "truncated": False, "pending": 0}))


# --- budgets ------------------------------------------------------------------------------
@mutant("ours-budget-fetches-plus-one", "budgets", "max_fetches_per_run allows one fetch more")
def _():
    import collection.merge.planner as planner
    original = planner.Planner.__init__

    def __init__(self, ledger, *, max_fetches_per_run, **kw):
        original(self, ledger, max_fetches_per_run=max_fetches_per_run + 1, **kw)
    planner.Planner.__init__ = __init__


@mutant("budget-failures-use-fetches", "budgets", "failed fetches use up max_fetches_per_run (against D-15)")
def _():
    failures_use_fetches()


@mutant("budget-redirects-free", "budgets", "redirect hops are not charged to max_requests")
def _():
    import collection.fetch.budgets as B
    original = B.Budget.__init__

    def __init__(self, max_requests, *a, **kw):
        original(self, max_requests + 1, *a, **kw)
    B.Budget.__init__ = __init__


@mutant("budget-name-lost", "budgets", "budget_exhausted is null whenever max_fetches_per_run ended the run")
def _():
    _coverage(lambda d: {**d, "budget_exhausted": None if d["budget_exhausted"] == "max_fetches_per_run" else d["budget_exhausted"]})


# --- absence and failures ------------------------------------------------------------------
@mutant("absence-deletes-rows", "absence", "pages discovery no longer lists lose their rows")
def _():
    _drop_rows(lambda prepared, results: set() if not prepared.discovery.pages
               else set(prepared.ledger) - {p.page_id for p in prepared.discovery.pages})


@mutant("failure-drops-rows", "failures", "a failed page loses its previous rows")
def _():
    _drop_rows(lambda prepared, results: {r.page_id for r in results if r.outcome == "failed"})


@mutant("retry-404", "failures", "404 is retried like a 5xx (both guards: the fetcher's decision and the retry policy)")
def _():
    import collection.fetch.fetcher as F
    import collection.fetch.retry as R
    original = F.status_decision
    F.status_decision = lambda status: "retry" if status == 404 else original(status)
    retryable = R.is_retryable
    _replace_everywhere(retryable, lambda status, error=None: status == 404 or retryable(status, error))


@mutant("no-retry-5xx", "failures", "5xx answers are never retried")
def _():
    import collection.fetch.fetcher as F
    original = F.status_decision
    F.status_decision = lambda status: "fail" if status >= 500 else original(status)


@mutant("retries-plus-one", "failures", "one retry more than pages.retries")
def _():
    import collection.fetch.fetcher as F
    original = F.Fetcher.__init__

    def __init__(self, *a, retries=2, **kw):
        original(self, *a, retries=retries + 1, **kw)
    F.Fetcher.__init__ = __init__


@mutant("ours-robots-ignored", "failures", "robots.txt is never consulted")
def _():
    import collection.fetch.fetcher as F
    original = F.Fetcher.__init__

    def __init__(self, *a, **kw):
        original(self, *a, **{**kw, "robots": False})
    F.Fetcher.__init__ = __init__


# --- canonicalisation and origins ---------------------------------------------------------
@mutant("canonical-lowercase-path", "canonicalisation", "the path is lowercased")
def _():
    _canonical(lambda url, link: (lambda p: urlunsplit(p._replace(path=p.path.lower())))(urlsplit(url)))


@mutant("canonical-sorted-query", "canonicalisation", "query parameters are sorted")
def _():
    _canonical(lambda url, link: (lambda p: urlunsplit(p._replace(query="&".join(sorted(p.query.split("&"))) if p.query else "")))(urlsplit(url)))


@mutant("canonical-strip-trailing-slash", "canonicalisation", "a trailing slash is removed")
def _():
    _canonical(lambda url, link: url[:-1] if url.endswith("/") and urlsplit(url).path not in ("", "/") else url)


@mutant("origin-ignores-port", "canonicalisation", "the allowlist compares hosts only, so :8443 passes")
def _():
    import collection.urls as U
    original = U.unreachable_reason

    def unreachable_reason(url, allowed):
        parts = urlsplit(url)
        if parts.port and parts.hostname and f"https://{parts.hostname}" in allowed:
            return None
        return original(url, allowed)
    _replace_everywhere(original, unreachable_reason)


@mutant("listing-any-media-type", "canonicalisation", "json_api listings accept text/html and text/plain")
def _():
    import collection.discover.driver as D
    D.ACCEPTED_MEDIA_TYPES["json_api"] = D.ACCEPTED_MEDIA_TYPES["json_api"] + ("text/html", "text/plain")


# --- pagination stops ------------------------------------------------------------------------
@mutant("pagination-starts-one-late", "pagination", "page_parameter starts at first + 1")
def _():
    import collection.discover.pagination as pg
    original = pg.numbered_url
    _replace_everywhere(original, lambda config, base, index: original(config, base, index + 1))


@mutant("pagination-offset-ignores-step", "pagination", "offset_parameter advances by 1 whatever step says")
def _():
    import collection.discover.pagination as pg
    original = pg.numbered_url
    _replace_everywhere(original, lambda config, base, index: original(dataclasses.replace(config, step=1), base, index))


@mutant("pagination-link-header-ignored", "pagination", "link_header never finds rel=next")
def _():
    import collection.discover.pagination as pg
    _replace_everywhere(pg.next_link_target, lambda values: None)


@mutant("clamp-splits-pages", "pagination", "the max_rows clamp cuts through any page")
def _():
    import collection.merge.engine as M
    original = M._write_clamped

    def _write_clamped(writer, pages, max_rows):
        if max_rows is None:
            return original(writer, pages, max_rows)
        written, clipped = 0, []
        for page_id, rows in pages:
            if not rows:
                continue
            room = max_rows - written
            if room <= 0 or len(rows) > room:
                clipped.append(page_id)
            writer.writerows(rows[:max(room, 0)])
            written += min(len(rows), max(room, 0))
        return written, clipped
    M._write_clamped = _write_clamped


def _load_all() -> None:
    import mutants_independent  # noqa: F401  (registers the independent set)
    import mutants_independent_2  # noqa: F401  (registers the second independent set, issue 26)


def _ordered(cases, clauses):
    first = [c for c in cases if set(c.clauses) & set(clauses)]
    return first + [c for c in cases if c not in first]


def _loopback_cases(cases, clauses):
    """Loopback runs on the wall clock (politeness waits are real), so a mutant meets the cases
    naming its clauses and every case with a wire expectation, not the whole suite."""
    return [c for c in cases if set(c.clauses) & set(clauses)
            or any("wire" in r.get("expect", {}) for r in c.data.get("runs", []))]


def _run_one(mid, mode, cases, harness, jobs, base_failing):
    from conformance.runner import ERRORED, FAIL, run_suite

    if mode == "loopback":
        cases = _loopback_cases(cases, MUTANTS[mid]["clauses"])
    outcome = run_suite(harness, cases=_ordered(cases, MUTANTS[mid]["clauses"]), jobs=jobs, mode=mode,
                        env={"COLLECTION_MUTANT": mid}, stop_on_failure=True, keep_order=True)
    broken = [v for v in outcome.verdicts if v.message.startswith("harness did not start")]
    if broken:   # the fault could not be seeded: never count that as a kill
        print(f"BROKEN   {mid}: {broken[0].message[-600:]}", flush=True)
        return None
    return sorted(v.case for v in outcome.verdicts if v.status in (FAIL, ERRORED) and v.case not in base_failing)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-j", type=int, default=os.cpu_count() or 4)
    parser.add_argument("--only")
    parser.add_argument("--set", choices=("ours", "independent", "independent-2", "all"), default="all", dest="fault_set")
    parser.add_argument("--mode", choices=("inline", "loopback", "both"), default="inline")
    parser.add_argument("--write", action="store_true", help="record the kills (audit/kills.json, conformance/fault_kills.json)")
    parser.add_argument("--update", action="store_true",
                        help="with --only: replace those faults' entries in the recorded kills, keep the rest")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    _load_all()
    from conformance.runner import ERRORED, FAIL, run_suite
    from conformance.suite import load_cases

    harness = f"{sys.executable} -m conformance.harnesses.collection_harness"
    ids = args.only.split(",") if args.only else [m for m, meta in MUTANTS.items()
                                                   if args.fault_set in ("all", meta["set"])]
    cases = load_cases()
    modes = ["inline", "loopback"] if args.mode == "both" else [args.mode]
    results = {mid: {"killed_by": None, "mode": None} for mid in ids}
    seconds = {}
    for mode in modes:
        began = time.monotonic()
        baseline = run_suite(harness, cases=cases, jobs=args.j, mode=mode)
        base_failing = {v.case for v in baseline.verdicts if v.status in (FAIL, ERRORED)}
        print(f"[{mode}] baseline: {len(baseline.verdicts)} cases, {len(base_failing)} failing "
              f"{sorted(base_failing)} in {baseline.seconds:.1f} s", flush=True)
        if mode == "loopback" and len(modes) == 2:
            todo = [m for m in ids if results[m]["killed_by"] is None and not results[m].get("broken")]
        else:
            todo = ids
        for mid in todo:
            meta = MUTANTS[mid]
            newly = _run_one(mid, mode, cases, harness, args.j, base_failing)
            if newly is None:
                results[mid] = {"killed_by": None, "mode": None, "broken": True}
                continue
            if newly:
                results[mid] = {"killed_by": newly[0], "mode": mode}
            print(f"{'killed  ' if newly else 'SURVIVED'} [{mode}] {mid:<44} {meta['what'][:90]}"
                  + (f"  <- {newly[0]}" if newly else ""), flush=True)
        seconds[mode] = round(time.monotonic() - began, 1)
    killed = [m for m in ids if results[m]["killed_by"]]
    survivors = [m for m in ids if not results[m]["killed_by"]]
    for mode in modes:
        print(f"[{mode}] killed {sum(1 for m in ids if results[m]['mode'] == mode)} in {seconds[mode]} s")
    for fault_set in ("ours", "independent", "independent-2"):
        mine = [m for m in ids if MUTANTS[m]["set"] == fault_set]
        if mine:
            by_mode = {mode: sum(1 for m in mine if results[m]["mode"] == mode) for mode in modes}
            total_killed = sum(by_mode.values())
            print(f"{fault_set:>11}: {total_killed}/{len(mine)} killed = {100 * total_killed / len(mine):.1f}%  "
                  + "  ".join(f"{mode} {n}" for mode, n in by_mode.items()))
    print(f"\nmutation score: {len(killed)}/{len(ids)} = {100 * len(killed) / max(1, len(ids)):.1f}% killed")
    if survivors:
        print("survivors: " + ", ".join(survivors))
    if args.write or args.update:
        entries = [{"id": m, **{k: MUTANTS[m][k] for k in ("set", "area", "clauses", "mode", "what")}, **results[m]}
                   for m in ids]
        record = {"modes": modes, "seconds": seconds, "faults": entries}
        if args.update:
            old = json.loads((ROOT / "audit" / "kills.json").read_text(encoding="utf-8"))
            fresh = {e["id"]: e for e in entries}
            known = {e["id"] for e in old["faults"]}   # faults new to the record (a new set) are added
            record = {**old, "faults": [fresh.get(e["id"], e) for e in old["faults"]]
                      + [e for e in entries if e["id"] not in known], "updated": sorted(fresh)}
        ids = [f["id"] for f in record["faults"]]
        killed = [f["id"] for f in record["faults"] if f["killed_by"]]
        (ROOT / "audit" / "kills.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        clauses = {}
        for f in record["faults"]:
            for c in f["clauses"]:
                entry = clauses.setdefault(c, {"faults": 0, "killed": []})
                entry["faults"] += 1
                if f["killed_by"]:
                    entry["killed"].append(f["id"])
        (ROOT / "conformance" / "fault_kills.json").write_text(json.dumps(
            {"source": "audit/mutation.py --write (faults seeded into collection, killed by the suite)",
             "faults": len(ids), "killed": len(killed), "clauses": dict(sorted(clauses.items()))},
            indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
