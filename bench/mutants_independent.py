"""Independent faults: every fault of bench/faults.json implemented as a mutant of collection.

bench/faults.json was written by a helper who never read collection/, from the
specification and its clauses alone (see bench/FAULTS.md for its provenance). Each fault
keeps its id, clauses and text; the function under it seeds that fault into this
project's code as faithfully as the text allows (no fault is weakened to make it killable).
Faults not implemented here are listed by `python bench/mutants_independent.py`.
"""

from __future__ import annotations

import json
from pathlib import Path

from mutation_kit import (MUTANTS, _canonical, _coverage, _provenance, _reorder, _replace_everywhere, _split,  # noqa: F401
                          _wrap, dig, mutant, reg_add, reg_drop, reg_post, reg_pre, schema_edit)

FAULTS = {f["id"]: f for f in json.loads((Path(__file__).resolve().parent / "faults.json").read_text(encoding="utf-8"))}


def fault(fid: str):
    """Register the function below as fault `fid` of faults.json (its text and clauses)."""
    f = FAULTS[fid]
    return mutant(fid, f["family"], f["fault"], clauses=tuple(f["clauses"]), mode=f["mode"], fault_set="independent")


# === the faults ===========================================================================

# --- registration ----------------------------------------------------------------------------
DISC_MAX = lambda sub: sub.get("maximum") == 1024  # noqa: E731  (discovery.max_requests, not limits')


@fault("registration-concurrency-capped-at-25")
def _():
    schema_edit("concurrency", maximum=25)


@fault("registration-concurrency-zero")
def _():
    schema_edit("concurrency", minimum=0)


@fault("registration-disc-max-requests-1024-refused")
def _():
    schema_edit("max_requests", DISC_MAX, maximum=1023)


@fault("registration-disc-max-requests-zero")
def _():
    schema_edit("max_requests", DISC_MAX, minimum=0)


@fault("registration-fetches-10000-refused")
def _():
    schema_edit("max_fetches_per_run", maximum=9999)


@fault("registration-fetches-zero")
def _():
    schema_edit("max_fetches_per_run", minimum=0)


@fault("registration-interval-3601")
def _():
    schema_edit("min_interval_seconds", maximum=None)


@fault("registration-interval-one-refused")
def _():
    schema_edit("min_interval_seconds", exclusiveMinimum=1)


@fault("registration-max-pages-50000-refused")
def _():
    schema_edit("max_pages", maximum=49999)


@fault("registration-max-pages-50001")
def _():
    schema_edit("max_pages", maximum=50001)


@fault("registration-max-pages-zero")
def _():
    schema_edit("max_pages", minimum=0)


@fault("registration-origins-eight-refused")
def _():
    schema_edit("allowed_origins", maxItems=7)


@fault("registration-origins-empty-accepted")
def _():
    schema_edit("allowed_origins", minItems=None)


@fault("registration-origins-nine-accepted")
def _():
    schema_edit("allowed_origins", maxItems=9)


@fault("registration-origin-duplicate-accepted")
def _():
    schema_edit("allowed_origins", uniqueItems=None)


@fault("registration-retries-four")
def _():
    schema_edit("retries", maximum=4)


@fault("registration-retries-negative")
def _():
    schema_edit("retries", minimum=None)


@fault("registration-revisit-3599")
def _():
    schema_edit("seconds", minimum=3599)


@fault("registration-revisit-3600-refused")
def _():
    schema_edit("seconds", exclusiveMinimum=3600)


@fault("registration-timeout-121")
def _():
    schema_edit("request_timeout_seconds", maximum=121)


@fault("registration-timeout-five-refused")
def _():
    schema_edit("request_timeout_seconds", exclusiveMinimum=5)


@fault("registration-timeout-four")
def _():
    schema_edit("request_timeout_seconds", minimum=4)


@fault("registration-collection-extra-member")
def _():
    schema_edit("collection", additionalProperties=None)


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


# === end of the faults ====================================================================

if __name__ == "__main__":
    missing = [fid for fid in FAULTS if fid not in MUTANTS]
    print(f"{len(FAULTS) - len(missing)} of {len(FAULTS)} faults implemented")
    for fid in missing:
        print(f"  not implemented: {fid}: {FAULTS[fid]['fault']}")
