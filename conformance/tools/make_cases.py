"""Writes conformance/cases/**.json from the definitions below (python -m conformance.tools.make_cases).

Every expectation here is derived by hand from the specification (seeds/000, spec/clauses.md
and its Decisions): digests are SHA-256 of the bodies written here (D-30), relations follow
D-02 (RFC 4180, LF, quoting only where needed) sorted by page_id then ordinal (PROV-14,
D-29), timestamps are `{{ts}}` (the spec does not fix when a fetch "happens"). The JSON
files are the suite; this script is only how they were typed.
"""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
from pathlib import Path

from conformance import CASES_DIR

H = "https://www.example.com"
TS = "{{ts}}"
CASES: list[dict] = []
OPTIONS = '{"columns":[{"name":"title","pointer":"/title"}],"records":{"pointer":"/rows"}}'
PROV = "page_id,page_url,page_fetched_at,page_content_sha256,page_revision,page_discovered_at,page_ordinal"


def recipe(**changes) -> dict:
    doc = {
        "name": "conformance_corpus",
        "description": "A small corpus for the conformance suite.",
        "source_class": "user_url",
        "data_classification": "public",
        "locator": {"kind": "https_url", "display_locator": f"{H}/list"},
        "rights_claim": {"claimed_basis": "public_domain_asserted",
                         "claim_evidence_digest": "sha256:" + "ab" * 32},
        "connector": {"adapter_id": "public.https.collection@2.0.0", "credential_mode": "none",
                      "origin": H,
                      "parameters": [{"name": "reader.family_id", "value": "json.tabular"},
                                     {"name": "reader.family_version", "value": "1.0.0"},
                                     {"name": "reader.decode_options", "value": OPTIONS}]},
        "limits": {"max_source_bytes": 1048576, "max_rows": 1000, "max_requests": 100},
        "collection": {
            "discovery": {"kind": "json_api", "url": f"{H}/list", "records": {"pointer": ""},
                          "link": {"pointer": "/link"}, "identity": {"pointer": "/id"}, "max_requests": 10},
            "pages": {"allowed_origins": [H], "max_fetches_per_run": 50, "concurrency": 1,
                      "min_interval_seconds": 1, "request_timeout_seconds": 30, "retries": 0},
        },
    }
    for path, value in changes.items():
        set_path(doc, path, value)
    return doc


DELETE = object()


def set_path(doc, path: str, value) -> None:
    value = value if value is DELETE else copy.deepcopy(value)
    parts = path.split(".")
    node = doc
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    last = parts[-1]
    if value is DELETE:
        if isinstance(node, list):
            del node[int(last)]
        else:
            node.pop(last, None)
    elif isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


def ex(url, body="", status=200, ctype="application/json", headers=(), **behaviour) -> dict:
    response = {"status": status, "headers": ([["Content-Type", ctype]] if ctype else []) + [list(h) for h in headers]}
    if body != "":
        response["body"] = {"text": body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))}
    response.update(behaviour)
    return {"request": {"method": "GET", "url": url}, "response": response}


def seq(url, *responses) -> dict:
    return {"request": {"method": "GET", "url": url}, "per": "request",
            "responses": [r["response"] for r in responses]}


def listing(url, *ids, ctype="application/json", **kw):
    """A json_api listing whose records are {id, link: /p/<id>} (or (id, link) pairs)."""
    records = [{"id": i, "link": f"/p/{i}"} if isinstance(i, str) else {"id": i[0], "link": i[1], **(i[2] if len(i) > 2 else {})}
               for i in ids]
    return ex(url, records, ctype=ctype, **kw)


def page_body(*titles) -> str:
    return json.dumps({"rows": [{"title": t} for t in titles]}, separators=(",", ":"))


def page(pid_or_url, *titles, **kw):
    url = pid_or_url if pid_or_url.startswith("https://") else f"{H}/p/{pid_or_url}"
    return ex(url, page_body(*titles), **kw)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def csv_field(value: str) -> str:
    if any(c in value for c in ',"\n\r'):
        return '"' + value.replace('"', '""') + '"'
    return value


def fetch_ts(pid: str, revision: int = 1, scope: str = "") -> str:
    """The placeholder of the instant page `pid` was fetched at for `revision` (the same
    instant in every run that keeps those rows, D-31)."""
    return f"{{{{ts:{scope}fetch:{pid}:{revision}}}}}"


def disc_ts(pid: str, scope: str = "") -> str:
    """The placeholder of the instant `pid` was first discovered (kept for good, D-31)."""
    return f"{{{{ts:{scope}disc:{pid}}}}}"


def relation(*pages, reader_columns=("title",), scope="") -> str:
    """pages: (page_id, url, titles, revision[, body]) → the expected relation text.
    Timestamps are named placeholders (fetch_ts, disc_ts), compared by value; `scope`
    separates a case's epochs (a resync discovers every page anew)."""
    lines = [",".join((*reader_columns, PROV))]
    for entry in sorted(pages, key=lambda p: p[0].encode("utf-8")):
        pid, url, titles, revision = entry[:4]
        body = entry[4] if len(entry) > 4 else page_body(*titles)
        for n, t in enumerate(titles, 1):
            lines.append(",".join(csv_field(x) for x in (t, pid, url))
                         + f",{fetch_ts(pid, revision, scope)},{sha(body)},{revision},{disc_ts(pid, scope)},{n}")
    return "\n".join(lines) + "\n"


def P(pid, titles, revision=1, url=None, body=None):
    entry = (pid, url or f"{H}/p/{pid}", tuple(titles), revision)
    return entry + ((body,) if body is not None else ())


def cov(**kw) -> dict:
    block = {"discovered": 0, "discovery_requests": 1, "discovery_complete": True, "discovery_failure": None,
             "duplicates_dropped": 0, "known": 0, "fetched_this_run": 0, "unchanged": 0, "changed": 0,
             "failed_this_run": 0, "pending": 0, "failed": 0, "skipped": 0, "budget_exhausted": None,
             "complete": True}
    block.update(kw)
    return block


def fetched(revision=1):
    return {"state": "fetched", "revision": revision, "failure_code": None}


def failed(code, revision=0):
    return {"state": "failed", "revision": revision, "failure_code": code}


def pending(revision=0):
    return {"state": "pending", "revision": revision}


def skipped(landed=None):
    facts = {"state": "skipped_origin", "failure_code": "skipped_origin"}
    if landed is not None:
        facts["landed_url"] = landed
    return facts


def ok(coverage, relation_text=None, ledger=None, requests=None, **extra) -> dict:
    e = {"outcome": "ok", "coverage": coverage}
    if relation_text is not None:
        e["relation"] = relation_text
    e["ledger"] = ledger or {}
    e["requests"] = requests or {}
    e.update(extra)
    return e


def refused(code, requests=None) -> dict:
    e = {"outcome": "refused", "code": code}
    if requests is not None:
        e["requests"] = requests
    return e


def run(exchanges, expect, **kw) -> dict:
    return {**kw, "exchanges": exchanges, "expect": expect}


def case(area, cid, description, clauses, rec, runs, **kw) -> None:
    CASES.append({"area": area, "id": cid, "description": description, "clauses": clauses, "kind": "runs",
                  **kw, "recipe": rec, "runs": runs})


def reg(cid, description, clauses, rec=None, registrable=False, refusals=(), text=None, **kw) -> None:
    c = {"area": "registration", "id": cid, "description": description, "clauses": clauses, "kind": "registration", **kw}
    if text is not None:
        c["recipe_text"] = text
    else:
        c["recipe"] = rec
    c["expect"] = {"registrable": registrable}
    if refusals:
        c["expect"]["refusals"] = [{"pointer": p, "code": code} if code else {"pointer": p} for p, code in refusals]
    CASES.append(c)


def write() -> None:
    for area_dir in CASES_DIR.glob("*"):
        if area_dir.is_dir():
            shutil.rmtree(area_dir)
    ids = set()
    for c in CASES:
        c = copy.deepcopy(c)
        area = c.pop("area")
        assert c["id"] not in ids, c["id"]
        ids.add(c["id"])
        folder = CASES_DIR / area
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{c['id']}.json").write_text(json.dumps(c, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(CASES)} cases written under {CASES_DIR}")


# ======================================================================================
# The cases
# ======================================================================================

