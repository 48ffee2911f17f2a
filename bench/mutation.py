"""Strictness of the conformance suite, measured by seeding faults into collection.

    .venv/bin/python bench/mutation.py [-j N] [--only ID,ID]

Each mutant is a monkeypatch applied inside the harness process (the project harness reads
COLLECTION_MUTANT=<id> and calls `apply(id)` before any case runs); no source file is ever
edited. The suite runs (inline mode) against every mutant; a mutant is killed when at least
one case fails or errors. Prints the score and the survivors.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
MUTANTS: dict[str, tuple[str, str]] = {}      # id -> (area, what it breaks)
_APPLY: dict[str, callable] = {}


def mutant(mid: str, area: str, what: str):
    def register(fn):
        MUTANTS[mid] = (area, what)
        _APPLY[mid] = fn
        return fn
    return register


def _replace_everywhere(original, replacement) -> None:
    """Rebind every `collection.*` module global that names `original` (names imported with
    `from x import y` are copies, so patching the defining module alone is not enough)."""
    import collection.run.loop  # noqa: F401  (load the whole graph first)
    for name, module in list(sys.modules.items()):
        if name == "collection" or name.startswith("collection."):
            for attr, value in list(vars(module).items()):
                if value is original:
                    setattr(module, attr, replacement)


def _wrap(module_name: str, attr: str, make):
    import importlib
    module = importlib.import_module(module_name)
    original = getattr(module, attr)
    _replace_everywhere(original, make(original))


# --- ordering ------------------------------------------------------------------------------
def _reorder(fn):
    def make(original):
        @functools.wraps(original)
        def work_order(ledger, revisit, now):
            return fn(original(ledger, revisit, now))
        return work_order
    _wrap("collection.merge.planner", "work_order", make)


def _split(choices):
    return ([c for c in choices if c.why == "pending"], [c for c in choices if c.why == "failed"],
            [c for c in choices if c.why == "revisit"])


@mutant("order-pending-reversed", "ordering", "pending pages taken in reverse discovery order")
def _():
    _reorder(lambda cs: (lambda p, f, r: tuple(p[::-1] + f + r))(*_split(cs)))


@mutant("order-failed-newest-first", "ordering", "failed pages taken newest failure first")
def _():
    _reorder(lambda cs: (lambda p, f, r: tuple(p + f[::-1] + r))(*_split(cs)))


@mutant("order-failed-before-pending", "ordering", "failed pages before pending ones")
def _():
    _reorder(lambda cs: (lambda p, f, r: tuple(f + p + r))(*_split(cs)))


@mutant("order-revisit-first", "ordering", "revisits before pending and failed pages")
def _():
    _reorder(lambda cs: (lambda p, f, r: tuple(r + p + f))(*_split(cs)))


@mutant("revisit-never-skips-failed", "ordering", "failed pages are never retried on a later run")
def _():
    _reorder(lambda cs: tuple(c for c in cs if c.why != "failed"))


# --- revisions and digests ---------------------------------------------------------------
def _provenance(transform):
    def make(original):
        @functools.wraps(original)
        def provenance_row(reader_row, page_id, page_url, fetched_at, sha, revision, discovered_at, ordinal):
            args = transform(list((reader_row, page_id, page_url, fetched_at, sha, revision, discovered_at, ordinal)))
            return original(*args)
        return provenance_row
    _wrap("collection.merge.relation", "provenance_row", make)


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
def _coverage(transform):
    import collection.merge.coverage as cov
    original = cov.Coverage.as_dict

    def as_dict(self):
        return transform(original(self))
    cov.Coverage.as_dict = as_dict


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
@mutant("budget-fetches-plus-one", "budgets", "max_fetches_per_run allows one fetch more")
def _():
    import collection.merge.planner as planner
    original = planner.Planner.__init__

    def __init__(self, ledger, *, max_fetches_per_run, **kw):
        original(self, ledger, max_fetches_per_run=max_fetches_per_run + 1, **kw)
    planner.Planner.__init__ = __init__


@mutant("budget-failures-use-fetches", "budgets", "failed fetches use up max_fetches_per_run (against D-15)")
def _():
    import collection.merge.planner as planner
    original = planner.Planner.report

    def report(self, result):
        original(self, result)
        if result.outcome != "fetched":
            self.fetched += 1
    planner.Planner.report = report


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
    import collection.merge.engine as M
    listed: set[str] = set()
    original_prepare, original_iter = M.prepare, M.iter_pages

    def prepare(ledger, discovery, *a, **kw):
        listed.clear()
        listed.update(p.page_id for p in discovery.pages)
        return original_prepare(ledger, discovery, *a, **kw)

    def iter_pages(stream, cols, **kw):
        for page_id, rows in original_iter(stream, cols, **kw):
            if page_id in listed or not listed:
                yield page_id, rows
    _replace_everywhere(original_prepare, prepare)
    _replace_everywhere(original_iter, iter_pages)


@mutant("failure-drops-rows", "failures", "a failed page loses its previous rows")
def _():
    import collection.merge.engine as M
    failed: set[str] = set()
    original_merge, original_iter = M.merge, M.iter_pages

    def merge(prepared, results, *a, **kw):
        results = list(results)
        failed.clear()
        failed.update(r.page_id for r in results if r.outcome == "failed")
        return original_merge(prepared, results, *a, **kw)

    def iter_pages(stream, cols, **kw):
        for page_id, rows in original_iter(stream, cols, **kw):
            if page_id not in failed:
                yield page_id, rows
    _replace_everywhere(original_merge, merge)
    _replace_everywhere(original_iter, iter_pages)


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


@mutant("robots-ignored", "failures", "robots.txt is never consulted")
def _():
    import collection.fetch.fetcher as F
    original = F.Fetcher.__init__

    def __init__(self, *a, **kw):
        original(self, *a, **{**kw, "robots": False})
    F.Fetcher.__init__ = __init__


# --- canonicalisation and origins ---------------------------------------------------------
def _canonical(transform):
    def make(original):
        @functools.wraps(original)
        def canonicalise(link, base=None):
            return transform(original(link, base), link)
        return canonicalise
    _wrap("collection.urls", "canonicalise", make)


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


def apply(mid: str) -> None:
    if mid not in _APPLY:
        raise SystemExit(f"unknown mutant {mid!r}")
    _APPLY[mid]()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("-j", type=int, default=os.cpu_count() or 4)
    parser.add_argument("--only")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from conformance.runner import ERRORED, FAIL, run_suite

    harness = f"{sys.executable} -m conformance.harnesses.collection_harness"
    baseline = run_suite(harness, jobs=args.j)
    base_failing = {v.case for v in baseline.verdicts if v.status in (FAIL, ERRORED)}
    print(f"baseline: {len(baseline.verdicts)} cases, {len(base_failing)} failing {sorted(base_failing)} "
          f"in {baseline.seconds:.1f} s")
    ids = args.only.split(",") if args.only else list(MUTANTS)
    killed, survivors = [], []
    began = time.monotonic()
    for mid in ids:
        outcome = run_suite(harness, jobs=args.j, env={"COLLECTION_MUTANT": mid})
        newly = sorted(v.case for v in outcome.verdicts if v.status in (FAIL, ERRORED) and v.case not in base_failing)
        (killed if newly else survivors).append(mid)
        print(f"{'killed  ' if newly else 'SURVIVED'} {mid:<34} {MUTANTS[mid][1]}"
              + (f"  ← {len(newly)} cases, e.g. {newly[0]}" if newly else ""))
    total = len(ids)
    print(f"\nmutation score: {len(killed)}/{total} = {100 * len(killed) / total:.0f}% killed "
          f"in {time.monotonic() - began:.0f} s")
    if survivors:
        print("survivors: " + ", ".join(survivors))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
