"""The second independent fault set (issue 26): every fault of audit/faults/independent-2.json
implemented as a mutant of collection.

The faults were written from the specification alone, for exactly the areas where the first
independent set's survivors clustered (listing media types, the base of relative links, null
members and unusual origins at registration, json.tabular rendering, the max_rows clamp,
pagination stops, which listing discovery_failure names); see audit/faults/independent-2.md.
Each fault keeps its id, clauses and text. Where a fault states the very slip a fault of the
first set already seeds, its mutant is that seeding (`_same_as`), so one behaviour has one
implementation. Faults not implemented here are listed with their reason in NOT_SEEDED and
by `python audit/mutants_independent_2.py`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import mutants_independent as M1
from kit import _APPLY, MUTANTS, _canonical, _replace_everywhere, dig, mutant, reg_add, reg_drop, reg_pre  # noqa: F401

FAULT_SET = "independent-2"
FAULTS = {f["id"]: f for f in json.loads(
    (Path(__file__).resolve().parent / "faults" / "independent-2.json").read_text(encoding="utf-8"))}

NOT_SEEDED = {
    "link-base-resolve-against-first-hop":
        "the fetcher hands discovery only the address a redirect chain ended at, not its hops",
    "pagination-stop-repeat-on-requested-not-landed":
        "not a fault here: the repeated-address rule compares the addresses discovery asks for, not where a "
        "redirect landed (D-77), so the mutant would be the project itself",
    "discovery-failure-first-run-failure-writes-empty":
        "a refused run writing a generation needs a hook into the run's commit path the kit does not have "
        "(the first set's refusal-discovery-failed-writes-empty is not seeded for the same reason)",
}


def fault(fid: str):
    f = FAULTS[fid]
    return mutant(fid, f["family"], f["fault"], clauses=tuple(f["clauses"]), mode=f["mode"], fault_set=FAULT_SET)


def _same_as(fid: str, first_set_id: str) -> None:
    """Fault `fid` states the slip the first set's `first_set_id` seeds: seed it the same way."""
    fault(fid)(lambda: _APPLY[first_set_id]())


D = M1._driver


def _wrap(cls, name, make):
    setattr(cls, name, make(getattr(cls, name)))


# --- listing media types (DISC-28..31, D-37) -------------------------------------------------------
def _content_type(headers):
    value = None
    for name, text in tuple(headers):
        if name.lower() == "content-type":
            value = text
    return value


def _listing_refusal(decide, *, widens=None):
    """Listing media checks only (detail pages keep theirs): decide(state, status, headers,
    original) -> the refusal reason or None. A fault that accepts more than the project must
    also pass the fetcher, which refuses a listing's type before discovery sees it
    (FetchSpec.accepted): `widens(content_type, accepted, listing_number)` says which
    listings the fetcher now lets through; discovery's own check, edited by `decide`, then
    rules on them. Every other listing is still refused unread, as the project does."""
    Dr = D()
    if widens is not None:
        _fetcher_lets_listings_through(widens)

    def make(original):
        def refusal(self, status, headers):
            return decide(self, status, tuple(headers), lambda: original(self, status, headers))
        return refusal
    _wrap(Dr.DiscoveryState, "refusal", make)


def _fetcher_lets_listings_through(widens):
    import threading

    import collection.fetch.fetcher as F
    local = threading.local()
    original_fetch, original_accepts = F.Fetcher.fetch, F.accepts

    def fetch(self, spec, *a, **kw):
        if spec.kind == "listing":
            self.__dict__["_seeded_listings"] = self.__dict__.get("_seeded_listings", 0) + 1
            local.listing = self.__dict__["_seeded_listings"]
        try:
            return original_fetch(self, spec, *a, **kw)
        finally:
            local.listing = 0
    F.Fetcher.fetch = fetch

    def accepts(content_type, accepted):
        number = getattr(local, "listing", 0)
        if number and widens(content_type, tuple(accepted), number):
            return True
        return original_accepts(content_type, accepted)
    F.accepts = accepts


