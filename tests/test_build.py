"""`collection build` end to end (issue 25 point 3; D-71, D-72): real state from a real replayed run
of the demo dataset, typed Parquet and the DuckDB file read back with DuckDB, the record checked by
its schema, refusals that keep the previous build byte for byte, rebuilds, and kills."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time

import duckdb
import pytest

from build_kit import (DATASET, ENV, ROOT, build_record_validator, collection, copy_state, council, replayed_state,
                       snapshot, table, with_tables, write_doc)
from collection.build.engine import BuildSettings, build
from collection.merge import csvio
from collection.merge.csvio import CsvWriter
from collection.recipe.refusal import RefusedError
from collection.recipe.registration import register_bytes
from collection.transform import contract


@pytest.fixture(scope="module")
def demo_state(tmp_path_factory):
    return replayed_state(tmp_path_factory.mktemp("demo") / "state")


@pytest.fixture
def state(demo_state, tmp_path):
    return copy_state(demo_state, tmp_path / "state")


@pytest.fixture(scope="module")
def built_state(demo_state, tmp_path_factory):
    """The demo state with one build made by the command."""
    directory = copy_state(demo_state, tmp_path_factory.mktemp("built") / "state")
    res = collection("build", str(DATASET), "--state", str(directory), "--json")
    assert res.returncode == 0, res.stderr
    return directory, json.loads(res.stdout)


def relation_rows(state) -> tuple[list[str], list[list[str]]]:
    with open(state / "council_decisions" / "current" / "relation.csv", newline="", encoding="utf-8") as f:
        rows = list(csvio.reader(f))
    return rows[0], rows[1:]


def test_build_writes_typed_parquet_and_a_duckdb_file_from_the_relation(built_state):
    """D-71, PROV-16..19: one Parquet file per table and dataset.duckdb in DIR/build/current, the
    declared types stored (integer BIGINT, timestamp TIMESTAMP WITH TIME ZONE), every row of the
    relation, values equal to the relation's text after the SQL's casts."""
    state, result = built_state
    current = state / "build" / "current"
    assert os.path.islink(current) and sorted(os.listdir(current)) == ["build.json", "dataset.duckdb", "decisions.parquet"]
    parquet = current / "decisions.parquet"
    types = {r[0]: r[1] for r in duckdb.sql(f"describe select * from read_parquet('{parquet}')").fetchall()}
    assert types == {"page_id": "VARCHAR", "page_ordinal": "BIGINT", "page_revision": "BIGINT", "page_url": "VARCHAR",
                     "page_fetched_at": "TIMESTAMP WITH TIME ZONE", "page_discovered_at": "TIMESTAMP WITH TIME ZONE",
                     "page_content_sha256": "VARCHAR", "title": "VARCHAR", "story": "VARCHAR",
                     "story_characters": "BIGINT"}
    header, rows = relation_rows(state)
    col = {name: i for i, name in enumerate(header)}
    expected = sorted(((r[col["page_id"]], int(r[col["page_ordinal"]])), r) for r in rows)
    got = duckdb.sql(f"select page_id, page_ordinal, page_revision, page_url, "
                     f"strftime(page_fetched_at at time zone 'UTC', '%Y-%m-%dT%H:%M:%SZ'), title, story, story_characters "
                     f"from read_parquet('{parquet}')").fetchall()
    assert len(got) == len(rows) == result["record"]["tables"][0]["rows"] > 400
    for (key, row), out in zip(expected, got):     # ORDER BY page_id, page_ordinal, kept in the file
        assert out == (row[col["page_id"]], int(row[col["page_ordinal"]]), int(row[col["page_revision"]]),
                       row[col["page_url"]], row[col["page_fetched_at"]], row[col["title"]], row[col["story"]],
                       len(row[col["story"]]))
    with duckdb.connect(str(current / "dataset.duckdb"), read_only=True) as db:
        assert [r[0] for r in db.sql("show tables").fetchall()] == ["decisions"]
        assert db.execute("select count(*) from decisions").fetchone()[0] == len(rows)
        assert db.execute("select typeof(page_fetched_at), typeof(page_ordinal) from decisions limit 1").fetchone() == \
            ("TIMESTAMP WITH TIME ZONE", "BIGINT")


def test_the_record_names_inputs_tables_and_files_and_matches_its_schema(built_state):
    """D-71: schemas/build-record.schema.json; each input's generation and relation digest (the
    sha256 of the bytes read), each table's rows and columns, each file's sha256 and size."""
    state, result = built_state
    record = json.loads((state / "build" / "current" / "build.json").read_text())
    assert record == result["record"]
    build_record_validator().validate(record)
    relation = (state / "council_decisions" / "current" / "relation.csv").read_bytes()
    (item,) = record["inputs"]
    assert item["source"] == "council_decisions"
    assert item["generation"] == os.path.basename(os.readlink(state / "council_decisions" / "current"))
    assert item["relation"] == {"sha256": hashlib.sha256(relation).hexdigest(), "bytes": len(relation)}
    for name, digest in list(record["files"].items()) + [(record["database"]["file"],
                                                           {k: record["database"][k] for k in ("sha256", "bytes")})]:
        data = (state / "build" / "current" / name).read_bytes()
        assert digest == {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}
    columns = {c["name"]: (c["declared"], c["select_type"], c["stored_type"]) for c in record["tables"][0]["columns"]}
    assert columns["page_ordinal"] == ("integer", "INTEGER", "BIGINT")
    assert columns["page_fetched_at"] == ("timestamp", "TIMESTAMP WITH TIME ZONE", "TIMESTAMP WITH TIME ZONE")
    assert record["engine"]["duckdb"] == duckdb.__version__
    assert (state / "build" / "current" / "build.json").read_text() == \
        json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"


def test_rebuilding_unchanged_inputs_changes_nothing(built_state, tmp_path):
    """D-71: the same inputs and tables are a no-op that says so; DIR/build is byte-identical."""
    state = copy_state(built_state[0], tmp_path / "state")
    before = snapshot(state / "build")
    res = collection("build", str(DATASET), "--state", str(state), "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["unchanged"] is True and out["record"] == built_state[1]["record"]
    assert snapshot(state / "build") == before
    text = collection("build", str(DATASET), "--state", str(state))
    assert text.returncode == 0 and "unchanged" in text.stdout.splitlines()[0]


def test_a_forced_rebuild_gives_the_same_record_and_parquet_bytes_at_any_thread_count(built_state, tmp_path):
    """D-71: Parquet's bytes are a function of the rows (1 or 2 threads alike); the record is the
    same but for `database`, the DuckDB file, whose bytes DuckDB does not reproduce."""
    state = copy_state(built_state[0], tmp_path / "state")
    first = built_state[1]["record"]
    parquet = (state / "build" / "current" / "decisions.parquet").read_bytes()
    for threads in ("1", "2"):
        res = collection("build", str(DATASET), "--state", str(state), "--force", "--threads", threads, "--json")
        assert res.returncode == 0, res.stderr
        out = json.loads(res.stdout)
        assert out["unchanged"] is False
        again = out["record"]
        assert {k: v for k, v in again.items() if k != "database"} == {k: v for k, v in first.items() if k != "database"}
        assert (state / "build" / "current" / "decisions.parquet").read_bytes() == parquet
    # --keep 2: the two newest builds stay
    assert len([n for n in os.listdir(state / "build" / "generations") if n.isdigit()]) == 2


@pytest.mark.slow
def test_parquet_bytes_of_many_row_groups_are_the_same_at_any_thread_count_and_limit(tmp_path):
    """D-71, D-83: row groups end at 16 MiB as well as at 122,880 rows; with a relation of several
    such groups, spilling under a small --memory-limit or not, at 1, 2 and 3 threads, the Parquet
    bytes are the same, and the database file holds the Parquet file's rows in its order."""
    from collection.merge.relation import PROVENANCE_COLUMNS

    reader = ["title", "story"]
    rng = random.Random(83)
    words = ["council", "road", "budget", "school", "park", "library", "housing", "noise"]
    rows = [[f"title {k}", " ".join(rng.choice(words) for _ in range(1500)), f"p{rng.randrange(10 ** 9):09d}",
             f"https://www.example.com/{k}", "2024-01-01T00:00:00Z", "0" * 64, str(k % 7), "2024-01-01T00:00:00Z",
             "1"] for k in range(6000)]
    state = tmp_path / "state"
    _store_relation(state, "council_decisions", reader + list(PROVENANCE_COLUMNS), rows, reader)
    sql = "select page_id, cast(page_revision as integer) as revision, story from council_decisions order by page_id"
    path = write_doc(tmp_path / "d.json", with_tables([table("stories", sql, [("page_id", "string"),
                                                                              ("revision", "integer"),
                                                                              ("story", "string")])], council()))
    seen = set()
    for options in (["--threads", "1"], ["--threads", "2"], ["--threads", "3", "--memory-limit", "256MiB"]):
        res = collection("build", str(path), "--state", str(state), "--force", *options)
        assert res.returncode == 0, res.stderr[:2000]
        current = state / "build" / "current"
        seen.add(hashlib.sha256((current / "stories.parquet").read_bytes()).hexdigest())
    groups = duckdb.sql(f"select count(distinct row_group_id) from parquet_metadata('{current / 'stories.parquet'}')")
    assert groups.fetchall()[0][0] >= 3
    assert len(seen) == 1
    with duckdb.connect(str(current / "dataset.duckdb"), read_only=True) as db:
        stored = db.execute("select page_id, revision, story from stories").fetchall()
    assert stored == duckdb.sql(f"select * from read_parquet('{current / 'stories.parquet'}')").fetchall()
    assert [r[0] for r in stored] == sorted(r[2] for r in rows)


