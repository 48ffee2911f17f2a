"""Registration: every REG clause, PAG-15 and D-38 to D-43, each accepted and refused.

Each case names the clause it covers. A case is (clause, edit of the worked example,
expected codes): an empty list means the edited document registers.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from collection.recipe.model import PROVENANCE_COLUMNS
from collection.recipe.registration import register_bytes, register_document

EXAMPLE_PATH = Path(__file__).resolve().parent.parent / "fixtures" / "recipes" / "council_decisions.json"
EXAMPLE = json.loads(EXAMPLE_PATH.read_text())


def example() -> dict:
    return copy.deepcopy(EXAMPLE)


def codes_of(document) -> list[str]:
    return [r.code for r in register_document(document).refusals]


def at(doc: dict, pointer: str):
    """(parent, key) of an RFC 6901 pointer inside doc, for editing."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]
    parent = doc
    for part in parts[:-1]:
        parent = parent[int(part)] if isinstance(parent, list) else parent[part]
    last = parts[-1]
    return parent, int(last) if isinstance(parent, list) else last


def set_(pointer: str, value):
    def edit(doc):
        parent, key = at(doc, pointer)
        parent[key] = copy.deepcopy(value)
    return edit


def drop(pointer: str):
    def edit(doc):
        parent, key = at(doc, pointer)
        del parent[key]
    return edit


def both(*edits):
    def edit(doc):
        for e in edits:
            e(doc)
    return edit


def options(value: dict, family: str | None = None, version: str | None = None):
    def edit(doc):
        params = doc["connector"]["parameters"]
        if family:
            params[0]["value"] = family
        if version:
            params[1]["value"] = version
        params[2]["value"] = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return edit


D = "/collection/discovery"
P = "/collection/pages"
JSON_TABULAR = {"columns": [{"name": "title", "pointer": "/title"}], "records": {"pointer": ""}}
EXPLICIT = both(set_(D, {"kind": "explicit", "members": [
    {"page_id": "a", "url": "https://www.example.com/a"},
    {"page_id": "b", "url": "https://www.example.com/b"}]}),
    set_(P + "/revisit", {"kind": "never"}))
SITEMAP = set_(D, {"kind": "sitemap", "url": "https://www.example.com/sitemap.xml", "max_requests": 40})
HTML_INDEX = both(set_(D, {"kind": "html_index", "url": "https://www.example.com/decisions",
                           "records": {"selector": "ul.decisions > li a"},
                           "pagination": {"kind": "next_selector", "selector": "a[rel=next]"}, "max_requests": 40}),
                  set_(P + "/revisit", {"kind": "never"}))