def _ok(status):
    return 200 <= status < 300


@fault("listing-media-missing-content-type-accepted")
def _():
    _listing_refusal(lambda s, st, h, orig: None if _ok(st) and _content_type(h) is None else orig(),
                     widens=lambda ct, accepted, n: ct is None)


@fault("listing-media-missing-content-type-accepted-with-predecessor")
def _():
    _listing_refusal(lambda s, st, h, orig: None if _ok(st) and _content_type(h) is None and s.index >= 1 else orig(),
                     widens=lambda ct, accepted, n: ct is None and n >= 2)


@fault("listing-media-parameters-not-ignored")
def _():
    _listing_refusal(lambda s, st, h, orig: "media_type_refused"
                     if _ok(st) and ";" in (_content_type(h) or "") else orig())


@fault("listing-media-case-sensitive-type")
def _():
    def decide(s, st, h, orig):
        raw = (_content_type(h) or "").split(";", 1)[0].strip()
        if _ok(st) and raw and raw != raw.lower():
            return "media_type_refused"
        return orig()
    _listing_refusal(decide)


def _essence(h):
    return (_content_type(h) or "").split(";", 1)[0].strip().lower()


def _refuse_type(kind, media):
    _listing_refusal(lambda s, st, h, orig: "media_type_refused"
                     if _ok(st) and s.config.kind == kind and _essence(h) == media else orig())


@fault("listing-media-ld-json-missing")
def _():
    _refuse_type("json_api", "application/ld+json")


@fault("listing-media-text-json-missing")
def _():
    _refuse_type("json_api", "text/json")


_same_as("listing-media-sitemap-rss-xml-missing", "media-sitemap-rss-refused")
_same_as("listing-media-html-index-xhtml-missing", "media-html-xhtml-refused")


@fault("listing-media-any-plus-json-suffix-accepted")
def _():
    _listing_refusal(lambda s, st, h, orig: None if _ok(st) and s.config.kind == "json_api"
                     and _essence(h).endswith("+json") else orig(),
                     widens=lambda ct, accepted, n: accepted == D().ACCEPTED_MEDIA_TYPES["json_api"]
                     and _essence([("Content-Type", ct or "")]).endswith("+json"))


@fault("listing-media-sitemap-accepts-any-xml-substring")
def _():
    _listing_refusal(lambda s, st, h, orig: None if _ok(st) and s.config.kind == "sitemap"
                     and "xml" in _essence(h) else orig(),
                     widens=lambda ct, accepted, n: accepted == D().ACCEPTED_MEDIA_TYPES["sitemap"]
                     and "xml" in _essence([("Content-Type", ct or "")]))


@fault("listing-media-listing-uses-reader-media-set")
def _():
    import collection.readers.registry as Rg
    import collection.run.loop as L
    Dr = D()
    original = L._discover

    def _discover(source, fetcher, log):
        kind = source.collection.discovery.kind
        kept = Dr.ACCEPTED_MEDIA_TYPES[kind]
        if source.reader is not None and kind != "explicit":
            Dr.ACCEPTED_MEDIA_TYPES[kind] = tuple(Rg.FAMILIES[source.reader.family_id].media_types)
        try:
            return original(source, fetcher, log)
        finally:
            Dr.ACCEPTED_MEDIA_TYPES[kind] = kept
    L._discover = _discover


@fault("listing-media-refused-listing-body-still-extracted")
def _():
    Dr = D()

    def make(original):
        def _failed(self, url, role, reason, message=""):
            response = _FED.get("response")
            if reason == "media_type_refused" and response is not None and response.url == url:
                try:
                    parsed = self._parse(response, role)
                    self, _ = self._admit(parsed, Dr.canonical_or(response.base_url))
                except Exception:   # a body that does not parse adds nothing: the slip is reading it
                    pass
            return original(self, url, role, reason, message)
        return _failed
    _remember_fed()
    _fetcher_lets_listings_through(lambda ct, accepted, n: True)   # the slip: every listing body is read
    _wrap(Dr.DiscoveryState, "_failed", make)


