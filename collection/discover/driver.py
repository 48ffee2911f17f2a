"""Discovery: the publisher's index in, the ordered pages a run may fetch out (pure, sans-I/O).

The run loop drives it and does all the I/O:

    state = start(config, allowed_origins)
    while (request := state.next_request()) is not None:
        ...fetch request.url, accepting request.accept...
        if (refusal := state.refusal(status, headers)) is not None:   # before reading the body
            state = state.feed(ListingFailure(request.url, refusal, requests=cost))
        else:
            state = state.feed(ListingResponse(request.url, status, headers, body, cost, final_url))
    outcome = state.outcome()

`feed` raises DiscoveryShapeError (code COLLECTION_MERGE_INVALID, D-13) for a body that is
not the declared shape; every other problem with a listing is a discovery failure and ends
up in `outcome.failure`. Every stop reason, and whether it leaves discovery complete, is in
STOP_REASONS below and nowhere else.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import AbstractSet, Any, Mapping

from collection.discover import pagination as pg
from collection.canonical import valid_text
from collection.discover.common import (
    DiscoveryShapeError,
    ListingFailure,
    ListingResponse,
    ListingUnreadable,
    ParsedListing,
    charset,
    media_type,
)
from collection.discover.html_index import HtmlListingSpec, parse_html_listing
from collection.discover.json_index import JsonListingSpec, read_json_document, load_json
from collection.discover.sitemap import parse_sitemap
from collection.merge.outcomes import DiscoveryOutcome, ListedPages, PageColumns
from collection.discover.pagination import PaginationConfig
from collection.recipe.pointer import parse_pointer
from collection.urls import UrlError, canonicalise, unreachable_reason

__all__ = [
    "JSON_API", "HTML_INDEX", "SITEMAP", "EXPLICIT", "KINDS", "ACCEPTED_MEDIA_TYPES", "ALLOWED_PAGINATION",
    "StopReason", "STOP_REASONS", "DiscoveryConfig", "DiscoveryConfigError", "ExplicitMember",
    "ListingRequest", "ListingResponse", "ListingFailure", "DiscoveryShapeError", "DiscoveryState",
    "start", "run_offline",
]

JSON_API = "json_api"
HTML_INDEX = "html_index"
SITEMAP = "sitemap"
EXPLICIT = "explicit"
KINDS = (JSON_API, HTML_INDEX, SITEMAP, EXPLICIT)

# DISC-28 to DISC-30; explicit makes no request (DISC-26).
ACCEPTED_MEDIA_TYPES: dict[str, tuple[str, ...]] = {
    JSON_API: ("application/json", "application/ld+json", "application/vnd.api+json", "text/json"),
    SITEMAP: ("application/xml", "text/xml", "application/rss+xml"),
    HTML_INDEX: ("text/html", "application/xhtml+xml"),
    EXPLICIT: (),
}

# DISC-12, DISC-17, DISC-21, DISC-25 (registration refuses other pairs, REG-38).
ALLOWED_PAGINATION: dict[str, tuple[str, ...]] = {
    JSON_API: (pg.NONE, pg.PAGE_PARAMETER, pg.OFFSET_PARAMETER, pg.LINK_HEADER, pg.CURSOR),
    HTML_INDEX: (pg.NONE, pg.PAGE_PARAMETER, pg.NEXT_SELECTOR),
    SITEMAP: (pg.NONE,),
    EXPLICIT: (pg.NONE,),
}

DEFAULT_MAX_REQUESTS = 64
MAX_DIAGNOSTICS = 100

# WordPress answers 400 with this code for a page number past the last page instead of an
# empty array (WP_REST_Posts_Controller and its siblings use rest_<type>_invalid_page_number).
_PAST_LAST_PAGE = re.compile(r"rest_[a-z_]*invalid_page_number\Z")


# --- the table of stop reasons ----------------------------------------------------------

@dataclass(frozen=True)
class StopReason:
    name: str
    complete: bool     # does this stop leave discovery complete (COV-06, D-22)?
    meaning: str
    clauses: tuple[str, ...]


STOP_REASONS: dict[str, StopReason] = {r.name: r for r in (
    StopReason("explicit", True, "explicit members were listed; no request is made", ("DISC-24", "DISC-26")),
    StopReason("single_request", True, "pagination none: the one listing was read", ("PAG-02",)),
    StopReason("sitemap_index_read", True, "a sitemapindex and every child it names (one level) were read",
               ("DISC-22", "DISC-23")),
    StopReason("empty_page", True, "a listing yielded zero records", ("PAG-05", "PAG-08", "PAG-10", "PAG-12",
                                                                      "PAG-14", "D-03")),
    StopReason("past_last_page", True, "WordPress answered 400 rest_*_invalid_page_number after the first page: "
               "there is no such page, which is the empty page of that API", ("PAG-05", "D-03")),
    StopReason("no_next", True, "no rel=next link, no next_selector match, or an absent cursor token",
               ("PAG-10", "PAG-12", "PAG-14", "D-23")),
    StopReason("repeated_address", True, "the next address was already requested in this pass",
               ("PAG-05", "PAG-08", "PAG-10", "PAG-14", "D-22")),
    StopReason("repeated_token", True, "the cursor token was already used in this pass", ("PAG-12", "D-22")),
    StopReason("max_requests", False, "discovery.max_requests listing requests were spent with more to list",
               ("PAG-17", "D-21", "D-22")),
    StopReason("max_pages", False, "pages.max_pages distinct pages were listed with more to list", ("D-18",)),
    StopReason("listing_failed", False, "a listing could not be read: HTTP error, timeout, robots disallow, "
               "refused media type, unreadable body", ("DISC-31", "DISC-32", "COV-07", "D-13", "D-48")),
    StopReason("next_unreachable", False, "the next address is not one this source may fetch", ("D-24",)),
)}


# --- the configuration -------------------------------------------------------------------

class DiscoveryConfigError(ValueError):
    """The discovery block cannot be read at all (registration refuses it long before)."""


@dataclass(frozen=True)
class ExplicitMember:
    page_id: str
    url: str


@dataclass(frozen=True)
class DiscoveryConfig:
    kind: str
    url: str | None = None
    pagination: PaginationConfig = PaginationConfig()
    records_pointer: str | None = None      # json_api
    records_selector: str | None = None     # html_index
    link_pointer: str | None = None         # json_api
    link_attribute: str | None = None       # html_index; None means href
    identity_pointer: str | None = None     # json_api
    revision_pointer: str | None = None     # json_api
    members: tuple[ExplicitMember, ...] = ()
    max_requests: int = DEFAULT_MAX_REQUESTS

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, Any]) -> "DiscoveryConfig":
        """The JSON of `collection.discovery`, with the document's defaults filled in."""
        if not isinstance(mapping, Mapping):
            raise DiscoveryConfigError("collection.discovery is not an object")
        kind = mapping.get("kind")
        if kind not in KINDS:
            raise DiscoveryConfigError(f"discovery.kind {kind!r} is not one of {KINDS}")

        def member(name: str, key: str) -> Any:
            value = mapping.get(name)
            return value.get(key) if isinstance(value, Mapping) else None

        raw_pagination = mapping.get("pagination") or {"kind": pg.NONE}
        if not isinstance(raw_pagination, Mapping) or raw_pagination.get("kind", pg.NONE) not in pg.KINDS:
            raise DiscoveryConfigError("discovery.pagination.kind is not a pagination kind")
        pagination = PaginationConfig(
            kind=raw_pagination.get("kind", pg.NONE),
            parameter=raw_pagination.get("parameter"),
            first=raw_pagination.get("first", pg.PaginationConfig(raw_pagination.get("kind", pg.NONE)).start
                                      if raw_pagination.get("kind") in (pg.PAGE_PARAMETER, pg.OFFSET_PARAMETER) else None),
            step=raw_pagination.get("step", 1),
            pointer=raw_pagination.get("pointer"),
            selector=raw_pagination.get("selector"),
        )
        if pagination.kind not in ALLOWED_PAGINATION[kind]:
            raise DiscoveryConfigError(f"pagination {pagination.kind} is not allowed for {kind}")
        if pagination.kind in pg.PARAMETER_KINDS and not pagination.parameter:
            raise DiscoveryConfigError(f"pagination {pagination.kind} needs a parameter")
        if pagination.kind == pg.CURSOR and pagination.pointer is None:
            raise DiscoveryConfigError("pagination cursor needs a pointer")
        if pagination.kind == pg.NEXT_SELECTOR and not pagination.selector:
            raise DiscoveryConfigError("pagination next_selector needs a selector")
        members = []
        for index, raw in enumerate(mapping.get("members") or ()):
            if not isinstance(raw, Mapping) or not isinstance(raw.get("page_id"), str) \
                    or not isinstance(raw.get("url"), str):
                raise DiscoveryConfigError(f"discovery.members[{index}] is not {{page_id, url}}")
            members.append(ExplicitMember(raw["page_id"], raw["url"]))
        max_requests = mapping.get("max_requests", DEFAULT_MAX_REQUESTS)
        if not isinstance(max_requests, int) or isinstance(max_requests, bool) or max_requests < 1:
            raise DiscoveryConfigError("discovery.max_requests is not a positive integer")
        config = cls(
            kind=kind, url=mapping.get("url"), pagination=pagination,
            records_pointer=member("records", "pointer"), records_selector=member("records", "selector"),
            link_pointer=member("link", "pointer"), link_attribute=member("link", "attribute"),
            identity_pointer=member("identity", "pointer"), revision_pointer=member("revision", "pointer"),
            members=tuple(members), max_requests=max_requests,
        )
        config.check()
        return config

    @property
    def has_revision_extractor(self) -> bool:
        """REG-32: json_api with revision.pointer, or a sitemap (lastmod)."""
        return (self.kind == JSON_API and self.revision_pointer is not None) or self.kind == SITEMAP

    def check(self) -> None:
        if self.kind != EXPLICIT and not isinstance(self.url, str):
            raise DiscoveryConfigError(f"{self.kind} discovery needs a url")
        if self.kind == JSON_API:
            if self.records_pointer is None or self.link_pointer is None:
                raise DiscoveryConfigError("json_api needs records.pointer and link.pointer")
            try:
                for pointer in (self.records_pointer, self.link_pointer, self.identity_pointer,
                                self.revision_pointer, self.pagination.pointer):
                    if pointer is not None:
                        parse_pointer(pointer)
            except ValueError as exc:
                raise DiscoveryConfigError(str(exc)) from None
        if self.kind == HTML_INDEX and not self.records_selector:
            raise DiscoveryConfigError("html_index needs records.selector")


