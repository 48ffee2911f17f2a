"""The pure typer: name resolution and DuckDB's type rules for the subset of D-68.

Every rule here was read off DuckDB 2.0.1 (`DESCRIBE SELECT …`) and is kept in step with it by
tests/test_transform_differential.py. Where DuckDB's behaviour is irregular or was not measured, the
typer refuses with TRANSFORM_SQL_UNSUPPORTED rather than guess: a refusal of valid SQL costs the
author a rewrite, a wrong type would pass validate and fail the build.

Integer literals are "adaptable" as in DuckDB: `cast(x as tinyint) + 1` is TINYINT because 1 fits,
`+ 300` is INTEGER. The result of an operation is never a literal again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Mapping, NamedTuple, Sequence

from collection.transform import sqlparse as P

INTS = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT")
_INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INTEGER": 32, "BIGINT": 64, "HUGEINT": 128}
_INT_WIDTH = {"TINYINT": 3, "SMALLINT": 5, "INTEGER": 10, "BIGINT": 19, "HUGEINT": 38}
TEMPORAL = ("DATE", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE")
_DEC = re.compile(r"DECIMAL\((\d+),(\d+)\)")
NULL = "NULL"


class TypeFailure(Exception):
    def __init__(self, code: str, message: str, pos: int):
        super().__init__(message)
        self.code = code
        self.message = message
        self.pos = pos


def _unsupported(what: str, node: P.Node) -> TypeFailure:
    return TypeFailure("TRANSFORM_SQL_UNSUPPORTED", f"{what} is outside the typed subset (docs/transform.md)", node.pos)


def _type_error(what: str, node: P.Node) -> TypeFailure:
    return TypeFailure("TRANSFORM_SQL_TYPE_ERROR", what, node.pos)


class T(NamedTuple):
    """A value's type while typing; immutable (a tuple: made on the typer's hot path far more
    cheaply than a frozen dataclass)."""
    name: str                      # DESCRIBE spelling; "NULL" for an untyped NULL
    lit: str | None = None         # "int" (an adaptable integer literal) or "str" (a string literal)
    value: int | None = None       # the integer literal's value

    def plain(self) -> "T":
        # a frozen value: one already plain is its own plain form (no new object on the hot path)
        return self if self.lit is None and self.value is None else T(self.name)


_VARCHAR = T("VARCHAR")      # every source column's type (PROV-16), one value shared


def is_int(t: T) -> bool:
    return t.name in _INT_BITS


def is_dec(t: T) -> bool:
    return t.name.startswith("DECIMAL(")


def is_float(t: T) -> bool:
    return t.name in ("FLOAT", "DOUBLE")


def is_num(t: T) -> bool:
    return is_int(t) or is_dec(t) or is_float(t)


def is_text(t: T) -> bool:
    return t.name == "VARCHAR"


def dec_of(t: T) -> tuple[int, int]:
    if is_int(t):
        return _INT_WIDTH[t.name], 0
    m = _DEC.fullmatch(t.name)
    return int(m.group(1)), int(m.group(2))


def dec(p: int, s: int) -> T:
    return T(f"DECIMAL({min(p, 38)},{s})")


def _fits(value: int, name: str) -> bool:
    bits = _INT_BITS[name]
    return -(1 << (bits - 1)) <= value < (1 << (bits - 1))


def int_literal_type(value: int) -> str | None:
    magnitude = abs(value)
    for name in ("INTEGER", "BIGINT", "HUGEINT"):
        if _fits(magnitude, name):
            return name
    return None


def _int_max(a: T, b: T) -> T:
    if a.lit == "int" and b.lit != "int" and _fits(a.value, b.name):
        return b.plain()
    if b.lit == "int" and a.lit != "int" and _fits(b.value, a.name):
        return a.plain()
    return T(max(a.name, b.name, key=INTS.index))


def _dec_max(types: Sequence[T]) -> T:
    ps = [dec_of(t) for t in types]
    scale = max(s for _, s in ps)
    return dec(max(p - s for p, s in ps) + scale, scale)


def unify(types: Sequence[T], node: P.Node, what: str) -> T:
    """The common type of CASE branches (ELSE first, as DuckDB folds them), COALESCE/greatest/least
    arguments and UNION ALL columns: a left fold, because DuckDB's is one (an integer literal adapts
    to the integer type gathered so far, and stops being adaptable once it met a NULL or another
    literal)."""
    acc: T | None = None
    for t in types:
        acc = t if acc is None else _combine(acc, t, node, what)
    return acc if acc is not None else T(NULL)


def _combine(a: T, b: T, node: P.Node, what: str) -> T:
    if a.name == NULL:
        return b.plain() if b.lit == "int" else b
    if b.name == NULL:
        return a.plain() if a.lit == "int" else a
    if a.lit == "str" and b.lit == "str":
        return a
    if a.lit == "str" or b.lit == "str":
        other = b if a.lit == "str" else a
        if is_text(other):
            return T("VARCHAR")
        raise _unsupported(f"a string literal mixed with {other.name} in {what}", node)
    if is_int(a) and is_int(b):
        if a.lit == "int" and b.lit == "int":
            return T(max(a.name, b.name, key=INTS.index))
        return _int_max(a, b)
    if is_num(a) and is_num(b):
        if "DOUBLE" in (a.name, b.name):
            return T("DOUBLE")
        if "FLOAT" in (a.name, b.name):
            return T("FLOAT")
        return _dec_max([a, b])
    if a.name == b.name and a.name in ("VARCHAR", "BOOLEAN"):
        return T(a.name)
    if a.name in TEMPORAL and b.name in TEMPORAL:
        return T(max(a.name, b.name, key=TEMPORAL.index))
    if (is_text(a) and is_num(b)) or (is_num(a) and is_text(b)):
        raise _type_error(f"{what} mixes {a.name} and {b.name}; cast one of them", node)
    raise _unsupported(f"{what} over {a.name} and {b.name}", node)


def comparable(a: T, b: T, node: P.Node, what: str) -> None:
    if a.name == NULL or b.name == NULL:
        raise _unsupported(f"an untyped NULL in {what} (use IS NULL, or cast(null as …))", node)
    if a.lit == "str" or b.lit == "str":
        return
    if is_num(a) and is_num(b):
        return
    if a.name == b.name:
        return
    if a.name in TEMPORAL and b.name in TEMPORAL:
        return
    raise _unsupported(f"{what} between {a.name} and {b.name} (cast one side so both have one type)", node)


# ------------------------------------------------------------------------------------ functions

_STRING_FUNCS = {
    # name: (argument kinds, result); "s" a string, "i" an integer, "c" a constant string
    "lower": (("s",), "VARCHAR"), "upper": (("s",), "VARCHAR"), "lcase": (("s",), "VARCHAR"),
    "ucase": (("s",), "VARCHAR"), "reverse": (("s",), "VARCHAR"), "md5": (("s",), "VARCHAR"),
    "trim": (("s", "s?"), "VARCHAR"), "ltrim": (("s", "s?"), "VARCHAR"), "rtrim": (("s", "s?"), "VARCHAR"),
    "length": (("s",), "BIGINT"), "strpos": (("s", "s"), "BIGINT"), "instr": (("s", "s"), "BIGINT"),
    "substr": (("s", "i", "i?"), "VARCHAR"), "substring": (("s", "i", "i?"), "VARCHAR"),
    "left": (("s", "i"), "VARCHAR"), "right": (("s", "i"), "VARCHAR"), "repeat": (("s", "i"), "VARCHAR"),
    "lpad": (("s", "i", "s"), "VARCHAR"), "rpad": (("s", "i", "s"), "VARCHAR"),
    "replace": (("s", "s", "s"), "VARCHAR"),
    "regexp_replace": (("s", "c", "s", "c?"), "VARCHAR"), "regexp_extract": (("s", "c", "i?"), "VARCHAR"),
    "regexp_matches": (("s", "c", "c?"), "BOOLEAN"), "regexp_full_match": (("s", "c"), "BOOLEAN"),
    "starts_with": (("s", "s"), "BOOLEAN"), "contains": (("s", "s"), "BOOLEAN"),
    "ends_with": (("s", "s"), "BOOLEAN"), "split_part": (("s", "s", "i"), "VARCHAR"),
}

_DATE_PARTS_BIGINT = frozenset("year month day hour minute second dow isodow doy week quarter decade century "
                               "millennium yearweek isoyear".split())
_DATE_PARTS_DOUBLE = frozenset({"epoch", "julian"})
_PART_FUNCS = frozenset({"year", "month", "day", "hour", "minute", "second", "quarter", "dayofweek", "dayofyear",
                         "week", "isodow"})
_TRUNC_PARTS = frozenset("millennium century decade year quarter month week day hour minute second".split())
AGGREGATES = frozenset({"count", "sum", "min", "max", "avg", "mean", "string_agg", "any_value", "bool_and",
                        "bool_or", "first", "last"})
_OTHER_FUNCS = frozenset({"concat", "strptime", "try_strptime", "strftime", "date_trunc", "date_part", "abs",
                          "round", "floor", "ceil", "ceiling", "greatest", "least", "coalesce", "nullif", "ifnull"})
FUNCTIONS = frozenset(_STRING_FUNCS) | _PART_FUNCS | AGGREGATES | _OTHER_FUNCS

# functions that read files, the network, the catalogue or the environment, by name or by prefix
_FORBIDDEN = frozenset({"glob", "query", "query_table", "getenv", "current_setting", "sniff_csv", "read_csv",
                        "read_csv_auto", "read_parquet", "read_json", "read_json_auto", "read_json_objects",
                        "read_ndjson", "read_ndjson_auto", "read_ndjson_objects", "read_text", "read_blob",
                        "read_xlsx", "parquet_scan", "parquet_metadata", "parquet_schema", "parquet_file_metadata",
                        "parquet_kv_metadata", "iceberg_scan", "delta_scan", "sqlite_scan", "postgres_scan",
                        "mysql_scan", "load_aws_credentials", "which_secret", "enable_logging", "disable_logging",
                        "checkpoint", "force_checkpoint", "test_all_types", "repeat_row", "range", "generate_series",
                        "unnest", "json_execute_serialized_sql", "install_extension", "load_extension",
                        "set_variable", "getvariable", "current_database", "current_schema", "version"})
_FORBIDDEN_PREFIXES = ("read_", "duckdb_", "pragma_", "sniff_", "parquet_", "iceberg_", "delta_", "sqlite_",
                       "postgres_", "mysql_", "http", "s3", "arrow_", "json_execute", "system")


def forbidden_function(name: str) -> bool:
    return name in _FORBIDDEN or name.startswith(_FORBIDDEN_PREFIXES) or name.endswith("_scan")


# ------------------------------------------------------------------------------ statement checks

@dataclass(frozen=True)
class Problem:
    code: str
    message: str
    pos: int


# the functions the subset types that read nothing outside the dataset
_SAFE_FUNCTIONS = frozenset(f for f in FUNCTIONS if not forbidden_function(f))


def statement_problems(parsed: P.Statement, sources: Mapping[str, Sequence[str]]) -> list[Problem]:
    """Forbidden functions, unknown functions and tables read that are neither a source nor a WITH query."""
    source_keys = {s.lower() for s in sources}
    if all(f in _SAFE_FUNCTIONS for f in parsed.functions) and all(t.lower() in source_keys for t in parsed.tables):
        return []         # the parser met only sources and known functions: the walk below finds nothing
    out: list[Problem] = []
    names = sorted(sources)

    def walk(node, ctes: frozenset[str]) -> None:
        kind = type(node)
        if kind is tuple:
            for value in node:
                if isinstance(value, (P.Node, tuple)):
                    walk(value, ctes)
            return
        if kind is P.Query:
            visible = set(ctes)
            for cte in node.ctes:
                walk(cte.query, frozenset(visible))
                visible.add(cte.name.lower())
            inner = frozenset(visible)
            walk(node.body, inner)
            for o in node.order_by:
                walk(o, inner)
            return
        if kind is P.TableRef:
            key = node.name.lower()
            if key not in ctes and key not in source_keys:
                listed = ", ".join(names) if names else "none"
                out.append(Problem("TRANSFORM_SQL_UNKNOWN_TABLE",
                                   f"{node.name!r} is not a source of the dataset (its sources: {listed})", node.pos))
            return
        if kind is P.Func:
            if forbidden_function(node.name):
                out.append(Problem("TRANSFORM_SQL_FORBIDDEN",
                                   f"the function {node.name}() reads outside the dataset (files, network, "
                                   "catalogue or environment); a table reads only the dataset's sources", node.pos))
            elif node.name not in FUNCTIONS:
                out.append(Problem("TRANSFORM_SQL_UNSUPPORTED",
                                   f"the function {node.name}() is outside the typed subset (docs/transform.md "
                                   "lists the functions it knows)", node.pos))
        fields = node.__dict__
        for name in P.child_fields(kind):
            value = fields[name]
            if isinstance(value, (P.Node, tuple)):
                walk(value, ctes)

    walk(parsed.query, frozenset())
    return out


# ------------------------------------------------------------------------------------- scopes

@dataclass
class Rel:
    alias: str                       # as written (or the table's name)
    columns: Sequence[tuple[str, T]]     # never changed once the Rel is made (a source's is shared)
    hidden: set[str] = field(default_factory=set)    # right-hand USING columns, lower case
    _by_key: dict[str, list[tuple[str, T]]] | None = field(default=None, repr=False)

    def named(self, key: str) -> list[tuple[str, T]]:
        """The columns whose lower-case name is `key`, in column order (resolving a column reference
        would otherwise lower-case every column of every table read, for each reference)."""
        index = self._by_key
        if index is None:
            index = self._by_key = {}
            for c, t in self.columns:
                index.setdefault(c.lower(), []).append((c, t))
        return index.get(key, [])


@lru_cache(maxsize=1024)
def _source_relation(names: tuple[str, ...]) -> tuple[tuple[tuple[str, T], ...], dict[str, list[tuple[str, T]]]]:
    """A source's columns as a relation (every one VARCHAR, PROV-16) and their index by lower-case
    name, made once per column list: a dataset's tables read the same sources again and again.
    Shared by every Rel of those columns, so neither is ever changed."""
    columns = tuple((c, _VARCHAR) for c in names)
    index: dict[str, list[tuple[str, T]]] = {}
    for c, t in columns:
        index.setdefault(c.lower(), []).append((c, t))
    return columns, index


class OutColumn(NamedTuple):
    """One result column as the typer gives it (immutable; a tuple, made once per column)."""
    name: str
    type: str
    pos: int                         # where its select item (or the * that gave it) starts
    expr_text: str                   # the expression as written (for a fix)
    cast_operand: str | None         # the operand when the item is a cast (a fix recasts that)


@dataclass
class _Col:
    name: str
    t: T
    item: P.Item
    expr_text: str
    cast_operand: str | None
    key: tuple | None                # the resolved column key of a star column


class _Ctx:
    def __init__(self, sql: str, sources: Mapping[str, Sequence[str]]):
        self.sql = sql
        self.sources = {k.lower(): (k, tuple(v)) for k, v in sources.items()}
        self.may_aggregate = True


def quote_ident(name: str) -> str:
    simple = name and (name[0].isalpha() or name[0] == "_") and all(c.isalnum() or c == "_" for c in name) \
        and name.isascii() and name == name.lower() and name not in P.RESERVED
    return name if simple else '"' + name.replace('"', '""') + '"'


def first_select(query: P.Query) -> P.Select:
    body = query.body
    while isinstance(body, P.SetOp):
        body = body.left
    return body


@dataclass(frozen=True)
class Origin:
    """Where a result column comes from, for a finding's position and its fix."""
    pos: int                          # where its select item (or the * that gave it) starts
    expr_text: str                    # the expression as written
    cast_operand: str | None = None   # when the item is a cast, its operand: the fix recasts that