@pytest.mark.parametrize("groups, size", [
    ([[14336] * 13 + [13632]], 14336),             # bench/build.py's 200,000 rows, cut at 16 MiB
    ([[122880, 77120]], 122880),                   # cut at ROW_GROUP_SIZE: DuckDB's own default
    ([[20480, 20480, 7]], 20480),                  # 10 vectors: 10 divides 60, the most a group holds
    ([[6144, 4096, 100]], 2048),                   # unequal groups: their common vectors
    ([[14336, 14336, 5], [12288, 40]], 2048),      # one size for the file: every table's groups
    ([[26624, 26624, 9]], 26624),                  # 13 vectors, a prime: the whole group
    ([[2048 * 70, 2048 * 70, 3]], 2048 * 35),      # 70 vectors: the largest divisor within 60
    ([[1000, 1000, 5]], 2048),                     # not cut at vectors: vector-sized groups
    ([[500]], 122880),                             # one group per file: DuckDB's default
    ([[500], [70000]], 122880),
    ([], 122880),
])
def test_the_database_row_group_divides_every_parquet_row_group(groups, size):
    """D-83: dataset.duckdb's row groups are whole vectors, at most DuckDB's 122,880 rows, and divide
    every Parquet row group but a file's last, so DuckDB's ordered insert writes each batch on the
    thread that read it."""
    from collection.build.engine import database_row_group

    assert database_row_group(groups) == size


