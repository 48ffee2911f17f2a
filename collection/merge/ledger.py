"""The ledger: one row per page the collection knows, as CSV over text streams (pure).

Format (D-01 plus what the merge needs; docs/state-formats.md): RFC 4180, UTF-8, LF, a
header row, quoting only where needed, rows sorted by page_id (bytewise UTF-8) so that
the bytes never depend on fetch order. The version is a first column, `ledger_version`,
whose value is LEDGER_VERSION on every row: a CSV file has no place for a comment, and
a column keeps the file readable by any CSV tool while letting a reader refuse a
ledger written under another format before any request.

Callers open files with `newline=""` and `encoding="utf-8"`; this module never opens one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping, TextIO

from collection.merge import csvio
from collection.merge.csvio import CsvWriter
from collection.merge.states import PAGE_STATES

MERGE_INVALID = "COLLECTION_MERGE_INVALID"
LEDGER_VERSION = "1"

LEDGER_COLUMNS = (
    "ledger_version",
    "page_id",
    "url",
    "state",
    "discovered_at",
    "last_seen_at",
    "last_fetched_at",
    "content_sha256",
    "previous_content_sha256",
    "revision",
    "revision_hint",
    "revision_hint_at_fetch",
    "failure_code",
    "failure_class",
    "failed_at",
    "landed_url",
    "discovery_ordinal",
    "row_count",
)


class MergeInvalid(Exception):
    """COLLECTION_MERGE_INVALID: the run and its predecessor contradict each other.

    `pointer` names the state file (`ledger.csv`, `relation.csv`) and `line` its physical
    line; `to_refusal()` gives the project's Refusal value, whose pointer is a JSON
    pointer into a document, so there the file moves into the message.
    """

    def __init__(self, message: str, *, pointer: str, rule: str, line: int | None = None):
        super().__init__(message)
        self.code = MERGE_INVALID
        self.message = message
        self.pointer = pointer
        self.rule = rule
        self.line = line

    def to_refusal(self):
        from collection.recipe.refusal import Refusal

        return Refusal(code=self.code, pointer="", message=f"{self.pointer}: {self.message}",
                       rule=self.rule, line=self.line)

    def __repr__(self) -> str:
        return f"MergeInvalid({self.pointer}:{self.line}: {self.message} [{self.rule}])"


@dataclass(frozen=True, slots=True)
class LedgerRow:
    page_id: str
    url: str
    state: str
    discovered_at: str
    last_seen_at: str
    discovery_ordinal: int
    last_fetched_at: str | None = None
    content_sha256: str | None = None
    previous_content_sha256: str | None = None
    revision: int = 0                       # 0 until a first successful fetch (PROV-10)
    revision_hint: str | None = None        # the hint discovery last listed (MERGE-06)
    revision_hint_at_fetch: str | None = None  # the hint when the rows were last confirmed (D-33)
    failure_code: str | None = None
    failure_class: str | None = None        # liveness class of failure_code (D-62)
    failed_at: str | None = None            # the latest failure; step 2 takes the oldest first
    landed_url: str | None = None           # where a redirect left the allowlist (D-26)
    row_count: int | None = None            # rows the last successful fetch decoded (D-55)


def _opt(text: str) -> str | None:
    return text if text else None


def _txt(value: object) -> str:
    return "" if value is None else str(value)


def _row_to_fields(r: LedgerRow) -> list[str]:
    return [
        LEDGER_VERSION, r.page_id, r.url, r.state, r.discovered_at, r.last_seen_at,
        _txt(r.last_fetched_at), _txt(r.content_sha256), _txt(r.previous_content_sha256),
        str(r.revision), _txt(r.revision_hint), _txt(r.revision_hint_at_fetch),
        _txt(r.failure_code), _txt(r.failure_class), _txt(r.failed_at), _txt(r.landed_url),
        str(r.discovery_ordinal), _txt(r.row_count),
    ]


_MAX_DIGITS = 18      # below 2**63: what any counter, revision or ordinal can reach


def _int(text: str, name: str, line: int, *, optional: bool = False) -> int | None:
    if optional and text == "":
        return None
    if not text.isascii() or not text.isdigit():
        raise MergeInvalid(f"ledger column {name} holds {text[:40]!r}, not a whole number",
                           pointer="ledger.csv", rule="D-01", line=line)
    if len(text) > _MAX_DIGITS:
        # int() would refuse (or crawl through) thousands of digits; no count gets near this
        raise MergeInvalid(f"ledger column {name} holds a {len(text)}-digit number, more than any count",
                           pointer="ledger.csv", rule="D-01", line=line)
    return int(text)


def check_ledger_header(stream: Iterable[str]) -> MergeInvalid | None:
    """Whether a predecessor ledger is in this run's format, reading only its head (REF-06).

    Reads the header row and the first data row (for the version value); an empty
    stream is an empty ledger, which every run accepts (MERGE-02).
    """
    reader = csvio.reader(stream)
    header = next(reader, None)
    if header is None:
        return None
    if tuple(header) != LEDGER_COLUMNS:
        return MergeInvalid("the predecessor ledger's header is not this run's ledger header",
                            pointer="ledger.csv", rule="REF-06", line=1)
    first = next(reader, None)
    if first is not None and (not first or first[0] != LEDGER_VERSION):
        return MergeInvalid("the predecessor ledger was written under another ledger_version",
                            pointer="ledger.csv", rule="REF-06", line=reader.line_num)
    return None


def iter_ledger(stream: Iterable[str]) -> Iterator[LedgerRow]:
    """The rows of a ledger, checked; raises MergeInvalid on any contradiction."""
    reader = csvio.reader(stream)
    header = next(reader, None)
    if header is None:
        return
    if tuple(header) != LEDGER_COLUMNS:
        raise MergeInvalid("the predecessor ledger's header is not this run's ledger header",
                           pointer="ledger.csv", rule="REF-06", line=1)
    width = len(LEDGER_COLUMNS)
    states = frozenset(PAGE_STATES)
    for f in reader:
        line = reader.line_num
        if len(f) != width:
            raise MergeInvalid(f"ledger row has {len(f)} fields, the header {width}",
                               pointer="ledger.csv", rule="D-01", line=line)
        if f[0] != LEDGER_VERSION:
            raise MergeInvalid("ledger row written under another ledger_version",
                               pointer="ledger.csv", rule="REF-06", line=line)
        if f[3] not in states:
            raise MergeInvalid(f"ledger state {f[3]!r} is not a page state",
                               pointer="ledger.csv", rule="D-01", line=line)
        if not f[1]:
            raise MergeInvalid("ledger row without page_id", pointer="ledger.csv", rule="D-01", line=line)
        yield LedgerRow(
            page_id=f[1], url=f[2], state=f[3], discovered_at=f[4], last_seen_at=f[5],
            last_fetched_at=_opt(f[6]), content_sha256=_opt(f[7]), previous_content_sha256=_opt(f[8]),
            revision=_int(f[9], "revision", line), revision_hint=_opt(f[10]),
            revision_hint_at_fetch=_opt(f[11]), failure_code=_opt(f[12]), failure_class=_opt(f[13]),
            failed_at=_opt(f[14]), landed_url=_opt(f[15]),
            discovery_ordinal=_int(f[16], "discovery_ordinal", line),
            row_count=_int(f[17], "row_count", line, optional=True),
        )


def read_ledger(stream: Iterable[str]) -> dict[str, LedgerRow]:
    """The predecessor ledger keyed by page_id; an empty stream is the empty ledger."""
    ledger: dict[str, LedgerRow] = {}
    for row in iter_ledger(stream):
        if row.page_id in ledger:
            raise MergeInvalid(f"page_id {row.page_id!r} appears twice in the ledger",
                               pointer="ledger.csv", rule="D-01")
        ledger[row.page_id] = row
    return ledger


def write_ledger(ledger: Mapping[str, LedgerRow] | Iterable[LedgerRow], out: TextIO) -> None:
    """Write the ledger sorted by page_id; the header is written even for no pages."""
    rows = ledger.values() if isinstance(ledger, Mapping) else ledger
    w = CsvWriter(out)
    w.writerow(LEDGER_COLUMNS)
    w.writerows(_row_to_fields(r) for r in sorted(rows, key=lambda r: r.page_id))