_FED: dict = {}


def _remember_fed():
    Dr = D()

    def make(original):
        def feed(self, result):
            _FED["response"] = result if isinstance(result, Dr.ListingResponse) else None
            return original(self, result)
        return feed
    _wrap(Dr.DiscoveryState, "feed", make)


@fault("listing-media-media-refusal-treated-as-empty-page")
def _():
    Dr = D()

    def make(original):
        def _failed(self, url, role, reason, message=""):
            if reason == "media_type_refused" and role == "listing":
                return self._finish("empty_page")
            return original(self, url, role, reason, message)
        return _failed
    _wrap(Dr.DiscoveryState, "_failed", make)


# --- the base of relative links (URL-01, D-24) and fragments (URL-04) -------------------------------
def _admit_base(base_for):
    """Records' links resolve against base_for(state, response, base) instead of `base`."""
    Dr = D()
    seen: dict = {}

    def make_advance(original):
        def _advance(self, response, role, parsed):
            seen["response"] = response
            try:
                return original(self, response, role, parsed)
            finally:
                seen["response"] = None
        return _advance

    def make_admit(original):
        def _admit(self, parsed, base):
            response = seen.get("response")
            return original(self, parsed, base_for(self, response, base) if response is not None else base)
        return _admit
    _wrap(Dr.DiscoveryState, "_advance", make_advance)
    _wrap(Dr.DiscoveryState, "_admit", make_admit)


@fault("link-base-resolve-against-requested-not-final")
def _():
    _admit_base(lambda state, response, base: D().canonical_or(response.url))


@fault("link-base-resolve-cross-origin-redirect")
def _():
    def base_for(state, response, base):
        asked, landed = urlsplit(response.url), urlsplit(base)
        if (asked.scheme, asked.netloc) != (landed.scheme, landed.netloc):
            return urlunsplit(landed._replace(scheme=asked.scheme, netloc=asked.netloc))
        return base
    _admit_base(base_for)


_same_as("link-base-resolve-against-discovery-url-every-page", "url-relative-against-discovery")


def _next_base(kind):
    Dr = D()

    def make(original):
        def _next_page(self, response, parsed, base):
            if self.config.pagination.kind == kind:
                base = Dr.canonical_or(response.url)
            return original(self, response, parsed, base)
        return _next_page
    _wrap(Dr.DiscoveryState, "_next_page", make)


@fault("link-base-next-link-resolved-against-request")
def _():
    _next_base("link_header")


@fault("link-base-next-selector-href-resolved-against-request")
def _():
    _next_base("next_selector")


def _relative(link):
    return isinstance(link, str) and not urlsplit(link.strip()).scheme and not link.strip().startswith("//")


@fault("link-base-dot-segments-kept-after-redirect")
def _():
    def concatenated(url, link, base):
        if base and _relative(link) and ".." in link and not link.startswith("/"):
            directory = base.split("?", 1)[0].split("#", 1)[0]
            return directory[:directory.rfind("/") + 1] + link.split("#", 1)[0]
        return url
    _canonical_with_base(concatenated)


def _canonical_with_base(transform):
    import functools

    def make(original):
        @functools.wraps(original)
        def canonicalise(link, base=None):
            return transform(original(link, base), link, base)
        return canonicalise
    M1._wrap("collection.urls", "canonicalise", make)


@fault("link-base-fragment-kept-on-absolute")
def _():
    _canonical(lambda url, link: url + "#" + link.split("#", 1)[1]
               if isinstance(link, str) and not _relative(link) and "#" in link and "#" not in url else url)


@fault("link-base-fragment-strip-drops-query")
def _():
    _canonical(lambda url, link: url.split("?", 1)[0] if isinstance(link, str) and "#" in link else url)


@fault("link-base-percent-23-treated-as-fragment")
def _():
    def cut(url, link):
        at = url.lower().find("%23")
        return url[:at] if at >= 0 else url
    _canonical(cut)


