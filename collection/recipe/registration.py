"""Registration: is this document registrable, and if not, every reason why (pure).

Three layers, each reporting refusals rather than stopping at the first:
1. the bytes as strict JSON (collection.recipe.jsondoc): repeated names, fractional numbers;
2. the JSON Schemas (schemas/source.schema.json, schemas/dataset.schema.json): every
   member, bound, default and enum the schemas can state;
3. the rules a schema cannot state (REG-*, PAG-15, D-38 to D-43): cross-member sums,
   origins, the Reader pin, pointers, selectors, explicit members; a dataset's tables and
   their SQL contract (collection.recipe.tables, D-69, D-70).
Refusals come back in document order, each with its code, pointer, line and column.
No network, no file: `validate --probe` is the shell's business (D-59).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Iterable, Iterator

import jsonschema
from referencing import Registry, Resource

from collection.recipe import jsondoc

from collection import urls
from collection.canonical import canonical_json
from collection.codes import CATALOGUE
from collection.discover.driver import ALLOWED_PAGINATION as PAGINATION_FOR_DISCOVERY
from collection.recipe.model import COLLECTION_ADAPTER, HOSTED_ADAPTER, PROVENANCE_COLUMNS, Dataset, ReaderPin, Source, \
    source_from, tables_from
from collection.discover.pagination import PARAMETER_KINDS as PARAMETER_GRAMMARS
from collection.recipe.pointer import escape_token, parse_pointer, pointer_hint
from collection.readers.registry import FAMILIES, options_schema
from collection.recipe.refusal import Refusal
from collection.recipe.resources import load_schema
from collection.recipe.schemacheck import compile_check
from collection.recipe.tables import SourceColumns, table_refusals
from collection.readers.selectors import SelectorError, compile_selector

_ORIGIN_SHAPE = re.compile(r"https://[a-z0-9.-]+\Z")
# the schema's listing-address pattern (^https://[^\r\n]*$(?!\n)): what it refuses is its refusal alone
_ONE_LINE_HTTPS = re.compile(r"https://[^\r\n]*\Z")

SOURCE = "source"
DATASET = "dataset"

READER_PARAMETERS = ("reader.family_id", "reader.family_version", "reader.decode_options")


@dataclass(frozen=True)
class Registration:
    """The verdict on one document: its kind, its refusals, and the model when registrable."""

    kind: str | None
    refusals: tuple[Refusal, ...]
    source: Source | None = None
    dataset: Dataset | None = None

    @property
    def registrable(self) -> bool:
        return not self.refusals

    @property
    def sources(self) -> tuple[Source, ...]:
        if self.dataset is not None:
            return self.dataset.sources
        return (self.source,) if self.source is not None else ()


# --- schemas ---------------------------------------------------------------------------

_VALIDATORS: dict[str, jsonschema.protocols.Validator] = {}
_CHECKS: dict[str, Callable[[Any], bool]] = {}


def _fast_check(kind: str) -> Callable[[Any], bool]:
    if kind not in _CHECKS:
        validator = _validator(kind)
        source = load_schema("source.schema.json")
        _CHECKS[kind] = compile_check(validator.schema, {source["$id"]: source})
    return _CHECKS[kind]


def _validator(kind: str) -> jsonschema.protocols.Validator:
    if kind not in _VALIDATORS:
        source = load_schema("source.schema.json")
        registry = Registry().with_resource(source["$id"], Resource.from_contents(source))
        if kind == SOURCE:
            schema = source
        else:
            # The dataset's envelope only: each source is checked on its own, so that its
            # refusals carry the source's rules and are not reported twice.
            dataset = load_schema("dataset.schema.json")
            sources = {**dataset["properties"]["sources"], "items": {"type": "object"}}
            schema = {**dataset, "properties": {**dataset["properties"], "sources": sources}}
        _VALIDATORS[kind] = jsonschema.Draft202012Validator(schema, registry=registry)
    return _VALIDATORS[kind]


# Which clause a bound belongs to, by the member's pointer with array indices removed.
_CLAUSES = {
    "/collection/discovery/max_requests": "REG-18",
    "/collection/discovery/kind": "DISC-01",
    "/collection/discovery/pagination/kind": "PAG-01",
    "/collection/pages/allowed_origins": "REG-20",
    "/collection/pages/allowed_origins/*": "REG-21",
    "/collection/pages/max_pages": "REG-23",
    "/collection/pages/max_fetches_per_run": "REG-24",
    "/collection/pages/concurrency": "REG-25",
    "/collection/pages/min_interval_seconds": "REG-26",
    "/collection/pages/request_timeout_seconds": "REG-28",
    "/collection/pages/retries": "REG-29",
    "/collection/pages/revisit/kind": "REG-30",
    "/collection/pages/revisit/seconds": "REG-31",
    "/collection": "REG-09",
    "/sources": "REG-05",
}


def _generic(pointer: str) -> str:
    parts = pointer.split("/")
    if len(parts) > 2 and parts[1] == "sources" and parts[2].isdigit():
        parts = [""] + parts[3:]
    return "/".join("*" if part.isdigit() else part for part in parts)


def _member_name(pointer: str) -> str:
    return ".".join(p for p in _generic(pointer).split("/") if p and p != "*") or "the document"


def _rule_for(pointer: str, text: str) -> str:
    clause = _CLAUSES.get(_generic(pointer))
    return f"{text} ({clause})" if clause else text


def _to_pointer(path: Iterable[Any]) -> str:
    return "".join(f"/{escape_token(str(part))}" for part in path)


_BOUND_KEYWORDS = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}
_LENGTH_KEYWORDS = {"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"}


def _bound_text(schema: dict[str, Any], name: str) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        return f"{low} ≤ {name} ≤ {high}"
    return f"{name} ≥ {low}" if low is not None else f"{name} ≤ {high}"


# Keywords of an object schema whose members can be checked one by one: nothing in it
# relates one member to another (no allOf, if/then, dependent members).
_SPLITTABLE = {"type", "additionalProperties", "required", "properties"}


@lru_cache(maxsize=None)
def _source_registry() -> tuple[dict[str, Any], Registry]:
    source = load_schema("source.schema.json")
    return source, Registry().with_resource(source["$id"], Resource.from_contents(source))


@lru_cache(maxsize=None)
def _part(pointer: str) -> tuple[Any, Callable[[Any], bool], jsonschema.protocols.Validator]:
    """The source schema's subschema at `pointer` (a pure $ref followed), its fast check and a
    validator for it."""
    source, registry = _source_registry()
    ref = {"$ref": f"{source['$id']}#{pointer}"}
    schema: Any = source
    for token in parse_pointer(pointer):
        schema = schema[token]
    while isinstance(schema, dict) and "$ref" in schema and schema["$ref"].startswith("#") \
            and not {k for k in schema if k not in _ANNOTATION_KEYS and not k.startswith("x-")} - {"$ref"}:
        pointer = schema["$ref"][1:]
        schema = source
        for token in parse_pointer(pointer):
            schema = schema[token]
    return (pointer, schema), compile_check(ref, {source["$id"]: source}), \
        jsonschema.Draft202012Validator(ref, registry=registry)


@lru_cache(maxsize=None)
def _envelope(pointer: str) -> jsonschema.protocols.Validator:
    """A validator of the object schema at `pointer` with every member accepted as it is: its
    type, unknown and required members only."""
    (_, schema), _, _ = _part(pointer)
    _, registry = _source_registry()
    envelope = {key: value for key, value in schema.items() if key in _SPLITTABLE}
    envelope["properties"] = {name: True for name in schema.get("properties", {})}
    return jsonschema.Draft202012Validator(envelope, registry=registry)


_ANNOTATION_KEYS = {"title", "description", "examples", "default", "$comment", "$schema", "$id", "$defs"}


def _narrowed_errors(pointer: str, instance: Any, path: list[Any]) -> Iterator[tuple[list[Any], Any]]:
    """Schema errors of `instance` against the source schema's part at `pointer`, handing
    jsonschema only the smallest parts that fail their fast check: a refused recipe's cost is
    jsonschema's error reporting, so it should see the broken member, not the whole document."""
    (resolved, schema), check, validator = _part(pointer)
    keys = {k for k in schema if k not in _ANNOTATION_KEYS and not k.startswith("x-")} if isinstance(schema, dict) else set()
    if not isinstance(instance, dict) or not keys <= _SPLITTABLE or "properties" not in keys:
        # A splittable part is never checked whole: its envelope and its members' own checks
        # cover it, so each member is checked once however deep it sits.
        if check(instance):
            return
        for error in validator.iter_errors(instance):
            yield [*path, *error.absolute_path], error
        return
    for error in _envelope(resolved).iter_errors(instance):
        yield [*path, *error.absolute_path], error
    for name in schema["properties"]:
        if name in instance:
            yield from _narrowed_errors(f"{resolved}/properties/{escape_token(name)}", instance[name], [*path, name])