def origin_of(sql: str, item: P.Item) -> Origin:
    """The origin of a non-star select item."""
    e = item.expr
    operand = sql[e.expr.pos:e.expr.end] if isinstance(e, P.Cast) else None
    return Origin(item.pos, sql[e.pos:e.end], operand)


def infer(query: P.Query, sources: Mapping[str, Sequence[str]], sql: str | None = None,
          functions: Sequence[str] | None = None) -> list[OutColumn]:
    """The result columns of `query`; `functions`, the names the parser met (Statement.functions),
    lets a statement that calls no aggregate skip looking for one in each select item."""
    ctx = _Ctx(sql or "", sources)
    ctx.may_aggregate = functions is None or any(f in AGGREGATES for f in functions)
    cols = _Typer(ctx, sql or "").query(query, {})
    return [OutColumn(c.name, c.t.name if c.t.name != NULL else '"NULL"', c.item.pos, c.expr_text,
                      c.cast_operand) for c in cols]


class _Typer:
    def __init__(self, ctx: _Ctx, sql: str):
        self.ctx = ctx
        self.sql = sql

    # -- queries
    def query(self, q: P.Query, ctes: dict[str, list[tuple[str, T]]]) -> list[_Col]:
        ctes = dict(ctes)
        for cte in q.ctes:
            cols = self.query(cte.query, ctes)
            ctes[cte.name.lower()] = _dedupe([(c.name, c.t.plain()) for c in cols])
        if isinstance(q.body, P.SetOp):
            branches = []
            self._branches(q.body, branches)
            typed = [self.select(b, ctes, (), named=k == 0) for k, b in enumerate(branches)]
            first = typed[0][0]
            for k, (cols, _) in enumerate(typed[1:], 1):
                if len(cols) != len(first):
                    raise _type_error(f"the UNION ALL branches give {len(first)} and {len(cols)} columns",
                                      branches[k])
            out = []
            for j, col in enumerate(first):
                try:
                    t = unify([cols[j].t.plain() for cols, _ in typed], branches[1], "UNION ALL")
                except TypeFailure as e:
                    # DuckDB's UNION ALL makes VARCHAR of VARCHAR and a number; the subset asks for the cast
                    raise _unsupported(f"UNION ALL of different kinds in column {j + 1} ({e.message})",
                                       branches[1]) from None
                out.append(_Col(col.name, t.plain(), col.item, col.expr_text, col.cast_operand, None))
            for o in q.order_by:
                self._order_setop(o, out)
            return out
        cols, scope = self.select(q.body, ctes, q.order_by)
        return cols

    def _branches(self, node, out):
        if isinstance(node, P.SetOp):
            self._branches(node.left, out)
            self._branches(node.right, out)
        else:
            out.append(node)

    def _order_setop(self, o: P.OrderItem, out: list[_Col]) -> None:
        e = o.expr
        if isinstance(e, P.Literal) and e.kind == "integer":
            if not 1 <= int(e.value) <= len(out):
                raise _type_error(f"ORDER BY {e.value} is out of range (1 to {len(out)})", e)
            return
        if isinstance(e, P.Column) and len(e.parts) == 1 and any(c.name.lower() == e.parts[0].lower() for c in out):
            return
        raise _unsupported("ORDER BY after UNION ALL with anything but a result column's name or position", e)

    # -- FROM
    def from_(self, node, ctes) -> list[Rel]:
        if node is None:
            return []
        if isinstance(node, P.TableRef):
            key = node.name.lower()
            if key in ctes:
                cols = list(ctes[key])
            elif key in self.ctx.sources:
                cols, index = _source_relation(self.ctx.sources[key][1])
                return [Rel(node.alias or node.name, cols, _by_key=index)]
            else:
                raise TypeFailure("TRANSFORM_SQL_UNKNOWN_TABLE", f"{node.name!r} is not a source of the dataset",
                                  node.pos)
            return [Rel(node.alias or node.name, cols)]
        if isinstance(node, P.SubqueryRef):
            cols = self.query(node.query, ctes)
            return [Rel(node.alias or "unnamed_subquery", _dedupe([(c.name, c.t.plain()) for c in cols]))]
        if isinstance(node, P.Join):
            left = self.from_(node.left, ctes)
            right = self.from_(node.right, ctes)
            seen = {r.alias.lower() for r in left}
            for r in right:
                if r.alias.lower() in seen:
                    raise TypeFailure("TRANSFORM_SQL_UNKNOWN_TABLE",
                                      f"two tables are named {r.alias!r} in FROM; give one an alias (AS …)", node.pos)
                seen.add(r.alias.lower())
            rels = left + right
            if node.on is not None:
                t = self.expr(node.on, _Scope(rels, None, "ON"))
                self._boolean(t, node.on, "ON")
            if node.using is not None:
                if node.kind in ("right", "full"):
                    raise _unsupported(f"{node.kind.upper()} JOIN … USING (write ON instead)", node)
                for name, pos in node.using:
                    lkey = name.lower()
                    lhits = [r for r in left if any(c.lower() == lkey for c, _ in r.columns) and lkey not in r.hidden]
                    rhits = [r for r in right if any(c.lower() == lkey for c, _ in r.columns) and lkey not in r.hidden]
                    if len(lhits) != 1 or len(rhits) != 1:
                        raise TypeFailure("TRANSFORM_SQL_UNKNOWN_COLUMN",
                                          f"USING ({name}) needs the column on each side of the join exactly once",
                                          pos)
                    lt = next(t for c, t in lhits[0].columns if c.lower() == lkey)
                    rt = next(t for c, t in rhits[0].columns if c.lower() == lkey)
                    comparable(lt, rt, node, "USING")
                    if lt.name != rt.name:
                        raise _unsupported(f"USING over columns of two types ({lt.name}, {rt.name})", node)
                    rhits[0].hidden.add(lkey)
            return rels
        raise _unsupported("this FROM item", node)

    # -- SELECT
    def select(self, s: P.Select, ctes, order_by, named: bool = True) -> tuple[list[_Col], "_Scope"]:
        """The columns of one SELECT; `named` is false for a later UNION ALL branch, whose names DuckDB
        ignores (the first branch names the result)."""
        rels = self.from_(s.from_, ctes)
        scope = _Scope(rels, s, "SELECT")
        aliases = {it.alias.lower(): it for it in s.items if it.alias}
        scope.aliases = aliases
        cols: list[_Col] = []
        for it in s.items:
            if isinstance(it.expr, P.Star):
                cols.extend(self._star(it, rels))
                continue
            if type(it.expr) is P.Column:
                # resolved once for its type and its own name (the SELECT clause never reads aliases)
                _, t, own = scope.resolve(it.expr, self)
                name = it.alias if it.alias is not None else own
            else:
                t = self.expr(it.expr, scope)
                name = it.alias
            if name is None and not named:
                name = ""
            elif name is None:
                raise TypeFailure("TRANSFORM_SQL_UNNAMED_COLUMN",
                                  f"the select item {self._text(it.expr)!r} has no name; write "
                                  f"{self._text(it.expr)} as <column name>", it.pos)
            operand = self._text(it.expr.expr) if isinstance(it.expr, P.Cast) else None
            cols.append(_Col(name, t.plain(), it, self._text(it.expr), operand, None))
        if s.where is not None:
            w = _Scope(rels, s, "WHERE")
            w.aliases = aliases
            self._boolean(self.expr(s.where, w), s.where, "WHERE")
        keys = []
        for g in s.group_by:
            g_expr = g
            if isinstance(g, P.Literal) and g.kind == "integer":
                k = int(g.value)
                if not 1 <= k <= len(s.items) or isinstance(s.items[k - 1].expr, P.Star):
                    raise _type_error(f"GROUP BY {k} does not name a select item", g)
                g_expr = s.items[k - 1].expr
            elif isinstance(g, P.Column) and len(g.parts) == 1 and not scope.has(g.parts[0]) \
                    and g.parts[0].lower() in aliases:
                g_expr = aliases[g.parts[0].lower()].expr
            self.expr(g_expr, _Scope(rels, s, "GROUP BY", aliases=aliases))
            keys.append(self.key(g_expr, scope))
        aggregated = bool(s.group_by) or s.having is not None or self.ctx.may_aggregate and any(
            _has_agg(it.expr) for it in s.items if not isinstance(it.expr, P.Star))
        if s.having is not None:
            h = _Scope(rels, s, "HAVING")
            self._boolean(self.expr(s.having, h), s.having, "HAVING")
        if aggregated:
            for it in s.items:
                if isinstance(it.expr, P.Star):
                    for c in cols:
                        if c.item is it and c.key not in keys:
                            raise TypeFailure("TRANSFORM_SQL_AGGREGATE",
                                              f"the column {c.name!r} of * must appear in GROUP BY or inside an "
                                              "aggregate", it.pos)
                else:
                    self._grouped(it.expr, keys, scope)
            if s.having is not None:
                self._grouped(s.having, keys, scope)
        for o in order_by:
            e = o.expr
            if isinstance(e, P.Literal) and e.kind == "integer":
                if not 1 <= int(e.value) <= len(cols):
                    raise _type_error(f"ORDER BY {e.value} is out of range (1 to {len(cols)})", e)
                continue
            if isinstance(e, P.Column) and len(e.parts) == 1 and not scope.has(e.parts[0]) \
                    and any(c.name.lower() == e.parts[0].lower() for c in cols):
                continue
            if isinstance(e, P.Column) and len(e.parts) == 1 and e.parts[0].lower() in aliases:
                continue
            o_scope = _Scope(rels, s, "ORDER BY", aliases=aliases)
            o_scope.aggregates_allowed = aggregated
            self.expr(e, o_scope)
            if aggregated:
                self._grouped(e, keys, scope)
        return cols, scope

    def _star(self, it: P.Item, rels: list[Rel]) -> list[_Col]:
        star = it.expr
        if star.qualifier is not None:
            chosen = [r for r in rels if r.alias.lower() == star.qualifier.lower()]
            if not chosen:
                raise TypeFailure("TRANSFORM_SQL_UNKNOWN_TABLE",
                                  f"{star.qualifier}.* names no table of this FROM", star.pos)
            hide = False
        else:
            if not rels:
                raise _type_error("SELECT * without FROM", star)
            chosen, hide = rels, True
        out = []
        for r in chosen:
            idx = rels.index(r)
            for name, t in r.columns:
                if hide and name.lower() in r.hidden:
                    continue
                prefix = quote_ident(star.qualifier) + "." if star.qualifier else ""
                out.append(_Col(name, t.plain(), it, prefix + quote_ident(name), None, ("col", idx, name.lower())))
        return out

    def _text(self, node: P.Node) -> str:
        return self.sql[node.pos:node.end]

    def _boolean(self, t: T, node: P.Node, where: str) -> None:
        if t.name not in ("BOOLEAN", NULL):
            raise _unsupported(f"a {where} condition of type {t.name} (write a comparison)", node)

    # -- grouping
    def key(self, e: P.Node, scope: "_Scope"):
        if isinstance(e, P.Column):
            idx, _, name = scope.resolve(e)
            return ("col", idx, name.lower())
        if isinstance(e, P.Literal):
            return ("lit", e.kind, e.value if e.kind != "string" else "s:" + e.value, e.type)
        if isinstance(e, P.Func):
            return ("func", e.name, e.distinct, e.star, tuple(self.key(a, scope) for a in e.args))
        if isinstance(e, P.Cast):
            return ("cast", e.try_, e.type.name, self.key(e.expr, scope))
        if isinstance(e, P.Case):
            return ("case", self.key(e.operand, scope) if e.operand else None,
                    tuple((self.key(a, scope), self.key(b, scope)) for a, b in e.whens),
                    self.key(e.else_, scope) if e.else_ else None)
        parts = [type(e).__name__]
        for name, value in vars(e).items():
            if name in ("pos", "end"):
                continue
            if isinstance(value, P.Node):
                parts.append(self.key(value, scope))
            elif isinstance(value, tuple):
                parts.append(tuple(self.key(v, scope) if isinstance(v, P.Node) else v for v in value))
            else:
                parts.append(value)
        return tuple(parts)

    def _grouped(self, e: P.Node, keys: list, scope: "_Scope") -> None:
        if isinstance(e, P.Literal):
            return
        if isinstance(e, P.Func) and e.name in AGGREGATES:
            return
        if isinstance(e, P.Column) and len(e.parts) == 1 and not scope.has(e.parts[0]) \
                and e.parts[0].lower() in scope.aliases:
            return          # an ORDER BY on a select alias: the item itself is checked
        if self.key(e, scope) in keys:
            return
        if isinstance(e, P.Column):
            raise TypeFailure("TRANSFORM_SQL_AGGREGATE",
                              f"the column {self._text(e)!r} must appear in GROUP BY or inside an aggregate", e.pos)
        for value in vars(e).values():
            if isinstance(value, P.Node):
                self._grouped(value, keys, scope)
            elif isinstance(value, tuple):
                for v in value:
                    if isinstance(v, P.Node):
                        self._grouped(v, keys, scope)
                    elif isinstance(v, tuple):
                        for w in v:
                            self._grouped(w, keys, scope)

    # -- expressions
    def expr(self, e: P.Node, scope: "_Scope") -> T:
        if isinstance(e, P.Literal):
            return self.literal(e)
        if isinstance(e, P.Column):
            return scope.resolve(e, self)[1]
        if isinstance(e, P.Cast):
            self.expr(e.expr, scope)
            return T(e.type.name)
        if isinstance(e, P.Unary):
            t = self.expr(e.expr, scope)
            if e.op == "not":
                self._boolean_operand(t, e.expr, "NOT")
                return T("BOOLEAN")
            if t.name == NULL:
                raise _unsupported("an untyped NULL as an operand (cast(null as …))", e)
            if not is_num(t):
                raise _type_error(f"{e.op} applied to {t.name}; cast it to a number first", e)
            if t.lit == "int" and e.op == "-":
                return T(t.name, "int", -t.value)
            return t if e.op == "+" else t.plain()
        if isinstance(e, P.Binary):
            return self.binary(e, scope)
        if isinstance(e, P.IsNull):
            self.expr(e.expr, scope)
            return T("BOOLEAN")
        if isinstance(e, P.Like):
            for part in (e.expr, e.pattern):
                t = self.expr(part, scope)
                if not is_text(t):
                    if t.name == NULL:
                        raise _unsupported(f"an untyped NULL in {e.op.upper()}", part)
                    raise _type_error(f"{e.op.upper()} takes strings, not {t.name}; cast it to varchar", part)
            return T("BOOLEAN")
        if isinstance(e, P.InList):
            t = self.expr(e.expr, scope)
            for item in e.items:
                comparable(t, self.expr(item, scope), item, "IN")
            return T("BOOLEAN")
        if isinstance(e, P.Between):
            t = self.expr(e.expr, scope)
            lo, hi = self.expr(e.low, scope), self.expr(e.high, scope)
            comparable(t, lo, e, "BETWEEN")
            comparable(t, hi, e, "BETWEEN")
            comparable(lo, hi, e, "BETWEEN")
            return T("BOOLEAN")
        if isinstance(e, P.Case):
            if e.operand is not None:
                ot = self.expr(e.operand, scope)
                for cond, _ in e.whens:
                    comparable(ot, self.expr(cond, scope), cond, "CASE … WHEN")
            else:
                for cond, _ in e.whens:
                    self._boolean(self.expr(cond, scope), cond, "WHEN")
            branches = [self.expr(e.else_, scope) if e.else_ is not None else T(NULL)]
            branches.extend(self.expr(v, scope) for _, v in e.whens)
            return unify(branches, e, "CASE").plain()
        if isinstance(e, P.Func):
            return self.func(e, scope)
        if isinstance(e, P.Star):
            raise _unsupported("* here", e)
        raise _unsupported(f"the construct {type(e).__name__}", e)

    def _boolean_operand(self, t: T, node: P.Node, op: str) -> None:
        if t.name not in ("BOOLEAN", NULL):
            raise _unsupported(f"{op} over {t.name} (write a comparison)", node)

    def literal(self, e: P.Literal) -> T:
        if e.kind == "integer":
            v = int(e.value)
            name = int_literal_type(v)
            if name is None:
                raise _unsupported("an integer literal wider than 128 bits", e)
            return T(name, "int", v)
        if e.kind == "decimal":
            whole, _, frac = e.value.partition(".")
            width = len(whole) + len(frac)
            if width > 38 or len(frac) > 38:
                raise _unsupported("a decimal literal of more than 38 digits", e)
            return dec(max(width, 1), len(frac))
        if e.kind == "float":
            return T("DOUBLE")
        if e.kind == "string":
            return T("VARCHAR", "str")
        if e.kind == "boolean":
            return T("BOOLEAN")
        if e.kind == "null":
            return T(NULL)
        if e.kind == "typed":
            return T(e.type)
        raise _unsupported("this literal", e)

    def binary(self, e: P.Binary, scope: "_Scope") -> T:
        a, b = self.expr(e.left, scope), self.expr(e.right, scope)
        op = e.op
        if op in ("and", "or"):
            self._boolean_operand(a, e.left, op.upper())
            self._boolean_operand(b, e.right, op.upper())
            return T("BOOLEAN")
        if op in ("=", "<>", "<", "<=", ">", ">="):
            comparable(a, b, e, f"the comparison {op}")
            return T("BOOLEAN")
        if op == "||":
            if a.name == NULL or b.name == NULL:
                raise _unsupported("an untyped NULL in ||", e)
            return T("VARCHAR")
        for side, t in ((e.left, a), (e.right, b)):
            if t.name == NULL:
                raise _unsupported("an untyped NULL as an operand (cast(null as …))", side)
            if is_text(t) or t.name == "BOOLEAN":
                raise _type_error(f"{op} applied to {t.name}; cast it to a number first "
                                  f"(cast({self._text(side)} as integer))", side)
        if a.name in TEMPORAL or b.name in TEMPORAL:
            if a.name == "DATE" and b.name in ("TINYINT", "SMALLINT", "INTEGER") and op in ("+", "-"):
                # DuckDB adds days as INTEGER: a BIGINT or HUGEINT (or a literal past 2^31) has no `+`
                return T("DATE")
            if a.name == "DATE" and b.name == "DATE" and op == "-":
                return T("BIGINT")
            raise _unsupported(f"{op} over {a.name} and {b.name}", e)
        if op == "/":
            if "DOUBLE" in (a.name, b.name):
                return T("DOUBLE")
            if "FLOAT" in (a.name, b.name):
                return T("FLOAT")
            return T("DOUBLE")
        if "DOUBLE" in (a.name, b.name):
            return T("DOUBLE")
        if "FLOAT" in (a.name, b.name):
            return T("FLOAT")
        if is_int(a) and is_int(b):
            return _int_max(a, b)
        # a decimal on at least one side
        if op == "//":
            return T("DOUBLE")
        (p1, s1), (p2, s2) = dec_of(a), dec_of(b)
        if op in ("+", "-"):
            s = max(s1, s2)
            return dec(max(p1 - s1, p2 - s2) + s + 1, s)
        if op == "*":
            s = s1 + s2
            if s > 38:
                raise _type_error("a decimal product with a scale above 38", e)
            # DuckDB multiplies two decimals that fit 64 bits in 64 bits: the width stops at 18
            return dec(min(p1 + p2, 18) if p1 <= 18 and p2 <= 18 else p1 + p2, s)
        if op == "%":
            # the common decimal type, but DuckDB falls back to DOUBLE (it does not cap) past 38 digits
            s = max(s1, s2)
            return T("DOUBLE") if max(p1 - s1, p2 - s2) + s > 38 else _dec_max([a, b])
        raise _unsupported(f"the operator {op}", e)

    def func(self, e: P.Func, scope: "_Scope") -> T:
        name = e.name
        if name in AGGREGATES:
            if not scope.aggregates_allowed:
                raise TypeFailure("TRANSFORM_SQL_AGGREGATE", f"an aggregate ({name}) in {scope.clause}", e.pos)
            if scope.inside_aggregate:
                raise TypeFailure("TRANSFORM_SQL_AGGREGATE", f"an aggregate ({name}) inside another aggregate",
                                  e.pos)
            inner = scope.child(inside_aggregate=True)
            return self.aggregate(e, inner)
        if e.distinct or e.star:
            raise _unsupported(f"{'DISTINCT' if e.distinct else '*'} in {name}()", e)
        args = [self.expr(a, scope) for a in e.args]
        if name in _STRING_FUNCS:
            kinds, result = _STRING_FUNCS[name]
            need = [k for k in kinds if not k.endswith("?")]
            if not len(need) <= len(args) <= len(kinds):
                raise _type_error(f"{name}() takes {len(need)} to {len(kinds)} arguments, not {len(args)}", e)
            for k, (kind, t, node) in enumerate(zip(kinds, args, e.args)):
                kind = kind.rstrip("?")
                if t.name == NULL:
                    raise _unsupported(f"an untyped NULL as an argument of {name}()", node)
                if kind in ("s", "c") and not is_text(t):
                    raise _type_error(f"{name}() takes a string as argument {k + 1}, not {t.name}; "
                                      f"cast it to varchar", node)
                if kind == "c" and not (isinstance(node, P.Literal) and node.kind == "string"):
                    raise _unsupported(f"a pattern of {name}() that is not a string literal", node)
                if kind == "i" and not is_int(t):
                    raise _type_error(f"{name}() takes an integer as argument {k + 1}, not {t.name}", node)
            return T(result)
        if name in _PART_FUNCS:
            self._arity(e, args, 1, 1)
            if args[0].name not in TEMPORAL:
                raise _type_error(f"{name}() takes a date or timestamp, not {args[0].name}", e.args[0])
            return T("BIGINT")
        if name == "concat":
            if not args:
                raise _type_error("concat() needs an argument", e)
            return T("VARCHAR")
        if name in ("strptime", "try_strptime"):
            self._arity(e, args, 2, 2)
            if not is_text(args[0]) or args[0].name == NULL:
                raise _type_error(f"{name}() parses a string, not {args[0].name}", e.args[0])
            fmt = e.args[1]
            if not (isinstance(fmt, P.Literal) and fmt.kind == "string"):
                raise _unsupported(f"a {name}() format that is not a string literal", fmt)
            return T("TIMESTAMP WITH TIME ZONE" if ("%z" in fmt.value or "%Z" in fmt.value) else "TIMESTAMP")
        if name == "strftime":
            self._arity(e, args, 2, 2)
            if args[0].name not in TEMPORAL or not is_text(args[1]):
                raise _unsupported("strftime() other than strftime(date or timestamp, format)", e)
            return T("VARCHAR")
        if name in ("date_trunc", "date_part"):
            self._arity(e, args, 2, 2)
            part = e.args[0]
            if not (isinstance(part, P.Literal) and part.kind == "string"):
                raise _unsupported(f"a {name}() part that is not a string literal", part)
            if args[1].name not in TEMPORAL:
                raise _type_error(f"{name}() takes a date or timestamp, not {args[1].name}", e.args[1])
            p = part.value.lower()
            if name == "date_trunc":
                if p not in _TRUNC_PARTS:
                    raise _unsupported(f"date_trunc part {part.value!r}", part)
                return T("TIMESTAMP WITH TIME ZONE" if args[1].name == "TIMESTAMP WITH TIME ZONE" else "TIMESTAMP")
            if p in _DATE_PARTS_BIGINT:
                return T("BIGINT")
            if p in _DATE_PARTS_DOUBLE:
                return T("DOUBLE")
            raise _unsupported(f"date part {part.value!r}", part)
        if name == "abs":
            self._arity(e, args, 1, 1)
            t = self._numeric(args[0], e.args[0], name)
            return t.plain()
        if name == "round":
            self._arity(e, args, 1, 2)
            t = self._numeric(args[0], e.args[0], name)
            digits = None
            if len(args) == 2:
                d = e.args[1]
                if not (isinstance(d, P.Literal) and d.kind == "integer"):
                    raise _unsupported("round() with digits that are not a whole-number literal", d)
                digits = int(d.value)
            if is_dec(t):
                p, s = dec_of(t)
                return dec(p, s if digits is not None and digits >= s else max(digits or 0, 0))
            return t.plain()
        if name in ("floor", "ceil", "ceiling"):
            self._arity(e, args, 1, 1)
            t = self._numeric(args[0], e.args[0], name)
            if is_dec(t):
                return dec(dec_of(t)[0], 0)
            if is_int(t):
                return T("DOUBLE")
            return t.plain()
        if name in ("greatest", "least", "coalesce", "ifnull"):
            if not args or (name == "ifnull" and len(args) != 2):
                raise _type_error(f"{name}() takes {'two arguments' if name == 'ifnull' else 'arguments'}", e)
            if name in ("greatest", "least") and any(t.name == NULL for t in args):
                raise _unsupported(f"an untyped NULL as an argument of {name}()", e)
            return unify(args, e, f"{name.upper()}()").plain()
        if name == "nullif":
            self._arity(e, args, 2, 2)
            comparable(args[0], args[1], e, "NULLIF")
            return args[0].plain() if args[0].lit != "str" else T("VARCHAR")
        raise _unsupported(f"the function {name}()", e)

    def _arity(self, e: P.Func, args, low: int, high: int) -> None:
        if not low <= len(args) <= high:
            raise _type_error(f"{e.name}() takes {low}{'' if low == high else f' to {high}'} arguments, "
                              f"not {len(args)}", e)

    def _numeric(self, t: T, node: P.Node, name: str) -> T:
        if t.name == NULL:
            raise _unsupported(f"an untyped NULL as an argument of {name}()", node)
        if not is_num(t):
            raise _type_error(f"{name}() takes a number, not {t.name}; cast it first "
                              f"(cast({self._text(node)} as integer))", node)
        return t

    def aggregate(self, e: P.Func, scope: "_Scope") -> T:
        name = e.name
        if name == "count":
            if e.star:
                return T("BIGINT")
            self._arity(e, e.args, 1, 1)
            self.expr(e.args[0], scope)
            return T("BIGINT")
        if e.star:
            raise _unsupported(f"{name}(*)", e)
        args = [self.expr(a, scope) for a in e.args]
        if name == "string_agg":
            self._arity(e, args, 1, 2)
            if not is_text(args[0]):
                raise _unsupported(f"string_agg() of {args[0].name} (cast it to varchar)", e.args[0])
            if len(args) == 2 and not (isinstance(e.args[1], P.Literal) and e.args[1].kind == "string"):
                raise _type_error("the separator of string_agg() must be a string literal", e.args[1])
            return T("VARCHAR")
        self._arity(e, args, 1, 1)
        t = args[0]
        if name in ("min", "max", "any_value", "first", "last"):
            return t.plain() if t.lit != "str" else T("VARCHAR")
        if name in ("bool_and", "bool_or"):
            if t.name != "BOOLEAN":
                raise _unsupported(f"{name}() of {t.name}", e.args[0])
            return T("BOOLEAN")
        if t.name == NULL:
            raise _unsupported(f"an untyped NULL as the argument of {name}()", e.args[0])
        if not is_num(t):
            raise _type_error(f"{name}() takes a number, not {t.name}; cast it first "
                              f"(cast({self._text(e.args[0])} as integer))", e.args[0])
        if name == "sum":
            if is_int(t):
                return T("HUGEINT")
            if is_dec(t):
                return dec(38, dec_of(t)[1])
            return T("DOUBLE")
        return T("DOUBLE")     # avg, mean


