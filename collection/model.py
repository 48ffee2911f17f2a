"""A registrable source as frozen values, every default filled in (REG-18 to REG-30).

Built only from a document registration accepted, so no later code re-derives a default
or re-checks a bound. Every member a run consults has a field here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

COLLECTION_ADAPTER = "public.https.collection@2.0.0"
HOSTED_ADAPTER = "public.https.collection@1.0.0"

# The worker's admitted capacity (REG-25, FETCH-16): pages.concurrency defaults to it and
# never raises the number of fetches in flight past it; 2 per origin on top (D-09).
ADMITTED_CAPACITY = 25
CONNECTIONS_PER_ORIGIN = 2

DEFAULT_MAX_SOURCE_BYTES = 1_073_741_824
DEFAULT_MAX_ROWS = 1_000_000

PROVENANCE_COLUMNS = ("page_id", "page_url", "page_fetched_at", "page_content_sha256",
                      "page_revision", "page_discovered_at", "page_ordinal")

# Which pagination grammars each discovery kind admits (DISC-12, DISC-17, DISC-21, DISC-25).
PAGINATION_FOR_DISCOVERY = {
    "json_api": ("none", "page_parameter", "offset_parameter", "link_header", "cursor"),
    "html_index": ("none", "page_parameter", "next_selector"),
    "sitemap": ("none",),
    "explicit": ("none",),
}
# Grammars that write their own parameter into the address (PAG-15).
PARAMETER_GRAMMARS = ("page_parameter", "offset_parameter", "cursor")


@dataclass(frozen=True)
class Pagination:
    kind: str = "none"
    parameter: str | None = None
    first: int | None = None      # page_parameter: 1; offset_parameter: 0
    step: int | None = None       # offset_parameter: 1
    pointer: str | None = None    # cursor
    selector: str | None = None   # next_selector


@dataclass(frozen=True)
class Member:
    page_id: str
    url: str


@dataclass(frozen=True)
class Discovery:
    kind: str
    url: str | None                     # absent only for explicit
    pagination: Pagination
    max_requests: int = 64
    records_pointer: str | None = None  # json_api
    link_pointer: str | None = None
    identity_pointer: str | None = None
    revision_pointer: str | None = None
    records_selector: str | None = None  # html_index
    link_attribute: str = "href"
    members: tuple[Member, ...] = ()     # explicit

    @property
    def has_revision_extractor(self) -> bool:
        return (self.kind == "json_api" and self.revision_pointer is not None) or self.kind == "sitemap"


@dataclass(frozen=True)
class Revisit:
    kind: str = "never"
    seconds: int | None = None


@dataclass(frozen=True)
class Pages:
    allowed_origins: tuple[str, ...]
    max_pages: int = 50_000
    max_fetches_per_run: int = 10_000
    concurrency: int = ADMITTED_CAPACITY
    min_interval_seconds: int = 1
    request_timeout_seconds: int = 30
    retries: int = 2
    revisit: Revisit = Revisit()

    @property
    def effective_concurrency(self) -> int:
        """Fetches in flight at once, worker-wide (D-09); per origin it is 2 on top."""
        return min(self.concurrency, ADMITTED_CAPACITY)


@dataclass(frozen=True)
class Collection:
    discovery: Discovery
    pages: Pages


@dataclass(frozen=True)
class ReaderPin:
    family_id: str
    family_version: str
    decode_options: str                 # the canonical JSON text as registered
    options: Any                        # the same, parsed
    columns: tuple[str, ...]            # the Reader's declared columns, in order

    @property
    def relation_columns(self) -> tuple[str, ...]:
        """The relation's header: the pin's columns, then the seven provenance columns (PROV-02, PROV-03)."""
        return self.columns + PROVENANCE_COLUMNS


@dataclass(frozen=True)
class Limits:
    max_source_bytes: int = DEFAULT_MAX_SOURCE_BYTES
    max_rows: int = DEFAULT_MAX_ROWS
    max_requests: int | None = None


@dataclass(frozen=True)
class Connector:
    adapter_id: str
    credential_mode: str
    origin: str | None
    parameters: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Source:
    name: str
    description: str | None
    source_class: str
    data_classification: str
    locator: Any
    rights_claim: Any
    connector: Connector
    limits: Limits
    reader: ReaderPin | None            # set for a collection
    collection: Collection | None       # set exactly for the collection adapter

    @property
    def is_collection(self) -> bool:
        return self.collection is not None


@dataclass(frozen=True)
class Dataset:
    name: str
    description: str | None
    sources: tuple[Source, ...]


def _pagination(doc: dict[str, Any] | None) -> Pagination:
    doc = doc or {"kind": "none"}
    kind = doc["kind"]
    if kind == "page_parameter":
        return Pagination(kind, parameter=doc["parameter"], first=doc.get("first", 1))
    if kind == "offset_parameter":
        return Pagination(kind, parameter=doc["parameter"], first=doc.get("first", 0), step=doc.get("step", 1))
    if kind == "cursor":
        return Pagination(kind, parameter=doc["parameter"], pointer=doc["pointer"])
    if kind == "next_selector":
        return Pagination(kind, selector=doc["selector"])
    return Pagination(kind)


def discovery_from(doc: dict[str, Any]) -> Discovery:
    def pointer(member: str) -> str | None:
        return doc[member]["pointer"] if member in doc else None

    return Discovery(
        kind=doc["kind"],
        url=doc.get("url"),
        pagination=_pagination(doc.get("pagination")),
        max_requests=doc.get("max_requests", 64),
        records_pointer=pointer("records") if doc["kind"] == "json_api" else None,
        link_pointer=pointer("link") if doc["kind"] == "json_api" else None,
        identity_pointer=pointer("identity"),
        revision_pointer=pointer("revision"),
        records_selector=doc["records"]["selector"] if doc["kind"] == "html_index" else None,
        link_attribute=doc.get("link", {}).get("attribute", "href") if doc["kind"] == "html_index" else "href",
        members=tuple(Member(m["page_id"], m["url"]) for m in doc.get("members", ())),
    )


def pages_from(doc: dict[str, Any]) -> Pages:
    revisit = doc.get("revisit", {"kind": "never"})
    return Pages(
        allowed_origins=tuple(doc["allowed_origins"]),
        max_pages=doc.get("max_pages", 50_000),
        max_fetches_per_run=doc.get("max_fetches_per_run", 10_000),
        concurrency=doc.get("concurrency", ADMITTED_CAPACITY),
        min_interval_seconds=doc.get("min_interval_seconds", 1),
        request_timeout_seconds=doc.get("request_timeout_seconds", 30),
        retries=doc.get("retries", 2),
        revisit=Revisit(revisit["kind"], revisit.get("seconds")),
    )


def source_from(doc: dict[str, Any], reader: ReaderPin | None) -> Source:
    """The model of a document that registration accepted."""
    connector = doc["connector"]
    limits = doc.get("limits", {})
    collection = doc.get("collection")
    return Source(
        name=doc["name"],
        description=doc.get("description"),
        source_class=doc["source_class"],
        data_classification=doc["data_classification"],
        locator=doc["locator"],
        rights_claim=doc["rights_claim"],
        connector=Connector(connector["adapter_id"], connector["credential_mode"], connector.get("origin"),
                            tuple((p["name"], p["value"]) for p in connector.get("parameters", ()))),
        limits=Limits(limits.get("max_source_bytes", DEFAULT_MAX_SOURCE_BYTES),
                      limits.get("max_rows", DEFAULT_MAX_ROWS), limits.get("max_requests")),
        reader=reader,
        collection=Collection(discovery_from(collection["discovery"]), pages_from(collection["pages"]))
        if collection is not None else None,
    )