def test_the_database_fill_keeps_the_parquet_files_order_on_every_thread(tmp_path):
    """D-71, D-83: dataset.duckdb holds each Parquet file's rows in the file's order when DuckDB fills
    it on several threads, in row groups that divide the Parquet file's; the stored types are the
    declared ones."""
    from collection.build.engine import _Clock, fill_database
    from collection.recipe.model import Column, Table

    parquet = tmp_path / "t.parquet"
    # rows in an order no thread would make by itself: by a hash, with strings long enough to compress
    duckdb.sql(f"COPY (SELECT i, md5(i::varchar) || repeat('x', i % 300) AS s FROM range(100000) t(i) "
               f"ORDER BY md5(i::varchar)) TO '{parquet}' (FORMAT parquet, ROW_GROUP_SIZE 6144)")
    database = tmp_path / "dataset.duckdb"
    tables = [Table("t", "select 1", (Column("i", "integer"), Column("s", "string")))]
    fill_database(tables, str(database), [str(parquet)], 2, "256MiB", str(tmp_path / "temp"), str(tmp_path),
                  _Clock(None))
    expected = duckdb.sql(f"SELECT i, s FROM read_parquet('{parquet}')").fetchall()
    with duckdb.connect(str(database), read_only=True) as db:
        assert db.execute("SELECT i, s FROM t").fetchall() == expected
        assert db.execute("SELECT typeof(i), typeof(s) FROM t LIMIT 1").fetchone() == ("BIGINT", "VARCHAR")
        sizes = db.execute("SELECT row_group_id, max(count) FROM pragma_storage_info('t') GROUP BY ALL "
                           "ORDER BY 1").fetchall()
    assert [rows for _, rows in sizes] == [6144] * 16 + [100000 - 16 * 6144]