@fault("link-base-next-link-fragment-defeats-repeat")
def _():
    import collection.discover.pagination as pg
    Dr = D()

    def make(original):
        def _next_page(self, response, parsed, base):
            out = original(self, response, parsed, base)
            if self.config.pagination.kind != pg.LINK_HEADER or out.stop != "repeated_address":
                return out
            raw = pg.next_link_target(response.header_values("link"))
            if raw is None or "#" not in raw:
                return out
            if self.spent >= self.config.max_requests:
                return self._finish("max_requests")
            return replace(self, queue=((Dr.canonicalise(raw, base), "listing"),))
        return _next_page
    _wrap(Dr.DiscoveryState, "_next_page", make)


# --- registration: null members, unusual origins, the pagination parameter -------------------------
def _null_absent(*path, value=None):
    """A member written out as null is read as absent (value None) or as `value`."""
    def edit(doc):
        parent = dig(doc, *path[:-1]) if len(path) > 1 else doc
        if isinstance(parent, dict) and path[-1] in parent and parent[path[-1]] is None:
            if value is None:
                del parent[path[-1]]
            else:
                parent[path[-1]] = value
    reg_pre(edit)


@fault("registration-window-null-accepted")
def _():
    _null_absent("window")


@fault("registration-closed-null-accepted")
def _():
    _null_absent("closed")


@fault("registration-max-requests-null-satisfies-presence")
def _():
    _null_absent("limits", "max_requests", value=1_000_000)


@fault("registration-discovery-max-requests-null-defaults")
def _():
    _null_absent("collection", "discovery", "max_requests")


@fault("registration-pagination-null-means-none")
def _():
    _null_absent("collection", "discovery", "pagination")


def _origins(fix):
    def edit(doc):
        origins = dig(doc, "collection", "pages", "allowed_origins")
        if isinstance(origins, list):
            doc["collection"]["pages"]["allowed_origins"] = [fix(o) if isinstance(o, str) else o for o in origins]
    reg_pre(edit)


def _host_lower(o):
    p = urlsplit(o)
    return urlunsplit(p._replace(netloc=p.netloc.lower())) if p.netloc else o


@fault("registration-origin-uppercase-host-accepted")
def _():
    _origins(_host_lower)


@fault("registration-origin-default-port-accepted")
def _():
    _origins(lambda o: o[:-len(":443")] if o.endswith(":443") else o)


@fault("registration-origin-trailing-slash-accepted")
def _():
    _origins(lambda o: o.rstrip("/") if urlsplit(o).path == "/" else o)


@fault("registration-origin-with-path-accepted")
def _():
    _origins(lambda o: (lambda p: urlunsplit((p.scheme, p.netloc, "", "", "")) if p.path not in ("", "/") else o)(urlsplit(o)))


@fault("registration-origin-userinfo-accepted")
def _():
    _origins(lambda o: (lambda p: urlunsplit(p._replace(netloc=p.netloc.rsplit("@", 1)[1])) if "@" in p.netloc else o)(urlsplit(o)))


@fault("registration-origin-unicode-idn-accepted")
def _():
    def punycode(o):
        p = urlsplit(o)
        try:
            p.netloc.encode("ascii")
            return o
        except UnicodeEncodeError:
            return urlunsplit(p._replace(netloc=p.netloc.encode("idna").decode("ascii")))
    _origins(punycode)


@fault("registration-origin-punycode-refused")
def _():
    reg_add("ORIGIN_NOT_CANONICAL", "/collection/pages/allowed_origins",
            lambda doc: any(isinstance(o, str) and "xn--" in o.lower()
                            for o in dig(doc, "collection", "pages", "allowed_origins", default=[]) or []))


@fault("registration-origin-ip-literal-accepted")
def _():
    import ipaddress

    def numeric(doc, refusal):
        index = refusal.pointer.rsplit("/", 1)[-1]
        origins = dig(doc, "collection", "pages", "allowed_origins", default=[])
        if not index.isdigit() or not isinstance(origins, list) or int(index) >= len(origins):
            return False
        host = urlsplit(origins[int(index)]).hostname or ""
        try:
            ipaddress.ip_address(host)
            return True
        except ValueError:
            return False
    reg_drop("ORIGIN_NOT_CANONICAL", numeric)


