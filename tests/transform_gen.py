"""A seeded generator of table SQL over random source layouts, for the differential test (issue 25 point 5).

It draws from the grammar of the typed subset (D-68) and, on purpose, a little outside it and a
little wrong (VARCHAR arithmetic, unknown columns, aggregates out of place), so both directions of
the differential are exercised: what the pure typer accepts DuckDB types identically, and what
DuckDB refuses the typer refuses too.
"""

from __future__ import annotations

import random

from collection.transform.types import DECLARED_TYPES, STORED_AS

PROVENANCE = ["page_id", "page_url", "page_fetched_at", "page_content_sha256", "page_revision",
              "page_discovered_at", "page_ordinal"]
READER_COLUMNS = ["title", "story", "price", "amount", "Published", "tag", "url", "body", "Name", "count_", "date", "year",
                  "order", "value", "Two Words"]
SOURCE_NAMES = ["council_decisions", "notices", "prices", "Events"]

CAST_TYPES = ["integer", "bigint", "smallint", "tinyint", "double", "float", "real", "varchar", "text", "boolean",
              "date", "timestamp", "timestamp with time zone", "timestamptz", "decimal(10,2)", "decimal(5)",
              "numeric(18,3)", "decimal", "int", "hugeint"]
STRING_FUNCS1 = ["lower", "upper", "trim", "ltrim", "rtrim", "reverse", "md5", "length"]


def layout(rng: random.Random) -> dict[str, list[str]]:
    n = rng.choice([1, 1, 2, 2, 3])
    names = rng.sample(SOURCE_NAMES, n)
    out = {}
    for name in names:
        cols = rng.sample(READER_COLUMNS, rng.randint(1, 4))
        out[name] = cols + PROVENANCE
    return out


