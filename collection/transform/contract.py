"""A table's contract, checked without data and without an engine (issue 25; D-67, D-68).

`collection validate` calls `check_table`; `collection build` calls `statement_findings` before it
gives the SQL to DuckDB and `compare_columns` on DuckDB's own DESCRIBE of the SELECT, so both
commands refuse with the same code, column, types and fix. `infer_columns` is the pure typer the
differential test (tests/test_transform_differential.py) keeps in step with DuckDB.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from collection.transform import sqlparse, typer
from collection.transform.types import CAST_TO, accepts, engine_type

_RULES = {
    "TRANSFORM_SQL_SYNTAX": "D-68",
    "TRANSFORM_SQL_NOT_ONE_SELECT": "D-68",
    "TRANSFORM_SQL_FORBIDDEN": "D-68",
    "TRANSFORM_SQL_UNKNOWN_TABLE": "D-68",
    "TRANSFORM_SQL_UNKNOWN_COLUMN": "PROV-16, D-68",
    "TRANSFORM_SQL_UNSUPPORTED": "D-68",
    "TRANSFORM_SQL_TYPE_ERROR": "PROV-16, PROV-17, D-68",
    "TRANSFORM_SQL_AGGREGATE": "D-68",
    "TRANSFORM_SQL_UNNAMED_COLUMN": "D-68",
    "TRANSFORM_COLUMN_NAMES_DIFFER": "D-68",
    "TRANSFORM_COLUMN_TYPE_MISMATCH": "PROV-18, PROV-20, REF-08, D-49, D-67",
}

_PARSE_CODES = {
    "syntax": "TRANSFORM_SQL_SYNTAX",
    "statement": "TRANSFORM_SQL_NOT_ONE_SELECT",
    "forbidden": "TRANSFORM_SQL_FORBIDDEN",
    "unsupported": "TRANSFORM_SQL_UNSUPPORTED",
    "unknown_table": "TRANSFORM_SQL_UNKNOWN_TABLE",
}

# widest integers: the build stores `integer` as BIGINT, so the fix casts to bigint, not integer
_WIDE_INTEGERS = frozenset({"HUGEINT", "UBIGINT", "UHUGEINT", "BIGNUM"})


@dataclass(frozen=True)
class SqlFinding:
    code: str
    message: str
    rule: str
    offset: int
    sql_line: int
    sql_column: int
    column: str | None = None
    declared: str | None = None
    actual: str | None = None
    fix: str | None = None


class SqlError(Exception):
    """The SQL cannot be typed; carries the finding that says why and where."""

    def __init__(self, finding: SqlFinding):
        super().__init__(finding.message)
        self.finding = finding


def line_column(sql: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a 0-based offset (a column counts characters)."""
    offset = max(0, min(offset, len(sql)))
    line = sql.count("\n", 0, offset) + 1
    start = sql.rfind("\n", 0, offset) + 1
    return line, offset - start + 1


def _finding(table: str, sql: str, code: str, text: str, offset: int, **extra) -> SqlFinding:
    line, col = line_column(sql, offset)
    message = f"table {table!r}, line {line}, column {col} of the SQL: {text}"
    return SqlFinding(code, message, _RULES[code], offset, line, col, **extra)


def _parse(table: str, sql: str) -> sqlparse.Statement:
    try:
        return sqlparse.parse_statement(sql)
    except sqlparse.ParseError as e:
        text = e.message + (" is outside the typed subset (docs/transform.md)" if e.kind == "unsupported" else "")
        raise SqlError(_finding(table, sql, _PARSE_CODES[e.kind], text, e.pos)) from None


def _statement_findings(table: str, sql: str, sources: Mapping[str, Sequence[str]]) -> list[SqlFinding]:
    try:
        parsed = _parse(table, sql)
    except SqlError as e:
        return [e.finding]
    return _statement(table, sql, parsed, sources)


def _statement(table: str, sql: str, parsed: sqlparse.Statement,
               sources: Mapping[str, Sequence[str]]) -> list[SqlFinding]:
    return [_finding(table, sql, p.code, p.message, p.pos) for p in typer.statement_problems(parsed, sources)]