CASES = [
    # (id, clause, edit, expected codes)
    ("example registers", "REG-39 REG-40 REG-41 REG-42 REG-43", lambda d: None, []),
    ("adapter 2.0.0 exactly", "REG-01", set_("/connector/adapter_id", "public.https.collection@2.0.1"), ["COLLECTION_FORBIDDEN"]),
    ("collection required with 2.0.0", "REG-07", drop("/collection"), ["COLLECTION_REQUIRED"]),
    ("collection refused beside another adapter", "REG-08", set_("/connector/adapter_id", "public.https.file@1.0.0"),
     ["COLLECTION_FORBIDDEN"]),
    ("another adapter without collection is a valid source", "REG-08",
     both(set_("/connector/adapter_id", "public.https.file@1.0.0"), drop("/collection")), []),
    ("collection needs discovery", "REG-09", drop("/collection/discovery"), ["SCHEMA_REQUIRED"]),
    ("collection needs pages", "REG-09", both(drop("/collection/pages"), set_("/limits/max_requests", 10040)),
     ["SCHEMA_REQUIRED"]),
    ("collection has no third member", "REG-10", set_("/collection/schedule", {}), ["SCHEMA_UNKNOWN_MEMBER"]),
    ("limits.max_requests required", "REG-11", drop("/limits/max_requests"), ["MAX_REQUESTS_REQUIRED"]),
    ("Reader family one of four", "REG-12", set_("/connector/parameters/0/value", "pdf.text"), ["READER_FAMILY_UNSUPPORTED"]),
    ("json.tabular pin accepted", "REG-12", options(JSON_TABULAR, "json.tabular", "1.0.0"), []),
    ("unsupported Reader version", "REG-12", set_("/connector/parameters/1/value", "9.0.0"), ["READER_VERSION_UNSUPPORTED"]),
    ("credential mode none", "REG-13", set_("/connector/credential_mode", "api_key"), ["CREDENTIAL_MODE_NOT_NONE"]),
    ("window refused", "REG-14", set_("/window", {"start": "2020-01-01"}), ["WINDOW_FORBIDDEN"]),
    ("closed true refused", "REG-15", set_("/closed", True), ["CLOSED_FORBIDDEN"]),
    ("closed false refused too", "REG-16", set_("/closed", False), ["CLOSED_FORBIDDEN"]),
    ("bounds enforced at registration", "REG-17", set_(P + "/retries", 4), ["SCHEMA_BOUND"]),
    ("discovery.max_requests 1024 accepted", "REG-18",
     both(set_(D + "/max_requests", 1024), set_("/limits/max_requests", 1524)), []),
    ("discovery.max_requests 1025 refused", "REG-18",
     both(set_(D + "/max_requests", 1025), set_("/limits/max_requests", 5000)), ["SCHEMA_BOUND"]),
    ("discovery.max_requests 0 refused", "REG-18", set_(D + "/max_requests", 0), ["SCHEMA_BOUND"]),
    ("pagination optional", "REG-19", drop(D + "/pagination"), []),
    ("allowed_origins required", "REG-20", drop(P + "/allowed_origins"), ["SCHEMA_REQUIRED"]),
    ("allowed_origins at most 8", "REG-20",
     set_(P + "/allowed_origins", ["https://www.example.com"] + [f"https://h{i}.example.com" for i in range(8)]),
     ["SCHEMA_LENGTH"]),
    ("allowed_origins 8 accepted", "REG-20",
     set_(P + "/allowed_origins", ["https://www.example.com"] + [f"https://h{i}.example.com" for i in range(7)]), []),
    ("allowed_origins not empty", "REG-20", set_(P + "/allowed_origins", []), ["SCHEMA_LENGTH"]),
    # One refusal per root cause (issue 19): the entry's own refusal names the fix, so the
    # discovery origin it was meant to allow is not refused a second time.
    ("origin with trailing slash", "REG-21 D-40", set_(P + "/allowed_origins", ["https://www.example.com/"]),
     ["ORIGIN_NOT_CANONICAL"]),
    ("origin nowhere near the discovery origin", "REG-22", set_(P + "/allowed_origins", ["https://other.example.com/"]),
     ["ORIGIN_NOT_CANONICAL", "DISCOVERY_ORIGIN_NOT_ALLOWED"]),
    ("origin in upper case", "REG-21 D-40", set_(P + "/allowed_origins", ["https://www.example.com", "https://Other.example.com"]),
     ["ORIGIN_NOT_CANONICAL"]),
    ("origin with :443", "REG-21 D-40", set_(P + "/allowed_origins", ["https://www.example.com", "https://x.example.com:443"]),
     ["ORIGIN_NOT_CANONICAL"]),
    ("origin over http", "REG-21", set_(P + "/allowed_origins", ["https://www.example.com", "http://x.example.com"]),
     ["ORIGIN_NOT_CANONICAL"]),
    ("numeric origin", "REG-21", set_(P + "/allowed_origins", ["https://www.example.com", "https://10.0.0.1"]),
     ["ORIGIN_NOT_CANONICAL"]),
    ("duplicate origin", "D-40", set_(P + "/allowed_origins", ["https://www.example.com", "https://www.example.com"]),
     ["ORIGIN_DUPLICATE"]),
    ("discovery origin must be allowed", "REG-22", set_(P + "/allowed_origins", ["https://cdn.example.com"]),
     ["DISCOVERY_ORIGIN_NOT_ALLOWED"]),
    ("max_pages 50000 accepted", "REG-23", set_(P + "/max_pages", 50000), []),
    ("max_pages 50001 refused", "REG-23", set_(P + "/max_pages", 50001), ["SCHEMA_BOUND"]),
    ("max_pages 0 refused", "REG-23", set_(P + "/max_pages", 0), ["SCHEMA_BOUND"]),
    ("max_fetches_per_run 10001 refused", "REG-24",
     both(set_(P + "/max_fetches_per_run", 10001), set_("/limits/max_requests", 20000)), ["SCHEMA_BOUND"]),
    ("max_fetches_per_run 10000 accepted", "REG-24",
     both(set_(P + "/max_fetches_per_run", 10000), set_("/limits/max_requests", 10040)), []),
    ("max_fetches_per_run 0 refused", "REG-24", set_(P + "/max_fetches_per_run", 0), ["SCHEMA_BOUND"]),
    ("concurrency 10000 accepted", "REG-25", set_(P + "/concurrency", 10000), []),
    ("concurrency 10001 refused", "REG-25", set_(P + "/concurrency", 10001), ["SCHEMA_BOUND"]),
    ("concurrency 0 refused", "REG-25", set_(P + "/concurrency", 0), ["SCHEMA_BOUND"]),
    ("min_interval 3600 accepted", "REG-26", set_(P + "/min_interval_seconds", 3600), []),
    ("min_interval 3601 refused", "REG-26", set_(P + "/min_interval_seconds", 3601), ["SCHEMA_BOUND"]),
    ("min_interval 0 refused", "REG-26", set_(P + "/min_interval_seconds", 0), ["SCHEMA_BOUND"]),
    ("min_interval 1.5 refused", "REG-26 REG-27", set_(P + "/min_interval_seconds", 1.5),
     ["JSON_FRACTIONAL_NUMBER"]),
    ("request_timeout 5 accepted", "REG-28", set_(P + "/request_timeout_seconds", 5), []),
    ("request_timeout 4 refused", "REG-28", set_(P + "/request_timeout_seconds", 4), ["SCHEMA_BOUND"]),
    ("request_timeout 121 refused", "REG-28", set_(P + "/request_timeout_seconds", 121), ["SCHEMA_BOUND"]),
    ("retries 0 accepted", "REG-29", set_(P + "/retries", 0), []),
    ("retries 4 refused", "REG-29", set_(P + "/retries", 4), ["SCHEMA_BOUND"]),
    ("revisit never accepted", "REG-30", set_(P + "/revisit", {"kind": "never"}), []),
    ("revisit unknown kind refused", "REG-30", set_(P + "/revisit", {"kind": "daily"}), ["SCHEMA_ENUM"]),
    ("interval 3600 accepted", "REG-31", set_(P + "/revisit", {"kind": "interval", "seconds": 3600}), []),
    ("interval 3599 refused", "REG-31", set_(P + "/revisit", {"kind": "interval", "seconds": 3599}), ["INTERVAL_TOO_SHORT"]),
    ("interval without seconds", "REG-31", set_(P + "/revisit", {"kind": "interval"}), ["SCHEMA_REQUIRED"]),
    ("revision_hint needs an extractor", "REG-32 D-42", drop(D + "/revision"), ["REVISION_HINT_WITHOUT_EXTRACTOR"]),
    ("revision_hint with sitemap accepted", "REG-32", SITEMAP, []),
    ("revision_hint with html_index refused", "REG-32 D-42", both(HTML_INDEX, set_(P + "/revisit", {"kind": "revision_hint"})),
     ["REVISION_HINT_WITHOUT_EXTRACTOR"]),
    ("budget sum broken", "REG-33", set_("/limits/max_requests", 539), ["REQUEST_BUDGET_SUM"]),
    ("budget sum with defaults broken", "REG-33",
     both(drop(D + "/max_requests"), drop(P + "/max_fetches_per_run"), set_("/limits/max_requests", 10063)),
     ["REQUEST_BUDGET_SUM"]),
    ("budget exactly the sum accepted", "REG-34", set_("/limits/max_requests", 540), []),
    ("discovery url not https", "REG-35", set_(D + "/url", "http://www.example.com/wp-json/wp/v2/decisions"),
     ["SCHEMA_FORMAT"]),
    ("discovery url with userinfo", "REG-35 URL-12", set_(D + "/url", "https://u:p@www.example.com/x"),
     ["DISCOVERY_URL_INVALID"]),
    ("discovery url with port", "REG-35 URL-11", set_(D + "/url", "https://www.example.com:8443/x"),
     ["DISCOVERY_URL_INVALID"]),
    ("discovery url with fragment", "REG-35", set_(D + "/url", "https://www.example.com/x#frag"),
     ["DISCOVERY_URL_INVALID"]),
    ("discovery url with explicit :443 is canonical", "REG-35", set_(D + "/url", "https://www.example.com:443/x?per_page=100"), []),
    ("records pointer syntax", "REG-36 D-14", set_(D + "/records/pointer", "records"), ["POINTER_SYNTAX"]),
    ("records pointer bad escape", "REG-36 D-14", set_(D + "/records/pointer", "/a~2"), ["POINTER_SYNTAX"]),
    ("records pointer to a member accepted", "REG-36", set_(D + "/records/pointer", "/data/items"), []),
    ("cursor with html_index refused", "REG-38 D-43",
     both(HTML_INDEX, set_(D + "/pagination", {"kind": "cursor", "parameter": "c", "pointer": "/next"})),
     ["PAGINATION_KIND_NOT_ALLOWED"]),
    ("link_header with sitemap refused", "REG-38 D-43", both(SITEMAP, set_(D + "/pagination", {"kind": "link_header"})),
     ["PAGINATION_KIND_NOT_ALLOWED"]),
    ("next_selector with html_index accepted", "REG-38", HTML_INDEX, []),
    ("cursor with json_api accepted", "REG-38",
     set_(D + "/pagination", {"kind": "cursor", "parameter": "cursor", "pointer": "/next"}), []),
    ("unknown pagination member", "PAG-01", set_(D + "/pagination", {"kind": "link_header", "parameter": "p"}),
     ["SCHEMA_UNKNOWN_MEMBER"]),
    ("page parameter already in url", "PAG-15", set_(D + "/url", "https://www.example.com/x?per_page=100&page=1"),
     ["PAGINATION_PARAMETER_PRESENT"]),
    ("offset parameter already in url", "PAG-15",
     both(set_(D + "/pagination", {"kind": "offset_parameter", "parameter": "offset", "step": 100}),
          set_(D + "/url", "https://www.example.com/x?offset=0")), ["PAGINATION_PARAMETER_PRESENT"]),
    ("other parameter in url accepted", "PAG-15", set_(D + "/url", "https://www.example.com/x?pages=1"), []),
    ("connector origin equals discovery origin", "D-39", set_("/connector/origin", "https://cdn.example.com"),
     ["CONNECTOR_ORIGIN_MISMATCH"]),
    ("explicit registers", "D-38", EXPLICIT, []),
    ("explicit duplicate page id", "D-38", both(EXPLICIT, set_(D + "/members/1/page_id", "a")), ["EXPLICIT_DUPLICATE_PAGE_ID"]),
    ("explicit relative url", "D-38", both(EXPLICIT, set_(D + "/members/1/url", "/b")), ["EXPLICIT_URL_INVALID"]),
    ("explicit http url", "D-38", both(EXPLICIT, set_(D + "/members/1/url", "http://www.example.com/b")),
     ["EXPLICIT_URL_INVALID"]),
    ("explicit off-allowlist url registers (skipped at run time)", "D-38",
     both(EXPLICIT, set_(D + "/members/1/url", "https://elsewhere.example.org/b")), []),
    ("explicit members at most max_pages", "D-38", both(EXPLICIT, set_(P + "/max_pages", 1)), ["EXPLICIT_TOO_MANY_MEMBERS"]),
    ("explicit members exactly max_pages", "D-38", both(EXPLICIT, set_(P + "/max_pages", 2)), []),
    ("fractional 1.0 refused", "D-41 REG-27", set_(P + "/retries", 1.0), ["JSON_FRACTIONAL_NUMBER"]),
    ("hosted 1.0.0 refused", "REF-09", set_("/connector/adapter_id", "public.https.collection@1.0.0"),
     ["HOSTED_COLLECTION_UNSUPPORTED"]),
    ("reserved column refused", "READ-07",
     options({"columns": [{"name": "page_id", "pointer": "/id"}]}, "json.tabular", "1.0.0"), ["RESERVED_COLUMN_NAME"]),
    ("duplicate column refused", "READ-08",
     options({"columns": [{"name": "a", "pointer": "/a"}, {"name": "a", "pointer": "/b"}]}, "json.tabular", "1.0.0"),
     ["DUPLICATE_COLUMN_NAME"]),
    ("selector outside the grammar", "DISC-13", both(HTML_INDEX, set_(D + "/records/selector", "li:hover a")),
     ["SELECTOR_UNSUPPORTED"]),
    ("Reader option selector outside the grammar", "READ-01",
     options({"selectors": {"title": "h1 + p"}}), ["SELECTOR_UNSUPPORTED"]),
    ("Reader option unknown", "READ-01", options({"colour": "red"}), ["READER_OPTIONS_INVALID"]),
    ("xml.tabular paths accepted", "READ-01",
     options({"columns": [{"name": "title", "path": "title"}, {"name": "when", "path": "dc:date"}],
              "namespaces": {"dc": "http://purl.org/dc/elements/1.1/"}, "records": {"path": "channel/item"}},
             "xml.tabular", "1.0.0"), []),
    ("xml.tabular undeclared prefix refused", "READ-01",
     options({"columns": [{"name": "when", "path": "dc:date"}], "records": {"path": "channel/item"}},
             "xml.tabular", "1.0.0"), ["READER_OPTIONS_INVALID"]),
    ("xml.tabular path outside the grammar refused", "READ-01",
     options({"columns": [{"name": "t", "path": "title[1]"}], "records": {"path": "channel/item"}},
             "xml.tabular", "1.0.0"), ["READER_OPTIONS_INVALID"]),
    ("decode_options not canonical", "READ-02", set_("/connector/parameters/2/value", '{ }'), ["READER_OPTIONS_NOT_CANONICAL"]),
    ("decode_options unsorted keys", "READ-02",
     set_("/connector/parameters/2/value", '{"selectors":{"title":"h1"},"metadata":["author"]}'),
     ["READER_OPTIONS_NOT_CANONICAL"]),
    ("Reader pin parameter missing", "READ-01", lambda d: d["connector"]["parameters"].pop(), ["READER_PIN_MISSING"]),
]


