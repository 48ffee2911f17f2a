"""The build's SQL cannot reach outside (issue 25 point 4; D-72). Three layers, each attacked alone:
validate's pure check (TRANSFORM_SQL_*), DuckDB's own parser in the engine (exactly one SELECT,
BUILD_SQL_REFUSED), and the sandboxed connection itself (external access off, extensions neither
installed nor loaded, configuration locked). Every attack leaves the previous build byte-identical
and creates no file. The network target is a loopback address that listens nowhere."""

from __future__ import annotations

import dataclasses
import json

import duckdb
import pytest

from build_kit import DATASET, collection, copy_state, replayed_state, snapshot, table, with_tables, write_doc
from collection.build.engine import BuildSettings, build, sandbox
from collection.build.inputs import locate
from collection.recipe.refusal import RefusedError
from collection.recipe.registration import register_bytes


def attacks(tmp):
    """(name, SQL, the code validate gives): each a way out of the dataset."""
    return [
        ("read_csv", "select * from read_csv('/etc/passwd')", "TRANSFORM_SQL_FORBIDDEN"),
        ("copy", f"COPY (select 1) TO '{tmp}/x'", "TRANSFORM_SQL_NOT_ONE_SELECT"),
        ("attach", f"ATTACH '{tmp}/x.db'", "TRANSFORM_SQL_NOT_ONE_SELECT"),
        ("install", "INSTALL httpfs", "TRANSFORM_SQL_NOT_ONE_SELECT"),
        ("load", "LOAD httpfs", "TRANSFORM_SQL_NOT_ONE_SELECT"),
        ("set", "SET enable_external_access=true", "TRANSFORM_SQL_NOT_ONE_SELECT"),
        ("https", "select * from read_parquet('https://127.0.0.1:1/x.parquet')", "TRANSFORM_SQL_FORBIDDEN"),
    ]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    directory = replayed_state(tmp_path_factory.mktemp("sandbox") / "state")
    res = collection("build", str(DATASET), "--state", str(directory))
    assert res.returncode == 0, res.stderr
    return directory


def _nothing_escaped(tmp) -> None:
    assert not (tmp / "x").exists() and not (tmp / "x.db").exists()


@pytest.mark.parametrize("index", range(7))
def test_the_engine_refuses_each_attack_with_and_without_the_pure_check(built, tmp_path, index):
    """D-72: called directly, the engine refuses with the pure check's code; with that check
    turned off, DuckDB's own parser or the sandbox refuses it (BUILD_SQL_REFUSED). Nothing written."""
    state = copy_state(built, tmp_path / "state")
    before = snapshot(state / "build")
    name, sql, code = attacks(tmp_path)[index]
    model = register_bytes(DATASET.read_bytes()).dataset
    attack = dataclasses.replace(model, tables=(dataclasses.replace(model.tables[0], sql=sql),))
    for check_sql, expected in ((True, code), (False, "BUILD_SQL_REFUSED")):
        with pytest.raises(RefusedError) as caught:
            build(attack, BuildSettings(str(state), check_sql=check_sql, force=True))
        assert caught.value.code == expected, (name, check_sql, caught.value.refusals)
        assert "'decisions'" in caught.value.refusals[0].message
        assert snapshot(state / "build") == before
        _nothing_escaped(tmp_path)


def test_the_sandboxed_connection_itself_refuses_every_attack(built, tmp_path):
    """D-72: the connection user SQL runs in, attacked with raw statements (no check before it):
    files, the network, ATTACH and COPY refused by disabled external access, INSTALL/LOAD refused,
    settings locked; the sources still read."""
    model = register_bytes(DATASET.read_bytes()).dataset
    item = locate(str(built), model.sources[0])
    connection = sandbox(":memory:", [item], "256MiB", 1, None)
    try:
        assert connection.execute("select count(*) from council_decisions").fetchone()[0] > 0
        for name, sql, _ in attacks(tmp_path):
            with pytest.raises(duckdb.Error) as caught:
                connection.execute(sql).fetchall()
            assert isinstance(caught.value, (duckdb.PermissionException, duckdb.InvalidInputException)), (name, caught.value)
        for setting in ("SET memory_limit='64GB'", "SET threads=64", "SET allowed_directories=['/']",
                        "SET autoload_known_extensions=true", "RESET lock_configuration"):
            with pytest.raises(duckdb.Error):
                connection.execute(setting)
        with pytest.raises(duckdb.PermissionException):
            connection.execute("select * from read_text('/etc/hostname')").fetchall()
        with pytest.raises(duckdb.PermissionException):        # the ledger beside the relation: not allowed
            connection.execute(f"select * from read_csv('{item.path[:-len('relation.csv')]}ledger.csv')").fetchall()
    finally:
        connection.close()
    _nothing_escaped(tmp_path)


