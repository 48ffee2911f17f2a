"""A registrable source as frozen values, every default filled in (REG-18 to REG-30).

Built only from a document registration accepted, so no later code re-derives a default
or re-checks a bound. Every member a run consults has a field here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from collection.discover.driver import DiscoveryConfig
from collection.fetch.politeness import WORKER_CAP

COLLECTION_ADAPTER = "public.https.collection@2.0.0"
HOSTED_ADAPTER = "public.https.collection@1.0.0"

# The worker's admitted capacity (REG-25, FETCH-16): pages.concurrency defaults to it and
# never raises the fetches in flight past it; the scheduler owns the number (D-09).
ADMITTED_CAPACITY = WORKER_CAP

DEFAULT_MAX_SOURCE_BYTES = 1_073_741_824
DEFAULT_MAX_ROWS = 1_000_000

PROVENANCE_COLUMNS = ("page_id", "page_url", "page_fetched_at", "page_content_sha256",
                      "page_revision", "page_discovered_at", "page_ordinal")



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
    discovery: DiscoveryConfig          # the discovery module's own configuration value
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
class Column:
    """A table's declared column: its name as the SELECT gives it and one of DECLARED_TYPES."""

    name: str
    type: str
    description: str | None = None


@dataclass(frozen=True)
class Table:
    """One typed table of the transform (D-69): a DuckDB SELECT over the dataset's sources."""

    name: str
    sql: str
    columns: tuple[Column, ...]
    description: str | None = None

    @property
    def declared(self) -> tuple[tuple[str, str], ...]:
        """(name, declared type) in the SELECT's output order, as the SQL contract takes them."""
        return tuple((column.name, column.type) for column in self.columns)


@dataclass(frozen=True)
class Dataset:
    name: str
    description: str | None
    sources: tuple[Source, ...]
    tables: tuple[Table, ...] = ()


def tables_from(doc: list[dict[str, Any]] | None) -> tuple[Table, ...]:
    """The tables of a dataset document that registration accepted."""
    return tuple(Table(table["name"], table["sql"],
                       tuple(Column(c["name"], c["type"], c.get("description")) for c in table["columns"]),
                       table.get("description"))
                 for table in doc or ())


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
        collection=Collection(DiscoveryConfig.from_mapping(collection["discovery"]), pages_from(collection["pages"]))
        if collection is not None else None,
    )