def test_one_row_group_size_serves_every_table_of_the_database(tmp_path):
    """D-83: the database's row-group size divides every table's Parquet row groups (6,144 and 4,096
    rows give 2,048), not only the first or the last table's."""
    from collection.build.engine import _Clock, fill_database
    from collection.recipe.model import Column, Table

    paths = []
    for name, group in (("a", 6144), ("b", 4096)):
        paths.append(str(tmp_path / f"{name}.parquet"))
        duckdb.sql(f"COPY (SELECT i FROM range(20000) t(i)) TO '{paths[-1]}' (FORMAT parquet, ROW_GROUP_SIZE {group})")
    tables = [Table(name, "select 1", (Column("i", "integer"),)) for name in ("a", "b")]
    database = tmp_path / "dataset.duckdb"
    fill_database(tables, str(database), paths, 2, "256MiB", str(tmp_path / "temp"), str(tmp_path), _Clock(None))
    with duckdb.connect(str(database), read_only=True) as db:
        for name in ("a", "b"):
            sizes = [r[0] for r in db.execute(f"SELECT max(count) FROM pragma_storage_info('{name}') "
                                              "GROUP BY row_group_id ORDER BY row_group_id").fetchall()]
            assert sizes[:-1] == [2048] * (len(sizes) - 1) and sum(sizes) == 20000
            assert db.execute(f"SELECT i FROM {name}").fetchall() == [(i,) for i in range(20000)]


def test_a_fill_that_duckdb_cannot_make_is_refused(tmp_path):
    """D-71, D-72: a DuckDB error while filling dataset.duckdb (here a value its declared type cannot
    hold) is BUILD_ROWS_FAILED naming the table, never a database missing that table."""
    from collection.build.engine import _Clock, fill_database
    from collection.recipe.model import Column, Table

    parquet = tmp_path / "t.parquet"
    duckdb.sql(f"COPY (SELECT 'not a number' AS n) TO '{parquet}' (FORMAT parquet)")
    with pytest.raises(RefusedError) as refused:
        fill_database([Table("t", "select 1", (Column("n", "integer"),))], str(tmp_path / "dataset.duckdb"),
                      [str(parquet)], 2, "256MiB", str(tmp_path / "temp"), str(tmp_path), _Clock(None))
    (refusal,) = refused.value.refusals
    assert refusal.code == "BUILD_ROWS_FAILED" and refusal.pointer == "/tables/0/sql" and "'t'" in refusal.message


def test_a_deadline_that_interrupts_the_fill_is_the_deadline(tmp_path):
    """D-72: --deadline firing while DuckDB fills dataset.duckdb stops the build as BUILD_DEADLINE
    (here: the fill's own _Deadline), never BUILD_ROWS_FAILED blaming the rows. The interrupt is
    sent again and again from the moment the fill's statement is about to run (the clock's check just
    before it), so it lands inside that statement however the threads are scheduled."""
    import threading

    from collection.build.engine import _Clock, _Deadline, fill_database
    from collection.recipe.model import Column, Table

    class Interrupting(_Clock):
        def __init__(self):
            super().__init__(None)
            self.stop = threading.Event()
            self.sent = 0

        def check(self):
            super().check()
            threading.Thread(target=self._interrupt, daemon=True).start()

        def _interrupt(self):
            while not self.stop.wait(0.002):
                try:
                    self.connection.interrupt()
                except duckdb.Error:       # closed: the fill is over
                    return
                self.sent += 1

    parquet = tmp_path / "t.parquet"
    duckdb.sql(f"COPY (SELECT i, md5(i::varchar) || repeat('x', i % 300) AS s FROM range(400000) t(i)) "
               f"TO '{parquet}' (FORMAT parquet, ROW_GROUP_SIZE 6144)")
    clock = Interrupting()
    try:
        with pytest.raises(_Deadline):
            fill_database([Table("t", "select 1", (Column("i", "integer"), Column("s", "string")))],
                          str(tmp_path / "dataset.duckdb"), [str(parquet)], 2, "256MiB", str(tmp_path / "temp"),
                          str(tmp_path), clock)
    finally:
        clock.stop.set()
    assert clock.sent >= 1