@pytest.mark.parametrize("index", range(7))
def test_through_the_command_validate_refuses_first_and_build_refuses_alike(built, tmp_path, index):
    """issue 25 point 4 through the CLI: a dataset document holding the attack is refused by
    validate and by build with the same code (exit 1); the previous build is byte-identical."""
    state = copy_state(built, tmp_path / "state")
    before = snapshot(state / "build")
    name, sql, code = attacks(tmp_path)[index]
    path = write_doc(tmp_path / "d.json", with_tables([table("decisions", sql, [("x", "string")])]))
    checked = collection("validate", str(path), "--json")
    assert checked.returncode == 1
    assert json.loads(checked.stdout)["files"][0]["refusals"][0]["code"] == code
    res = collection("build", str(path), "--state", str(state), "--force", "--json")
    assert res.returncode == 1 and json.loads(res.stdout)["code"] == code, (name, res.stdout, res.stderr)
    assert snapshot(state / "build") == before
    _nothing_escaped(tmp_path)


def test_memory_is_bounded_by_the_option_and_a_query_past_it_is_refused_cleanly(built, tmp_path):
    """D-72: --memory-limit is DuckDB's limit: a self-join of every story pair that needs more is
    BUILD_ROWS_FAILED (Out of Memory) with nothing written, and builds under a larger limit."""
    state = copy_state(built, tmp_path / "state")
    before = snapshot(state / "build")
    sql = ("select a.page_id as page_id, b.page_id as other, a.story || b.story as both_stories "
           "from council_decisions a, council_decisions b where a.page_ordinal = b.page_ordinal "
           "and a.page_id < b.page_id order by a.page_id, b.page_id")
    doc = with_tables([table("pairs", sql, [("page_id", "string"), ("other", "string"), ("both_stories", "string")])])
    path = write_doc(tmp_path / "d.json", doc)
    res = collection("build", str(path), "--state", str(state), "--memory-limit", "64MiB", "--threads", "1", "--json")
    assert res.returncode == 1 and json.loads(res.stdout)["code"] == "BUILD_ROWS_FAILED", res.stderr
    assert "Out of Memory" in res.stderr and "'pairs'" in res.stderr
    assert snapshot(state / "build") == before
    res = collection("build", str(path), "--state", str(state), "--memory-limit", "1GiB", "--threads", "1", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["record"]["tables"][0]["rows"] > 50_000


def test_the_sandbox_takes_its_limits_and_temp_directory_from_the_build(built, tmp_path):
    """D-72: memory_limit, threads and the temp directory (inside the temporary generation) are
    the build's, set before the configuration is locked."""
    model = register_bytes(DATASET.read_bytes()).dataset
    item = locate(str(built), model.sources[0])
    temp = str(tmp_path / "generation" / "duckdb-temp")
    connection = sandbox(str(tmp_path / "x.duckdb"), [item], "300MiB", 1, temp)
    try:
        got = dict(connection.execute("select name, value from duckdb_settings() where name in "
                                      "('temp_directory', 'threads', 'memory_limit', 'enable_external_access', "
                                      "'lock_configuration', 'autoload_known_extensions', "
                                      "'autoinstall_known_extensions', 'TimeZone')").fetchall())
    finally:
        connection.close()
    assert got == {"temp_directory": temp, "threads": "1", "memory_limit": "300.0 MiB", "enable_external_access": "false",
                   "lock_configuration": "true", "autoload_known_extensions": "false",
                   "autoinstall_known_extensions": "false", "TimeZone": "UTC"}