# --- registration ------------------------------------------------------------------------
EXAMPLE = {
    "name": "council_decisions",
    "description": "Published decisions of the council, one page per decision.",
    "source_class": "user_url", "data_classification": "public",
    "locator": {"kind": "https_url", "display_locator": "https://www.example.com/decisions"},
    "rights_claim": {"claimed_basis": "public_domain_asserted",
                     "claim_evidence_digest": "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
    "connector": {"adapter_id": "public.https.collection@2.0.0", "credential_mode": "none",
                  "origin": "https://www.example.com",
                  "parameters": [{"name": "reader.family_id", "value": "html.web_extract"},
                                 {"name": "reader.family_version", "value": "1.1.0"},
                                 {"name": "reader.decode_options", "value": "{}"}]},
    "limits": {"max_source_bytes": 1073741824, "max_rows": 200000, "max_requests": 1064},
    "collection": {
        "discovery": {"kind": "json_api", "url": "https://www.example.com/wp-json/wp/v2/decisions?per_page=100",
                      "pagination": {"kind": "page_parameter", "parameter": "page", "first": 1},
                      "records": {"pointer": ""}, "link": {"pointer": "/link"}, "identity": {"pointer": "/id"},
                      "revision": {"pointer": "/modified"}, "max_requests": 40},
        "pages": {"allowed_origins": ["https://www.example.com"], "max_pages": 4000, "max_fetches_per_run": 500,
                  "concurrency": 2, "min_interval_seconds": 1, "request_timeout_seconds": 30, "retries": 2,
                  "revisit": {"kind": "revision_hint"}}}}

reg("reg-worked-example", "The specification's worked example (council_decisions) registers as written.",
    ["REG-01", "REG-06", "REG-37", "REG-39", "REG-40", "REG-41", "REG-42", "REG-43", "READ-01", "READ-02", "READ-03", "FETCH-11"],
    EXAMPLE, registrable=True)
reg("reg-minimal-defaults", "A collection stating only required members registers; every bound with a default may be absent.",
    ["REG-18", "REG-19", "REG-23", "REG-24", "REG-25", "REG-26", "REG-28", "REG-29", "REG-30"],
    recipe(**{"collection.discovery.max_requests": DELETE, "collection.pages": {"allowed_origins": [H]},
              "limits.max_requests": 10064}), registrable=True)
reg("reg-adapter-1-0-0", "A document naming public.https.collection@1.0.0 is refused with HOSTED_COLLECTION_UNSUPPORTED.",
    ["REF-09", "REF-10", "REF-11"], recipe(**{"connector.adapter_id": "public.https.collection@1.0.0"}),
    refusals=[("/connector/adapter_id", "HOSTED_COLLECTION_UNSUPPORTED")])
reg("reg-collection-required", "A 2.0.0 document without `collection` is refused.", ["REG-07"],
    recipe(collection=DELETE), refusals=[("/collection", "COLLECTION_REQUIRED")])
reg("reg-collection-forbidden", "`collection` beside another adapter is refused.", ["REG-08"],
    recipe(**{"connector.adapter_id": "public.https.file@1.0.0"}), refusals=[("/collection", "COLLECTION_FORBIDDEN")])
reg("reg-collection-without-pages", "`collection` must hold `pages`.", ["REG-09"],
    recipe(**{"collection.pages": DELETE}), refusals=[("/collection/pages", "SCHEMA_REQUIRED")])
reg("reg-collection-without-discovery", "`collection` must hold `discovery`.", ["REG-09"],
    recipe(**{"collection.discovery": DELETE}), refusals=[("/collection/discovery", "SCHEMA_REQUIRED")])
reg("reg-collection-extra-member", "`collection` holds nothing but discovery and pages.", ["REG-10"],
    recipe(**{"collection.schedule": {"every": "day"}}), refusals=[("/collection/schedule", "SCHEMA_UNKNOWN_MEMBER")])
reg("reg-max-requests-required", "A collection must state limits.max_requests.", ["REG-11", "REF-02"],
    recipe(**{"limits.max_requests": DELETE}), refusals=[("/limits/max_requests", "MAX_REQUESTS_REQUIRED")])
reg("reg-reader-family-unsupported", "A Reader outside the four collection families is refused.", ["REG-12", "REF-02"],
    recipe(**{"connector.parameters.0.value": "pdf.text"}), refusals=[("/connector/parameters/0/value", "READER_FAMILY_UNSUPPORTED")])
reg("reg-credential-mode", "A collection must use credential_mode none.", ["REG-13", "REF-02", "FETCH-02"],
    recipe(**{"connector.credential_mode": "api_key"}), refusals=[("/connector/credential_mode", None)])
reg("reg-window-forbidden", "A collection may not declare a window.", ["REG-14", "REF-02"],
    recipe(window={"start": "2024-01-01"}), refusals=[("/window", "WINDOW_FORBIDDEN")])
reg("reg-closed-true", "A collection may not declare closed.", ["REG-15", "REF-02"],
    recipe(closed=True), refusals=[("/closed", "CLOSED_FORBIDDEN")])
reg("reg-closed-false", "closed: false written out is refused like closed: true.", ["REG-15", "REG-16"],
    recipe(closed=False), refusals=[("/closed", "CLOSED_FORBIDDEN")])
for name, path, value in [
    ("discovery-max-requests-zero", "collection.discovery.max_requests", 0),
    ("discovery-max-requests-1025", "collection.discovery.max_requests", 1025),
    ("max-pages-50001", "collection.pages.max_pages", 50001),
    ("max-fetches-10001", "collection.pages.max_fetches_per_run", 10001),
    ("concurrency-zero", "collection.pages.concurrency", 0),
    ("concurrency-10001", "collection.pages.concurrency", 10001),
    ("min-interval-zero", "collection.pages.min_interval_seconds", 0),
    ("min-interval-3601", "collection.pages.min_interval_seconds", 3601),
    ("timeout-4", "collection.pages.request_timeout_seconds", 4),
    ("timeout-121", "collection.pages.request_timeout_seconds", 121),
    ("retries-4", "collection.pages.retries", 4),
]:
    clause = {"discovery.max_requests": "REG-18", "max_pages": "REG-23", "max_fetches_per_run": "REG-24",
              "concurrency": "REG-25", "min_interval_seconds": "REG-26", "request_timeout_seconds": "REG-28",
              "retries": "REG-29"}[next(k for k in ("discovery.max_requests", "max_pages", "max_fetches_per_run", "concurrency",
                                                   "min_interval_seconds", "request_timeout_seconds", "retries") if path.endswith(k))]
    extra = {}
    if name == "max-fetches-10001":
        extra["limits.max_requests"] = 20000
    reg(f"reg-bound-{name}", f"{path} = {value} lies outside its bound and is refused before any run.", ["REG-17", "REG-37", "D-46", clause],
        recipe(**{path: value}, **extra), refusals=[("/" + path.replace(".", "/"), "SCHEMA_BOUND")])
for name, path, value in [
    ("max-fetches-zero", "collection.pages.max_fetches_per_run", 0),
    ("max-pages-zero", "collection.pages.max_pages", 0),
    ("retries-negative", "collection.pages.retries", -1),
]:
    clause = {"max_fetches_per_run": "REG-24", "max_pages": "REG-23", "retries": "REG-29"}[path.rsplit(".", 1)[1]]
    reg(f"reg-bound-{name}", f"{path} = {value} lies below its bound and is refused (bounds are checked at both ends).",
        ["REG-17", "D-46", clause], recipe(**{path: value}), refusals=[("/" + path.replace(".", "/"), "SCHEMA_BOUND")])
reg("reg-allowed-origins-eight", "allowed_origins with exactly eight entries registers.", ["REG-20"],
    recipe(**{"collection.pages.allowed_origins": [H] + [f"https://h{i}.example.com" for i in range(7)]}), registrable=True)
reg("reg-allowed-origins-duplicate", "An allowed origin listed twice is refused.", ["REG-20", "D-40"],
    recipe(**{"collection.pages.allowed_origins": [H, H]}), refusals=[("/collection/pages/allowed_origins", None)])
reg("reg-credential-mode-missing", "credential_mode is required: an absent one is refused, not taken as none.", ["REG-13"],
    recipe(**{"connector.credential_mode": DELETE}), refusals=[("/connector/credential_mode", None)])
reg("reg-explicit-http-member", "An explicit member URL that is not absolute https is refused at registration.", ["D-38"],
    recipe(**{"collection.discovery": {"kind": "explicit", "members": [{"page_id": "a", "url": f"{H}/p/a"},
                                                                      {"page_id": "b", "url": "http://www.example.com/p/b"}]}}),
    refusals=[("/collection/discovery/members/1/url", None)])
reg("reg-explicit-over-max-pages", "More explicit members than pages.max_pages are refused.", ["D-38"],
    recipe(**{"collection.discovery": {"kind": "explicit", "members": [{"page_id": x, "url": f"{H}/p/{x}"} for x in "abc"]},
              "collection.pages.max_pages": 2}),
    refusals=[("/collection/discovery/members", None)])
reg("reg-reader-xml-tabular", "xml.tabular is one of the four collection Reader families and registers.", ["REG-12", "READ-01"],
    recipe(**{"connector.parameters": [{"name": "reader.family_id", "value": "xml.tabular"},
                                       {"name": "reader.family_version", "value": "1.0.0"},
                                       {"name": "reader.decode_options", "value": '{"columns":[{"name":"title","path":"title"}],"records":{"path":"/items/item"}}'}]}),
    registrable=True)
reg("reg-budget-sum-defaults", "The REG-33 sum uses the defaults of absent members: 64 listing requests + 30 fetches exceed 90.",
    ["REG-33", "REG-18"], recipe(**{"collection.discovery.max_requests": DELETE, "collection.pages.max_fetches_per_run": 30,
                                    "limits.max_requests": 90}),
    refusals=[("/limits/max_requests", "REQUEST_BUDGET_SUM")])
reg("reg-budget-sum-defaults-fit", "With the default 64 listing requests, 64 + 30 = 94 fits limits.max_requests 94.",
    ["REG-33", "REG-34", "REG-18"], recipe(**{"collection.discovery.max_requests": DELETE, "collection.pages.max_fetches_per_run": 30,
                                               "limits.max_requests": 94}), registrable=True)
reg("reg-bounds-at-limits", "Every bound at its inclusive limit registers.", ["REG-17", "REG-18", "REG-23", "REG-24", "REG-25", "REG-26", "REG-28", "REG-29"],
    recipe(**{"collection.discovery.max_requests": 1024, "collection.pages.max_pages": 50000,
              "collection.pages.max_fetches_per_run": 10000, "collection.pages.concurrency": 10000,
              "collection.pages.min_interval_seconds": 3600, "collection.pages.request_timeout_seconds": 120,
              "collection.pages.retries": 3, "limits.max_requests": 11024}), registrable=True)
reg("reg-allowed-origins-empty", "allowed_origins needs at least one entry.", ["REG-20"],
    recipe(**{"collection.pages.allowed_origins": []}), refusals=[("/collection/pages/allowed_origins", None)])
reg("reg-allowed-origins-nine", "allowed_origins holds at most eight entries.", ["REG-20"],
    recipe(**{"collection.pages.allowed_origins": [H] + [f"https://h{i}.example.com" for i in range(8)]}),
    refusals=[("/collection/pages/allowed_origins", "SCHEMA_LENGTH")])
reg("reg-allowed-origins-missing", "allowed_origins is required.", ["REG-20"],
    recipe(**{"collection.pages.allowed_origins": DELETE}), refusals=[("/collection/pages/allowed_origins", "SCHEMA_REQUIRED")])
reg("reg-origin-not-canonical", "An allowed origin with a trailing slash is not a canonical https origin.", ["REG-21", "D-40"],
    recipe(**{"collection.pages.allowed_origins": [H, "https://b.example.com/"]}),
    refusals=[("/collection/pages/allowed_origins/1", "ORIGIN_NOT_CANONICAL")])
reg("reg-origin-uppercase", "An allowed origin with an uppercase host is refused, not normalised.", ["REG-21", "D-40"],
    recipe(**{"collection.pages.allowed_origins": [H, "https://B.example.com"]}),
    refusals=[("/collection/pages/allowed_origins/1", "ORIGIN_NOT_CANONICAL")])
reg("reg-discovery-origin-not-allowed", "allowed_origins must include the discovery address's origin.", ["REG-22", "REF-02"],
    recipe(**{"collection.pages.allowed_origins": ["https://b.example.com"]}),
    refusals=[("/collection/pages/allowed_origins", "DISCOVERY_ORIGIN_NOT_ALLOWED")])
reg("reg-fraction", "A number written with a fraction (1.0) is refused even where an integer is due.", ["REG-27", "D-41"],
    text=json.dumps(recipe(), indent=1).replace('"min_interval_seconds": 1', '"min_interval_seconds": 1.0'),
    refusals=[("/collection/pages/min_interval_seconds", "JSON_FRACTIONAL_NUMBER")])
reg("reg-fraction-elsewhere", "A fractional number anywhere in the document is refused (here 1e3 in limits).", ["REG-27", "D-41"],
    text=json.dumps(recipe(), indent=1).replace('"max_rows": 1000', '"max_rows": 1e3'),
    refusals=[("/limits/max_rows", "JSON_FRACTIONAL_NUMBER")])
reg("reg-revisit-kind", "revisit.kind must be never, revision_hint or interval.", ["REG-30"],
    recipe(**{"collection.pages.revisit": {"kind": "daily"}}), refusals=[("/collection/pages/revisit/kind", None)])
reg("reg-interval-short", "interval revisit needs seconds >= 3600.", ["REG-31"],
    recipe(**{"collection.pages.revisit": {"kind": "interval", "seconds": 3599}}),
    refusals=[("/collection/pages/revisit/seconds", None)])
reg("reg-interval-3600", "interval revisit with exactly 3600 seconds registers.", ["REG-31"],
    recipe(**{"collection.pages.revisit": {"kind": "interval", "seconds": 3600}}), registrable=True)
reg("reg-revision-hint-without-extractor", "revision_hint needs a revision extractor; json_api without revision.pointer has none.",
    ["REG-32", "D-42"], recipe(**{"collection.pages.revisit": {"kind": "revision_hint"}}),
    refusals=[("/collection/pages/revisit/kind", "REVISION_HINT_WITHOUT_EXTRACTOR")])
reg("reg-revision-hint-html-index", "html_index has no revision hint, so revision_hint is refused.", ["REG-32", "DISC-16", "D-42"],
    recipe(**{"collection.discovery": {"kind": "html_index", "url": f"{H}/list", "records": {"selector": "a.d"}, "max_requests": 10},
              "collection.pages.revisit": {"kind": "revision_hint"}}),
    refusals=[("/collection/pages/revisit/kind", "REVISION_HINT_WITHOUT_EXTRACTOR")])
reg("reg-revision-hint-sitemap", "sitemap carries lastmod, so revision_hint registers.", ["REG-32", "DISC-20"],
    recipe(**{"collection.discovery": {"kind": "sitemap", "url": f"{H}/sitemap.xml", "max_requests": 10},
              "collection.pages.revisit": {"kind": "revision_hint"}}), registrable=True)
reg("reg-budget-sum-exceeded", "discovery.max_requests + max_fetches_per_run above limits.max_requests is refused.",
    ["REG-33", "REF-01"], recipe(**{"limits.max_requests": 59}), refusals=[("/limits/max_requests", "REQUEST_BUDGET_SUM")])
reg("reg-budget-sum-exact", "A limits.max_requests equal to the sum registers; the 2x formula is advice.", ["REG-34", "FETCH-11"],
    recipe(**{"limits.max_requests": 60}), registrable=True)
reg("reg-discovery-url-http", "The first request's address must be https.", ["REG-35", "REF-01"],
    recipe(**{"collection.discovery.url": "http://www.example.com/list"}),
    refusals=[("/collection/discovery/url", None)])
reg("reg-discovery-url-userinfo", "A discovery address with userinfo is refused.", ["REG-35", "URL-12"],
    recipe(**{"collection.discovery.url": "https://u:p@www.example.com/list"}),
    refusals=[("/collection/discovery/url", None)])
reg("reg-discovery-url-port", "A discovery address on another port is refused.", ["REG-35", "URL-11"],
    recipe(**{"collection.discovery.url": "https://www.example.com:8443/list"}),
    refusals=[("/collection/discovery/url", None)])
reg("reg-records-pointer-syntax", "A records pointer that is not RFC 6901 syntax is refused.", ["REG-36", "REF-01", "DISC-07", "D-14"],
    recipe(**{"collection.discovery.records.pointer": "items"}),
    refusals=[("/collection/discovery/records/pointer", "POINTER_SYNTAX")])
reg("reg-pagination-pairing", "cursor pagination is not allowed for html_index.", ["REG-38", "DISC-17", "D-43"],
    recipe(**{"collection.discovery": {"kind": "html_index", "url": f"{H}/list", "records": {"selector": "a.d"},
                                       "pagination": {"kind": "cursor", "parameter": "c", "pointer": "/next"}}}),
    refusals=[("/collection/discovery/pagination/kind", "PAGINATION_KIND_NOT_ALLOWED")])
reg("reg-pagination-sitemap-paged", "sitemap allows only pagination none.", ["REG-38", "DISC-21"],
    recipe(**{"collection.discovery": {"kind": "sitemap", "url": f"{H}/sitemap.xml",
                                       "pagination": {"kind": "page_parameter", "parameter": "p"}}}),
    refusals=[("/collection/discovery/pagination/kind", "PAGINATION_KIND_NOT_ALLOWED")])
reg("reg-pagination-json-link-header", "json_api allows link_header pagination.", ["DISC-12", "PAG-09"],
    recipe(**{"collection.discovery.pagination": {"kind": "link_header"}}), registrable=True)
reg("reg-explicit-paged", "explicit allows only pagination none.", ["REG-38", "DISC-25"],
    recipe(**{"collection.discovery": {"kind": "explicit", "members": [{"page_id": "a", "url": f"{H}/p/a"}],
                                       "pagination": {"kind": "page_parameter", "parameter": "p"}}}),
    refusals=[("/collection/discovery/pagination/kind", "PAGINATION_KIND_NOT_ALLOWED")])
reg("reg-pagination-parameter-present", "A paged discovery address may not already carry its own parameter.",
    ["PAG-15", "PAG-16", "REF-01"],
    recipe(**{"collection.discovery.url": f"{H}/list?page=1",
              "collection.discovery.pagination": {"kind": "page_parameter", "parameter": "page"}}),
    refusals=[("/collection/discovery/url", "PAGINATION_PARAMETER_PRESENT")])
reg("reg-discovery-kind", "discovery.kind must be one of the four kinds.", ["DISC-01"],
    recipe(**{"collection.discovery.kind": "graphql"}), refusals=[("/collection/discovery/kind", None)])
reg("reg-pagination-kind", "pagination.kind must be one of the six grammars.", ["PAG-01"],
    recipe(**{"collection.discovery.pagination": {"kind": "infinite_scroll"}}),
    refusals=[("/collection/discovery/pagination/kind", None)])
reg("reg-reserved-column", "A pinned Reader declaring a reserved provenance column name is refused.", ["READ-07", "PROV-04", "REF-02"],
    recipe(**{"connector.parameters.2.value": '{"columns":[{"name":"page_ordinal","pointer":"/n"}],"records":{"pointer":"/rows"}}'}),
    refusals=[("/connector/parameters/2/value", "RESERVED_COLUMN_NAME")])
reg("reg-duplicate-column", "A pinned Reader declaring two columns of one name is refused.", ["READ-08"],
    recipe(**{"connector.parameters.2.value": '{"columns":[{"name":"t","pointer":"/a"},{"name":"t","pointer":"/b"}],"records":{"pointer":"/rows"}}'}),
    refusals=[("/connector/parameters/2/value", "DUPLICATE_COLUMN_NAME")])
reg("reg-connector-origin-mismatch", "connector.origin must be the discovery address's origin.", ["D-39"],
    recipe(**{"connector.origin": "https://b.example.com", "collection.pages.allowed_origins": [H, "https://b.example.com"]}),
    refusals=[("/connector/origin", "CONNECTOR_ORIGIN_MISMATCH")])
reg("reg-explicit-duplicate-id", "Two explicit members with one page_id are refused.", ["D-38"],
    recipe(**{"collection.discovery": {"kind": "explicit", "members": [{"page_id": "a", "url": f"{H}/p/a"},
                                                                      {"page_id": "a", "url": f"{H}/p/b"}]}}),
    refusals=[("/collection/discovery/members/1/page_id", "EXPLICIT_DUPLICATE_PAGE_ID")])

# --- discovery ---------------------------------------------------------------------------
L = f"{H}/list"
BASIC_RELATION = relation(P("a", ["A1", "A2"]), P("b", ["B1"]))

case("discovery", "disc-json-api-basic",
     "json_api with records pointer \"\": two records, two pages, one run; coverage, relation and ledger exact.",
     ["DISC-07", "DISC-08", "DISC-09", "DISC-10", "DISC-27", "DISC-35", "URL-01", "PAG-02", "PROV-01", "PROV-02",
      "PROV-03", "PROV-05", "PROV-06", "PROV-07", "PROV-08", "PROV-09", "PROV-10", "PROV-12", "PROV-13", "PROV-14",
      "PROV-16", "READ-04", "READ-05", "MERGE-02", "MERGE-03", "MERGE-04", "MERGE-11", "MERGE-12", "COV-03", "COV-04",
      "COV-05", "COV-06", "COV-09", "COV-10", "COV-12", "COV-17", "COV-18", "OPS-08", "FETCH-01", "FETCH-26",
      "D-02", "D-03", "D-16", "D-30", "D-56"],
     recipe(),
     [run([listing(L, "a", "b"), page("a", "A1", "A2"), page("b", "B1")],
          ok(cov(discovered=2, known=2, fetched_this_run=2), BASIC_RELATION,
             {"a": fetched(), "b": fetched()}, {"count": 3, "order": [L, f"{H}/p/a", f"{H}/p/b"], "max_per_url": 1},
             ledger_pages=["a", "b"], truncated=False, corrections=[]))])

case("discovery", "disc-records-pointer-nested", "json_api records pointer /data/items names the array inside the body.",
     ["DISC-07"], recipe(**{"collection.discovery.records.pointer": "/data/items"}),
     [run([ex(L, {"data": {"items": [{"id": "a", "link": "/p/a"}]}, "total": 1}), page("a", "A1")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A1"])), {"a": fetched()}, {"count": 2}))])

case("discovery", "disc-identity-falls-back-to-url", "Without identity.pointer the page id is the resolved canonical URL.",
     ["DISC-10", "PROV-05", "PROV-06", "D-28"], recipe(**{"collection.discovery.identity": DELETE}),
     [run([listing(L, "a"), page("a", "A1")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P(f"{H}/p/a", ["A1"], url=f"{H}/p/a")),
             {f"{H}/p/a": fetched()}, {"count": 2}))])

case("discovery", "disc-identity-number", "A numeric identity is stringified as canonical JSON (123 becomes \"123\").",
     ["DISC-10", "D-27"], recipe(),
     [run([ex(L, [{"id": 123, "link": "/p/a"}]), page("a", "A1")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("123", ["A1"], url=f"{H}/p/a")),
             {"123": fetched()}, {"count": 2}))])

case("discovery", "disc-duplicates-collapse", "A page id listed twice in one pass keeps its first occurrence and counts one duplicate.",
     ["DISC-33", "DISC-34", "COV-08", "D-28"], recipe(),
     [run([ex(L, [{"id": "a", "link": "/p/a"}, {"id": "b", "link": "/p/b"}, {"id": "a", "link": "/p/other"}]),
           page("a", "A1"), page("b", "B1")],
          ok(cov(discovered=2, known=2, fetched_this_run=2, duplicates_dropped=1),
             relation(P("a", ["A1"]), P("b", ["B1"])), {"a": fetched(), "b": fetched()},
             {"count": 3, "never": [f"{H}/p/other"]}))])

case("discovery", "disc-duplicate-urls-canonical", "Without identity.pointer two spellings of one canonical URL collapse to one page.",
     ["DISC-33", "URL-19", "D-28"], recipe(**{"collection.discovery.identity": DELETE}),
     [run([ex(L, [{"link": "/p/a"}, {"link": "https://WWW.example.com:443/p/a#top"}]), page("a", "A1")],
          ok(cov(discovered=1, known=1, fetched_this_run=1, duplicates_dropped=1),
             relation(P(f"{H}/p/a", ["A1"], url=f"{H}/p/a")), {f"{H}/p/a": fetched()}, {"count": 2}))])

HTML_RECIPE = {"collection.discovery": {"kind": "html_index", "url": f"{H}/index", "records": {"selector": "a.d"}, "max_requests": 10}}
case("discovery", "disc-html-index", "html_index: records are selector matches, the link is href, the id the canonical URL, no revision hint.",
     ["DISC-13", "DISC-14", "DISC-15", "DISC-16", "DISC-04", "FETCH-04"], recipe(**HTML_RECIPE),
     [run([ex(f"{H}/index", '<html><body><script src="/app.js"></script><form action="/submit"><input name=q></form>'
              '<a class="d" href="/p/a">A</a><a href="/p/x">not a record</a><a class="d" href="p/b">B</a></body></html>', ctype="text/html; charset=utf-8"),
           page("a", "A1"), page("https://www.example.com/p/b", "B1")],
          ok(cov(discovered=2, known=2, fetched_this_run=2),
             relation(P(f"{H}/p/a", ["A1"], url=f"{H}/p/a"), P(f"{H}/p/b", ["B1"], url=f"{H}/p/b")),
             {f"{H}/p/a": fetched(), f"{H}/p/b": fetched()},
             {"count": 3, "never": [f"{H}/p/x", f"{H}/app.js", f"{H}/submit"]}))])

case("discovery", "disc-html-link-attribute", "html_index with link.attribute reads the address from that attribute.",
     ["DISC-14"], recipe(**{**HTML_RECIPE, "collection.discovery.link": {"attribute": "data-href"}}),
     [run([ex(f"{H}/index", '<a class="d" data-href="/p/a" href="/p/wrong">A</a>', ctype="text/html"), page("a", "A1"), page("wrong", "W")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P(f"{H}/p/a", ["A1"], url=f"{H}/p/a")),
             {f"{H}/p/a": fetched()}, {"count": 2, "never": [f"{H}/p/wrong"]}))])

SM = {"collection.discovery": {"kind": "sitemap", "url": f"{H}/sitemap.xml", "max_requests": 10}}

URLSET = ('<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
          '<url><loc>https://www.example.com/p/a</loc><lastmod>2024-01-01</lastmod></url>'
          '<url><loc>https://www.example.com/p/b?x=1&amp;y=2</loc></url></urlset>')
case("discovery", "disc-sitemap-urlset", "sitemap: every <url><loc> is a page (predefined entity &amp; allowed), id the canonical URL.",
     ["DISC-18", "DISC-19", "DISC-04", "D-35"], recipe(**SM),
     [run([ex(f"{H}/sitemap.xml", URLSET, ctype="application/xml"), page("a", "A1"), page(f"{H}/p/b?x=1&y=2", "B1")],
          ok(cov(discovered=2, known=2, fetched_this_run=2),
             relation(P(f"{H}/p/a", ["A1"], url=f"{H}/p/a"), P(f"{H}/p/b?x=1&y=2", ["B1"], url=f"{H}/p/b?x=1&y=2")),
             {f"{H}/p/a": fetched(), f"{H}/p/b?x=1&y=2": fetched()}, {"count": 3}))])

case("discovery", "disc-sitemap-lastmod-revisit", "sitemap lastmod is the revision hint: a moved lastmod refetches the page under revision_hint.",
     ["DISC-20", "MERGE-29", "D-33"], recipe(**SM, **{"collection.pages.revisit": {"kind": "revision_hint"}}),
     [run([ex(f"{H}/sitemap.xml", URLSET, ctype="text/xml"), page("a", "A1"), page(f"{H}/p/b?x=1&y=2", "B1")],
          ok(cov(discovered=2, known=2, fetched_this_run=2), relation(P(f"{H}/p/a", ["A1"], url=f"{H}/p/a"), P(f"{H}/p/b?x=1&y=2", ["B1"], url=f"{H}/p/b?x=1&y=2")), {f"{H}/p/a": fetched()}, {"count": 3})),
      run([ex(f"{H}/sitemap.xml", URLSET.replace("2024-01-01", "2024-02-01"), ctype="text/xml"), page("a", "A1 new")],
          ok(cov(discovered=2, known=2, fetched_this_run=1, changed=1),
             relation(P(f"{H}/p/a", ["A1 new"], 2, url=f"{H}/p/a"), P(f"{H}/p/b?x=1&y=2", ["B1"], url=f"{H}/p/b?x=1&y=2")),
             {f"{H}/p/a": fetched(2), f"{H}/p/b?x=1&y=2": fetched(1)},
             {"order": [f"{H}/sitemap.xml", f"{H}/p/a"]}, corrections=[f"{H}/p/a"]))])

INDEX = ('<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
         '<sitemap><loc>https://www.example.com/sm1.xml</loc></sitemap>'
         '<sitemap><loc>https://www.example.com/sm2.xml</loc></sitemap></sitemapindex>')
NESTED = ('<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
          '<sitemap><loc>https://www.example.com/deep.xml</loc></sitemap></sitemapindex>')
case("discovery", "disc-sitemapindex-one-level", "A sitemapindex is followed exactly one level; an index inside a child is not expanded.",
     ["DISC-22", "DISC-23", "DISC-02"], recipe(**SM),
     [run([ex(f"{H}/sitemap.xml", INDEX, ctype="application/xml"),
           ex(f"{H}/sm1.xml", '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://www.example.com/p/a</loc></url></urlset>', ctype="application/xml"),
           ex(f"{H}/sm2.xml", NESTED, ctype="application/xml"),
           ex(f"{H}/deep.xml", '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://www.example.com/p/deep</loc></url></urlset>', ctype="application/xml"),
           page("a", "A1"), page("deep", "D1")],
          ok(cov(discovered=1, known=1, fetched_this_run=1, discovery_requests=3), relation(P(f"{H}/p/a", ["A1"], url=f"{H}/p/a")),
             {f"{H}/p/a": fetched()}, {"count": 4, "never": [f"{H}/deep.xml", f"{H}/p/deep"]}, ledger_pages=[f"{H}/p/a"]))])

OFF_INDEX = ('<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
             '<sitemap><loc>https://www.example.com/sm1.xml</loc></sitemap>'
             '<sitemap><loc>https://other.example.org/sm9.xml</loc></sitemap></sitemapindex>')
case("discovery", "disc-sitemapindex-offlist-child", "D-24: a sitemapindex child outside allowed_origins is skipped, never requested, and is no listing failure.",
     ["D-24", "DISC-22", "COV-07"], recipe(**SM),
     [run([ex(f"{H}/sitemap.xml", OFF_INDEX, ctype="application/xml"),
           ex(f"{H}/sm1.xml", '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://www.example.com/p/a</loc></url></urlset>', ctype="application/xml"),
           ex("https://other.example.org/sm9.xml", '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://www.example.com/p/z</loc></url></urlset>', ctype="application/xml"),
           page("a", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1, discovery_requests=2), relation(P(f"{H}/p/a", ["A"], url=f"{H}/p/a")),
             {f"{H}/p/a": fetched()}, {"count": 3, "never": ["https://other.example.org/sm9.xml"]}))])

POINTERS = {"collection.discovery.records.pointer": "/data/0/items", "collection.discovery.link.pointer": "/a~1b",
            "collection.discovery.identity.pointer": "/k~01"}
case("discovery", "disc-pointer-tokens", "RFC 6901 in discovery pointers: array index tokens, ~1 is '/', ~0 is '~' and ~01 is the two characters '~1'; a record without identity takes its canonical URL (D-27).",
     ["DISC-07", "DISC-09", "DISC-10", "D-27"], recipe(**POINTERS),
     [run([ex(L, {"data": [{"items": [{"a/b": "/p/a", "k~1": "ka"}, {"a/b": "/p/x"}]}]}), page("a", "A"), page("x", "X")],
          ok(cov(discovered=2, known=2, fetched_this_run=2), relation(P("ka", ["A"], url=f"{H}/p/a"), P(f"{H}/p/x", ["X"], url=f"{H}/p/x")),
             {"ka": fetched(), f"{H}/p/x": fetched()}, {"count": 3}, ledger_pages=["ka", f"{H}/p/x"]))])

case("merge", "merge-sort-numeric-ids", "page_id sorts bytewise even when ids look like numbers: \"10\" before \"9\".", ["PROV-14", "D-29"], recipe(),
     [run([listing(L, "9", "10"), page("9", "N"), page("10", "T")],
          ok(cov(discovered=2, known=2, fetched_this_run=2), relation(P("9", ["N"]), P("10", ["T"])), {}, {"count": 3}))])

case("fetch", "fetch-429-retried-after", "429 is retried like 5xx (D-08), no sooner than its Retry-After says.", ["D-08", "FETCH-21"],
     recipe(**{"collection.pages.retries": 1}),
     [run([listing(L, "a"), seq(f"{H}/p/a", ex(f"{H}/p/a", "", status=429, ctype="text/plain", headers=[("Retry-After", "40")]), page("a", "A"))],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A"])), {"a": fetched()}, {"count": 3, "max_per_url": 2},
             time_order=[["disc:a", 40, "fetch:a:1"]], clock_slack_seconds=3600))])

SB_LIST = '[{"id":"a","link":"/p/a"},{"id":"b","link":"/p/b"}]'
case("fetch", "fetch-source-bytes-listings-count", "Listing bytes count toward max_source_bytes (D-20): the listing and page a fit, page b would pass the cap and is not taken; a listing refused for its media type is refused unread and costs nothing.",
     ["D-20", "FETCH-14", "DISC-31"], recipe(**{"collection.discovery.pagination": {"kind": "page_parameter", "parameter": "page"}, "limits.max_source_bytes": len(SB_LIST) + len(page_body("A")) + 5}),
     [run([ex(f"{L}?page=1", SB_LIST), ex(f"{L}?page=2", "<html>" + "x" * 4000 + "</html>", ctype="text/html"), page("a", "A"), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=1, discovery_requests=2, discovery_complete=False, discovery_failure=f"{L}?page=2",
                 pending={"between": [0, 1]}, failed={"between": [0, 1]}, failed_this_run={"between": [0, 1]},
                 budget_exhausted="max_source_bytes", complete=False),
             relation(P("a", ["A"])), {"a": fetched()}, {"include": [f"{H}/p/a"]}))])