def _infer_columns(sql: str, sources: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
    return [(c.name, c.type) for c in _infer("<sql>", sql, sources)]


def _infer(table: str, sql: str, sources: Mapping[str, Sequence[str]],
           parsed: sqlparse.Statement | None = None) -> list[typer.OutColumn]:
    if parsed is None:
        parsed = _parse(table, sql)
        found = _statement(table, sql, parsed, sources)
        if found:
            raise SqlError(found[0])
    try:
        return typer.infer(parsed.query, sources, sql, functions=parsed.functions)
    except typer.TypeFailure as e:
        raise SqlError(_finding(table, sql, e.code, e.message, e.pos)) from None


def _check_table(table: str, sql: str, declared: Sequence[tuple[str, str]],
                 sources: Mapping[str, Sequence[str]]) -> list[SqlFinding]:
    try:
        parsed = _parse(table, sql)
    except SqlError as e:
        return [e.finding]
    found = _statement(table, sql, parsed, sources)
    if found:
        return found
    try:
        columns = _infer(table, sql, sources, parsed)
    except SqlError as e:
        return [e.finding]
    # an OutColumn says where it comes from as an Origin does (pos, expr_text, cast_operand)
    return _compare(table, sql, declared, [(c.name, c.type) for c in columns], columns)


def _compare_columns(table: str, sql: str, declared: Sequence[tuple[str, str]],
                     actual: Sequence[tuple[str, str]], *,
                     sources: Mapping[str, Sequence[str]] | None = None) -> list[SqlFinding]:
    names = [name for name, _ in actual]
    origins = None
    if sources is not None:
        try:
            columns = _infer(table, sql, sources)
        except SqlError:
            columns = None
        if columns is not None and len(columns) == len(names):
            origins = [typer.Origin(c.pos, c.expr_text, c.cast_operand) for c in columns]
    return _compare(table, sql, declared, actual, origins or _origins(sql, names))


def _origins(sql: str, names: Sequence[str]) -> list[typer.Origin]:
    """Where each result column comes from in the SQL, without sources: one per select item, a * or
    t.* standing for as many columns as the others leave (all of them at the first * when there are
    several). When the SQL does not parse, every column points at the start."""
    try:
        query = sqlparse.parse(sql)
    except sqlparse.ParseError:
        return [typer.Origin(0, typer.quote_ident(n)) for n in names]
    items = typer.first_select(query).items
    stars = [k for k, it in enumerate(items) if isinstance(it.expr, sqlparse.Star)]
    spare = len(names) - (len(items) - len(stars))
    out: list[typer.Origin] = []
    first_star = True
    for it in items:
        if isinstance(it.expr, sqlparse.Star):
            take = max(spare, 0) if first_star else 0
            first_star = False
            for _ in range(take):
                n = names[len(out)] if len(out) < len(names) else ""
                q = it.expr.qualifier
                out.append(typer.Origin(it.pos, (typer.quote_ident(q) + "." if q else "") + typer.quote_ident(n)))
        else:
            out.append(typer.origin_of(sql, it))
    while len(out) < len(names):
        out.append(typer.Origin(0, typer.quote_ident(names[len(out)])))
    return out[:len(names)]


def _compare(table: str, sql: str, declared: Sequence[tuple[str, str]], actual: Sequence[tuple[str, str]],
             origins: Sequence[typer.Origin | typer.OutColumn]) -> list[SqlFinding]:
    want = [n for n, _ in declared]
    got = [n for n, _ in actual]
    if len(want) != len(got):
        pos = origins[min(len(want), len(got))].pos if len(got) > len(want) else (origins[-1].pos if origins else 0)
        return [_finding(table, sql, "TRANSFORM_COLUMN_NAMES_DIFFER",
                         f"the SELECT gives {len(got)} columns ({', '.join(got)}) but the table declares "
                         f"{len(want)} ({', '.join(want)})", pos)]
    findings: list[SqlFinding] = []
    for k, ((dname, dtype), (aname, atype)) in enumerate(zip(declared, actual)):
        origin = origins[k]
        if dname.lower() != aname.lower():
            fix = f"{origin.expr_text} as {typer.quote_ident(dname)}"
            findings.append(_finding(
                table, sql, "TRANSFORM_COLUMN_NAMES_DIFFER",
                f"result column {k + 1} is named {aname!r} but the table declares {dname!r} there "
                f"(the declared order is the SELECT's order); write {fix}", origin.pos,
                column=dname, fix=fix))
            continue
        atype = engine_type(atype)
        if accepts(dtype, atype):
            continue
        cast_to = "bigint" if dtype == "integer" and atype in _WIDE_INTEGERS else CAST_TO[dtype]
        operand = origin.cast_operand if origin.cast_operand is not None else origin.expr_text
        fix = f"cast({operand} as {cast_to}) as {typer.quote_ident(dname)}"
        why = {
            "VARCHAR": " (every relation column arrives as VARCHAR and needs a cast)",
            "TIMESTAMP": " (a timestamp column takes TIMESTAMP WITH TIME ZONE and nothing else)",
            "NULL": " (an untyped NULL fits no column)",
        }.get(atype, " (sum() of integers is HUGEINT; the build stores integers as BIGINT)"
              if atype in _WIDE_INTEGERS else "")
        shown = '"NULL"' if atype == "NULL" else atype
        findings.append(_finding(
            table, sql, "TRANSFORM_COLUMN_TYPE_MISMATCH",
            f"column {dname!r} is declared {dtype} but the SELECT gives {shown}{why}; write {fix}",
            origin.pos, column=dname, declared=dtype, actual=shown, fix=fix))
    return findings


# The parser bounds nesting and tree depth (sqlparse.MAX_DEPTH, MAX_TREE_DEPTH) well inside Python's
# recursion limit; these wrappers are the last guard for a caller that is itself deep in the stack,
# so a hostile statement is a refusal, never a traceback.

def _too_deep(table: str, sql: str) -> SqlFinding:
    return _finding(table, sql, "TRANSFORM_SQL_UNSUPPORTED",
                    "a statement nested too deeply to check is outside the typed subset (docs/transform.md)", 0)


def statement_findings(table: str, sql: str, sources: Mapping[str, Sequence[str]]) -> list[SqlFinding]:
    """Only the parts that need no typing: one SELECT inside the subset, no forbidden statement or
    function, reads only `sources` (and its own WITH queries). `collection build` calls this before
    it gives the SQL to DuckDB."""
    try:
        return _statement_findings(table, sql, sources)
    except RecursionError:
        return [_too_deep(table, sql)]


def check_table(table: str, sql: str, declared: Sequence[tuple[str, str]],
                sources: Mapping[str, Sequence[str]]) -> list[SqlFinding]:
    """Everything validate checks, without an engine: exactly one SELECT inside the supported subset,
    reads only `sources`, names only their columns, result names == declared names, result types
    accepted (types.accepts)."""
    try:
        return _check_table(table, sql, declared, sources)
    except RecursionError:
        return [_too_deep(table, sql)]


def compare_columns(table: str, sql: str, declared: Sequence[tuple[str, str]],
                    actual: Sequence[tuple[str, str]], *,
                    sources: Mapping[str, Sequence[str]] | None = None) -> list[SqlFinding]:
    """Names and types of a result (from the pure typer, or from DuckDB's DESCRIBE at build time)
    against the declaration: the one place TRANSFORM_COLUMN_TYPE_MISMATCH and the column-name
    refusals are made, so validate and build give the same verdict, column and types.

    Given `sources` (build has them), a column that a `*` gave is placed exactly as check_table
    places it even when the select list holds several stars; without, all of those columns point
    at the first star."""
    try:
        return _compare_columns(table, sql, declared, actual, sources=sources)
    except RecursionError:
        return [_too_deep(table, sql)]


def infer_columns(sql: str, sources: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
    """The pure typer: the result's (name, DuckDB type) list, as DuckDB's DESCRIBE gives it. Raises
    SqlError (carrying a SqlFinding) when the SQL cannot be typed (outside the subset, an unknown
    name, an operation DuckDB refuses). The differential test compares this with DESCRIBE."""
    try:
        return _infer_columns(sql, sources)
    except RecursionError:
        raise SqlError(_too_deep("<sql>", sql)) from None
