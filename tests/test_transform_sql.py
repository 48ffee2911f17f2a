"""A table's SQL checked without data and without an engine (issue 25 point 2; PROV-16..22, REF-08, D-49,
D-67, D-68): collection/transform/contract.py.

Every refusal says where it is inside the SQL (1-based line and column) and, for a type mismatch,
the corrected select item.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from collection.transform.contract import (SqlError, check_table, compare_columns, infer_columns, line_column,
                                           statement_findings)

PROVENANCE = ["page_id", "page_url", "page_fetched_at", "page_content_sha256", "page_revision",
              "page_discovered_at", "page_ordinal"]
SOURCES = {"council_decisions": ["title", "story"] + PROVENANCE,
           "notices": ["title", "amount"] + PROVENANCE}

SPEC_SQL = """select page_id,
       cast(page_ordinal as integer) as page_ordinal,
       cast(page_revision as integer) as page_revision,
       cast(page_fetched_at as timestamp with time zone) as page_fetched_at,
       cast(page_discovered_at as timestamp with time zone) as page_discovered_at,
       title, story
from council_decisions"""
SPEC_DECLARED = [("page_id", "string"), ("page_ordinal", "integer"), ("page_revision", "integer"),
                 ("page_fetched_at", "timestamp"), ("page_discovered_at", "timestamp"), ("title", "string"),
                 ("story", "string")]


def codes(findings):
    return [f.code for f in findings]


def test_the_specifications_example_passes_as_written():
    """PROV-19, PROV-21: the spec's transform (seeds/000 lines 164-170) checks clean; the string columns
    need no cast and the casts give exactly the declared types."""
    assert check_table("decisions", SPEC_SQL, SPEC_DECLARED, SOURCES) == []
    assert infer_columns(SPEC_SQL, SOURCES) == [
        ("page_id", "VARCHAR"), ("page_ordinal", "INTEGER"), ("page_revision", "INTEGER"),
        ("page_fetched_at", "TIMESTAMP WITH TIME ZONE"), ("page_discovered_at", "TIMESTAMP WITH TIME ZONE"),
        ("title", "VARCHAR"), ("story", "VARCHAR")]


def test_bare_page_ordinal_into_an_integer_column_is_a_type_mismatch_with_its_fix():
    """PROV-16, PROV-17, PROV-18, REF-08: every relation column arrives as VARCHAR."""
    sql = SPEC_SQL.replace("cast(page_ordinal as integer) as page_ordinal", "page_ordinal")
    [f] = check_table("decisions", sql, SPEC_DECLARED, SOURCES)
    assert f.code == "TRANSFORM_COLUMN_TYPE_MISMATCH"
    assert (f.column, f.declared, f.actual) == ("page_ordinal", "integer", "VARCHAR")
    assert (f.sql_line, f.sql_column) == (2, 8)
    assert f.fix == "cast(page_ordinal as integer) as page_ordinal"
    assert "line 2, column 8 of the SQL" in f.message and f.fix in f.message and "'decisions'" in f.message
    assert "PROV-18" in f.rule and "REF-08" in f.rule and "D-49" in f.rule


def test_a_bare_reader_column_into_a_non_string_column_is_a_mismatch_too():
    """D-49: Reader columns are VARCHAR like the provenance columns."""
    [f] = check_table("n", "select amount from notices", [("amount", "number")], SOURCES)
    assert (f.code, f.actual, f.fix) == ("TRANSFORM_COLUMN_TYPE_MISMATCH", "VARCHAR",
                                         "cast(amount as double) as amount")


def test_a_cast_to_plain_timestamp_into_a_timestamp_column_is_a_mismatch():
    """PROV-20, D-49: a timestamp column takes TIMESTAMP WITH TIME ZONE and nothing else; the fix recasts the
    operand rather than wrapping the wrong cast."""
    sql = SPEC_SQL.replace("page_fetched_at as timestamp with time zone", "page_fetched_at as timestamp")
    [f] = check_table("decisions", sql, SPEC_DECLARED, SOURCES)
    assert (f.code, f.column, f.actual) == ("TRANSFORM_COLUMN_TYPE_MISMATCH", "page_fetched_at", "TIMESTAMP")
    assert f.fix == "cast(page_fetched_at as timestamp with time zone) as page_fetched_at"
    assert (f.sql_line, f.sql_column) == (4, 8)


@pytest.mark.parametrize("spelling", ["timestamptz", "timestamp with time zone", "TIMESTAMP WITH TIME ZONE"])
def test_every_spelling_of_timestamp_with_time_zone_fits_a_timestamp_column(spelling):
    """PROV-20, D-67."""
    sql = f"select page_fetched_at::{spelling} as fetched from council_decisions"
    assert check_table("t", sql, [("fetched", "timestamp")], SOURCES) == []


def test_sum_of_integers_is_hugeint_and_its_fix_casts_to_bigint():
    """D-67: sum() of an integer is HUGEINT, which the build cannot store as BIGINT without a cast."""
    sql = "select sum(cast(page_ordinal as integer)) as rows from council_decisions"
    assert infer_columns(sql, SOURCES) == [("rows", "HUGEINT")]
    [f] = check_table("t", sql, [("rows", "integer")], SOURCES)
    assert (f.code, f.actual) == ("TRANSFORM_COLUMN_TYPE_MISMATCH", "HUGEINT")
    assert f.fix == "cast(sum(cast(page_ordinal as integer)) as bigint) as rows"
    assert check_table("t", "select count(*) as rows from council_decisions", [("rows", "integer")], SOURCES) == []


def test_an_untyped_null_fits_no_column():
    """D-67: the fix names the type."""
    [f] = check_table("t", "select null as missing from notices", [("missing", "integer")], SOURCES)
    assert (f.code, f.actual, f.fix) == ("TRANSFORM_COLUMN_TYPE_MISMATCH", '"NULL"',
                                         "cast(null as integer) as missing")


@pytest.mark.parametrize("declared, sql", [
    ("number", "select cast(amount as decimal(10,2)) as x from notices"),
    ("number", "select cast(amount as double) / 3 as x from notices"),
    ("integer", "select length(title) as x from notices"),
    ("boolean", "select title like '%fee%' as x from notices"),
    ("date", "select cast(page_fetched_at as date) as x from notices"),
    ("timestamp", "select strptime(page_fetched_at, '%Y-%m-%dT%H:%M:%S%z') as x from notices"),
    ("string", "select lower(trim(title)) || '!' as x from notices"),
])
def test_typed_expressions_fit_their_declared_types(declared, sql):
    """D-67: the accepted engine types per declared type (types.accepts)."""
    assert check_table("t", sql, [("x", declared)], SOURCES) == []


def test_column_names_compare_case_insensitively_and_in_order():
    """D-68: names compare as DuckDB compares identifiers; order is the SELECT's."""
    assert check_table("t", "select Title, page_id from notices", [("TITLE", "string"), ("page_id", "string")],
                       SOURCES) == []
    [f] = check_table("t", "select page_id, title from notices", [("title", "string"), ("page_id", "string")],
                      SOURCES)[:1]
    assert f.code == "TRANSFORM_COLUMN_NAMES_DIFFER" and f.column == "title" and (f.sql_line, f.sql_column) == (1, 8)
    [f] = check_table("t", "select page_id from notices", [("page_id", "string"), ("title", "string")], SOURCES)
    assert f.code == "TRANSFORM_COLUMN_NAMES_DIFFER" and "1 columns" in f.message and "declares 2" in f.message


