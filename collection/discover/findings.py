"""What discovery found on one listing, and why it found nothing (pure).

Two users: `collection discover` (the listing dry-run: one saved page in, the records,
the dropped records with their reasons and the next request out) and the run summary,
run record and `status`, which must say out loud when a run listed nothing or dropped
records (a selector matching `<h3>` instead of its `<a>` otherwise ends "complete,
discovered 0" with the reason only in the diagnostics).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from collection.discover import pagination as pg
from collection.discover.common import DiscoveryShapeError, ListingResponse
from collection.discover.driver import (
    ACCEPTED_MEDIA_TYPES,
    EXPLICIT,
    HTML_INDEX,
    JSON_API,
    SITEMAP,
    STOP_REASONS,
    DiscoveryConfig,
    start,
)
from collection.urls import UrlError, canonicalise


def drop_cause(config: DiscoveryConfig) -> tuple[str, str]:
    """(what a dropped record lacked, the question that usually finds the fix) for this kind."""
    if config.kind == HTML_INDEX:
        attribute = config.link_attribute or "href"
        return (f"no usable {attribute}",
                f"does records.selector {config.records_selector!r} match the element that carries {attribute} "
                f"(the <a>, not its heading), or should link.attribute name another attribute?")
    if config.kind == JSON_API:
        return (f"no usable link at {config.link_pointer}",
                f"does link.pointer {config.link_pointer!r} name the link inside each record "
                f"(relative to the record, e.g. /link or /url)?")
    if config.kind == SITEMAP:
        return "no <loc>", "does every <url> of the sitemap carry a non-empty <loc>?"
    return "no usable url", "does every member carry an absolute https url?"


def discovery_warning(config: DiscoveryConfig, *, discovered: int, dropped: int, first_run: bool,
                      stop_reason: str, children: tuple[str, ...] = (), children_read: bool = True) -> str | None:
    """One line for the summary, the run record and `status` when discovery dropped records or
    listed nothing on a first run; None when there is nothing to say.

    `children` are a sitemapindex's child sitemaps; `children_read` says whether they were read
    (a run) or only named (the dry-run of the saved index). Either way the next step is a child
    saved and read at its own address, never the index again."""
    if discovered == 0 and config.kind == SITEMAP and children and stop_reason != "listing_failed":
        return _index_advice(children, children_read)
    if dropped:
        lacked, question = drop_cause(config)
        noun = "record" if dropped == 1 else "records"
        return f"{discovered} discovered: {dropped} {noun} dropped, {lacked} — {question}"
    if discovered == 0 and first_run and stop_reason != "listing_failed":
        if config.kind == HTML_INDEX:
            hint = f"records.selector {config.records_selector!r} matched nothing on the first listing"
        elif config.kind == JSON_API:
            hint = f"records.pointer {config.records_pointer!r} named an empty array on the first listing"
        elif config.kind == SITEMAP:
            hint = "the sitemap listed no <url>"
        else:
            hint = "discovery.members is empty"
        return f"0 discovered on a first run: {hint} — try `collection discover RECIPE SAVED_LISTING`"
    return None


def _index_advice(children: tuple[str, ...], children_read: bool) -> str:
    count = f"{len(children)} child sitemap{'s' if len(children) != 1 else ''}"
    named = ", ".join(children[:3]) + (f" and {len(children) - 3} more" if len(children) > 3 else "")
    command = f"`collection discover RECIPE SAVED_CHILD.xml --url {children[0]}`"
    if children_read:
        return f"0 discovered on a first run: the sitemap index's {count} ({named}) listed no <url> — save one " \
               f"and read it with {command}"
    return f"0 discovered: this is a sitemap index; it names {count} ({named}), which a run reads after it — " \
           f"save one and read it with {command}"


@dataclass(frozen=True)
class DryRun:
    """The listing dry-run's answer (canonical JSON through `as_dict`)."""

    url: str
    media_type: str
    records: tuple[dict[str, Any], ...] = ()
    dropped: tuple[str, ...] = ()
    duplicates: int = 0
    next_requests: tuple[str, ...] = ()
    stop_reason: str | None = None
    failure: dict[str, str] | None = None
    warning: str | None = None
    dropped_records: int = 0      # all of them: `dropped` names at most the first hundred

    def as_dict(self) -> dict[str, Any]:
        return {
            "url": self.url, "media_type": self.media_type, "records": list(self.records),
            "dropped": list(self.dropped), "dropped_records": self.dropped_records, "duplicates": self.duplicates,
            "next": list(self.next_requests),
            "stop": None if self.stop_reason is None else {
                "reason": self.stop_reason, "complete": STOP_REASONS[self.stop_reason].complete,
                "meaning": STOP_REASONS[self.stop_reason].meaning},
            "failure": self.failure, "warning": self.warning,
        }