# --- requests --------------------------------------------------------------------------

@dataclass(frozen=True)
class ListingRequest:
    url: str                      # canonical; what to GET
    accept: tuple[str, ...]       # the media types this listing may answer with
    ordinal: int                  # 1-based among this pass's listing requests
    role: str = "listing"         # "listing", or "child" for a sitemapindex child

    @property
    def accept_header(self) -> str:
        return ", ".join(self.accept)


# --- the state machine -----------------------------------------------------------------

@dataclass(frozen=True)
class DiscoveryState:
    config: DiscoveryConfig
    allowed_origins: frozenset[str]
    max_pages: int | None = None
    queue: tuple[tuple[str, str], ...] = ()      # (url, role) still to request, in order
    requested: frozenset[str] = frozenset()      # every address asked for (repeat rule)
    listings: int = 0                            # listing requests issued
    requests: int = 0                            # HTTP requests they cost (D-04, D-05)
    index: int = 0                               # main-sequence listings read
    tokens: frozenset[str] = frozenset()         # cursor tokens used
    children: tuple[str, ...] = ()               # sitemapindex children queued, in index order
    pages: ListedPages = ListedPages()
    # Owned by this state and never changed after it is made (a new state copies it): a
    # frozenset copy of a million ids would double discovery's peak for nothing.
    page_ids: AbstractSet[str] = frozenset()
    duplicates: int = 0
    dropped: int = 0
    diagnostics: tuple[str, ...] = ()
    failure: str | None = None
    stop: str | None = None
    base_url: str = ""                           # canonical discovery address

    # -- the run loop's questions --

    @property
    def done(self) -> bool:
        return self.stop is not None

    def next_request(self) -> ListingRequest | None:
        if self.stop is not None or not self.queue:
            return None
        url, role = self.queue[0]
        return ListingRequest(url, ACCEPTED_MEDIA_TYPES[self.config.kind], self.listings + 1, role)

    @property
    def requests_left(self) -> int:
        """How many HTTP requests (hops and retries included) the next listing may cost."""
        return max(0, self.config.max_requests - self.spent)

    @property
    def spent(self) -> int:
        """What the ceiling is measured against: HTTP requests charged, and never fewer than
        the listings asked for, so a listing that cost nothing (robots disallow) still counts
        toward "no more than max_requests listings" (PAG-17)."""
        return max(self.listings, self.requests)

    def refusal(self, status: int, headers: tuple[tuple[str, str], ...] | list) -> str | None:
        """Why a listing answering `status` and `headers` is refused before its body is read
        (DISC-31, D-13), or None when the body should be read and fed in."""
        headers = tuple(headers)
        if not 200 <= status < 300:
            if self._may_be_past_last_page(status) and media_type(headers) in ACCEPTED_MEDIA_TYPES[JSON_API]:
                return None   # the body says whether this is WordPress's "no such page"
            return f"http_status_{status}"
        if media_type(headers) not in ACCEPTED_MEDIA_TYPES[self.config.kind]:
            return "media_type_refused"
        return None

    def feed(self, result: ListingResponse | ListingFailure) -> "DiscoveryState":
        if self.stop is not None or not self.queue:
            raise ValueError("discovery asked for no listing")
        url, role = self.queue[0]
        if result.url != url:
            raise ValueError(f"fed {result.url!r} while {url!r} was asked for")
        state = replace(self, queue=self.queue[1:], listings=self.listings + 1,
                        requests=self.requests + max(0, result.requests))
        if isinstance(result, ListingFailure):
            if result.reason == "max_requests":
                return state._finish("max_requests")   # the ceiling, not an unreadable listing (D-21)
            return state._failed(url, role, result.reason)
        reason = self.refusal(result.status, result.headers)
        if reason is not None:
            return state._failed(url, role, reason)
        if not 200 <= result.status < 300:
            # Only a JSON error body from a numbered grammar gets here (see refusal).
            return state._past_last_page(result)
        try:
            parsed = state._parse(result, role)
        except ListingUnreadable as exc:
            return state._failed(url, role, exc.reason, exc.message)
        return state._advance(result, role, parsed)

    def outcome(self) -> DiscoveryOutcome:
        stop = self.stop or ("max_requests" if self.queue else "listing_failed")
        complete = STOP_REASONS[stop].complete and self.failure is None and self.stop is not None
        return DiscoveryOutcome(
            pages=self.pages, requests=self.requests, complete=complete, failure=self.failure,
            stop_reason=stop, duplicates_dropped=self.duplicates, dropped_records=self.dropped,
            diagnostics=self.diagnostics, children=self.children,
        )

    # -- internals --

    def _note(self, *lines: str) -> tuple[str, ...]:
        room = MAX_DIAGNOSTICS - len(self.diagnostics)
        return self.diagnostics + tuple(lines[:max(0, room)])

    def _finish(self, stop: str) -> "DiscoveryState":
        return replace(self, stop=stop, queue=())

    def _failed(self, url: str, role: str, reason: str, message: str = "") -> "DiscoveryState":
        note = self._note(f"{url}: {reason}" + (f" ({message})" if message else ""))
        state = replace(self, failure=self.failure or url, diagnostics=note)
        if role == "child" and state.queue:
            # Siblings of a sitemapindex do not depend on each other; the first failure is
            # named and the rest are still read (COV-07).
            return state._check_ceiling()
        return state._finish("listing_failed")

    def _may_be_past_last_page(self, status: int) -> bool:
        return (status == 400 and self.config.kind == JSON_API and self.index >= 1
                and self.config.pagination.kind in (pg.PAGE_PARAMETER, pg.OFFSET_PARAMETER))

    def _past_last_page(self, response: ListingResponse) -> "DiscoveryState":
        try:
            body = load_json(response.body)
        except ListingUnreadable:
            body = None
        code = body.get("code") if isinstance(body, dict) else None
        if isinstance(code, str) and _PAST_LAST_PAGE.match(code):
            return self._finish("past_last_page")
        return self._failed(response.url, "listing", f"http_status_{response.status}")

    def _parse(self, response: ListingResponse, role: str) -> ParsedListing:
        config = self.config
        if config.kind == JSON_API:
            spec = JsonListingSpec(config.records_pointer or "", config.link_pointer or "",
                                   config.identity_pointer, config.revision_pointer,
                                   config.pagination.pointer if config.pagination.kind == pg.CURSOR else None)
            return read_json_document(load_json(response.body), spec, response.url)
        if config.kind == HTML_INDEX:
            spec = HtmlListingSpec(config.records_selector or "", config.link_attribute or "href",
                                   config.pagination.selector if config.pagination.kind == pg.NEXT_SELECTOR else None)
            return parse_html_listing(response.body, spec, charset(response.headers))
        return parse_sitemap(response.body, response.url)

    def _admit(self, parsed: ParsedListing, base: str) -> tuple["DiscoveryState", bool]:
        """Add the listing's records as pages; False when max_pages stopped admission."""
        pages = PageColumns(self.pages)
        seen = set(self.page_ids)
        duplicates = self.duplicates
        dropped = self.dropped
        notes: list[str] = []
        full = False
        for link, explicit_id, revision in parsed.rows():
            try:
                url = canonicalise(link, base)
            except UrlError as exc:
                dropped += 1   # D-27: a link that names no address is no usable link
                notes.append(f"{base}: {exc}")
                continue
            page_id = explicit_id if explicit_id is not None else url   # DISC-10, D-27
            if page_id in seen:
                duplicates += 1     # DISC-33, DISC-34, D-28
                continue
            if self.max_pages is not None and len(pages) >= self.max_pages:
                full = True
                break
            seen.add(page_id)
            pages.append(page_id, url, revision, unreachable_reason(url, self.allowed_origins))
        state = replace(self, pages=pages.done(), page_ids=seen, duplicates=duplicates,
                        dropped=dropped, diagnostics=self._note(*notes) if notes else self.diagnostics)
        return state, not full

    def _advance(self, response: ListingResponse, role: str, parsed: ParsedListing) -> "DiscoveryState":
        base = canonical_or(response.base_url)
        state, admitted = self._admit(parsed, base)
        dropped_notes = tuple(f"{response.url}: {line}" for line in parsed.dropped)
        state = replace(state, dropped=state.dropped + parsed.dropped_count,
                        diagnostics=state._note(*dropped_notes) if dropped_notes else state.diagnostics)
        if not admitted:
            return state._finish("max_pages")
        if role == "child":
            if parsed.root == "sitemapindex":
                # DISC-23: one level only; a nested index contributes nothing.
                state = replace(state, diagnostics=state._note(f"{response.url}: nested sitemapindex not followed"))
            return state._check_ceiling()
        state = replace(state, index=state.index + 1)
        if self.config.kind == SITEMAP:
            if parsed.root == "sitemapindex":
                return state._queue_children(parsed.children, base)
            return state._finish("single_request")
        kind = self.config.pagination.kind
        if kind == pg.NONE:
            return state._finish("single_request")
        if parsed.record_count == 0:
            return state._finish("empty_page")     # D-03
        return state._next_page(response, parsed, base)

    def _queue_children(self, children: tuple[str, ...], base: str) -> "DiscoveryState":
        queue = list(self.queue)
        known = set(self.requested)      # every child queued before is in it
        notes: list[str] = []
        for raw in children:
            try:
                url = canonicalise(raw, base)
            except UrlError as exc:
                notes.append(f"child sitemap {raw!r}: {exc}")
                continue
            reason = unreachable_reason(url, self.allowed_origins)
            if reason is not None:
                notes.append(f"child sitemap {url}: skipped, {reason}")   # D-24
                continue
            if url in known:
                continue
            known.add(url)
            queue.append((url, "child"))
        added = tuple(url for url, _ in queue[len(self.queue):])
        state = replace(self, queue=tuple(queue), children=self.children + added,
                        requested=self.requested | {url for url, _ in queue},
                        diagnostics=self._note(*notes) if notes else self.diagnostics)
        return state._check_ceiling()

    def _check_ceiling(self) -> "DiscoveryState":
        if not self.queue:
            if self.failure is not None:
                return self._finish("listing_failed")
            return self._finish("sitemap_index_read" if self.config.kind == SITEMAP else "single_request")
        if self.spent >= self.config.max_requests:
            return self._finish("max_requests")    # PAG-17
        return self

    def _next_page(self, response: ListingResponse, parsed: ParsedListing, base: str) -> "DiscoveryState":
        config = self.config.pagination
        if config.kind in (pg.PAGE_PARAMETER, pg.OFFSET_PARAMETER):
            target = pg.numbered_url(config, self.base_url, self.index)
        elif config.kind == pg.CURSOR:
            token = parsed.cursor
            if token is None:
                return self._finish("no_next")
            if token in self.tokens:
                return self._finish("repeated_token")
            self = replace(self, tokens=self.tokens | {token})
            target = pg.with_parameter(self.base_url, config.parameter or "", token)
        else:
            raw = (pg.next_link_target(response.header_values("link")) if config.kind == pg.LINK_HEADER
                   else parsed.next_link)
            if raw is None:
                return self._finish("no_next")
            try:
                target = canonicalise(raw, base)
            except UrlError:
                return replace(self, failure=self.failure or raw)._finish("next_unreachable")
            if unreachable_reason(target, self.allowed_origins) is not None:
                # D-24: the run may not fetch it, so discovery cannot go on; name it.
                return replace(self, failure=self.failure or target)._finish("next_unreachable")
        if target in self.requested:
            return self._finish("repeated_address")
        if self.spent >= self.config.max_requests:
            return self._finish("max_requests")
        return replace(self, queue=((target, "listing"),), requested=self.requested | {target})