case("discovery", "disc-sitemap-doctype-refused", "A sitemap carrying a DOCTYPE is not read: with nothing to continue from the run is refused.",
     ["DISC-05", "REF-03"], recipe(**SM),
     [run([ex(f"{H}/sitemap.xml", '<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY e "https://www.example.com/p/a">]>'
              '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>&e;</loc></url></urlset>', ctype="application/xml"),
           page("a", "A1")],
          refused("COLLECTION_DISCOVERY_FAILED", {"never": [f"{H}/p/a"]}))])

case("discovery", "disc-sitemap-entity-after-data", "A sitemap declaring an entity, after a good first run: discovery fails, rows stay.",
     ["DISC-06", "REF-12", "COV-07"], recipe(**SM),
     [run([ex(f"{H}/sitemap.xml", URLSET, ctype="application/xml"), page("a", "A1"), page(f"{H}/p/b?x=1&y=2", "B1")],
          ok(cov(discovered=2, known=2, fetched_this_run=2), relation(P(f"{H}/p/a", ["A1"], url=f"{H}/p/a"), P(f"{H}/p/b?x=1&y=2", ["B1"], url=f"{H}/p/b?x=1&y=2")), {}, {"count": 3})),
      run([ex(f"{H}/sitemap.xml", '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>&e;</loc></url></urlset>', ctype="application/xml")],
          ok(cov(discovered=0, known=2, discovery_complete=False, discovery_failure=f"{H}/sitemap.xml", complete=False),
             None, {f"{H}/p/a": fetched()}, {"count": 1}, relation_same_as_run=1))])

case("discovery", "disc-explicit", "explicit members are used as given and no listing request is made.",
     ["DISC-24", "DISC-26", "PROV-05"],
     recipe(**{"collection.discovery": {"kind": "explicit", "members": [{"page_id": "first", "url": f"{H}/p/a"},
                                                                       {"page_id": "second", "url": f"{H}/p/b"}]}, "limits.max_requests": 200}),
     [run([page("a", "A1"), page("b", "B1")],
          ok(cov(discovered=2, known=2, fetched_this_run=2, discovery_requests=0),
             relation(P("first", ["A1"], url=f"{H}/p/a"), P("second", ["B1"], url=f"{H}/p/b")),
             {"first": fetched(), "second": fetched()}, {"count": 2, "order": [f"{H}/p/a", f"{H}/p/b"]}))])

case("discovery", "disc-listing-media-type-refused", "A json_api listing answering text/html is refused before its body is read; a first run has nothing to continue from.",
     ["DISC-28", "DISC-31", "REF-03"], recipe(),
     [run([listing(L, "a", ctype="text/html"), page("a", "A1")],
          refused("COLLECTION_DISCOVERY_FAILED", {"never": [f"{H}/p/a"]}))])

case("discovery", "disc-listing-media-type-after-data", "A refused listing media type after a good run: discovery_failure names it, every row stays.",
     ["DISC-32", "REF-12", "COV-07", "COV-29", "MERGE-25", "MERGE-26"], recipe(),
     [run([listing(L, "a", "b"), page("a", "A1", "A2"), page("b", "B1")],
          ok(cov(discovered=2, known=2, fetched_this_run=2), BASIC_RELATION, {}, {"count": 3})),
      run([listing(L, "a", "b", ctype="text/plain")],
          ok(cov(discovered=0, known=2, discovery_complete=False, discovery_failure=L, complete=False),
             None, {"a": fetched(), "b": fetched()}, {"count": 1}, relation_same_as_run=1))])

PP = {"collection.discovery.pagination": {"kind": "page_parameter", "parameter": "page"}}
case("discovery", "disc-json-media-types", "json_api accepts application/json, application/ld+json, application/vnd.api+json and text/json (parameters ignored).",
     ["DISC-28", "D-37"], recipe(**PP),
     [run([listing(f"{L}?page=1", "a", ctype="application/ld+json"), listing(f"{L}?page=2", "b", ctype="application/vnd.api+json; charset=utf-8"),
           listing(f"{L}?page=3", "c", ctype="text/json"), ex(f"{L}?page=4", [], ctype="Application/JSON"),
           page("a", "A1"), page("b", "B1"), page("c", "C1")],
          ok(cov(discovered=3, known=3, fetched_this_run=3, discovery_requests=4),
             relation(P("a", ["A1"]), P("b", ["B1"]), P("c", ["C1"])), {}, {"count": 7}))])

case("discovery", "disc-sitemap-text-xml", "A sitemap listing answered as text/xml is accepted.", ["DISC-29"],
     recipe(**SM),
     [run([ex(f"{H}/sitemap.xml", URLSET, ctype="text/xml; charset=utf-8"), page("a", "A1"), page(f"{H}/p/b?x=1&y=2", "B1")],
          ok(cov(discovered=2, known=2, fetched_this_run=2), None, {}, {"count": 3}, relation=relation(P(f"{H}/p/a", ["A1"], url=f"{H}/p/a"), P(f"{H}/p/b?x=1&y=2", ["B1"], url=f"{H}/p/b?x=1&y=2"))))])

case("discovery", "disc-sitemap-rss-root", "A sitemap listing answered as application/rss+xml is accepted, but an <rss> root is not the declared shape.",
     ["DISC-29", "D-36", "REF-07"], recipe(**SM),
     [run([ex(f"{H}/sitemap.xml", '<?xml version="1.0"?><rss version="2.0"><channel><item><link>https://www.example.com/p/a</link></item></channel></rss>',
              ctype="application/rss+xml"), page("a", "A")], refused("COLLECTION_MERGE_INVALID", {"never": [f"{H}/p/a"]}))])

case("discovery", "disc-sitemap-json-refused", "A sitemap listing answered as application/json is refused.", ["DISC-29", "DISC-31"],
     recipe(**SM), [run([ex(f"{H}/sitemap.xml", URLSET, ctype="application/json")], refused("COLLECTION_DISCOVERY_FAILED"))])

case("discovery", "disc-html-xhtml", "An html_index listing answered as application/xhtml+xml is accepted; text/plain is not.",
     ["DISC-30", "DISC-31", "REF-12"], recipe(**HTML_RECIPE),
     [run([ex(f"{H}/index", '<html xmlns="http://www.w3.org/1999/xhtml"><body><a class="d" href="/p/a">A</a></body></html>', ctype="application/xhtml+xml"), page("a", "A1")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P(f"{H}/p/a", ["A1"], url=f"{H}/p/a")), {}, {"count": 2})),
      run([ex(f"{H}/index", '<a class="d" href="/p/a">A</a>', ctype="text/plain")],
          ok(cov(discovered=0, known=1, discovery_complete=False, discovery_failure=f"{H}/index", complete=False),
             None, {f"{H}/p/a": fetched()}, {"count": 1}, relation_same_as_run=1))])

case("discovery", "disc-no-detail-links", "Links inside detail pages are never followed.", ["DISC-03", "DISC-02", "FETCH-03"],
     recipe(),
     [run([listing(L, "a"), ex(f"{H}/p/a", json.dumps({"rows": [{"title": "A1", "link": "/p/z"}], "next": "/p/y"}, separators=(",", ":")))],
          ok(cov(discovered=1, known=1, fetched_this_run=1),
             relation(P("a", ["A1"], body=json.dumps({"rows": [{"title": "A1", "link": "/p/z"}], "next": "/p/y"}, separators=(",", ":")))),
             {"a": fetched()}, {"count": 2, "never": [f"{H}/p/z", f"{H}/p/y"]}))])

case("discovery", "disc-record-without-link", "A record with no usable link is dropped and counted nowhere.", ["D-27"], recipe(),
     [run([ex(L, [{"id": "a", "link": "/p/a"}, {"id": "n"}, {"id": "m", "link": None}]), page("a", "A1")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A1"])), {"a": fetched()}, {"count": 2}, ledger_pages=["a"]))])

# --- pagination --------------------------------------------------------------------------
case("pagination", "pag-page-parameter", "page_parameter counts up from first and stops at the first empty page.",
     ["PAG-03", "PAG-04", "PAG-05", "PAG-16", "D-03", "D-04", "D-23"],
     recipe(**{"collection.discovery.pagination": {"kind": "page_parameter", "parameter": "page", "first": 2}}),
     [run([listing(f"{L}?page=2", "a", "b"), listing(f"{L}?page=3", "c"), ex(f"{L}?page=4", []), listing(f"{L}?page=5", "z"),
           page("a", "A1"), page("b", "B1"), page("c", "C1")],
          ok(cov(discovered=3, known=3, fetched_this_run=3, discovery_requests=3),
             relation(P("a", ["A1"]), P("b", ["B1"]), P("c", ["C1"])), {},
             {"order": [f"{L}?page=2", f"{L}?page=3", f"{L}?page=4", f"{H}/p/a", f"{H}/p/b", f"{H}/p/c"],
              "never": [f"{L}?page=1", f"{L}?page=5", L]}))])

case("pagination", "pag-page-parameter-query", "page_parameter appends its parameter after an existing query, keeping its order (the example's ?per_page=100).",
     ["PAG-04", "PAG-18", "URL-08", "D-23"],
     recipe(**{"collection.discovery.url": f"{L}?per_page=2&sort=asc", **PP}),
     [run([listing(f"{L}?per_page=2&sort=asc&page=1", "a", "b"), ex(f"{L}?per_page=2&sort=asc&page=2", []), page("a", "A1"), page("b", "B1")],
          ok(cov(discovered=2, known=2, fetched_this_run=2, discovery_requests=2),
             relation(P("a", ["A1"]), P("b", ["B1"])), {}, {"order": [f"{L}?per_page=2&sort=asc&page=1", f"{L}?per_page=2&sort=asc&page=2", f"{H}/p/a", f"{H}/p/b"]}))])

case("pagination", "pag-page-parameter-default-first", "page_parameter without first starts at 1.", ["PAG-03"], recipe(**PP),
     [run([listing(f"{L}?page=1", "a"), ex(f"{L}?page=2", []), page("a", "A1")],
          ok(cov(discovered=1, known=1, fetched_this_run=1, discovery_requests=2), relation(P("a", ["A1"])), {},
             {"order": [f"{L}?page=1", f"{L}?page=2", f"{H}/p/a"], "never": [f"{L}?page=0"]}))])

case("pagination", "pag-short-page-continues", "A short but non-empty page does not stop page_parameter.", ["D-03", "PAG-05"], recipe(**PP),
     [run([listing(f"{L}?page=1", "a", "b", "c"), listing(f"{L}?page=2", "d"), listing(f"{L}?page=3", "e"), ex(f"{L}?page=4", []),
           page("a", "A"), page("b", "B"), page("c", "C"), page("d", "D"), page("e", "E")],
          ok(cov(discovered=5, known=5, fetched_this_run=5, discovery_requests=4), None, {"e": fetched()}, {"count": 9},
             relation=relation(*(P(x, [x.upper()]) for x in "abcde"))))])

case("pagination", "pag-offset-parameter", "offset_parameter starts at first and advances by step.", ["PAG-06", "PAG-07", "PAG-08"],
     recipe(**{"collection.discovery.pagination": {"kind": "offset_parameter", "parameter": "offset", "first": 10, "step": 2}}),
     [run([listing(f"{L}?offset=10", "a", "b"), listing(f"{L}?offset=12", "c"), ex(f"{L}?offset=14", []), page("a", "A"), page("b", "B"), page("c", "C")],
          ok(cov(discovered=3, known=3, fetched_this_run=3, discovery_requests=3), relation(P("a", ["A"]), P("b", ["B"]), P("c", ["C"])), {},
             {"order": [f"{L}?offset=10", f"{L}?offset=12", f"{L}?offset=14", f"{H}/p/a", f"{H}/p/b", f"{H}/p/c"]}))])

case("pagination", "pag-offset-defaults", "offset_parameter defaults: first 0, step 1.", ["PAG-06", "PAG-07"],
     recipe(**{"collection.discovery.pagination": {"kind": "offset_parameter", "parameter": "o"}}),
     [run([listing(f"{L}?o=0", "a"), listing(f"{L}?o=1", "b"), ex(f"{L}?o=2", []), page("a", "A"), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=2, discovery_requests=3), relation(P("a", ["A"]), P("b", ["B"])), {},
             {"order": [f"{L}?o=0", f"{L}?o=1", f"{L}?o=2", f"{H}/p/a", f"{H}/p/b"]}))])

LH = {"collection.discovery.pagination": {"kind": "link_header"}}
case("pagination", "pag-link-header", "link_header follows Link rel=next (resolved) and stops when there is none.", ["PAG-09", "PAG-10", "D-24"],
     recipe(**LH),
     [run([listing(L, "a", headers=[("Link", '</list2?p=x>; rel="next", </list>; rel="first"')]), listing(f"{H}/list2?p=x", "b"), page("a", "A"), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=2, discovery_requests=2), relation(P("a", ["A"]), P("b", ["B"])), {},
             {"order": [L, f"{H}/list2?p=x", f"{H}/p/a", f"{H}/p/b"]}))])

case("pagination", "pag-link-header-repeated", "link_header stops on a repeated address; discovery is still complete.", ["PAG-10", "D-22", "URL-19"],
     recipe(**LH),
     [run([listing(L, "a", headers=[("Link", '<https://WWW.example.com/list2>; rel="next"')]),
           listing(f"{H}/list2", "b", headers=[("Link", '<https://www.example.com:443/list#x>; rel="next"')]), page("a", "A"), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=2, discovery_requests=2), relation(P("a", ["A"]), P("b", ["B"])), {},
             {"count": 4, "max_per_url": 1}))])

case("pagination", "pag-link-header-empty", "link_header stops on an empty page even when it names a next page.", ["PAG-10"], recipe(**LH),
     [run([listing(L, "a", headers=[("Link", '</list2>; rel="next"')]), ex(f"{H}/list2", [], headers=[("Link", '</list3>; rel="next"')]),
           listing(f"{H}/list3", "z"), page("a", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1, discovery_requests=2), relation(P("a", ["A"])), {}, {"never": [f"{H}/list3"], "count": 3}))])

CUR = {"collection.discovery.records.pointer": "/items",
       "collection.discovery.pagination": {"kind": "cursor", "parameter": "cursor", "pointer": "/next"}}
case("pagination", "pag-cursor", "cursor: the first request is the bare address, the token comes from the body at pointer, an absent token stops.",
     ["PAG-11", "PAG-12", "D-23"], recipe(**CUR),
     [run([ex(L, {"items": [{"id": "a", "link": "/p/a"}], "next": "t 1/2"}), ex(f"{L}?cursor=t%201%2F2", {"items": [{"id": "b", "link": "/p/b"}], "next": 7}),
           ex(f"{L}?cursor=7", {"items": [{"id": "c", "link": "/p/c"}]}), page("a", "A"), page("b", "B"), page("c", "C")],
          ok(cov(discovered=3, known=3, fetched_this_run=3, discovery_requests=3), relation(P("a", ["A"]), P("b", ["B"]), P("c", ["C"])), {},
             {"order": [L, f"{L}?cursor=t%201%2F2", f"{L}?cursor=7", f"{H}/p/a", f"{H}/p/b", f"{H}/p/c"]}))])

case("pagination", "pag-cursor-repeated-token", "cursor stops when a token repeats; discovery is complete.", ["PAG-12", "D-22"], recipe(**CUR),
     [run([ex(L, {"items": [{"id": "a", "link": "/p/a"}], "next": "t1"}), ex(f"{L}?cursor=t1", {"items": [{"id": "b", "link": "/p/b"}], "next": "t1"}),
           page("a", "A"), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=2, discovery_requests=2), relation(P("a", ["A"]), P("b", ["B"])), {}, {"count": 4, "max_per_url": 1}))])

case("pagination", "pag-cursor-empty-page", "cursor stops on an empty page even with a token; a null token counts as absent.", ["PAG-12", "D-23"], recipe(**CUR),
     [run([ex(L, {"items": [{"id": "a", "link": "/p/a"}], "next": "t1"}), ex(f"{L}?cursor=t1", {"items": [], "next": "t2"}),
           ex(f"{L}?cursor=t2", {"items": [{"id": "z", "link": "/p/z"}], "next": None}), page("a", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1, discovery_requests=2), relation(P("a", ["A"])), {}, {"never": [f"{L}?cursor=t2"]}))])

NS = {"collection.discovery": {"kind": "html_index", "url": f"{H}/index", "records": {"selector": "a.d"},
                               "pagination": {"kind": "next_selector", "selector": "a.next"}, "max_requests": 10}}
case("pagination", "pag-next-selector", "next_selector follows the href of the first match and stops when nothing matches.", ["PAG-13", "PAG-14"],
     recipe(**NS),
     [run([ex(f"{H}/index", '<a class="d" href="/p/a">A</a><a class="next" href="/index?n=2">next</a><a class="next" href="/index?n=9">other</a>', ctype="text/html"),
           ex(f"{H}/index?n=2", '<a class="d" href="/p/b">B</a>', ctype="text/html"), ex(f"{H}/index?n=9", '<a class="d" href="/p/z">Z</a>', ctype="text/html"),
           page("a", "A"), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=2, discovery_requests=2),
             relation(P(f"{H}/p/a", ["A"], url=f"{H}/p/a"), P(f"{H}/p/b", ["B"], url=f"{H}/p/b")), {},
             {"order": [f"{H}/index", f"{H}/index?n=2", f"{H}/p/a", f"{H}/p/b"], "never": [f"{H}/index?n=9"]}))])

case("pagination", "pag-next-selector-repeated", "next_selector stops on a repeated address.", ["PAG-14"], recipe(**NS),
     [run([ex(f"{H}/index", '<a class="d" href="/p/a">A</a><a class="next" href="/index?n=2">next</a>', ctype="text/html"),
           ex(f"{H}/index?n=2", '<a class="d" href="/p/b">B</a><a class="next" href="/index">first</a>', ctype="text/html"),
           page("a", "A"), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=2, discovery_requests=2), None, {}, {"count": 4, "max_per_url": 1},
             relation=relation(P(f"{H}/p/a", ["A"], url=f"{H}/p/a"), P(f"{H}/p/b", ["B"], url=f"{H}/p/b"))))])

case("pagination", "pag-ceiling", "Discovery never issues more than discovery.max_requests listing requests; stopping at the ceiling leaves discovery incomplete without a failure.",
     ["PAG-17", "PAG-05", "COV-05", "COV-06", "MERGE-03", "D-21", "D-22"],
     recipe(**PP, **{"collection.discovery.max_requests": 2}),
     [run([listing(f"{L}?page=1", "a"), listing(f"{L}?page=2", "b"), listing(f"{L}?page=3", "c"), page("a", "A"), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=2, discovery_requests=2, discovery_complete=False, complete=False),
             relation(P("a", ["A"]), P("b", ["B"])), {}, {"count": 4, "never": [f"{L}?page=3"]}))])

