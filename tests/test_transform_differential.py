"""The pure typer against DuckDB 2.0.1 over many generated transforms (issue 25 point 5; D-67, D-68).

validate types a table's SQL without DuckDB (the default collection.pyz does not carry it); build
asks DuckDB itself. These tests keep the two in step on 2,500 seeded random SELECTs over random
source layouts (tests/transform_gen.py):

- whatever the pure typer accepts, DuckDB's DESCRIBE gives the same names and types;
- whatever DuckDB refuses, the pure typer refuses too;
- check_table's findings (verdict, code, column, declared and actual type, fix, position) equal
  compare_columns over DuckDB's DESCRIBE, for random declarations of the result.

The typer may refuse SQL DuckDB accepts (that is the subset's edge, D-68), but the generator draws
mostly inside the subset, so a typer that refused everything would fail the acceptance floor.
"""

from __future__ import annotations

import random

import pytest

duckdb = pytest.importorskip("duckdb")

from collection.transform.contract import SqlError, check_table, compare_columns, infer_columns  # noqa: E402
from transform_gen import Gen, declaration, layout  # noqa: E402

SEEDS = range(10)
PER_SEED = 250
LAYOUTS_PER_SEED = 5


def _connect(sources: dict[str, list[str]]):
    con = duckdb.connect()
    for name, cols in sources.items():
        columns = ", ".join('"' + c.replace('"', '""') + '" VARCHAR' for c in cols)
        con.execute(f'CREATE TABLE "{name}" ({columns})')
    return con


def _describe(con, sql: str):
    try:
        return [(row[0], row[1]) for row in con.execute("DESCRIBE " + sql).fetchall()], None
    except duckdb.Error as e:
        return None, str(e).splitlines()[0]


def _key(f):
    return (f.code, f.column, f.declared, f.actual, f.fix, f.offset, f.sql_line, f.sql_column, f.message)


@pytest.mark.parametrize("seed", SEEDS, ids=[f"seed{s}" for s in SEEDS])
def test_pure_typer_agrees_with_duckdb_describe(seed):
    """D-68: accepted SQL types exactly as DuckDB types it; SQL DuckDB refuses is refused."""
    rng = random.Random(1000 + seed)
    accepted = refused_by_duckdb = mismatches_seen = 0
    disagreements = []
    for _ in range(LAYOUTS_PER_SEED):
        sources = layout(rng)
        con = _connect(sources)
        gen = Gen(rng, sources)
        for _ in range(PER_SEED // LAYOUTS_PER_SEED):
            sql = gen.statement()
            duck, duck_error = _describe(con, sql)
            try:
                mine = infer_columns(sql, sources)
            except SqlError:
                mine = None
            if duck is None:
                refused_by_duckdb += 1
                if mine is not None:
                    disagreements.append(("accepted what DuckDB refuses", sql, mine, duck_error))
                continue
            if mine is None:
                continue
            accepted += 1
            if mine != duck:
                disagreements.append(("types differ", sql, mine, duck))
                continue
            declared = declaration(rng, duck)
            ours = [_key(f) for f in check_table("t", sql, declared, sources)]
            theirs = [_key(f) for f in compare_columns("t", sql, declared, duck, sources=sources)]
            if ours != theirs:
                disagreements.append(("check_table != compare_columns(DESCRIBE)", sql, ours, theirs))
            mismatches_seen += any(k[0] == "TRANSFORM_COLUMN_TYPE_MISMATCH" for k in ours)
    assert disagreements == []
    # the generator must reach both sides of the differential, or the test proves nothing
    assert accepted >= PER_SEED * 0.3, accepted
    assert refused_by_duckdb >= PER_SEED * 0.1, refused_by_duckdb
    assert mismatches_seen >= 10, mismatches_seen
