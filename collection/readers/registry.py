"""The Reader families a collection may pin, their versions and their declared columns.

Registration asks this module three things about a pin (REG-12, READ-01, READ-07): is the
family one of the four, is the version one this project implements, and which columns
does the pin declare for the given decode_options. The decoding itself lives beside it,
one module per family.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from collection.recipe.resources import load_schema


@dataclass(frozen=True)
class Family:
    family_id: str
    versions: tuple[str, ...]
    options_schema: str
    media_types: tuple[str, ...]
    columns: Callable[[dict[str, Any]], tuple[str, ...]]


def _web_extract_columns(options: dict[str, Any]) -> tuple[str, ...]:
    return ("title", "story", *options.get("metadata", ()))


def _html_tabular_columns(options: dict[str, Any]) -> tuple[str, ...]:
    if "table" in options:
        # A column is a name (the header cell equals it) or {name, header}, for header
        # cells that are not identifiers or that repeat under a colspan.
        return tuple(column if isinstance(column, str) else column["name"]
                     for column in options["table"]["columns"])
    return tuple(column["name"] for column in options["records"]["columns"])


def _named_columns(options: dict[str, Any]) -> tuple[str, ...]:
    return tuple(column["name"] for column in options["columns"])


JSON_MEDIA_TYPES = ("application/json", "application/ld+json", "application/vnd.api+json", "text/json")
HTML_MEDIA_TYPES = ("text/html", "application/xhtml+xml")

FAMILIES: dict[str, Family] = {
    family.family_id: family
    for family in (
        Family("html.web_extract", ("1.1.0",), "reader-html.web_extract.options.schema.json",
               ("text/html",), _web_extract_columns),
        Family("html.tabular", ("1.0.0",), "reader-html.tabular.options.schema.json",
               HTML_MEDIA_TYPES, _html_tabular_columns),
        Family("json.tabular", ("1.0.0",), "reader-json.tabular.options.schema.json",
               JSON_MEDIA_TYPES, _named_columns),
        Family("xml.tabular", ("1.0.0",), "reader-xml.tabular.options.schema.json",
               ("application/xml", "text/xml"), _named_columns),
    )
}


def options_schema(family_id: str) -> dict[str, Any]:
    return load_schema(FAMILIES[family_id].options_schema)