# --- refusals, each with its position inside the SQL --------------------------------------------------

REFUSALS = [
    # not exactly one SELECT
    ("empty", "", "TRANSFORM_SQL_NOT_ONE_SELECT", 1, 1),
    ("only-a-comment", "-- nothing\n", "TRANSFORM_SQL_NOT_ONE_SELECT", 2, 1),
    ("two-statements", "select title from notices;\nselect title from notices", "TRANSFORM_SQL_NOT_ONE_SELECT", 2, 1),
    ("copy", "COPY notices TO '/tmp/x.csv'", "TRANSFORM_SQL_NOT_ONE_SELECT", 1, 1),
    ("copy-after-select", "select 1 as x; copy notices to '/tmp/x'", "TRANSFORM_SQL_NOT_ONE_SELECT", 1, 16),
    ("attach", "attach '/tmp/x.db' as x", "TRANSFORM_SQL_NOT_ONE_SELECT", 1, 1),
    ("detach", "detach x", "TRANSFORM_SQL_NOT_ONE_SELECT", 1, 1),
    ("pragma", "pragma version", "TRANSFORM_SQL_NOT_ONE_SELECT", 1, 1),
    ("install", "  install httpfs", "TRANSFORM_SQL_NOT_ONE_SELECT", 1, 3),
    ("load", "load httpfs", "TRANSFORM_SQL_NOT_ONE_SELECT", 1, 1),
    ("set", "set enable_external_access = true", "TRANSFORM_SQL_NOT_ONE_SELECT", 1, 1),
    ("call", "call pragma_version()", "TRANSFORM_SQL_NOT_ONE_SELECT", 1, 1),
    ("export", "export database '/tmp/x'", "TRANSFORM_SQL_NOT_ONE_SELECT", 1, 1),
    ("import", "import database '/tmp/x'", "TRANSFORM_SQL_NOT_ONE_SELECT", 1, 1),
    ("create", "create table x as select * from notices", "TRANSFORM_SQL_NOT_ONE_SELECT", 1, 1),
    ("insert", "insert into notices values ('a')", "TRANSFORM_SQL_NOT_ONE_SELECT", 1, 1),
    ("delete", "/* c */ delete from notices", "TRANSFORM_SQL_NOT_ONE_SELECT", 1, 9),
    # reading outside the dataset
    ("read_csv", "select * from\n  read_csv('/etc/passwd')", "TRANSFORM_SQL_FORBIDDEN", 2, 3),
    ("read_parquet-url", "select * from read_parquet('https://example.org/x.parquet')", "TRANSFORM_SQL_FORBIDDEN", 1, 15),
    ("string-as-table", "select * from '/etc/passwd'", "TRANSFORM_SQL_FORBIDDEN", 1, 15),
    ("glob", "select * from glob('/*')", "TRANSFORM_SQL_FORBIDDEN", 1, 15),
    ("getenv", "select getenv('HOME') as h from notices", "TRANSFORM_SQL_FORBIDDEN", 1, 8),
    ("read_text-in-select", "select title, read_text('/etc/passwd') as t from notices", "TRANSFORM_SQL_FORBIDDEN", 1, 15),
    ("duckdb_settings", "select * from duckdb_settings()", "TRANSFORM_SQL_FORBIDDEN", 1, 15),
    ("query", "select * from query('select 1')", "TRANSFORM_SQL_FORBIDDEN", 1, 15),
    ("read_csv-in-subquery", "select * from (select * from read_csv_auto('x.csv'))", "TRANSFORM_SQL_FORBIDDEN", 1, 30),
    # names
    ("unknown-table", "select title from council", "TRANSFORM_SQL_UNKNOWN_TABLE", 1, 19),
    ("qualified-table", "select title from main.notices", "TRANSFORM_SQL_UNKNOWN_TABLE", 1, 19),
    ("unknown-column", "select title,\n       titel from notices", "TRANSFORM_SQL_UNKNOWN_COLUMN", 2, 8),
    ("ambiguous-column", "select title from notices n join council_decisions c on n.page_id = c.page_id",
     "TRANSFORM_SQL_UNKNOWN_COLUMN", 1, 8),
    ("unknown-qualifier", "select x.title from notices", "TRANSFORM_SQL_UNKNOWN_COLUMN", 1, 8),
    # outside the typed subset
    ("window", "select row_number() over () as n from notices", "TRANSFORM_SQL_UNSUPPORTED", 1, 21),
    ("scalar-subquery", "select (select 1) as n from notices", "TRANSFORM_SQL_UNSUPPORTED", 1, 8),
    ("interval", "select cast(page_fetched_at as date) + interval 1 day as d from notices",
     "TRANSFORM_SQL_UNSUPPORTED", 1, 40),
    ("except", "select title from notices except select title from notices", "TRANSFORM_SQL_UNSUPPORTED", 1, 27),
    ("recursive", "with recursive r as (select 1 as n) select n from r", "TRANSFORM_SQL_UNSUPPORTED", 1, 6),
    ("now", "select current_timestamp as t from notices", "TRANSFORM_SQL_UNSUPPORTED", 1, 8),
    ("unknown-function", "select levenshtein(title, 'x') as d from notices", "TRANSFORM_SQL_UNSUPPORTED", 1, 8),
    ("unknown-type", "select cast(title as uuid) as u from notices", "TRANSFORM_SQL_UNSUPPORTED", 1, 22),
    ("deep-nesting", "select " + "(" * 500 + "1" + ")" * 500 + " as x", "TRANSFORM_SQL_UNSUPPORTED", 1, None),
    ("long-chain", "select " + "1 + " * 3000 + "1 as x", "TRANSFORM_SQL_UNSUPPORTED", 1, None),
    ("long-union", "select 1 as x" + " union all select 1" * 2000, "TRANSFORM_SQL_UNSUPPORTED", 1, None),
    ("long-and", "select 1 as x from notices where " + "title = 'a' and " * 2000 + "true",
     "TRANSFORM_SQL_UNSUPPORTED", 1, None),
    ("unnamed", "select cast(page_ordinal as integer) from notices", "TRANSFORM_SQL_UNNAMED_COLUMN", 1, 8),
    # types DuckDB refuses too
    ("varchar-arithmetic", "select page_ordinal + 1 as n from notices", "TRANSFORM_SQL_TYPE_ERROR", 1, 8),
    ("sum-of-varchar", "select sum(amount) as n from notices", "TRANSFORM_SQL_TYPE_ERROR", 1, 12),
    ("lower-of-number", "select lower(1) as n from notices", "TRANSFORM_SQL_TYPE_ERROR", 1, 14),
    ("coalesce-mix", "select coalesce(title, 0) as n from notices", "TRANSFORM_SQL_TYPE_ERROR", 1, 8),
    # aggregates
    ("not-grouped", "select title, count(*) as n from notices", "TRANSFORM_SQL_AGGREGATE", 1, 8),
    ("aggregate-in-where", "select title from notices where count(*) > 1", "TRANSFORM_SQL_AGGREGATE", 1, 33),
    ("nested-aggregate", "select sum(count(*)) as n from notices", "TRANSFORM_SQL_AGGREGATE", 1, 12),
    # syntax, including the keywords DuckDB refuses where they stand
    ("keyword-as-bare-alias", "select title year from notices", "TRANSFORM_SQL_SYNTAX", 1, 14),
    ("keyword-as-column", "select title,\n  order from notices", "TRANSFORM_SQL_SYNTAX", 2, 3),
    ("chained-comparison", "select 1 < 2 < 3 as x", "TRANSFORM_SQL_SYNTAX", 1, 8),
    ("unclosed-string", "select 'abc as x from notices", "TRANSFORM_SQL_SYNTAX", 1, 8),
    ("unclosed-comment", "select 1 as x /* never", "TRANSFORM_SQL_SYNTAX", 1, 15),
    ("missing-from-table", "select title from", "TRANSFORM_SQL_SYNTAX", 1, 18),
]