@pytest.mark.parametrize("case_id, clauses, edit, expected", CASES, ids=[c[0] for c in CASES])
def test_registration_case(case_id, clauses, edit, expected):
    doc = example()
    edit(doc)
    assert sorted(codes_of(doc)) == sorted(expected), clauses


def test_refusal_of_the_1_0_0_adapter_is_not_a_widening():
    """REF-10, REF-11: a 1.0.0 document is refused whatever else it carries."""
    doc = example()
    doc["connector"]["adapter_id"] = "public.https.collection@1.0.0"
    del doc["collection"]
    assert codes_of(doc) == ["HOSTED_COLLECTION_UNSUPPORTED"]


def test_defaults_are_filled_into_the_model():
    """REG-18, REG-19, REG-23 to REG-30: a registrable document's model carries every default."""
    doc = example()
    for member in ("max_pages", "max_fetches_per_run", "concurrency", "min_interval_seconds",
                   "request_timeout_seconds", "retries", "revisit"):
        del doc["collection"]["pages"][member]
    del doc["collection"]["discovery"]["max_requests"]
    del doc["collection"]["discovery"]["pagination"]
    doc["limits"]["max_requests"] = 10064
    registration = register_document(doc)
    assert registration.registrable, registration.refusals
    pages = registration.source.collection.pages
    discovery = registration.source.collection.discovery
    assert (pages.max_pages, pages.max_fetches_per_run, pages.concurrency, pages.min_interval_seconds,
            pages.request_timeout_seconds, pages.retries, pages.revisit.kind) == (50000, 10000, 25, 1, 30, 2, "never")
    assert discovery.max_requests == 64 and discovery.pagination.kind == "none"