@fault("registration-discovery-origin-raw-compare")
def _():
    def raw(doc):
        url = dig(doc, "collection", "discovery", "url")
        origins = dig(doc, "collection", "pages", "allowed_origins", default=[])
        if not isinstance(url, str) or not isinstance(origins, list):
            return False
        p = urlsplit(url)
        return f"{p.scheme}://{p.netloc}" not in origins
    reg_add("DISCOVERY_ORIGIN_NOT_ALLOWED", "/collection/pages/allowed_origins", raw)


@fault("registration-page-param-only-first-position")
def _():
    from collection import urls

    def later(doc, refusal):
        url = dig(doc, "collection", "discovery", "url")
        parameter = dig(doc, "collection", "discovery", "pagination", "parameter")
        names = urls.query_parameter_names(url) if isinstance(url, str) else []
        return bool(names) and names[0] != parameter
    reg_drop("PAGINATION_PARAMETER_PRESENT", later)


_same_as("registration-page-param-substring-match", "registration-param-substring")


@fault("registration-offset-param-not-checked")
def _():
    reg_drop("PAGINATION_PARAMETER_PRESENT",
             lambda doc, r: dig(doc, "collection", "discovery", "pagination", "kind") == "offset_parameter")


# --- json.tabular rendering (READ-05, PROV-16, D-27) -------------------------------------------------
def _render(fn):
    """A cell's text becomes fn(value, original_text) (MISSING passes as itself)."""
    import collection.readers.json_tabular as J
    original = J._cell

    def _cell(value):
        return fn(value, original)
    J._cell = _cell


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


@fault("json-render-null-as-python-none")
def _():
    _render(lambda v, cell: "None" if v is None else cell(v))


@fault("json-render-bool-python-capitalised")
def _():
    _render(lambda v, cell: str(v) if isinstance(v, bool) else cell(v))


@fault("json-render-falsy-values-blanked")
def _():
    from collection.recipe.pointer import MISSING
    _render(lambda v, cell: "" if v is not MISSING and not isinstance(v, str) and not v and v is not None else cell(v))


@fault("json-render-int-through-float")
def _():
    _render(lambda v, cell: repr(float(v)) if _is_int(v) else cell(v))


@fault("json-render-large-int-precision-lost")
def _():
    _render(lambda v, cell: cell(int(float(v))) if _is_int(v) and abs(v) > 2 ** 53 else cell(v))


@fault("json-render-float-17-digit-repr")
def _():
    _render(lambda v, cell: "%.17g" % v if isinstance(v, float) else cell(v))


@fault("json-render-array-python-repr")
def _():
    _render(lambda v, cell: repr(v) if isinstance(v, list) else cell(v))


@fault("json-render-object-python-repr")
def _():
    _render(lambda v, cell: repr(v) if isinstance(v, dict) else cell(v))


@fault("json-render-nested-json-ascii-escaped")
def _():
    _render(lambda v, cell: json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
            if isinstance(v, (list, dict)) else cell(v))


@fault("json-render-numeric-string-coerced")
def _():
    def coerce(v, cell):
        if isinstance(v, str):
            try:
                number = float(v)
            except ValueError:
                return cell(v)
            if v.strip() and number == number and abs(number) != float("inf"):
                return cell(int(number) if number.is_integer() and "." not in v and "e" not in v.lower() else number)
        return cell(v)
    _render(coerce)


