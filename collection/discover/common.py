"""Values shared by the listing parsers, the pagination grammars and the discovery driver (pure).

A listing body goes one of three ways (D-13, decided in docs/discovery.md):
- it is read, and yields a ParsedListing;
- it cannot be read (not JSON, not well-formed XML, a DOCTYPE, over a size cap, a broken
  gzip stream): `ListingUnreadable`, which discovery reports as `discovery_failure`, the
  same as an HTTP error, because a publisher's transient fault must not fail the run;
- it is read but is not the shape the document declared (the records pointer names no
  array, a sitemap root that is neither urlset nor sitemapindex): `DiscoveryShapeError`
  carrying `COLLECTION_MERGE_INVALID`, a run-level refusal (REF-07, D-13, D-36).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import NamedTuple

from collection.canonical import canonical_json, valid_text
from collection.merge.outcomes import TupleLike

MERGE_INVALID = "COLLECTION_MERGE_INVALID"


class ListingUnreadable(Exception):
    """A listing body that could not be read; `reason` is a short stable token."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class DiscoveryShapeError(Exception):
    """A listing body read without error but not of the declared shape (D-13, REF-07).

    Like a jsonschema ValidationError it is a value: `code`, the listing `url`, the
    `pointer` (or XML element) that did not fit and a `message`. The run stops with
    `code`; tests assert on `code`, never on the message.
    """

    def __init__(self, url: str, pointer: str, message: str) -> None:
        super().__init__(f"{url}: {message}")
        self.code = MERGE_INVALID
        self.url = url
        self.pointer = pointer
        self.message = message


@dataclass(frozen=True)
class ListingResponse:
    """One listing response as the run loop received it.

    `requests` is what the listing cost against the budgets, redirect hops and retries
    included (D-05). `final_url` is where the redirects ended: links are resolved against
    the page they appeared on (URL-01), which is that address.
    """

    url: str
    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    requests: int = 1
    final_url: str | None = None

    @property
    def base_url(self) -> str:
        return self.final_url or self.url

    def header_values(self, name: str) -> list[str]:
        lowered = name.lower()
        return [value for key, value in self.headers if key.lower() == lowered]


@dataclass(frozen=True)
class ListingFailure:
    """A listing the run loop could not get: timeout, connection or TLS error, robots
    disallow (no request made, D-48), redirect loop, a body over max_source_bytes, or the
    run's own request budget ending mid-listing (`reason` "max_requests")."""

    url: str
    reason: str
    requests: int = 1


class ListingEntry(NamedTuple):
    """One record of a listing: the raw link text and what the document says about it.

    An immutable NamedTuple rather than a frozen dataclass: a sitemap makes up to 50,000
    of these per body, and a frozen dataclass's __init__ costs several times as much.
    """

    link: str                      # unresolved; resolved against the listing's address
    page_id: str | None = None     # explicit identity (json_api identity.pointer, explicit)
    revision: str | None = None    # json_api revision.pointer, sitemap lastmod


class PackedTexts(TupleLike):
    """Strings held end to end in one string, with where each ends.

    A million-link HTML index yields a million short relative hrefs; as separate str
    objects they cost about 60 bytes each (more than twice the markup they came from) and
    all of them stand beside the canonical addresses discovery makes of them. Packed, they
    cost their characters plus 8 bytes (bench/discovery.py, the HTML index row). Compares
    equal to any sequence of the same strings."""

    __slots__ = ("_text", "_ends")

    def __init__(self, text: str = "", ends: array | None = None) -> None:
        self._text = text
        self._ends = ends if ends is not None else array("q")

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self)[index]
        end = self._ends[index]
        if index < 0:
            index += len(self._ends)
        return self._text[self._ends[index - 1] if index else 0:end]

    def __iter__(self) -> Iterator[str]:
        text, start = self._text, 0
        for end in self._ends:
            yield text[start:end]
            start = end

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedTexts):
            return self._text == other._text and self._ends == other._ends
        return super().__eq__(other)

    __hash__ = TupleLike.__hash__   # defining __eq__ would otherwise unset it


class TextPacker:
    """Builds PackedTexts a string at a time, joining every few thousand so the strings
    never all stand at once."""

    _BATCH = 4096

    def __init__(self) -> None:
        self._done: list[str] = []
        self._batch: list[str] = []
        self._ends = array("q")
        self._length = 0

    def append(self, text: str) -> None:
        self._length += len(text)
        self._ends.append(self._length)
        self._batch.append(text)
        if len(self._batch) >= self._BATCH:
            self._done.append("".join(self._batch))
            self._batch.clear()

    def __len__(self) -> int:
        return len(self._ends)

    def packed(self) -> PackedTexts:
        self._done.append("".join(self._batch))
        self._batch.clear()
        text = "".join(self._done)
        self._done = [text]
        return PackedTexts(text, self._ends)