def canonical_or(url: str) -> str:
    try:
        return canonicalise(url)
    except UrlError:
        return url


def start(config: DiscoveryConfig, allowed_origins, *, max_pages: int | None = None) -> DiscoveryState:
    """The state before the first listing request.

    `max_pages` (pages.max_pages) stops discovery once that many distinct pages are listed:
    every listed page id enters the ledger, which may not hold more (D-18).
    """
    allowed = frozenset(allowed_origins)
    if config.kind == EXPLICIT:
        state = DiscoveryState(config, allowed, max_pages)
        pages = PageColumns()
        seen: set[str] = set()
        duplicates = dropped = 0
        notes: list[str] = []
        for member in config.members:
            page_id = valid_text(member.page_id)      # as listing text: no lone surrogate
            try:
                url = canonicalise(member.url)
            except UrlError as exc:
                dropped += 1
                notes.append(f"member {page_id!r}: {exc}")
                continue
            if page_id in seen:
                duplicates += 1
                continue
            if max_pages is not None and len(pages) >= max_pages:
                return replace(state, pages=pages.done(), page_ids=seen, duplicates=duplicates,
                               dropped=dropped, diagnostics=tuple(notes[:MAX_DIAGNOSTICS]), stop="max_pages")
            seen.add(page_id)
            pages.append(page_id, url, None, unreachable_reason(url, allowed))
        return replace(state, pages=pages.done(), page_ids=seen, duplicates=duplicates,
                       dropped=dropped, diagnostics=tuple(notes[:MAX_DIAGNOSTICS]), stop="explicit")
    base = canonicalise(config.url or "")
    first = base
    if config.pagination.kind in (pg.PAGE_PARAMETER, pg.OFFSET_PARAMETER):
        first = pg.numbered_url(config.pagination, base, 0)   # D-23: the first request carries it
    state = DiscoveryState(config, allowed, max_pages, queue=((first, "listing"),),
                           requested=frozenset({first}), base_url=base)
    reason = unreachable_reason(first, allowed)
    if reason is not None:
        # Registration refuses this (REG-22); a run handed one anyway makes no request.
        return replace(state, queue=(), failure=first, stop="listing_failed",
                       diagnostics=(f"{first}: {reason}",))
    return state


def run_offline(config: DiscoveryConfig, allowed_origins, responses: Mapping[str, ListingResponse | ListingFailure],
                *, max_pages: int | None = None) -> DiscoveryOutcome:
    """Drive discovery over prepared responses (tests, `validate --probe`, the benchmark).

    An address with no prepared response is fed as a failure, the way a replay transport
    reports a missing exchange.
    """
    state = start(config, allowed_origins, max_pages=max_pages)
    while (request := state.next_request()) is not None:
        result = responses.get(request.url) or ListingFailure(request.url, "replay_missing")
        if isinstance(result, ListingResponse):
            refusal = state.refusal(result.status, result.headers)
            if refusal is not None:
                result = ListingFailure(request.url, refusal, result.requests)
        state = state.feed(result)
    return state.outcome()


def json_response(url: str, value: Any, *, status: int = 200, headers: tuple[tuple[str, str], ...] = (),
                  media: str = "application/json") -> ListingResponse:
    """A JSON listing response (tests and the benchmark build them this way)."""
    return ListingResponse(url, status, (("Content-Type", media),) + tuple(headers),
                           json.dumps(value).encode("utf-8"))