def _records(fn):
    """Rows of a json.tabular page are fn(records, column tokens) of the resolved records."""
    import collection.readers.base as B
    import collection.readers.json_tabular as J
    from collection.recipe.pointer import resolve_or
    original = J.read

    def read(options, body, content_type, url):
        rows = original(options, body, content_type, url)
        text = J.decode_text(body, content_type, "json")
        document = json.loads(text)
        records = J.resolve(document, J._pointer(options.get("records", {}).get("pointer", "")))
        records = [records] if isinstance(records, dict) else records
        columns = [J._pointer(c["pointer"]) for c in options["columns"]]
        missing = [any(resolve_or(r, t) is J.MISSING for t in columns) for r in records]
        return fn(rows, missing)
    B._READERS[J.FAMILY_ID] = read


@fault("json-render-missing-member-drops-row")
def _():
    _records(lambda rows, missing: tuple(r for r, m in zip(rows, missing) if not m))


@fault("json-render-missing-member-fails-page")
def _():
    from collection.readers.base import ReaderFailure

    def fail(rows, missing):
        if any(missing):
            raise ReaderFailure("column_mismatch", "a record lacks a pinned column")
        return rows
    _records(fail)


# --- complete under the max_rows clamp (COV-20..28, D-52, D-64) ----------------------------------------
_same_as("complete-clamp-clipped-pages-marked-fetched", "truncation-clipped-fetched")
_same_as("complete-clamp-cut-through-page-marked-fetched", "truncation-first-page-marked-fetched")
_same_as("complete-clamp-exact-fit-flagged-truncated", "truncation-flag-at-exact-max")
_same_as("complete-clamp-truncated-only-when-at-max", "truncation-flag-below-max")
_same_as("complete-clamp-clamp-splits-later-page", "truncation-splits-page")
_same_as("complete-clamp-first-page-clipped-whole", "truncation-first-page-dropped")
_same_as("complete-clamp-restore-increments-revision", "truncation-restore-increments-revision")


@fault("complete-clamp-cut-through-uses-fetch-order")
def _():
    import collection.merge.engine as M
    original = M._write_clamped

    def _write_clamped(writer, pages, max_rows):
        pages = list(pages)
        with_rows = [(pid, rows) for pid, rows in pages if rows]
        if max_rows is None or not with_rows or len(with_rows[0][1]) <= max_rows:
            return original(writer, iter(pages), max_rows)
        rank = {pid: i for i, pid in enumerate(M1._FETCH_ORDER.get("ids", []))}
        first = min(with_rows, key=lambda pr: rank.get(pr[0], len(rank)))
        writer.writerows(first[1][:max_rows])
        return max_rows, [pid for pid, _ in with_rows]
    M._write_clamped = _write_clamped
    M1._remember_fetch_order()


@fault("complete-clamp-clamp-ignores-predecessor-rows")
def _():
    import collection.merge.engine as M
    this_run: set = set()
    original_merge = M.merge

    def merge(prepared, results, *a, **kw):
        results = list(results)
        this_run.clear()
        this_run.update(r.page_id for r in results if r.outcome == "fetched")
        return original_merge(prepared, results, *a, **kw)

    def _write_clamped(writer, pages, max_rows):
        counted, clipped = 0, []
        for page_id, rows in pages:
            if not rows:
                continue
            if page_id not in this_run:
                writer.writerows(rows)      # the predecessor's rows are not counted
                continue
            if clipped or (max_rows is not None and counted + len(rows) > max_rows):
                if counted == 0 and not clipped:
                    writer.writerows(rows[:max_rows])
                    counted = max_rows
                clipped.append(page_id)
                continue
            writer.writerows(rows)
            counted += len(rows)
        return counted, clipped
    M._write_clamped = _write_clamped
    _replace_everywhere(original_merge, merge)


@fault("complete-clamp-zero-row-page-after-clamp-pending")
def _():
    import collection.merge.engine as M
    original = M._write_clamped

    def _write_clamped(writer, pages, max_rows):
        pages = list(pages)
        written, clipped = original(writer, iter(pages), max_rows)
        if max_rows is None:
            return written, clipped
        total, full = 0, []
        for page_id, rows in pages:
            if not rows and total >= max_rows:
                full.append(page_id)
            total += len(rows)
        return written, sorted(set(clipped) | set(full))
    M._write_clamped = _write_clamped


