"""A dataset's tables (the transform) as registration judges them, without data (pure).

The schema states each table's shape and bounds (D-69). This module adds what a schema cannot
state (D-70): table names distinct and not a source's name, column names distinct as DuckDB
compares them (ignoring case), a table reading only sources whose columns are known (a
collection's relation: its Reader's columns, then the seven provenance columns). Then it hands
each table to the SQL contract (collection.transform.contract.check_table), with every source a
table of VARCHAR columns (PROV-16), and turns each finding into a Refusal.

Where a finding points (D-70): at `/tables/<i>/sql`, the member the fix is written in (the
contract's fix is a select item: `cast(page_ordinal as integer) as page_ordinal`), with the
file's line and column of the very character the finding names, escapes inside the JSON string
counted; the message carries the line and column inside the SQL itself. A document whose SQL is
one JSON string spread over lines with `\\n` is pointed at exactly, as is one written plainly.

A table is handed to the contract only when its own members passed the schema and every source
it reads has known columns: a refused Reader pin or a non-collection source is the one refusal
of its cause, never followed by "unknown table" or "unknown column" refusals it implies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any, Iterator, Mapping, Sequence

from collection.recipe import jsondoc
from collection.recipe.refusal import Refusal
from collection.transform import sqlparse
from collection.transform.types import DECLARED_TYPES

_TABLE_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}\Z")
_COLUMN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class SourceColumns:
    """One source of the dataset as its tables see it."""

    index: int
    name: str
    collection: bool
    columns: tuple[str, ...] | None       # the relation's columns; None when the Reader pin is refused


def table_refusals(tables: Any, sources: Sequence[SourceColumns], refused: Sequence[Refusal],
                   parsed: jsondoc.Parsed) -> list[Refusal]:
    """Every refusal of the `tables` member beyond its schema. `refused` holds the refusals found
    so far (a table with a schema refusal of its own is not handed to the contract)."""
    if not isinstance(tables, list):
        return []
    by_name: dict[str, SourceColumns] = {}
    for source in sources:
        by_name.setdefault(source.name, source)
    broken = _refused_tables(refused)
    unknown = any(not s.collection or s.columns is None for s in by_name.values())
    # the relations a table may read, the same for every table of the dataset
    columns = {s.name: s.columns for s in by_name.values() if s.collection and s.columns is not None}
    refusals: list[Refusal] = []
    seen: dict[str, int] = {}
    for index, table in enumerate(tables):
        if not isinstance(table, dict):
            continue
        base = f"/tables/{index}"
        name = table.get("name")
        if isinstance(name, str):
            if name in seen:
                refusals.append(Refusal("TABLE_DUPLICATE_NAME", f"{base}/name",
                                        f"table name {name!r} is also table {seen[name]}'s",
                                        "table names are distinct within a dataset (D-70)"))
            else:
                seen[name] = index
            if name in by_name:
                refusals.append(Refusal("TABLE_NAME_IS_SOURCE", f"{base}/name",
                                        f"table name {name!r} is source {by_name[name].index}'s name; in the SQL "
                                        f"{name} means that source: name the table otherwise, e.g. {name[:55]}_typed",
                                        "a table is not named as a source (D-70)"))
        column_refusals = list(_column_rules(table.get("columns"), base))
        refusals.extend(column_refusals)
        declared = _declared(table)
        sql = table.get("sql")
        if not isinstance(sql, str):
            continue
        # only a dataset with a source of unknown columns needs to know what each table reads
        reads = list(_read_tables(sql)) if unknown else []
        unreadable = False
        reported: set[str] = set()
        for read, offset in reads:
            source = by_name.get(read)
            if source is None:
                continue
            if not source.collection:
                unreadable = True
                if read not in reported:
                    reported.add(read)
                    line, column = sql_position(parsed, f"{base}/sql", offset)
                    refusals.append(Refusal(
                        "TABLE_SOURCE_NOT_COLLECTION", f"{base}/sql",
                        f"table {table.get('name')!r} reads source {read!r} (line {_sql_line(sql, offset)}), which "
                        f"is not a collection: only a collection's relation has known columns; read a collection "
                        f"source (adapter public.https.collection@2.0.0) instead",
                        "a table reads only collection sources (D-70, PROV-02)", line, column))
            elif source.columns is None:
                unreadable = True         # its Reader pin's refusal is the one refusal of this cause
        if unreadable or declared is None or column_refusals or index in broken:
            continue
        refusals.extend(_contract_refusals(str(name), sql, declared, columns, base, parsed))
    return refusals


def _refused_tables(refused: Sequence[Refusal]) -> set[int]:
    broken: set[int] = set()
    for refusal in refused:
        parts = refusal.pointer.split("/")
        if len(parts) >= 3 and parts[1] == "tables" and parts[2].isdigit():
            broken.add(int(parts[2]))
    return broken


def _column_rules(columns: Any, base: str) -> Iterator[Refusal]:
    if not isinstance(columns, list):
        return
    names = [c.get("name") if isinstance(c, dict) else None for c in columns]
    if all(type(n) is str and n.isascii() for n in names) and len({n.lower() for n in names}) == len(names):
        return            # distinct ASCII names: casefold() is lower() there, so nothing below refuses
    seen: dict[str, tuple[int, str]] = {}
    for index, column in enumerate(columns):
        name = column.get("name") if isinstance(column, dict) else None
        if not isinstance(name, str):
            continue
        folded = name.casefold()
        if folded in seen:
            other, spelled = seen[folded]
            same = "" if spelled == name else f" ({spelled!r}: DuckDB compares names ignoring case)"
            yield Refusal("TABLE_DUPLICATE_COLUMN", f"{base}/columns/{index}/name",
                          f"column name {name!r} is also column {other}'s{same}",
                          "declared column names are distinct, compared ignoring case (D-69, D-70)")
        else:
            seen[folded] = (index, name)


def _declared(table: dict[str, Any]) -> list[tuple[str, str]] | None:
    """The (name, type) list when every column is well formed; None otherwise (the schema said why)."""
    name, columns = table.get("name"), table.get("columns")
    if not isinstance(name, str) or not _TABLE_NAME.match(name) or not isinstance(columns, list) or not columns:
        return None
    declared = []
    for column in columns:
        if not isinstance(column, dict):
            return None
        column_name, column_type = column.get("name"), column.get("type")
        if not isinstance(column_name, str) or not _COLUMN_NAME.match(column_name) or column_type not in DECLARED_TYPES:
            return None
        declared.append((column_name, column_type))
    return declared


def _contract_refusals(name: str, sql: str, declared: list[tuple[str, str]], sources: Mapping[str, Sequence[str]],
                       base: str, parsed: jsondoc.Parsed) -> Iterator[Refusal]:
    from collection.transform.contract import check_table

    for finding in check_table(name, sql, declared, sources):
        line, column = sql_position(parsed, f"{base}/sql", finding.offset)
        # one refusal is one line in the text and JUnit formats, whatever SQL the message quotes
        message = " ".join(finding.message.split("\n"))
        yield Refusal(finding.code, f"{base}/sql", message, finding.rule, line, column)


# --- where a character of the SQL sits in the file --------------------------------------------

_KEY_THEN_STRING = re.compile(r'"(?:[^"\\]|\\.)*"\s*:\s*"')
_ESCAPE = re.compile(r'\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[0-9a-fA-F]{4}|u[0-9a-fA-F]{4}|.)')


def sql_position(parsed: jsondoc.Parsed, pointer: str, offset: int) -> tuple[int | None, int | None]:
    """The file's (line, column) of character `offset` of the string at `pointer` (an object
    member): escapes count as the one character they stand for."""
    line, column = parsed.position(pointer)
    if line is None or column is None:
        return None, None
    index = jsondoc.LineIndex(parsed.text)
    start = index.offset(line, column)
    match = _KEY_THEN_STRING.match(parsed.text, start)
    if match is None:                      # the position is not a member's key: keep the member's
        return line, column
    raw = match.end()
    text = parsed.text
    for _ in range(max(0, offset)):
        if raw >= len(text) or text[raw] == '"':
            break
        escape = _ESCAPE.match(text, raw) if text[raw] == "\\" else None
        raw = escape.end() if escape else raw + 1
    return index.position(raw)


def _sql_line(sql: str, offset: int) -> int:
    return sql.count("\n", 0, max(0, offset)) + 1


# --- which sources a SELECT reads ---------------------------------------------------------------

def _read_tables(sql: str) -> Iterator[tuple[str, int]]:
    """(name, offset) of every table the SELECT reads, as the SQL contract's own parser reads it,
    WITH queries excepted. SQL that does not parse reads nothing here: the contract says why."""
    try:
        query = sqlparse.parse(sql)
    except sqlparse.ParseError:
        return
    ctes: set[str] = set()
    refs: list[sqlparse.TableRef] = []
    stack: list[Any] = [query]
    while stack:
        node = stack.pop()
        if isinstance(node, tuple):
            stack.extend(node)
        elif isinstance(node, sqlparse.Node):
            if isinstance(node, sqlparse.Cte):
                ctes.add(node.name.lower())
            if isinstance(node, sqlparse.TableRef):
                refs.append(node)
            stack.extend(getattr(node, field.name) for field in fields(node))
    for ref in sorted(refs, key=lambda r: r.pos):
        if ref.name.lower() not in ctes:
            yield ref.name.lower(), ref.pos