class Gen:
    def __init__(self, rng: random.Random, sources: dict[str, list[str]]):
        self.rng = rng
        self.sources = sources

    def pick(self, seq):
        return self.rng.choice(seq)

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    # -- expressions over the columns in `cols` (list of (qualifier or None, name))
    def col(self, cols) -> str:
        if self.chance(0.03):
            return "no_such_column"
        q, name = self.pick(cols)
        text = name if (name.islower() and self.chance(0.9)) or self.chance(0.5) else f'"{name}"'
        if not name.islower() and not text.startswith('"'):
            text = name.upper() if self.chance(0.3) else name
        return f"{q}.{text}" if q else text

    def literal(self) -> str:
        r = self.rng.random()
        if r < 0.25:
            return str(self.pick([0, 1, 2, 7, 42, 127, 128, 300, 32767, 40000, 2147483647, 3000000000,
                                  9223372036854775807, 99999999999999999999, -1, -200]))
        if r < 0.4:
            return self.pick(["1.5", "0.5", ".25", "123.456", "00.5", "2.50", "1e3", "1.5e-2"])
        if r < 0.6:
            return self.pick(["'x'", "'2024-01-02'", "'it''s'", "''", "'42'"])
        if r < 0.7:
            return self.pick(["true", "false"])
        if r < 0.78:
            return "null"
        return self.pick(["date '2024-01-02'", "timestamp '2024-01-02 03:04:05'",
                          "timestamptz '2024-01-02 03:04:05+00'", "timestamp with time zone '2024-01-02'"])

    def cast(self, cols, depth) -> str:
        inner = self.expr(cols, depth + 1) if self.chance(0.3) else self.col(cols)
        ty = self.pick(CAST_TYPES)
        form = self.rng.random()
        if form < 0.5:
            return f"cast({inner} as {ty})"
        if form < 0.75:
            return f"try_cast({inner} as {ty})"
        if " " in inner or "(" in inner:
            inner = f"({inner})"
        return f"{inner}::{ty}"

    def numeric(self, cols, depth) -> str:
        r = self.rng.random()
        if r < 0.4:
            return f"cast({self.col(cols)} as {self.pick(['integer', 'bigint', 'double', 'decimal(10,2)', 'smallint', 'tinyint', 'float'])})"
        if r < 0.7:
            return self.pick(["1", "2", "300", "1.5", "0.25", "3000000000", "2.0e0"])
        return self.expr(cols, depth + 1)

    def temporal(self, cols) -> str:
        return self.pick([f"cast({self.col(cols)} as date)", f"cast({self.col(cols)} as timestamp)",
                          f"cast({self.col(cols)} as timestamp with time zone)", "date '2024-01-02'",
                          f"strptime({self.col(cols)}, '%Y-%m-%d')", f"strptime({self.col(cols)}, '%Y-%m-%d %z')",
                          "timestamptz '2024-01-02 00:00:00+00'"])

    def expr(self, cols, depth: int = 0) -> str:
        if depth > 3:
            return self.col(cols) if self.chance(0.6) else self.literal()
        r = self.rng.random()
        if r < 0.12:
            return self.col(cols)
        if r < 0.2:
            return self.literal()
        if r < 0.35:
            return self.cast(cols, depth)
        if r < 0.47:
            op = self.pick(["+", "-", "*", "/", "//", "%"])
            return f"({self.numeric(cols, depth)} {op} {self.numeric(cols, depth)})"
        if r < 0.5:
            return f"({self.col(cols)} {self.pick(['+', '*'])} 1)"          # VARCHAR arithmetic: refused
        if r < 0.55:
            return f"({self.expr(cols, depth + 1)} || {self.pick([self.col(cols), repr('-')])})"
        if r < 0.62:
            return self.predicate(cols, depth)
        if r < 0.7:
            whens = " ".join(f"when {self.predicate(cols, depth + 1)} then {self.branch(cols, depth)}"
                             for _ in range(self.rng.randint(1, 2)))
            tail = f" else {self.branch(cols, depth)}" if self.chance(0.6) else ""
            if self.chance(0.25):
                return f"case {self.col(cols)} when 'a' then {self.branch(cols, depth)} when 'b' then " \
                       f"{self.branch(cols, depth)}{tail} end"
            return f"case {whens}{tail} end"
        if r < 0.76:
            f = self.pick(["coalesce", "greatest", "least", "nullif", "ifnull"])
            n = 2 if f in ("nullif", "ifnull") else self.rng.randint(1, 3)
            return f"{f}({', '.join(self.branch(cols, depth) for _ in range(n))})"
        if r < 0.86:
            return self.string_func(cols, depth)
        if r < 0.93:
            return self.number_func(cols, depth)
        return self.date_func(cols)

    def branch(self, cols, depth) -> str:
        r = self.rng.random()
        if r < 0.3:
            return self.col(cols)
        if r < 0.55:
            return self.literal()
        if r < 0.8:
            return self.cast(cols, depth + 1)
        return self.numeric(cols, depth + 1)

    def predicate(self, cols, depth) -> str:
        r = self.rng.random()
        c = self.col(cols)
        if r < 0.2:
            return f"{c} {self.pick(['=', '<>', '<', '>=', '!='])} {self.pick([repr('x'), self.col(cols), '1', 'null'])}"
        if r < 0.3:
            return f"{self.numeric(cols, depth)} {self.pick(['=', '<', '>'])} {self.numeric(cols, depth)}"
        if r < 0.4:
            return f"{c} is {self.pick(['', 'not '])}null"
        if r < 0.5:
            return f"{c} {self.pick(['like', 'ilike', 'not like'])} {self.pick([repr('%a%'), '1', self.col(cols)])}"
        if r < 0.6:
            return f"{c} {self.pick(['in', 'not in'])} ({', '.join(self.pick([repr('a'), repr('b'), '1']) for _ in range(2))})"
        if r < 0.7:
            return f"{self.numeric(cols, depth)} between {self.numeric(cols, depth)} and {self.numeric(cols, depth)}"
        if r < 0.8:
            return f"not ({self.predicate(cols, depth + 1)})"
        if r < 0.9:
            return f"({self.predicate(cols, depth + 1)} {self.pick(['and', 'or'])} {self.predicate(cols, depth + 1)})"
        return f"{self.temporal(cols)} {self.pick(['<', '='])} {self.temporal(cols)}"

    def string_func(self, cols, depth) -> str:
        c = self.col(cols) if self.chance(0.8) else self.branch(cols, depth)
        r = self.rng.random()
        if r < 0.3:
            return f"{self.pick(STRING_FUNCS1)}({c})"
        if r < 0.45:
            return f"substr({c}, {self.pick(['1', '2', '1.5', 'cast(1 as bigint)'])}{self.pick(['', ', 3'])})"
        if r < 0.55:
            return f"replace({c}, 'a', 'b')"
        if r < 0.65:
            return f"regexp_replace({c}, '[0-9]+', ''{self.pick(['', ', ' + repr('g')])})"
        if r < 0.72:
            return f"regexp_extract({c}, '([0-9]+)'{self.pick(['', ', 1'])})"
        if r < 0.78:
            return f"regexp_matches({c}, 'a')"
        if r < 0.86:
            return f"concat({c}, {self.branch(cols, depth)})"
        if r < 0.92:
            return f"{self.pick(['left', 'right', 'repeat'])}({c}, 2)"
        return f"split_part({c}, ',', 1)"

    def number_func(self, cols, depth) -> str:
        n = self.numeric(cols, depth)
        f = self.pick(["abs", "round", "floor", "ceil", "round2"])
        if f == "round2":
            return f"round({n}, {self.pick(['0', '1', '2', '3'])})"
        return f"{f}({n})"

    def date_func(self, cols) -> str:
        t = self.temporal(cols)
        r = self.rng.random()
        if r < 0.3:
            return f"date_trunc('{self.pick(['day', 'month', 'year', 'hour'])}', {t})"
        if r < 0.6:
            return f"extract({self.pick(['year', 'month', 'epoch', 'dow'])} from {t})"
        if r < 0.8:
            return f"strftime({t}, '%Y')"
        return f"{self.pick(['year', 'month', 'day'])}({t})"

    def aggregate(self, cols, depth) -> str:
        r = self.rng.random()
        if r < 0.2:
            return "count(*)"
        if r < 0.35:
            return f"count({self.pick(['distinct ', ''])}{self.col(cols)})"
        if r < 0.55:
            return f"{self.pick(['sum', 'avg'])}({self.numeric(cols, depth)})"
        if r < 0.6:
            return f"sum({self.col(cols)})"                       # VARCHAR: refused by both
        if r < 0.8:
            return f"{self.pick(['min', 'max', 'any_value'])}({self.branch(cols, depth)})"
        return f"string_agg({self.col(cols)}{self.pick(['', ', ' + repr(',')])})"

    # -- queries
    def from_clause(self):
        names = list(self.sources)
        a = self.pick(names)
        r = self.rng.random()
        if len(names) > 1 and r < 0.35:
            b = self.pick([n for n in names if n != a])
            qa, qb = "l", "r"
            cols = [(qa, c) for c in self.sources[a]] + [(qb, c) for c in self.sources[b]]
            kind = self.pick(["join", "inner join", "left join", "left outer join", "right join", "full join",
                              "cross join"])
            if kind == "cross join":
                return f"{a} as {qa} cross join {b} {qb}", cols
            if self.chance(0.3):
                return f"{a} {qa} {kind} {b} {qb} using (page_id)", cols
            return f"{a} {qa} {kind} {b} {qb} on {qa}.page_id = {qb}.page_id", cols
        if r < 0.45:
            return f"(select * from {a}) sub", [("sub", c) for c in self.sources[a]]
        alias = self.pick([None, None, "s"])
        cols = [(alias if self.chance(0.4) else None, c) for c in self.sources[a]] if alias else \
            [(None if self.chance(0.7) else a, c) for c in self.sources[a]]
        return (f"{a} as {alias}" if alias else a), cols

    def select(self) -> str:
        frm, cols = self.from_clause()
        grouped = self.chance(0.2)
        items = []
        if grouped:
            keys = [self.col(cols) for _ in range(self.rng.randint(0, 2))]
            for k, key in enumerate(keys):
                items.append(key)
            for k in range(self.rng.randint(1, 3)):
                items.append(f"{self.aggregate(cols, 1)} as agg{k}")
            sql = f"select {', '.join(items)} from {frm}"
            if self.chance(0.3):
                sql += f" where {self.predicate(cols, 1)}"
            if keys:
                sql += " group by " + ", ".join(keys if self.chance(0.7) else [str(i + 1) for i in range(len(keys))])
                if self.chance(0.1):
                    sql = sql.replace(" from ", ", page_url as extra from ", 1)   # outside GROUP BY: refused
            if self.chance(0.2):
                sql += " having count(*) > 1"
            return sql
        distinct = "distinct " if self.chance(0.1) else ""
        for k in range(self.rng.randint(1, 5)):
            r = self.rng.random()
            if r < 0.06:
                items.append("*")
            elif r < 0.3:
                items.append(self.col(cols) + (f" as c{k}" if self.chance(0.3) else ""))
            else:
                e = self.expr(cols)
                items.append(e if self.chance(0.04) else f"{e} as {self.pick(['c', 'C', 'value_', 'x'])}{k}")
        sql = f"select {distinct}{', '.join(items)} from {frm}"
        if self.chance(0.3):
            sql += f" where {self.predicate(cols, 1)}"
        if self.chance(0.2):
            sql += f" order by {self.pick(['1', self.col(cols)])}{self.pick(['', ' desc'])}"
        if self.chance(0.1):
            sql += f" limit {self.rng.randint(0, 100)}"
        return sql

    def typed_inner(self) -> tuple[str, list[str]]:
        """A SELECT whose columns are all named (c0, c1, …), most of them typed, for use as a WITH query
        or a subquery: the outer query then works on INTEGER, DECIMAL, DATE … columns, not only VARCHAR."""
        name = self.pick(list(self.sources))
        cols = [(None, c) for c in self.sources[name]]
        items, names = [], []
        for k in range(self.rng.randint(1, 4)):
            e = self.pick([self.cast(cols, 2), self.numeric(cols, 3), self.col(cols), self.temporal(cols),
                           self.predicate(cols, 3), self.literal()])
            items.append(f"{e} as c{k}")
            names.append(f"c{k}")
        return f"select {', '.join(items)} from {name}", names

    def over_inner(self) -> str:
        inner, names = self.typed_inner()
        use_cte = self.chance(0.5)
        cols = [(None, n) for n in names]
        frm = "w" if use_cte else f"({inner}) q"
        r = self.rng.random()
        if r < 0.2:
            body = f"select * from {frm}"
        elif r < 0.45:
            keys = names[:1]
            body = f"select {keys[0]}, {self.aggregate(cols, 2)} as a1, {self.aggregate(cols, 2)} as a2 " \
                   f"from {frm} group by {keys[0]}"
            if self.chance(0.3):
                body += f" order by {self.pick(['a1', '1', 'count(*)', keys[0]])}"
        else:
            items = [f"{self.expr(cols, 1)} as x{k}" for k in range(self.rng.randint(1, 3))]
            body = f"select {', '.join(items)} from {frm}"
            if self.chance(0.4):
                body += f" where {self.predicate(cols, 1)}"
            if self.chance(0.15):
                body += " where x0 is not null" if " where " not in body else " and x0 is not null"
        return f"with w as ({inner}) {body}" if use_cte else body

    def statement(self) -> str:
        r = self.rng.random()
        if r < 0.08:
            a, b = self.select(), self.select()
            return f"{a} union all {b}"
        if r < 0.14:
            a, _ = self.typed_inner()
            b, _ = self.typed_inner()
            if a.count(" as c") == b.count(" as c"):
                return f"{a} union all {b}"
            return f"{a} union all {b}" if self.chance(0.2) else a
        if r < 0.17:
            name = self.pick(list(self.sources))
            inner = f"select {', '.join(self.sources[name][:3])} from {name}"
            return f"with w as ({inner}) select * from w"
        if r < 0.4:
            return self.over_inner()
        return self.select()


def declaration(rng: random.Random, actual: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """A declaration for a result of `actual` (name, engine type) columns, as a recipe author might
    write it: mostly fitting types, sometimes renamed, upper-cased or one column too many."""
    declared = []
    for name, engine in actual:
        fitting = [d for d, stored in STORED_AS.items() if stored == engine]
        kind = rng.choice(fitting) if fitting and rng.random() < 0.5 else rng.choice(DECLARED_TYPES)
        if rng.random() < 0.05:
            name = name + "_renamed"
        declared.append((name.upper() if rng.random() < 0.2 else name, kind))
    if rng.random() < 0.05:
        declared.append(("extra", "string"))
    return declared
