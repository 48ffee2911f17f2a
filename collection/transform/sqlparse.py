"""A tokenizer and parser for the subset of DuckDB's SELECT that a table may use (D-68).

Every node carries `pos` and `end` (0-based character offsets into the SQL text, end exclusive),
so a finding about any part of the statement can say where it is, and a fix can quote the select
item it rewrites. The parser is hand-written and linear: the tokenizer is one compiled pattern whose
alternatives cannot backtrack (a 64 KB statement parses in well under a second) and nesting is bounded, so hostile input cannot blow
the stack.

What is outside the subset raises `ParseError` with kind "unsupported" (the construct is valid
DuckDB but not checked here), "syntax" (not valid SQL at all), "statement" (not one SELECT) or
"forbidden" (a construct that reads outside the dataset: a string or table function in FROM).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

MAX_DEPTH = 40          # nested parentheses, calls and subqueries while parsing (each costs ~12 frames)
MAX_TREE_DEPTH = 150    # the finished tree, where a long a + b + c … chain counts each operator


class ParseError(Exception):
    def __init__(self, kind: str, message: str, pos: int):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.pos = pos


# ----------------------------------------------------------------------------------------- tokens

class Token(NamedTuple):
    kind: str      # ident, qident, string, number, op, eof
    text: str      # the source text
    value: str     # identifier folded to lower case / unquoted; string unescaped
    pos: int
    end: int


# One pass of one compiled pattern: every alternative is a plain character class or an unrolled
# quoted form ('[^']*(?:''[^']*)*'), none can backtrack, so tokenizing is linear in the text.
# Whitespace and comments are the optional prefix of each match, not matches of their own (half
# as many matches); `\Z` ends the text after a trailing prefix. Nothing backtracks into the
# prefix: `bad` or `\Z` matches after it whatever follows. No two alternatives can start at one
# character ("." is an operator only when no digit follows, else a number), so their order is
# free: the commonest first. A token is the match's one group, by number: _IDENT, _OP, ….
_TOKEN = re.compile(r"""
    [ \t\r\n\f\v]*(?:(?:--[^\n]*|/\*.*?\*/)[ \t\r\n\f\v]*)*
    (?:
      (?P<ident>[^\W\d][\w$]*)
    | (?P<op>!~~|<=|>=|<>|!=|==|\|\||::|//|\*\*|->|~~|[()+\-*/%,;<>=\[\]{}:|&^~!?@$\#]|\.(?![0-9]))
    | (?P<number>(?:[0-9]+(?:\.(?!\.)[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)
    | (?P<string>'[^']*(?:''[^']*)*')
    | (?P<qident>"[^"]*(?:""[^"]*)*")
    | (?P<bad>.)
    | \Z
    )
""", re.VERBOSE | re.DOTALL)
_IDENT, _OP, _NUMBER, _STRING, _QIDENT = (_TOKEN.groupindex[k] for k in ("ident", "op", "number", "string", "qident"))
_new_token = tuple.__new__       # Token(...) without NamedTuple's Python-level __new__ (the hot path)


def tokenize(sql: str) -> list[Token]:
    tokens: list[Token] = []
    append = tokens.append
    n = len(sql)
    # `bad` matches any one character, so finditer leaves no gap: each match starts where the
    # previous ended, and `bad` is exactly where no token can start; the match of `\Z` alone
    # (no group) is the last. A token ends where its match does.
    for m in _TOKEN.finditer(sql):
        group = m.lastindex
        if group is None:
            break
        text = m[group]
        j = m.end()
        i = j - len(text)
        if group == _IDENT:
            append(_new_token(Token, ("ident", text, text.lower(), i, j)))
        elif group == _OP:
            append(_new_token(Token, ("op", text, text, i, j)))
        elif group == _NUMBER:
            if j < n and (sql[j].isalnum() or sql[j] == "_"):
                raise ParseError("unsupported", f"the number {sql[i:j + 1]!r}… (a number must not run into a name)", i)
            append(_new_token(Token, ("number", text, text, i, j)))
        elif group == _STRING:
            append(_new_token(Token, ("string", text, text[1:-1].replace("''", "'"), i, j)))
        elif group == _QIDENT:
            value = text[1:-1].replace('""', '"')
            if value == "":
                raise ParseError("syntax", "an empty quoted identifier", i)
            append(_new_token(Token, ("qident", text, value, i, j)))
        else:
            if sql.startswith("/*", i):
                raise ParseError("syntax", "a /* comment is never closed", i)
            if sql[i] == "'":
                raise ParseError("syntax", "a string literal is never closed", i)
            if sql[i] == '"':
                raise ParseError("syntax", "a quoted identifier is never closed", i)
            raise ParseError("syntax", f"the character {sql[i]!r} has no meaning here", i)
    append(Token("eof", "", "", n, n))
    return tokens


# ----------------------------------------------------------------------------------------- nodes
# plain dataclasses, compared by identity: creating nodes is the parser's hot path, and no node is
# changed after the parser made it

@dataclass(eq=False)
class Node:
    pos: int
    end: int


@dataclass(eq=False)
class TypeName(Node):
    name: str                 # the engine type in DESCRIBE spelling, e.g. "DECIMAL(10,2)"


@dataclass(eq=False)
class Column(Node):
    parts: tuple[str, ...]    # ("t", "c") or ("c",); identifiers as DuckDB folds them (case kept)


@dataclass(eq=False)
class Literal(Node):
    kind: str                 # integer, decimal, float, string, boolean, null, typed
    value: str
    type: str | None = None   # for DATE '...', TIMESTAMP '...'


@dataclass(eq=False)
class Cast(Node):
    expr: Node
    type: TypeName
    try_: bool = False


@dataclass(eq=False)
class Unary(Node):
    op: str                   # -, +, not
    expr: Node


@dataclass(eq=False)
class Binary(Node):
    op: str                   # + - * / // % || = <> < <= > >= and or
    left: Node
    right: Node


@dataclass(eq=False)
class IsNull(Node):
    expr: Node
    negated: bool


@dataclass(eq=False)
class Like(Node):
    op: str                   # like, ilike
    expr: Node
    pattern: Node
    negated: bool


@dataclass(eq=False)
class InList(Node):
    expr: Node
    items: tuple[Node, ...]
    negated: bool


@dataclass(eq=False)
class Between(Node):
    expr: Node
    low: Node
    high: Node
    negated: bool


@dataclass(eq=False)
class Case(Node):
    operand: Node | None
    whens: tuple[tuple[Node, Node], ...]
    else_: Node | None


@dataclass(eq=False)
class Func(Node):
    name: str                 # lower case
    args: tuple[Node, ...]
    distinct: bool = False
    star: bool = False        # count(*)
    name_pos: int = 0


@dataclass(eq=False)
class Star(Node):
    qualifier: str | None


@dataclass(eq=False)
class Item(Node):
    expr: Node                # or Star
    alias: str | None
    alias_pos: int | None = None


@dataclass(eq=False)
class TableRef(Node):
    name: str
    alias: str | None


@dataclass(eq=False)
class SubqueryRef(Node):
    query: "Query"
    alias: str | None


@dataclass(eq=False)
class Join(Node):
    kind: str                 # inner, left, right, full, cross
    left: Node
    right: Node
    on: Node | None
    using: tuple[tuple[str, int], ...] | None


@dataclass(eq=False)
class OrderItem(Node):
    expr: Node
    descending: bool


@dataclass(eq=False)
class Select(Node):
    distinct: bool
    items: tuple[Item, ...]
    from_: Node | None
    where: Node | None
    group_by: tuple[Node, ...]
    having: Node | None


@dataclass(eq=False)
class SetOp(Node):
    op: str                   # "union all", "union"
    left: Node
    right: Node


@dataclass(eq=False)
class Cte(Node):
    name: str
    query: "Query"


@dataclass(eq=False)
class Query(Node):
    ctes: tuple[Cte, ...]
    body: Node                # Select or SetOp
    order_by: tuple[OrderItem, ...]
    limit: Node | None
    offset: Node | None


# words that end an expression or a select item, so a bare word after an expression is not an alias
RESERVED = frozenset("""
all and any array as asc between both case cast check collate column constraint create cross current_date
current_time current_timestamp default desc distinct do else end except exists false fetch for foreign from full
grant group having ilike in inner intersect into is join lateral leading left like limit natural not null offset
on only or order outer over primary qualify references returning right select semi anti positional asof similar
some symmetric table then to trailing true union unique using when where window with within glob
""".split())

# words DuckDB 2.0.1 does not take as an alias without AS (`select a year` is a syntax error there)
NO_BARE_ALIAS = frozenset("""
all analyse analyze and anti any array as asc asof asymmetric at authorization binary both by case cast
centuries century check collate collation column concurrently constraint create cross day days decade decades
default deferrable desc describe distinct do else end escape except exclude export_state false fetch filter
for foreign freeze from full glob group having hour hours ignore ilike in initially inner intersect into is
join lambda lateral leading left like limit microsecond microseconds millennia millennium millisecond
milliseconds minute minutes month months natural not null offset on only or order outer over overlaps pivot
pivot_longer pivot_wider placing positional precision primary qualify quarter quarters references rename
replace respect returning right second seconds select semi show similar some summarize symmetric table
tablesample then to trailing true union unique unpack unpivot using variadic varying verbose week weeks when
where window with within without year years
""".split())

# words DuckDB 2.0.1 does not take as a FROM alias, with or without AS
NO_TABLE_ALIAS = frozenset("""
all analyse analyze and anti any array as asc asof asymmetric at authorization binary both by case cast check
collate collation column concurrently constraint create cross default deferrable desc describe distinct do
else end except false fetch for foreign freeze from full glob group having ilike in initially inner intersect
into is isnull join lambda lateral leading left like limit natural not notnull null offset on only or order
outer overlaps pivot pivot_longer pivot_wider placing positional primary qualify references returning right
select semi show similar some summarize symmetric table tablesample then to trailing true union unique unpack
unpivot using variadic verbose when where window with
""".split())

# words DuckDB 2.0.1 does not take as an unquoted, unqualified column name (quote them: "order")
NO_COLUMN = frozenset("""
all analyse analyze and anti any array as asc asof asymmetric at authorization binary both by case cast check
collate collation column concurrently constraint create cross default deferrable desc describe distinct do
else end except false fetch for foreign freeze from full glob group having ilike in initially inner intersect
into is isnull join lambda lateral leading left like limit natural not notnull offset on only or order outer
overlaps pivot pivot_longer pivot_wider placing positional primary qualify references returning right select
semi show similar some summarize symmetric table tablesample then to trailing true union unique unpack unpivot
using variadic verbose when where window with
""".split())

# statements that are not a SELECT, named so the refusal can say what it saw
NOT_SELECT = frozenset("""
insert update delete merge create drop alter truncate copy attach detach pragma install load set reset call
export import vacuum checkpoint begin commit rollback abort start transaction use describe show summarize explain
prepare execute deallocate grant revoke comment analyze update force
""".split())

# DuckDB type names the subset accepts in CAST / :: / typed literals, in DESCRIBE spelling
TYPE_NAMES = {
    "varchar": "VARCHAR", "text": "VARCHAR", "string": "VARCHAR", "char": "VARCHAR", "bpchar": "VARCHAR",
    "integer": "INTEGER", "int": "INTEGER", "int4": "INTEGER", "signed": "INTEGER",
    "bigint": "BIGINT", "int8": "BIGINT", "long": "BIGINT",
    "smallint": "SMALLINT", "int2": "SMALLINT", "short": "SMALLINT",
    "tinyint": "TINYINT", "int1": "TINYINT",
    "hugeint": "HUGEINT", "int128": "HUGEINT",
    "double": "DOUBLE", "float8": "DOUBLE",
    "float": "FLOAT", "float4": "FLOAT", "real": "FLOAT",
    "boolean": "BOOLEAN", "bool": "BOOLEAN", "logical": "BOOLEAN",
    "date": "DATE",
    "timestamp": "TIMESTAMP", "datetime": "TIMESTAMP",
    "timestamptz": "TIMESTAMP WITH TIME ZONE",
    "decimal": "DECIMAL", "numeric": "DECIMAL",
}


# every token a precedence level from or_expr down to multiplicative consumes or refuses after an
# operand (Parser.expr's fast path); a superset is harmless, a missing one would change the tree
_CONTINUES = frozenset((
    "or", "and", "is", "not", "like", "ilike", "in", "between", "similar", "glob", "isnull", "notnull",   # words
    "=", "==", "<>", "!=", "<", "<=", ">", ">=", "~~", "!~~", "||", "+", "-", "*", "/", "//", "%",    # operators
    "**", "^", "&", "|", "<<", ">>", "->", "@", "~",
))


# the words Parser.primary treats otherwise than as a column or a function name
_PRIMARY_WORDS = RESERVED | {
    "true", "false", "null", "case", "cast", "try_cast", "date", "timestamp", "timestamptz", "interval", "exists",
    "extract", "substring", "current_date", "current_timestamp", "current_time", "localtimestamp",
}


class Parser:
    def __init__(self, sql: str):
        self.sql = sql
        self.toks = tokenize(sql)
        self.i = 0
        self.tok: Token = self.toks[0]       # always self.toks[self.i]: set by next() and _seek()
        self.depth = 0
        self.parens: set[tuple[int, int]] = set()
        self.tables: list[str] = []          # every FROM table's name, as written, in parse order
        self.functions: list[str] = []       # every function called, lower case

    # -- token helpers
    def _seek(self, i: int) -> None:
        self.i = i
        self.tok = self.toks[i]

    def peek(self, k: int = 1) -> Token:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def next(self) -> Token:
        t = self.tok
        if t.kind != "eof":
            self.i += 1
            self.tok = self.toks[self.i]
        return t

    def is_word(self, *words: str, tok: Token | None = None) -> bool:
        t = tok or self.tok
        return t.kind == "ident" and t.value in words

    def is_op(self, *ops: str) -> bool:
        t = self.tok
        return t.kind == "op" and t.value in ops

    # the four below test and step in place (a word or an operator is never the end token): they
    # are the parser's commonest calls

    def accept_word(self, *words: str) -> Token | None:
        t = self.tok
        if t.kind == "ident" and t.value in words:
            self.i += 1
            self.tok = self.toks[self.i]
            return t
        return None

    def accept_op(self, *ops: str) -> Token | None:
        t = self.tok
        if t.kind == "op" and t.value in ops:
            self.i += 1
            self.tok = self.toks[self.i]
            return t
        return None

    def expect_word(self, word: str) -> Token:
        t = self.tok
        if t.kind != "ident" or t.value != word:
            raise self.syntax(f"expected {word.upper()}")
        self.i += 1
        self.tok = self.toks[self.i]
        return t

    def expect_op(self, op: str) -> Token:
        t = self.tok
        if t.kind != "op" or t.value != op:
            raise self.syntax(f"expected {op!r}")
        self.i += 1
        self.tok = self.toks[self.i]
        return t

    def syntax(self, what: str) -> ParseError:
        t = self.tok
        seen = "the end of the statement" if t.kind == "eof" else repr(t.text)
        return ParseError("syntax", f"{what}, found {seen}", t.pos)

    def unsupported(self, what: str, pos: int | None = None) -> ParseError:
        return ParseError("unsupported", what, self.tok.pos if pos is None else pos)

    def enter(self, pos: int) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ParseError("unsupported", f"nesting deeper than {MAX_DEPTH} levels", pos)

    def leave(self) -> None:
        self.depth -= 1

    @property
    def last_end(self) -> int:
        return self.toks[self.i - 1].end if self.i else 0

    # -- statement
    def statement(self) -> Query:
        t = self.tok
        if t.kind == "eof" or (t.kind == "op" and t.value == ";"):
            raise ParseError("statement", "the SQL holds no statement", t.pos)
        if t.kind == "ident" and t.value in NOT_SELECT:
            raise ParseError("statement", f"a {t.value.upper()} statement; a table is one SELECT", t.pos)
        if not (self.is_word("select", "with") or self.is_op("(")):
            if t.kind == "ident" and t.value in ("from", "values", "table", "pivot", "unpivot"):
                raise self.unsupported(f"a statement that starts with {t.value.upper()} (write SELECT … FROM …)")
            raise ParseError("statement", f"{t.text!r} does not start a SELECT statement", t.pos)
        q = self.query()
        if self.accept_op(";"):
            while self.accept_op(";"):
                pass      # empty statements after it, as DuckDB allows
            if self.tok.kind != "eof":
                raise ParseError("statement", "more than one statement; a table is exactly one SELECT", self.tok.pos)
        elif self.tok.kind != "eof":
            raise self.syntax("expected the end of the statement")
        return q

    def query(self) -> Query:
        start = self.tok.pos
        self.enter(start)
        ctes: list[Cte] = []
        if self.accept_word("with"):
            if self.is_word("recursive"):
                raise self.unsupported("WITH RECURSIVE")
            while True:
                nt = self.tok
                name = self.ident("a name for the WITH query")
                if self.is_op("("):
                    raise self.unsupported("a column list on a WITH query")
                self.expect_word("as")
                if self.is_word("materialized", "not"):
                    raise self.unsupported("MATERIALIZED on a WITH query")
                self.expect_op("(")
                sub = self.query()
                self.expect_op(")")
                ctes.append(Cte(nt.pos, self.last_end, name, sub))
                if not self.accept_op(","):
                    break
        body = self.set_expr()
        order: list[OrderItem] = []
        limit = offset = None
        if self.tok.kind != "ident":          # no ORDER BY, LIMIT or OFFSET
            self.leave()
            return Query(start, self.last_end, tuple(ctes), body, (), None, None)
        if self.accept_word("order"):
            self.expect_word("by")
            while True:
                e = self.expr()
                desc = False
                if self.accept_word("desc"):
                    desc = True
                else:
                    self.accept_word("asc")
                if self.accept_word("nulls"):
                    if not self.accept_word("first", "last"):
                        raise self.syntax("expected FIRST or LAST")
                order.append(OrderItem(e.pos, self.last_end, e, desc))
                if not self.accept_op(","):
                    break
        for _ in range(2):
            if limit is None and self.accept_word("limit"):
                limit = self.count_literal("LIMIT")
            elif offset is None and self.accept_word("offset"):
                offset = self.count_literal("OFFSET")
        self.leave()
        return Query(start, self.last_end, tuple(ctes), body, tuple(order), limit, offset)

    def count_literal(self, what: str) -> Node:
        t = self.tok
        if t.kind == "number" and t.text.isdigit():
            self.next()
            return Literal(t.pos, t.end, "integer", t.text)
        raise self.unsupported(f"{what} with anything but a whole number")

    def set_expr(self) -> Node:
        left = self.select_core()
        while self.is_word("union", "except", "intersect"):
            t = self.next()
            if t.value != "union" or not self.accept_word("all"):
                raise self.unsupported(f"{t.value.upper()} without ALL is outside the typed subset; use UNION ALL", t.pos)
            if self.is_word("by"):
                raise self.unsupported("UNION ALL BY NAME", t.pos)
            right = self.select_core()
            left = SetOp(left.pos, right.end, "union all", left, right)
        return left

    def select_core(self) -> Node:
        if self.is_op("("):
            raise self.unsupported("a parenthesised query as a set operand")
        start = self.tok.pos
        self.expect_word("select")
        distinct = False
        if self.accept_word("distinct"):
            if self.is_word("on"):
                raise self.unsupported("DISTINCT ON")
            distinct = True
        else:
            self.accept_word("all")
        items = [self.select_item()]
        while self.accept_op(","):
            if self.is_word("from") or self.tok.kind == "eof":
                break      # DuckDB allows a trailing comma
            items.append(self.select_item())
        from_ = where = having = None
        group: list[Node] = []
        if self.accept_word("from"):
            from_ = self.from_clause()
        if self.tok.kind != "ident":          # every clause below starts with a word
            return Select(start, self.last_end, distinct, tuple(items), from_, where, tuple(group), having)
        if self.accept_word("where"):
            where = self.expr()
        if self.accept_word("group"):
            self.expect_word("by")
            if self.is_word("all", "rollup", "cube", "grouping"):
                raise self.unsupported(f"GROUP BY {self.tok.value.upper()}")
            while True:
                group.append(self.expr())
                if not self.accept_op(","):
                    break
        if self.accept_word("having"):
            having = self.expr()
        if self.is_word("window", "qualify", "sample", "using"):
            raise self.unsupported(self.tok.value.upper())
        return Select(start, self.last_end, distinct, tuple(items), from_, where, tuple(group), having)

    def select_item(self) -> Item:
        t = self.tok
        kind = t.kind
        if kind == "op" and t.value == "*":
            self.next()
            self.star_modifiers()
            return Item(t.pos, t.end, Star(t.pos, t.end, None), None)
        if kind == "ident" or kind == "qident":
            dot = self.toks[self.i + 1]            # t is not the end, so a token follows
            if dot.kind == "op" and dot.value == "." and self.peek(2).kind == "op" and self.peek(2).value == "*":
                if kind == "ident" and t.value in RESERVED:
                    raise self.syntax("expected an expression")
                self.next(), self.next()
                end = self.next().end
                self.star_modifiers()
                return Item(t.pos, end, Star(t.pos, end, self.name_of(t)), None)
            if kind == "ident" and t.value == "columns":
                raise self.unsupported("COLUMNS(…)")
            if kind == "ident" and t.value not in _PRIMARY_WORDS and t.value not in NO_COLUMN \
                    and self.depth < MAX_DEPTH and (dot.kind == "op" and dot.value == ","
                                                    or dot.kind == "ident" and dot.value == "from"):
                # a bare column then the next item or FROM, as expr() and alias() would find it
                self.i += 1
                self.tok = dot
                return Item(t.pos, t.end, Column(t.pos, t.end, (t.text,)), None)
        e = self.expr()
        alias, apos = self.alias(after_expr=True)
        return Item(e.pos, self.last_end, e, alias, apos)

    def star_modifiers(self) -> None:
        if self.is_word("exclude", "replace", "rename", "like", "similar"):
            raise self.unsupported(f"* {self.tok.value.upper()}")

    def alias(self, after_expr: bool) -> tuple[str | None, int | None]:
        kind = self.tok.kind
        if kind == "op" or kind == "eof":
            return None, None                 # no alias: mostly a "," or ")" follows
        if self.accept_word("as"):
            t = self.tok
            if not after_expr and t.kind == "ident" and t.value in NO_TABLE_ALIAS:
                raise self.syntax("expected an alias after AS")
            return self.ident("an alias after AS"), t.pos
        t = self.tok
        refused = NO_BARE_ALIAS if after_expr else NO_TABLE_ALIAS
        if t.kind == "qident" or (t.kind == "ident" and t.value not in RESERVED and t.value not in refused):
            self.next()
            return self.name_of(t), t.pos
        if t.kind == "string" and after_expr:
            raise self.unsupported("a string literal as an alias", t.pos)
        return None, None

    @staticmethod
    def name_of(t: Token) -> str:
        return t.value if t.kind == "qident" else t.text

    def ident(self, what: str) -> str:
        t = self.tok
        if t.kind == "qident" or (t.kind == "ident" and t.value not in RESERVED):
            self.next()
            return self.name_of(t)
        raise self.syntax(f"expected {what}")

    # -- FROM
    def from_clause(self) -> Node:
        left = self.from_primary()
        while True:
            t = self.tok
            if t.kind != "ident" and (t.kind != "op" or t.value != ","):
                return left                   # no join follows
            if self.accept_op(","):
                right = self.from_primary()
                left = Join(left.pos, right.end, "cross", left, right, None, None)
                continue
            if self.is_word("natural", "asof", "positional", "semi", "anti", "lateral"):
                raise self.unsupported(f"{t.value.upper()} JOIN")
            kind = None
            if self.accept_word("cross"):
                self.expect_word("join")
                right = self.from_primary()
                left = Join(left.pos, right.end, "cross", left, right, None, None)
                continue
            if self.accept_word("join"):
                kind = "inner"
            elif self.is_word("inner", "left", "right", "full"):
                kind = self.next().value
                if kind != "inner":
                    self.accept_word("outer")
                if self.is_word("semi", "anti"):
                    raise self.unsupported(f"{self.tok.value.upper()} JOIN")
                self.expect_word("join")
            if kind is None:
                return left
            right = self.from_primary()
            if self.accept_word("on"):
                on = self.expr()
                left = Join(left.pos, on.end, kind, left, right, on, None)
            elif self.accept_word("using"):
                self.expect_op("(")
                names = []
                while True:
                    nt = self.tok
                    names.append((self.ident("a column name"), nt.pos))
                    if not self.accept_op(","):
                        break
                self.expect_op(")")
                left = Join(left.pos, self.last_end, kind, left, right, None, tuple(names))
            else:
                raise self.syntax(f"expected ON or USING after {kind.upper()} JOIN")

    def from_primary(self) -> Node:
        t = self.tok
        if t.kind == "string":
            raise ParseError("forbidden", f"the string {t.text} as a table: DuckDB would read that file or address; "
                             "a table reads only the dataset's sources", t.pos)
        if self.is_op("("):
            self.next()
            if self.is_word("select", "with"):
                q = self.query()
                self.expect_op(")")
                self.no_sampling_or_pivot()
                alias, _ = self.alias(after_expr=False)
                self.no_column_aliases()
                return SubqueryRef(t.pos, self.last_end, q, alias)
            raise self.unsupported("a parenthesised join or VALUES in FROM", t.pos)
        if self.is_word("values", "unnest", "lateral"):
            raise self.unsupported(f"{t.value.upper()} in FROM", t.pos)
        if t.kind == "ident" and self.peek().kind == "op" and self.peek().value == "(":
            raise ParseError("forbidden", f"the table function {t.text}(…): a table reads only the dataset's "
                             "sources, never a function's rows", t.pos)
        if t.kind not in ("ident", "qident") or (t.kind == "ident" and t.value in RESERVED):
            raise self.syntax("expected a table name")
        self.next()
        name = self.name_of(t)
        if self.is_op("."):
            raise ParseError("unknown_table", f"the qualified name {self.sql[t.pos:self.peek().end]!r}: a table reads "
                             "the dataset's sources by their plain names", t.pos)
        if self.is_op("("):
            raise ParseError("forbidden", f"the table function {name}(…): a table reads only the dataset's "
                             "sources, never a function's rows", t.pos)
        end = self.last_end
        self.no_sampling_or_pivot()
        alias, _ = self.alias(after_expr=False)
        self.no_column_aliases()
        self.no_sampling_or_pivot()
        self.tables.append(name)
        return TableRef(t.pos, self.last_end if alias else end, name, alias)

    def no_sampling_or_pivot(self) -> None:
        # not reserved words in DuckDB, so without this they would be read as an alias
        if self.is_word("tablesample", "pivot", "unpivot"):
            raise self.unsupported(self.tok.value.upper())

    def no_column_aliases(self) -> None:
        if self.is_op("("):
            raise self.unsupported("column aliases on a FROM item")

    # -- expressions
    def expr(self) -> Node:
        t = self.tok
        self.depth += 1                       # self.enter(t.pos), inline: expr is the hottest entry
        if self.depth > MAX_DEPTH:
            raise ParseError("unsupported", f"nesting deeper than {MAX_DEPTH} levels", t.pos)
        if t.kind == "ident" and t.value == "not":
            e = self.or_expr()
        else:
            # Most expressions are one operand (a column, a call, a cast) followed by a comma, a
            # parenthesis, AS or FROM: each precedence level below would only pass it up. So the
            # operand is parsed first, and the levels run only when a token any of them consumes
            # or refuses follows (_CONTINUES); the tree and every error are the same either way.
            e = self.unary()
            nt = self.tok
            if nt.value in _CONTINUES and nt.kind in ("op", "ident"):
                e = self.or_expr(e)
        self.depth -= 1
        return e

    def or_expr(self, first: Node | None = None) -> Node:
        left = self.and_expr(first)
        while self.accept_word("or"):
            right = self.and_expr()
            left = Binary(left.pos, right.end, "or", left, right)
        return left

    def and_expr(self, first: Node | None = None) -> Node:
        left = self.not_expr(first)
        while self.accept_word("and"):
            right = self.not_expr()
            left = Binary(left.pos, right.end, "and", left, right)
        return left

    def not_expr(self, first: Node | None = None) -> Node:
        if first is not None:
            return self.predicate(first)
        t = self.tok
        if self.accept_word("not"):
            self.enter(t.pos)
            e = self.not_expr()
            self.leave()
            return Unary(t.pos, e.end, "not", e)
        return self.predicate()

    def predicate(self, first: Node | None = None) -> Node:
        left = self.comparison(first)
        while True:
            if self.is_word("is"):
                self.next()
                neg = bool(self.accept_word("not"))
                if self.accept_word("null"):
                    left = IsNull(left.pos, self.last_end, left, neg)
                    continue
                if self.is_word("distinct", "true", "false"):
                    raise self.unsupported(f"IS {'NOT ' if neg else ''}{self.tok.value.upper()}")
                raise self.syntax("expected NULL after IS")
            neg = False
            save = self.i
            if self.is_word("not") and self.is_word("like", "ilike", "in", "between", "similar", "glob",
                                                    tok=self.peek()):
                self.next()
                neg = True
            if self.is_word("like", "ilike"):
                op = self.next().value
                pat = self.comparison()
                if self.is_word("escape"):
                    raise self.unsupported("LIKE … ESCAPE")
                left = Like(left.pos, pat.end, op, left, pat, neg)
            elif self.is_word("in"):
                self.next()
                self.expect_op("(")
                if self.is_word("select", "with"):
                    raise self.unsupported("IN (subquery)")
                items = [self.expr()]
                while self.accept_op(","):
                    items.append(self.expr())
                self.expect_op(")")
                left = InList(left.pos, self.last_end, left, tuple(items), neg)
            elif self.is_word("between"):
                self.next()
                if self.is_word("symmetric", "asymmetric"):
                    raise self.unsupported("BETWEEN SYMMETRIC")
                low = self.comparison()
                self.expect_word("and")
                high = self.comparison()
                left = Between(left.pos, high.end, left, low, high, neg)
            elif self.is_word("similar", "glob", "isnull", "notnull"):
                raise self.unsupported(self.tok.value.upper())
            else:
                self._seek(save)
                return left

    _CMP = ("=", "==", "<>", "!=", "<", "<=", ">", ">=")
    _CMP_FOLDED = ("=", "<>", "<", "<=", ">", ">=")

    def comparison(self, first: Node | None = None) -> Node:
        left = self.concat(first)
        while self.is_op(*self._CMP):
            op = self.next().value
            op = {"==": "=", "!=": "<>"}.get(op, op)
            if self.is_word("any", "all", "some"):
                raise self.unsupported(f"{op} {self.tok.value.upper()}(…)")
            right = self.concat()
            if isinstance(left, Binary) and left.op in self._CMP_FOLDED and (left.pos, left.end) not in self.parens:
                raise ParseError("syntax", "chained comparisons (a < b < c); use AND", left.pos)
            left = Binary(left.pos, right.end, op, left, right)
        if self.is_op("~~", "!~~"):
            raise self.unsupported(f"the operator {self.tok.value}")
        return left

    def concat(self, first: Node | None = None) -> Node:
        left = self.additive(first)
        while self.is_op("||"):
            self.next()
            right = self.additive()
            left = Binary(left.pos, right.end, "||", left, right)
        return left

    def additive(self, first: Node | None = None) -> Node:
        left = self.multiplicative(first)
        while self.is_op("+", "-"):
            op = self.next().value
            right = self.multiplicative()
            left = Binary(left.pos, right.end, op, left, right)
        return left

    def multiplicative(self, first: Node | None = None) -> Node:
        left = self.unary() if first is None else first
        while self.is_op("*", "/", "//", "%"):
            op = self.next().value
            right = self.unary()
            left = Binary(left.pos, right.end, op, left, right)
        if self.is_op("**", "^", "&", "|", "<<", ">>", "->", "@", "~"):
            raise self.unsupported(f"the operator {self.tok.value}")
        return left

    def unary(self) -> Node:
        t = self.tok
        if t.kind == "op":
            if t.value == "-" or t.value == "+":
                self.next()
                self.enter(t.pos)
                e = self.unary()
                self.leave()
                return Unary(t.pos, e.end, t.value, e)
            if t.value in ("~", "!", "@"):
                raise self.unsupported(f"the operator {t.value}")
        return self.postfix()

    def postfix(self) -> Node:
        e = self.primary()
        while True:
            t = self.tok
            if t.kind == "op":
                if t.value == "::":
                    self.next()
                    ty = self.type_name()
                    e = Cast(e.pos, ty.end, e, ty, False)
                    continue
                if t.value == "[":
                    raise self.unsupported("subscripts [ … ]")
            elif t.kind == "ident":
                if t.value == "collate":
                    raise self.unsupported("COLLATE")
                if t.value == "at" and self.is_word("time", tok=self.peek()):
                    raise self.unsupported("AT TIME ZONE")
            return e

    def type_name(self) -> TypeName:
        t = self.tok
        if t.kind != "ident":
            raise self.syntax("expected a type name")
        self.next()
        word = t.value
        if word in ("character", "char") and self.is_word("varying"):
            self.next()
            word = "varchar"
        elif word == "double" and self.is_word("precision"):
            self.next()
        if word not in TYPE_NAMES:
            raise self.unsupported(f"the type {t.text!r} (the subset knows {', '.join(sorted(set(TYPE_NAMES)))})",
                                   t.pos)
        name = TYPE_NAMES[word]
        after = self.tok
        if after.kind == "op" and after.value == ")" and name != "DECIMAL":
            return TypeName(t.pos, self.last_end, name)   # the common case: cast(x as integer)
        if name == "TIMESTAMP" and self.is_word("with", "without"):
            with_ = self.next().value == "with"
            self.expect_word("time")
            self.expect_word("zone")
            name = "TIMESTAMP WITH TIME ZONE" if with_ else "TIMESTAMP"
        if self.is_op("("):
            self.next()
            params = [self.type_param()]
            while self.accept_op(","):
                params.append(self.type_param())
            self.expect_op(")")
            if name == "DECIMAL":
                if len(params) > 2:
                    raise self.unsupported("DECIMAL with more than two parameters", t.pos)
                width = params[0]
                scale = params[1] if len(params) == 2 else 0
                if not 1 <= width <= 38 or scale > width:
                    raise self.unsupported(f"DECIMAL({width},{scale}) (width 1..38, scale no more than width)", t.pos)
                name = f"DECIMAL({width},{scale})"
            elif name == "VARCHAR" and len(params) == 1:
                pass   # DuckDB ignores a VARCHAR length
            else:
                raise self.unsupported(f"parameters on the type {t.text!r}", t.pos)
        elif name == "DECIMAL":
            name = "DECIMAL(18,3)"
        if self.is_op("["):
            raise self.unsupported("array types")
        return TypeName(t.pos, self.last_end, name)

    def type_param(self) -> int:
        t = self.tok
        if t.kind == "number" and t.text.isdigit() and len(t.text) <= 3:
            self.next()
            return int(t.text)
        raise self.syntax("expected a whole number")

    def primary(self) -> Node:
        t = self.tok
        if t.kind == "ident":
            if t.value not in _PRIMARY_WORDS:
                return self.column_or_call()  # a column or a function call: no case below applies
            if t.value == "cast" or t.value == "try_cast":
                paren = self.toks[self.i + 1]
                if paren.kind == "op" and paren.value == "(":
                    return self.cast(t)       # the commonest word of a typed table's SELECT
        if t.kind == "number":
            self.next()
            text = t.text
            if "e" in text.lower():
                return Literal(t.pos, t.end, "float", text)
            if "." in text:
                return Literal(t.pos, t.end, "decimal", text)
            return Literal(t.pos, t.end, "integer", text)
        if t.kind == "string":
            self.next()
            return Literal(t.pos, t.end, "string", t.value)
        if self.is_op("("):
            self.next()
            if self.is_word("select", "with"):
                raise self.unsupported("a subquery as an expression", t.pos)
            e = self.expr()
            if self.is_op(","):
                raise self.unsupported("a row value ( … , … )", t.pos)
            self.expect_op(")")
            # keep the parentheses in the span so a fix that quotes the expression stays valid
            self.parens.add((t.pos, self.last_end))
            return _respan(e, t.pos, self.last_end)
        if self.is_op("[", "{"):
            raise self.unsupported("list and struct literals", t.pos)
        if self.is_op("?", "$"):
            raise self.unsupported("prepared-statement parameters", t.pos)
        if t.kind == "qident":
            return self.column_or_call()
        if t.kind != "ident":
            raise self.syntax("expected an expression")
        w = t.value
        if w not in _PRIMARY_WORDS:
            return self.column_or_call()      # a column or a function call: no word below applies
        if w in ("true", "false"):
            self.next()
            return Literal(t.pos, t.end, "boolean", w)
        if w == "null":
            self.next()
            return Literal(t.pos, t.end, "null", "null")
        if w == "case":
            return self.case()
        if w in ("date", "timestamp", "timestamptz") and self.peek().kind == "string":
            self.next()
            s = self.next()
            ty = TYPE_NAMES[w]
            return Literal(t.pos, s.end, "typed", s.value, ty)
        if w == "timestamp" and self.is_word("with", tok=self.peek()):
            # TIMESTAMP WITH TIME ZONE '...'
            save = self.i
            self.next()
            ty = self.type_name_rest_tz()
            if ty and self.tok.kind == "string":
                s = self.next()
                return Literal(t.pos, s.end, "typed", s.value, "TIMESTAMP WITH TIME ZONE")
            self._seek(save)
        if w == "interval":
            raise self.unsupported("INTERVAL", t.pos)
        if w == "exists":
            raise self.unsupported("EXISTS (subquery)", t.pos)
        if w in ("extract",) and self.peek().kind == "op" and self.peek().value == "(":
            return self.extract()
        if w in ("substring",) and self.peek().kind == "op" and self.peek().value == "(":
            return self.column_or_call()
        if w in ("current_date", "current_timestamp", "current_time", "localtimestamp"):
            raise self.unsupported(f"{w.upper()} (a table's result must not depend on when it is built)", t.pos)
        if w in RESERVED:
            raise self.syntax("expected an expression")
        return self.column_or_call()

    def cast(self, t: Token) -> Node:
        """CAST( or TRY_CAST( at `t`: the expression, AS and the type."""
        self._seek(self.i + 2)
        e = self.expr()
        self.expect_word("as")
        ty = self.type_name()
        self.expect_op(")")
        return Cast(t.pos, self.last_end, e, ty, t.value == "try_cast")

    def type_name_rest_tz(self) -> bool:
        if self.accept_word("with") and self.accept_word("time") and self.accept_word("zone"):
            return True
        return False

    def extract(self) -> Node:
        t = self.next()
        self.expect_op("(")
        ft = self.tok
        if ft.kind not in ("ident", "string"):
            raise self.syntax("expected a date part")
        self.next()
        part = Literal(ft.pos, ft.end, "string", ft.value.lower())
        self.expect_word("from")
        e = self.expr()
        self.expect_op(")")
        self.functions.append("date_part")
        return Func(t.pos, self.last_end, "date_part", (part, e), name_pos=t.pos)

    def case(self) -> Node:
        t = self.next()
        operand = None
        if not self.is_word("when"):
            operand = self.expr()
        whens = []
        while self.accept_word("when"):
            cond = self.expr()
            self.expect_word("then")
            whens.append((cond, self.expr()))
        if not whens:
            raise self.syntax("expected WHEN")
        else_ = None
        if self.accept_word("else"):
            else_ = self.expr()
        self.expect_word("end")
        return Case(t.pos, self.last_end, operand, tuple(whens), else_)

    def column_or_call(self) -> Node:
        t = self.tok                          # a word or a quoted name, never the end: step in place
        self.i += 1
        after = self.tok = self.toks[self.i]
        name = t.value if t.kind == "qident" else t.text
        if after.kind == "op" and after.value == "(" and t.kind == "ident":
            return self.call(t)
        if after.kind != "op" or after.value != ".":                 # one part: the common case
            if t.kind == "ident" and t.value in NO_COLUMN:
                raise ParseError("syntax", f"{t.text!r} is a keyword, not a column name; quote it: \"{t.text}\"",
                                 t.pos)
            return Column(t.pos, t.end, (name,))
        parts = [name]
        while self.is_op("."):
            self.next()
            nt = self.tok
            if nt.kind not in ("ident", "qident"):
                raise self.syntax("expected a column name after '.'")
            self.next()
            parts.append(self.name_of(nt))
            if self.is_op("("):
                raise self.unsupported("a qualified function name or method call", t.pos)
        if len(parts) > 2:
            raise self.unsupported("a name with more than two parts", t.pos)
        return Column(t.pos, self.last_end, tuple(parts))

    def call(self, t: Token) -> Node:
        name = t.value
        self.expect_op("(")
        distinct = star = False
        args: list[Node] = []
        if self.is_op("*"):
            self.next()
            star = True
        elif not self.is_op(")"):
            if self.accept_word("distinct"):
                distinct = True
            else:
                self.accept_word("all")
            if name == "substring" or name == "substr":
                args.append(self.expr())
                if self.accept_word("from"):
                    args.append(self.expr())
                    if self.accept_word("for"):
                        args.append(self.expr())
                    self.expect_op(")")
                    self.functions.append(name)
                    return Func(t.pos, self.last_end, name, tuple(args), name_pos=t.pos)
            else:
                args.append(self.expr())
            while self.accept_op(","):
                args.append(self.expr())
            if self.is_word("order"):
                raise self.unsupported("ORDER BY inside a function call")
            if self.is_op(":="):
                raise self.unsupported("named arguments")
        self.expect_op(")")
        if self.is_word("filter", "over", "within"):
            raise self.unsupported(f"{self.tok.value.upper()} on a function call")
        self.functions.append(name)
        return Func(t.pos, self.last_end, name, tuple(args), distinct, star, t.pos)


def _respan(e: Node, pos: int, end: int) -> Node:
    import dataclasses
    return dataclasses.replace(e, pos=pos, end=end)


@dataclass(frozen=True)
class Statement:
    """A parsed statement with the names the parser met on the way, so a check that needs only
    names (does it read anything but sources, call anything unknown?) need not walk the tree."""
    query: Query
    tables: tuple[str, ...]          # every FROM table's name as written (WITH queries' included)
    functions: tuple[str, ...]       # every function called, lower case


def parse(sql: str) -> Query:
    """The one statement of `sql`, or ParseError."""
    return parse_statement(sql).query


def parse_statement(sql: str) -> Statement:
    """The one statement of `sql` and the names in it, or ParseError."""
    parser = Parser(sql)
    query = parser.statement()
    _check_depth(query, len(parser.toks) - 1)
    return Statement(query, tuple(parser.tables), tuple(parser.functions))


_SCALAR_FIELDS = frozenset({"int", "str", "bool", "str | None", "int | None"})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def child_fields(cls: type) -> tuple[str, ...]:
    """The fields of a node class that may hold nodes or tuples of them, in field order."""
    names = _CHILD_FIELDS.get(cls)
    return names if names is not None else _child_fields(cls)


def _child_fields(cls: type) -> tuple[str, ...]:
    """The fields of a node class that may hold nodes or tuples of them, in field order."""
    import dataclasses

    names = tuple(f.name for f in dataclasses.fields(cls) if f.type not in _SCALAR_FIELDS)
    _CHILD_FIELDS[cls] = names
    return names


def _check_depth(root: Node, tokens: int) -> None:
    """Refuse a tree deeper than MAX_TREE_DEPTH before anything walks it recursively. The parser
    builds a + b + c … and UNION ALL chains in loops, so their depth is bounded only here.

    A statement of few tokens cannot be that deep, so it is not walked: every node spans whole
    tokens and lies inside its parent's span, strictly so except a query's body, a select item's
    expression and an ORDER BY item's expression (and a select item's *), whose children are
    again strictly smaller. So every two levels down lose a token, and a tree over `tokens`
    tokens is at most 2 * tokens - 1 levels deep (tests/test_transform_sql.py checks the bound)."""
    if 2 * tokens - 1 <= MAX_TREE_DEPTH:
        return
    stack: list[tuple[object, int]] = [(root, 0)]
    pop, push = stack.pop, stack.append
    kinds = (Node, tuple)
    while stack:
        node, depth = pop()
        if type(node) is tuple:
            for v in node:
                if isinstance(v, kinds):
                    push((v, depth))
            continue
        if depth > MAX_TREE_DEPTH:
            raise ParseError("unsupported", f"an expression or query nested more than {MAX_TREE_DEPTH} levels "
                             "deep (each operator of a long chain counts)", node.pos)
        depth += 1
        fields = node.__dict__
        names = _CHILD_FIELDS.get(type(node))
        for name in names if names is not None else _child_fields(type(node)):
            v = fields[name]
            if isinstance(v, kinds):
                push((v, depth))