def test_rows_that_fail_at_run_time_refuse_the_build_and_keep_the_previous_one(built_state, tmp_path):
    """D-71: the pure typer accepts cast(title as integer) (INTEGER into integer); DuckDB fails on
    the first title -> BUILD_ROWS_FAILED naming the table and DuckDB's message; nothing written."""
    state = copy_state(built_state[0], tmp_path / "state")
    before = snapshot(state / "build")
    doc = with_tables([table("titles", "select page_id, cast(title as integer) as title_number from council_decisions",
                             [("page_id", "string"), ("title_number", "integer")])])
    path = write_doc(tmp_path / "dataset.json", doc)
    assert collection("validate", str(path)).returncode == 0          # the pure check passes
    res = collection("build", str(path), "--state", str(state), "--json")
    assert res.returncode == 1, res.stderr
    out = json.loads(res.stdout)
    assert out["code"] == "BUILD_ROWS_FAILED" and out["refusals"][0]["pointer"] == "/tables/0/sql"
    assert "'titles'" in out["refusals"][0]["message"] and "Conversion Error" in out["refusals"][0]["message"]
    assert snapshot(state / "build") == before


def test_a_refused_first_build_leaves_no_build_directory(state, tmp_path):
    """D-71: a first build refused after it took the build's lock (here: rows DuckDB cannot cast)
    leaves the state as it was: no DIR/build, not even its lock or an empty generations
    directory; a build after it makes DIR/build afresh."""
    before = snapshot(state)
    assert not (state / "build").exists()
    doc = with_tables([table("titles", "select page_id, cast(title as integer) as title_number from council_decisions",
                             [("page_id", "string"), ("title_number", "integer")])])
    res = collection("build", str(write_doc(tmp_path / "dataset.json", doc)), "--state", str(state), "--json")
    assert res.returncode == 1 and json.loads(res.stdout)["code"] == "BUILD_ROWS_FAILED", res.stderr
    assert snapshot(state) == before
    res = collection("build", str(DATASET), "--state", str(state), "--json")
    assert res.returncode == 0, res.stderr
    assert (state / "build" / "current" / "build.json").is_file() and (state / "build" / "lock").is_file()


def test_a_refused_later_build_keeps_the_build_directory(built_state, tmp_path):
    """D-71: only a first build removes what it made; with a previous build, the lock file and the
    generations stay exactly as they were."""
    state = copy_state(built_state[0], tmp_path / "state")
    before = snapshot(state / "build")
    doc = with_tables([table("titles", "select page_id, cast(title as integer) as title_number from council_decisions",
                             [("page_id", "string"), ("title_number", "integer")])])
    res = collection("build", str(write_doc(tmp_path / "dataset.json", doc)), "--state", str(state), "--json")
    assert res.returncode == 1, res.stderr
    assert snapshot(state / "build") == before and (state / "build" / "lock").is_file()


def test_the_engine_compares_duckdbs_own_types_with_the_declaration(state):
    """D-49, D-67, PROV-18: with validate's checks bypassed (a model made by hand), DuckDB's
    DESCRIBE finds the bare page_ordinal and the refusal is validate's own, message and fix."""
    model = register_bytes(DATASET.read_bytes()).dataset
    bare = dataclasses.replace(model.tables[0], sql="select page_id, page_ordinal from council_decisions",
                               columns=model.tables[0].columns[:2])
    with pytest.raises(RefusedError) as caught:
        build(dataclasses.replace(model, tables=(bare,)), BuildSettings(str(state), check_sql=False))
    (refusal,) = caught.value.refusals
    pure = contract.check_table(bare.name, bare.sql, bare.declared, {"council_decisions": model.sources[0].reader.relation_columns})
    assert (refusal.code, refusal.message, refusal.pointer) == (pure[0].code, pure[0].message, "/tables/0/sql")
    assert refusal.code == "TRANSFORM_COLUMN_TYPE_MISMATCH" and "cast(page_ordinal as integer)" in refusal.message
    assert not (state / "build").exists()