def test_pagination_defaults():
    """PAG-03, PAG-06: first defaults to 1 for pages and 0 for offsets; step to 1."""
    doc = example()
    doc["collection"]["discovery"]["pagination"] = {"kind": "page_parameter", "parameter": "page"}
    assert register_document(doc).source.collection.discovery.pagination.first == 1
    doc["collection"]["discovery"]["pagination"] = {"kind": "offset_parameter", "parameter": "offset"}
    pagination = register_document(doc).source.collection.discovery.pagination
    assert (pagination.first, pagination.step) == (0, 1)


def test_example_model():
    """REG-39 to REG-43, READ-03: the worked example's values reach the model unchanged."""
    source = register_bytes(EXAMPLE_PATH.read_bytes()).source
    assert source.name == "council_decisions" and source.is_collection
    assert source.connector.origin == "https://www.example.com"
    assert (source.limits.max_source_bytes, source.limits.max_rows, source.limits.max_requests) == (1073741824, 200000, 1064)
    assert source.reader.family_id == "html.web_extract" and source.reader.family_version == "1.1.0"
    assert source.reader.relation_columns == ("title", "story") + PROVENANCE_COLUMNS
    discovery = source.collection.discovery
    assert (discovery.kind, discovery.records_pointer, discovery.link_pointer, discovery.identity_pointer,
            discovery.revision_pointer, discovery.max_requests) == ("json_api", "", "/link", "/id", "/modified", 40)
    assert discovery.pagination.kind == "page_parameter" and discovery.pagination.parameter == "page"


