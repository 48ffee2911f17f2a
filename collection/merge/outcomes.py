"""The values that cross from discovery and fetching into the merge (pure).

Discovery produces a DiscoveryOutcome; the fetcher plus the pinned Reader produce one
PageResult per page fetched. The merge engine takes both with the predecessor's ledger
and relation; the run loop only carries them across.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from itertools import repeat

FETCHED = "fetched"
FAILED = "failed"
SKIPPED_ORIGIN = "skipped_origin"


@dataclass(frozen=True, slots=True)
class ListedPage:
    """One page as this run's discovery listed it, after duplicates collapsed on page_id.

    Slotted: an index may list a million of these, and a per-instance dict would cost
    more than the page's own address (bench/discovery.py, the HTML index row). Its discovery
    ordinal is its position in DiscoveryOutcome.pages (1-based): stored, it would be one more
    integer object per page of a million-link index for a number the order already says."""

    page_id: str
    url: str                      # canonical (URL-02 to URL-08)
    revision_hint: str | None     # json_api revision.pointer, sitemap lastmod; else None
    unreachable: str | None = None  # why it may not be fetched (skipped_origin), else None


class TupleLike(Sequence):
    """A sequence held some compact way that equals, hashes and prints as the tuple of its
    items, so a column can stand wherever a tuple stood (tests and callers compare them)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)!r})"


class ListedPages(TupleLike):
    """Discovery's pages, in order, held as columns; each reads back as a ListedPage.

    A million-link index lists a million pages: as ListedPage objects (64 bytes each, plus
    a list and a tuple of pointers to them) they cost as much again as the canonical
    addresses themselves (bench/discovery.py, the HTML index row; D-80). Columns cost a
    pointer per page for the address and nothing more in the common case: an id column
    only once some id is not its address (json_api identity, explicit), a hint column only
    once some page has a hint, and the few unreachable pages by position. Compares equal
    to any sequence of the same ListedPage values."""

    __slots__ = ("_urls", "_ids", "_hints", "_unreachable")

    def __init__(self, urls: Sequence[str] = (), ids: Sequence[str] | None = None,
                 hints: Sequence[str | None] | None = None, unreachable: dict[int, str] | None = None) -> None:
        self._urls = urls
        self._ids = ids                      # None: every page id is its address
        self._hints = hints                  # None: no page has a revision hint
        self._unreachable = unreachable or {}

    def __len__(self) -> int:
        return len(self._urls)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self._urls))))
        url = self._urls[index]              # raises IndexError as a tuple would
        if index < 0:
            index += len(self._urls)
        return ListedPage(url if self._ids is None else self._ids[index], url,
                          None if self._hints is None else self._hints[index], self._unreachable.get(index))

    def __iter__(self) -> Iterator[ListedPage]:
        ids = self._urls if self._ids is None else self._ids
        hints = self._hints if self._hints is not None else repeat(None, len(self._urls))
        unreachable = self._unreachable.get
        for index, (page_id, url, hint) in enumerate(zip(ids, self._urls, hints)):
            yield ListedPage(page_id, url, hint, unreachable(index))


class PageColumns:
    """Builds ListedPages a page at a time (discovery's admission loop). `done` hands its
    lists over to the ListedPages it returns: nothing is appended after it."""

    __slots__ = ("urls", "ids", "hints", "unreachable")

    def __init__(self, start: ListedPages | None = None) -> None:
        # A copy of the columns, not a view: a discovery state never changes once made.
        self.urls: list[str] = list(start._urls) if start is not None else []
        self.ids: list[str] | None = list(start._ids) if start is not None and start._ids is not None else None
        self.hints: list[str | None] | None = (list(start._hints) if start is not None and start._hints is not None
                                               else None)
        self.unreachable: dict[int, str] = dict(start._unreachable) if start is not None else {}

    def __len__(self) -> int:
        return len(self.urls)

    def append(self, page_id: str, url: str, hint: str | None, unreachable: str | None) -> None:
        if self.ids is not None:
            self.ids.append(page_id)
        elif page_id != url:
            self.ids = self.urls.copy()      # every page so far was named by its address
            self.ids.append(page_id)
        if self.hints is not None:
            self.hints.append(hint)
        elif hint is not None:
            self.hints = [None] * len(self.urls)
            self.hints.append(hint)
        if unreachable is not None:
            self.unreachable[len(self.urls)] = unreachable
        self.urls.append(url)

    def done(self) -> ListedPages:
        return ListedPages(self.urls, self.ids, self.hints, self.unreachable)


@dataclass(frozen=True)
class DiscoveryOutcome:
    pages: Sequence[ListedPage]   # in discovery order: the n-th page has ordinal n (ListedPages from discovery)
    requests: int                 # listing HTTP requests made, hops and retries included (D-04, D-05)
    complete: bool                # natural stop without refusal (COV-06, D-22)
    failure: str | None           # the first listing request that could not be read (COV-07)
    stop_reason: str              # a value of discovery's stop-reason table
    duplicates_dropped: int = 0
    dropped_records: int = 0      # records with no usable link (D-27), counted nowhere else
    diagnostics: tuple[str, ...] = ()  # why records, children or links were passed over
    children: tuple[str, ...] = ()     # a sitemapindex's child sitemaps queued, in index order


@dataclass(frozen=True)
class PageResult:
    """What became of one chosen page this run."""

    page_id: str
    outcome: str                  # FETCHED, FAILED or SKIPPED_ORIGIN
    at: str                       # RFC 3339 UTC time of the fetch (D-02)
    content_sha256: str | None = None            # FETCHED: lowercase hex of the body (D-30)
    rows: tuple[tuple[str, ...], ...] | None = None  # FETCHED: the Reader's rows, pin's columns
    failure_code: str | None = None              # FAILED: a code of collection.codes
    landed_url: str | None = None                # SKIPPED_ORIGIN: where the redirect landed


def rfc3339(epoch_seconds: float) -> str:
    """Timestamp text of the relation and ledger (D-02): RFC 3339, UTC, `Z`, whole seconds."""
    return datetime.fromtimestamp(int(epoch_seconds), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