@pytest.mark.parametrize("sql, code, at", [
    # DESCRIBE's binder error, after a line holding a two-byte character (DuckDB counts bytes)
    ("  -- typed\nselect page_id,\n  'é' || title as t,\n  nope from council_decisions",
     "BUILD_SQL_REFUSED", "line 4, column 3 of the SQL"),
    # DuckDB's parser, on the SQL as given
    ("select page_id from council_decisions where", "BUILD_SQL_REFUSED", "line 1, column 39 of the SQL"),
])
def test_a_refusal_from_duckdb_names_the_line_and_column_in_the_sql(state, sql, code, at):
    """issue 25 point 2, D-72: where DuckDB places the problem (errors_as_json's position), the
    build's refusal says where in the table's SQL, as validate's findings do; the message stays one
    line. Validate's checks bypassed (a model made by hand); nothing written."""
    model = register_bytes(DATASET.read_bytes()).dataset
    bad = dataclasses.replace(model.tables[0], sql=sql, columns=model.tables[0].columns[:1])
    with pytest.raises(RefusedError) as caught:
        build(dataclasses.replace(model, tables=(bad,)), BuildSettings(str(state), check_sql=False))
    (refusal,) = caught.value.refusals
    assert refusal.code == code and refusal.pointer == "/tables/0/sql"
    assert refusal.message.startswith(f"table 'decisions', {at}: "), refusal.message
    assert "\n" not in refusal.message and "{" not in refusal.message
    assert not (state / "build").exists()


def test_a_refused_document_is_refused_as_validate_refuses_it(state, tmp_path):
    """issue 25 point 3: the same refusals and exit code as validate; nothing written."""
    doc = with_tables([table("decisions", "select page_id, page_ordinal from council_decisions",
                             [("page_id", "string"), ("page_ordinal", "integer")])])
    path = write_doc(tmp_path / "dataset.json", doc)
    checked = collection("validate", str(path), "--json")
    res = collection("build", str(path), "--state", str(state), "--json")
    assert checked.returncode == res.returncode == 1
    wanted = [(r["code"], r["pointer"], r["message"]) for r in json.loads(checked.stdout)["files"][0]["refusals"]]
    got = [(r["code"], r["pointer"], r["message"]) for r in json.loads(res.stdout)["refusals"]]
    assert got == wanted and got[0][0] == "TRANSFORM_COLUMN_TYPE_MISMATCH"
    assert f"{path}:" in res.stderr and "TRANSFORM_COLUMN_TYPE_MISMATCH" in res.stderr
    assert not (state / "build").exists()


def test_a_source_without_state_is_refused_naming_the_run_to_make_first(tmp_path):
    """D-71: BUILD_NO_STATE names the source and `collection run … --only NAME`."""
    res = collection("build", str(DATASET), "--state", str(tmp_path / "empty"))
    assert res.returncode == 1
    assert "BUILD_NO_STATE" in res.stderr and "--only council_decisions" in res.stderr
    assert not (tmp_path / "empty" / "build").exists()


def test_a_dataset_without_tables_and_a_source_document(state, tmp_path):
    doc = council()
    del doc["tables"]
    res = collection("build", str(write_doc(tmp_path / "d.json", doc)), "--state", str(state))
    assert res.returncode == 1 and "BUILD_NO_TABLES" in res.stderr
    res = collection("build", str(ROOT / "fixtures" / "recipes" / "council_decisions.json"), "--state", str(state))
    assert res.returncode == 2 and "source document" in res.stderr


def test_a_relation_written_under_another_pin_is_refused(state, tmp_path):
    """PROV-02, REF-05: the pin now gives an `author` column the relation does not have."""
    doc = council()
    params = doc["sources"][0]["connector"]["parameters"]
    params[2]["value"] = '{"metadata":["author"]}'
    path = write_doc(tmp_path / "d.json", doc)
    assert collection("validate", str(path)).returncode == 0
    res = collection("build", str(path), "--state", str(state))
    assert res.returncode == 1 and "BUILD_RELATION_COLUMNS" in res.stderr