class Nones(Sequence):
    """A column of n Nones that costs nothing per row (an HTML index states no page ids
    and no revisions)."""

    __slots__ = ("_n",)

    def __init__(self, n: int) -> None:
        self._n = n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index):
        if isinstance(index, slice):
            return (None,) * len(range(*index.indices(self._n)))
        if not -self._n <= index < self._n:
            raise IndexError(index)
        return None

    def __iter__(self) -> Iterator[None]:
        return repeat(None, self._n)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, (str, bytes)):
            return len(other) == self._n and all(value is None for value in other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((None,) * self._n)


@dataclass(frozen=True)
class ParsedListing:
    """What a parser read from one listing body.

    The records are held as three columns of equal length (link, page id, revision), in
    document order: a sitemap yields up to 50,000 records per body, and three tuples of
    strings cost a fraction of 50,000 entry objects to build, hold no reference the cyclic
    GC must trace, and are read row by row by discovery all the same. `entries` gives the
    rows as ListingEntry values.

    `record_count` counts records, usable or not: an "empty page" (D-03) is one with no
    records, not one whose records all lacked a link. `dropped` says why records were
    dropped; a parser may name only the first few and count the rest in `dropped_unnamed`.
    """

    links: Sequence[str] = ()
    page_ids: Sequence[str | None] = ()
    revisions: Sequence[str | None] = ()
    record_count: int = 0
    dropped: tuple[str, ...] = ()          # why records were dropped (D-27 diagnostics)
    dropped_unnamed: int = 0               # records dropped beyond those `dropped` names
    cursor: str | None = None              # cursor grammar: the next token, or None (absent)
    next_link: str | None = None           # next_selector grammar: raw href of the first match
    children: tuple[str, ...] = ()         # sitemapindex: raw child <loc> texts
    root: str = ""                         # sitemap: "urlset" or "sitemapindex"
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if not len(self.links) == len(self.page_ids) == len(self.revisions):
            raise ValueError("a listing's link, page id and revision columns differ in length")

    @classmethod
    def of(cls, entries: list[ListingEntry], record_count: int, dropped: tuple[str, ...] = (),
           **rest) -> "ParsedListing":
        """A listing from its entries, for parsers that read records one at a time."""
        links, page_ids, revisions = (tuple(column) for column in zip(*entries)) if entries else ((), (), ())
        return cls(links, page_ids, revisions, record_count, dropped, **rest)

    @property
    def entries(self) -> tuple[ListingEntry, ...]:
        return tuple(map(_NEW, repeat(ListingEntry), zip(self.links, self.page_ids, self.revisions)))

    @property
    def dropped_count(self) -> int:
        return len(self.dropped) + self.dropped_unnamed

    def rows(self) -> Iterator[tuple[str, str | None, str | None]]:
        """(link, page id, revision) in document order, without building entries."""
        return zip(self.links, self.page_ids, self.revisions)


_NEW = tuple.__new__   # _NEW(ListingEntry, fields): a NamedTuple without its Python-level __new__


def scalar_text(value: object) -> str | None:
    """D-27, D-23: a JSON value as page-id / token / hint text. Strings stay as they are,
    other scalars take their canonical JSON text (123 → "123", true → "true"); null, an
    empty string, objects and arrays are no usable value."""
    if value is None or isinstance(value, (dict, list)):
        return None
    if isinstance(value, str):
        # a lone surrogate ("\\ud800") becomes U+FFFD here, where listing text enters
        # discovery, so no id, link, hint or cursor can break a state file later
        return valid_text(value) or None
    if isinstance(value, float):
        # json.loads only makes floats from fractions/exponents; canonical text is repr.
        return repr(value)
    return canonical_json(value)


def media_type(headers: tuple[tuple[str, str], ...]) -> str | None:
    """The lowercased type/subtype of the last Content-Type, parameters dropped (D-37)."""
    value = None
    for key, text in headers:
        if key.lower() == "content-type":
            value = text
    if value is None:
        return None
    essence = value.split(";", 1)[0].strip().lower()
    return essence or None


def charset(headers: tuple[tuple[str, str], ...]) -> str | None:
    value = None
    for key, text in headers:
        if key.lower() == "content-type":
            value = text
    if not value:
        return None
    for parameter in value.split(";")[1:]:
        name, _, raw = parameter.partition("=")
        if name.strip().lower() == "charset":
            return raw.strip().strip('"').strip() or None
    return None
