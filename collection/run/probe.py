"""`validate --probe` (D-59): one request to each collection's first discovery address.

Registration proper makes no request (REG-37); the probe is the operator's explicit
choice to ask the publisher once. It goes through the same fetcher as a run (robots.txt
honoured and not charged, egress rules, politeness, the User-Agent of D-57) with a budget
of exactly one request, and checks what only the live listing can show: the media type,
and that the records pointer names an array (the discovery driver's own shape check).
"""

from __future__ import annotations

from typing import Any

from collection.fetch import budgets
from collection.fetch.clock import SystemClock
from collection.discover.driver import DiscoveryShapeError, EXPLICIT, start
from collection.fetch.egress import Egress, parse_resolve
from collection.fetch.fetcher import ARRIVAL_MARGIN_SECONDS, FetchSpec, Fetcher
from collection.discover.common import ListingResponse
from collection.discover.findings import discovery_warning
from collection.merge.outcomes import FETCHED
from collection.fetch.politeness import Politeness
from collection.recipe.refusal import Refusal
from collection.recipe.registration import Registration
from collection.fetch.urllib3_transport import Urllib3Transport

PROBE_RULE = "validate --probe: one request to the first discovery address (D-59)"


def _refusal(code: str, pointer: str, message: str) -> Refusal:
    return Refusal(code, pointer, message, PROBE_RULE)


def probe_registration(registration: Registration, *, ca_bundle: str | None = None,
                       resolve: tuple[str, ...] = (), user_agent_token: str | None = None,
                       transport: Any = None, egress: Egress | None = None) -> tuple[list[dict], list[Refusal]]:
    """Probe every collection source of a registrable document; (probe reports, refusals)."""
    resolve_map = dict(parse_resolve(text) for text in resolve)
    token_options = {"token": user_agent_token} if user_agent_token else {}
    transport = transport or Urllib3Transport(ca_bundle=ca_bundle, **token_options)
    egress = egress or Egress(resolve_map)
    reports: list[dict] = []
    refusals: list[Refusal] = []
    prefix = "/sources/" if registration.dataset is not None else ""
    for index, source in enumerate(registration.sources):
        if not source.is_collection or source.collection.discovery.kind == EXPLICIT:
            continue  # explicit discovery makes no listing request (DISC-26): nothing to probe
        where = f"{prefix}{index}" if prefix else ""
        report, found = _probe_source(source, where, transport, egress, token_options)
        reports.append(report)
        refusals.extend(found)
    return reports, refusals


def _probe_source(source, where: str, transport, egress: Egress, token_options: dict) -> tuple[dict, list[Refusal]]:
    discovery = source.collection.discovery
    pages = source.collection.pages
    state = start(discovery, pages.allowed_origins)
    request = state.next_request()
    clock = SystemClock()
    fetcher = Fetcher(transport, egress, allowed_origins=pages.allowed_origins,
                      budget=budgets.Budget(max_requests=1, discovery_max_requests=1),
                      politeness=Politeness(pages.min_interval_seconds, 1, margin=ARRIVAL_MARGIN_SECONDS),
                      clock=clock, retries=0, request_timeout=pages.request_timeout_seconds, **token_options)
    outcome = fetcher.fetch(FetchSpec(request.url, kind=budgets.LISTING, accepted=request.accept))
    report = {"source": source.name, "url": request.url, "status": outcome.status,
              "media_type": outcome.media_type, "records": None}
    pointer = f"{where}/collection/discovery/url"
    if outcome.outcome != FETCHED:
        reason = outcome.failure_code or outcome.stopped_by or outcome.outcome
        if outcome.stopped_by == "max_requests":
            reason = "the first answer was a redirect; the probe makes exactly one request"
        code = "PROBE_MEDIA_TYPE" if outcome.failure_code == "media_type_refused" else "PROBE_FAILED"
        detail = f" ({outcome.detail})" if outcome.detail else ""
        return report, [_refusal(code, pointer, f"probing {request.url}: {reason}{detail}")]
    response = ListingResponse(request.url, outcome.status, outcome.headers, outcome.body,
                               requests=outcome.requests, final_url=outcome.final_url)
    try:
        after = state.feed(response)
    except DiscoveryShapeError as exc:
        return report, [_refusal("PROBE_RECORDS_NOT_ARRAY", f"{where}/collection/discovery/records/pointer",
                                 f"probing {request.url}: {exc.message}")]
    result = after.outcome()
    report["records"] = len(result.pages) + result.duplicates_dropped + result.dropped_records
    if result.failure is not None:
        return report, [_refusal("PROBE_FAILED", pointer, f"probing {request.url}: the listing could not be read "
                                 f"({result.stop_reason})")]
    children = any(role == "child" for _, role in after.queue)   # a sitemapindex lists sitemaps, not pages
    if not result.pages and not children:
        warning = discovery_warning(discovery, discovered=0, dropped=result.dropped_records, first_run=True,
                                    stop_reason=result.stop_reason)
        return report, [_refusal("PROBE_NO_LINKS", _link_pointer(where, discovery.kind),
                                 f"probing {request.url}: {warning}")]
    return report, []


def _link_pointer(where: str, kind: str) -> str:
    member = {"html_index": "records/selector", "json_api": "link/pointer"}.get(kind, "url")
    return f"{where}/collection/discovery/{member}"
