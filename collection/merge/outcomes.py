"""The values that cross from discovery and fetching into the merge (pure).

Discovery produces a DiscoveryOutcome; the fetcher plus the pinned Reader produce one
PageResult per page fetched. The merge engine takes both with the predecessor's ledger
and relation; the run loop only carries them across.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

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


@dataclass(frozen=True)
class DiscoveryOutcome:
    pages: tuple[ListedPage, ...]     # in discovery order: the n-th page has ordinal n
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
