"""Independent faults: every fault of audit/faults/independent.json implemented as a mutant of collection.

audit/faults/independent.json was written by a helper who never read collection/, from the
specification and its clauses alone (see audit/faults/independent.md for its provenance). Each fault
keeps its id, clauses and text; the function under it seeds that fault into this
project's code as faithfully as the text allows (no fault is weakened to make it killable).
Faults not implemented here are listed by `python audit/mutants_independent.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlunsplit

from kit import (MUTANTS, _canonical, _coverage, _provenance, _reorder, _replace_everywhere, _split,  # noqa: F401
                          _drop_rows, _wrap, dig, failures_use_fetches, mutant, reg_add, reg_drop, reg_post, reg_pre, schema_edit)

FAULTS = {f["id"]: f for f in json.loads((Path(__file__).resolve().parent / "faults" / "independent.json").read_text(encoding="utf-8"))}


def fault(fid: str):
    """Register the function below as fault `fid` of faults/independent.json (its text and clauses)."""
    f = FAULTS[fid]
    return mutant(fid, f["family"], f["fault"], clauses=tuple(f["clauses"]), mode=f["mode"], fault_set="independent")


# === the faults ===========================================================================

# --- registration ----------------------------------------------------------------------------
DISC_MAX = lambda sub: sub.get("maximum") == 1024  # noqa: E731  (discovery.max_requests, not limits')


SCHEMA_FAULTS = [   # (fault, schema member, which of its subschemas, keywords the check gets wrong; None drops one)
    ("registration-concurrency-capped-at-25", "concurrency", None, {"maximum": 25}),
    ("registration-concurrency-zero", "concurrency", None, {"minimum": 0}),
    ("registration-disc-max-requests-1024-refused", "max_requests", DISC_MAX, {"maximum": 1023}),
    ("registration-disc-max-requests-zero", "max_requests", DISC_MAX, {"minimum": 0}),
    ("registration-fetches-10000-refused", "max_fetches_per_run", None, {"maximum": 9999}),
    ("registration-fetches-zero", "max_fetches_per_run", None, {"minimum": 0}),
    ("registration-interval-3601", "min_interval_seconds", None, {"maximum": None}),
    ("registration-interval-one-refused", "min_interval_seconds", None, {"exclusiveMinimum": 1}),
    ("registration-max-pages-50000-refused", "max_pages", None, {"maximum": 49999}),
    ("registration-max-pages-50001", "max_pages", None, {"maximum": 50001}),
    ("registration-max-pages-zero", "max_pages", None, {"minimum": 0}),
    ("registration-origins-eight-refused", "allowed_origins", None, {"maxItems": 7}),
    ("registration-origins-empty-accepted", "allowed_origins", None, {"minItems": None}),
    ("registration-origins-nine-accepted", "allowed_origins", None, {"maxItems": 9}),
    ("registration-origin-duplicate-accepted", "allowed_origins", None, {"uniqueItems": None}),
    ("registration-retries-four", "retries", None, {"maximum": 4}),
    ("registration-retries-negative", "retries", None, {"minimum": None}),
    ("registration-revisit-3599", "seconds", None, {"minimum": 3599}),
    ("registration-revisit-3600-refused", "seconds", None, {"exclusiveMinimum": 3600}),
    ("registration-timeout-121", "request_timeout_seconds", None, {"maximum": 121}),
    ("registration-timeout-five-refused", "request_timeout_seconds", None, {"exclusiveMinimum": 5}),
    ("registration-timeout-four", "request_timeout_seconds", None, {"minimum": 4}),
    ("registration-collection-extra-member", "collection", None, {"additionalProperties": None}),
]


def _schema_fault(member, where, changes):
    def seed():
        schema_edit(member, where or (lambda sub: True), **changes)
    return seed


for _fid, _member, _where, _changes in SCHEMA_FAULTS:
    fault(_fid)(_schema_fault(_member, _where, _changes))


@fault("registration-closed-false")
def _():
    reg_drop("CLOSED_FORBIDDEN", lambda doc, r: doc.get("closed") is False)


@fault("registration-collection-missing")
def _():
    reg_drop("COLLECTION_REQUIRED")


@fault("registration-collection-other-adapter")
def _():
    reg_drop("COLLECTION_FORBIDDEN")


@fault("registration-connector-origin-mismatch")
def _():
    reg_drop("CONNECTOR_ORIGIN_MISMATCH")


@fault("registration-credential-mode-missing")
def _():
    reg_drop("SCHEMA_REQUIRED", lambda doc, r: r.pointer == "/connector/credential_mode")


@fault("registration-empty-pointer-refused")
def _():
    reg_add("POINTER_SYNTAX", "/collection/discovery/records/pointer",
            lambda doc: dig(doc, "collection", "discovery", "records", "pointer") == "")


@fault("registration-explicit-duplicate-ids")
def _():
    reg_drop("EXPLICIT_DUPLICATE_PAGE_ID")


@fault("registration-explicit-http-member")
def _():
    reg_drop("EXPLICIT_URL_INVALID")


@fault("registration-explicit-members-over-max")
def _():
    reg_drop("EXPLICIT_TOO_MANY_MEMBERS")


@fault("registration-first-url-http")
def _():
    schema_edit("url", lambda sub: "pattern" in sub, pattern=None, format=None)
    reg_drop("DISCOVERY_URL_INVALID")
    reg_post(lambda doc, rs: [r for r in rs if not (r.pointer == "/collection/discovery/url" and r.code.startswith("SCHEMA"))])


@fault("registration-fraction-elsewhere")
def _():
    reg_drop("JSON_FRACTIONAL_NUMBER", lambda doc, r: r.pointer != "/collection/pages/min_interval_seconds")


def _number_at(doc, pointer):
    value = doc
    for token in pointer.split("/")[1:]:
        token = token.replace("~1", "/").replace("~0", "~")
        value = value[int(token)] if isinstance(value, list) else value.get(token)
    return value


@fault("registration-interval-fraction")
def _():
    def integral(doc, r):
        try:
            value = _number_at(doc, r.pointer)
            return float(value) == int(float(value))
        except (TypeError, ValueError, AttributeError, IndexError):
            return False
    reg_drop("JSON_FRACTIONAL_NUMBER", integral)


@fault("registration-max-requests-missing")
def _():
    def default_sum(doc):
        limits = doc.setdefault("limits", {})
        if "max_requests" not in limits and "collection" in doc:
            limits["max_requests"] = (dig(doc, "collection", "discovery", "max_requests", default=64)
                                      + dig(doc, "collection", "pages", "max_fetches_per_run", default=10000))
    reg_pre(default_sum)


@fault("registration-origins-missing-discovery")
def _():
    reg_drop("DISCOVERY_ORIGIN_NOT_ALLOWED")


@fault("registration-origin-trailing-slash-normalised")
def _():
    def normalise(doc):
        origins = dig(doc, "collection", "pages", "allowed_origins")
        if isinstance(origins, list):
            doc["collection"]["pages"]["allowed_origins"] = [
                o.rstrip("/").lower().removesuffix(":443") if isinstance(o, str) else o for o in origins]
    reg_pre(normalise)


@fault("registration-pagination-absent-not-none")
def _():
    def default_page(doc):
        discovery = dig(doc, "collection", "discovery")
        if isinstance(discovery, dict) and discovery.get("kind") == "json_api" and "pagination" not in discovery:
            discovery["pagination"] = {"kind": "page_parameter", "parameter": "page"}
    reg_pre(default_page)


@fault("registration-pairing-unchecked")
def _():
    reg_drop("PAGINATION_KIND_NOT_ALLOWED")


@fault("registration-param-present-accepted")
def _():
    reg_drop("PAGINATION_PARAMETER_PRESENT")


@fault("registration-param-substring")
def _():
    from urllib.parse import urlsplit as split

    def substring(doc):
        url = dig(doc, "collection", "discovery", "url")
        parameter = dig(doc, "collection", "discovery", "pagination", "parameter")
        return isinstance(url, str) and isinstance(parameter, str) and parameter in split(url).query
    reg_add("PAGINATION_PARAMETER_PRESENT", "/collection/discovery/url", substring)


@fault("registration-pointer-syntax")
def _():
    reg_drop("POINTER_SYNTAX")


@fault("registration-reader-family-list")
def _():
    def family(doc):
        for p in dig(doc, "connector", "parameters", default=[]) or []:
            if isinstance(p, dict) and p.get("name") == "reader.family_id" and p.get("value") == "xml.tabular":
                return True
        return False
    reg_add("READER_FAMILY_UNSUPPORTED", "/connector/parameters/0/value", family)


@fault("registration-refusal-pointer-parent")
def _():
    from dataclasses import replace
    reg_post(lambda doc, rs: [replace(r, pointer=r.pointer.rsplit("/", 1)[0]) if r.code == "SCHEMA_BOUND" else r for r in rs])


@fault("registration-reserved-column-partial")
def _():
    import json as _json

    def only_named(doc, r):
        for p in dig(doc, "connector", "parameters", default=[]) or []:
            if isinstance(p, dict) and p.get("name") == "reader.decode_options":
                try:
                    names = {c.get("name") for c in _json.loads(p["value"]).get("columns", [])}
                except (ValueError, AttributeError, TypeError):
                    return False
                return not names & {"page_id", "page_url"}
        return False
    reg_drop("RESERVED_COLUMN_NAME", only_named)


@fault("registration-revision-hint-html-index")
def _():
    reg_drop("REVISION_HINT_WITHOUT_EXTRACTOR", lambda doc, r: dig(doc, "collection", "discovery", "kind") != "json_api")


@fault("registration-revision-hint-json-no-pointer")
def _():
    reg_drop("REVISION_HINT_WITHOUT_EXTRACTOR", lambda doc, r: dig(doc, "collection", "discovery", "kind") == "json_api")


@fault("registration-sum-ignores-defaults")
def _():
    def fits_with_zeros(doc, r):
        total = dig(doc, "limits", "max_requests")
        listing = dig(doc, "collection", "discovery", "max_requests", default=0)
        fetches = dig(doc, "collection", "pages", "max_fetches_per_run", default=0)
        return isinstance(total, int) and listing + fetches <= total
    reg_drop("REQUEST_BUDGET_SUM", fits_with_zeros)


@fault("registration-sum-not-checked")
def _():
    reg_drop("REQUEST_BUDGET_SUM")


@fault("registration-sum-strict")
def _():
    def equal(doc):
        total = dig(doc, "limits", "max_requests")
        return "collection" in doc and total == (dig(doc, "collection", "discovery", "max_requests", default=64)
                                                 + dig(doc, "collection", "pages", "max_fetches_per_run", default=10000))
    reg_add("REQUEST_BUDGET_SUM", "/limits/max_requests", equal)


@fault("registration-v1-wrong-code")
def _():
    from dataclasses import replace
    reg_post(lambda doc, rs: [replace(r, code="ADAPTER_UNKNOWN") if r.code == "HOSTED_COLLECTION_UNSUPPORTED" else r for r in rs])


@fault("registration-window-accepted")
def _():
    reg_drop("WINDOW_FORBIDDEN")


@fault("registration-disc-max-requests-default")
def _():
    def forty(doc):
        discovery = dig(doc, "collection", "discovery")
        if isinstance(discovery, dict) and "max_requests" not in discovery:
            discovery["max_requests"] = 40
    reg_pre(forty)


@fault("registration-pages-missing")
def _():
    from urllib.parse import urlsplit as split

    def fill(doc):
        collection = doc.get("collection")
        url = dig(doc, "collection", "discovery", "url")
        if isinstance(collection, dict) and "pages" not in collection and isinstance(url, str):
            parts = split(url)
            collection["pages"] = {"allowed_origins": [f"{parts.scheme}://{parts.netloc}"]}
    reg_pre(fill)


@fault("registration-revisit-unknown-kind")
def _():
    def never(doc):
        revisit = dig(doc, "collection", "pages", "revisit")
        if isinstance(revisit, dict) and revisit.get("kind") not in ("never", "revision_hint", "interval"):
            revisit["kind"] = "never"
    reg_pre(never)


@fault("discovery-unknown-kind-accepted")
def _():
    def as_json_api(doc):
        discovery = dig(doc, "collection", "discovery")
        if isinstance(discovery, dict) and discovery.get("kind") not in ("json_api", "html_index", "sitemap", "explicit"):
            discovery["kind"] = "json_api"
    reg_pre(as_json_api)



# --- pagination ------------------------------------------------------------------------------
def _driver():
    import collection.discover.driver as D
    return D


def _wrap_method(cls, name, make):
    original = getattr(cls, name)
    setattr(cls, name, make(original))


def _wrap_start(make):
    D = _driver()
    original = D.start
    _replace_everywhere(original, make(original))


def _with_config(state, **changes):
    from dataclasses import replace
    return replace(state, config=replace(state.config, **changes))


def _pagination(state, **changes):
    from dataclasses import replace
    return _with_config(state, pagination=replace(state.config.pagination, **changes))


@fault("pagination-ceiling-minus-one")
def _():
    from dataclasses import replace

    def make(original):
        def start(config, allowed_origins, *, max_pages=None):
            if config.kind == "explicit":
                return original(config, allowed_origins, max_pages=max_pages)
            state = original(replace(config, max_requests=config.max_requests - 1), allowed_origins, max_pages=max_pages)
            if config.max_requests - 1 <= 0:
                state = replace(state, queue=(), stop="max_requests")
            return state
        return start
    _budget_init(lambda m, d: (m, d - 1))
    _wrap_start(make)


@fault("pagination-ceiling-plus-one")
def _():
    from dataclasses import replace
    _budget_init(lambda m, d: (m, d + 1))
    _wrap_start(lambda original: lambda config, allowed_origins, *, max_pages=None: original(
        replace(config, max_requests=config.max_requests + 1) if config.kind != "explicit" else config,
        allowed_origins, max_pages=max_pages))


@fault("pagination-ceiling-ignores-retries")
def _():
    D = _driver()
    D.DiscoveryState.spent = property(lambda self: self.listings)
    B = _budget()
    commit, left = B.Budget.commit, B.Budget.listing_requests_left

    def commit_(self, reservation):
        commit(self, reservation)
        if reservation.kind == B.LISTING and reservation.cause != B.INITIAL:
            self._free_listing = getattr(self, "_free_listing", 0) + 1
    B.Budget.commit = commit_
    B.Budget.listing_requests_left = lambda self: min(self.requests_left(), left(self) + getattr(self, "_free_listing", 0))


def _json_listing(transform):
    import collection.discover.json_index as J
    original = J.read_json_document

    def read_json_document(doc, spec, url):
        return transform(original(doc, spec, url), doc, spec, url)
    _replace_everywhere(original, read_json_document)


def _cursor_raw(doc, spec):
    from collection.recipe.pointer import parse_pointer, resolve_or
    missing = object()
    value = resolve_or(doc, parse_pointer(spec.cursor), missing)
    return None if value is missing else ("null" if value is None else value), value is missing


def _cursor_fault(token_for):
    """The cursor token read from a listing becomes token_for(raw value, missing) when that
    is not None (the raw JSON value: the parser's mistakes are about it)."""
    from dataclasses import replace

    def transform(parsed, doc, spec, url):
        if spec.cursor is not None:
            token = token_for(*_cursor_raw(doc, spec))
            if token is not None:
                return replace(parsed, cursor=token)
        return parsed
    _json_listing(transform)


@fault("pagination-cursor-empty-token-followed")
def _():
    _cursor_fault(lambda value, missing: "" if not missing and value == "" else None)


@fault("pagination-cursor-null-token-stringified")
def _():
    _cursor_fault(lambda value, missing: "null" if not missing and value == "null" else None)


@fault("pagination-cursor-numeric-token-json")
def _():
    _cursor_fault(lambda value, missing: repr(float(value)) if isinstance(value, int) and not isinstance(value, bool) else None)


@fault("pagination-cursor-first-request-param")
def _():
    from dataclasses import replace
    import collection.discover.pagination as pg

    def make(original):
        def start(config, allowed_origins, *, max_pages=None):
            state = original(config, allowed_origins, max_pages=max_pages)
            if config.pagination.kind == pg.CURSOR and state.queue:
                first = pg.with_parameter(state.queue[0][0], config.pagination.parameter or "", "")
                state = replace(state, queue=((first, "listing"),), requested=frozenset({first}))
            return state
        return start
    _wrap_start(make)


@fault("pagination-cursor-not-percent-encoded")
def _():
    import collection.discover.pagination as pg

    def with_parameter(url, name, value):
        base, hash_mark, fragment = url.partition("#")
        joined = base + (("" if base.endswith(("?", "&")) else "&") if "?" in base else "?") + f"{name}={value}"
        return joined + (hash_mark + fragment if hash_mark else "")
    pg.with_parameter = with_parameter


@fault("pagination-cursor-repeat-not-stop")
def _():
    from dataclasses import replace
    import collection.discover.pagination as pg
    D = _driver()

    def make(original):
        def _next_page(self, response, parsed, base):
            if self.config.pagination.kind == pg.CURSOR:
                self = replace(self, tokens=frozenset(), requested=frozenset())
            return original(self, response, parsed, base)
        return _next_page
    _wrap_method(D.DiscoveryState, "_next_page", make)


@fault("pagination-cursor-token-replaces-param")
def _():
    from dataclasses import replace
    import collection.discover.pagination as pg
    D = _driver()

    def make(original):
        def _next_page(self, response, parsed, base):
            if self.config.pagination.kind == pg.CURSOR:
                return original(replace(self, base_url=response.url), response, parsed, base)
            return original(self, response, parsed, base)
        return _next_page
    _wrap_method(D.DiscoveryState, "_next_page", make)


def _numbered(kinds=("page_parameter", "offset_parameter")):
    return kinds


@fault("pagination-empty-page-continues")
def _():
    from dataclasses import replace
    D = _driver()

    def make(original):
        def _advance(self, response, role, parsed):
            if self.config.pagination.kind in _numbered() and parsed.record_count == 0:
                parsed = replace(parsed, record_count=1)
            return original(self, response, role, parsed)
        return _advance
    _wrap_method(D.DiscoveryState, "_advance", make)


@fault("pagination-short-page-stops")
def _():
    from dataclasses import replace
    D = _driver()
    first: dict[str, int] = {}

    def make(original):
        def _advance(self, response, role, parsed):
            if self.config.pagination.kind in _numbered() and role == "listing":
                if self.index == 0:
                    first[self.base_url] = parsed.record_count
                elif parsed.record_count < first.get(self.base_url, 0):
                    state = original(self, response, role, replace(parsed, record_count=0)) if parsed.record_count else \
                        original(self, response, role, parsed)
                    return state
            return original(self, response, role, parsed)
        return _advance
    _wrap_method(D.DiscoveryState, "_advance", make)


def _link_target(fn):
    import collection.discover.pagination as pg
    original = pg.next_link_target
    _replace_everywhere(original, lambda values: fn(original, values))


@fault("pagination-link-first-entry")
def _():
    import collection.discover.pagination as pg

    def first(original, values):
        links = pg.parse_link_header(values)
        return links[0].target if links else None
    _link_target(first)


@fault("pagination-link-rel-case-sensitive")
def _():
    import collection.discover.pagination as pg
    pg.Link.rels = property(lambda self: tuple(self.param("rel").split()) if self.param("rel") else ())


@fault("pagination-link-rel-multi-value")
def _():
    import collection.discover.pagination as pg
    pg.Link.rels = property(lambda self: (self.param("rel").lower(),) if self.param("rel") else ())


@fault("pagination-link-rel-unquoted-ignored")
def _():
    _link_target(lambda original, values: original(values) if any('rel="next"' in v for v in values) else None)


@fault("pagination-link-relative-against-root")
def _():
    import collection.discover.pagination as pg
    from collection.urls import origin_of
    D = _driver()

    def make(original):
        def _next_page(self, response, parsed, base):
            if self.config.pagination.kind == pg.LINK_HEADER:
                base = origin_of(base) + "/"
            return original(self, response, parsed, base)
        return _next_page
    _wrap_method(D.DiscoveryState, "_next_page", make)


def _raw_next(state, response, parsed):
    import collection.discover.pagination as pg
    if state.config.pagination.kind == pg.LINK_HEADER:
        return pg.next_link_target(response.header_values("link"))
    if state.config.pagination.kind == pg.NEXT_SELECTOR:
        return parsed.next_link
    return None


@fault("pagination-next-off-origin-followed")
def _():
    from dataclasses import replace
    from collection.urls import UrlError, canonicalise, origin_of
    D = _driver()

    def make(original):
        def _next_page(self, response, parsed, base):
            raw = _raw_next(self, response, parsed)
            if raw is not None:
                try:
                    origin = origin_of(canonicalise(raw, base))
                    result = original(replace(self, allowed_origins=self.allowed_origins | {origin}), response, parsed, base)
                    return replace(result, allowed_origins=self.allowed_origins)
                except (UrlError, ValueError):
                    pass
            return original(self, response, parsed, base)
        return _next_page
    _wrap_method(D.DiscoveryState, "_next_page", make)


@fault("pagination-next-off-origin-silent")
def _():
    from dataclasses import replace
    D = _driver()

    def make(original):
        def _next_page(self, response, parsed, base):
            result = original(self, response, parsed, base)
            if result.stop == "next_unreachable":
                result = replace(result, failure=self.failure, stop="no_next")
            return result
        return _next_page
    _wrap_method(D.DiscoveryState, "_next_page", make)


@fault("pagination-next-selector-no-match-failure")
def _():
    from dataclasses import replace
    import collection.discover.pagination as pg
    D = _driver()

    def make(original):
        def _next_page(self, response, parsed, base):
            if self.config.pagination.kind == pg.NEXT_SELECTOR and parsed.next_link is None:
                return replace(self, failure=self.failure or response.url)._finish("listing_failed")
            return original(self, response, parsed, base)
        return _next_page
    _wrap_method(D.DiscoveryState, "_next_page", make)


@fault("pagination-next-selector-last-match")
def _():
    import collection.discover.html_index as Hx
    original = Hx.parse_html_listing
    _replace_everywhere(original, parsed_last(original))


def parsed_last(original):
    from dataclasses import replace
    import collection.discover.html_index as Hx

    def parse_html_listing(body, spec, charset=None):
        parsed = original(body, spec, charset)
        if not spec.next_selector:
            return parsed
        # the last match's href: reverse the document's matches by asking for each in turn
        hrefs = []
        probe_spec = replace(spec, records=spec.next_selector, attribute="href", next_selector=None)
        matches = original(body, probe_spec, charset)
        hrefs = list(matches.links)
        return replace(parsed, next_link=hrefs[-1] if hrefs else parsed.next_link)
    return parse_html_listing


@fault("pagination-none-follows-link")
def _():
    from dataclasses import replace
    import collection.discover.pagination as pg
    D = _driver()

    def make(original):
        def _advance(self, response, role, parsed):
            if self.config.kind == "json_api" and self.config.pagination.kind == pg.NONE and role == "listing" \
                    and pg.next_link_target(response.header_values("link")):
                result = original(_pagination(self, kind=pg.LINK_HEADER), response, role, parsed)
                return replace(result, config=self.config)
            return original(self, response, role, parsed)
        return _advance
    _wrap_method(D.DiscoveryState, "_advance", make)


@fault("pagination-offset-by-record-count")
def _():
    from dataclasses import replace
    import collection.discover.pagination as pg
    D = _driver()
    totals: dict[str, int] = {}

    def make(original):
        def _next_page(self, response, parsed, base):
            config = self.config.pagination
            if config.kind != pg.OFFSET_PARAMETER:
                return original(self, response, parsed, base)
            if self.index == 1:
                totals[self.base_url] = 0
            totals[self.base_url] = totals.get(self.base_url, 0) + parsed.record_count
            target = pg.with_parameter(self.base_url, config.parameter or "", str(config.start + totals[self.base_url]))
            if target in self.requested:
                return self._finish("repeated_address")
            if self.spent >= self.config.max_requests:
                return self._finish("max_requests")
            return replace(self, queue=((target, "listing"),), requested=self.requested | {target})
        return _next_page
    _wrap_method(D.DiscoveryState, "_next_page", make)


def _start_property(fn):
    import collection.discover.pagination as pg
    original = pg.PaginationConfig.start.fget
    pg.PaginationConfig.start = property(lambda self: fn(self, original))


@fault("pagination-offset-first-default-one")
def _():
    _start_property(lambda self, original: 1 if self.first is None and self.kind == "offset_parameter" else original(self))


@fault("pagination-page-first-default-zero")
def _():
    _start_property(lambda self, original: 0 if self.first is None and self.kind == "page_parameter" else original(self))


@fault("pagination-offset-step-ignored")
def _():
    import dataclasses
    import collection.discover.pagination as pg
    original = pg.numbered_url
    _replace_everywhere(original, lambda config, base, index: original(dataclasses.replace(config, step=1), base, index))


def _numbered_url(fn):
    import collection.discover.pagination as pg
    original = pg.numbered_url

    def numbered_url(config, base, index):
        if config.kind != pg.PAGE_PARAMETER:
            return original(config, base, index)
        return fn(config, base, index, original)
    _replace_everywhere(original, numbered_url)


def _split_query(url):
    base, _, fragment = url.partition("#")
    path, _, query = base.partition("?")
    return path, query, fragment


@fault("pagination-page-param-double-question")
def _():
    _numbered_url(lambda config, base, index, original: f"{base}?{config.parameter}={config.start + index}")


@fault("pagination-page-param-prepended")
def _():
    def prepend(config, base, index, original):
        path, query, _ = _split_query(base)
        pair = f"{config.parameter}={config.start + index}"
        return f"{path}?{pair}&{query}" if query else f"{path}?{pair}"
    _numbered_url(prepend)


@fault("pagination-page-param-replaces-query")
def _():
    _numbered_url(lambda config, base, index, original: f"{_split_query(base)[0]}?{config.parameter}={config.start + index}")


@fault("pagination-page-step-two")
def _():
    from dataclasses import replace
    _numbered_url(lambda config, base, index, original: original(config, base, index * 2))


@fault("pagination-page-first-request-bare")
def _():
    from dataclasses import replace
    import collection.discover.pagination as pg

    def make(original):
        def start(config, allowed_origins, *, max_pages=None):
            state = original(config, allowed_origins, max_pages=max_pages)
            if config.pagination.kind == pg.PAGE_PARAMETER and state.queue:
                state = replace(state, queue=((state.base_url, "listing"),), requested=frozenset({state.base_url}))
            return state
        return start
    _wrap_start(make)


@fault("pagination-repeat-compared-raw")
def _():
    from dataclasses import replace
    D = _driver()

    def make(original):
        def _next_page(self, response, parsed, base):
            raw = _raw_next(self, response, parsed)
            if raw is not None and raw not in self.requested:
                # the raw text was never requested: the (canonical) repeat goes unnoticed
                result = original(replace(self, requested=frozenset()), response, parsed, base)
                return replace(result, requested=self.requested | result.requested)
            return original(self, response, parsed, base)
        return _next_page
    _wrap_method(D.DiscoveryState, "_next_page", make)


@fault("pagination-repeated-address-not-detected")
def _():
    from dataclasses import replace
    import collection.discover.pagination as pg
    D = _driver()

    def make(original):
        def _next_page(self, response, parsed, base):
            if self.config.pagination.kind in (pg.LINK_HEADER, pg.NEXT_SELECTOR):
                result = original(replace(self, requested=frozenset()), response, parsed, base)
                return replace(result, requested=self.requested | result.requested)
            return original(self, response, parsed, base)
        return _next_page
    _wrap_method(D.DiscoveryState, "_next_page", make)



# --- budgets (collection.fetch.budgets.Budget) ----------------------------------------------
def _budget():
    import collection.fetch.budgets as B
    return B


def _budget_init(fn):
    B = _budget()
    original = B.Budget.__init__

    def __init__(self, max_requests, discovery_max_requests, *a, **kw):
        max_requests, discovery_max_requests = fn(max_requests, discovery_max_requests)
        original(self, max_requests, discovery_max_requests, *a, **kw)
    B.Budget.__init__ = __init__


def _free_requests(which):
    """Requests for which which(kind, cause) is true are not charged to limits.max_requests."""
    B = _budget()
    commit, left = B.Budget.commit, B.Budget.requests_left

    def commit_(self, reservation):
        commit(self, reservation)
        if which(reservation.kind, reservation.cause):
            self._free = getattr(self, "_free", 0) + 1
    B.Budget.commit = commit_
    B.Budget.requests_left = lambda self: left(self) + getattr(self, "_free", 0)


@fault("budget-max-requests-plus-one")
def _():
    _budget_init(lambda m, d: (m + 1, d))


@fault("budget-max-requests-minus-one")
def _():
    _budget_init(lambda m, d: (m - 1, d))


@fault("budget-max-requests-excludes-listing")
def _():
    B = _budget()
    _free_requests(lambda kind, cause: kind == B.LISTING)


@fault("budget-max-requests-excludes-redirects")
def _():
    B = _budget()
    _free_requests(lambda kind, cause: cause == B.REDIRECT)


@fault("budget-max-requests-excludes-retries")
def _():
    B = _budget()
    _free_requests(lambda kind, cause: cause == B.RETRY)


@fault("budget-exact-sum-redirect-completes")
def _():
    # hops are charged only when the final hop is off-origin; same-origin hops are free,
    # which the budget sees as: redirect hops of pages that land on an allowed origin cost nothing
    B = _budget()
    _free_requests(lambda kind, cause: kind == B.PAGE and cause == B.REDIRECT)


@fault("budget-max-requests-charges-robots")
def _():
    B = _budget()
    count, left = B.Budget.count_robots, B.Budget.requests_left

    def count_robots(self):
        count(self)
        self._robots_charged = getattr(self, "_robots_charged", 0) + 1
    B.Budget.count_robots = count_robots
    B.Budget.requests_left = lambda self: left(self) - getattr(self, "_robots_charged", 0)


@fault("budget-max-requests-hop-overrun")
def _():
    B = _budget()
    original = B.Budget.try_reserve

    def try_reserve(self, kind, cause, now):
        if kind == B.PAGE and cause in (B.REDIRECT, B.RETRY) and self.requests_left() <= 0:
            self.max_requests += 1          # the check is skipped: the hop runs past the budget
        return original(self, kind, cause, now)
    B.Budget.try_reserve = try_reserve


@fault("budget-source-bytes-exact-refused")
def _():
    B = _budget()
    original = B.Budget.charge_bytes

    def charge_bytes(self, count):
        remaining = self.bytes_remaining()
        if remaining is not None and count == remaining and count > 0:
            self._bytes += remaining
            self._deny(B.MAX_SOURCE_BYTES)
            return False
        return original(self, count)
    B.Budget.charge_bytes = charge_bytes



# --- coverage ------------------------------------------------------------------------------
def _merge_post(fn):
    """Rewrite what merge returns: fn(result, prepared, results) -> result."""
    import collection.merge.engine as M
    original = M.merge

    def merge(prepared, results, *a, **kw):
        results = list(results)
        return fn(original(prepared, results, *a, **kw), prepared, results)
    _replace_everywhere(original, merge)


def _cov(result, **changes):
    from dataclasses import replace
    return replace(result, coverage=replace(result.coverage, **changes))


def _recomplete(result):
    from collection.merge.coverage import is_complete
    c = result.coverage
    return _cov(result, complete=is_complete(discovery_complete=c.discovery_complete, pending=c.pending, failed=c.failed,
                                             truncated=result.truncated, budget_exhausted=c.budget_exhausted))


@fault("coverage-member-order-sorted")
def _():
    _coverage(lambda d: dict(sorted(d.items())))


@fault("coverage-null-members-omitted")
def _():
    _coverage(lambda d: {k: v for k, v in d.items() if v is not None})


@fault("coverage-truncated-as-member")
def _():
    import collection.merge.coverage as cov
    original = cov.Coverage.as_dict
    # the record writer knows truncated; here the merge's result carries it into the block
    _merge_post(lambda result, prepared, results: (setattr(cov, "_last_truncated", result.truncated), result)[1])
    cov.Coverage.as_dict = lambda self: {**original(self), "truncated": getattr(cov, "_last_truncated", False)}


@fault("coverage-complete-from-budget-null")
def _():
    _merge_post(lambda r, p, rs: _cov(r, complete=r.coverage.budget_exhausted is None))


@fault("coverage-complete-ignores-discovery")
def _():
    _merge_post(lambda r, p, rs: _cov(r, complete=r.coverage.pending == 0 and r.coverage.failed == 0
                                      and not r.truncated and r.coverage.budget_exhausted is None))


@fault("coverage-complete-ignores-failed")
def _():
    _merge_post(lambda r, p, rs: _cov(r, complete=r.coverage.discovery_complete and r.coverage.pending == 0
                                      and not r.truncated and r.coverage.budget_exhausted is None))


@fault("coverage-discovered-is-ledger-total")
def _():
    _merge_post(lambda r, p, rs: _cov(r, discovered=len(p.ledger)))


@fault("coverage-discovered-excludes-known")
def _():
    import collection.merge.engine as M
    before: dict = {}
    original = M.prepare

    def prepare(ledger, discovery, *a, **kw):
        before["ids"] = set(ledger)
        return original(ledger, discovery, *a, **kw)
    _replace_everywhere(original, prepare)
    _merge_post(lambda r, p, rs: _cov(r, discovered=sum(1 for page in p.discovery.pages if page.page_id not in before["ids"])))


@fault("coverage-discovered-counts-duplicates")
def _():
    _merge_post(lambda r, p, rs: _cov(r, discovered=r.coverage.discovered + r.coverage.duplicates_dropped))


@fault("coverage-fetched-excludes-new")
def _():
    _merge_post(lambda r, p, rs: _cov(r, fetched_this_run=r.coverage.unchanged + r.coverage.changed))


@fault("coverage-fetched-includes-failed")
def _():
    _merge_post(lambda r, p, rs: _cov(r, fetched_this_run=r.coverage.fetched_this_run + r.coverage.failed_this_run))


@fault("coverage-first-fetch-counted-changed")
def _():
    def first_fetches(r, p, rs):
        new = sum(1 for x in rs if x.outcome == "fetched" and p.ledger[x.page_id].content_sha256 is None)
        return _cov(r, changed=r.coverage.changed + new)
    _merge_post(first_fetches)


@fault("coverage-known-excludes-skipped")
def _():
    _merge_post(lambda r, p, rs: _cov(r, known=r.coverage.known - r.coverage.skipped))


@fault("coverage-failed-is-this-run-only")
def _():
    _merge_post(lambda r, p, rs: _recomplete(_cov(r, failed=r.coverage.failed_this_run)))


@fault("coverage-skipped-this-run-only")
def _():
    _merge_post(lambda r, p, rs: _cov(r, skipped=sum(1 for page in p.discovery.pages if page.unreachable)))


@fault("coverage-pending-excludes-clipped")
def _():
    _merge_post(lambda r, p, rs: _recomplete(_cov(r, pending=r.coverage.pending - len(r.clipped))))


@fault("coverage-clipped-complete")
def _():
    def before_clamp(r, p, rs):
        from collection.merge.coverage import is_complete
        c = r.coverage
        return _cov(r, complete=is_complete(discovery_complete=c.discovery_complete, pending=c.pending - len(r.clipped),
                                            failed=c.failed, truncated=False, budget_exhausted=c.budget_exhausted))
    _merge_post(before_clamp)


@fault("coverage-duplicates-dropped-per-id")
def _():
    import collection.discover.driver as D
    original = D.DiscoveryState._admit

    def _admit(self, parsed, base):
        state, ok = original(self, parsed, base)
        from dataclasses import replace
        from collection.urls import UrlError, canonicalise
        ids, seen_dupes = set(self.page_ids), set(getattr(self, "_dupe_ids", ()))
        extra = 0
        for link, explicit_id, _ in parsed.rows():
            try:
                pid = explicit_id if explicit_id is not None else canonicalise(link, base)
            except UrlError:
                continue
            if pid in ids:
                if pid in seen_dupes:
                    extra += 1
                seen_dupes.add(pid)
            ids.add(pid)
        state = replace(state, duplicates=state.duplicates - extra)
        object.__setattr__(state, "_dupe_ids", frozenset(seen_dupes))
        return state, ok
    D.DiscoveryState._admit = _admit


@fault("coverage-duplicates-dropped-counts-known")
def _():
    _merge_post(lambda r, p, rs: _cov(r, duplicates_dropped=r.coverage.duplicates_dropped + sum(
        1 for page in p.discovery.pages if page.page_id in _LEDGER_BEFORE.get("ids", ()))))
    _remember_ledger()


_LEDGER_BEFORE: dict = {}


def _remember_ledger():
    import collection.merge.engine as M
    original = M.prepare

    def prepare(ledger, discovery, *a, **kw):
        _LEDGER_BEFORE["ids"] = set(ledger)
        _LEDGER_BEFORE["rows"] = dict(ledger)
        return original(ledger, discovery, *a, **kw)
    _replace_everywhere(original, prepare)


@fault("coverage-discovery-requests-excludes-terminal-empty")
def _():
    def fewer(r, p, rs):
        if p.discovery.stop_reason == "empty_page":
            return _cov(r, discovery_requests=r.coverage.discovery_requests - 1)
        return r
    _merge_post(fewer)


@fault("coverage-discovery-incomplete-on-repeat")
def _():
    _merge_post(lambda r, p, rs: _recomplete(_cov(r, discovery_complete=False))
                if p.discovery.stop_reason in ("repeated_address", "repeated_token") else r)


@fault("coverage-discovery-complete-at-ceiling")
def _():
    _merge_post(lambda r, p, rs: _recomplete(_cov(r, discovery_complete=p.discovery.failure is None))
                if p.discovery.stop_reason == "max_requests" else r)


@fault("coverage-budget-discovery-ceiling-named")
def _():
    _merge_post(lambda r, p, rs: _recomplete(_cov(r, budget_exhausted=r.coverage.budget_exhausted or "max_requests"))
                if p.discovery.stop_reason == "max_requests" else r)


@fault("coverage-discovery-failure-names-pattern")
def _():
    def pattern(r, p, rs):
        if r.coverage.discovery_failure is not None:
            return _cov(r, discovery_failure=_RECIPE.get("discovery_url") or r.coverage.discovery_failure)
        return r
    _remember_recipe()
    _merge_post(pattern)


_RECIPE: dict = {}


def _remember_recipe():
    import collection.recipe.registration as R
    original = R.register_bytes

    def register_bytes(data):
        result = original(data)
        try:
            import json as _json
            _RECIPE["discovery_url"] = _json.loads(data)["collection"]["discovery"].get("url")
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
        return result
    _replace_everywhere(original, register_bytes)


@fault("coverage-failed-this-run-counts-attempts")
def _():
    # every attempt of a failed page counts: 1 + the retries the recipe allows
    import collection.fetch.fetcher as F
    original = F.Fetcher.__init__

    def __init__(self, *a, retries=2, **kw):
        _RECIPE["retries"] = retries
        original(self, *a, retries=retries, **kw)
    F.Fetcher.__init__ = __init__

    def attempts(r, p, rs):
        retryable = sum(1 for x in rs if x.outcome == "failed" and x.failure_code in ("http_status_500", "http_status_502",
                        "http_status_503", "http_status_504", "http_status_429", "timeout", "network_error"))
        return _cov(r, failed_this_run=r.coverage.failed_this_run + retryable * _RECIPE.get("retries", 0))
    _merge_post(attempts)


# --- order (collection.merge.planner.work_order) ---------------------------------------------
def _order(fn):
    """fn(choices, ledger, revisit, now) -> choices."""
    import collection.merge.planner as planner
    original = planner.work_order

    def work_order(ledger, revisit, now):
        return tuple(fn(original(ledger, revisit, now), ledger, revisit, now))
    _replace_everywhere(original, work_order)


@fault("order-failed-before-pending")
def _():
    _order(lambda cs, *_: (lambda p, f, r: f + p + r)(*_split(cs)))


@fault("order-failed-newest-first")
def _():
    def newest(cs, ledger, *_):
        p, f, r = _split(cs)
        return p + sorted(f, key=lambda c: ledger[c.page_id].failed_at or "", reverse=True) + r
    _order(newest)


@fault("order-interval-newest-first")
def _():
    def newest(cs, ledger, revisit, now):
        p, f, r = _split(cs)
        if revisit.kind == "interval":
            r = sorted(r, key=lambda c: ledger[c.page_id].last_fetched_at or "", reverse=True)
        return p + f + r
    _order(newest)


@fault("order-pending-by-page-id")
def _():
    _order(lambda cs, *_: (lambda p, f, r: sorted(p, key=lambda c: c.page_id) + f + r)(*_split(cs)))


@fault("order-revision-hint-by-page-id")
def _():
    _order(lambda cs, ledger, revisit, now: (lambda p, f, r: p + f + (sorted(r, key=lambda c: c.page_id)
                                              if revisit.kind == "revision_hint" else r))(*_split(cs)))


@fault("order-revisit-before-failed")
def _():
    _order(lambda cs, *_: (lambda p, f, r: p + r + f)(*_split(cs)))


@fault("order-new-pending-before-carried")
def _():
    _remember_ledger()

    def new_first(cs, ledger, *_):
        p, f, r = _split(cs)
        carried = _LEDGER_BEFORE.get("ids", set())
        return [c for c in p if c.page_id not in carried] + [c for c in p if c.page_id in carried] + f + r
    _order(new_first)


@fault("order-discovery-ordinal-reassigned")
def _():
    import collection.merge.engine as M
    from dataclasses import replace
    original = M.prepare

    def prepare(ledger, discovery, *a, **kw):
        prepared = original(ledger, discovery, *a, **kw)
        listed = {page.page_id: ordinal for ordinal, page in enumerate(discovery.pages, 1)}
        rows = {pid: replace(row, discovery_ordinal=listed[pid]) if pid in listed else row
                for pid, row in prepared.ledger.items()}
        return replace(prepared, ledger=rows)
    _replace_everywhere(original, prepare)


@fault("order-page-chosen-twice")
def _():
    import collection.merge.planner as planner
    original = planner.Planner.report

    def report(self, result):
        original(self, result)
        if result.outcome == "failed" and not getattr(self, "_again", None):
            self._again = True
            choice = next(c for c in self._queue if c.page_id == result.page_id)
            self._queue = self._queue + (planner.Choice(choice.page_id, choice.url, planner.WHY_FAILED),)
    planner.Planner.report = report


# --- revisit -------------------------------------------------------------------------------
def _due(fn):
    """fn(row, revisit, now, original) -> bool."""
    import collection.merge.planner as planner
    original = planner.revisit_due
    _replace_everywhere(original, lambda row, revisit, now: fn(row, revisit, now, original))


def _age(row, now):
    from collection.merge.planner import parse_time
    return (now - parse_time(row.last_fetched_at)).total_seconds()


@fault("revisit-interval-boundary-due")
def _():
    _due(lambda row, revisit, now, original: (_age(row, now) >= revisit.seconds if revisit.kind == "interval"
                                              and row.last_fetched_at else original(row, revisit, now)))


@fault("revisit-interval-late")
def _():
    _remember_min_interval()
    _due(lambda row, revisit, now, original: (_age(row, now) > revisit.seconds + _RECIPE.get("min_interval", 1)
                                              if revisit.kind == "interval" and row.last_fetched_at
                                              else original(row, revisit, now)))


def _remember_min_interval():
    import collection.recipe.registration as R
    original = R.register_bytes

    def register_bytes(data):
        try:
            import json as _json
            _RECIPE["min_interval"] = _json.loads(data)["collection"]["pages"].get("min_interval_seconds", 1)
        except (ValueError, KeyError, TypeError, AttributeError):
            pass
        return original(data)
    _replace_everywhere(original, register_bytes)


@fault("revisit-interval-whole-hours")
def _():
    _due(lambda row, revisit, now, original: (_age(row, now) // 3600 * 3600 > revisit.seconds
                                              if revisit.kind == "interval" and row.last_fetched_at
                                              else original(row, revisit, now)))


@fault("revisit-interval-from-discovery")
def _():
    from dataclasses import replace
    _due(lambda row, revisit, now, original: original(replace(row, last_fetched_at=row.discovered_at)
                                                      if revisit.kind == "interval" else row, revisit, now))


@fault("revisit-hint-fetches-unmoved")
def _():
    _due(lambda row, revisit, now, original: (row.revision_hint is not None if revisit.kind == "revision_hint"
                                              else original(row, revisit, now)))


@fault("revisit-hint-compares-last-seen")
def _():
    # the ledger's revision_hint is refreshed at discovery before the comparison: never a move
    _due(lambda row, revisit, now, original: (False if revisit.kind == "revision_hint" else original(row, revisit, now)))


@fault("revisit-hint-null-revisited")
def _():
    _due(lambda row, revisit, now, original: ((row.revision_hint or "") != (row.revision_hint_at_fetch or "") or
                                              row.revision_hint is None) if revisit.kind == "revision_hint"
         else original(row, revisit, now))


@fault("revisit-hint-normalised")
def _():
    from datetime import datetime

    def instant(text):
        try:
            return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        except (ValueError, AttributeError):
            return text

    def due(row, revisit, now, original):
        if revisit.kind == "revision_hint" and row.revision_hint is not None:
            return instant(row.revision_hint) != instant(row.revision_hint_at_fetch)
        return original(row, revisit, now)
    _due(due)


@fault("revisit-never-refetches-fetched")
def _():
    _due(lambda row, revisit, now, original: True if revisit.kind == "never" else original(row, revisit, now))


@fault("revisit-never-skips-failed")
def _():
    _order(lambda cs, ledger, revisit, now: [c for c in cs if not (c.why == "failed" and revisit.kind == "never")])


@fault("revisit-interval-ignored-when-hint")
def _():
    def both(row, revisit, now, original):
        if revisit.kind == "interval" and row.revision_hint is not None and row.revision_hint != row.revision_hint_at_fetch:
            return True
        return original(row, revisit, now)
    _due(both)


@fault("revisit-unlisted-excluded")
def _():
    _remember_listed()
    _order(lambda cs, ledger, revisit, now: [c for c in cs if c.why == "pending" or c.page_id in _LISTED.get("ids", set())])


_LISTED: dict = {}


def _remember_listed():
    import collection.merge.engine as M
    original = M.prepare

    def prepare(ledger, discovery, *a, **kw):
        _LISTED["ids"] = {p.page_id for p in discovery.pages}
        return original(ledger, discovery, *a, **kw)
    _replace_everywhere(original, prepare)


@fault("revisit-hint-at-fetch-not-updated")
def _():
    from dataclasses import replace
    _remember_ledger()
    _merge_post(lambda r, p, rs: replace(r, ledger={pid: replace(row, revision_hint_at_fetch=p.ledger[pid].revision_hint_at_fetch)
                                                   if pid in p.ledger and p.ledger[pid].content_sha256 else row
                                                   for pid, row in r.ledger.items()}))



# --- URLs and origins (collection.urls) ---------------------------------------------------------
def _canon(fn):
    """fn(original, link, base) -> canonical URL (or raises UrlError)."""
    import collection.urls as U
    original = U.canonicalise
    _replace_everywhere(original, lambda link, base=None: fn(original, link, base))


def _parts(url):
    from urllib.parse import urlsplit as split
    return split(url)


def _absolute(link):
    return "://" in link.strip()[:12]


@fault("url-dot-segments-kept")
def _():
    def keep(original, link, base):
        url = original(link, base)
        if _absolute(link):
            raw = _parts(link.strip())
            p = _parts(url)
            return urlunsplit((p.scheme, p.netloc, raw.path, p.query, ""))
        return url
    _canon(keep)


@fault("url-empty-path-slash")
def _():
    def slash(original, link, base):
        url = original(link, base)
        p = _parts(url)
        return urlunsplit((p.scheme, p.netloc, "/", p.query, "")) if p.path == "" else url
    _canon(slash)


@fault("url-fragment-kept")
def _():
    def fragment(original, link, base):
        url = original(link, base)
        _, hash_mark, frag = link.strip().partition("#")
        return url + "#" + frag if hash_mark else url
    _canon(fragment)


@fault("url-host-not-lowercased")
def _():
    def as_found(original, link, base):
        url = original(link, base)
        source = link.strip() if _absolute(link) else (base or "")
        raw_host = _parts(source).hostname and _parts(source).netloc.rsplit("@", 1)[-1].split(":")[0]
        p = _parts(url)
        if raw_host and raw_host.lower() == (p.hostname or ""):
            netloc = p.netloc.replace(p.hostname, raw_host, 1)
            return urlunsplit((p.scheme, netloc, p.path, p.query, ""))
        return url
    _canon(as_found)


@fault("url-http-upgraded")
def _():
    def upgrade(original, link, base):
        url = original(link, base)
        return "https://" + url[len("http://"):] if url.startswith("http://") else url
    _canon(upgrade)


@fault("url-idn-not-punycoded")
def _():
    import collection.urls as U
    original = U._canonical_host

    def _canonical_host(host):
        if not host.isascii():
            return host.lower()
        return original(host)
    U._canonical_host = _canonical_host


@fault("url-path-lowercased")
def _():
    _canon(lambda original, link, base: (lambda p: urlunsplit(p._replace(path=p.path.lower())))(_parts(original(link, base))))


@fault("url-query-sorted")
def _():
    _canon(lambda original, link, base: (lambda p: urlunsplit(p._replace(query="&".join(sorted(p.query.split("&"))) if p.query else "")))(
        _parts(original(link, base))))


@fault("url-trailing-slash-stripped")
def _():
    def strip(original, link, base):
        url = original(link, base)
        p = _parts(url)
        return urlunsplit(p._replace(path=p.path[:-1])) if p.path.endswith("/") and p.path != "/" else url
    _canon(strip)


@fault("url-percent-case-normalised")
def _():
    import re as _re
    unreserved = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    def norm(text):
        def one(m):
            ch = chr(int(m.group(1), 16))
            return ch if ch in unreserved else "%" + m.group(1).upper()
        return _re.sub(r"%([0-9A-Fa-f]{2})", one, text)

    def fix(original, link, base):
        p = _parts(original(link, base))
        return urlunsplit(p._replace(path=norm(p.path), query=norm(p.query)))
    _canon(fix)


@fault("url-port-443-kept")
def _():
    def keep(original, link, base):
        url = original(link, base)
        if _absolute(link) and ":443" in _parts(link.strip()).netloc:
            p = _parts(url)
            return urlunsplit(p._replace(netloc=p.netloc + ":443"))
        return url
    _canon(keep)


def _unreachable(fn):
    import collection.urls as U
    original = U.unreachable_reason
    _replace_everywhere(original, lambda url, allowed: fn(original, url, allowed))


@fault("url-port-8443-allowed")
def _():
    def hosts_only(original, url, allowed):
        p = _parts(url)
        if p.port and p.hostname and f"https://{p.hostname}" in allowed:
            return None
        return original(url, allowed)
    _unreachable(hosts_only)


@fault("url-trailing-dot-host-allowed")
def _():
    def strip_dot(original, url, allowed):
        p = _parts(url)
        if p.hostname and p.hostname.endswith("."):
            return original(urlunsplit(p._replace(netloc=p.netloc.replace(p.hostname, p.hostname[:-1], 1))), allowed)
        return original(url, allowed)
    _unreachable(strip_dot)


@fault("url-scheme-not-lowercased")
def _():
    def as_found(original, link, base):
        url = original(link, base)
        raw = link.strip()
        if _absolute(raw) and raw.split(":", 1)[0] != raw.split(":", 1)[0].lower():
            return raw.split(":", 1)[0] + url[url.index(":"):]
        return url
    _canon(as_found)


@fault("url-userinfo-stripped")
def _():
    def strip(original, link, base):
        url = original(link, base)
        p = _parts(url)
        return urlunsplit(p._replace(netloc=p.netloc.rsplit("@", 1)[1])) if "@" in p.netloc else url
    _canon(strip)


@fault("url-skipped-origin-fetched")
def _():
    import collection.merge.planner as planner

    def with_skipped(cs, ledger, revisit, now):
        extra = [planner.Choice(r.page_id, r.url, planner.WHY_PENDING) for r in ledger.values()
                 if r.state == "skipped_origin" and r.landed_url is None]
        return list(cs) + extra
    _order(with_skipped)


@fault("url-relative-against-discovery")
def _():
    D = _driver()
    original = D.DiscoveryState._admit

    def _admit(self, parsed, base):
        return original(self, parsed, self.base_url or base)
    D.DiscoveryState._admit = _admit


def _redirect(fn):
    import collection.fetch.fetcher as F
    original = F.redirect_decision
    _replace_everywhere(original, lambda current, location, allowed, seen, hops: fn(original, current, location, allowed, seen, hops))


@fault("url-redirect-location-relative-root")
def _():
    from collection.urls import origin_of
    _redirect(lambda original, current, location, allowed, seen, hops: original(
        origin_of(current) + "/", location, allowed, seen, hops))


@fault("url-redirect-offsite-followed")
def _():
    from collection.urls import UrlError, canonicalise, origin_of

    def follow(original, current, location, allowed, seen, hops):
        try:
            extra = {origin_of(canonicalise(location, current))} if location else set()
        except (UrlError, ValueError):
            extra = set()
        return original(current, location, frozenset(allowed) | extra, seen, hops)
    _redirect(follow)
    import collection.fetch.egress as E        # the fetch then reaches the other origin
    if hasattr(E.Egress, "check"):
        E.Egress.check = lambda self, *a, **kw: None


@fault("url-redirect-to-http-followed")
def _():
    from collection.urls import UrlError, canonicalise, unreachable_reason

    def follow(original, current, location, allowed, seen, hops):
        verdict, target, why = original(current, location, allowed, seen, hops)
        if verdict == "skipped_origin" and target and target.startswith("http://"):
            try:
                https = "https://" + canonicalise(target)[len("http://"):]
            except UrlError:
                return verdict, target, why
            if unreachable_reason(https, frozenset(allowed)) is None:
                return "follow", target, ""      # the scheme is not checked: the http address is requested
        return verdict, target, why
    _redirect(follow)


@fault("url-redirect-landed-not-recorded")
def _():
    from dataclasses import replace
    _merge_pre(lambda prepared, results, kw: [replace(r, landed_url=None) if r.outcome == "skipped_origin" else r for r in results])


@fault("url-redirect-offsite-counted-failed")
def _():
    from dataclasses import replace
    import collection.merge.engine as M
    original = M.merge

    def merge(prepared, results, *a, **kw):
        results = [replace(r, outcome="failed", failure_code="skipped_origin") if r.outcome == "skipped_origin" else r
                   for r in results]
        return original(prepared, results, *a, **kw)
    _replace_everywhere(original, merge)


def _prepare_post(fn):
    import collection.merge.engine as M
    original = M.prepare

    def prepare(ledger, discovery, *a, **kw):
        return fn(original(ledger, discovery, *a, **kw), ledger, discovery, a, kw)
    _replace_everywhere(original, prepare)


def _keep_skipped(prepared, ledger, which):
    from dataclasses import replace
    rows = dict(prepared.ledger)
    for pid in prepared.reopened:
        if which(ledger[pid], rows[pid]):
            rows[pid] = replace(rows[pid], state="skipped_origin", landed_url=ledger[pid].landed_url,
                                failure_code="skipped_origin", failure_class=ledger[pid].failure_class)
    return replace(prepared, ledger=rows, reopened=tuple(p for p in prepared.reopened if not which(ledger[p], rows[p])))


@fault("url-recheck-never")
def _():
    _prepare_post(lambda prepared, ledger, discovery, a, kw: _keep_skipped(prepared, ledger, lambda old, new: True))


@fault("url-recheck-landed-for-listed")
def _():
    _prepare_post(lambda prepared, ledger, discovery, a, kw: _keep_skipped(
        prepared, ledger, lambda old, new: old.landed_url is None))


@fault("url-skipped-relisted-new-url-ignored")
def _():
    from collection.urls import unreachable_reason

    def keep(prepared, ledger, discovery, a, kw):
        allowed = tuple(kw.get("allowed_origins") or ())

        def moved_only(old, new):
            if old.landed_url is None:
                return False
            return unreachable_reason(old.landed_url, allowed) is not None
        return _keep_skipped(prepared, ledger, moved_only)
    _prepare_post(keep)


@fault("url-recheck-listed-for-redirect")
def _():
    from dataclasses import replace

    def reopen(prepared, ledger, discovery, a, kw):
        rows = dict(prepared.ledger)
        listed = {p.page_id: p for p in discovery.pages}
        reopened = list(prepared.reopened)
        for pid, row in rows.items():
            if row.state == "skipped_origin" and pid in listed and not listed[pid].unreachable and pid not in reopened:
                rows[pid] = replace(row, state="pending", landed_url=None, failure_code=None, failure_class=None)
                reopened.append(pid)
        return replace(prepared, ledger=rows, reopened=tuple(sorted(reopened)))
    _prepare_post(reopen)


# --- robots (collection.fetch.robots) -----------------------------------------------------------
def _robots():
    import collection.fetch.robots as R
    return R


def _policy(fn):
    R = _robots()
    original = R.robots_policy_for_response
    _replace_everywhere(original, lambda status, body, complete: fn(original, status, body, complete))


@fault("robots-4xx-disallow-all")
def _():
    R = _robots()
    _policy(lambda original, status, body, complete: R.DISALLOW_ALL if status is not None and 400 <= status < 500
            else original(status, body, complete))


@fault("robots-5xx-allow-all")
def _():
    R = _robots()
    _policy(lambda original, status, body, complete: R.ALLOW_ALL if status is not None and 500 <= status < 600
            else original(status, body, complete))


@fault("robots-truncated-allow-all")
def _():
    R = _robots()
    _policy(lambda original, status, body, complete: R.parse_robots(body or b"")
            if status is not None and 200 <= status < 300 and not complete else original(status, body, complete))


@fault("robots-parse-limit-64k")
def _():
    R = _robots()
    R.MAX_PARSE_BYTES = 64 * 1024


def _verdict(fn):
    R = _robots()
    original = R.RobotsRules.verdict
    R.RobotsRules.verdict = lambda self, token, path: fn(original, self, token, path)


def _rules_for(self, token):
    R = _robots()
    return [rule for group in self.groups_for(token) for rule in group.rules]


def _decide(rules, path, pick):
    R = _robots()
    matching = [r for r in rules if r.matches(path)]
    if not matching:
        return R.Verdict(True, None, None)
    best = pick(matching)
    return R.Verdict(best.allow, best.text, best.line)


def _norm_path(path_and_query):
    R = _robots()
    path = R.normalise(path_and_query or "/")
    return path if path.startswith("/") else "/" + path


@fault("robots-disallow-wins-tie")
def _():
    R = _robots()

    def verdict(original, self, token, path_and_query):
        path = _norm_path(path_and_query)
        if path == "/robots.txt" or self.basis == R.DISALLOW_ALL_BASIS:
            return original(self, token, path_and_query)
        return _decide(_rules_for(self, token), path,
                       lambda ms: max(ms, key=lambda r: (r.priority, not r.allow)))
    _verdict(verdict)


@fault("robots-first-match")
def _():
    R = _robots()

    def verdict(original, self, token, path_and_query):
        path = _norm_path(path_and_query)
        if path == "/robots.txt" or self.basis == R.DISALLOW_ALL_BASIS:
            return original(self, token, path_and_query)
        return _decide(_rules_for(self, token), path, lambda ms: ms[0])
    _verdict(verdict)


@fault("robots-query-ignored")
def _():
    _verdict(lambda original, self, token, path: original(self, token, path.split("?", 1)[0]))


@fault("robots-ignored")
def _():
    _verdict(lambda original, self, token, path: _robots().Verdict(True, None, None))


@fault("robots-token-case-sensitive")
def _():
    R = _robots()
    original = R.RobotsRules.groups_for

    def groups_for(self, token):
        named = tuple(g for g in self.groups if token.strip() in g.agents)   # agents are stored lowercased
        return named or tuple(g for g in self.groups if "*" in g.agents)
    R.RobotsRules.groups_for = groups_for


@fault("robots-token-full-ua")
def _():
    R = _robots()

    def groups_for(self, token):
        full = f"{token}-PublicHttps/1.0".lower()
        named = tuple(g for g in self.groups if full in g.agents)
        return named or tuple(g for g in self.groups if "*" in g.agents)
    R.RobotsRules.groups_for = groups_for


@fault("robots-groups-not-merged")
def _():
    R = _robots()
    original = R.RobotsRules.groups_for
    R.RobotsRules.groups_for = lambda self, token: original(self, token)[:1]


@fault("robots-star-ignored")
def _():
    R = _robots()

    def groups_for(self, token):
        wanted = token.strip().lower()
        return tuple(g for g in self.groups if wanted and wanted in g.agents)
    R.RobotsRules.groups_for = groups_for


@fault("robots-star-merged-with-own")
def _():
    R = _robots()

    def groups_for(self, token):
        wanted = token.strip().lower()
        return tuple(g for g in self.groups if (wanted and wanted in g.agents) or "*" in g.agents)
    R.RobotsRules.groups_for = groups_for


def _rule_make(fn):
    R = _robots()
    original = R._rule
    R._rule = lambda allow, value, text, line: fn(original, allow, value, text, line)


@fault("robots-dollar-ignored")
def _():
    _rule_make(lambda original, allow, value, text, line: original(allow, value[:-1] if value.endswith("$") else value, text, line))


@fault("robots-dollar-literal")
def _():
    _rule_make(lambda original, allow, value, text, line: original(allow, value[:-1] + "%24" if value.endswith("$") else value, text, line))


@fault("robots-wildcard-literal")
def _():
    _rule_make(lambda original, allow, value, text, line: original(allow, value.replace("*", "%2A"), text, line))


@fault("robots-percent-not-normalised")
def _():
    R = _robots()
    original = R.normalise
    R.normalise = lambda text, *, pattern=False: text if pattern else original(text, pattern=pattern)


@fault("robots-empty-disallow-blocks-all")
def _():
    R = _robots()
    original = R._parse

    def _parse(text):
        import re as _re
        data = text if isinstance(text, bytes) else text.encode("utf-8", "surrogateescape")
        data = _re.sub(rb"(?im)^([ \t]*disallow[ \t]*:)[ \t]*(#.*)?$", rb"\1 /", data)
        return original(data)
    R._parse = _parse


@fault("robots-disallowed-requested")
def _():
    import collection.fetch.fetcher as F
    original = F.Fetcher._robots_allow

    def _robots_allow(self, url):
        allowed = original(self, url)
        if not allowed:
            self._disallowed_pending = url
        return allowed
    # the page is requested first and its answer then discarded
    fetch_original = F.Fetcher._fetch

    def _fetch(self, spec, tally):
        from collection.fetch import budgets as B
        if self.robots_enabled and not original(self, spec.url):
            try:
                result = self._attempts(spec, spec.url, B.INITIAL, tally)
                if hasattr(result, "close"):
                    result.close()
            except Exception:  # noqa: BLE001
                pass
        return fetch_original(self, spec, tally)
    F.Fetcher._fetch = _fetch


@fault("robots-disallowed-wrong-code")
def _():
    from dataclasses import replace
    _merge_pre(lambda prepared, results, kw: [replace(r, failure_code="http_status_403") if r.failure_code == "robots_disallowed" else r for r in results])


@fault("robots-fetched-per-page")
def _():
    import collection.fetch.fetcher as F
    original = F.Fetcher._robots_allow

    def _robots_allow(self, url):
        from collection.urls import origin_of
        # forget it: asked again before every page (the cache is keyed by origin and allowlist)
        getattr(self, "_robots", {}).pop((origin_of(url), getattr(self, "allowed", None)), None)
        return original(self, url)
    F.Fetcher._robots_allow = _robots_allow


@fault("robots-redirect-onsite-not-followed")
def _():
    import collection.fetch.fetcher as F
    original = F.Fetcher._fetch_robots
    R = _robots()

    def _fetch_robots(self, origin, tally):
        send = self._send

        def no_redirect(kind, url, cause, t, headers):
            response = send(kind, url, cause, t, headers)
            if response.status in F.REDIRECT_STATUSES:
                response.close()
                raise _RobotsUnreachable()
            return response
        self._send = no_redirect
        try:
            return original(self, origin, tally)
        except _RobotsUnreachable:
            return R.DISALLOW_ALL
        finally:
            del self._send
    F.Fetcher._fetch_robots = _fetch_robots


class _RobotsUnreachable(Exception):
    pass


@fault("robots-redirect-hops-unbounded")
def _():
    import collection.fetch.fetcher as F
    original = F.Fetcher._fetch_robots

    def _fetch_robots(self, origin, tally):
        saved = F.MAX_REDIRECTS
        F.MAX_REDIRECTS = 50
        try:
            return original(self, origin, tally)
        finally:
            F.MAX_REDIRECTS = saved
    F.Fetcher._fetch_robots = _fetch_robots


def _robots_redirects(make):
    """While robots.txt is fetched (and only then), redirects are judged by make(decision)."""
    import collection.fetch.fetcher as F
    original = F.Fetcher._fetch_robots

    def _fetch_robots(self, origin, tally):
        decision = F.redirect_decision
        F.redirect_decision = make(decision)
        try:
            return original(self, origin, tally)
        finally:
            F.redirect_decision = decision
    F.Fetcher._fetch_robots = _fetch_robots


@fault("robots-redirect-offsite-followed")
def _():
    def make(decision):
        def anywhere(current, location, allowed, seen, hops):
            from collection.urls import canonicalise, origin_of
            try:
                allowed = frozenset(allowed) | {origin_of(canonicalise(location, current))}
            except Exception:  # noqa: BLE001
                pass
            return decision(current, location, allowed, seen, hops)
        return anywhere
    _robots_redirects(make)


@fault("robots-redirect-offsite-allow-all")
def _():
    def make(decision):
        def unavailable(current, location, allowed, seen, hops):
            verdict, target, why = decision(current, location, allowed, seen, hops)
            # an off-list target read as RFC 9309's "unavailable": allow all
            return ("fail_no_location", target, why) if verdict == "skipped_origin" else (verdict, target, why)
        return unavailable
    _robots_redirects(make)


# --- media types --------------------------------------------------------------------------------
def _listing_types(kind, fn):
    D = _driver()
    D.ACCEPTED_MEDIA_TYPES[kind] = tuple(fn(D.ACCEPTED_MEDIA_TYPES[kind]))


def _page_types(family, fn):
    from dataclasses import replace
    import collection.readers.registry as Rg
    Rg.FAMILIES[family] = replace(Rg.FAMILIES[family], media_types=tuple(fn(Rg.FAMILIES[family].media_types)))


@fault("media-html-xhtml-refused")
def _():
    _listing_types("html_index", lambda ts: [t for t in ts if t != "application/xhtml+xml"])


@fault("media-json-vnd-refused")
def _():
    _listing_types("json_api", lambda ts: [t for t in ts if t != "application/vnd.api+json"])


@fault("media-sitemap-rss-refused")
def _():
    _listing_types("sitemap", lambda ts: [t for t in ts if t != "application/rss+xml"])


@fault("media-json-text-plain-accepted")
def _():
    _listing_types("json_api", lambda ts: list(ts) + ["text/plain"])


@fault("media-html-tabular-xhtml-refused")
def _():
    _page_types("html.tabular", lambda ts: ["text/html"])


@fault("media-json-tabular-ld-refused")
def _():
    _page_types("json.tabular", lambda ts: ["application/json"])


@fault("media-xml-tabular-rss")
def _():
    _page_types("xml.tabular", lambda ts: list(dict.fromkeys(list(ts) + ["application/xml", "text/xml", "application/rss+xml"])))


@fault("media-detail-wrong-type-decoded")
def _():
    import collection.readers.registry as Rg
    from dataclasses import replace
    for family in list(Rg.FAMILIES):
        Rg.FAMILIES[family] = replace(Rg.FAMILIES[family], media_types=())


@fault("media-case-sensitive")
def _():
    import collection.fetch.mediatypes as MT
    import collection.discover.common as C
    original = MT.media_type

    def media_type(content_type):
        found = original(content_type)
        if found is None or content_type is None:
            return found
        raw = content_type.split(";", 1)[0].strip()
        return raw if raw.lower() == found else found
    _replace_everywhere(original, media_type)
    common = C.media_type

    def listing_media_type(headers):
        found = common(headers)
        for name, value in reversed(tuple(headers)):
            if name.lower() == "content-type":
                raw = value.split(";", 1)[0].strip()
                return raw if raw.lower() == found else found
        return found
    _replace_everywhere(common, listing_media_type)


@fault("media-params-not-ignored")
def _():
    import collection.fetch.mediatypes as MT
    import collection.discover.common as C
    original = MT.media_type
    _replace_everywhere(original, lambda content_type: (content_type.strip().lower() if content_type else None))
    common = C.media_type

    def listing_media_type(headers):
        for name, value in reversed(tuple(headers)):
            if name.lower() == "content-type":
                return value.strip().lower()
        return common(headers)
    _replace_everywhere(common, listing_media_type)


@fault("media-missing-type-sniffed")
def _():
    import collection.fetch.mediatypes as MT
    original = MT.accepts
    _replace_everywhere(original, lambda content_type, accepted: True if content_type is None else original(content_type, accepted))
    import collection.readers.base as Rb
    reader_accepts = Rb.accepts
    Rb.accepts = lambda family_id, content_type: True if content_type is None else reader_accepts(family_id, content_type)
    D = _driver()
    refusal = D.DiscoveryState.refusal

    def sniffing(self, status, headers):
        headers = tuple(headers)
        if 200 <= status < 300 and not any(n.lower() == "content-type" for n, _ in headers):
            return None
        return refusal(self, status, headers)
    D.DiscoveryState.refusal = sniffing


@fault("media-listing-refusal-merge-invalid")
def _():
    D = _driver()
    original = D.DiscoveryState._failed

    def _failed(self, url, role, reason, message=""):
        if reason == "media_type_refused":
            from collection.recipe.refusal import RefusedError, Refusal
            raise RefusedError(Refusal("COLLECTION_MERGE_INVALID", "/collection/discovery/url",
                                       f"{url}: listing media type refused", "seeded fault"))
        return original(self, url, role, reason, message)
    D.DiscoveryState._failed = _failed


@fault("media-detail-wrong-code")
def _():
    from dataclasses import replace
    _merge_pre(lambda prepared, results, kw: [replace(r, failure_code="decode_error") if r.failure_code == "media_type_refused" else r for r in results])


# --- provenance and the CSV dialect --------------------------------------------------------------
@fault("provenance-column-order")
def _():
    import collection.merge.relation as Rel
    cols = list(Rel.PROVENANCE_COLUMNS)
    i, j = cols.index("page_content_sha256"), cols.index("page_revision")
    cols[i], cols[j] = cols[j], cols[i]
    Rel.PROVENANCE_COLUMNS = tuple(cols)
    _provenance(lambda a: a[:4] + [a[5], a[4]] + a[6:])

    # provenance_row takes (.., sha, revision, ..): swapped values under swapped names


@fault("provenance-columns-prepended")
def _():
    import collection.merge.relation as Rel
    original_cols = Rel.relation_columns
    _replace_everywhere(original_cols, lambda reader_columns: (*Rel.PROVENANCE_COLUMNS, *reader_columns))
    original_row = Rel.provenance_row

    def provenance_row(reader_row, *rest):
        row = original_row(reader_row, *rest)
        n = len(reader_row)
        return row[n:] + row[:n]
    _replace_everywhere(original_row, provenance_row)


def _csv_writer(fn):
    import collection.merge.csvio as C
    original = C.CsvWriter.writerows
    C.CsvWriter.writerows = lambda self, rows: fn(self, rows, original)


@fault("provenance-csv-crlf")
def _():
    import csv as _csv
    import collection.merge.csvio as C

    def writerows(self, rows, original):
        writer = _csv.writer(self._out)           # the default terminator: \r\n
        writer.writerows(rows)
    _csv_writer(writerows)


@fault("provenance-csv-quote-all")
def _():
    import csv as _csv

    def writerows(self, rows, original):
        _csv.writer(self._out, lineterminator="\n", quoting=_csv.QUOTE_ALL).writerows(rows)
    _csv_writer(writerows)


@fault("provenance-csv-newline-in-field")
def _():
    def writerows(self, rows, original):
        for row in rows:
            self._out.write(",".join('"' + f.replace('"', '""') + '"' if ("," in f or '"' in f) else f for f in row) + "\n")
    _csv_writer(writerows)


@fault("provenance-csv-bom")
def _():
    import collection.merge.csvio as C
    original = C.CsvWriter.__init__

    def __init__(self, out):
        original(self, out)
        out.write("\ufeff")
    C.CsvWriter.__init__ = __init__
    # only the relation's writer: the ledger is written with the same class, read back by name
    import collection.merge.ledger as Lg
    if hasattr(Lg, "CsvWriter"):
        Lg.CsvWriter = type("LedgerCsvWriter", (C.CsvWriter,), {"__init__": original})


@fault("provenance-ordinal-zero-based")
def _():
    _provenance(lambda a: a[:7] + [a[7] - 1])


@fault("provenance-ordinal-global")
def _():
    import collection.merge.engine as M
    counter = {"n": 0}
    original = M.merge

    def merge(*a, **kw):
        counter["n"] = 0
        return original(*a, **kw)
    _replace_everywhere(original, merge)

    def global_ordinal(a):
        counter["n"] += 1
        return a[:7] + [counter["n"]]
    _provenance(global_ordinal)


@fault("provenance-page-url-final")
def _():
    import collection.fetch.fetcher as F
    finals: dict[str, str] = {}
    original = F.Fetcher.fetch

    def fetch(self, spec):
        outcome = original(self, spec)
        if getattr(outcome, "final_url", None):
            finals[spec.url] = outcome.final_url
        return outcome
    F.Fetcher.fetch = fetch
    _provenance(lambda a: a[:2] + [finals.get(a[2], a[2])] + a[3:])


@fault("provenance-page-id-ignores-identity")
def _():
    D = _driver()
    original = D.DiscoveryState._admit

    def _admit(self, parsed, base):
        from dataclasses import replace
        return original(self, replace(parsed, page_ids=(None,) * len(parsed.page_ids)), base)
    D.DiscoveryState._admit = _admit


@fault("provenance-page-id-number-float")
def _():
    def floats(parsed, doc, spec, url):
        from dataclasses import replace
        ids = tuple(repr(float(p)) if p is not None and p.lstrip("-").isdigit() else p for p in parsed.page_ids)
        return replace(parsed, page_ids=ids)
    _json_listing(floats)


@fault("provenance-revision-not-text-integer")
def _():
    _provenance(lambda a: a[:5] + [f"{float(a[5])}"] + a[6:])


# --- merge ---------------------------------------------------------------------------------------
def _ledger_post(fn):
    """fn(new_row, old_row_or_None, result_or_None) -> row, for every ledger row merge returns."""
    from dataclasses import replace

    def post(r, p, rs):
        by_page = {x.page_id: x for x in rs}
        return replace(r, ledger={pid: fn(row, p.ledger.get(pid), by_page.get(pid)) for pid, row in r.ledger.items()})
    _merge_post(post)


@fault("merge-previous-digest-not-recorded")
def _():
    from dataclasses import replace
    _ledger_post(lambda row, old, res: replace(row, previous_content_sha256=None)
                 if old is not None and old.content_sha256 and row.content_sha256 != old.content_sha256 else row)


@fault("merge-previous-digest-is-new")
def _():
    from dataclasses import replace
    _ledger_post(lambda row, old, res: replace(row, previous_content_sha256=row.content_sha256)
                 if old is not None and old.content_sha256 and row.content_sha256 != old.content_sha256 else row)


@fault("merge-previous-digest-set-on-unchanged")
def _():
    from dataclasses import replace
    _ledger_post(lambda row, old, res: replace(row, previous_content_sha256=old.content_sha256)
                 if res is not None and res.outcome == "fetched" and old is not None and old.content_sha256 else row)


@fault("merge-failure-code-missing")
def _():
    from dataclasses import replace
    _ledger_post(lambda row, old, res: replace(row, failure_code=None, failure_class=None)
                 if res is not None and res.outcome == "failed" and res.failure_code in ("timeout", "network_error") else row)


@fault("merge-revision-hint-not-refreshed")
def _():
    from dataclasses import replace
    _remember_ledger()
    _merge_post(lambda r, p, rs: replace(r, ledger={
        pid: replace(row, revision_hint=_LEDGER_BEFORE["rows"][pid].revision_hint)
        if pid in _LEDGER_BEFORE.get("rows", {}) and not any(x.page_id == pid and x.outcome == "fetched" for x in rs) else row
        for pid, row in r.ledger.items()}))


@fault("merge-changed-revision-not-incremented")
def _():
    _changed_revision(lambda old_revision, new_revision: old_revision)


def _changed_revision(fn):
    """fn(ledger revision, merged revision) -> revision written for a changed page."""
    from dataclasses import replace
    import collection.merge.engine as M
    original = M.merge
    import collection.merge.relation as Rel
    prov = Rel.provenance_row
    state = {"changed": {}}

    def merge(prepared, results, *a, **kw):
        results = list(results)
        state["changed"] = {r.page_id: prepared.ledger[r.page_id].revision for r in results if r.outcome == "fetched"
                            and prepared.ledger[r.page_id].content_sha256
                            and prepared.ledger[r.page_id].content_sha256 != r.content_sha256}
        out = original(prepared, results, *a, **kw)
        rows = {pid: replace(row, revision=fn(state["changed"][pid], row.revision)) if pid in state["changed"] else row
                for pid, row in out.ledger.items()}
        return replace(out, ledger=rows)
    _replace_everywhere(original, merge)

    def provenance_row(reader_row, page_id, page_url, fetched_at, sha, revision, discovered_at, ordinal):
        if page_id in state["changed"]:
            revision = fn(state["changed"][page_id], revision)
        return prov(reader_row, page_id, page_url, fetched_at, sha, revision, discovered_at, ordinal)
    _replace_everywhere(prov, provenance_row)


@fault("merge-changed-revision-reset")
def _():
    _changed_revision(lambda old_revision, new_revision: 1)


@fault("merge-unchanged-revision-incremented")
def _():
    from dataclasses import replace
    _ledger_post(lambda row, old, res: replace(row, revision=row.revision + 1)
                 if res is not None and res.outcome == "fetched" and old is not None and old.content_sha256 == res.content_sha256 else row)


@fault("merge-digest-uppercase")
def _():
    from dataclasses import replace
    _provenance(lambda a: a[:4] + [a[4].upper()] + a[5:])
    _ledger_post(lambda row, old, res: replace(row, content_sha256=row.content_sha256.upper()) if row.content_sha256 else row)


@fault("merge-digest-prefixed")
def _():
    from dataclasses import replace
    _provenance(lambda a: a[:4] + ["sha256:" + a[4]] + a[5:])
    _ledger_post(lambda row, old, res: replace(row, content_sha256="sha256:" + row.content_sha256)
                 if row.content_sha256 and not row.content_sha256.startswith("sha256:") else row)


@fault("merge-corrections-not-reported")
def _():
    from dataclasses import replace
    _merge_post(lambda r, p, rs: replace(r, corrections=()))


@fault("merge-absent-page-rows-deleted")
def _():
    _drop_rows(lambda prepared, results: {pid for pid in prepared.ledger} - {p.page_id for p in prepared.discovery.pages})


@fault("merge-failed-refetch-deletes-rows")
def _():
    _drop_rows(lambda prepared, results: {r.page_id for r in results if r.outcome == "failed"
                                          and (r.failure_code or "").startswith("http_status_5")})


@fault("merge-gone-404-deletes-rows")
def _():
    _drop_rows(lambda prepared, results: {r.page_id for r in results if r.failure_code in ("http_status_404", "http_status_410")})


@fault("merge-redirect-offsite-deletes-rows")
def _():
    _drop_rows(lambda prepared, results: {r.page_id for r in results if r.outcome == "skipped_origin"})


@fault("robots-disallowed-deletes-rows")
def _():
    _drop_rows(lambda prepared, results: {r.page_id for r in results if r.failure_code == "robots_disallowed"})


@fault("merge-column-mismatch-deletes-rows")
def _():
    _drop_rows(lambda prepared, results: {r.page_id for r in results if r.outcome == "fetched" and r.rows
                                          and any(len(x) != len(r.rows[0]) or False for x in r.rows) or
                                          r.failure_code == "column_mismatch"})


@fault("merge-absent-page-ledger-row-deleted")
def _():
    from dataclasses import replace

    def drop(r, p, rs):
        keep = {x.page_id for x in p.discovery.pages} | {x.page_id for x in rs}
        return replace(r, ledger={pid: row for pid, row in r.ledger.items() if pid in keep})
    _merge_post(drop)


@fault("merge-changed-rows-unioned")
def _():
    import collection.merge.engine as M
    original = M._joined

    def _joined(predecessor, reader_columns, fresh):
        old = dict(M.iter_pages(iter(list(predecessor)), reader_columns)) if not isinstance(predecessor, list) else {}
        return original(predecessor, reader_columns, fresh)
    # the predecessor stream can be read once only: keep old rows of changed pages by merging here
    original_merge = M.merge

    def merge(prepared, results, predecessor_relation, out, **kw):
        text = list(predecessor_relation)
        old = dict(M.iter_pages(iter(text), kw["reader_columns"]))
        changed = {r.page_id for r in results if r.outcome == "fetched" and prepared.ledger[r.page_id].content_sha256
                   and prepared.ledger[r.page_id].content_sha256 != r.content_sha256}

        def joined(pred, cols, fresh):
            for pid, rows in original(pred, cols, fresh):
                yield pid, (old.get(pid, []) + rows) if pid in changed else rows
        M._joined = joined
        try:
            return original_merge(prepared, results, iter(text), out, **kw)
        finally:
            M._joined = original
    _replace_everywhere(original_merge, merge)


@fault("merge-changed-shorter-page-keeps-tail")
def _():
    import collection.merge.engine as M
    original = M._joined
    original_merge = M.merge

    def merge(prepared, results, predecessor_relation, out, **kw):
        text = list(predecessor_relation)
        old = dict(M.iter_pages(iter(text), kw["reader_columns"]))
        width = len(kw["reader_columns"])

        def joined(pred, cols, fresh):
            for pid, rows in original(pred, cols, fresh):
                if pid in fresh and pid in old and len(old[pid]) > len(rows):
                    rows = rows + old[pid][len(rows):]
                yield pid, rows
        M._joined = joined
        try:
            return original_merge(prepared, results, iter(text), out, **kw)
        finally:
            M._joined = original
    _replace_everywhere(original_merge, merge)


@fault("merge-unchanged-rows-reprovenanced")
def _():
    import collection.merge.engine as M
    # an unchanged page is re-decoded and written anew, as if its rows had gone missing; and
    # written whole, not as a restore that keeps the rows it still has (issue 15's merge)
    M._rows_complete = lambda row, present: False
    joined = M._joined
    M._joined = lambda predecessor, columns, fresh, restored=frozenset(): joined(predecessor, columns, fresh)


@fault("merge-replace-by-page-id-prefix")
def _():
    import collection.merge.engine as M
    original_merge, original_iter = M.merge, M.iter_pages
    changed: set[str] = set()

    def merge(prepared, results, *a, **kw):
        results = list(results)
        changed.clear()
        changed.update(r.page_id for r in results if r.outcome == "fetched" and prepared.ledger[r.page_id].content_sha256
                       and prepared.ledger[r.page_id].content_sha256 != r.content_sha256)
        return original_merge(prepared, results, *a, **kw)

    def iter_pages(stream, cols, **kw):
        for page_id, rows in original_iter(stream, cols, **kw):
            if not any(page_id.startswith(c) and page_id != c for c in changed):
                yield page_id, rows
    _replace_everywhere(original_merge, merge)
    _replace_everywhere(original_iter, iter_pages)


# --- timestamps ------------------------------------------------------------------------------------
@fault("timestamp-discovered-at-fetch-time")
def _():
    _provenance(lambda a: a[:6] + [a[3]] + a[7:])


@fault("timestamp-discovered-at-updated")
def _():
    _prepare_post(lambda prepared, ledger, discovery, a, kw: __import__("dataclasses").replace(
        prepared, ledger={pid: __import__("dataclasses").replace(row, discovered_at=row.last_seen_at)
                          if pid in {p.page_id for p in discovery.pages} else row for pid, row in prepared.ledger.items()}))


@fault("timestamp-failed-at-not-set")
def _():
    from dataclasses import replace
    _ledger_post(lambda row, old, res: replace(row, failed_at=None) if res is not None and res.outcome == "failed" else row)


@fault("timestamp-last-fetched-not-updated-unchanged")
def _():
    from dataclasses import replace
    _ledger_post(lambda row, old, res: replace(row, last_fetched_at=old.last_fetched_at)
                 if res is not None and res.outcome == "fetched" and old is not None and old.content_sha256 == res.content_sha256 else row)


@fault("timestamp-last-seen-not-refreshed")
def _():
    from dataclasses import replace
    _prepare_post(lambda prepared, ledger, discovery, a, kw: replace(
        prepared, ledger={pid: replace(row, last_seen_at=ledger[pid].last_seen_at) if pid in ledger else row
                          for pid, row in prepared.ledger.items()}))


@fault("timestamp-last-seen-unlisted")
def _():
    from dataclasses import replace

    def refresh(prepared, ledger, discovery, a, kw):
        listed = [r.last_seen_at for pid, r in prepared.ledger.items() if pid in {p.page_id for p in discovery.pages}]
        now = max(listed) if listed else None
        if now is None:
            return prepared
        return replace(prepared, ledger={pid: replace(row, last_seen_at=now) for pid, row in prepared.ledger.items()})
    _prepare_post(refresh)


def _times(transform):
    """Rewrite how the run writes its instants (collection.merge.outcomes.rfc3339)."""
    import collection.merge.outcomes as O
    original = O.rfc3339
    _replace_everywhere(original, lambda seconds: transform(seconds, original))


@fault("timestamp-fractional")
def _():
    from datetime import datetime, timezone
    _times(lambda s, original: datetime.fromtimestamp(s, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ"))


@fault("timestamp-offset-format")
def _():
    _times(lambda s, original: original(s)[:-1] + "+00:00")


@fault("timestamp-local-time")
def _():
    import time as _time
    _times(lambda s, original: _time.strftime("%Y-%m-%dT%H:%M:%S", _time.localtime(int(s) + 3600)) + "Z")


@fault("timestamp-wall-clock")
def _():
    import time as _time
    _provenance(lambda a: a[:3] + [__import__("collection.merge.outcomes", fromlist=["x"]).rfc3339(_time.time())] + a[4:])


@fault("timestamp-fetched-at-run-start")
def _():
    _prepare_post(lambda prepared, ledger, discovery, a, kw: (_RUN_START.__setitem__("at", kw.get("now")), prepared)[1])
    _provenance(lambda a: a[:3] + [_RUN_START.get("at") or a[3]] + a[4:])


_RUN_START: dict = {}


# --- truncation (the max_rows clamp) -----------------------------------------------------------------
@fault("truncation-clamp-strict")
def _():
    import collection.merge.engine as M
    M._write_clamped = lambda writer, pages, max_rows: _clamp(writer, pages, max_rows, strict=True)


def _clamp(writer, pages, max_rows, *, strict=False, split=False, first_whole=False):
    written, clipped = 0, []
    for page_id, rows in pages:
        if not rows:
            continue
        fits = max_rows is None or (written + len(rows) < max_rows if strict else written + len(rows) <= max_rows)
        if clipped or not fits:
            if split and not clipped and max_rows is not None and written < max_rows:
                writer.writerows(rows[:max_rows - written])
                written = max_rows
            elif not first_whole and written == 0 and not clipped:
                writer.writerows(rows[:max_rows])
                written = max_rows
            clipped.append(page_id)
            continue
        writer.writerows(rows)
        written += len(rows)
    return written, clipped


@fault("truncation-splits-page")
def _():
    import collection.merge.engine as M
    M._write_clamped = lambda writer, pages, max_rows: _clamp(writer, pages, max_rows, split=True)


@fault("truncation-first-page-dropped")
def _():
    import collection.merge.engine as M
    M._write_clamped = lambda writer, pages, max_rows: _clamp(writer, pages, max_rows, first_whole=True)


@fault("truncation-clipped-fetched")
def _():
    from dataclasses import replace

    def keep_fetched(r, p, rs):
        fetched = {x.page_id for x in rs if x.outcome == "fetched"}
        rows = {pid: replace(row, state="fetched") if pid in r.clipped and pid in fetched and row.state == "pending" else row
                for pid, row in r.ledger.items()}
        pending = sum(1 for x in rows.values() if x.state == "pending")
        return _recomplete(replace(_cov(r, pending=pending), ledger=rows))
    _merge_post(keep_fetched)


@fault("truncation-first-page-marked-fetched")
def _():
    from dataclasses import replace
    import collection.merge.engine as M
    original = M._write_clamped
    cut: dict = {}

    def _write_clamped(writer, pages, max_rows):
        pages = list(pages)
        written, clipped = original(writer, iter(pages), max_rows)
        first = next((pid for pid, rows in pages if rows), None)
        cut["page"] = first if clipped and first == clipped[0] and written > 0 else None
        return written, clipped
    M._write_clamped = _write_clamped

    def post(r, p, rs):
        pid = cut.get("page")
        if pid and r.ledger[pid].state == "pending" and any(x.page_id == pid and x.outcome == "fetched" for x in rs):
            rows = dict(r.ledger)
            rows[pid] = replace(rows[pid], state="fetched")
            return _recomplete(replace(_cov(r, pending=r.coverage.pending - 1), ledger=rows))
        return r
    _merge_post(post)


# What the last _write_clamped of the two truncation faults saw: whether max_rows was reached.
_MAXROWS: dict = {}


@fault("truncation-flag-at-exact-max")
def _():
    import collection.merge.engine as M
    original = M._write_clamped
    from dataclasses import replace

    def _write_clamped(writer, pages, max_rows):
        written, clipped = original(writer, pages, max_rows)
        _MAXROWS["hit"] = max_rows is not None and written >= max_rows
        return written, clipped
    M._write_clamped = _write_clamped
    _merge_post(lambda r, p, rs: _recomplete(replace(r, truncated=True)) if _MAXROWS.get("hit") and not r.truncated else r)


@fault("truncation-flag-below-max")
def _():
    import collection.merge.engine as M
    original = M._write_clamped
    from dataclasses import replace

    def _write_clamped(writer, pages, max_rows):
        written, clipped = original(writer, pages, max_rows)
        _MAXROWS["hit"] = max_rows is not None and written == max_rows
        return written, clipped
    M._write_clamped = _write_clamped
    _merge_post(lambda r, p, rs: replace(r, truncated=False) if r.truncated and not _MAXROWS.get("hit") else r)


@fault("truncation-legacy-not-repaired")
def _():
    import collection.merge.engine as M
    from dataclasses import replace
    _prepare_post(lambda prepared, ledger, discovery, a, kw: replace(
        prepared, ledger={pid: replace(row, state="fetched") if pid in prepared.repaired and ledger[pid].row_count is None else row
                          for pid, row in prepared.ledger.items()},
        repaired=tuple(p for p in prepared.repaired if ledger[p].row_count is not None)))


@fault("truncation-restore-increments-revision")
def _():
    from dataclasses import replace
    import collection.merge.engine as M
    import collection.merge.relation as Rel
    restored: set[str] = set()
    original, prov = M.merge, Rel.provenance_row

    def merge(prepared, results, *a, **kw):
        results = list(results)
        restored.clear()
        restored.update(x.page_id for x in results if x.outcome == "fetched" and prepared.ledger[x.page_id].state == "pending"
                        and prepared.ledger[x.page_id].content_sha256 == x.content_sha256)
        out = original(prepared, results, *a, **kw)
        return replace(out, ledger={pid: replace(row, revision=row.revision + 1) if pid in restored else row
                                    for pid, row in out.ledger.items()})

    def provenance_row(reader_row, page_id, page_url, fetched_at, sha, revision, discovered_at, ordinal):
        return prov(reader_row, page_id, page_url, fetched_at, sha, revision + (page_id in restored), discovered_at, ordinal)
    _replace_everywhere(original, merge)
    _replace_everywhere(prov, provenance_row)


@fault("truncation-restore-needs-change")
def _():
    import collection.merge.engine as M
    original = M._rows_complete
    # an unchanged digest keeps the (absent) predecessor rows: the repair is never written
    M._rows_complete = lambda row, present: True
    from dataclasses import replace
    original_merge = M.merge

    def merge(prepared, results, *a, **kw):
        rows = {pid: replace(row, state="fetched") if row.state == "pending" and row.content_sha256 else row
                for pid, row in prepared.ledger.items()}
        return original_merge(replace(prepared, ledger=rows), results, *a, **kw)
    _replace_everywhere(original_merge, merge)


@fault("truncation-clamp-fetch-order")
def _():
    import collection.merge.engine as M
    original = M._write_clamped

    def _write_clamped(writer, pages, max_rows):
        pages = list(pages)
        order = _FETCH_ORDER.get("ids", [])
        rank = {pid: i for i, pid in enumerate(order)}
        by_fetch = sorted(pages, key=lambda pr: (rank.get(pr[0], -1)))
        written, clipped, kept = 0, [], set()
        for page_id, rows in by_fetch:
            if rows and max_rows is not None and written + len(rows) > max_rows:
                clipped.append(page_id)
                continue
            kept.add(page_id)
            written += len(rows)
        for page_id, rows in pages:
            if page_id in kept:
                writer.writerows(rows)
        return written, sorted(clipped)
    M._write_clamped = _write_clamped
    _remember_fetch_order()


_FETCH_ORDER: dict = {"ids": []}


def _remember_fetch_order():
    import collection.merge.engine as M
    original = M.merge

    def merge(prepared, results, *a, **kw):
        results = list(results)
        _FETCH_ORDER["ids"] = [r.page_id for r in results]
        return original(prepared, results, *a, **kw)
    _replace_everywhere(original, merge)



# --- budgets: fetches, pages, retries, hops ---------------------------------------------------
def _planner():
    import collection.merge.planner as planner
    return planner


def _planner_cap(fn):
    P = _planner()
    original = P.Planner.__init__

    def __init__(self, ledger, *, max_fetches_per_run, **kw):
        original(self, ledger, max_fetches_per_run=max(1, max_fetches_per_run), **kw)
        self._max_fetches = fn(max_fetches_per_run)
        _RECIPE["max_fetches"] = max_fetches_per_run
    P.Planner.__init__ = __init__


@fault("budget-fetches-minus-one")
def _():
    _planner_cap(lambda cap: cap - 1)


@fault("budget-fetches-plus-one")
def _():
    _planner_cap(lambda cap: cap + 1)


@fault("budget-fetches-counts-failed")
def _():
    failures_use_fetches()     # this project wrote the same fault (budget-failures-use-fetches)


@fault("budget-fetches-excludes-unchanged")
def _():
    P = _planner()
    init, report = P.Planner.__init__, P.Planner.report

    def __init__(self, ledger, **kw):
        init(self, ledger, **kw)
        self._digests = {pid: row.content_sha256 for pid, row in ledger.items()}

    def report_(self, result):
        report(self, result)
        if result.outcome == "fetched" and result.content_sha256 and self._digests.get(result.page_id) == result.content_sha256:
            self.fetched -= 1
    P.Planner.__init__ = __init__
    P.Planner.report = report_


@fault("coverage-budget-named-when-exactly-fits")
def _():
    _planner_cap(lambda cap: cap)
    _merge_post(lambda r, p, rs: _recomplete(_cov(r, budget_exhausted="max_fetches_per_run"))
                if r.coverage.budget_exhausted is None and r.coverage.fetched_this_run >= _RECIPE.get("max_fetches", 10 ** 9) else r)


def _max_pages(fn):
    """fn(max_pages, ledger, discovery) -> the cap prepare and discovery use."""
    import collection.merge.engine as M
    import collection.discover.driver as D
    original = M.prepare

    def prepare(ledger, discovery, relation_rows, *, max_pages, **kw):
        _RECIPE["max_pages"] = max_pages
        return original(ledger, discovery, relation_rows, max_pages=fn(max_pages, ledger, discovery), **kw)
    _replace_everywhere(original, prepare)
    start = D.start

    def start_(config, allowed_origins, *, max_pages=None):
        return start(config, allowed_origins, max_pages=None if max_pages is None else fn(max_pages, {}, None))
    _replace_everywhere(start, start_)


@fault("budget-max-pages-minus-one")
def _():
    _max_pages(lambda cap, ledger, discovery: cap - 1)


@fault("budget-max-pages-plus-one")
def _():
    _max_pages(lambda cap, ledger, discovery: cap + 1)


@fault("budget-max-pages-this-run")
def _():
    def this_run(cap, ledger, discovery):
        if discovery is None:
            return cap
        listed = {p.page_id for p in discovery.pages}
        return cap + sum(1 for pid in ledger if pid not in listed)
    _max_pages(this_run)


@fault("budget-max-pages-not-reported")
def _():
    _merge_post(lambda r, p, rs: _recomplete(_cov(r, budget_exhausted=None)) if r.coverage.budget_exhausted == "max_pages" else r)


@fault("budget-max-pages-reported-when-exact")
def _():
    _max_pages(lambda cap, ledger, discovery: cap)
    _merge_post(lambda r, p, rs: _recomplete(_cov(r, budget_exhausted="max_pages"))
                if r.coverage.budget_exhausted is None and r.coverage.known == _RECIPE.get("max_pages") else r)


@fault("budget-deadline-not-reported")
def _():
    _merge_post(lambda r, p, rs: _recomplete(_cov(r, budget_exhausted=None)) if r.coverage.budget_exhausted == "deadline" else r)


@fault("budget-exhausted-exit-nonzero")
def _():
    import collection.run.loop as L
    from collection.recipe.refusal import RefusedError, Refusal
    original = L.execute

    def execute(*a, **kw):
        record = original(*a, **kw)
        if record.get("coverage", {}).get("budget_exhausted"):
            raise RefusedError(Refusal("BUDGET_EXHAUSTED", "/limits", "a budget ended the run", "seeded fault"))
        return record
    L.execute = execute


def _status(fn):
    import collection.fetch.fetcher as F
    original = F.status_decision
    F.status_decision = lambda status: fn(status, original)


def _retryable(fn):
    import collection.fetch.retry as R
    original = R.is_retryable
    _replace_everywhere(original, lambda status, error=None: fn(status, error, original))


@fault("budget-no-retry-on-429")
def _():
    _status(lambda status, original: "fail" if status == 429 else original(status))
    _retryable(lambda status, error, original: False if status == 429 else original(status, error))


@fault("budget-retry-on-404")
def _():
    _status(lambda status, original: "retry" if 400 <= status < 500 else original(status))
    _retryable(lambda status, error, original: True if status is not None and 400 <= status < 500 else original(status, error))


def _retries(fn):
    import collection.fetch.fetcher as F
    original = F.Fetcher.__init__

    def __init__(self, *a, retries=2, **kw):
        original(self, *a, retries=fn(retries), **kw)
    F.Fetcher.__init__ = __init__


@fault("budget-retries-plus-one")
def _():
    _retries(lambda n: n + 1)


@fault("budget-retries-zero-retries-once")
def _():
    _retries(lambda n: n or 2)


@fault("budget-redirect-hops-four")
def _():
    import collection.fetch.fetcher as F
    F.MAX_REDIRECTS = F.MAX_REDIRECTS - 1


@fault("budget-redirect-hops-six")
def _():
    import collection.fetch.fetcher as F
    F.MAX_REDIRECTS = F.MAX_REDIRECTS + 1


@fault("budget-source-bytes-excludes-listing")
def _():
    import collection.fetch.fetcher as F
    from collection.fetch import budgets as B
    original = F.Fetcher._body

    def _body(self, spec, url, response, tally):
        if spec.kind != B.LISTING:
            return original(self, spec, url, response, tally)
        charge = self.budget.charge_bytes
        self.budget.charge_bytes = lambda count: True
        try:
            return original(self, spec, url, response, tally)
        finally:
            del self.budget.charge_bytes
    F.Fetcher._body = _body


@fault("media-body-read-before-refusal")
def _():
    import hashlib
    import collection.fetch.fetcher as F
    from collection.fetch.mediatypes import accepts
    original = F.Fetcher._body

    def _body(self, spec, url, response, tally):
        if spec.accepted and not accepts(response.header("Content-Type"), spec.accepted):
            try:
                self._read(response, hashlib.sha256(), [], None, charge=True)
            except Exception:  # noqa: BLE001
                pass
        return original(self, spec, url, response, tally)
    F.Fetcher._body = _body


# --- coverage: discovery members ----------------------------------------------------------------
@fault("coverage-discovery-requests-counts-pages-not-requests")
def _():
    from dataclasses import replace
    D = _driver()
    original = D.DiscoveryState.outcome
    D.DiscoveryState.outcome = lambda self: replace(original(self), requests=self.listings)


@fault("coverage-discovery-failure-names-last")
def _():
    from dataclasses import replace
    D = _driver()
    feed = D.DiscoveryState.feed

    def feed_(self, result):
        state = feed(self, result)
        last = getattr(self, "_last_read", None)
        if state.failure is None:
            last = result.url
        elif self.failure is None and last is not None:
            state = replace(state, failure=last)
        object.__setattr__(state, "_last_read", last)
        return state
    D.DiscoveryState.feed = feed_


@fault("coverage-discovery-failure-set-at-ceiling")
def _():
    from dataclasses import replace
    D = _driver()
    original = D.DiscoveryState._next_page

    def _next_page(self, response, parsed, base):
        result = original(self, response, parsed, base)
        if result.stop == "max_requests" and result.failure is None:
            probe = original(_with_config(self, max_requests=self.config.max_requests + 10 ** 6), response, parsed, base)
            if probe.queue:
                result = replace(result, failure=probe.queue[0][0])
        return result
    D.DiscoveryState._next_page = _next_page


@fault("coverage-failed-recovered-still-counted")
def _():
    from dataclasses import replace

    def keep(r, p, rs):
        recovered = {x.page_id for x in rs if x.outcome == "fetched" and p.ledger[x.page_id].state == "failed"}
        if not recovered:
            return r
        rows = {pid: replace(row, failure_code=p.ledger[pid].failure_code, failure_class=p.ledger[pid].failure_class)
                if pid in recovered else row for pid, row in r.ledger.items()}
        return _recomplete(replace(_cov(r, failed=r.coverage.failed + len(recovered)), ledger=rows))
    _merge_post(keep)


# --- discovery -----------------------------------------------------------------------------------
@fault("discovery-explicit-id-canonicalised")
def _():
    from dataclasses import replace

    def make(original):
        def start(config, allowed_origins, *, max_pages=None):
            state = original(config, allowed_origins, max_pages=max_pages)
            if config.kind == "explicit":
                pages = tuple(replace(p, page_id=p.url) for p in state.pages)
                state = replace(state, pages=pages, page_ids=frozenset(p.page_id for p in pages))
            return state
        return start
    _wrap_start(make)


def _records_raw(doc, spec):
    from collection.recipe.pointer import parse_pointer, resolve_or
    records = resolve_or(doc, parse_pointer(spec.records), None)
    return records if isinstance(records, list) else []


@fault("discovery-identity-json-quoted")
def _():
    import json as _json
    from dataclasses import replace
    from collection.recipe.pointer import parse_pointer, resolve_or

    def quoted(parsed, doc, spec, url):
        if spec.identity is None:
            return parsed
        raw = []
        for record in _records_raw(doc, spec):
            link = resolve_or(record, parse_pointer(spec.link), None)
            if link is None or isinstance(link, (dict, list)) or link == "":
                continue
            value = resolve_or(record, parse_pointer(spec.identity), None)
            raw.append(value)
        ids = tuple(_json.dumps(v) if isinstance(v, str) and pid is not None else pid
                    for v, pid in zip(raw + [None] * len(parsed.page_ids), parsed.page_ids))
        return replace(parsed, page_ids=ids)
    _json_listing(quoted)


@fault("discovery-identity-missing-dropped")
def _():
    from dataclasses import replace

    def drop(parsed, doc, spec, url):
        if spec.identity is None:
            return parsed
        keep = [i for i, pid in enumerate(parsed.page_ids) if pid is not None]
        return replace(parsed, links=tuple(parsed.links[i] for i in keep), page_ids=tuple(parsed.page_ids[i] for i in keep),
                       revisions=tuple(parsed.revisions[i] for i in keep))
    _json_listing(drop)


@fault("discovery-link-missing-counted")
def _():
    from dataclasses import replace
    D = _driver()
    original = D.DiscoveryState._advance

    def _advance(self, response, role, parsed):
        state = original(self, response, role, parsed)
        return replace(state, duplicates=state.duplicates + len(parsed.dropped))
    D.DiscoveryState._advance = _advance


@fault("discovery-link-pointer-on-body")
def _():
    from dataclasses import replace
    from collection.discover.common import scalar_text
    from collection.recipe.pointer import parse_pointer, resolve_or

    def on_body(parsed, doc, spec, url):
        link = scalar_text(resolve_or(doc, parse_pointer(spec.link), None)) if spec.link else None
        n = len(parsed.links)
        if link is None:
            return replace(parsed, links=(), page_ids=(), revisions=())
        return replace(parsed, links=(link,) * n)
    _json_listing(on_body)


@fault("discovery-revision-from-body")
def _():
    from dataclasses import replace
    from collection.discover.common import scalar_text
    from collection.recipe.pointer import parse_pointer, resolve_or

    def on_body(parsed, doc, spec, url):
        if spec.revision is None:
            return parsed
        value = resolve_or(doc, parse_pointer(spec.revision), None)
        text = scalar_text(value) if not isinstance(value, (dict, list)) else None
        return replace(parsed, revisions=(text,) * len(parsed.links))
    _json_listing(on_body)


def _pointer():
    import collection.recipe.pointer as Pt
    return Pt


@fault("discovery-pointer-array-index")
def _():
    Pt = _pointer()
    original = Pt.resolve

    def resolve(doc, tokens):
        value = doc
        for token in tokens:
            if isinstance(value, list):
                raise Pt.PointerMissing(token)
            value = original(value, (token,))
        return value
    _replace_everywhere(original, resolve)


@fault("discovery-pointer-escape")
def _():
    Pt = _pointer()
    original = Pt.parse_pointer

    def parse_pointer(text):
        tokens = original(text)
        return tuple(text.split("/")[1:]) if tokens else tokens
    _replace_everywhere(original, parse_pointer)


@fault("discovery-pointer-escape-order")
def _():
    Pt = _pointer()
    original = Pt.parse_pointer

    def parse_pointer(text):
        tokens = original(text)
        return tuple(t.replace("~0", "~").replace("~1", "/") for t in text.split("/")[1:]) if tokens else tokens
    _replace_everywhere(original, parse_pointer)


@fault("discovery-pointer-root-key")
def _():
    import collection.discover.json_index as J
    from dataclasses import replace
    original = J.read_json_document

    def read_json_document(doc, spec, url):
        if spec.records == "":
            spec = replace(spec, records="/")
        return original(doc, spec, url)
    _replace_everywhere(original, read_json_document)


@fault("discovery-link-attribute-ignored")
def _():
    from dataclasses import replace
    import collection.discover.html_index as Hx
    original = Hx.parse_html_listing
    _replace_everywhere(original, lambda body, spec, charset=None: original(body, replace(spec, attribute="href"), charset))


@fault("discovery-dedupe-by-url")
def _():
    from dataclasses import replace
    D = _driver()
    original = D.DiscoveryState._admit

    def _admit(self, parsed, base):
        from collection.urls import UrlError, canonicalise
        seen_urls = set(getattr(self, "_urls", ()))
        seen_urls |= {p.url for p in self.pages}
        links, ids, revs = [], [], []
        dupes = 0
        for link, pid, rev in parsed.rows():
            try:
                url = canonicalise(link, base)
            except UrlError:
                links.append(link), ids.append(pid), revs.append(rev)
                continue
            if url in seen_urls:
                dupes += 1
                continue
            seen_urls.add(url)
            # ids no longer collapse: an id seen before under another URL is made distinct
            links.append(link), ids.append(pid), revs.append(rev)
        taken = set(self.page_ids)
        fixed = []
        for pid, link in zip(ids, links):
            key = pid if pid is not None else None
            if key is not None and key in taken:
                key = f"{key}#{len(taken)}"
            if key is not None:
                taken.add(key)
            fixed.append(key)
        state, ok = original(self, replace(parsed, links=tuple(links), page_ids=tuple(fixed), revisions=tuple(revs)), base)
        return replace(state, duplicates=state.duplicates + dupes), ok
    D.DiscoveryState._admit = _admit


@fault("discovery-sitemap-lastmod-ignored")
def _():
    from dataclasses import replace
    import collection.discover.sitemap as Sm
    original = Sm.parse_sitemap
    _replace_everywhere(original, lambda body, url="", **kw: (lambda p: replace(p, revisions=(None,) * len(p.revisions)))(original(body, url, **kw)))


@fault("discovery-sitemapindex-not-followed")
def _():
    from dataclasses import replace
    import collection.discover.sitemap as Sm
    original = Sm.parse_sitemap

    def parse_sitemap(body, url="", **kw):
        parsed = original(body, url, **kw)
        if parsed.root == "sitemapindex":
            n = len(parsed.children)
            return replace(parsed, root="urlset", links=tuple(parsed.children), page_ids=(None,) * n, revisions=(None,) * n,
                           record_count=n, children=())
        return parsed
    _replace_everywhere(original, parse_sitemap)


@fault("discovery-sitemapindex-offsite-child")
def _():
    from dataclasses import replace
    from collection.urls import UrlError, canonicalise, origin_of
    D = _driver()
    original = D.DiscoveryState._queue_children

    def _queue_children(self, children, base):
        extra = set()
        for raw in children:
            try:
                extra.add(origin_of(canonicalise(raw, base)))
            except (UrlError, ValueError):
                pass
        state = original(replace(self, allowed_origins=self.allowed_origins | extra), children, base)
        return replace(state, allowed_origins=self.allowed_origins)
    D.DiscoveryState._queue_children = _queue_children


# --- robots and listings --------------------------------------------------------------------
@fault("robots-disallowed-listing-ignored")
def _():
    import collection.fetch.fetcher as F
    from collection.fetch import budgets as B
    original = F.Fetcher._robots_allow
    fetch = F.Fetcher._fetch

    def _fetch(self, spec, tally):
        self._listing_now = spec.kind == B.LISTING
        try:
            return fetch(self, spec, tally)
        finally:
            self._listing_now = False
    F.Fetcher._fetch = _fetch
    F.Fetcher._robots_allow = lambda self, url: True if getattr(self, "_listing_now", False) else original(self, url)


@fault("robots-disallowed-listing-empty")
def _():
    D = _driver()
    original = D.DiscoveryState._failed

    def _failed(self, url, role, reason, message=""):
        if reason == "robots_disallowed":
            return self._finish("empty_page")
        return original(self, url, role, reason, message)
    D.DiscoveryState._failed = _failed


# --- ops and refusals ---------------------------------------------------------------------------
def _execute(fn):
    import collection.run.loop as L
    original = L.execute
    L.execute = lambda recipe, settings, shell: fn(original, recipe, settings, shell)


@fault("ops-refresh-as-resync")
def _():
    from dataclasses import replace
    _execute(lambda original, recipe, settings, shell: original(recipe, replace(settings, resync=True), shell))


@fault("ops-schedule-accepted")
def _():
    from dataclasses import replace

    def without_schedule(original, recipe, settings, shell):
        plan = settings.plan
        if isinstance(plan, dict) and "schedule" in plan:
            settings = replace(settings, plan={k: v for k, v in plan.items() if k != "schedule"} or None)
        return original(recipe, settings, shell)
    _execute(without_schedule)


@fault("refusal-page-failures-fail-run")
def _():
    from collection.recipe.refusal import RefusedError, Refusal

    def fail(original, recipe, settings, shell):
        record = original(recipe, settings, shell)
        c = record.get("coverage", {})
        if c.get("failed_this_run") and not c.get("fetched_this_run"):
            raise RefusedError(Refusal("ALL_PAGES_FAILED", "", "every chosen page failed", "seeded fault"))
        return record
    _execute(fail)


@fault("refusal-discovery-failure-with-predecessor")
def _():
    from collection.recipe.refusal import RefusedError, Refusal

    def fail(original, recipe, settings, shell):
        import os
        had = os.path.exists(os.path.join(settings.state_dir, "current")) if hasattr(settings, "state_dir") else False
        record = original(recipe, settings, shell)
        if had and record.get("coverage", {}).get("discovery_failure"):
            raise RefusedError(Refusal("COLLECTION_DISCOVERY_FAILED", "/collection/discovery/url", "seeded fault", "seeded fault"))
        return record
    _execute(fail)


@fault("refusal-discovery-failed-partial")
def _():
    from collection.recipe.refusal import RefusedError, Refusal

    def fail(original, recipe, settings, shell):
        import os
        had = os.path.exists(os.path.join(settings.state_dir, "current")) if hasattr(settings, "state_dir") else True
        record = original(recipe, settings, shell)
        if not had and record.get("coverage", {}).get("discovery_failure"):
            raise RefusedError(Refusal("COLLECTION_DISCOVERY_FAILED", "/collection/discovery/url", "seeded fault", "seeded fault"))
        return record
    _execute(fail)


@fault("refusal-shape-as-discovery-failure")
def _():
    D = _driver()
    original = D.DiscoveryState._parse

    def _parse(self, response, role):
        try:
            return original(self, response, role)
        except D.DiscoveryShapeError as exc:
            raise D.ListingUnreadable("shape", str(exc)) if hasattr(D, "ListingUnreadable") else exc
    D.DiscoveryState._parse = _parse


@fault("refusal-columns-mismatch-ignored")
def _():
    import itertools
    import collection.merge.engine as M
    import collection.merge.relation as Rel
    from collection.merge.relation import relation_columns
    _replace_everywhere(Rel.check_relation_header, lambda stream, reader_columns: None)
    original = M.check_predecessor
    _replace_everywhere(original, lambda ledger_head, relation_head, reader_columns: original(ledger_head, iter(()), reader_columns))
    pages = Rel.iter_pages

    def iter_pages(stream, reader_columns, **kw):
        # the predecessor's header is never compared: whatever it says, its rows are read by position
        stream = iter(stream)
        first = next(stream, None)
        if first is None:
            return pages(iter(()), reader_columns, **kw)
        header = ",".join(relation_columns(reader_columns)) + "\n"
        return pages(itertools.chain([header], stream), reader_columns, **kw)
    _replace_everywhere(pages, iter_pages)
    scan = Rel.scan_relation

    def scan_relation(stream, reader_columns):
        stream = iter(stream)
        first = next(stream, None)
        if first is None:
            return scan(iter(()), reader_columns)
        return scan(itertools.chain([",".join(relation_columns(reader_columns)) + "\n"], stream), reader_columns)
    _replace_everywhere(scan, scan_relation)


@fault("refusal-ledger-header-ignored")
def _():
    import collection.merge.ledger as Lg
    _replace_everywhere(Lg.check_ledger_header, lambda stream: None)


# --- relation order ----------------------------------------------------------------------------
def _relation_order(key_fn=None, rows_fn=None):
    import collection.merge.engine as M
    original = M._joined

    def _joined(predecessor, reader_columns, fresh):
        pages = list(original(predecessor, reader_columns, fresh))
        if rows_fn is not None:
            pages = [(pid, rows_fn(rows, len(reader_columns))) for pid, rows in pages]
        if key_fn is not None:
            pages = key_fn(pages, fresh, len(reader_columns))
        return iter(pages)
    M._joined = _joined


@fault("order-relation-page-id-casefold")
def _():
    _relation_order(lambda pages, fresh, n: sorted(pages, key=lambda pr: pr[0].lower()))


@fault("order-relation-page-id-numeric")
def _():
    def numeric(pages, fresh, n):
        if pages and all(pid.isdigit() for pid, _ in pages):
            return sorted(pages, key=lambda pr: int(pr[0]))
        return pages
    _relation_order(numeric)


@fault("order-relation-sort-by-page-url")
def _():
    _relation_order(lambda pages, fresh, n: sorted(pages, key=lambda pr: pr[1][0][n + 1] if pr[1] else ""))


@fault("order-relation-fetch-order")
def _():
    _relation_order(lambda pages, fresh, n: [pr for pr in pages if pr[0] not in fresh] + [pr for pr in pages if pr[0] in fresh])


@fault("order-relation-ordinal-text")
def _():
    _relation_order(rows_fn=lambda rows, n: sorted(rows, key=lambda r: str(r[n + 6])))


# --- readers ------------------------------------------------------------------------------------
def _merge_pre(fn):
    import collection.merge.engine as M
    original = M.merge

    def merge(prepared, results, *a, **kw):
        return original(prepared, list(fn(prepared, list(results), kw)), *a, **kw)
    _replace_everywhere(original, merge)


@fault("reader-zero-rows-failed")
def _():
    from dataclasses import replace
    _merge_pre(lambda p, rs, kw: [replace(r, outcome="failed", failure_code="decode_error", rows=None, content_sha256=None)
                                  if r.outcome == "fetched" and not r.rows else r for r in rs])


@fault("reader-zero-rows-pending")
def _():
    _merge_pre(lambda p, rs, kw: [r for r in rs if not (r.outcome == "fetched" and not r.rows)])


# --- wire -------------------------------------------------------------------------------------
@fault("wire-user-agent-no-info-url")
def _():
    import collection.fetch.transport as T
    original = T.user_agent
    _replace_everywhere(original, lambda token=T.DEFAULT_TOKEN, info_url=T.DEFAULT_INFO_URL: original(token, info_url).split(" (+")[0])


@fault("wire-interval-recipe-ignored")
def _():
    import collection.fetch.politeness as Po
    original = Po.Politeness.__init__
    Po.Politeness.__init__ = lambda self, min_interval, concurrency, *, margin=0.0: original(self, 1, concurrency, margin=margin)


@fault("wire-three-connections")
def _():
    # no per-origin cap anywhere: the scheduler, the fetcher and the connection pool all take 25
    import collection.fetch.fetcher as F
    import collection.fetch.politeness as Po
    import collection.fetch.urllib3_transport as U
    import collection.run.loop as L
    for module in (F, Po, L):
        module.PER_ORIGIN_IN_FLIGHT = 25
    original = U.Urllib3Transport.__init__

    def __init__(self, *a, **kw):
        original(self, *a, **{**kw, "per_host_connections": 25})
    U.Urllib3Transport.__init__ = __init__


@fault("wire-retry-after-ignored")
def _():
    import collection.fetch.fetcher as F
    F.parse_retry_after = lambda value, now_wall: None


@fault("wire-range-advertised-ignored")
def _():
    import collection.fetch.fetcher as F
    F.range_plan = lambda status, headers, threshold: None



# --- the rest that the run loop and the fetcher decide -----------------------------------------
@fault("discovery-explicit-request")
def _():
    import collection.run.loop as L
    from collection.fetch import budgets as B
    from collection.fetch.fetcher import FetchSpec
    original = L._discover

    def _discover(source, fetcher, log):
        config = source.collection.discovery
        if config.kind == "explicit" and config.members:
            fetcher.fetch(FetchSpec(config.members[0].url, B.LISTING, ()))   # asks the first member once
        return original(source, fetcher, log)
    L._discover = _discover


@fault("discovery-new-id-state-fetched")
def _():
    from dataclasses import replace
    _remember_ledger()

    def drop_unchosen(r, p, rs):
        chosen = {x.page_id for x in rs}
        before = _LEDGER_BEFORE.get("ids", set())
        keep = {pid: row for pid, row in r.ledger.items() if pid in before or pid in chosen or row.state != "pending"}
        if len(keep) == len(r.ledger):
            return r
        pending = sum(1 for row in keep.values() if row.state == "pending")
        return _recomplete(replace(_cov(r, known=len(keep), pending=pending), ledger=keep))
    _merge_post(drop_unchosen)


@fault("robots-not-first")
def _():
    import collection.fetch.fetcher as F
    from collection.fetch import budgets as B
    original_allow, fetch = F.Fetcher._robots_allow, F.Fetcher._fetch

    def _fetch(self, spec, tally):
        # the first listing goes out before robots.txt is asked for (and so is never checked)
        if spec.kind == B.LISTING and not getattr(self, "_first_listing_done", False):
            self._first_listing_done = True
            self._skip_robots_once = True
        try:
            return fetch(self, spec, tally)
        finally:
            self._skip_robots_once = False

    def _robots_allow(self, url):
        if getattr(self, "_skip_robots_once", False):
            return True
        return original_allow(self, url)
    F.Fetcher._fetch = _fetch
    F.Fetcher._robots_allow = _robots_allow


def _send_headers(fn):
    import collection.fetch.fetcher as F
    original = F.Fetcher._send

    def _send(self, kind, url, cause, tally, headers):
        return original(self, kind, url, cause, tally, fn(kind, tuple(headers)))
    F.Fetcher._send = _send


@fault("wire-user-agent-listing-default")
def _():
    from collection.fetch import budgets as B
    _send_headers(lambda kind, headers: headers + (("User-Agent", "python-urllib3/2.2"),) if kind == B.LISTING else headers)


@fault("wire-user-agent-robots-default")
def _():
    _send_headers(lambda kind, headers: headers + (("User-Agent", "python-urllib3/2.2"),) if kind is None else headers)


def _politeness_bypass(which):
    """Requests which(kind, cause) names skip the per-host limiter and leave no trace in it."""
    import collection.fetch.fetcher as F
    import collection.fetch.politeness as Po
    send, wait, sent = F.Fetcher._send, F.Fetcher._wait_ready, Po.Politeness.sent
    writing, finish = F.Fetcher._writing, F.Fetcher._finish

    def _send(self, kind, url, cause, tally, headers):
        self._bypass = which(kind, cause)
        try:
            return send(self, kind, url, cause, tally, headers)
        finally:
            self._bypass = False

    def _wait_ready(self, host):
        if getattr(self, "_bypass", False):
            return None          # no slot: neither its start nor its write is recorded
        return wait(self, host)

    def _writing(self, slot):
        return (lambda: None) if slot is None else writing(self, slot)

    def _finish(self, slot, retry_after):
        if slot is not None:
            finish(self, slot, retry_after)
    F.Fetcher._send = _send
    F.Fetcher._wait_ready = _wait_ready
    F.Fetcher._writing = _writing
    F.Fetcher._finish = _finish


@fault("wire-interval-retries-immediate")
def _():
    from collection.fetch import budgets as B
    _politeness_bypass(lambda kind, cause: cause == B.RETRY)


@fault("wire-interval-listing-exempt")
def _():
    from collection.fetch import budgets as B
    import collection.fetch.politeness as Po
    import collection.fetch.fetcher as F
    send = F.Fetcher._send

    def _send(self, kind, url, cause, tally, headers):
        _LISTING_FLAG.on = kind == B.LISTING
        try:
            return send(self, kind, url, cause, tally, headers)
        finally:
            _LISTING_FLAG.on = False
    F.Fetcher._send = _send
    # a listing does not update the limiter (neither its start nor its send): the page after
    # it goes at once
    original_sent, original_start = Po.Politeness.sent, Po.Politeness.try_start
    Po.Politeness.sent = lambda self, ticket, now: None if getattr(_LISTING_FLAG, "on", False) else original_sent(self, ticket, now)

    def try_start(self, host, now, interval=None):
        before = self._hosts[host].last_start if host in self._hosts else None
        ticket = original_start(self, host, now, interval)
        if ticket is not None and _LISTING_FLAG.on:
            if before is None:
                self._hosts[host].last_start = -float("inf")
            else:
                self._hosts[host].last_start = before
        return ticket
    Po.Politeness.try_start = try_start


class _Flag:
    on = False


_LISTING_FLAG = _Flag()


@fault("wire-interval-tolerance")
def _():
    import collection.fetch.politeness as Po
    original = Po.Politeness.__init__

    def __init__(self, min_interval, concurrency, *, margin=0.0):
        original(self, min_interval, concurrency, margin=margin)
        self.min_interval = max(0.0, self.min_interval - 0.010)
    Po.Politeness.__init__ = __init__



@fault("reader-decode-error-fails-run")
def _():
    import collection.readers.base as Rb
    original = Rb.decode

    class ReaderCrash(RuntimeError):
        pass

    def decode(pin, body, content_type, url):
        result = original(pin, body, content_type, url)
        if isinstance(result, Rb.DecodeFailure) and result.code == "decode_error":
            raise ReaderCrash(result.message)      # the Reader's exception is not caught
        return result
    _replace_everywhere(original, decode)


@fault("refusal-explicit-run-refused")
def _():
    import csv as _csv
    import os
    from collection.recipe.refusal import RefusedError, Refusal

    def refuse(original, recipe, settings, shell):
        import json as _json
        record = original(recipe, settings, shell)
        try:
            kind = _json.loads(recipe)["collection"]["discovery"]["kind"]
        except (ValueError, KeyError, TypeError):
            kind = None
        if kind == "explicit":
            with open(os.path.join(settings.state_dir, "current", "ledger.csv"), encoding="utf-8", newline="") as handle:
                rows = list(_csv.DictReader(handle))
            if rows and all(r["failure_code"] == "robots_disallowed" for r in rows):
                raise RefusedError(Refusal("COLLECTION_DISCOVERY_FAILED", "/collection/discovery",
                                           "robots.txt failed for the only origin", "seeded fault"))
        return record
    _execute(refuse)



def _html_table(on_mismatch):
    """html.tabular's table mode, with on_mismatch(header, declared) deciding what a header
    that is not the declared one means: None keeps column_mismatch, else the index of each
    declared column in the page's header (None: the column is missing)."""
    import collection.readers.html_tabular as Ht
    original = Ht._table

    def _table(root, options):
        try:
            return original(root, options)
        except Ht.ReaderFailure as failure:
            if "header" not in failure.message:
                raise
            tables = [t for t in Ht.compile_selector(options["selector"]).select(root) if t.tag == "table"]
            grid = Ht._grid(tables[0])
            declared = [Ht.header_of(c)[1] for c in options["columns"]]
            at = on_mismatch(list(grid[0]), declared)
            if at is None:
                raise
            rows = []
            for cells in grid[1:]:
                row = tuple(cells[i] if i is not None and i < len(cells) else "" for i in at)
                if any(row):
                    rows.append(row)
            return tuple(rows)
    Ht._table = _table


@fault("reader-column-mismatch-padded")
def _():
    _html_table(lambda header, declared: [header.index(d) if d in header else None for d in declared])


@fault("reader-column-order-ignored")
def _():
    _html_table(lambda header, declared: [header.index(d) for d in declared]
                if sorted(h for h in header if h) == sorted(declared) else None)


# === end of the faults ====================================================================

if __name__ == "__main__":
    missing = [fid for fid in FAULTS if fid not in MUTANTS]
    print(f"{len(FAULTS) - len(missing)} of {len(FAULTS)} faults implemented")
    for fid in missing:
        print(f"  not implemented: {fid}: {FAULTS[fid]['fault']}")