def dataset(sources: list[dict]) -> dict:
    return {"name": "council", "sources": sources}


def named(name: str) -> dict:
    doc = example()
    doc["name"] = name
    return doc


def test_dataset_with_one_collection_counts_one_source():
    """REG-02 to REG-05: a collection of any page count is one source entry."""
    registration = register_document(dataset([named("council_decisions")]))
    assert registration.registrable and registration.kind == "dataset"
    assert len(registration.sources) == 1


def test_dataset_of_256_sources_registers_and_257_is_refused():
    """REG-05: the 256-source ceiling counts sources, not pages."""
    assert register_document(dataset([named(f"s{i}") for i in range(256)])).registrable
    assert codes_of(dataset([named(f"s{i}") for i in range(257)])) == ["SCHEMA_LENGTH"]


def test_dataset_source_names_are_distinct_and_refusals_point_inside():
    """REG-05: unique source names; a source's refusal names its place in the dataset."""
    bad = named("b")
    bad["collection"]["pages"]["retries"] = 9
    refusals = register_document(dataset([named("a"), named("a"), bad])).refusals
    assert [(r.code, r.pointer) for r in refusals] == [
        ("DATASET_DUPLICATE_SOURCE_NAME", "/sources/1/name"),
        ("SCHEMA_BOUND", "/sources/2/collection/pages/retries"),
    ]


