"""A tiny run loop over the pure merge core, for the merge tests (no tests of its own).

`Publisher` says what each page answers this run; `run()` does what the shell's run
loop does with files, but over strings: check headers, read the ledger, scan the
relation, prepare, plan, "fetch", merge, write.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field

from collection.merge.ledger import check_ledger_header, read_ledger, write_ledger
from collection.merge.engine import MergeResult, merge, prepare
from collection.merge.outcomes import FAILED, FETCHED, SKIPPED_ORIGIN, DiscoveryOutcome, ListedPage, PageResult, rfc3339
from collection.merge.planner import Choice, Planner, Revisit, Stop
from collection.merge.relation import check_relation_header, scan_relation

COLS = ("title", "body")
BASE = 1_700_000_000


def t(hours: float) -> str:
    return rfc3339(BASE + hours * 3600)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def body(content: str, n: int = 2) -> str:
    return f"{content}/{n}"


def url(pid: str) -> str:
    return f"https://www.example.com/p/{pid}"


def listing(*ids: str, hints: dict | None = None, unreachable: dict | None = None, complete: bool = True,
            failure: str | None = None, requests: int = 1, duplicates: int = 0,
            urls: dict | None = None) -> DiscoveryOutcome:
    hints = hints or {}
    unreachable = unreachable or {}
    urls = urls or {}
    pages = tuple(ListedPage(pid, urls.get(pid, url(pid)), hints.get(pid), unreachable.get(pid)) for pid in ids)
    return DiscoveryOutcome(pages, requests, complete, failure, "empty_page" if complete else "refused",
                            duplicates)


def rows_of(content: str, n: int) -> tuple[tuple[str, ...], ...]:
    return tuple((f"{content} #{i}", f"body of {content}, row {i}") for i in range(1, n + 1))


@dataclass
class Publisher:
    """page_id → ("ok", content, nrows) | ("fail", code) | ("skip", landed_url) | ("bad", nrows)."""

    pages: dict = field(default_factory=dict)

    def ok(self, pid: str, content: str, n: int = 2) -> "Publisher":
        self.pages[pid] = ("ok", content, n)
        return self

    def answer(self, choice: Choice, at: str) -> PageResult:
        kind, *args = self.pages.get(choice.page_id, ("fail", "http_status_404"))
        if kind == "ok":
            content, n = args
            # the digest covers the body, and the body decides the rows: same digest, same rows
            return PageResult(choice.page_id, FETCHED, at, sha(body(content, n)), rows_of(content, n))
        if kind == "fail":
            return PageResult(choice.page_id, FAILED, at, failure_code=args[0])
        if kind == "skip":
            return PageResult(choice.page_id, SKIPPED_ORIGIN, at, landed_url=args[0])
        if kind == "bad":   # decoded to the wrong columns
            return PageResult(choice.page_id, FETCHED, at, sha("bad"), (("only-one-column",),) * args[0])
        raise AssertionError(kind)


@dataclass(frozen=True)
class State:
    ledger: str = ""
    relation: str = ""

    def ledger_rows(self):
        return read_ledger(io.StringIO(self.ledger))

    def relation_counts(self):
        return scan_relation(io.StringIO(self.relation), COLS)


@dataclass
class Run:
    state: State
    result: MergeResult
    chosen: list
    results: list
    stop: Stop

    @property
    def cov(self):
        return self.result.coverage

    def row(self, pid):
        return self.result.ledger[pid]


def run(state: State, discovery: DiscoveryOutcome, publisher: Publisher, *, now: str, max_pages: int = 1000,
        max_rows: int | None = None, max_fetches: int = 1000, revisit: Revisit = Revisit(),
        exhausted_after: int | None = None, exhausted: str = "max_requests", allowed_origins=None,
        order=None) -> Run:
    assert check_ledger_header(io.StringIO(state.ledger)) is None
    assert check_relation_header(io.StringIO(state.relation), COLS) is None
    ledger = read_ledger(io.StringIO(state.ledger))
    counts = scan_relation(io.StringIO(state.relation), COLS)
    prepared = prepare(ledger, discovery, counts, now=now, max_pages=max_pages, allowed_origins=allowed_origins)
    planner = Planner(prepared.ledger, revisit=revisit, max_fetches_per_run=max_fetches, now=now)
    chosen, results = [], []
    while True:
        spent = exhausted if exhausted_after is not None and len(results) >= exhausted_after else None
        choice = planner.next(spent)
        if isinstance(choice, Stop):
            break
        chosen.append(choice)
        result = publisher.answer(choice, now)
        planner.report(result)
        results.append(result)
    if order is not None:
        results = order(results)
    out = io.StringIO()
    result = merge(prepared, results, io.StringIO(state.relation), out, reader_columns=COLS, max_rows=max_rows,
                   budget_exhausted=planner.stop_reason)
    ledger_out = io.StringIO()
    write_ledger(result.ledger, ledger_out)
    return Run(State(ledger_out.getvalue(), out.getvalue()), result, chosen, results, choice)


def relation_rows(state: State) -> list[list[str]]:
    import csv

    return list(csv.reader(io.StringIO(state.relation)))[1:]


def rows_by_page(state: State) -> dict[str, list[list[str]]]:
    pages: dict[str, list[list[str]]] = {}
    for r in relation_rows(state):
        pages.setdefault(r[2], []).append(r)
    return pages
