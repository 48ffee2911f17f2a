"""Benchmark of the merge engine against a bare csv round trip of the same files.

For 5,000 and 50,000 pages of 4 rows each, times (best of --repeat) and peak traced
memory of:
  baseline  read relation.csv and ledger.csv with csv.reader, write them with csv.writer
  idle      a refresh where nothing is fetched (check headers, read ledger, scan relation,
            prepare, plan, merge, write ledger) — the relation's bytes must not change
  changed   the same with 10% of pages' revision hints moved and refetched with new content
Targets: merge ≤ 3× baseline; peak ≤ 200 MiB at 50,000 pages; 50k/5k time ratio ≤ 12.
Run: .venv/bin/python bench/merge.py [--pages 5000 50000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import csv
import gc
import hashlib
import os
import sys
import tempfile
import time
import tracemalloc

from collection.run.gcpause import paused_gc
from collection.merge.ledger import LedgerRow, check_ledger_header, read_ledger, write_ledger
from collection.merge.engine import merge, prepare
from collection.merge.outcomes import FETCHED, DiscoveryOutcome, ListedPage, PageResult, rfc3339
from collection.merge.planner import Choice, Planner, Revisit
from collection.merge.relation import check_relation_header, provenance_row, relation_columns, scan_relation
from collection.merge.csvio import CsvWriter

COLS = ("title", "story")
ROWS_PER_PAGE = 4
T0, T1 = rfc3339(1_700_000_000), rfc3339(1_700_086_400)


def pid(i: int) -> str:
    return f"decision-{i:06d}"


def url(i: int) -> str:
    return f"https://www.example.com/decisions/{i}/"


def reader_rows(i: int, version: str) -> list[tuple[str, str]]:
    return [(f"Decision {i} item {k} ({version})",
             f"The council decided, on item {k}, that \"{version}\" text stands; see page {i}.")
            for k in range(1, ROWS_PER_PAGE + 1)]


def digest(i: int, version: str) -> str:
    return hashlib.sha256(f"{i}/{version}".encode()).hexdigest()


def build_state(directory: str, pages: int) -> None:
    ledger = []
    with open(os.path.join(directory, "relation.csv"), "w", newline="", encoding="utf-8") as out:
        w = CsvWriter(out)
        w.writerow(relation_columns(COLS))
        for i in sorted(range(pages), key=pid):
            sha = digest(i, "v1")
            w.writerows(provenance_row(r, pid(i), url(i), T0, sha, 1, T0, k)
                        for k, r in enumerate(reader_rows(i, "v1"), 1))
            ledger.append(LedgerRow(pid(i), url(i), FETCHED, T0, T0, i + 1, last_fetched_at=T0, content_sha256=sha,
                                    revision=1, revision_hint="h1", revision_hint_at_fetch="h1",
                                    row_count=ROWS_PER_PAGE))
    with open(os.path.join(directory, "ledger.csv"), "w", newline="", encoding="utf-8") as out:
        write_ledger(ledger, out)


def discovery_for(pages: int, changed: frozenset[int]) -> DiscoveryOutcome:
    listed = tuple(ListedPage(pid(i), url(i), "h2" if i in changed else "h1") for i in range(pages))
    return DiscoveryOutcome(listed, requests=pages // 100 + 1, complete=True, failure=None, stop_reason="empty_page")


def baseline(directory: str) -> None:
    for name in ("relation.csv", "ledger.csv"):
        with open(os.path.join(directory, name), newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
        with open(os.path.join(directory, "out-" + name), "w", newline="", encoding="utf-8") as f:
            csv.writer(f, lineterminator="\n").writerows(rows)


def refresh(directory: str, discovery: DiscoveryOutcome, fetch) -> dict:
    """The merge steps as collection/run/loop.py drives them, the collector paused where it pauses it."""
    rel, led = os.path.join(directory, "relation.csv"), os.path.join(directory, "ledger.csv")
    with open(led, newline="", encoding="utf-8") as f:
        assert check_ledger_header(f) is None
    with open(rel, newline="", encoding="utf-8") as f:
        assert check_relation_header(f, COLS) is None
    with paused_gc():
        with open(led, newline="", encoding="utf-8") as f:
            ledger = read_ledger(f)
        with open(rel, newline="", encoding="utf-8") as f:
            counts = scan_relation(f, COLS)
        prepared = prepare(ledger, discovery, counts, now=T1, max_pages=50_000)
    planner = Planner(prepared.ledger, revisit=Revisit("revision_hint"), max_fetches_per_run=10_000, now=T1)
    results = []
    while isinstance(choice := planner.next(), Choice):
        result = fetch(choice)
        planner.report(result)
        results.append(result)
    with paused_gc():
        with open(rel, newline="", encoding="utf-8") as f, \
                open(os.path.join(directory, "new-relation.csv"), "w", newline="", encoding="utf-8") as out:
            result = merge(prepared, results, f, out, reader_columns=COLS, max_rows=1_000_000,
                           budget_exhausted=planner.stop_reason)
        with open(os.path.join(directory, "new-ledger.csv"), "w", newline="", encoding="utf-8") as out:
            write_ledger(result.ledger, out)
    return result.coverage.as_dict()


def measure(fn, repeat: int) -> tuple[float, float]:
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    gc.collect()
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return best, peak / 2**20


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, nargs="+", default=[5_000, 50_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    times: dict[tuple[int, str], float] = {}
    ok = True
    print(f"{'pages':>7} {'rows':>8} {'case':>8} {'seconds':>8} {'peak MiB':>9} {'× baseline':>10}")
    for pages in args.pages:
        with tempfile.TemporaryDirectory() as directory:
            build_state(directory, pages)
            changed = frozenset(range(0, pages, 10))
            fresh = {pid(i): PageResult(pid(i), FETCHED, T1, digest(i, "v2"), tuple(reader_rows(i, "v2")))
                     for i in changed}
            cases = {
                "baseline": lambda: baseline(directory),
                "idle": lambda: refresh(directory, discovery_for(pages, frozenset()), None),
                "changed": lambda: refresh(directory, discovery_for(pages, changed), lambda c: fresh[c.page_id]),
            }
            for name, fn in cases.items():
                seconds, peak = measure(fn, args.repeat)
                times[(pages, name)] = seconds
                ratio = seconds / times[(pages, "baseline")]
                print(f"{pages:>7} {pages * ROWS_PER_PAGE:>8} {name:>8} {seconds:>8.3f} {peak:>9.1f} {ratio:>10.2f}")
                if name != "baseline":
                    ok &= ratio <= 3.0 and (pages < 50_000 or peak <= 200)
            with open(os.path.join(directory, "relation.csv"), "rb") as a:
                before = a.read()
            cases["idle"]()
            with open(os.path.join(directory, "new-relation.csv"), "rb") as b:
                identical = b.read() == before
            print(f"{'':>7} idle refresh relation byte-identical: {identical}")
            ok &= identical
            coverage = cases["changed"]()
            print(f"{'':>7} changed refresh coverage: fetched_this_run={coverage['fetched_this_run']} "
                  f"changed={coverage['changed']} known={coverage['known']}")
    if len(args.pages) >= 2:
        small, large = min(args.pages), max(args.pages)
        for name in ("baseline", "idle", "changed"):
            ratio = times[(large, name)] / times[(small, name)]
            print(f"time ratio {large}/{small} {name:>8}: {ratio:.2f} (pages ×{large / small:.0f})")
            if name != "baseline":
                ok &= ratio <= 12 * (large / small) / 10
    print("targets met" if ok else "TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