def test_a_relation_whose_bytes_are_not_its_records_is_damaged_state(state):
    """The digest computed while DuckDB reads must be run.json's: a changed byte is STATE_DAMAGED."""
    relation = state / "council_decisions" / "current" / "relation.csv"
    data = bytearray(relation.read_bytes())
    at = data.index(b"Summary")
    data[at] = ord("s")
    os.chmod(relation, 0o644)
    relation.write_bytes(bytes(data))
    res = collection("build", str(DATASET), "--state", str(state))
    assert res.returncode == 1 and "STATE_DAMAGED" in res.stderr, res.stderr
    assert not (state / "build").exists()          # a refused first build leaves no DIR/build (D-71)


def _store_relation(state, name: str, header: list[str], rows: list[list[str]], reader_columns) -> None:
    """A source's current generation written through the state store, as a run writes it."""
    from collection.store.generations import LEDGER, RELATION, RUN_RECORD, StateStore

    with StateStore(str(state / name)) as store:
        generation = store.begin()
        sink = generation.open_text(RELATION)
        if header:
            CsvWriter(sink).writerows([header, *rows])
        relation = generation.close_text(RELATION)
        ledger = generation.write_bytes(LEDGER, b"")
        record = {"run_number": 1, "generation": generation.name, "finished_at": "2024-01-01T00:00:00Z",
                  "coverage": {}, "truncated": False, "rows": len(rows), "corrections": [],
                  "files": {RELATION: relation.as_dict(), LEDGER: ledger.as_dict()}}
        generation.write_bytes(RUN_RECORD, json.dumps(record).encode())
        store.commit(generation)


