"""The merge engine: predecessor ledger + relation + this run's outcomes → new state (pure).

Two calls bracket the fetching:

    prepared = prepare(ledger, discovery, relation_rows, now=..., max_pages=...)   # step 1
    planner  = Planner(prepared.ledger, ...)                                       # step 2
    ... the run loop fetches and reports PageResults ...                           # step 3
    result   = merge(prepared, results, predecessor_relation, out, ...)            # step 4
    write_ledger(result.ledger, ledger_out)

`relation_rows` comes from relation.scan_relation over the predecessor relation; `merge`
reads that relation a second time, as a stream, and writes the new one to `out` while
holding only this run's fresh rows and one predecessor page at a time. Nothing here
opens a file or reads a clock: every time is an RFC 3339 string passed in. Results may
arrive in any order; the output depends only on their set.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, replace
from typing import Iterable, Iterator, Mapping, Sequence, TextIO

from collection import codes
from collection.merge.coverage import Coverage, is_complete
from collection.merge.ledger import LedgerRow, MergeInvalid, check_ledger_header
from collection.merge.outcomes import FAILED, FETCHED, SKIPPED_ORIGIN, DiscoveryOutcome, PageResult
from collection.merge.relation import CsvWriter, check_relation_header, iter_pages, provenance_row, relation_columns
from collection.merge.states import BUDGETS, MAX_PAGES, PENDING
from collection.urls import unreachable_reason

COLUMN_MISMATCH = "column_mismatch"


@dataclass(frozen=True)
class Prepared:
    """The ledger after step 1 (discovery applied, missing rows sent back to pending)."""

    ledger: Mapping[str, LedgerRow]
    discovery: DiscoveryOutcome
    relation_rows: Mapping[str, int]      # rows present per page in the predecessor relation
    max_pages_reached: bool               # discovery listed new ids the ledger had no room for (D-18)
    repaired: tuple[str, ...] = ()        # fetched pages short of rows, now pending (D-55)
    reopened: tuple[str, ...] = ()        # skipped_origin pages allowed now, now pending (D-34)


@dataclass(frozen=True)
class Correction:
    """A page that answered with different content this run (MERGE-19)."""

    page_id: str
    previous_content_sha256: str
    content_sha256: str
    revision: int
    at: str


@dataclass(frozen=True)
class MergeResult:
    ledger: Mapping[str, LedgerRow]
    coverage: Coverage
    truncated: bool                       # the relation hit limits.max_rows (COV-20, D-17)
    corrections: tuple[Correction, ...]   # sorted by page_id
    clipped: tuple[str, ...]              # pages the clamp left pending (COV-23)
    rows_written: int
    failures_by_class: Mapping[str, int]  # failed_this_run by liveness class (D-62)


def check_predecessor(ledger_head: Iterable[str], relation_head: Iterable[str],
                      reader_columns: Sequence[str]) -> MergeInvalid | None:
    """Both header checks (REF-05, REF-06), reading only the heads of the two files.

    The cheap check a run makes before any request; `scan_relation` and `read_ledger`
    then check the bodies, still before any request.
    """
    return check_ledger_header(ledger_head) or check_relation_header(relation_head, reader_columns)


# --- step 1 -------------------------------------------------------------------------------

def prepare(ledger: Mapping[str, LedgerRow], discovery: DiscoveryOutcome,
            relation_rows: Mapping[str, int], *, now: str, max_pages: int,
            allowed_origins: Sequence[str] | None = None) -> Prepared:
    """Apply this run's discovery to the predecessor ledger and repair missing rows.

    New ids become pending (MERGE-04) while the ledger has room under max_pages (D-18);
    known ids get `last_seen_at` and their revision hint refreshed (MERGE-05, MERGE-06);
    ids discovery no longer lists keep their row untouched (MERGE-26). With
    `allowed_origins`, a page skipped because a redirect left the allowlist is re-checked
    against it (D-26, D-34); a listed page carries its own reachability.
    """
    for page_id, count in relation_rows.items():
        if count and page_id not in ledger:
            raise MergeInvalid(f"the predecessor relation holds rows of page {page_id!r}, "
                               "which its ledger does not know", pointer="relation.csv", rule="MERGE-01")
    new: dict[str, LedgerRow] = dict(ledger)
    next_ordinal = max((r.discovery_ordinal for r in ledger.values()), default=0) + 1
    # D-18: discovery itself stops admitting ids at max_pages; that stop limited the run too
    max_pages_reached = discovery.stop_reason == MAX_PAGES
    reopened: list[str] = []
    for listed in discovery.pages:
        row = new.get(listed.page_id)
        if row is None:
            if len(new) >= max_pages:
                max_pages_reached = True
                continue
            state = SKIPPED_ORIGIN if listed.unreachable else PENDING
            new[listed.page_id] = LedgerRow(
                page_id=listed.page_id, url=listed.url, state=state, discovered_at=now,
                last_seen_at=now, discovery_ordinal=next_ordinal, revision_hint=listed.revision_hint,
                failure_code=SKIPPED_ORIGIN if listed.unreachable else None,
                failure_class=codes.BLOCKED if listed.unreachable else None,
            )
            next_ordinal += 1
            continue
        state, landed, code, klass = row.state, row.landed_url, row.failure_code, row.failure_class
        if listed.unreachable:
            # the run may not fetch it now; its rows stay (absence of a fetch deletes nothing)
            if state != SKIPPED_ORIGIN:
                state, landed = SKIPPED_ORIGIN, None
                code, klass = SKIPPED_ORIGIN, codes.BLOCKED
        elif state == SKIPPED_ORIGIN:
            own_skip = row.landed_url is None
            moved = listed.url != row.url
            allowed_now = (allowed_origins is not None and row.landed_url is not None
                           and unreachable_reason(row.landed_url, tuple(allowed_origins)) is None)
            if own_skip or moved or allowed_now:
                state, landed, code, klass = PENDING, None, None, None
                reopened.append(row.page_id)
        new[listed.page_id] = replace(
            row, url=listed.url, last_seen_at=now, revision_hint=listed.revision_hint,
            state=state, landed_url=landed, failure_code=code, failure_class=klass,
        )
    repaired = []
    for page_id, row in new.items():
        if row.state != FETCHED:
            continue
        present = relation_rows.get(page_id, 0)
        short = present == 0 if row.row_count is None else present < row.row_count
        if short:
            new[page_id] = replace(row, state=PENDING)
            repaired.append(page_id)
    return Prepared(new, discovery, dict(relation_rows), max_pages_reached,
                    tuple(sorted(repaired)), tuple(sorted(reopened)))


# --- step 4 -------------------------------------------------------------------------------

def _liveness(code: str) -> str:
    try:
        return codes.liveness(code)
    except KeyError:
        return codes.ERROR


def _index_results(results: Iterable[PageResult], ledger: Mapping[str, LedgerRow]) -> dict[str, PageResult]:
    by_page: dict[str, PageResult] = {}
    for result in results:
        if result.page_id in by_page:
            raise ValueError(f"page {result.page_id!r} reported twice; a page is fetched once a run (D-47)")
        if result.page_id not in ledger:
            raise ValueError(f"page {result.page_id!r} is not in the ledger")
        if result.outcome not in (FETCHED, FAILED, SKIPPED_ORIGIN):
            raise ValueError(f"outcome {result.outcome!r}")
        by_page[result.page_id] = result
    return by_page


def _rows_complete(row: LedgerRow, present: int) -> bool:
    return present > 0 if row.row_count is None else present == row.row_count


def merge(prepared: Prepared, results: Iterable[PageResult], predecessor_relation: Iterable[str],
          out: TextIO, *, reader_columns: Sequence[str], max_rows: int | None = None,
          budget_exhausted: str | None = None) -> MergeResult:
    """Apply this run's outcomes and write the merged relation to `out` (MERGE-12..27).

    `predecessor_relation` is the predecessor relation's text (the stream scanned for
    `prepared.relation_rows`), `budget_exhausted` the planner's stop reason.
    """
    if budget_exhausted is not None and budget_exhausted not in BUDGETS:
        raise ValueError(f"{budget_exhausted!r} is not a budget")
    ledger = prepared.ledger
    width = len(reader_columns)
    by_page = _index_results(results, ledger)
    new: dict[str, LedgerRow] = dict(ledger)
    fresh: dict[str, list[list[str]]] = {}       # pages whose rows this run writes
    restored: set[str] = set()                   # unchanged pages whose missing rows come back
    corrections: list[Correction] = []
    fetched = unchanged = changed = failed_now = 0
    failures_by_class: dict[str, int] = {}

    for page_id in sorted(by_page):
        result = by_page[page_id]
        row = ledger[page_id]
        if result.outcome == FETCHED and any(len(r) != width for r in (result.rows or ())):
            # D-12: a page decoding to other columns than the pin's fails; the run goes on
            result = PageResult(page_id, FAILED, result.at, failure_code=COLUMN_MISMATCH)
        if result.outcome == FAILED:
            code = result.failure_code or "decode_error"
            klass = _liveness(code)
            new[page_id] = replace(row, state=FAILED, failure_code=code, failure_class=klass,
                                   failed_at=result.at)
            failed_now += 1
            failures_by_class[klass] = failures_by_class.get(klass, 0) + 1
            continue
        if result.outcome == SKIPPED_ORIGIN:
            new[page_id] = replace(row, state=SKIPPED_ORIGIN, landed_url=result.landed_url,
                                   failure_code=SKIPPED_ORIGIN, failure_class=codes.BLOCKED,
                                   failed_at=None)
            continue
        if not result.content_sha256:
            raise ValueError(f"fetched page {page_id!r} carries no content digest")
        rows = result.rows or ()
        fetched += 1
        revision, previous = row.revision, row.previous_content_sha256
        if row.content_sha256 is None:
            revision = 1                                  # PROV-10
            write = True
        elif row.content_sha256 == result.content_sha256:
            unchanged += 1                                # MERGE-13; rows stay verbatim (MERGE-14)
            # unless rows went missing (clamp, D-55): restore them, same revision (COV-26)
            write = row.state == PENDING or not _rows_complete(row, prepared.relation_rows.get(page_id, 0))
            if write:
                restored.add(page_id)
        else:
            changed += 1                                  # MERGE-16..19
            revision, previous = row.revision + 1, row.content_sha256
            corrections.append(Correction(page_id, row.content_sha256, result.content_sha256,
                                          revision, result.at))
            write = True
        if write:
            fresh[page_id] = [provenance_row(r, page_id, row.url, result.at, result.content_sha256,
                                             revision, row.discovered_at, i)
                              for i, r in enumerate(rows, 1)]
        new[page_id] = replace(
            row, state=FETCHED, last_fetched_at=result.at, content_sha256=result.content_sha256,
            previous_content_sha256=previous, revision=revision,
            revision_hint_at_fetch=row.revision_hint, failure_code=None, failure_class=None,
            failed_at=None, landed_url=None,
            # the count of the rows the relation holds: verbatim rows keep theirs (D-55)
            row_count=len(rows) if write else row.row_count,
        )

    writer = CsvWriter(out)
    writer.writerow(relation_columns(reader_columns))
    written, clipped = _write_clamped(writer, _joined(predecessor_relation, reader_columns, fresh, restored),
                                      max_rows)
    for page_id in clipped:
        if new[page_id].state == FETCHED:
            new[page_id] = replace(new[page_id], state=PENDING)   # COV-23
    truncated = bool(clipped)

    pending = failed = skipped = 0
    for r in new.values():
        if r.state == PENDING:
            pending += 1
        elif r.state == FAILED:
            failed += 1
        elif r.state == SKIPPED_ORIGIN:
            skipped += 1
    discovery = prepared.discovery
    budget = MAX_PAGES if prepared.max_pages_reached else budget_exhausted
    coverage = Coverage(
        discovered=len(discovery.pages), discovery_requests=discovery.requests,
        discovery_complete=discovery.complete, discovery_failure=discovery.failure,
        duplicates_dropped=discovery.duplicates_dropped, known=len(new),
        fetched_this_run=fetched, unchanged=unchanged, changed=changed, failed_this_run=failed_now,
        pending=pending, failed=failed, skipped=skipped, budget_exhausted=budget,
        complete=is_complete(discovery_complete=discovery.complete, pending=pending, failed=failed,
                             truncated=truncated, budget_exhausted=budget),
    )
    return MergeResult(new, coverage, truncated, tuple(corrections), tuple(clipped), written,
                       dict(sorted(failures_by_class.items())))


def _joined(predecessor: Iterable[str], reader_columns: Sequence[str],
            fresh: Mapping[str, list[list[str]]],
            restored: frozenset[str] | set[str] = frozenset()) -> Iterator[tuple[str, list[list[str]]]]:
    """Merge-join of the predecessor's pages with this run's fresh pages, by page_id.

    A page with fresh rows takes them and drops its predecessor rows; every other page
    keeps its predecessor rows as they were, so unchanged, failed, skipped and unlisted
    pages survive (MERGE-14, MERGE-24, MERGE-25). A `restored` page answered unchanged
    but had rows missing (a clamp, D-55): the rows it still has stay exactly as they were,
    provenance included (MERGE-14), and only the missing ones come from this fetch (COV-25).
    """
    fresh_pages = ((pid, 1, rows) for pid, rows in sorted(fresh.items()))
    old_pages = ((pid, 0, rows) for pid, rows in iter_pages(predecessor, reader_columns))
    pending_pid: str | None = None
    pending_rows: list[list[str]] | None = None
    for pid, is_fresh, rows in heapq.merge(old_pages, fresh_pages, key=lambda t: (t[0], t[1])):
        if pending_pid is not None and pid != pending_pid:
            yield pending_pid, pending_rows
        elif is_fresh and pid == pending_pid and pid in restored:
            rows = pending_rows + rows[len(pending_rows):]   # same digest: the old rows are its prefix
        pending_pid, pending_rows = pid, rows   # a fresh page sorts after its old self and wins
    if pending_pid is not None:
        yield pending_pid, pending_rows


def _write_clamped(writer: CsvWriter, pages: Iterator[tuple[str, list[list[str]]]],
                   max_rows: int | None) -> tuple[int, list[str]]:
    """Write pages in order under the clamp; return rows written and pages clipped.

    The clamp falls between pages (COV-21): the first page that does not fit and every
    page after it are clipped. Only when that page is the first with rows does the
    clamp cut through it, writing its first max_rows rows (COV-22, D-52).
    """
    written = 0
    clipped: list[str] = []
    for page_id, rows in pages:
        if not rows:
            continue
        if clipped or (max_rows is not None and written + len(rows) > max_rows):
            if written == 0 and not clipped:
                writer.writerows(rows[:max_rows])
                written = max_rows
            clipped.append(page_id)
            continue
        writer.writerows(rows)
        written += len(rows)
    return written, clipped