def _has_agg(e) -> bool:
    kind = type(e)
    if kind is P.Column or kind is P.Literal:
        return False              # most select items: no children to look into
    if kind is tuple:
        values = e
    elif kind is P.Func and e.name in AGGREGATES:
        return True
    elif isinstance(e, P.Node):
        fields = e.__dict__
        values = [fields[name] for name in P.child_fields(kind)]
    else:
        return False
    for v in values:
        if isinstance(v, (P.Node, tuple)) and _has_agg(v):
            return True
    return False


def _dedupe(cols: list[tuple[str, T]]) -> list[tuple[str, T]]:
    """A query's columns as a relation: a repeated name becomes name_1, name_2 (as DuckDB does)."""
    seen: set[str] = set()
    out = []
    for name, t in cols:
        new, k = name, 0
        while new.lower() in seen:
            k += 1
            new = f"{name}_{k}"
        seen.add(new.lower())
        out.append((new, t))
    return out


class _Scope:
    def __init__(self, rels: list[Rel], select: P.Select | None, clause: str, aliases=None):
        self.rels = rels
        self.select = select
        self.clause = clause
        self.aliases = aliases or {}
        self.aggregates_allowed = clause in ("SELECT", "HAVING")
        self.inside_aggregate = False

    def child(self, inside_aggregate: bool) -> "_Scope":
        s = _Scope(self.rels, self.select, self.clause, self.aliases)
        s.aggregates_allowed = self.aggregates_allowed
        s.inside_aggregate = inside_aggregate
        return s

    def has(self, name: str) -> bool:
        key = name.lower()
        return any(r.named(key) for r in self.rels)

    def resolve(self, col: P.Column, typer: "_Typer | None" = None) -> tuple[int, T, str]:
        """(relation index, type, the column's own name) of a column reference."""
        if len(col.parts) == 2:
            q, name = col.parts
            rels = [(k, r) for k, r in enumerate(self.rels) if r.alias.lower() == q.lower()]
            if not rels:
                raise TypeFailure("TRANSFORM_SQL_UNKNOWN_COLUMN",
                                  f"{q}.{name}: no table of this FROM is named {q!r} "
                                  f"(its tables: {', '.join(r.alias for r in self.rels) or 'none'})", col.pos)
            k, r = rels[0]
            for c, t in r.columns:
                if c.lower() == name.lower():
                    return k, t, c
            raise TypeFailure("TRANSFORM_SQL_UNKNOWN_COLUMN",
                              f"{q}.{name}: {r.alias!r} has no column {name!r} "
                              f"(its columns: {', '.join(c for c, _ in r.columns)})", col.pos)
        name = col.parts[0]
        key = name.lower()
        if len(self.rels) == 1:
            only = self.rels[0]
            if key not in only.hidden:
                named = only.named(key)
                if len(named) == 1:
                    c, t = named[0]
                    return 0, t, c
        hits = [(k, c, t) for k, r in enumerate(self.rels) if key not in r.hidden for c, t in r.named(key)]
        if len(hits) == 1:
            k, c, t = hits[0]
            return k, t, c
        if len(hits) > 1:
            where = ", ".join(f"{self.rels[k].alias}.{c}" for k, c, _ in hits)
            raise TypeFailure("TRANSFORM_SQL_UNKNOWN_COLUMN",
                              f"the column {name!r} is ambiguous: qualify it ({where})", col.pos)
        if key in self.aliases and self.clause in ("WHERE", "GROUP BY") and typer is not None:
            item = self.aliases[key]
            if _has_agg(item.expr):
                raise TypeFailure("TRANSFORM_SQL_AGGREGATE",
                                  f"{name!r} names an aggregate select item, which {self.clause} cannot use", col.pos)
            inner = _Scope(self.rels, self.select, self.clause)
            return -1, typer.expr(item.expr, inner), name
        columns = [c for r in self.rels for c, _ in r.columns]
        shown = ", ".join(columns[:40]) + (" …" if len(columns) > 40 else "")
        raise TypeFailure("TRANSFORM_SQL_UNKNOWN_COLUMN",
                          f"no table read here has a column {name!r} (columns: {shown or 'none'})", col.pos)
