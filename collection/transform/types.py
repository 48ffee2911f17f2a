"""The closed set of declared column types and which engine types each accepts (D-67).

One table, read by both checks: `collection validate` (the pure SQL typer, no engine) and
`collection build` (DuckDB's own DESCRIBE of the SELECT). Keeping the verdict in one place is
what lets the differential test compare the two typers on types alone.

Every relation column reaches the transform as VARCHAR (PROV-16), so a bare provenance or
Reader column fits only a `string` column (PROV-18, D-49). `timestamp` is TIMESTAMP WITH TIME
ZONE and nothing else (PROV-20): a cast to plain `timestamp` is a mismatch. Integer types that
can exceed 64 bits (HUGEINT, UBIGINT, UHUGEINT: what `sum()` of an integer gives) are refused
for `integer` because the build stores every integer column as BIGINT; the fix casts to bigint.
An untyped NULL literal fits no column: the fix names the type.
"""

from __future__ import annotations

import re

DECLARED_TYPES = ("string", "integer", "number", "boolean", "date", "timestamp")

# declared type -> the engine type the build stores it as (Parquet and the DuckDB file)
STORED_AS = {
    "string": "VARCHAR",
    "integer": "BIGINT",
    "number": "DOUBLE",
    "boolean": "BOOLEAN",
    "date": "DATE",
    "timestamp": "TIMESTAMP WITH TIME ZONE",
}

_ACCEPTS = {
    "string": frozenset({"VARCHAR"}),
    "integer": frozenset({"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER"}),
    "number": frozenset({"FLOAT", "DOUBLE"}),          # and every DECIMAL(p,s), below
    "boolean": frozenset({"BOOLEAN"}),
    "date": frozenset({"DATE"}),
    "timestamp": frozenset({"TIMESTAMP WITH TIME ZONE"}),
}

# the cast a fix advises, per declared type (the spec's own spelling for timestamps, PROV-19)
CAST_TO = {
    "string": "varchar",
    "integer": "integer",
    "number": "double",
    "boolean": "boolean",
    "date": "date",
    "timestamp": "timestamp with time zone",
}

_DECIMAL = re.compile(r"DECIMAL\(\d+,\d+\)")
_SYNONYMS = {"TIMESTAMPTZ": "TIMESTAMP WITH TIME ZONE", "INT": "INTEGER", "INT4": "INTEGER", "INT8": "BIGINT",
             "INT2": "SMALLINT", "INT1": "TINYINT", "REAL": "FLOAT", "FLOAT4": "FLOAT", "FLOAT8": "DOUBLE",
             "STRING": "VARCHAR", "TEXT": "VARCHAR", "BOOL": "BOOLEAN", "LOGICAL": "BOOLEAN", "NUMERIC": "DECIMAL(18,3)",
             "DECIMAL": "DECIMAL(18,3)", "TIMESTAMP_US": "TIMESTAMP", "DATETIME": "TIMESTAMP", '"NULL"': "NULL"}


def engine_type(name: str) -> str:
    """An engine type name in DuckDB's DESCRIBE spelling (upper case, synonyms folded)."""
    folded = _FOLDED.get(name)
    if folded is None:
        text = " ".join(name.strip().upper().split())
        text = text.replace(", ", ",")
        folded = _SYNONYMS.get(text, text)
        if len(_FOLDED) < 4096:           # the few names a typer or DESCRIBE gives, folded once each
            _FOLDED[name] = folded
    return folded


_FOLDED: dict[str, str] = {}


def accepts(declared: str, actual: str) -> bool:
    """Does a SELECT column of engine type `actual` fit a column declared `declared`?"""
    actual = engine_type(actual)
    if declared == "number" and _DECIMAL.fullmatch(actual):
        return True
    return actual in _ACCEPTS[declared]