def _schema_errors(document: Any, kind: str) -> Iterator[tuple[list[Any], Any]]:
    """(absolute path, error) for every schema error."""
    if kind == SOURCE:
        yield from _narrowed_errors("", document, [])
        return
    for error in _validator(kind).iter_errors(document):
        yield list(error.absolute_path), error


def _schema_refusals(document: Any, kind: str) -> Iterator[Refusal]:
    if _fast_check(kind)(document):
        return
    for path, error in _schema_errors(document, kind):
        pointer = _to_pointer(path)
        schema = error.schema if isinstance(error.schema, dict) else {}
        keyword = error.validator
        name = _member_name(pointer)
        override = schema.get("x-code")
        if keyword == "required":
            for missing in error.validator_value:
                if isinstance(error.instance, dict) and missing not in error.instance:
                    child = f"{pointer}/{escape_token(missing)}"
                    yield Refusal("SCHEMA_REQUIRED", child, f"{_member_name(child)} is required",
                                  _rule_for(child, f"{_member_name(child)} is required"))
        elif keyword == "additionalProperties":
            allowed = set(schema.get("properties", {}))
            for extra in error.instance:
                if extra not in allowed:
                    child = f"{pointer}/{escape_token(extra)}"
                    yield Refusal("SCHEMA_UNKNOWN_MEMBER", child,
                                  f"{name} has no member {extra!r}; allowed: {', '.join(sorted(allowed))}",
                                  _rule_for(pointer, f"members of {name}: {', '.join(sorted(allowed))}"))
        elif keyword == "type":
            message = _options_as_object(document, path, error.instance) \
                or f"{name} must be of type {error.validator_value}"
            yield Refusal("SCHEMA_TYPE", pointer, message, _rule_for(pointer, f"{name} is {error.validator_value}"))
        elif keyword in ("enum", "const"):
            allowed = error.validator_value if keyword == "enum" else [error.validator_value]
            shown = ", ".join(json.dumps(v) for v in allowed)
            yield Refusal(override or "SCHEMA_ENUM", pointer,
                          f"{name} is {json.dumps(error.instance)}; allowed here: {shown}",
                          _rule_for(pointer, f"{name} one of {shown}"))
        elif keyword in _BOUND_KEYWORDS:
            text = _bound_text(schema, name)
            yield Refusal(override or "SCHEMA_BOUND", pointer, f"{name} is {error.instance}; it must satisfy {text}",
                          _rule_for(pointer, text))
        elif keyword in _LENGTH_KEYWORDS:
            yield Refusal(override or "SCHEMA_LENGTH", pointer, f"{name}: {error.message}",
                          _rule_for(pointer, f"{keyword} {error.validator_value}"))
        elif keyword in ("pattern", "format"):
            if override == "ORIGIN_NOT_CANONICAL":
                message = _origin_message(error.instance)
            else:
                detail = CATALOGUE[override].summary if override else f"it does not match {error.validator_value}"
                if override == "POINTER_SYNTAX":
                    detail = ("not RFC 6901 syntax (a pointer is empty or starts with /, members separated by /)"
                              + _pointer_advice(error.instance))
                message = f"{name} is {json.dumps(error.instance)}: {detail}"
            yield Refusal(override or "SCHEMA_FORMAT", pointer, message,
                          _rule_for(pointer, f"{name} matches {error.validator_value}"))
        elif keyword == "uniqueItems":
            yield Refusal(schema.get("x-code-uniqueItems", "SCHEMA_UNIQUE"), pointer, f"{name} holds a repeated entry",
                          _rule_for(pointer, f"entries of {name} are distinct"))
        else:
            yield Refusal("SCHEMA_INVALID", pointer, f"{name}: {error.message}", _rule_for(pointer, keyword))