def test_empty_dataset_refused():
    assert codes_of(dataset([])) == ["SCHEMA_LENGTH"]


def test_narrowed_schema_errors_equal_the_whole_document_validation():
    """Registration hands jsonschema only the smallest parts of the document that fail their own
    fast check (a refused recipe's cost); the refusals, their order and positions are exactly
    those of validating the whole document."""
    import random

    from collection.recipe import registration as R

    def whole(document, kind):
        for error in R._validator(kind).iter_errors(document):
            yield list(error.absolute_path), error

    def refusals(document, narrowed):
        saved = R._schema_errors
        if not narrowed:
            R._schema_errors = whole
        try:
            return [(r.code, r.pointer, r.message, r.line, r.column) for r in register_document(document).refusals]
        finally:
            R._schema_errors = saved

    base = example()

    def paths(node, prefix=()):
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            yield prefix + (key,)
            yield from paths(value, prefix + (key,))
    every = list(paths(base))
    rnd = random.Random(19)
    values = [None, 0, -1, "x", "", [], {}, True, 10 ** 7, "https://A.example.com/", {"kind": "zzz"}, 1.5,
              {"kind": "cursor"}, {"kind": "interval", "seconds": 5}]
    for _ in range(300):
        document = copy.deepcopy(base)
        for _ in range(rnd.randint(1, 4)):
            path = rnd.choice(every)
            node = document
            try:
                for key in path[:-1]:
                    node = node[key]
                if rnd.random() < 0.2 and isinstance(node, dict):
                    del node[path[-1]]
                else:
                    node[path[-1]] = copy.deepcopy(rnd.choice(values))
            except (KeyError, IndexError, TypeError):
                pass
        assert refusals(document, True) == refusals(document, False), document