@fault("complete-clamp-clamp-named-in-budget-exhausted")
def _():
    M1._merge_post(lambda r, p, rs: M1._recomplete(M1._cov(r, budget_exhausted=r.coverage.budget_exhausted or "max_pages"))
                   if r.truncated else r)


@fault("complete-clamp-insufficient-limit-completes-on-refresh")
def _():
    def post(r, p, rs):
        same = {x.page_id for x in rs if x.outcome == "fetched" and p.ledger[x.page_id].state == "pending"
                and p.ledger[x.page_id].content_sha256 == x.content_sha256}
        now = [pid for pid in r.clipped if pid in same]
        if not now:
            return r
        ledger = {pid: replace(row, state="fetched") if pid in now else row for pid, row in r.ledger.items()}
        clipped = tuple(pid for pid in r.clipped if pid not in now)
        out = replace(r, ledger=ledger, clipped=clipped, truncated=bool(clipped))
        return M1._recomplete(M1._cov(out, pending=r.coverage.pending - len(now)))
    M1._merge_post(post)


# --- pagination stops (PAG-05..17, D-03, D-22) -------------------------------------------------------
def _ignores_empty(kinds):
    Dr = D()

    def make(original):
        def _advance(self, response, role, parsed):
            if self.config.pagination.kind in kinds and parsed.record_count == 0:
                parsed = replace(parsed, record_count=1)
            return original(self, response, role, parsed)
        return _advance
    _wrap(Dr.DiscoveryState, "_advance", make)


@fault("pagination-stop-page-param-ignores-empty")
def _():
    _ignores_empty(("page_parameter",))


@fault("pagination-stop-offset-ignores-empty")
def _():
    _ignores_empty(("offset_parameter",))


@fault("pagination-stop-next-selector-ignores-empty")
def _():
    _ignores_empty(("next_selector",))


@fault("pagination-stop-short-page-stops")
def _():
    Dr = D()
    previous: dict = {}

    def make(original):
        def _advance(self, response, role, parsed):
            if role == "listing" and self.config.pagination.kind != "none":
                before = previous.get(self.base_url) if self.index else None
                previous[self.base_url] = parsed.record_count
                if before is not None and 0 < parsed.record_count < before:
                    state = original(self, response, role, parsed)
                    return state if state.stop is not None else state._finish("empty_page")
            return original(self, response, role, parsed)
        return _advance
    _wrap(Dr.DiscoveryState, "_advance", make)


_same_as("pagination-stop-repeat-marked-incomplete", "coverage-discovery-incomplete-on-repeat")
_same_as("pagination-stop-ceiling-marked-complete", "coverage-discovery-complete-at-ceiling")
_same_as("pagination-stop-ceiling-off-by-one", "pagination-ceiling-plus-one")
_same_as("pagination-stop-ceiling-sets-budget-exhausted", "coverage-budget-discovery-ceiling-named")
_same_as("pagination-stop-link-header-first-link-taken", "pagination-link-first-entry")
_same_as("pagination-stop-link-header-unquoted-rel-missed", "pagination-link-rel-unquoted-ignored")
_same_as("pagination-stop-cursor-null-token-stringified", "pagination-cursor-null-token-stringified")
_same_as("pagination-stop-next-selector-last-match", "pagination-next-selector-last-match")


@fault("pagination-stop-cursor-repeat-only-adjacent")
def _():
    import collection.discover.pagination as pg
    Dr = D()
    last: dict = {}

    def make(original):
        def _next_page(self, response, parsed, base):
            if self.config.pagination.kind == pg.CURSOR and parsed.cursor is not None:
                previous = last.get(self.base_url) if self.index > 1 else None
                last[self.base_url] = parsed.cursor
                if parsed.cursor != previous:
                    # only the previous token counts as a repeat, and its address may be asked again
                    self = replace(self, tokens=frozenset(), requested=frozenset())
            return original(self, response, parsed, base)
        return _next_page
    _wrap(Dr.DiscoveryState, "_next_page", make)