def _options_as_object(document: Any, path: Any, value: Any) -> str | None:
    """The fix for reader.decode_options written as a JSON object or array instead of the JSON
    string READ-02 asks for: the corrected parameter, ready to paste (canonical JSON, escaped
    for a JSON string, non-ASCII kept as the canonical form keeps it)."""
    parts = list(path)
    if len(parts) != 4 or parts[:2] != ["connector", "parameters"] or parts[3] != "value" \
            or not isinstance(value, (dict, list)):
        return None
    if _get(_get(document, "connector", "parameters")[parts[2]], "name") != "reader.decode_options":
        return None
    kind = "object" if isinstance(value, dict) else "array"
    return f"write the options as a JSON string, not a JSON {kind}: {_options_member(value)}"


def _options_member(options: Any) -> str:
    """The whole reader.decode_options parameter as JSON to paste over the one written: the
    options' canonical text is itself a JSON string, so quotes, backslashes and newlines inside
    selectors arrive escaped once more, and pasting the bare canonical text would not parse."""
    return json.dumps({"name": "reader.decode_options", "value": canonical_json(options)}, ensure_ascii=False)


def _origin_message(text: Any) -> str:
    """Why an allowed origin is not canonical, cause first, and the origin to write instead."""
    if not isinstance(text, str):
        return f"{json.dumps(text)} is not an origin"
    causes, corrected = urls.origin_fix(text)
    fix = f"; write {json.dumps(corrected)}" if corrected else "; no origin this source may fetch is meant"
    return f"{json.dumps(text)} is not a canonical https origin: {'; '.join(causes)}{fix}"


def _pointer_advice(text: Any) -> str:
    hint = pointer_hint(text) if isinstance(text, str) else None
    return f"; did you mean {json.dumps(hint)}?" if hint is not None else ""


# --- rules a schema cannot state -------------------------------------------------------

def _get(doc: Any, *path: str) -> Any:
    """The member at `path`, or None when any step is missing or of the wrong type."""
    for step in path:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(step)
    return doc


def _int(value: Any, default: int | None) -> int | None:
    if value is None:
        return default
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class _Reader:
    """The Reader pin as found in connector.parameters, with pointers to each parameter."""

    def __init__(self, parameters: Any):
        self.values: dict[str, str] = {}
        self.pointers: dict[str, str] = {}
        self.repeated: list[str] = []
        self.present: set[str] = set()   # stated, whatever the value's type (the schema refuses a non-string)
        if not isinstance(parameters, list):
            return
        for index, parameter in enumerate(parameters):
            name = _get(parameter, "name")
            value = _get(parameter, "value")
            if name in READER_PARAMETERS:
                self.present.add(name)
            if name in READER_PARAMETERS and isinstance(value, str):
                if name in self.values:
                    self.repeated.append(f"/connector/parameters/{index}")
                self.values[name] = value
                self.pointers[name] = f"/connector/parameters/{index}/value"