case("pagination", "pag-none-one-request", "Pagination none issues exactly one listing request even when the body names more.", ["PAG-02", "DISC-02", "REG-19"],
     recipe(),
     [run([listing(L, "a", headers=[("Link", '</list2>; rel="next"')]), listing(f"{H}/list2", "b"), page("a", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A"])), {}, {"count": 2, "never": [f"{H}/list2"]}))])

case("pagination", "pag-empty-first-page", "An empty first page is a natural stop: zero discovered, discovery complete, run complete.", ["PAG-05", "COV-06", "COV-29"],
     recipe(**PP),
     [run([ex(f"{L}?page=1", [])], ok(cov(), relation(), {}, {"count": 1}, ledger_pages=[]))])

API = f"{H}/api/v2/list"
case("pagination", "pag-link-header-rels", "link_header reads rel case-insensitively, as one of several space-separated types, quoted or not; it takes the entry whose rel is next (not the first entry) and resolves it against the listing it came from.",
     ["PAG-09", "URL-01", "D-24"], recipe(**LH, **{"collection.discovery.url": API}),
     [run([listing(API, "a", headers=[("Link", '</api/v2/first>; rel="first", <list2>; rel=NEXT')]),
           listing(f"{H}/api/v2/list2", "b", headers=[("Link", '<list3>; rel="last next"')]),
           listing(f"{H}/api/v2/list3", "c", headers=[("Link", "<list4>; rel=next")]),
           listing(f"{H}/api/v2/list4", "d"), listing(f"{H}/api/v2/first", "z"), listing(f"{H}/list2", "y"),
           page("a", "A"), page("b", "B"), page("c", "C"), page("d", "D")],
          ok(cov(discovered=4, known=4, fetched_this_run=4, discovery_requests=4),
             relation(*(P(x, [x.upper()]) for x in "abcd")), {},
             {"order": [API, f"{H}/api/v2/list2", f"{H}/api/v2/list3", f"{H}/api/v2/list4"] + [f"{H}/p/{x}" for x in "abcd"]}))])

case("pagination", "pag-next-off-allowlist", "A next address outside allowed_origins is never requested: discovery stops there, incomplete, and names it (D-24); the pages already listed are fetched.",
     ["D-24", "COV-07", "URL-10"], recipe(**LH),
     [run([listing(L, "a", headers=[("Link", '<https://other.example.org/list2>; rel="next"')]),
           listing("https://other.example.org/list2", "b"), page("a", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1, discovery_complete=False,
                 discovery_failure="https://other.example.org/list2", complete=False),
             relation(P("a", ["A"])), {"a": fetched()}, {"order": [L, f"{H}/p/a"], "never": ["https://other.example.org/list2"]}))])

case("pagination", "pag-cursor-unusable-tokens", "cursor: an empty-string or null token on a non-empty page is no token: discovery stops complete, without a request for it.",
     ["PAG-12", "D-23"], recipe(**CUR),
     [run([ex(L, {"items": [{"id": "a", "link": "/p/a"}], "next": ""}), ex(f"{L}?cursor=", {"items": [{"id": "z", "link": "/p/z"}]}), page("a", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A"])), {}, {"order": [L, f"{H}/p/a"]})),
      run([ex(L, {"items": [{"id": "a", "link": "/p/a"}], "next": None}), ex(f"{L}?cursor=null", {"items": [{"id": "z", "link": "/p/z"}]})],
          ok(cov(discovered=1, known=1), None, {}, {"order": [L]}, relation_same_as_run=1))])

case("pagination", "pag-ceiling-counts-retries", "A listing retry counts against discovery.max_requests (D-05): with a ceiling of 2, a listing answered 503 then 200 leaves no request for page 2.",
     ["D-05", "PAG-17", "COV-05"], recipe(**PP, **{"collection.discovery.max_requests": 2, "collection.pages.retries": 1}),
     [run([seq(f"{L}?page=1", ex(f"{L}?page=1", "", status=503, ctype="text/plain"), listing(f"{L}?page=1", "a")),
           listing(f"{L}?page=2", "b"), page("a", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1, discovery_requests=2, discovery_complete=False, complete=False),
             relation(P("a", ["A"])), {"a": fetched()}, {"order": [f"{L}?page=1", f"{L}?page=1", f"{H}/p/a"], "never": [f"{L}?page=2"]},
             clock_slack_seconds=3600))])

case("discovery", "disc-duplicates-counted-per-occurrence", "duplicates_dropped counts every dropped occurrence: an id listed three times drops two.",
     ["COV-08", "DISC-34"], recipe(),
     [run([ex(L, [{"id": "a", "link": "/p/a"}, {"id": "a", "link": "/p/a2"}, {"id": "a", "link": "/p/a3"}, {"id": "b", "link": "/p/b"}]),
           page("a", "A"), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=2, duplicates_dropped=2), relation(P("a", ["A"]), P("b", ["B"])), {},
             {"count": 3}))])

# --- urls ---------------------------------------------------------------------------------
NOID = {"collection.discovery.identity": DELETE}
case("urls", "url-canonical-form", "Links are resolved against the listing and canonicalised: scheme and host lowercased, fragment and :443 dropped, dot segments removed; path case, trailing slash and query order kept.",
     ["URL-01", "URL-02", "URL-03", "URL-04", "URL-05", "URL-06", "URL-07", "URL-08", "URL-19", "PROV-06", "D-54"],
     recipe(**NOID, **{"collection.discovery.url": f"{H}/dir/list"}),
     [run([ex(f"{H}/dir/list", [{"link": "HTTPS://WWW.Example.COM:443/Case/Path/#frag"}, {"link": "q?b=2&a=1"}, {"link": "../up/./x"},
                                {"link": "/Case/Path"}]),
           page(f"{H}/Case/Path/", "T"), page(f"{H}/dir/q?b=2&a=1", "Q"), page(f"{H}/up/x", "U"), page(f"{H}/Case/Path", "N")],
          ok(cov(discovered=4, known=4, fetched_this_run=4),
             relation(P(f"{H}/Case/Path/", ["T"], url=f"{H}/Case/Path/"), P(f"{H}/dir/q?b=2&a=1", ["Q"], url=f"{H}/dir/q?b=2&a=1"),
                      P(f"{H}/up/x", ["U"], url=f"{H}/up/x"), P(f"{H}/Case/Path", ["N"], url=f"{H}/Case/Path")),
             {}, {"count": 5, "never": [f"{H}/dir/q?a=1&b=2", f"{H}/case/path/"]},
             ledger_pages=[f"{H}/Case/Path/", f"{H}/dir/q?b=2&a=1", f"{H}/up/x", f"{H}/Case/Path"]))])

OFF = ["http://www.example.com/p/h", "https://other.example.org/p/o", "https://www.example.com:8443/p/port", "https://user:pw@www.example.com/p/u"]
case("urls", "url-skipped-origin", "Links that are not https, off the allowlist, on another port or with userinfo are skipped_origin and never fetched.",
     ["URL-09", "URL-10", "URL-11", "URL-12", "URL-17", "URL-18", "MERGE-31", "COV-15", "D-45"], recipe(),
     [run([ex(L, [{"id": "a", "link": "/p/a"}, {"id": "h", "link": OFF[0]}, {"id": "o", "link": OFF[1]}, {"id": "port", "link": OFF[2]},
                  {"id": "u", "link": OFF[3]}]), page("a", "A")],
          ok(cov(discovered=5, known=5, fetched_this_run=1, skipped=4), relation(P("a", ["A"])),
             {"a": fetched(), "h": skipped(), "o": skipped(), "port": skipped(), "u": skipped()},
             {"count": 2, "never": OFF + ["https://www.example.com/p/u", "https://www.example.com/p/h", "https://www.example.com/p/port"]})),
      run([ex(L, [{"id": "a", "link": "/p/a"}, {"id": "h", "link": OFF[0]}, {"id": "o", "link": OFF[1]}])],
          ok(cov(discovered=3, known=5, skipped=4), None, {"o": skipped(), "u": skipped()}, {"count": 1, "never": OFF}, relation_same_as_run=1))])

RH = {"collection.discovery.revision": {"pointer": "/modified"}, "collection.pages.revisit": {"kind": "revision_hint"}}
case("urls", "url-redirect-off-allowlist", "A page whose redirect leaves the allowlist is skipped_origin with where it landed, its body is not read and its previous rows stay.",
     ["URL-13", "URL-14", "URL-15", "URL-16", "FETCH-06", "D-26"], recipe(**RH),
     [run([listing(L, ("a", "/p/a", {"modified": "1"}), ("b", "/p/b", {"modified": "1"})), page("a", "A1"), page("b", "B1")],
          ok(cov(discovered=2, known=2, fetched_this_run=2), relation(P("a", ["A1"]), P("b", ["B1"])), {}, {"count": 3})),
      run([listing(L, ("a", "/p/a", {"modified": "2"}), ("b", "/p/b", {"modified": "1"})),
           ex(f"{H}/p/a", "", status=302, ctype=None, headers=[("Location", "https://other.example.org/moved/a")]),
           page("https://other.example.org/moved/a", "EVIL")],
          ok(cov(discovered=2, known=2, skipped=1), relation(P("a", ["A1"]), P("b", ["B1"])),
             {"a": skipped("https://other.example.org/moved/a"), "b": fetched()},
             {"order": [L, f"{H}/p/a"], "never": ["https://other.example.org/moved/a"]}, relation_same_as_run=1)),
      run([listing(L, ("a", "/p/a", {"modified": "3"}), ("b", "/p/b", {"modified": "1"}))],
          ok(cov(discovered=2, known=2, skipped=1), None, {"a": skipped("https://other.example.org/moved/a")},
             {"count": 1, "order": [L]}, relation_same_as_run=1))])

O2 = "https://other.example.org"
case("urls", "url-skipped-recheck-landed", "D-65: a page skipped because its redirect left the allowlist is re-checked by where it landed: allowing that origin makes it pending and fetched; its listed URL alone does not.",
     ["URL-13", "URL-16", "D-26", "D-34", "D-65"], recipe(),
     [run([listing(L, "a"), ex(f"{H}/p/a", "", status=302, ctype=None, headers=[("Location", f"{O2}/moved/a")])],
          ok(cov(discovered=1, known=1, skipped=1), relation(), {"a": skipped(f"{O2}/moved/a")}, {"order": [L, f"{H}/p/a"]})),
      run([listing(L, "a")],
          ok(cov(discovered=1, known=1, skipped=1), relation(), {"a": skipped(f"{O2}/moved/a")}, {"count": 1, "order": [L]})),
      run([listing(L, "a"), ex(f"{H}/p/a", "", status=302, ctype=None, headers=[("Location", f"{O2}/moved/a")]),
           page(f"{O2}/moved/a", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A"])), {"a": fetched()},
             {"order": [L, f"{H}/p/a", f"{O2}/moved/a"]}),
          recipe=recipe(**{"collection.pages.allowed_origins": [H, O2]}))])

case("urls", "url-redirect-http", "A redirect to a plain-http address is handled like skipped_origin.", ["URL-13", "URL-15"], recipe(),
     [run([listing(L, "a"), ex(f"{H}/p/a", "", status=301, ctype=None, headers=[("Location", "http://www.example.com/p/a")])],
          ok(cov(discovered=1, known=1, skipped=1), relation(), {"a": skipped("http://www.example.com/p/a")}, {"count": 2}))])

case("urls", "url-redirect-within", "A redirect inside the allowlist is followed; page_url stays the discovered address and the hop costs a request.",
     ["FETCH-06", "FETCH-08", "D-25"], recipe(),
     [run([listing(L, "a"), ex(f"{H}/p/a", "", status=301, ctype=None, headers=[("Location", "/p/a/")]), page(f"{H}/p/a/", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A"], body=page_body("A"))), {"a": fetched()},
             {"order": [L, f"{H}/p/a", f"{H}/p/a/"]}))])

EXPLICIT_AB = {"collection.discovery": {"kind": "explicit", "members": [{"page_id": "a", "url": f"{H}/p/a"},
                                                                     {"page_id": "b", "url": f"{H}/p/b"}]}}
case("fetch", "fetch-robots-redirect-off-allowlist", "D-66: robots.txt redirecting outside allowed_origins is not followed and means disallow all: every page of that origin fails robots_disallowed unrequested.",
     ["D-66", "D-58", "D-48"], recipe(**EXPLICIT_AB, **{"limits.max_requests": 200}),
     [run([ex(f"{H}/robots.txt", "", status=301, ctype=None, headers=[("Location", "https://example.com/robots.txt")]),
           ex("https://example.com/robots.txt", "User-agent: *\nAllow: /\n", ctype="text/plain"), page("a", "A"), page("b", "B")],
          ok(cov(discovered=2, known=2, discovery_requests=0, failed_this_run=2, failed=2, complete=False), relation(),
             {"a": failed("robots_disallowed"), "b": failed("robots_disallowed")},
             {"count": 0, "never": ["https://example.com/robots.txt", f"{H}/p/a", f"{H}/p/b"]}))])

def explicit(*paths, **extra) -> dict:
    """A recipe whose explicit members are H + path, page_id the path's last segment(s)."""
    members = [{"page_id": pid, "url": f"{H}{path}"} for pid, path in paths]
    return recipe(**{"collection.discovery": {"kind": "explicit", "members": members}, "limits.max_requests": 200}, **extra)


ROBOTS_MATCH = """User-agent: conformancebot
Allow: /
Disallow: /d
Allow: /d/long
Allow: /t
Disallow: /t
Disallow: /q?x=1
Disallow: /end$
Disallow: /w*z
Disallow: /café

User-agent: *
Disallow: /s

User-agent: ConformanceBot
Disallow:
Disallow: /second
"""
ROBOT_PAGES = [("d-short", "/d/short", False), ("d-long", "/d/long/x", True), ("t", "/t", True), ("q", "/q?x=1", False),
               ("q2", "/q?x=2", True), ("end", "/end", False), ("endless", "/endless", True), ("wz", "/wxyz", False),
               ("cafe", "/caf%C3%A9", False), ("s", "/s", True), ("second", "/second", False)]
case("fetch", "fetch-robots-matching", "RFC 9309 matching for the fetcher's token: the longest rule wins and allow wins a tie, the query is part of the path, $ anchors and * matches any run, rules compare percent-encoded, groups naming the token (case-insensitively) merge and replace *, an empty Disallow allows.",
     ["FETCH-22", "FETCH-23", "D-57"], explicit(*((pid, path) for pid, path, _ in ROBOT_PAGES)),
     [run([ex(f"{H}/robots.txt", ROBOTS_MATCH, ctype="text/plain")] + [page(f"{H}{path}", pid.upper()) for pid, path, ok_ in ROBOT_PAGES if ok_],
          ok(cov(discovered=len(ROBOT_PAGES), known=len(ROBOT_PAGES), discovery_requests=0,
                 fetched_this_run=sum(1 for *_, ok_ in ROBOT_PAGES if ok_), failed_this_run=sum(1 for *_, ok_ in ROBOT_PAGES if not ok_),
                 failed=sum(1 for *_, ok_ in ROBOT_PAGES if not ok_), complete=False),
             relation(*(P(pid, [pid.upper()], url=f"{H}{path}") for pid, path, ok_ in ROBOT_PAGES if ok_)),
             {pid: (fetched() if ok_ else failed("robots_disallowed")) for pid, path, ok_ in ROBOT_PAGES},
             {"count": sum(1 for *_, ok_ in ROBOT_PAGES if ok_), "never": [f"{H}{path}" for _, path, ok_ in ROBOT_PAGES if not ok_],
              "robots": {H: 1}}))])

LATE = "User-agent: *\n" + "".join(f"# padding line {i:05d} so that the rule below sits past 64 KiB\n" for i in range(1400)) + "Disallow: /p/late\n"
case("fetch", "fetch-robots-large", "robots.txt is parsed to at least 500 KiB: a rule past the first 64 KiB still applies.", ["D-58", "FETCH-22"],
     explicit(("a", "/p/a"), ("late", "/p/late")),
     [run([ex(f"{H}/robots.txt", LATE, ctype="text/plain"), page("a", "A"), page(f"{H}/p/late", "L")],
          ok(cov(discovered=2, known=2, discovery_requests=0, fetched_this_run=1, failed_this_run=1, failed=1, complete=False),
             relation(P("a", ["A"])), {"a": fetched(), "late": failed("robots_disallowed")}, {"count": 1, "never": [f"{H}/p/late"]}))])

case("fetch", "fetch-robots-truncated", "A robots.txt body cut short (the connection drops) means disallow all for the run, whatever was read.",
     ["D-58", "FETCH-22"], explicit(("a", "/p/a")),
     [run([ex(f"{H}/robots.txt", "User-agent: *\nAllow: /\n# " + "x" * 200 + "\n", ctype="text/plain", drop_connection=30), page("a", "A")],
          ok(cov(discovered=1, known=1, discovery_requests=0, failed_this_run=1, failed=1, complete=False), relation(),
             {"a": failed("robots_disallowed")}, {"count": 0, "never": [f"{H}/p/a"]}))])

case("fetch", "fetch-robots-redirects", "robots.txt redirects within the allowlist are followed (up to five hops) and the target's rules apply.",
     ["D-58", "FETCH-22"], explicit(("a", "/p/a"), ("b", "/p/b")),
     [run([ex(f"{H}/robots.txt", "", status=301, ctype=None, headers=[("Location", "/r1.txt")]),
           ex(f"{H}/r1.txt", "", status=302, ctype=None, headers=[("Location", "/r2.txt")]),
           ex(f"{H}/r2.txt", "User-agent: *\nDisallow: /p/b\n", ctype="text/plain"), page("a", "A"), page("b", "B")],
          ok(cov(discovered=2, known=2, discovery_requests=0, fetched_this_run=1, failed_this_run=1, failed=1, complete=False),
             relation(P("a", ["A"])), {"a": fetched(), "b": failed("robots_disallowed")}, {"include": [f"{H}/p/a"], "never": [f"{H}/p/b"]}))])

HOPS = [ex(f"{H}/robots.txt", "", status=301, ctype=None, headers=[("Location", "/h1.txt")])] + \
    [ex(f"{H}/h{i}.txt", "", status=301, ctype=None, headers=[("Location", f"/h{i + 1}.txt")]) for i in range(1, 6)] + \
    [ex(f"{H}/h6.txt", "User-agent: *\nDisallow: /\n", ctype="text/plain")]
case("fetch", "fetch-robots-too-many-redirects", "A robots.txt that needs more than five redirects is unavailable: allow all (RFC 9309 2.3.1.2, D-58).",
     ["D-58"], explicit(("a", "/p/a")),
     [run(HOPS + [page("a", "A")],
          ok(cov(discovered=1, known=1, discovery_requests=0, fetched_this_run=1), relation(P("a", ["A"])), {"a": fetched()},
             {"include": [f"{H}/p/a"], "never": [f"{H}/h6.txt"]}))])

OFFLIST = ["https://b.example.com/x/../y", "https://b.example.com/p/%7euser", "https://b.example.com",
           "https://bücher.example.com/x", "https://www.example.com./p/t"]
case("urls", "url-canonical-details", "D-54: dot segments go even in absolute links, IDN hosts become lowercase punycode, and nothing else changes (percent-encoding case, an empty path); a trailing-dot host is not the allowed host. Page ids show the canonical form.",
     ["D-54", "URL-01", "URL-10", "URL-18", "DISC-10"], recipe(**NOID),
     [run([ex(L, [{"link": "https://www.example.com/x/../p/dot"}] + [{"link": u} for u in OFFLIST]), page(f"{H}/p/dot", "D")],
          ok(cov(discovered=6, known=6, fetched_this_run=1, skipped=5), relation(P(f"{H}/p/dot", ["D"], url=f"{H}/p/dot")),
             {f"{H}/p/dot": fetched(), "https://b.example.com/y": skipped(), "https://b.example.com/p/%7euser": skipped(),
              "https://b.example.com": skipped(), "https://xn--bcher-kva.example.com/x": skipped(),
              "https://www.example.com./p/t": skipped()},
             {"count": 2, "never": ["https://www.example.com./p/t", "https://www.example.com/p/t"]},
             ledger_pages=[f"{H}/p/dot", "https://b.example.com/y", "https://b.example.com/p/%7euser", "https://b.example.com",
                           "https://xn--bcher-kva.example.com/x", "https://www.example.com./p/t"]))])

case("urls", "url-relative-to-its-listing", "A relative link resolves against the listing it appeared on, not the discovery address; a relative Location against the address that answered it.",
     ["URL-01", "D-25"], recipe(**LH),
     [run([listing(L, "a", headers=[("Link", '</sub/list2>; rel="next"')]), ex(f"{H}/sub/list2", [{"id": "z", "link": "p/z"}]),
           ex(f"{H}/p/a", "", status=302, ctype=None, headers=[("Location", "a2")]), page(f"{H}/p/a2", "A"), page(f"{H}/sub/p/z", "Z")],
          ok(cov(discovered=2, known=2, fetched_this_run=2, discovery_requests=2),
             relation(P("a", ["A"]), P("z", ["Z"], url=f"{H}/sub/p/z")), {},
             {"order": [L, f"{H}/sub/list2", f"{H}/p/a", f"{H}/p/a2", f"{H}/sub/p/z"]}))])

case("urls", "url-skipped-recheck-listed", "D-65: a page skipped because its own link was off the allowlist is re-checked by that link: allowing its origin makes it pending and fetched.",
     ["D-65", "D-34", "URL-10"], recipe(),
     [run([listing(L, ("o", "https://other.example.org/p/o"))],
          ok(cov(discovered=1, known=1, skipped=1), relation(), {"o": skipped()}, {"count": 1})),
      run([listing(L, ("o", "https://other.example.org/p/o")), page("https://other.example.org/p/o", "O")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("o", ["O"], url="https://other.example.org/p/o")), {"o": fetched()},
             {"order": [L, "https://other.example.org/p/o"]}),
          recipe=recipe(**{"collection.pages.allowed_origins": [H, "https://other.example.org"]}))])

case("urls", "url-skipped-relisted-elsewhere", "D-65: a page skipped by its redirect becomes pending when discovery lists it under a different canonical URL.",
     ["D-65", "D-26"], recipe(),
     [run([listing(L, "a"), ex(f"{H}/p/a", "", status=302, ctype=None, headers=[("Location", "https://other.example.org/moved/a")])],
          ok(cov(discovered=1, known=1, skipped=1), relation(), {"a": skipped("https://other.example.org/moved/a")}, {"count": 2})),
      run([listing(L, ("a", "/p/a-new")), page(f"{H}/p/a-new", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A"], url=f"{H}/p/a-new")), {"a": fetched()},
             {"order": [L, f"{H}/p/a-new"]}))])

case("fetch", "fetch-media-types", "Detail pages: json.tabular takes every JSON media type of its set (application/ld+json here, parameters and case ignored); a page without Content-Type is refused media_type_refused unread.",
     ["D-37", "READ-06", "D-45"], recipe(),
     [run([listing(L, "a", "b", "c"), page("a", "A", ctype="application/ld+json"), page("b", "B", ctype="Application/JSON; charset=utf-8"),
           page("c", "C", ctype=None)],
          ok(cov(discovered=3, known=3, fetched_this_run=2, failed_this_run=1, failed=1, complete=False),
             relation(P("a", ["A"]), P("b", ["B"])), {"c": failed("media_type_refused")}, {"count": 4}))])

def reader_recipe(family: str, version: str, options: str, **changes) -> dict:
    return recipe(**{"connector.parameters": [{"name": "reader.family_id", "value": family},
                                              {"name": "reader.family_version", "value": version},
                                              {"name": "reader.decode_options", "value": options}]}, **changes)


def table(pages, columns) -> str:
    """pages: (page_id, body, [row tuples], revision) → relation text (any Reader's columns)."""
    lines = [",".join((*columns, PROV))]
    for pid, body, rows, revision in sorted(pages, key=lambda p: p[0].encode("utf-8")):
        for n, row in enumerate(rows, 1):
            lines.append(",".join(csv_field(x) for x in (*row, pid, f"{H}/p/{pid}"))
                         + f",{fetch_ts(pid, revision)},{sha(body)},{revision},{disc_ts(pid)},{n}")
    return "\n".join(lines) + "\n"


HT_OPTIONS = '{"table":{"columns":["title","n"],"selector":"table.t"}}'
HT_A = '<table class="t"><tr><th>title</th><th>n</th></tr><tr><td>A  one</td><td>1</td></tr><tr><td>A2</td></tr><tr><td> </td></tr></table>'
HT_B = ('<html xmlns="http://www.w3.org/1999/xhtml"><body><table class="t"><tr><th>title</th><th>n</th></tr>'
        '<tr><td>B</td><td>2</td></tr></table></body></html>')
HT_A2 = '<table class="t"><tr><th>n</th><th>title</th></tr><tr><td>9</td><td>A new</td></tr></table>'
case("fetch", "read-html-tabular", "html.tabular: a table's header must equal the declared columns, in order; short rows are padded, empty rows skipped, text normalised; application/xhtml+xml is an HTML type; a page whose header changed (here: the same columns swapped) fails column_mismatch and keeps its previous rows (D-12).",
     ["READ-04", "READ-05", "READ-06", "D-12", "D-37", "MERGE-22", "MERGE-24"],
     reader_recipe("html.tabular", "1.0.0", HT_OPTIONS, **RH),
     [run([listing(L, ("a", "/p/a", {"modified": "1"}), ("b", "/p/b", {"modified": "1"})),
           ex(f"{H}/p/a", HT_A, ctype="text/html"), ex(f"{H}/p/b", HT_B, ctype="application/xhtml+xml")],
          ok(cov(discovered=2, known=2, fetched_this_run=2),
             table([("a", HT_A, [("A one", "1"), ("A2", "")], 1), ("b", HT_B, [("B", "2")], 1)], ("title", "n")), {}, {"count": 3})),
      run([listing(L, ("a", "/p/a", {"modified": "2"}), ("b", "/p/b", {"modified": "1"})), ex(f"{H}/p/a", HT_A2, ctype="text/html")],
          ok(cov(discovered=2, known=2, failed_this_run=1, failed=1, complete=False), None,
             {"a": failed("column_mismatch", 1)}, {"count": 2}, relation_same_as_run=1))])

WE_OPTIONS = '{"metadata":["language"],"selectors":{"story":"div.story","title":"h1"}}'
WE_A = ('<html lang="en"><head><title>Tab title</title></head><body><h1>Head  line</h1><nav>menu</nav>'
        '<div class="story"><p>First para.</p><p>Second   para.</p></div></body></html>')
case("fetch", "read-html-web-extract", "html.web_extract (the specification's own example pins it): title and story from their selectors, the story one block per line, then the metadata columns in order.",
     ["READ-01", "READ-04", "READ-05"], reader_recipe("html.web_extract", "1.1.0", WE_OPTIONS),
     [run([listing(L, "a"), ex(f"{H}/p/a", WE_A, ctype="text/html; charset=utf-8")],
          ok(cov(discovered=1, known=1, fetched_this_run=1),
             table([("a", WE_A, [("Head line", "First para.\nSecond para.", "en")], 1)], ("title", "story", "language")), {}, {"count": 2}))])

XT_OPTIONS = '{"columns":[{"name":"title","path":"title"},{"attribute":"id","name":"id"}],"records":{"path":"item"}}'
XT_A = '<?xml version="1.0"?><items><item id="1"><title>X  one</title></item><item id="2"><title><![CDATA[Y]]></title></item></items>'
XT_B = '<items><item id="3"><title>Z</title></item></items>'
case("fetch", "read-xml-tabular", "xml.tabular: one row per record path match, columns from child text (CDATA included) or an attribute; application/xml and text/xml are accepted, application/rss+xml is not (media_type_refused).",
     ["READ-04", "READ-05", "READ-06", "D-37"], reader_recipe("xml.tabular", "1.0.0", XT_OPTIONS),
     [run([listing(L, "a", "b", "c"), ex(f"{H}/p/a", XT_A, ctype="application/xml"), ex(f"{H}/p/b", XT_B, ctype="text/xml"),
           ex(f"{H}/p/c", XT_B, ctype="application/rss+xml")],
          ok(cov(discovered=3, known=3, fetched_this_run=2, failed_this_run=1, failed=1, complete=False),
             table([("a", XT_A, [("X one", "1"), ("Y", "2")], 1), ("b", XT_B, [("Z", "3")], 1)], ("title", "id")),
             {"c": failed("media_type_refused")}, {"count": 4}))])

case("fetch", "fetch-robots-empty-disallow", "An empty Disallow line allows everything (RFC 9309).", ["FETCH-22"], explicit(("a", "/p/a")),
     [run([ex(f"{H}/robots.txt", "User-agent: *\nDisallow:\n", ctype="text/plain"), page("a", "A")],
          ok(cov(discovered=1, known=1, discovery_requests=0, fetched_this_run=1), relation(P("a", ["A"])), {"a": fetched()}, {"count": 1}))])

case("fetch", "fetch-budget-retry-charged", "A retry is charged to limits.max_requests (FETCH-07): with the registration sum exact, a retried page uses the request the next page needed.",
     ["FETCH-07", "FETCH-09", "COV-16"],
     recipe(**{"collection.discovery.max_requests": 1, "collection.pages.max_fetches_per_run": 2, "limits.max_requests": 3,
               "collection.pages.retries": 1}),
     [run([listing(L, "a", "b"), seq(f"{H}/p/a", ex(f"{H}/p/a", "", status=503, ctype="text/plain"), page("a", "A")), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=1, pending=1, budget_exhausted="max_requests", complete=False),
             relation(P("a", ["A"])), {"a": fetched(), "b": pending()}, {"count": 3, "never": [f"{H}/p/b"]}, clock_slack_seconds=3600))])

case("fetch", "fetch-budget-hop-not-past", "No redirect hop goes past limits.max_requests (FETCH-09): the hop a page still needed is never sent.",
     ["FETCH-06", "FETCH-09"],
     recipe(**{"collection.discovery.max_requests": 1, "collection.pages.max_fetches_per_run": 2, "limits.max_requests": 3}),
     [run([listing(L, "a", "b"), page("a", "A"), ex(f"{H}/p/b", "", status=302, ctype=None, headers=[("Location", "/p/b2")]), page(f"{H}/p/b2", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=1, pending={"between": [0, 1]}, failed={"between": [0, 1]},
                 failed_this_run={"between": [0, 1]}, budget_exhausted="max_requests", complete=False),
             None, {"a": fetched()}, {"count": 3, "never": [f"{H}/p/b2"]}, relation=relation(P("a", ["A"]))))])

SRC_LIST = '[{"id":"a","link":"/p/a"}]'
case("fetch", "fetch-source-bytes-exact", "limits.max_source_bytes counts decoded listing and page bytes (D-20); a run whose bodies total exactly the cap is not cut.",
     ["FETCH-14", "D-20"], recipe(**{"limits.max_source_bytes": len(SRC_LIST) + len(page_body("A"))}),
     [run([ex(L, SRC_LIST), page("a", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A"])), {"a": fetched()}, {"count": 2}))])

FIVE = [ex(f"{H}/p/a", "", status=301, ctype=None, headers=[("Location", "/p/a1")])] + \
    [ex(f"{H}/p/a{i}", "", status=302, ctype=None, headers=[("Location", f"/p/a{i + 1}")]) for i in range(1, 5)] + [page(f"{H}/p/a5", "A")]
case("fetch", "fetch-five-redirects", "A chain of exactly five redirect hops is followed (D-25); every hop is a request.", ["D-25", "FETCH-06", "FETCH-08"],
     recipe(), [run([listing(L, "a")] + FIVE,
                    ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A"])), {"a": fetched()},
                       {"order": [L, f"{H}/p/a"] + [f"{H}/p/a{i}" for i in range(1, 6)]}))])

# --- fetch --------------------------------------------------------------------------------
case("fetch", "fetch-budget-exact-sum-redirect", "limits.max_requests equal to the registration sum runs out when a page redirects: budget_exhausted max_requests, the run still succeeds.",
     ["FETCH-05", "FETCH-06", "FETCH-09", "FETCH-10", "COV-01", "COV-02", "REF-14", "REG-34", "OPS-09", "D-05"],
     recipe(**{"collection.discovery.max_requests": 1, "collection.pages.max_fetches_per_run": 2, "limits.max_requests": 3}),
     [run([listing(L, "a", "b"), ex(f"{H}/p/a", "", status=302, ctype=None, headers=[("Location", "/p/a2")]), page(f"{H}/p/a2", "A"), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=1, pending=1, budget_exhausted="max_requests", complete=False),
             relation(P("a", ["A"])), {"a": fetched(), "b": pending()}, {"count": 3, "never": [f"{H}/p/b"]}))])

case("fetch", "fetch-retry-then-ok", "A 503 is retried (each retry is a request) and the page is fetched once.",
     ["FETCH-07", "FETCH-21", "FETCH-08", "D-08", "D-47"], recipe(**{"collection.pages.retries": 1}),
     [run([listing(L, "a"), seq(f"{H}/p/a", ex("x", "", status=503, headers=[("Retry-After", "1")]), page("a", "A"))],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A"])), {"a": fetched()},
             {"order": [L, f"{H}/p/a", f"{H}/p/a"]}))])

case("fetch", "fetch-retries-exhausted", "A page failing with 500 is retried at most pages.retries times, then failed with a code; the run succeeds.",
     ["FETCH-21", "MERGE-20", "MERGE-23", "REF-13", "COV-13", "D-53"], recipe(**{"collection.pages.retries": 2}),
     [run([listing(L, "a", "b"), ex(f"{H}/p/a", "boom", status=500, ctype="text/plain"), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=1, failed_this_run=1, failed=1, complete=False),
             relation(P("b", ["B"])), {"a": failed("http_status_500"), "b": fetched()},
             {"count": 5, "order": [L, f"{H}/p/a", f"{H}/p/a", f"{H}/p/a", f"{H}/p/b"]}))])

case("fetch", "fetch-404-not-retried", "A 404 is not retried; the page is failed and counted as failed.", ["D-08", "D-53", "D-62", "MERGE-23"],
     recipe(**{"collection.pages.retries": 3}),
     [run([listing(L, "a"), ex(f"{H}/p/a", "gone", status=404, ctype="text/plain")],
          ok(cov(discovered=1, known=1, failed_this_run=1, failed=1, complete=False), relation(), {"a": failed("http_status_404")},
             {"count": 2, "max_per_url": 1}))])

case("fetch", "fetch-max-fetches-per-run", "max_fetches_per_run caps fetches; the rest stay pending and the budget is named.",
     ["FETCH-12", "COV-01", "COV-02", "COV-14", "MERGE-07", "OPS-09", "REF-14"], recipe(**{"collection.pages.max_fetches_per_run": 2}),
     [run([listing(L, "a", "b", "c"), page("a", "A"), page("b", "B"), page("c", "C")],
          ok(cov(discovered=3, known=3, fetched_this_run=2, pending=1, budget_exhausted="max_fetches_per_run", complete=False),
             relation(P("a", ["A"]), P("b", ["B"])), {"c": pending()}, {"count": 3, "never": [f"{H}/p/c"]})),
      run([listing(L, "a", "b", "c"), page("c", "C")],
          ok(cov(discovered=3, known=3, fetched_this_run=1), relation(P("a", ["A"]), P("b", ["B"]), P("c", ["C"])), {"c": fetched()},
             {"order": [L, f"{H}/p/c"]}))])

case("fetch", "fetch-failures-do-not-use-fetch-budget", "Failed fetches do not use up max_fetches_per_run (the example's arithmetic).",
     ["D-15", "COV-13"], recipe(**{"collection.pages.max_fetches_per_run": 2}),
     [run([listing(L, "a", "b", "c"), ex(f"{H}/p/a", "", status=404, ctype="text/plain"), page("b", "B"), page("c", "C")],
          ok(cov(discovered=3, known=3, fetched_this_run=2, failed_this_run=1, failed=1, complete=False),
             relation(P("b", ["B"]), P("c", ["C"])), {"a": failed("http_status_404")}, {"count": 4}))])

case("fetch", "fetch-max-pages", "pages.max_pages caps the pages the ledger holds and names max_pages.", ["FETCH-13", "D-18", "COV-02"],
     recipe(**{"collection.pages.max_pages": 2}),
     [run([listing(L, "a", "b", "c"), page("a", "A"), page("b", "B"), page("c", "C")],
          ok(cov(discovered={"between": [2, 3]}, known=2, fetched_this_run=2, budget_exhausted="max_pages", complete=False,
                 discovery_complete={"between": [0, 1]} and False),
             relation(P("a", ["A"]), P("b", ["B"])), {}, {"never": [f"{H}/p/c"]}, ledger_pages=["a", "b"]))])

case("fetch", "fetch-max-source-bytes", "limits.max_source_bytes caps the bytes fetched and names max_source_bytes.", ["FETCH-14", "D-20", "COV-02"],
     recipe(**{"limits.max_source_bytes": 200}),
     [run([listing(L, "a", "b", "c"), page("a", "A" * 60), page("b", "B" * 100), page("c", "C")],
          ok(cov(discovered=3, known=3, fetched_this_run=1, pending={"between": [1, 2]}, failed={"between": [0, 1]},
                 failed_this_run={"between": [0, 1]}, budget_exhausted="max_source_bytes", complete=False),
             relation(P("a", ["A" * 60])), {"a": fetched(), "c": pending()}, {"never": [f"{H}/p/c"]}))])

case("fetch", "fetch-deadline", "A run stopped by its deadline reports budget_exhausted deadline and keeps what it fetched.",
     ["FETCH-15", "D-19", "D-60", "COV-02"], recipe(),
     [run([listing(L, "a", "b", "c"), page("a", "A", delay_seconds=20), page("b", "B", delay_seconds=20), page("c", "C", delay_seconds=20)],
          ok(cov(discovered=3, known=3, fetched_this_run=2, pending=1, budget_exhausted="deadline",
                 complete=False), relation(P("a", ["A"]), P("b", ["B"])), {"a": fetched(), "b": fetched(), "c": pending()}, {"never": [f"{H}/p/c"]}), deadline_seconds=30)],
     modes=["inline"], requires=["deadline"])

ROBOTS_BOT = "User-agent: ConformanceBot\nDisallow: /p/b\n\nUser-agent: *\nDisallow: /\n"
case("fetch", "fetch-robots-own-token", "robots.txt is fetched once per origin before anything else; a disallow for the fetcher's own token fails the page without a request.",
     ["FETCH-22", "FETCH-23", "D-48", "D-57", "D-58", "D-06", "OPS-12"], recipe(),
     [run([ex(f"{H}/robots.txt", ROBOTS_BOT, ctype="text/plain"), listing(L, "a", "b"), page("a", "A"), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=1, failed_this_run=1, failed=1, complete=False), relation(P("a", ["A"])),
             {"a": fetched(), "b": failed("robots_disallowed")},
             {"count": 2, "never": [f"{H}/p/b"], "robots": {H: 1}}, wire={"robots_first": True}))])

case("fetch", "fetch-robots-star", "A * group applies when no group names the fetcher's token.", ["FETCH-22", "D-57"], recipe(),
     [run([ex(f"{H}/robots.txt", "User-agent: OtherBot\nDisallow: /\n\nUser-agent: *\nDisallow: /p/a\n", ctype="text/plain"),
           listing(L, "a", "b"), page("a", "A"), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=1, failed_this_run=1, failed=1, complete=False), relation(P("b", ["B"])),
             {"a": failed("robots_disallowed")}, {"count": 2, "never": [f"{H}/p/a"]}))])

case("fetch", "fetch-robots-listing-disallowed", "A disallowed listing is not requested; with nothing to continue from the run is refused.",
     ["FETCH-22", "D-48", "REF-03"], recipe(),
     [run([ex(f"{H}/robots.txt", "User-agent: *\nDisallow: /list\n", ctype="text/plain"), listing(L, "a"), page("a", "A")],
          refused("COLLECTION_DISCOVERY_FAILED", {"count": 0, "never": [L, f"{H}/p/a"]}))])

case("fetch", "fetch-robots-5xx", "A robots.txt answering 5xx disallows everything for the run.", ["D-58", "FETCH-22"], recipe(),
     [run([ex(f"{H}/robots.txt", "", status=503, ctype="text/plain"), listing(L, "a"), page("a", "A")],
          refused("COLLECTION_DISCOVERY_FAILED", {"count": 0, "never": [L]}))])

case("fetch", "fetch-robots-4xx", "A robots.txt answering 404 allows everything.", ["D-58"], recipe(),
     [run([ex(f"{H}/robots.txt", "", status=404, ctype="text/plain"), listing(L, "a"), page("a", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A"])), {"a": fetched()}, {"count": 2, "robots": {H: 1}}))])

case("fetch", "fetch-timeout", "A page that never answers is abandoned after request_timeout_seconds and failed.", ["FETCH-20", "D-11", "REF-13"],
     recipe(**{"collection.pages.request_timeout_seconds": 5}),
     [run([listing(L, "a", "b"), page("a", "A", hang=True), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=1, failed_this_run=1, failed=1, complete=False), relation(P("b", ["B"])),
             {"a": failed("timeout"), "b": fetched()}, {"count": 3}))])

case("fetch", "fetch-page-media-type", "A detail page outside the pinned family's media types is failed (media_type_refused).", ["READ-06", "D-37"],
     recipe(),
     [run([listing(L, "a", "b"), page("a", "A", ctype="text/html"), page("b", "B", ctype=None)],
          ok(cov(discovered=2, known=2, failed_this_run=2, failed=2, complete=False), relation(),
             {"a": failed("media_type_refused"), "b": failed("media_type_refused")}, {"count": 3}))])

case("fetch", "fetch-decode-error", "A page whose decode raises is failed with a code; other pages carry on.", ["READ-10", "MERGE-21", "REF-13"],
     recipe(),
     [run([listing(L, "a", "b"), ex(f"{H}/p/a", "{not json"), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=1, failed_this_run=1, failed=1, complete=False), relation(P("b", ["B"])),
             {"a": failed("decode_error"), "b": fetched()}, {"count": 3}))])

case("fetch", "fetch-wire-politeness", "Over TLS: at least min_interval_seconds between requests to one host, at most two connections per origin, robots.txt first, credential-free GETs with the User-Agent.",
     ["FETCH-01", "FETCH-02", "FETCH-18", "FETCH-19", "FETCH-24", "OPS-12", "D-09", "D-10"],
     recipe(**{"collection.pages.concurrency": 10, "collection.pages.min_interval_seconds": 2}),
     [run([listing(L, "a", "b", "c", "d"), page("a", "A"), page("b", "B"), page("c", "C"), page("d", "D")],
          ok(cov(discovered=4, known=4, fetched_this_run=4), relation(*(P(x, [x.upper()]) for x in "abcd")), {}, {"count": 5},
             wire={"min_gap_seconds": 2.0, "max_connections_per_origin": 2, "robots_first": True, "no_credentials": True}))],
     modes=["loopback"])

case("fetch", "fetch-wire-slow-pages", "Over TLS, pages answering slower than min_interval_seconds: a third request to the origin would need a third connection, so it waits for one of the two to finish (FETCH-18), and starts stay min_interval_seconds apart.",
     ["FETCH-18", "FETCH-19", "D-09", "D-10"],
     recipe(**{"collection.pages.concurrency": 10, "collection.pages.min_interval_seconds": 1}),
     [run([listing(L, "a", "b", "c", "d")] + [page(x, x.upper(), delay_seconds=2.5) for x in "abcd"],
          ok(cov(discovered=4, known=4, fetched_this_run=4), relation(*(P(x, [x.upper()]) for x in "abcd")), {}, {"count": 5},
             wire={"min_gap_seconds": 1.0, "max_connections_per_origin": 2}))],
     modes=["loopback"])

case("fetch", "fetch-wire-listings-and-pages", "Over TLS, listings and pages share one host's politeness: every request to the host, listing or page, first try or retry, keeps min_interval_seconds from the one before.",
     ["FETCH-19", "D-05", "D-10", "FETCH-21"],
     recipe(**PP, **{"collection.pages.concurrency": 2, "collection.pages.min_interval_seconds": 2, "collection.pages.retries": 1}),
     [run([listing(f"{L}?page=1", "a", "b"), listing(f"{L}?page=2", "c"), ex(f"{L}?page=3", []),
           seq(f"{H}/p/a", ex(f"{H}/p/a", "", status=503, ctype="text/plain"), page("a", "A")), page("b", "B"), page("c", "C")],
          ok(cov(discovered=3, known=3, fetched_this_run=3, discovery_requests=3), relation(*(P(x, [x.upper()]) for x in "abc")), {},
             {"count": 7}, wire={"min_gap_seconds": 2.0, "max_connections_per_origin": 2, "robots_first": True}))],
     modes=["loopback"])

case("fetch", "fetch-two-hosts", "Pages on two allowed origins are fetched; each origin's robots.txt is read once.", ["URL-17", "D-10", "D-58"],
     recipe(**{"collection.pages.allowed_origins": [H, "https://cdn.example.com"], "collection.pages.concurrency": 4}),
     [run([ex(L, [{"id": "a", "link": "/p/a"}, {"id": "c", "link": "https://cdn.example.com/p/c"}]), page("a", "A"), page("https://cdn.example.com/p/c", "C")],
          ok(cov(discovered=2, known=2, fetched_this_run=2), relation(P("a", ["A"]), P("c", ["C"], url="https://cdn.example.com/p/c")), {},
             {"count": 3, "robots": {H: 1, "https://cdn.example.com": 1}}, wire={"min_gap_seconds": 1.0, "robots_first": True}))])

# --- merge --------------------------------------------------------------------------------
EX2 = [listing(L, "a", "b"), page("a", "A1", "A2"), page("b", "B1")]
case("merge", "merge-refresh-never-refetches", "revisit never: a refresh refetches nothing already fetched and writes the predecessor's bytes.",
     ["MERGE-01", "MERGE-15", "MERGE-28", "MERGE-05", "COV-09"], recipe(),
     [run(EX2, ok(cov(discovered=2, known=2, fetched_this_run=2), BASIC_RELATION, {}, {"count": 3})),
      run([listing(L, "a", "b"), page("a", "CHANGED"), page("b", "CHANGED")],
          ok(cov(discovered=2, known=2), None, {"a": fetched(), "b": fetched()}, {"count": 1, "order": [L]}, relation_same_as_run=1))])

IV = {"collection.pages.revisit": {"kind": "interval", "seconds": 3600}}
case("merge", "merge-idle-refresh-unchanged", "Refetched pages with the ledger's digest are unchanged and keep their rows verbatim, provenance included.",
     ["MERGE-13", "MERGE-14", "MERGE-15", "MERGE-30", "COV-11", "D-31", "D-32"], recipe(**IV),
     [run(EX2, ok(cov(discovered=2, known=2, fetched_this_run=2), BASIC_RELATION, {}, {"count": 3})),
      run(EX2, ok(cov(discovered=2, known=2, fetched_this_run=2, unchanged=2), None, {"a": fetched(1), "b": fetched(1)},
                  {"count": 3}, relation_same_as_run=1, corrections=[]), clock_advance_seconds=3601),
      run(EX2, ok(cov(discovered=2, known=2), None, {}, {"count": 1}, relation_same_as_run=1), clock_advance_seconds=1800)],
     modes=["inline"], requires=["clock_advance"])

case("fetch", "fetch-unchanged-charged", "An unchanged refetch uses up max_fetches_per_run like any successful fetch (D-16).",
     ["D-16", "FETCH-12", "COV-17"], recipe(**IV),
     [run(EX2, ok(cov(discovered=2, known=2, fetched_this_run=2), BASIC_RELATION, {}, {"count": 3})),
      run(EX2, ok(cov(discovered=2, known=2, fetched_this_run=1, unchanged=1, budget_exhausted="max_fetches_per_run", complete=False),
                  None, {}, {"order": [L, f"{H}/p/a"]}, relation_same_as_run=1),
          clock_advance_seconds=3601, recipe=recipe(**IV, **{"collection.pages.max_fetches_per_run": 1}))],
     modes=["inline"], requires=["clock_advance"])

case("fetch", "fetch-max-pages-ledger", "max_pages bounds the ledger's distinct pages, not this run's listing (D-18): unlisted pages still count; a ledger that is exactly full with nothing refused names no budget.",
     ["D-18", "FETCH-13", "COV-17"], recipe(**{"collection.pages.max_pages": 2}),
     [run(EX2, ok(cov(discovered=2, known=2, fetched_this_run=2), BASIC_RELATION, {}, {"count": 3})),
      run([listing(L, "c"), page("c", "C")],
          ok(cov(discovered=1, known=2, budget_exhausted="max_pages", complete=False), None, {}, {"count": 1, "never": [f"{H}/p/c"]},
             relation_same_as_run=1, ledger_pages=["a", "b"]))])

def ts(name: str) -> str:
    return f"{{{{ts:{name}}}}}"


case("merge", "merge-interval-exact", "D-63 at the exact instant: with explicit discovery nothing happens between a run's start and its work order, so a page fetched exactly `seconds` before the run is not due; seconds + 100 later it is (the politeness gap, here 3600 s, is not added to the threshold).",
     ["D-63", "MERGE-30"], explicit(("a", "/p/a"), **{**IV, "collection.pages.min_interval_seconds": 3600}),
     [run([page("a", "A")], ok(cov(discovered=1, known=1, discovery_requests=0, fetched_this_run=1), relation(P("a", ["A"])),
                               {"a": {"last_fetched_at": ts("lf:a:1")}}, {"count": 1}, clock_slack_seconds=7300)),
      run([page("a", "A")], ok(cov(discovered=1, known=1, discovery_requests=0), None, {"a": {"last_fetched_at": ts("lf:a:1")}},
                               {"count": 0}, relation_same_as_run=1, clock_slack_seconds=7300), clock_advance_seconds=3600),
      run([page("a", "A")], ok(cov(discovered=1, known=1, discovery_requests=0, fetched_this_run=1, unchanged=1), None, {},
                               {"count": 1}, relation_same_as_run=1, clock_slack_seconds=7300), clock_advance_seconds=100)],
     modes=["inline"], requires=["clock_advance"])

case("merge", "merge-ledger-times", "Ledger times by value (protocol v2): discovered_at is kept for good, last_seen_at moves with every discovery that lists the page and only then, last_fetched_at moves with every successful fetch (D-32) while page_fetched_at stays (D-31); a page is fetched after it was discovered, and pages of one host min_interval_seconds apart.",
     ["D-31", "D-32", "PROV-07", "PROV-09", "MERGE-13", "MERGE-25", "FETCH-19"], recipe(**IV),
     [run(EX2, ok(cov(discovered=2, known=2, fetched_this_run=2), BASIC_RELATION,
                  {"a": {"discovered_at": ts("disc:a"), "last_seen_at": ts("seen:a:1"), "last_fetched_at": ts("lf:a:1"), "failed_at": None},
                   "b": {"discovered_at": ts("disc:b"), "last_seen_at": ts("seen:b:1"), "last_fetched_at": ts("lf:b:1")}},
                  {"count": 3}, time_order=[["disc:a", 0.001, "fetch:a:1"], ["disc:b", 0.001, "fetch:b:1"], ["fetch:a:1", 1, "fetch:b:1"]])),
      run([listing(L, "a"), page("a", "A1", "A2"), page("b", "B1")],
          ok(cov(discovered=1, known=2, fetched_this_run=2, unchanged=2), None,
             {"a": {"discovered_at": ts("disc:a"), "last_seen_at": ts("seen:a:2"), "last_fetched_at": ts("lf:a:2")},
              "b": {"discovered_at": ts("disc:b"), "last_seen_at": ts("seen:b:1"), "last_fetched_at": ts("lf:b:2")}},
             {"count": 3}, relation_same_as_run=1,
             time_order=[["seen:a:1", 3601, "seen:a:2"], ["lf:a:1", 3601, "lf:a:2"], ["lf:b:1", 3601, "lf:b:2"]]),
          clock_advance_seconds=3601)],
     modes=["inline"], requires=["clock_advance"])

case("merge", "merge-ledger-digests", "Ledger digests (protocol v2): a change records the old digest as previous_content_sha256; an unchanged refetch leaves both alone; the hint discovery lists is recorded even when the page is not fetched.",
     ["MERGE-18", "MERGE-13", "MERGE-06", "D-30"], recipe(**{"collection.discovery.revision": {"pointer": "/modified"}}),
     [run([listing(L, ("a", "/p/a", {"modified": "m1"})), page("a", "A1")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A1"])),
             {"a": {"content_sha256": sha(page_body("A1")), "previous_content_sha256": None, "revision_hint": "m1"}}, {"count": 2})),
      run([listing(L, ("a", "/p/a", {"modified": "m2"}))],
          ok(cov(discovered=1, known=1), None, {"a": {"revision_hint": "m2", "content_sha256": sha(page_body("A1"))}},
             {"count": 1}, relation_same_as_run=1)),
      run([listing(L, ("a", "/p/a", {"modified": "m2"})), page("a", "A2")],
          ok(cov(discovered=1, known=1, fetched_this_run=1, changed=1), relation(P("a", ["A2"], 2)),
             {"a": {"content_sha256": sha(page_body("A2")), "previous_content_sha256": sha(page_body("A1")), "revision": 2}},
             {"count": 2}, corrections=["a"]), recipe=recipe(**RH)),
      run([listing(L, ("a", "/p/a", {"modified": "m3"})), page("a", "A2")],
          ok(cov(discovered=1, known=1, fetched_this_run=1, unchanged=1), None,
             {"a": {"content_sha256": sha(page_body("A2")), "previous_content_sha256": sha(page_body("A1")), "revision": 2,
                    "revision_hint": "m3"}},
             {"count": 2}, relation_same_as_run=3, corrections=[]), recipe=recipe(**RH)),
      run([listing(L, ("a", "/p/a", {"modified": "m3"}))],
          ok(cov(discovered=1, known=1), None, {"a": {"revision": 2}}, {"order": [L]}, relation_same_as_run=3), recipe=recipe(**RH))])

case("merge", "merge-failure-facts", "A failed refetch (protocol v2) records failure_code, its liveness class (D-62) and failed_at, and keeps the rows: 404 gone, 503 after retries error, a robots disallow blocked; none of them deletes rows.",
     ["MERGE-20", "MERGE-23", "MERGE-24", "D-53", "D-62", "D-48"], recipe(**IV, **{"collection.pages.retries": 1}),
     [run([listing(L, "a", "b", "c"), page("a", "A"), page("b", "B"), page("c", "C")],
          ok(cov(discovered=3, known=3, fetched_this_run=3), relation(P("a", ["A"]), P("b", ["B"]), P("c", ["C"])), {}, {"count": 4})),
      run([ex(f"{H}/robots.txt", "User-agent: *\nDisallow: /p/c\n", ctype="text/plain"), listing(L, "a", "b", "c"),
           ex(f"{H}/p/a", "", status=404, ctype="text/plain"), ex(f"{H}/p/b", "", status=503, ctype="text/plain")],
          ok(cov(discovered=3, known=3, failed_this_run=3, failed=3, complete=False), None,
             {"a": {**failed("http_status_404", 1), "failure_class": "gone", "failed_at": ts("failed:a")},
              "b": {**failed("http_status_503", 1), "failure_class": "error", "failed_at": ts("failed:b")},
              "c": {**failed("robots_disallowed", 1), "failure_class": "blocked", "failed_at": ts("failed:c")}},
             {"never": [f"{H}/p/c"], "max_per_url": 2}, relation_same_as_run=1, clock_slack_seconds=3600), clock_advance_seconds=3601)],
     modes=["inline"], requires=["clock_advance"])

case("merge", "merge-replace-exact-page", "A changed page replaces exactly its own rows: pages whose ids start with its id keep theirs; a shorter new version leaves no old rows behind.",
     ["MERGE-16", "MERGE-27"], recipe(**RH),
     [run([listing(L, ("1", "/p/1", {"modified": "m1"}), ("10", "/p/10", {"modified": "m1"})), page("1", "X1", "X2", "X3"), page("10", "T")],
          ok(cov(discovered=2, known=2, fetched_this_run=2), relation(P("1", ["X1", "X2", "X3"]), P("10", ["T"])), {}, {"count": 3})),
      run([listing(L, ("1", "/p/1", {"modified": "m2"}), ("10", "/p/10", {"modified": "m1"})), page("1", "Y1")],
          ok(cov(discovered=2, known=2, fetched_this_run=1, changed=1), relation(P("1", ["Y1"], 2), P("10", ["T"])),
             {"1": fetched(2)}, {"order": [L, f"{H}/p/1"]}, corrections=["1"]))])

case("merge", "merge-column-mismatch-keeps-rows", "A refetch decoding to other columns than the pin's fails column_mismatch and keeps the page's previous rows (D-12).",
     ["MERGE-22", "MERGE-24", "D-12"], recipe(**RH, **{"connector.parameters.2.value": '{"columns":[{"name":"title","pointer":"/title"}],"records":{"pointer":"/rows"}}'}),
     [run([listing(L, ("a", "/p/a", {"modified": "m1"}))] + [page("a", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A"])), {}, {"count": 2})),
      run([listing(L, ("a", "/p/a", {"modified": "m2"})), ex(f"{H}/p/a", '{"rows":[{"title":"A2"}]}', ctype="application/json")],
          ok(cov(discovered=1, known=1, fetched_this_run=1, changed=1), relation(P("a", ["A2"], 2, body='{"rows":[{"title":"A2"}]}')),
             {"a": fetched(2)}, {"count": 2}, corrections=["a"]))])

case("merge", "merge-never-retries-failed", "Under revisit never a failed page is still retried on a later run (MERGE-28 names only fetched pages).",
     ["MERGE-28", "MERGE-09"], recipe(),
     [run([listing(L, "a"), ex(f"{H}/p/a", "", status=404, ctype="text/plain")],
          ok(cov(discovered=1, known=1, failed_this_run=1, failed=1, complete=False), relation(), {"a": failed("http_status_404")}, {"count": 2})),
      run([listing(L, "a"), page("a", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A"])), {"a": fetched()}, {"order": [L, f"{H}/p/a"]}))])

case("merge", "merge-unlisted-still-retried", "A failed page discovery no longer lists is still retried (D-34: absence never deletes).",
     ["D-34", "MERGE-25"], recipe(),
     [run([listing(L, "a", "b"), page("a", "A"), ex(f"{H}/p/b", "", status=503, ctype="text/plain")],
          ok(cov(discovered=2, known=2, fetched_this_run=1, failed_this_run=1, failed=1, complete=False), relation(P("a", ["A"])),
             {"b": failed("http_status_503")}, {"count": 3})),
      run([listing(L, "a"), page("b", "B")],
          ok(cov(discovered=1, known=2, fetched_this_run=1), relation(P("a", ["A"]), P("b", ["B"])), {"b": fetched()},
             {"order": [L, f"{H}/p/b"]}))])

case("merge", "merge-failed-total-not-this-run", "failed counts the ledger's failed pages, not only this run's failures: a failed page left untried stays counted.",
     ["COV-13", "D-16"], recipe(**{"collection.pages.max_fetches_per_run": 1}),
     [run([listing(L, "a"), ex(f"{H}/p/a", "", status=404, ctype="text/plain")],
          ok(cov(discovered=1, known=1, failed_this_run=1, failed=1, complete=False), relation(), {"a": failed("http_status_404")}, {"count": 2})),
      run([listing(L, "a", "b"), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=1, failed=1, budget_exhausted="max_fetches_per_run", complete=False),
             relation(P("b", ["B"])), {"a": failed("http_status_404")}, {"order": [L, f"{H}/p/b"]}))])

case("merge", "merge-revisit-orders", "Revisits follow the work order: revision_hint revisits in discovery order (not page_id order); under interval a moved hint alone does not make a page due; a hint that compares equal as an instant but differs as text is a move (D-33).",
     ["D-51", "D-33", "MERGE-29", "MERGE-30"], recipe(**RH),
     [run([listing(L, ("b", "/p/b", {"modified": "2024-01-01T00:00:00Z"}), ("a", "/p/a", {"modified": "1"})), page("a", "A"), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=2), relation(P("a", ["A"]), P("b", ["B"])), {}, {"order": [L, f"{H}/p/b", f"{H}/p/a"]})),
      run([listing(L, ("b", "/p/b", {"modified": "2024-01-01T00:00:00+00:00"}), ("a", "/p/a", {"modified": "2"})), page("a", "A"), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=2, unchanged=2), None, {}, {"order": [L, f"{H}/p/b", f"{H}/p/a"]},
             relation_same_as_run=1)),
      run([listing(L, ("b", "/p/b", {"modified": "x"}), ("a", "/p/a", {"modified": "y"}))],
          ok(cov(discovered=2, known=2), None, {}, {"order": [L]}, relation_same_as_run=1),
          recipe=recipe(**{"collection.discovery.revision": {"pointer": "/modified"}, **IV}))])

case("merge", "merge-interval-boundary", "D-63: a page fetched less than `seconds` ago is not yet due (run 2 advances the clock by seconds - 30: the specification does not fix how much virtual time politeness adds, so the exact instant is pinned by the unit test merge_30); past `seconds` it is.",
     ["MERGE-30", "D-63"], recipe(**IV),
     [run(EX2, ok(cov(discovered=2, known=2, fetched_this_run=2), BASIC_RELATION, {}, {"count": 3})),
      run(EX2, ok(cov(discovered=2, known=2), None, {}, {"count": 1, "order": [L]}, relation_same_as_run=1),
          clock_advance_seconds=3570),
      run(EX2, ok(cov(discovered=2, known=2, fetched_this_run=2, unchanged=2), None, {"a": fetched(1), "b": fetched(1)},
                  {"order": [L, f"{H}/p/a", f"{H}/p/b"]}, relation_same_as_run=1), clock_advance_seconds=31)],
     modes=["inline"], requires=["clock_advance"])

case("merge", "merge-changed-page", "A changed digest replaces exactly that page's rows, raises its revision and is a correction.",
     ["MERGE-16", "MERGE-17", "MERGE-18", "MERGE-19", "MERGE-27", "MERGE-29", "MERGE-06", "PROV-11", "PROV-08", "COV-11", "DISC-11", "D-33"],
     recipe(**RH),
     [run([listing(L, ("a", "/p/a", {"modified": "m1"}), ("b", "/p/b", {"modified": "m1"})), page("a", "A1", "A2", "A3"), page("b", "B1")],
          ok(cov(discovered=2, known=2, fetched_this_run=2), relation(P("a", ["A1", "A2", "A3"]), P("b", ["B1"])), {}, {"count": 3})),
      run([listing(L, ("a", "/p/a", {"modified": "m2"}), ("b", "/p/b", {"modified": "m1"})), page("a", "A1 new"), page("b", "B changed")],
          ok(cov(discovered=2, known=2, fetched_this_run=1, changed=1), relation(P("a", ["A1 new"], 2), P("b", ["B1"])),
             {"a": fetched(2), "b": fetched(1)}, {"order": [L, f"{H}/p/a"]}, corrections=["a"])),
      run([listing(L, ("a", "/p/a", {"modified": "m3"}), ("b", "/p/b", {"modified": "m1"})), page("a", "A1 new")],
          ok(cov(discovered=2, known=2, fetched_this_run=1, unchanged=1), None, {"a": fetched(2)}, {"order": [L, f"{H}/p/a"]},
             relation_same_as_run=2, corrections=[]))])

case("merge", "merge-revision-hint-unmoved", "Under revision_hint a page whose hint did not move is not refetched; a page without a hint never is.",
     ["MERGE-29", "D-33"], recipe(**RH),
     [run([listing(L, ("a", "/p/a", {"modified": "m1"}), "b"), page("a", "A"), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=2), relation(P("a", ["A"]), P("b", ["B"])), {}, {"count": 3})),
      run([listing(L, ("a", "/p/a", {"modified": "m1"}), "b")],
          ok(cov(discovered=2, known=2), None, {}, {"count": 1}, relation_same_as_run=1))])

case("merge", "merge-absence-never-deletes", "A page discovery no longer lists keeps its rows and its ledger row.",
     ["MERGE-25", "MERGE-26", "D-34"], recipe(),
     [run(EX2, ok(cov(discovered=2, known=2, fetched_this_run=2), BASIC_RELATION, {}, {"count": 3})),
      run([listing(L, "a")], ok(cov(discovered=1, known=2), None, {"b": fetched()}, {"count": 1}, relation_same_as_run=1, ledger_pages=["a", "b"]))])

case("merge", "merge-failed-keeps-rows", "A refetch that fails keeps the page's previous rows; a 404 never deletes.",
     ["MERGE-24", "MERGE-20", "D-53", "COV-13"], recipe(**IV),
     [run(EX2, ok(cov(discovered=2, known=2, fetched_this_run=2), BASIC_RELATION, {}, {"count": 3})),
      run([listing(L, "a", "b"), ex(f"{H}/p/a", "", status=404, ctype="text/plain"), page("b", "B1")],
          ok(cov(discovered=2, known=2, fetched_this_run=1, unchanged=1, failed_this_run=1, failed=1, complete=False), None,
             {"a": failed("http_status_404", 1), "b": fetched(1)}, {"count": 3}, relation_same_as_run=1), clock_advance_seconds=3601)],
     modes=["inline"], requires=["clock_advance"])

case("merge", "merge-work-order", "Step 2 takes pending pages in discovery order, then failed pages oldest failure first, then revisits.",
     ["MERGE-08", "MERGE-09", "MERGE-10", "MERGE-30", "D-51"], recipe(**IV),
     [run([listing(L, "b", "a", "c"), ex(f"{H}/p/b", "", status=404, ctype="text/plain"), ex(f"{H}/p/a", "", status=404, ctype="text/plain"), page("c", "C")],
          ok(cov(discovered=3, known=3, fetched_this_run=1, failed_this_run=2, failed=2, complete=False), relation(P("c", ["C"])), {},
             {"order": [L, f"{H}/p/b", f"{H}/p/a", f"{H}/p/c"]})),
      run([listing(L, "e", "a", "b", "c", "d"), page("a", "A"), page("b", "B"), page("c", "C"), page("d", "D"), page("e", "E")],
          ok(cov(discovered=5, known=5, fetched_this_run=5, unchanged=1), None, {}, 
             {"order": [L, f"{H}/p/e", f"{H}/p/d", f"{H}/p/b", f"{H}/p/a", f"{H}/p/c"]},
             relation=relation(*(P(x, [x.upper()]) for x in "abcde"))), clock_advance_seconds=3601)],
     modes=["inline"], requires=["clock_advance"])

case("merge", "merge-pending-before-new", "Pages left pending by an earlier run come before pages discovered later (by original discovery order).",
     ["MERGE-08", "D-51"], recipe(**{"collection.pages.max_fetches_per_run": 1}),
     [run([listing(L, "a", "b"), page("a", "A"), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=1, pending=1, budget_exhausted="max_fetches_per_run", complete=False),
             relation(P("a", ["A"])), {"b": pending()}, {"order": [L, f"{H}/p/a"]})),
      run([listing(L, "c", "b", "a"), page("b", "B"), page("c", "C")],
          ok(cov(discovered=3, known=3, fetched_this_run=1, pending=1, budget_exhausted="max_fetches_per_run", complete=False),
             relation(P("a", ["A"]), P("b", ["B"])), {"c": pending()}, {"order": [L, f"{H}/p/b"]}))])

case("merge", "merge-zero-rows", "A page decoding to zero rows is fetched and adds no rows.", ["D-50"], recipe(),
     [run([listing(L, "a", "b"), page("a"), page("b", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=2), relation(P("b", ["B"])), {"a": fetched()}, {"count": 3}))])

ELEVEN = [f"r{i}" for i in range(1, 12)]
case("merge", "merge-sort-order", "The relation sorts by page_id (bytewise) then numeric page_ordinal, whatever the fetch order; quoting only where needed.",
     ["PROV-14", "PROV-15", "PROV-12", "PROV-13", "D-29", "D-02"], recipe(),
     [run([listing(L, "b", "B", "a"), page("b", *ELEVEN), page("B", 'say "hi", twice'), page("a", "line\nbreak")],
          ok(cov(discovered=3, known=3, fetched_this_run=3),
             relation(P("B", ['say "hi", twice']), P("a", ["line\nbreak"]), P("b", ELEVEN)), {}, {"count": 4}))])

case("merge", "merge-resync", "A resync starts from an empty ledger, rediscovers from the beginning and drops pages it no longer lists.",
     ["OPS-05", "OPS-06", "MERGE-02", "D-44", "D-61"], recipe(**PP),
     [run([listing(f"{L}?page=1", "a", "b"), ex(f"{L}?page=2", []), page("a", "A1", "A2"), page("b", "B1")],
          ok(cov(discovered=2, known=2, fetched_this_run=2, discovery_requests=2), BASIC_RELATION, {}, {"count": 4})),
      run([listing(f"{L}?page=1", "a"), ex(f"{L}?page=2", []), page("a", "A1", "A2")],
          ok(cov(discovered=1, known=1, fetched_this_run=1, discovery_requests=2), relation(P("a", ["A1", "A2"]), scope="resync:"), {"a": fetched(1)},
             {"order": [f"{L}?page=1", f"{L}?page=2", f"{H}/p/a"]}, ledger_pages=["a"]), resync=True)])

# --- coverage -----------------------------------------------------------------------------
case("coverage", "cov-clamp-between-pages", "The max_rows clamp falls between pages: the page that does not fit stays pending, truncated is true, coverage incomplete; raising max_rows restores it without a new revision.",
     ["COV-20", "COV-21", "COV-23", "COV-24", "COV-25", "COV-26", "COV-28", "COV-14", "D-17", "D-55"],
     recipe(**{"limits.max_rows": 3}),
     [run([listing(L, "a", "b"), page("a", "A1", "A2"), page("b", "B1", "B2")],
          ok(cov(discovered=2, known=2, fetched_this_run=2, pending=1, complete=False), relation(P("a", ["A1", "A2"])),
             {"a": fetched(), "b": {"state": "pending"}}, {"count": 3}, truncated=True)),
      run([listing(L, "a", "b"), page("b", "B1", "B2")],
          ok(cov(discovered=2, known=2, fetched_this_run=1, unchanged={"between": [0, 1]}, pending=1, complete=False), None,
             {"b": {"state": "pending"}}, {}, truncated=True, relation_same_as_run=1)),
      run([listing(L, "a", "b"), page("b", "B1", "B2")],
          ok(cov(discovered=2, known=2, fetched_this_run=1, unchanged={"between": [0, 1]}), relation(P("a", ["A1", "A2"]), P("b", ["B1", "B2"])),
             {"b": fetched(1)}, {"order": [L, f"{H}/p/b"]}, truncated=False), recipe=recipe(**{"limits.max_rows": 10}))])

case("coverage", "cov-clamp-exact-fit", "D-64: a relation holding exactly max_rows rows with nothing left out is not truncated.",
     ["COV-20", "COV-21", "D-64"], recipe(**{"limits.max_rows": 3}),
     [run([listing(L, "a", "b"), page("a", "A1"), page("b", "B1", "B2")],
          ok(cov(discovered=2, known=2, fetched_this_run=2), relation(P("a", ["A1"]), P("b", ["B1", "B2"])),
             {"a": fetched(), "b": fetched()}, {"count": 3}, truncated=False))])

case("coverage", "cov-clamp-between-pages-short", "D-64: the clamp falls between pages and the relation holds fewer than max_rows rows: still truncated.",
     ["COV-20", "COV-21", "COV-23", "D-64"], recipe(**{"limits.max_rows": 4}),
     [run([listing(L, "a", "b"), page("a", "A1", "A2", "A3"), page("b", "B1", "B2")],
          ok(cov(discovered=2, known=2, fetched_this_run=2, pending=1, complete=False), relation(P("a", ["A1", "A2", "A3"])),
             {"a": fetched(), "b": {"state": "pending"}}, {"count": 3}, truncated=True))])

case("coverage", "cov-clamp-first-page", "A first page larger than the clamp is cut through: its first max_rows rows are written and it stays pending.",
     ["COV-22", "COV-20", "COV-23", "D-52"], recipe(**{"limits.max_rows": 2}),
     [run([listing(L, "a"), page("a", "A1", "A2", "A3")],
          ok(cov(discovered=1, known=1, fetched_this_run=1, pending=1, complete=False),
             relation(P("a", ["A1", "A2", "A3"])).rsplit("\n", 2)[0] + "\n", {"a": {"state": "pending"}}, {"count": 2}, truncated=True))])

case("coverage", "cov-first-run-incomplete", "A first run on a corpus larger than its fetch budget: the shape of the specification's example block (fewer pages).",
     ["COV-01", "COV-02", "COV-03", "COV-13", "COV-16", "OPS-08", "OPS-09", "D-15", "D-16", "D-21"],
     recipe(**PP, **{"collection.pages.max_fetches_per_run": 5}),
     [run([listing(f"{L}?page=1", *"abcd"), listing(f"{L}?page=2", *"efgh"), listing(f"{L}?page=3", *"ij"), ex(f"{L}?page=4", [])]
          + [page(x, x.upper()) for x in "acdefghij"] + [ex(f"{H}/p/b", "", status=410, ctype="text/plain")],
          ok(cov(discovered=10, discovery_requests=4, known=10, fetched_this_run=5, failed_this_run=1, pending=4, failed=1,
                 budget_exhausted="max_fetches_per_run", complete=False),
             relation(*(P(x, [x.upper()]) for x in "acdef")), {"b": failed("http_status_410"), "g": pending()}, {"count": 10}))])

case("coverage", "cov-complete-needs-no-failed", "complete is false while any page is failed, even with nothing pending and no budget spent.",
     ["COV-18", "OPS-08"], recipe(),
     [run([listing(L, "a"), ex(f"{H}/p/a", "", status=500, ctype="text/plain")],
          ok(cov(discovered=1, known=1, failed_this_run=1, failed=1, complete=False), relation(), {"a": failed("http_status_500")}, {"count": 2}))])

case("coverage", "cov-discovery-failure-with-rows", "A discovery refusal on a run that holds pages: the run succeeds, keeps every row and names the first listing it could not read.",
     ["REF-12", "COV-07", "COV-29", "DISC-32", "MERGE-25"], recipe(**PP),
     [run([listing(f"{L}?page=1", "a", "b"), ex(f"{L}?page=2", []), page("a", "A1", "A2"), page("b", "B1")],
          ok(cov(discovered=2, known=2, fetched_this_run=2, discovery_requests=2), BASIC_RELATION, {}, {"count": 4})),
      run([listing(f"{L}?page=1", "a", "c"), ex(f"{L}?page=2", "", status=500, ctype="text/plain"), page("c", "C")],
          ok(cov(discovered=2, discovery_requests=2, known=3, fetched_this_run=1,
                 discovery_complete=False, discovery_failure=f"{L}?page=2", complete=False),
             relation(P("a", ["A1", "A2"]), P("b", ["B1"]), P("c", ["C"])), {"a": fetched(), "b": fetched(), "c": fetched()},
             {"order": [f"{L}?page=1", f"{L}?page=2", f"{H}/p/c"]}))])

# --- registration: a dataset's tables (the transform), read as collection's D-69 shapes them ------
# The specification fixes what the transform is handed (PROV-16: every column VARCHAR) and when a
# column is refused (PROV-18, PROV-20, REF-08, D-49), not how a recipe writes it down: these cases
# need the optional capability transform:collection-v1 (the `tables` member of a dataset document).
TRANSFORM = ["transform:collection-v1"]
SPEC_SQL = ("select page_id,\n       cast(page_ordinal as integer) as page_ordinal,\n"
            "       cast(page_revision as integer) as page_revision,\n"
            "       cast(page_fetched_at as timestamp with time zone) as page_fetched_at,\n"
            "       cast(page_discovered_at as timestamp with time zone) as page_discovered_at,\n"
            "       title, story\nfrom council_decisions")
SPEC_COLUMNS = [("page_id", "string"), ("page_ordinal", "integer"), ("page_revision", "integer"),
                ("page_fetched_at", "timestamp"), ("page_discovered_at", "timestamp"), ("title", "string"),
                ("story", "string")]


def tables_dataset(*tables, sources=None) -> dict:
    return {"name": "council", "sources": sources or [copy.deepcopy(EXAMPLE)],
            "tables": [{"name": name, "sql": sql, "columns": [{"name": n, "type": t} for n, t in columns]}
                       for name, sql, columns in tables]}


def feed_source() -> dict:
    """A source with another adapter: registrable, but no Reader pin and so no known columns."""
    doc = {k: copy.deepcopy(v) for k, v in EXAMPLE.items() if k not in ("collection", "limits")}
    doc["name"] = "notes"
    doc["connector"] = {"adapter_id": "public.https.feed@1.0.0", "credential_mode": "none"}
    return doc


def treg(cid, description, clauses, doc, refusals=(), registrable=False) -> None:
    reg(cid, description, clauses, doc, registrable=registrable, refusals=refusals, requires=TRANSFORM)


def tsql(cid, description, clauses, sql, columns, code) -> None:
    """The common transform case: one table, `decisions`, over the example source, refused once at its SQL."""
    treg(cid, description, clauses, tables_dataset(("decisions", sql, columns)), [("/tables/0/sql", code)])


treg("reg-transform-spec-example", "The specification's transform, as written, registers beside its source: provenance cast as PROV-19 says, page_id and the Reader's columns bare into string columns.",
     ["PROV-02", "PROV-16", "PROV-19", "PROV-21", "PROV-22"],
     tables_dataset(("decisions", SPEC_SQL, SPEC_COLUMNS)), registrable=True)
tsql("reg-transform-bare-page-ordinal", "page_ordinal selected bare into a column declared integer is TRANSFORM_COLUMN_TYPE_MISMATCH, found without data.",
     ["PROV-17", "PROV-18", "REF-08"],
     "select page_id,\n       page_ordinal\nfrom council_decisions", [("page_id", "string"), ("page_ordinal", "integer")],
     "TRANSFORM_COLUMN_TYPE_MISMATCH")
tsql("reg-transform-bare-reader-column", "A Reader column arrives as VARCHAR too: selected bare into a non-string column it is TRANSFORM_COLUMN_TYPE_MISMATCH.",
     ["PROV-16", "D-49"],
     "select page_id, title as decided_on from council_decisions",
     [("page_id", "string"), ("decided_on", "date")],
     "TRANSFORM_COLUMN_TYPE_MISMATCH")
tsql("reg-transform-plain-timestamp", "A cast to plain timestamp into a column declared timestamp is TRANSFORM_COLUMN_TYPE_MISMATCH: only TIMESTAMP WITH TIME ZONE fits.",
     ["PROV-20", "D-49"],
     "select page_id, cast(page_fetched_at as timestamp) as page_fetched_at from council_decisions",
     [("page_id", "string"), ("page_fetched_at", "timestamp")],
     "TRANSFORM_COLUMN_TYPE_MISMATCH")
tsql("reg-transform-cast-into-string", "A provenance column cast to a number for a column declared string is TRANSFORM_COLUMN_TYPE_MISMATCH: the declared type is the one the build stores.",
     ["PROV-21", "D-49"],
     "select cast(page_id as integer) as page_id from council_decisions", [("page_id", "string")],
     "TRANSFORM_COLUMN_TYPE_MISMATCH")
tsql("reg-transform-two-mismatches", "Each mismatched column is its own refusal, both at the table's SQL.",
     ["PROV-18", "PROV-19"],
     "select page_revision, page_discovered_at from council_decisions",
     [("page_revision", "integer"), ("page_discovered_at", "timestamp")],
     "TRANSFORM_COLUMN_TYPE_MISMATCH")
treg("reg-transform-second-table", "A refusal in the second table points into the second table; the first, correct, is not refused.",
     ["PROV-18"],
     tables_dataset(("decisions", SPEC_SQL, SPEC_COLUMNS),
                    ("ordinals", "select page_ordinal from council_decisions", [("page_ordinal", "integer")])),
     [("/tables/1/sql", "TRANSFORM_COLUMN_TYPE_MISMATCH")])
treg("reg-transform-copy-statement", "A table's SQL is one SELECT: COPY ... TO is refused without running anything.",
     ["PROV-16"],
     tables_dataset(("decisions", "copy (select page_id from council_decisions) to '/tmp/out.csv'", [("page_id", "string")])),
     [("/tables/0/sql", "TRANSFORM_SQL_NOT_ONE_SELECT")])
tsql("reg-transform-attach", "ATTACH is not a SELECT and is refused.",
     ["PROV-16"],
     "attach '/tmp/other.duckdb' as other", [("page_id", "string")],
     "TRANSFORM_SQL_NOT_ONE_SELECT")
tsql("reg-transform-read-csv", "A SELECT reading a file (read_csv('/etc/passwd')) reads outside the dataset and is refused.",
     ["PROV-16"],
     "select column0 as page_id from read_csv('/etc/passwd')", [("page_id", "string")],
     "TRANSFORM_SQL_FORBIDDEN")
tsql("reg-transform-two-statements", "A second statement after the SELECT is refused.",
     ["PROV-16"],
     "select page_id from council_decisions; install httpfs", [("page_id", "string")],
     "TRANSFORM_SQL_NOT_ONE_SELECT")
tsql("reg-transform-unknown-table", "A table reads only the dataset's sources, by their names.",
     ["PROV-02"],
     "select page_id from council_minutes", [("page_id", "string")],
     "TRANSFORM_SQL_UNKNOWN_TABLE")
tsql("reg-transform-unknown-column", "A source's columns are its Reader's columns then the seven provenance columns; another name is refused.",
     ["PROV-02", "PROV-16"],
     "select page_id, author from council_decisions", [("page_id", "string"), ("author", "string")],
     "TRANSFORM_SQL_UNKNOWN_COLUMN")
tsql("reg-transform-column-names-differ", "The SELECT's result names are the declared names, in order.",
     ["PROV-21"],
     "select page_url, page_id from council_decisions", [("page_id", "string"), ("page_url", "string")],
     "TRANSFORM_COLUMN_NAMES_DIFFER")
treg("reg-transform-type-not-declared", "A declared type outside the closed set (varchar) is refused at the column's type.",
     ["PROV-21"],
     tables_dataset(("decisions", "select page_id from council_decisions", [("page_id", "varchar")])),
     [("/tables/0/columns/0/type", "SCHEMA_ENUM")])
treg("reg-transform-table-named-as-source", "A table named as a source would mean that source in the SQL; it is refused at its name.",
     ["PROV-02"],
     tables_dataset(("council_decisions", "select page_id from council_decisions", [("page_id", "string")])),
     [("/tables/0/name", "TABLE_NAME_IS_SOURCE")])
treg("reg-transform-duplicate-table-name", "Two tables of one name are refused at the second.",
     ["PROV-02"],
     tables_dataset(("decisions", "select page_id from council_decisions", [("page_id", "string")]),
                    ("decisions", "select page_url from council_decisions", [("page_url", "string")])),
     [("/tables/1/name", "TABLE_DUPLICATE_NAME")])
treg("reg-transform-duplicate-column", "Column names compare ignoring case, as DuckDB compares identifiers: Title and title are one name.",
     ["PROV-21"],
     tables_dataset(("decisions", "select title as Title, story as title from council_decisions",
                     [("Title", "string"), ("title", "string")])),
     [("/tables/0/columns/1/name", "TABLE_DUPLICATE_COLUMN")])
treg("reg-transform-non-collection-source", "A table reading a source that is not a collection (no Reader pin, no known columns) is refused.",
     ["PROV-02"],
     tables_dataset(("decisions", "select page_id from notes", [("page_id", "string")]),
                    sources=[copy.deepcopy(EXAMPLE), feed_source()]),
     [("/tables/0/sql", "TABLE_SOURCE_NOT_COLLECTION")])
treg("reg-transform-sql-syntax", "SQL that is not valid SQL (a string literal never closed) is refused before any engine sees it.",
     ["PROV-16"],
     tables_dataset(("decisions", "select page_id, 'open from council_decisions", [("page_id", "string")])),
     [("/tables/0/sql", "TRANSFORM_SQL_SYNTAX")])
tsql("reg-transform-sql-unsupported", "A construct outside the typed subset (a window function) is refused by name, not guessed at.",
     ["PROV-16"],
     "select page_id, row_number() over (order by page_id) as n from council_decisions",
     [("page_id", "string"), ("n", "integer")],
     "TRANSFORM_SQL_UNSUPPORTED")
tsql("reg-transform-sql-type-error", "Every column arrives as VARCHAR: arithmetic on a bare provenance column is refused as the engine refuses it.",
     ["PROV-16", "PROV-17"],
     "select page_id, page_ordinal + 1 as next_ordinal from council_decisions",
     [("page_id", "string"), ("next_ordinal", "integer")],
     "TRANSFORM_SQL_TYPE_ERROR")
tsql("reg-transform-sql-aggregate", "A column outside GROUP BY and every aggregate is refused.",
     ["PROV-16"],
     "select page_id, count(*) as pages from council_decisions",
     [("page_id", "string"), ("pages", "integer")],
     "TRANSFORM_SQL_AGGREGATE")
tsql("reg-transform-sql-unnamed-column", "A select item that is neither a column nor named with AS is refused: each declared column is a named result column.",
     ["PROV-21"],
     "select page_id, length(story) from council_decisions",
     [("page_id", "string"), ("story_characters", "integer")],
     "TRANSFORM_SQL_UNNAMED_COLUMN")

# --- refusals -----------------------------------------------------------------------------
case("refusals", "ref-discovery-failed", "Listing fails on a first run: COLLECTION_DISCOVERY_FAILED, and a later run starts as if nothing had been written.",
     ["REF-03", "REF-04"], recipe(),
     [run([ex(L, "", status=500, ctype="text/plain"), page("a", "A")], refused("COLLECTION_DISCOVERY_FAILED", {"never": [f"{H}/p/a"]})),
      run([listing(L, "a"), page("a", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A"])), {"a": fetched(1)}, {"count": 2}))])

case("refusals", "ref-explicit-never-discovery-failed", "explicit discovery has members to continue from, so it is never COLLECTION_DISCOVERY_FAILED.",
     ["REF-03", "DISC-26"], recipe(**{"collection.discovery": {"kind": "explicit", "members": [{"page_id": "a", "url": f"{H}/p/a"}]}, "limits.max_requests": 200}),
     [run([ex(f"{H}/p/a", "", status=503, ctype="text/plain")],
          ok(cov(discovered=1, discovery_requests=0, known=1, failed_this_run=1, failed=1, complete=False), relation(),
             {"a": failed("http_status_503")}, {"count": {"between": [1, 4]}}))])

case("refusals", "ref-merge-invalid-shape", "A listing body whose records pointer names no array is COLLECTION_MERGE_INVALID.",
     ["REF-07", "D-13", "D-14"], recipe(**{"collection.discovery.records.pointer": "/items"}),
     [run([ex(L, {"items": {"id": "a", "link": "/p/a"}}), page("a", "A")], refused("COLLECTION_MERGE_INVALID", {"never": [f"{H}/p/a"]}))])

case("refusals", "ref-merge-invalid-columns", "A refresh whose Reader pin decodes other columns than the stored relation is COLLECTION_MERGE_INVALID; a resync accepts it.",
     ["REF-05", "D-12", "OPS-05"], recipe(),
     [run([listing(L, "a"), page("a", "A")], ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A"])), {}, {"count": 2})),
      run([listing(L, "a"), page("a", "A")], refused("COLLECTION_MERGE_INVALID", {"never": [f"{H}/p/a"]}),
          recipe=recipe(**{"connector.parameters.2.value": '{"columns":[{"name":"heading","pointer":"/title"}],"records":{"pointer":"/rows"}}'})),
      run([listing(L, "a"), page("a", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A"]), reader_columns=("heading",), scope="resync:"), {"a": fetched(1)}, {"count": 2}),
          resync=True)])

# --- ops ----------------------------------------------------------------------------------
case("ops", "ops-scheduled-refresh-refused", "An action plan carrying a schedule is refused with RESYNC_REQUIRED before any request.",
     ["OPS-01", "OPS-02", "OPS-03", "D-61"], recipe(),
     [run([listing(L, "a"), page("a", "A")], refused("RESYNC_REQUIRED", {"count": 0}), action_plan={"action": "refresh", "schedule": {"every": "P1D"}})],
     requires=["action_plan"])


# --- issue 26: what the second independent fault set (audit/faults/independent-2.json) found unpinned ---
# Registration: a member written out as null is present, not absent (REG-14..19 name presence).
reg("reg-window-null", "\"window\": null is a window written out: refused like any window, not read as absent.",
    ["REG-14", "REF-02"], recipe(window=None), refusals=[("/window", "WINDOW_FORBIDDEN")])
reg("reg-closed-null", "\"closed\": null is the closed member present: refused like closed true or false.",
    ["REG-15", "REG-16"], recipe(closed=None), refusals=[("/closed", "CLOSED_FORBIDDEN")])
reg("reg-max-requests-null", "limits.max_requests: null does not state the budget a collection must state.",
    ["REG-11", "REG-33"], recipe(**{"limits.max_requests": None}), refusals=[("/limits/max_requests", None)])
reg("reg-discovery-max-requests-null", "discovery.max_requests: null is not an integer from 1 to 1024; only an absent member takes the default 64.",
    ["REG-18", "REG-17", "D-46"], recipe(**{"collection.discovery.max_requests": None, "limits.max_requests": 1000}),
    refusals=[("/collection/discovery/max_requests", None)])
reg("reg-pagination-null", "pagination: null is refused; only an absent pagination means kind none.",
    ["REG-19", "REG-17", "D-46"], recipe(**{"collection.discovery.pagination": None}),
    refusals=[("/collection/discovery/pagination", None)])
# Registration: origins in unusual forms (REG-21, D-40, D-54) and the discovery origin (REG-22, D-39).
for name, origin, why in [
        ("default-port", "https://b.example.com:443", "an explicit :443"),
        ("path", "https://b.example.com/decisions", "a path"),
        ("userinfo", "https://user:pw@b.example.com", "userinfo"),
        ("unicode-host", "https://bücher.example", "a Unicode host (the canonical form is lowercase punycode)"),
        ("ipv6", "https://[2001:db8::1]", "an IPv6 literal host"),
        ("ipv4", "https://192.0.2.1", "a numeric IPv4 host")]:
    reg(f"reg-origin-{name}", f"An allowed origin with {why} is not a canonical https origin: refused, never normalised.",
        ["REG-21", "D-40"] + (["D-54"] if name == "unicode-host" else []),
        recipe(**{"collection.pages.allowed_origins": [H, origin]}),
        refusals=[("/collection/pages/allowed_origins/1", "ORIGIN_NOT_CANONICAL")])
reg("reg-origin-punycode", "An IDN origin written in its canonical lowercase punycode form registers.", ["REG-21", "D-54"],
    recipe(**{"collection.pages.allowed_origins": [H, "https://xn--bcher-kva.example"]}), registrable=True)
reg("reg-discovery-origin-canonicalised", "The discovery address's origin is compared once canonicalised: an uppercase host and an explicit :443 still name an allowed origin.",
    ["REG-22", "D-39", "URL-05"], recipe(**{"collection.discovery.url": "https://WWW.example.com:443/list"}), registrable=True)
reg("reg-pagination-parameter-later", "The pagination parameter already on the address is found wherever it stands in the query, not only first.",
    ["PAG-15", "REF-01"],
    recipe(**{"collection.discovery.url": f"{H}/list?per_page=100&page=2",
              "collection.discovery.pagination": {"kind": "page_parameter", "parameter": "page"}}),
    refusals=[("/collection/discovery/url", "PAGINATION_PARAMETER_PRESENT")])
reg("reg-offset-parameter-present", "offset_parameter's parameter already on the address is refused as page_parameter's is.",
    ["PAG-15", "PAG-16"],
    recipe(**{"collection.discovery.url": f"{H}/list?offset=0",
              "collection.discovery.pagination": {"kind": "offset_parameter", "parameter": "offset"}}),
    refusals=[("/collection/discovery/url", "PAGINATION_PARAMETER_PRESENT")])
reg("reg-pagination-parameter-substring", "A parameter whose name merely contains the pagination parameter (per_page for page) is not that parameter.",
    ["PAG-15", "REG-39"],
    recipe(**{"collection.discovery.url": f"{H}/list?per_page=100",
              "collection.discovery.pagination": {"kind": "page_parameter", "parameter": "page"}}), registrable=True)

# Listing media types (DISC-28..31, D-37): a missing Content-Type is refused like a wrong one.
case("discovery", "disc-listing-no-content-type", "D-37: a json_api listing without Content-Type is refused before its body is read; a first run has nothing to continue from.",
     ["DISC-28", "DISC-31", "D-37", "REF-03"], recipe(),
     [run([listing(L, "a", ctype=None), page("a", "A1")], refused("COLLECTION_DISCOVERY_FAILED", {"never": [f"{H}/p/a"]}))])
case("discovery", "disc-listing-no-content-type-later-page", "D-37: a later listing page without Content-Type is refused too: discovery_failure names it and its records are not listed.",
     ["DISC-31", "DISC-32", "D-37", "REF-12", "COV-07"], recipe(**PP),
     [run([listing(f"{L}?page=1", "a", "b"), listing(f"{L}?page=2", "c", "d", ctype=None), page("a", "A1"), page("b", "B1"),
           page("c", "C1"), page("d", "D1")],
          ok(cov(discovered=2, discovery_requests=2, discovery_complete=False, discovery_failure=f"{L}?page=2", known=2,
                 fetched_this_run=2, complete=False),
             relation(P("a", ["A1"]), P("b", ["B1"])), {}, {"count": 4, "never": [f"{H}/p/c", f"{H}/p/d"]}))])
case("discovery", "disc-json-suffix-refused", "json_api accepts its four media types only: application/problem+json, though it ends in +json, is refused.",
     ["DISC-28", "DISC-31"], recipe(),
     [run([listing(L, "a", ctype="application/problem+json"), page("a", "A1")], refused("COLLECTION_DISCOVERY_FAILED", {"never": [f"{H}/p/a"]}))])
case("discovery", "disc-sitemap-xhtml-refused", "A sitemap listing answered application/xhtml+xml is refused, although the type names xml.",
     ["DISC-29", "DISC-31"], recipe(**SM),
     [run([ex(f"{H}/sitemap.xml", URLSET, ctype="application/xhtml+xml")], refused("COLLECTION_DISCOVERY_FAILED"))])
case("discovery", "disc-listing-media-refused-new-links", "A listing refused for its media type is never read: the new links its body holds are not listed.",
     ["DISC-31", "DISC-32", "COV-07"], recipe(),
     [run([listing(L, "a"), page("a", "A1")], ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A1"])), {}, {"count": 2})),
      run([listing(L, "a", "b", "c", "d", ctype="text/plain")],
          ok(cov(discovered=0, known=1, discovery_complete=False, discovery_failure=L, complete=False),
             None, {"a": fetched()}, {"count": 1}, relation_same_as_run=1, ledger_pages=["a"]))])

# The base of a relative link after a listing redirect (URL-01, D-24, D-25).
V2 = f"{H}/v2/list"
case("urls", "url-relative-after-listing-redirect", "A listing that redirected: its relative links resolve against the address that answered, not the one requested.",
     ["URL-01", "D-24", "D-25"], recipe(),
     [run([ex(L, "", status=301, ctype=None, headers=[("Location", "/v2/list")]), ex(V2, [{"id": "a", "link": "p/a"}]),
           page(f"{H}/v2/p/a", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1, discovery_requests=2), relation(P("a", ["A"], url=f"{H}/v2/p/a")), {},
             {"order": [L, V2, f"{H}/v2/p/a"]}))])
B2 = "https://example.com"
case("urls", "url-relative-after-cross-origin-redirect", "A listing redirected to another allowed origin: root-relative links take that origin.",
     ["URL-01", "URL-10", "D-25"], recipe(**{"collection.pages.allowed_origins": [H, B2]}),
     [run([ex(L, "", status=301, ctype=None, headers=[("Location", f"{B2}/list")]), ex(f"{B2}/list", [{"id": "a", "link": "/doc/7"}]),
           page(f"{B2}/doc/7", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1, discovery_requests=2), relation(P("a", ["A"], url=f"{B2}/doc/7")), {},
             {"order": [L, f"{B2}/list", f"{B2}/doc/7"], "never": [f"{H}/doc/7"]}))])
case("pagination", "pag-link-header-after-redirect", "A relative Link rel=next resolves against the address the listing answered from after a redirect.",
     ["PAG-09", "D-24", "URL-01"], recipe(**LH),
     [run([ex(L, "", status=301, ctype=None, headers=[("Location", "/archive/list")]),
           listing(f"{H}/archive/list", "a", headers=[("Link", '<list?page=2>; rel="next"')]), ex(f"{H}/archive/list?page=2", []),
           page("a", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1, discovery_requests=3), relation(P("a", ["A"])), {},
             {"order": [L, f"{H}/archive/list", f"{H}/archive/list?page=2", f"{H}/p/a"], "never": [f"{H}/list?page=2"]}))])
case("pagination", "pag-next-selector-after-redirect", "next_selector's relative href resolves against the address the listing answered from after a redirect.",
     ["PAG-13", "D-24", "URL-01"], recipe(**NS, **{"collection.discovery.url": f"{H}/idx/"}),
     [run([ex(f"{H}/idx/", "", status=301, ctype=None, headers=[("Location", "/idx/2024/")]),
           ex(f"{H}/idx/2024/", '<a class="d" href="/p/a">A</a><a class="next" href="page2.html">next</a>', ctype="text/html"),
           ex(f"{H}/idx/2024/page2.html", '<p>none</p>', ctype="text/html"), page("a", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1, discovery_requests=3),
             relation(P(f"{H}/p/a", ["A"], url=f"{H}/p/a")), {},
             {"order": [f"{H}/idx/", f"{H}/idx/2024/", f"{H}/idx/2024/page2.html", f"{H}/p/a"], "never": [f"{H}/idx/page2.html"]}))])
# Fragments (URL-04): removing one keeps the query; %23 is not a fragment.
case("urls", "url-fragment-keeps-query", "Dropping a fragment keeps the query before it: ?id=1#top and ?id=2 are two pages.",
     ["URL-04", "URL-08"], recipe(),
     [run([listing(L, ("a", f"{H}/p?id=1#top"), ("b", f"{H}/p?id=2")), page(f"{H}/p?id=1", "A"), page(f"{H}/p?id=2", "B")],
          ok(cov(discovered=2, known=2, fetched_this_run=2), relation(P("a", ["A"], url=f"{H}/p?id=1"), P("b", ["B"], url=f"{H}/p?id=2")), {},
             {"order": [L, f"{H}/p?id=1", f"{H}/p?id=2"]}))])
case("urls", "url-percent-23-not-fragment", "An encoded %23 in a path is part of the path, not a fragment.",
     ["URL-04", "URL-07"], recipe(),
     [run([listing(L, ("a", f"{H}/doc%231")), page(f"{H}/doc%231", "A")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A"], url=f"{H}/doc%231")), {},
             {"order": [L, f"{H}/doc%231"], "never": [f"{H}/doc"]}))])


# json.tabular renders a value that is not a string as its canonical JSON text (READ-05, PROV-16, D-27: compact,
# sorted members, UTF-8, integers exact, shortest round-trip floats); a member a record lacks is an empty cell and
# the record still makes its row (ordinals unchanged). Only numbers every shortest round-trip form writes alike.
JT_COLUMNS = ["t", "n", "big", "f", "b", "bf", "z", "nul", "arr", "obj", "e", "eo", "s", "s2"]
JT_OPTIONS = json.dumps({"columns": [{"name": c, "pointer": f"/{c}"} for c in JT_COLUMNS], "records": {"pointer": "/rows"}},
                        sort_keys=True, separators=(",", ":"))
JT_BODY = ('{"rows":[{"t":"x","n":7,"big":12345678901234567891,"f":0.1,"b":true,"bf":false,"z":0,"nul":null,'
           '"arr":["a","b"],"obj":{"z":null,"name":"Zürich","k":true},"e":[],"eo":{},"s":"007","s2":"1.50"},'
           '{"t":"y","n":12.5},{"t":"w","b":false}]}')
JT_CELLS = [["x", "7", "12345678901234567891", "0.1", "true", "false", "0", "null", '["a","b"]',
             '{"k":true,"name":"Zürich","z":null}', "[]", "{}", "007", "1.50"],
            ["y", "12.5"] + [""] * 12,
            ["w", "", "", "", "false"] + [""] * 9]


def table_relation(columns, pid, url, body, rows) -> str:
    lines = [",".join((*columns, PROV))]
    for n, cells in enumerate(rows, 1):
        lines.append(",".join(csv_field(x) for x in (*cells, pid, url))
                     + f",{fetch_ts(pid)},{sha(body)},1,{disc_ts(pid)},{n}")
    return "\n".join(lines) + "\n"


case("merge", "read-json-tabular-values", "json.tabular writes numbers, booleans, null, arrays and objects as their canonical JSON text, strings exactly as they are, and an empty cell for a member a record lacks (that record keeps its row).",
     ["READ-05", "PROV-16", "PROV-12", "MERGE-22", "D-27"], recipe(**{"connector.parameters.2.value": JT_OPTIONS}),
     [run([listing(L, "a"), ex(f"{H}/p/a", JT_BODY)],
          ok(cov(discovered=1, known=1, fetched_this_run=1),
             table_relation(JT_COLUMNS, "a", f"{H}/p/a", JT_BODY, JT_CELLS), {"a": fetched()}, {"count": 2}))])


# Which listing discovery_failure names (COV-07): the first that could not be read, as requested (canonical).
def sm_urlset(*pids) -> str:
    return ('<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + "".join(f"<url><loc>{H}/p/{p}</loc></url>" for p in pids) + "</urlset>")


FOUR_INDEX = ('<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
              + "".join(f"<sitemap><loc>{H}/c{i}.xml</loc></sitemap>" for i in range(1, 5)) + "</sitemapindex>")
case("discovery", "disc-sitemapindex-first-failure-named", "COV-07: of several sitemapindex children that fail, discovery_failure names the first; the others are still read.",
     ["COV-07", "DISC-22", "REF-12"], recipe(**SM),
     [run([ex(f"{H}/sitemap.xml", FOUR_INDEX, ctype="application/xml"), ex(f"{H}/c1.xml", sm_urlset("a"), ctype="application/xml"),
           ex(f"{H}/c2.xml", "", status=503, ctype="text/plain"), ex(f"{H}/c3.xml", sm_urlset("c"), ctype="application/xml"),
           ex(f"{H}/c4.xml", "", status=404, ctype="text/plain"), page("a", "A"), page("c", "C")],
          ok(cov(discovered=2, discovery_requests=5, discovery_complete=False, discovery_failure=f"{H}/c2.xml", known=2,
                 fetched_this_run=2, complete=False),
             relation(P(f"{H}/p/a", ["A"], url=f"{H}/p/a"), P(f"{H}/p/c", ["C"], url=f"{H}/p/c")), {}, {"count": 7}))])
case("pagination", "pag-link-header-failure-canonical", "discovery_failure names the next address canonicalised (host lowercased, fragment dropped), not as the Link header wrote it.",
     ["COV-07", "D-24", "URL-04", "REF-12"], recipe(**LH),
     [run([listing(L, "a", headers=[("Link", '<HTTPS://WWW.EXAMPLE.COM/list?page=2#x>; rel="next"')]),
           ex(f"{L}?page=2", "", status=500, ctype="text/plain"), page("a", "A")],
          ok(cov(discovered=1, discovery_requests=2, discovery_complete=False, discovery_failure=f"{L}?page=2", known=1,
                 fetched_this_run=1, complete=False), relation(P("a", ["A"])), {}, {"order": [L, f"{L}?page=2", f"{H}/p/a"]}))])
case("pagination", "pag-cursor-failure-names-request", "A cursor request that fails is named with its own token, not the previous address.",
     ["COV-07", "PAG-11", "D-23"], recipe(**CUR),
     [run([ex(L, {"items": [{"id": "a", "link": "/p/a"}], "next": "t2"}), ex(f"{L}?cursor=t2", "", status=500, ctype="text/plain"),
           page("a", "A")],
          ok(cov(discovered=1, discovery_requests=2, discovery_complete=False, discovery_failure=f"{L}?cursor=t2", known=1,
                 fetched_this_run=1, complete=False), relation(P("a", ["A"])), {}, {"order": [L, f"{L}?cursor=t2", f"{H}/p/a"]}))])
case("discovery", "disc-listing-retry-then-ok", "A listing that fails once and is read on its retry is no discovery failure: discovery is complete.",
     ["COV-07", "FETCH-21", "D-05"], recipe(**{"collection.pages.retries": 1}),
     [run([seq(L, ex("x", "", status=503, ctype="text/plain", headers=[("Retry-After", "1")]), listing(L, "a")), page("a", "A")],
          ok(cov(discovered=1, discovery_requests=2, known=1, fetched_this_run=1), relation(P("a", ["A"])), {},
             {"order": [L, L, f"{H}/p/a"]}))])

# The max_rows clamp (COV-20..23, D-50, D-52, D-64).
case("coverage", "cov-clamp-first-page-by-page-id", "D-52: the page cut through is the first in page_id order, whichever was fetched first.",
     ["D-52", "COV-22", "PROV-15"], recipe(**{"limits.max_rows": 2}),
     [run([listing(L, "b", "a"), page("b", "B1", "B2", "B3", "B4", "B5"), page("a", "A1", "A2", "A3", "A4", "A5")],
          ok(cov(discovered=2, known=2, fetched_this_run=2, pending=2, complete=False),
             relation(P("a", ["A1", "A2"], body=page_body("A1", "A2", "A3", "A4", "A5"))),
             {"a": {"state": "pending"}, "b": {"state": "pending"}}, {"order": [L, f"{H}/p/b", f"{H}/p/a"]}, truncated=True))])
case("coverage", "cov-clamp-counts-kept-rows", "COV-20: the clamp counts the merged relation, the predecessor's rows included, not only the rows decoded this run.",
     ["COV-20", "COV-23", "MERGE-01"], recipe(**{"limits.max_rows": 5}),
     [run([listing(L, "a"), page("a", "A1", "A2", "A3", "A4")],
          ok(cov(discovered=1, known=1, fetched_this_run=1), relation(P("a", ["A1", "A2", "A3", "A4"])), {}, {"count": 2})),
      run([listing(L, "a", "b"), page("b", "B1", "B2", "B3")],
          ok(cov(discovered=2, known=2, fetched_this_run=1, pending=1, complete=False), None,
             {"a": fetched(), "b": {"state": "pending"}}, {"order": [L, f"{H}/p/b"]}, truncated=True, relation_same_as_run=1))])
case("coverage", "cov-clamp-zero-row-page", "D-50: a page decoding to zero rows fits under any clamp: fetched, nothing truncated, even after the relation is full.",
     ["D-50", "COV-23", "COV-20", "D-64"], recipe(**{"limits.max_rows": 3}),
     [run([listing(L, "a", "b"), page("a", "A1", "A2", "A3"), page("b")],
          ok(cov(discovered=2, known=2, fetched_this_run=2), relation(P("a", ["A1", "A2", "A3"])),
             {"a": fetched(), "b": fetched()}, {"count": 3}, truncated=False))])

# Pagination stops (PAG-05, PAG-12, PAG-14, D-22).
case("pagination", "pag-page-short-page-continues", "PAG-05: a page with fewer records than the one before is no stop; only the empty page is.",
     ["PAG-05", "D-03"], recipe(**PP),
     [run([listing(f"{L}?page=1", "a", "b"), listing(f"{L}?page=2", "c"), listing(f"{L}?page=3", "d", "e"), ex(f"{L}?page=4", []),
           *(page(x, x.upper()) for x in "abcde")],
          ok(cov(discovered=5, discovery_requests=4, known=5, fetched_this_run=5),
             relation(*(P(x, [x.upper()]) for x in "abcde")), {}, {"count": 9}))])
case("pagination", "pag-cursor-cycle", "D-22: a cursor token used two requests earlier is a repeat too: A, B, A stops on the third token, complete.",
     ["PAG-12", "D-22"], recipe(**CUR),
     [run([ex(L, {"items": [{"id": "a", "link": "/p/a"}], "next": "A"}), ex(f"{L}?cursor=A", {"items": [{"id": "b", "link": "/p/b"}], "next": "B"}),
           ex(f"{L}?cursor=B", {"items": [{"id": "c", "link": "/p/c"}], "next": "A"}), page("a", "A"), page("b", "B"), page("c", "C")],
          ok(cov(discovered=3, discovery_requests=3, known=3, fetched_this_run=3),
             relation(P("a", ["A"]), P("b", ["B"]), P("c", ["C"])), {}, {"count": 6, "max_per_url": 1}))])
case("pagination", "pag-next-selector-empty-page", "PAG-14: next_selector stops on a page where records.selector matches nothing, though it has a next link.",
     ["PAG-14", "D-03"], recipe(**NS),
     [run([ex(f"{H}/index", '<a class="d" href="/p/a">A</a><a class="next" href="/index?n=2">next</a>', ctype="text/html"),
           ex(f"{H}/index?n=2", '<a class="next" href="/index?n=3">next</a>', ctype="text/html"),
           ex(f"{H}/index?n=3", '<a class="d" href="/p/z">Z</a>', ctype="text/html"), page("a", "A")],
          ok(cov(discovered=1, discovery_requests=2, known=1, fetched_this_run=1), relation(P(f"{H}/p/a", ["A"], url=f"{H}/p/a")), {},
             {"count": 3, "never": [f"{H}/index?n=3"]}))])


if __name__ == "__main__":
    write()