def dry_run(config: DiscoveryConfig, allowed_origins, body: bytes, *, url: str | None = None,
            media_type: str | None = None, headers: tuple[tuple[str, str], ...] = ()) -> DryRun:
    """Read one saved listing page as the first listing of a run would be read.

    `url` is the page's address (default: the first request discovery would make); links
    resolve against it and the pagination grammar continues from it. `headers` stands in for
    the response headers a saved file cannot hold (a Link header for link_header).
    """
    state = start(config, allowed_origins)
    content_type = media_type or (ACCEPTED_MEDIA_TYPES[config.kind] or ("",))[0]
    if config.kind == EXPLICIT:
        return _report(state, url or "", content_type)
    first = state.next_request()
    if url is not None:
        try:
            url = canonicalise(url)
        except UrlError as exc:
            return DryRun(url, content_type, failure={"code": "url_invalid", "message": str(exc)})
        if first is None or first.url != url:
            state = replace(state, queue=((url, "listing"),), requested=state.requested | {url},
                            stop=None, failure=None, diagnostics=(), index=_numbered_index(config, url))
    elif first is None:
        return _report(state, config.url or "", content_type)
    target = url or first.url
    all_headers = (("Content-Type", content_type),) + tuple(headers)
    refusal = state.refusal(200, all_headers)
    if refusal is not None:
        accepted = ", ".join(ACCEPTED_MEDIA_TYPES[config.kind])
        return DryRun(target, content_type, failure={
            "code": refusal, "message": f"{config.kind} listings are read as {accepted}, not {content_type}"})
    try:
        after = state.feed(ListingResponse(target, 200, all_headers, body))
    except DiscoveryShapeError as exc:
        return DryRun(target, content_type, failure={"code": exc.code, "message": exc.message})
    return _report(after, target, content_type)


def _numbered_index(config: DiscoveryConfig, url: str) -> int:
    """Which request of a numbered grammar `url` is (0 for the first), so the dry-run of a saved
    `?page=5` names `page=6` as the next request; 0 when the address carries no number."""
    from urllib.parse import parse_qsl, urlsplit

    grammar = config.pagination
    if grammar.kind not in (pg.PAGE_PARAMETER, pg.OFFSET_PARAMETER):
        return 0
    values = [v for k, v in parse_qsl(urlsplit(url).query) if k == grammar.parameter]
    if not values or not values[-1].isdigit():
        return 0
    step = grammar.step if grammar.kind == pg.OFFSET_PARAMETER else 1
    return max(0, (int(values[-1]) - grammar.start) // max(1, step))


def _report(state, url: str, content_type: str) -> DryRun:
    outcome = state.outcome()
    records = tuple({"page_id": p.page_id, "link": p.url, "revision": p.revision_hint,
                     **({"unreachable": p.unreachable} if p.unreachable else {})} for p in outcome.pages)
    failure = None
    if outcome.failure is not None and outcome.stop_reason == "listing_failed":
        failure = {"code": "listing_unreadable", "message": "; ".join(outcome.diagnostics)}
    elif outcome.stop_reason == "next_unreachable":
        failure = {"code": "next_unreachable", "message": f"the next address {outcome.failure} is not one this "
                   "source may fetch (pages.allowed_origins)"}
    next_requests = tuple(u for u, _ in state.queue) if not state.done else ()
    warning = discovery_warning(state.config, discovered=len(outcome.pages), dropped=outcome.dropped_records,
                                first_run=True, stop_reason=outcome.stop_reason, children=outcome.children,
                                children_read=False)
    return DryRun(url, content_type, records, outcome.diagnostics, outcome.duplicates_dropped, next_requests,
                  state.stop, failure, warning, outcome.dropped_records)


__all__ = ["DryRun", "dry_run", "drop_cause", "discovery_warning"]