def _reader_rules(doc: dict[str, Any]) -> tuple[list[Refusal], ReaderPin | None]:
    found = _Reader(_get(doc, "connector", "parameters"))
    refusals = [Refusal("READER_PIN_MISSING", pointer, "a Reader pin parameter is stated twice",
                        "each of reader.family_id, reader.family_version, reader.decode_options once (READ-01)")
                for pointer in found.repeated]
    missing = [name for name in READER_PARAMETERS if name not in found.present]
    if missing:
        refusals.append(Refusal("READER_PIN_MISSING", "/connector/parameters",
                                f"the Reader pin lacks {', '.join(missing)}",
                                "a collection pins one Reader with reader.family_id, reader.family_version and reader.decode_options (READ-01)"))
    family_id = found.values.get("reader.family_id")
    if family_id is None:
        return refusals, None
    family = FAMILIES.get(family_id)
    if family is None:
        refusals.append(Refusal("READER_FAMILY_UNSUPPORTED", found.pointers["reader.family_id"],
                                f"Reader family {family_id!r} is not a collection family; use one of {', '.join(sorted(FAMILIES))}",
                                "html.tabular, html.web_extract, json.tabular or xml.tabular (REG-12)"))
        return refusals, None
    version = found.values.get("reader.family_version")
    if version is not None and version not in family.versions:
        refusals.append(Refusal("READER_VERSION_UNSUPPORTED", found.pointers["reader.family_version"],
                                f"{family_id} version {version!r} is not implemented; supported: {', '.join(family.versions)}",
                                f"{family_id} versions {', '.join(family.versions)} (REG-12)"))
    text = found.values.get("reader.decode_options")
    if text is None:
        return refusals, None
    where = found.pointers["reader.decode_options"]
    option_refusals, options = _decode_options(family_id, text, where)
    refusals.extend(option_refusals)
    if options is None or option_refusals:
        return refusals, None
    columns = family.columns(options)
    seen: set[str] = set()
    for column in columns:
        if column in PROVENANCE_COLUMNS:
            refusals.append(Refusal("RESERVED_COLUMN_NAME", where,
                                    f"the Reader declares column {column!r}, a reserved provenance column name",
                                    f"no Reader column is named {', '.join(PROVENANCE_COLUMNS)} (READ-07, PROV-04)"))
        elif column in seen:
            refusals.append(Refusal("DUPLICATE_COLUMN_NAME", where, f"the Reader declares column {column!r} twice",
                                    "column names are distinct (READ-08)"))
        seen.add(column)
    if refusals or version is None:
        return refusals, None
    return refusals, ReaderPin(family_id, version, text, options, columns)


@lru_cache(maxsize=None)
def _options_validator(family_id: str) -> jsonschema.protocols.Validator:
    return jsonschema.Draft202012Validator(options_schema(family_id))


@lru_cache(maxsize=None)
def _options_check(family_id: str) -> Callable[[Any], bool]:
    return compile_check(options_schema(family_id))


def _decode_options(family_id: str, text: str, where: str) -> tuple[list[Refusal], Any]:
    try:
        parsed = jsondoc.parse(text)
    except jsondoc.Unreadable as exc:
        return [Refusal("READER_OPTIONS_INVALID", where, f"reader.decode_options is not JSON: {exc.problem.message}",
                        "reader.decode_options is a canonical-JSON string (READ-02)")], None
    if parsed.problems:
        problem = parsed.problems[0]
        return [Refusal(problem.code, where, f"inside reader.decode_options at {problem.pointer or '/'}: {problem.message}",
                        "reader.decode_options is a canonical-JSON string (READ-02)")], None
    options = parsed.value
    refusals: list[Refusal] = []
    canonical = canonical_json(options)
    if canonical != text:
        refusals.append(Refusal("READER_OPTIONS_NOT_CANONICAL", where,
                                "reader.decode_options is not canonical JSON (sorted keys, no insignificant "
                                f"whitespace); write the parameter as {_options_member(options)}",
                                "canonical JSON: sorted keys, no insignificant whitespace (READ-02)"))
    validator = _options_validator(family_id)
    errors = [] if _options_check(family_id)(options) else validator.iter_errors(options)
    for error in sorted(errors, key=lambda e: list(map(str, e.absolute_path))):
        inner = _to_pointer(error.absolute_path) or "/"
        refusals.append(Refusal("READER_OPTIONS_INVALID", where, f"{family_id} option at {inner}: {error.message}",
                                f"schemas/{FAMILIES[family_id].options_schema}"))
    if refusals:
        return refusals, None
    refusals.extend(_option_syntax(options, where))
    if family_id == "xml.tabular":
        refusals.extend(_xml_path_rules(options, where))
    return refusals, options