@pytest.mark.parametrize("sql, code, line, column", [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_each_refusal_names_its_code_and_position_in_the_sql(sql, code, line, column):
    """D-68: refused with its own code, at a line and column inside the SQL, and nothing else is claimed."""
    findings = check_table("t", sql, [("x", "string")], SOURCES)
    assert findings, sql
    f = findings[0]
    assert f.code == code, f.message
    assert f.sql_line == line
    if column is not None:
        assert f.sql_column == column, f.message
    assert (f.sql_line, f.sql_column) == line_column(sql, f.offset)
    assert f"line {f.sql_line}, column {f.sql_column} of the SQL" in f.message
    assert "D-68" in f.rule or "PROV" in f.rule
    with pytest.raises(SqlError) as raised:
        infer_columns(sql, SOURCES)
    assert raised.value.finding.code == code


def test_statement_findings_refuse_what_build_must_not_run_without_typing():
    """D-68: build asks statement_findings before DuckDB sees the SQL; it refuses forbidden statements and
    functions and foreign tables, and leaves typing to compare_columns over DuckDB's DESCRIBE."""
    assert statement_findings("t", "select page_ordinal from notices", SOURCES) == []
    for sql in ("attach 'x.db'", "select * from read_csv('/etc/passwd')", "select * from secrets",
                "select getenv('HOME') as h from notices"):
        assert statement_findings("t", sql, SOURCES), sql
    found = statement_findings("t", "select read_text('a') as a, getenv('b') as b from nowhere", SOURCES)
    assert codes(found) == ["TRANSFORM_SQL_FORBIDDEN", "TRANSFORM_SQL_FORBIDDEN", "TRANSFORM_SQL_UNKNOWN_TABLE"]


def test_compare_columns_over_engine_types_gives_the_same_finding_as_check_table():
    """Point 5: validate's verdict and build's verdict are made by the same function."""
    sql = "select page_id,\n  page_ordinal as n,\n  * from notices"
    declared = [("page_id", "string"), ("n", "integer"), ("title", "string"), ("amount", "number")] + \
        [(c, "string") for c in PROVENANCE]
    engine = [("page_id", "VARCHAR"), ("n", "VARCHAR"), ("title", "VARCHAR"), ("amount", "VARCHAR")] + \
        [(c, "VARCHAR") for c in PROVENANCE]
    ours = check_table("t", sql, declared, SOURCES)
    theirs = compare_columns("t", sql, declared, engine)
    assert ours == theirs
    assert [(f.column, f.fix, f.sql_line, f.sql_column) for f in ours] == [
        ("n", "cast(page_ordinal as integer) as n", 2, 3),
        ("amount", "cast(amount as double) as amount", 3, 3)]


def test_the_subset_reads_comments_quotes_escapes_ctes_joins_and_unions():
    """D-68: the declared subset, parsed and typed as DuckDB types it."""
    sql = """-- the decisions with their notice
with d as (select page_id, cast(page_ordinal as bigint) as ord from council_decisions /* recent */)
select distinct "d".page_id as "Page Id", d.ord, n.title, 'it''s' as note,
       case when n.amount is null then 0 else cast(n.amount as decimal(10,2)) end as amount
from d left join notices as n on n.page_id = d.page_id
where n.title ilike '%fee%' and d.ord between 1 and 100
union all
select page_id, 1, title, 'x', 1.5 from notices
order by 2 desc
limit 10;"""
    assert infer_columns(sql, SOURCES) == [("Page Id", "VARCHAR"), ("ord", "BIGINT"), ("title", "VARCHAR"),
                                           ("note", "VARCHAR"), ("amount", "DECIMAL(12,2)")]


def test_the_contract_module_does_not_import_duckdb():
    """The default pyz carries no DuckDB (issue 25 point 5): validate's typer must not need it."""
    code = ("import sys; import collection.transform.contract as c; "
            "c.check_table('t', 'select 1 as x', [('x', 'integer')], {}); "
            "print('duckdb' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_keywords_are_columns_when_quoted_or_qualified():
    """D-68: a Reader column named like a keyword is read as DuckDB reads it: quoted or qualified."""
    sources = {"s": ["order", "year", "date"] + PROVENANCE}
    sql = 'select "order", s.year, cast(date as date) as "date" from s'
    assert infer_columns(sql, sources) == [("order", "VARCHAR"), ("year", "VARCHAR"), ("date", "DATE")]


def _tree_depth(root) -> int:
    """The depth sqlparse._check_depth bounds: one level per node, none per tuple of nodes."""
    from collection.transform.sqlparse import Node, child_fields

    deepest, stack = 0, [(root, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, tuple):
            stack.extend((v, depth) for v in node if isinstance(v, (Node, tuple)))
            continue
        deepest = max(deepest, depth)
        stack.extend((getattr(node, name), depth + 1) for name in child_fields(type(node))
                     if isinstance(getattr(node, name), (Node, tuple)))
    return deepest


@pytest.mark.parametrize("sql", [
    "select ((((-(-(1)))))) :: integer :: bigint as x",
    "select cast(cast(cast(cast(1 as integer) as integer) as integer) as integer) as x",
    "select case when not not (1 = 1) then (1 + (1 * (1 - 1))) end as x",
    "select coalesce(abs(abs(abs(abs(1)))), 1) as x order by 1",
    "with a as (select 1 as x) select x from (select x from (select x from a) q) r",
    "select " + " + ".join(["1"] * 36) + " as x",
    "select " + "- " * 30 + "1 as x",
])
def test_a_tree_is_at_most_twice_as_deep_as_its_tokens(sql):
    """sqlparse._check_depth does not walk a statement of at most 75 tokens: its tree cannot pass
    MAX_TREE_DEPTH, because a tree over n tokens is at most 2n - 1 levels deep. Deep shapes here,
    and the differential generator's statements below."""
    from collection.transform.sqlparse import parse, tokenize

    assert _tree_depth(parse(sql)) <= 2 * (len(tokenize(sql)) - 1) - 1


def test_generated_trees_are_at_most_twice_as_deep_as_their_tokens():
    import random

    from transform_gen import Gen, layout

    from collection.transform.sqlparse import ParseError, parse, tokenize

    rng = random.Random(25)
    checked = 0
    for _ in range(40):
        gen = Gen(rng, layout(rng))
        for _ in range(50):
            sql = gen.statement()
            try:
                query = parse(sql)
            except ParseError:
                continue
            assert _tree_depth(query) <= 2 * (len(tokenize(sql)) - 1) - 1, sql
            checked += 1
    assert checked >= 1000, checked