# --- which listing discovery_failure names (COV-07, REF-03, REF-12, D-24) ----------------------------
_same_as("discovery-failure-names-discovery-url", "coverage-discovery-failure-names-pattern")
_same_as("discovery-failure-names-last-successful", "coverage-discovery-failure-names-last")
_same_as("discovery-failure-run-fails-although-addresses-listed", "refusal-discovery-failed-partial")


def _on_failed(fn):
    Dr = D()

    def make(original):
        def _failed(self, url, role, reason, message=""):
            return fn(self, url, role, reason, lambda state=self, u=url: original(state, u, role, reason, message))
        return _failed
    _wrap(Dr.DiscoveryState, "_failed", make)


@fault("discovery-failure-names-last-failure")
def _():
    _on_failed(lambda s, url, role, reason, orig: replace(orig(), failure=url) if role == "child" else orig())


@fault("discovery-failure-http-error-treated-as-end")
def _():
    _on_failed(lambda s, url, role, reason, orig: s._finish("empty_page")
               if role == "listing" and s.index >= 1 and reason.startswith("http_status_") else orig())


@fault("discovery-failure-cursor-names-previous-token")
def _():
    def previous(s, url, role, reason, orig):
        if s.config.pagination.kind == "cursor" and role == "listing" and s.failure is None and s.index >= 1:
            return replace(orig(), failure=s.base_url)
        return orig()
    _on_failed(previous)


@fault("discovery-failure-robots-disallowed-listing-null")
def _():
    _on_failed(lambda s, url, role, reason, orig: replace(orig(), failure=s.failure)
               if reason == "robots_disallowed" else orig())


@fault("discovery-failure-offlist-next-names-current")
def _():
    Dr = D()

    def make(original):
        def _next_page(self, response, parsed, base):
            out = original(self, response, parsed, base)
            if out.stop == "next_unreachable" and self.failure is None:
                return replace(out, failure=response.url)
            return out
        return _next_page
    _wrap(Dr.DiscoveryState, "_next_page", make)


@fault("discovery-failure-names-raw-next-address")
def _():
    import collection.discover.pagination as pg
    Dr = D()
    raw_of: dict = {}

    def make(original):
        def _next_page(self, response, parsed, base):
            out = original(self, response, parsed, base)
            kind = self.config.pagination.kind
            if kind in (pg.LINK_HEADER, pg.NEXT_SELECTOR) and out.queue:
                raw = pg.next_link_target(response.header_values("link")) if kind == pg.LINK_HEADER else parsed.next_link
                if raw is not None:
                    raw_of[out.queue[0][0]] = raw
            return out
        return _next_page
    _wrap(Dr.DiscoveryState, "_next_page", make)
    _on_failed(lambda s, url, role, reason, orig: orig(s, raw_of.get(url, url)))


@fault("discovery-failure-retry-success-still-failure")
def _():
    import collection.fetch.fetcher as F
    Dr = D()
    retried: set = set()
    original_fetch = F.Fetcher.fetch

    def fetch(self, spec, *a, **kw):
        out = original_fetch(self, spec, *a, **kw)
        if spec.kind == "listing" and out.outcome == "fetched" and out.retries > 0:
            retried.add(spec.url)
        return out
    F.Fetcher.fetch = fetch

    def make(original):
        def feed(self, result):
            out = original(self, result)
            if result.url in retried and out.failure is None:
                stop = out.stop if out.stop is not None else None
                out = replace(out, failure=result.url)
                if stop in ("single_request", "empty_page", "no_next", "sitemap_index_read"):
                    out = replace(out, stop="listing_failed")
            return out
        return feed
    _wrap(Dr.DiscoveryState, "feed", make)


if __name__ == "__main__":
    missing = [fid for fid in FAULTS if fid not in MUTANTS]
    print(f"{len(FAULTS) - len(missing)} of {len(FAULTS)} faults implemented")
    for fid in missing:
        print(f"  not seeded: {fid}: {NOT_SEEDED.get(fid, 'NO REASON GIVEN')}")