def _xml_path_rules(options: dict[str, Any], where: str) -> Iterator[Refusal]:
    """xml.tabular element paths, compiled as the Reader will compile them (docs/readers.md)."""
    from collection.readers.xml_tabular import compile_path

    namespaces = options.get("namespaces", {})
    paths = [("/records/path", options["records"]["path"])]
    paths += [(f"/columns/{i}/path", c["path"]) for i, c in enumerate(options["columns"]) if "path" in c]
    for inner, path in paths:
        try:
            compile_path(path, namespaces)
        except ValueError as exc:
            yield Refusal("READER_OPTIONS_INVALID", where, f"xml.tabular option at {inner}: {exc}"
                          + _attribute_advice(options, inner, path),
                          "the xml.tabular element-path grammar (docs/readers.md)")


def _attribute_advice(options: dict[str, Any], inner: str, path: str) -> str:
    """A column path ending in an XPath attribute step (`@id`, `guid/@isPermaLink`) means the
    column's `attribute` member; print the column as it should be written."""
    parts = inner.split("/")
    match = re.fullmatch(r"(?:(.*)/)?@([A-Za-z_][\w.-]*(?::[A-Za-z_][\w.-]*)?)", path)
    if match is None:
        return ""
    if parts[1] != "columns":
        return "; a records path names elements, not attributes: read the attribute in a column"
    column = {key: value for key, value in options["columns"][int(parts[2])].items() if key != "path"}
    column["attribute"] = match.group(2)
    if match.group(1):
        column["path"] = match.group(1)
    corrected = {**options, "columns": [column if i == int(parts[2]) else c for i, c in enumerate(options["columns"])]}
    return (f"; an attribute is read with the column's attribute member: write the column as {canonical_json(column)}, "
            f"that is the parameter {_options_member(corrected)}")