def test_the_relation_is_read_in_its_exact_dialect_and_empty_fields_stay_empty(tmp_path):
    """D-02, PROV-16, D-71: quotes, commas, LF and CR inside fields, non-ASCII, a field that is
    only a quote, and '' (never NULL: the CSV has no NULL) come back exactly; a relation of zero
    bytes (the empty relation of a full run) is an empty table."""
    from collection.merge.relation import PROVENANCE_COLUMNS

    doc = council()
    reader = ["title", "story"]
    header = reader + list(PROVENANCE_COLUMNS)
    values = ["", '"', 'a "quoted", word', "line\nbreak", "carriage\rreturn", "crlf\r\n", "ünï ☃ 𝄞", " lead", ","]
    rows = []
    for i, v in enumerate(values):
        rows.append([v, values[-1 - i], f"p{i:02d}", f"https://www.example.com/{i}", "2024-01-01T00:00:00Z",
                     "0" * 64, "1", "2024-01-01T00:00:00Z", "1"])
    state = tmp_path / "state"
    _store_relation(state, "council_decisions", header, rows, reader)
    sql = "select page_id, title, story, title is null as title_null from council_decisions order by page_id"
    doc = with_tables([table("texts", sql, [("page_id", "string"), ("title", "string"), ("story", "string"),
                                            ("title_null", "boolean")])], doc)
    path = write_doc(tmp_path / "d.json", doc)
    res = collection("build", str(path), "--state", str(state))
    assert res.returncode == 0, res.stderr
    got = duckdb.sql(f"select page_id, title, story, title_null from "
                     f"read_parquet('{state / 'build' / 'current' / 'texts.parquet'}')").fetchall()
    assert got == [(r[2], r[0], r[1], False) for r in rows]

    empty = tmp_path / "empty"
    _store_relation(empty, "council_decisions", [], [], reader)
    assert (empty / "council_decisions" / "current" / "relation.csv").stat().st_size == 0
    res = collection("build", str(path), "--state", str(empty), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["record"]["tables"][0]["rows"] == 0


def test_a_row_longer_than_the_readers_first_bound_is_read_whole(tmp_path):
    """D-83: the relation is read first with a CSV buffer bounded by LINE_BYTES per row; a story
    longer than that (with quotes and line breaks in it) makes the build read it again with the
    1 GiB bound, and its Parquet and database rows are the relation's, byte for byte."""
    from collection.build.engine import LINE_BYTES
    from collection.merge.relation import PROVENANCE_COLUMNS

    reader = ["title", "story"]
    long_story = ('a "long" story\n' * (LINE_BYTES // 15 + 1))
    assert len(long_story.encode()) > LINE_BYTES
    rows = [[f"t{i}", story, f"p{i}", f"https://www.example.com/{i}", "2024-01-01T00:00:00Z", "0" * 64, "1",
             "2024-01-01T00:00:00Z", "1"] for i, story in enumerate(["short", long_story, "after"])]
    state = tmp_path / "state"
    _store_relation(state, "council_decisions", reader + list(PROVENANCE_COLUMNS), rows, reader)
    sql = "select page_id, story from council_decisions order by page_id"
    path = write_doc(tmp_path / "d.json", with_tables([table("stories", sql, [("page_id", "string"),
                                                                              ("story", "string")])], council()))
    res = collection("build", str(path), "--state", str(state), "--json")
    assert res.returncode == 0, res.stderr[:2000]
    current = state / "build" / "current"
    expected = [(r[2], r[1]) for r in rows]
    assert duckdb.sql(f"select page_id, story from read_parquet('{current / 'stories.parquet'}')").fetchall() == expected
    with duckdb.connect(str(current / "dataset.duckdb"), read_only=True) as db:
        assert db.execute("select page_id, story from stories").fetchall() == expected
    assert json.loads(res.stdout)["record"]["tables"][0]["rows"] == 3


def test_a_deadline_interrupts_the_build_and_writes_nothing(state, tmp_path):
    """D-72: --deadline interrupts DuckDB; BUILD_DEADLINE, the previous build unchanged."""
    doc = with_tables([table("slow", "select count(*) as n from council_decisions a, council_decisions b, council_decisions c, "
                                     "council_decisions d where a.story || b.title < c.story || d.title",
                             [("n", "integer")])])
    path = write_doc(tmp_path / "d.json", doc)
    res = collection("build", str(path), "--state", str(state), "--deadline", "1", "--threads", "1")
    assert res.returncode == 1 and "BUILD_DEADLINE" in res.stderr, res.stderr
    assert not (state / "build").exists()          # a refused first build leaves no DIR/build (D-71)


def _check_build(state) -> str | None:
    """The current build's generation, after checking that its files are the record's."""
    current = state / "build" / "current"
    if not os.path.lexists(current):
        return None
    record = json.loads((current / "build.json").read_text())
    for name, digest in record["files"].items():
        data = (current / name).read_bytes()
        assert digest == {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}, name
    assert hashlib.sha256((current / "dataset.duckdb").read_bytes()).hexdigest() == record["database"]["sha256"]
    with duckdb.connect(str(current / "dataset.duckdb"), read_only=True) as db:
        assert db.execute("select count(*) from decisions").fetchone()[0] == record["tables"][0]["rows"]
    return os.readlink(current)


@pytest.mark.slow
def test_a_kill_at_any_moment_leaves_the_previous_build_or_the_new_one(built_state, tmp_path):
    """D-71, as tests/test_crash_safety.py for the store: SIGKILL `collection build --force` at
    instants spread over a whole build; after each, DIR/build/current is a whole build (its files
    are its record's), and the next build recovers and completes."""
    state = copy_state(built_state[0], tmp_path / "state")
    command = [sys.executable, "-m", "collection", "build", str(DATASET), "--state", str(state), "--force"]
    started = time.monotonic()
    subprocess.run(command, check=True, capture_output=True, cwd=ROOT, env=ENV, timeout=120)
    whole = time.monotonic() - started
    rng = random.Random(25)
    for k in range(8):
        before = _check_build(state)
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT, env=ENV)
        time.sleep(whole * (0.3 + 0.8 * k / 8) + rng.uniform(0, whole * 0.1))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert before is not None and _check_build(state) is not None
    res = collection("build", str(DATASET), "--state", str(state), "--force", "--json")
    assert res.returncode == 0, res.stderr
    _check_build(state)
    leftovers = [n for n in os.listdir(state / "build" / "generations") if not n.isdigit()]
    assert leftovers == []


def test_one_build_at_a_time(built_state, tmp_path):
    """D-71: DIR/build/lock is held by the build that writes; a second one is STATE_LOCKED and
    changes nothing."""
    from collection.store.generations import StateStore

    state = copy_state(built_state[0], tmp_path / "state")
    with StateStore(str(state / "build")):
        before = snapshot(state / "build")
        res = collection("build", str(DATASET), "--state", str(state), "--force")
        assert res.returncode == 1 and "STATE_LOCKED" in res.stderr and "collection build" in res.stderr
        assert snapshot(state / "build") == before
