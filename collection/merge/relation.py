"""The relation: Reader columns + seven provenance columns, sorted, as CSV streams (pure).

The relation is sorted by page_id (bytewise UTF-8, which is Python's code-point order
for valid strings) and then page_ordinal (numeric), so its bytes never depend on the
order the run fetched pages in (PROV-14, PROV-15, D-29). Reading groups rows by page so
that the merge can join the predecessor, already sorted, with this run's pages while
holding one page's rows at a time.

Callers open files with `newline=""` and `encoding="utf-8"`; this module never opens one.
"""

from __future__ import annotations

from itertools import groupby
from typing import Iterable, Iterator, Sequence

from collection.merge.ledger import MergeInvalid
from collection.merge import csvio
from collection.merge.csvio import CsvWriter

PROVENANCE_COLUMNS = (
    "page_id",
    "page_url",
    "page_fetched_at",
    "page_content_sha256",
    "page_revision",
    "page_discovered_at",
    "page_ordinal",
)

__all__ = [
    "PROVENANCE_COLUMNS", "CsvWriter", "relation_columns", "check_relation_header",
    "iter_pages", "scan_relation", "provenance_row",
]


def relation_columns(reader_columns: Sequence[str]) -> tuple[str, ...]:
    """The relation header: the pin's columns, then the provenance columns (PROV-02, PROV-03)."""
    return tuple(reader_columns) + PROVENANCE_COLUMNS


def _invalid(message: str, rule: str, line: int | None) -> MergeInvalid:
    return MergeInvalid(message, pointer="relation.csv", rule=rule, line=line)


def check_relation_header(stream: Iterable[str], reader_columns: Sequence[str]) -> MergeInvalid | None:
    """Whether the predecessor relation has the columns this run decodes (REF-05, D-12).

    Reads the header row only. An empty stream is the empty relation of a full run.
    """
    header = next(csvio.reader(stream), None)
    if header is None or tuple(header) == relation_columns(reader_columns):
        return None
    return _invalid("the predecessor relation's columns are not the pin's columns followed by the "
                    "seven provenance columns", "REF-05", 1)


def provenance_row(reader_row: Sequence[str], page_id: str, page_url: str, fetched_at: str,
                   sha256: str, revision: int, discovered_at: str, ordinal: int) -> list[str]:
    return [*reader_row, page_id, page_url, fetched_at, sha256, str(revision), discovered_at, str(ordinal)]


def iter_pages(stream: Iterable[str], reader_columns: Sequence[str], *,
               check_rows: bool = False) -> Iterator[tuple[str, list[list[str]]]]:
    """(page_id, rows) for each page of a relation, in file order.

    Raises MergeInvalid on a wrong header or a page_id out of order; with `check_rows`,
    also on a row of the wrong width or ordinals that are not 1, 2, 3 … in order.
    """
    reader = csvio.reader(stream)
    header = next(reader, None)
    if header is None:
        return
    columns = relation_columns(reader_columns)
    if tuple(header) != columns:
        raise _invalid("the predecessor relation's columns are not this run's", "REF-05", 1)
    pid = len(reader_columns)
    ordinal_at = pid + 6
    width = len(columns)
    previous: str | None = None
    for page_id, group in groupby(reader, key=lambda r: r[pid] if len(r) > pid else ""):
        rows = list(group)
        if previous is not None and not previous < page_id:
            raise _invalid(f"page_id {page_id!r} is out of order or split", "PROV-14", reader.line_num)
        previous = page_id
        if check_rows:
            for i, row in enumerate(rows, 1):
                if len(row) != width:
                    raise _invalid(f"a row of page {page_id!r} has {len(row)} fields, the header {width}",
                                   "PROV-02", reader.line_num)
                if row[ordinal_at] != str(i):
                    raise _invalid(f"page {page_id!r}: page_ordinal {row[ordinal_at]!r} where {i} belongs",
                                   "PROV-12", reader.line_num)
        yield page_id, rows


def scan_relation(stream: Iterable[str], reader_columns: Sequence[str]) -> dict[str, int]:
    """Rows present per page in the predecessor relation, after checking it whole.

    Run before any request: it is how a refresh detects rows missing from a page the
    ledger calls fetched (D-55), and it finds a corrupt relation while refusing is cheap.
    Memory grows with pages, not rows.
    """
    return {page_id: len(rows) for page_id, rows in iter_pages(stream, reader_columns, check_rows=True)}