def _option_syntax(options: Any, where: str) -> Iterator[Refusal]:
    """Selectors and pointers inside decode_options, found wherever the options schema puts them."""
    stack: list[tuple[str, Any]] = [("", options)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            for key in sorted(value, reverse=True):
                child = f"{path}/{escape_token(key)}"
                item = value[key]
                if isinstance(item, str) and (key == "selector" or path.endswith("/selectors")):
                    yield from _selector_rule(item, where, f"reader.decode_options at {child}")
                elif isinstance(item, str) and key == "pointer":
                    yield from _pointer_rule(item, where, f"reader.decode_options at {child}")
                else:
                    stack.append((child, item))
        elif isinstance(value, list):
            stack.extend((f"{path}/{i}", item) for i, item in reversed(list(enumerate(value))))


def _selector_rule(text: str, pointer: str, what: str) -> Iterator[Refusal]:
    try:
        compile_selector(text)
    except SelectorError as exc:
        yield Refusal("SELECTOR_UNSUPPORTED", pointer,
                      f"{what}: {exc.message} at character {exc.position} of {text!r}",
                      "the closed selector grammar (docs/selectors.md; DISC-13)")


def _pointer_rule(text: str, pointer: str, what: str) -> Iterator[Refusal]:
    try:
        parse_pointer(text)
    except ValueError as exc:
        yield Refusal("POINTER_SYNTAX", pointer, f"{what}: {exc}{_pointer_advice(text)}",
                      "RFC 6901 JSON Pointer syntax (REG-36, D-14)")


def _collection_rules(doc: dict[str, Any]) -> Iterator[Refusal]:
    if "window" in doc:
        yield Refusal("WINDOW_FORBIDDEN", "/window", "a collection may not declare a window",
                      "no window on a collection (REG-14)")
    if "closed" in doc:
        yield Refusal("CLOSED_FORBIDDEN", "/closed",
                      f"a collection may not carry closed (here {json.dumps(doc['closed'])}); remove the member",
                      "no closed member on a collection, not even false (REG-15, REG-16)")
    mode = _get(doc, "connector", "credential_mode")
    if isinstance(mode, str) and mode != "none":
        yield Refusal("CREDENTIAL_MODE_NOT_NONE", "/connector/credential_mode",
                      f"credential_mode is {mode!r}; a collection uses \"none\"", "credential_mode \"none\" (REG-13)")

    discovery = _get(doc, "collection", "discovery")
    pages = _get(doc, "collection", "pages")
    kind = _get(discovery, "kind")
    max_requests = _get(doc, "limits", "max_requests")
    listing = _int(_get(discovery, "max_requests"), 64)
    fetches = _int(_get(pages, "max_fetches_per_run"), 10_000)
    if max_requests is None:
        fits = ""
        if None not in (listing, fetches):
            fits = (f"; the smallest value that fits is {listing + fetches} (discovery.max_requests {listing} + "
                    f"pages.max_fetches_per_run {fetches}): add \"max_requests\": {listing + fetches} to limits, "
                    f"or {listing + 2 * fetches} where redirects and retries are likely")
        yield Refusal("MAX_REQUESTS_REQUIRED", "/limits/max_requests", f"a collection must state limits.max_requests{fits}",
                      "limits.max_requests is required (REG-11)")
    else:
        total = _int(max_requests, None)
        if None not in (listing, fetches, total) and listing + fetches > total:
            yield Refusal("REQUEST_BUDGET_SUM", "/limits/max_requests",
                          f"discovery.max_requests + pages.max_fetches_per_run = {listing} + {fetches} = {listing + fetches} "
                          f"exceeds limits.max_requests = {total}; where redirects are likely use at least {listing + 2 * fetches}",
                          "discovery.max_requests + pages.max_fetches_per_run ≤ limits.max_requests (REG-33)")

    origins = _get(pages, "allowed_origins")
    allowed = tuple(o for o in origins if isinstance(o, str)) if isinstance(origins, list) else ()
    for index, origin in enumerate(origins if isinstance(origins, list) else ()):
        # the schema's pattern refuses the plainly malformed; this catches numeric hosts, trailing dots and the like
        if isinstance(origin, str) and _ORIGIN_SHAPE.match(origin) and not urls.is_canonical_origin(origin):
            yield Refusal("ORIGIN_NOT_CANONICAL", f"/collection/pages/allowed_origins/{index}",
                          _origin_message(origin), "canonical https origins (REG-21, D-40)")

    yield from _discovery_rules(doc, discovery, pages, allowed)

    revisit = _get(pages, "revisit", "kind")
    if revisit == "revision_hint" and isinstance(discovery, dict):
        has_extractor = kind == "sitemap" or (kind == "json_api" and "revision" in discovery)
        if not has_extractor:
            yield Refusal("REVISION_HINT_WITHOUT_EXTRACTOR", "/collection/pages/revisit/kind",
                          f"revisit revision_hint needs a revision extractor, which {kind} discovery"
                          f"{' without revision.pointer' if kind == 'json_api' else ''} does not have",
                          "json_api with revision.pointer, or sitemap (REG-32, D-42)")


def _discovery_rules(doc: dict[str, Any], discovery: Any, pages: Any, allowed: tuple[str, ...]) -> Iterator[Refusal]:
    kind = _get(discovery, "kind")
    if not isinstance(discovery, dict) or not isinstance(kind, str) or kind not in PAGINATION_FOR_DISCOVERY:
        return
    base = "/collection/discovery"
    connector_origin = _get(doc, "connector", "origin")
    if kind == "explicit":
        yield from _explicit_rules(discovery, pages)
        if isinstance(connector_origin, str) and allowed and connector_origin not in allowed:
            yield Refusal("CONNECTOR_ORIGIN_MISMATCH", "/connector/origin",
                          f"connector.origin {connector_origin!r} is not one of allowed_origins",
                          "connector.origin is an allowed origin (D-38, D-39)")
    else:
        url = discovery.get("url")
        if isinstance(url, str) and _ONE_LINE_HTTPS.match(url):  # the schema refuses other schemes and line breaks
            yield from _discovery_url_rules(url, discovery, allowed, connector_origin)

    # discovery pointers' syntax is the schema's pattern (x-code POINTER_SYNTAX)
    for path, pointer_text in ((("records", "selector"), f"{base}/records/selector"),
                               (("pagination", "selector"), f"{base}/pagination/selector")):
        value = _get(discovery, *path)
        if isinstance(value, str):
            yield from _selector_rule(value, pointer_text, ".".join(path))


def _discovery_url_rules(url: str, discovery: dict[str, Any], allowed: tuple[str, ...],
                         connector_origin: Any) -> Iterator[Refusal]:
    where = "/collection/discovery/url"
    try:
        canonical = urls.canonicalise(url)
    except urls.UrlError as exc:
        yield Refusal("DISCOVERY_URL_INVALID", where, str(exc), "an absolute https URL (REG-35)")
        return
    origin = urls.origin_of(canonical)
    reason = urls.unreachable_reason(canonical, (origin,))
    if reason is not None or "#" in url:
        yield Refusal("DISCOVERY_URL_INVALID", where, f"discovery.url {url!r}: {reason or 'carries a fragment'}",
                      "an absolute https URL this source may reach: no userinfo, port, fragment, whitespace or numeric host (REG-35, URL-09 to URL-12)")
        return
    # One refusal per root cause: an entry refused as non-canonical whose correction is the
    # discovery origin ("https://WWW.Example.com/") is that entry's refusal, not a second one.
    meant = {urls.origin_fix(o)[1] for o in allowed}
    if allowed and origin not in allowed and origin not in meant:
        yield Refusal("DISCOVERY_ORIGIN_NOT_ALLOWED", "/collection/pages/allowed_origins",
                      f"allowed_origins does not include the discovery origin {origin}",
                      "allowed_origins includes the discovery address's origin (REG-22)")
    if isinstance(connector_origin, str) and connector_origin != origin:
        yield Refusal("CONNECTOR_ORIGIN_MISMATCH", "/connector/origin",
                      f"connector.origin is {connector_origin!r} but the discovery origin is {origin}",
                      "connector.origin equals the discovery address's canonical origin (D-39)")
    grammar = _get(discovery, "pagination", "kind")
    parameter = _get(discovery, "pagination", "parameter")
    if grammar in PARAMETER_GRAMMARS and isinstance(parameter, str) \
            and parameter in urls.query_parameter_names(canonical):
        yield Refusal("PAGINATION_PARAMETER_PRESENT", where,
                      f"discovery.url already carries the pagination parameter {parameter!r}; the {grammar} grammar writes it",
                      "the document states the pagination parameter once (PAG-15, PAG-16)")


def _explicit_rules(discovery: dict[str, Any], pages: Any) -> Iterator[Refusal]:
    members = discovery.get("members")
    if not isinstance(members, list):
        return
    base = "/collection/discovery/members"
    max_pages = _int(_get(pages, "max_pages"), 50_000)
    if max_pages is not None and len(members) > max_pages:
        yield Refusal("EXPLICIT_TOO_MANY_MEMBERS", base, f"{len(members)} members exceed pages.max_pages = {max_pages}",
                      "at most pages.max_pages explicit members (D-38)")
    seen: dict[str, int] = {}
    for index, member in enumerate(members):
        page_id = _get(member, "page_id")
        url = _get(member, "url")
        if isinstance(page_id, str):
            if page_id in seen:
                yield Refusal("EXPLICIT_DUPLICATE_PAGE_ID", f"{base}/{index}/page_id",
                              f"page_id {page_id!r} is also member {seen[page_id]}'s", "distinct page_ids (D-38)")
            else:
                seen[page_id] = index
        if isinstance(url, str):
            problem = None
            try:
                canonical = urls.canonicalise(url)
                if not canonical.startswith("https://") or url.strip() != url:
                    problem = "not an absolute https URL"
            except urls.UrlError as exc:
                problem = str(exc)
            if problem:
                yield Refusal("EXPLICIT_URL_INVALID", f"{base}/{index}/url", f"member url {url!r}: {problem}",
                              "explicit member urls are absolute https URLs (D-38)")


def _source_rules(doc: dict[str, Any]) -> tuple[list[Refusal], ReaderPin | None]:
    adapter = _get(doc, "connector", "adapter_id")
    if adapter == HOSTED_ADAPTER:
        return [Refusal("HOSTED_COLLECTION_UNSUPPORTED", "/connector/adapter_id",
                        "public.https.collection@1.0.0 is a different adapter kept only so old receipts re-verify; it is not reachable",
                        "2.0.0 is not a widening of 1.0.0 (REF-09 to REF-11)")], None
    if adapter != COLLECTION_ADAPTER:
        if "collection" in doc:
            return [Refusal("COLLECTION_FORBIDDEN", "/collection",
                            f"collection is refused beside adapter {adapter!r}",
                            "collection only with public.https.collection@2.0.0 (REG-08)")], None
        return [], None
    refusals: list[Refusal] = []
    if "collection" not in doc:
        refusals.append(Refusal("COLLECTION_REQUIRED", "/collection",
                                "the collection adapter needs a collection member with discovery and pages",
                                "collection is required with public.https.collection@2.0.0 (REG-07)"))
    else:
        refusals.extend(_collection_rules(doc))
    reader_refusals, reader = _reader_rules(doc)
    refusals.extend(reader_refusals)
    return refusals, reader


# --- putting it together ---------------------------------------------------------------

def _one_per_cause(refusals: list[Refusal]) -> list[Refusal]:
    """A fractional number (`0.5`) is one mistake: the JSON rule names it, and the schema's
    "must be an integer" and bound at the same member only repeat it. The bound is kept in
    the one refusal's message, as the range to write the integer in."""
    fractional = {r.pointer for r in refusals if r.code == "JSON_FRACTIONAL_NUMBER"}
    if not fractional:
        return refusals
    bounds = {r.pointer: r.rule for r in refusals if r.code == "SCHEMA_BOUND" and r.pointer in fractional}
    kept = []
    for r in refusals:
        if r.pointer in fractional and r.code in ("SCHEMA_TYPE", "SCHEMA_BOUND"):
            continue
        if r.code == "JSON_FRACTIONAL_NUMBER" and r.pointer in bounds:
            r = Refusal(r.code, r.pointer, f"{r.message} within {bounds[r.pointer]}", r.rule, r.line, r.column)
        kept.append(r)
    return kept


def _ordered(refusals: list[Refusal], parsed: jsondoc.Parsed) -> tuple[Refusal, ...]:
    refusals = _one_per_cause(refusals)
    placed = []
    for index, refusal in enumerate(refusals):
        line, column = (refusal.line, refusal.column) if refusal.line is not None else parsed.position(refusal.pointer)
        placed.append(((line or 0, column or 0, index),
                       Refusal(refusal.code, refusal.pointer, refusal.message, refusal.rule, line, column)))
    unique: dict[tuple[str, str, str], Refusal] = {}
    for _, refusal in sorted(placed, key=lambda item: item[0]):
        unique.setdefault((refusal.code, refusal.pointer, refusal.message), refusal)
    return tuple(unique.values())


def _check_source(doc: dict[str, Any]) -> tuple[list[Refusal], ReaderPin | None]:
    refusals = list(_schema_refusals(doc, SOURCE))
    rule_refusals, reader = _source_rules(doc)
    return refusals + rule_refusals, reader


def register_value(parsed: jsondoc.Parsed) -> Registration:
    """Registration of an already parsed document."""
    document = parsed.value
    problems = [Refusal(p.code, p.pointer, p.message, _PROBLEM_RULES[p.code], p.line, p.column)
                for p in parsed.problems]
    if not isinstance(document, dict):
        return Registration(None, (Refusal("DOCUMENT_NOT_OBJECT", "", "the top level must be a JSON object",
                                           "a source or dataset document is an object", 1, 1),))
    if any(p.code == "JSON_TOO_DEEP" for p in problems):
        return Registration(None, tuple(problems))
    if "sources" in document and "connector" not in document:
        return _register_dataset(document, parsed, problems)
    refusals, reader = _check_source(document)
    ordered = _ordered(problems + refusals, parsed)
    if ordered:
        return Registration(SOURCE, ordered)
    return Registration(SOURCE, (), source=source_from(document, reader))


def _register_dataset(document: dict[str, Any], parsed: jsondoc.Parsed, problems: list[Refusal]) -> Registration:
    refusals = list(_schema_refusals(document, DATASET))
    sources = document.get("sources")
    models: list[Source] = []
    seen_by_tables: list[SourceColumns] = []
    if isinstance(sources, list):
        names: dict[str, int] = {}
        for index, source in enumerate(sources):
            prefix = f"/sources/{index}"
            if not isinstance(source, dict):
                continue  # the envelope schema refused it already
            source_refusals, reader = _check_source(source)
            refusals.extend(r.at(prefix) for r in source_refusals)
            name = source.get("name")
            if isinstance(name, str):
                if name in names:
                    refusals.append(Refusal("DATASET_DUPLICATE_SOURCE_NAME", f"{prefix}/name",
                                            f"source name {name!r} is also source {names[name]}'s",
                                            "source names are distinct within a dataset (REG-05)"))
                else:
                    names[name] = index
                # a refused source whose Reader pin stands still gives its tables known columns
                seen_by_tables.append(SourceColumns(index, name, _get(source, "connector", "adapter_id") == COLLECTION_ADAPTER,
                                                    reader.relation_columns if reader is not None else None))
            if not source_refusals:
                models.append(source_from(source, reader))
    if "tables" in document:
        refusals.extend(table_refusals(document["tables"], seen_by_tables, refusals, parsed))
    ordered = _ordered(problems + refusals, parsed)
    if ordered:
        return Registration(DATASET, ordered)
    return Registration(DATASET, (), dataset=Dataset(document["name"], document.get("description"), tuple(models),
                                                     tables_from(document.get("tables"))))


_PROBLEM_RULES = {
    "JSON_INVALID": "RFC 8259 JSON in UTF-8",
    "JSON_DUPLICATE_KEY": "member names are distinct within an object",
    "JSON_FRACTIONAL_NUMBER": "no fractional JSON number anywhere (REG-27, D-41)",
    "JSON_NUMBER_OUT_OF_RANGE": "integers within ±(2^53−1) (D-41)",
    "JSON_TOO_DEEP": f"nesting at most {jsondoc.MAX_DEPTH} levels",
    "DOCUMENT_TOO_LARGE": f"at most {jsondoc.MAX_DOCUMENT_BYTES} bytes",
}


def register_bytes(data: bytes | str) -> Registration:
    """Registration of a document's bytes: never raises for any input."""
    try:
        parsed = jsondoc.parse(data)
    except jsondoc.Unreadable as exc:
        p = exc.problem
        return Registration(None, (Refusal(p.code, p.pointer, p.message, _PROBLEM_RULES[p.code], p.line, p.column),))
    return register_value(parsed)


def register_document(document: Any) -> Registration:
    """Registration of a document given as a Python value (tests, the conformance harness)."""
    return register_bytes(json.dumps(document, ensure_ascii=False, indent=1))


@dataclass(frozen=True)
class DatasetEntry:
    """One source of a dataset, judged on its own (a dataset run runs the registrable ones)."""

    index: int
    name: str
    source: Source | None                 # None when refused
    refusals: tuple[Refusal, ...]         # pointers are the dataset's (/sources/N/...)


def dataset_entries(data: bytes | str) -> tuple[Registration, tuple[Refusal, ...], tuple[DatasetEntry, ...]]:
    """A dataset split source by source: (the registration of the whole document, the
    refusals of the envelope — outside every /sources/N —, one entry per source). A source's
    own refusals refuse that source only; an envelope refusal refuses the whole dataset."""
    registration = register_bytes(data)
    if registration.kind != DATASET:
        return registration, (), ()
    if registration.registrable:
        return registration, (), tuple(DatasetEntry(i, s.name, s, ()) for i, s in
                                        enumerate(registration.dataset.sources))
    document = jsondoc.parse(data).value
    sources = document.get("sources") if isinstance(document, dict) else None
    if not isinstance(sources, list):
        return registration, registration.refusals, ()
    mine = {i: [] for i in range(len(sources))}
    envelope = []
    for refusal in registration.refusals:
        parts = refusal.pointer.split("/")
        if len(parts) >= 3 and parts[1] == "sources" and parts[2].isdigit() and int(parts[2]) in mine:
            mine[int(parts[2])].append(refusal)
        else:
            envelope.append(refusal)
    entries = []
    for index, doc in enumerate(sources):
        name = doc.get("name") if isinstance(doc, dict) and isinstance(doc.get("name"), str) else f"#{index}"
        model = None
        if not mine[index] and isinstance(doc, dict):
            _, reader = _check_source(doc)
            model = source_from(doc, reader)
        entries.append(DatasetEntry(index, name, model, tuple(mine[index])))
    return registration, tuple(envelope), tuple(entries)
