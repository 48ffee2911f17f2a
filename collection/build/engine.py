"""The build: a dataset's tables in an embedded DuckDB, written as one atomic generation (D-71, D-72).

Layout under the state directory DIR (the sources' own state is DIR/<source>/):

    DIR/build/lock                       flock'd by the build that owns DIR/build
    DIR/build/current -> generations/000002
    DIR/build/generations/000002/        build.json, dataset.duckdb, <table>.parquet
    DIR/build/generations/.tmp-000003-<pid>/   a build being written (DuckDB's spill files
                                          in its duckdb-temp/); removed by the next build

The generation is made and switched by the state store's own code (StateStore: a temporary
directory, every file fsynced, renamed to its number, `current` replaced atomically), so a kill
at any instant leaves the previous build or the new one.

Order of work, so a refused build writes nothing:
1. every table's SQL passes the pure statement check (the one validate makes; `check_sql`);
2. each source's current relation is located and its header checked (inputs.py);
3. in an in-memory sandboxed DuckDB: DuckDB's own parser must see exactly one SELECT, and its
   DESCRIBE of the SELECT must give the declared names and types (contract.compare_columns,
   the same findings validate gives);
4. only then is DIR/build locked and a temporary generation begun; in a sandboxed connection
   each table's Parquet file is written straight from its SELECT, cast to the stored types
   (types.STORED_AS): `COPY (SELECT …) TO '<table>.parquet'`, as DuckDB alone would write it; a
   row that fails (a cast of 'abc') is BUILD_ROWS_FAILED and the generation is abandoned;
5. the user's SQL is done: the build alone fills dataset.duckdb from those Parquet files (a
   columnar read, never a second evaluation of the SELECT, so the two files hold the same rows),
   writes the record, and commits the generation.

The sandbox (D-72): sources are temporary views over read_csv of the relation files; then
`allowed_paths` is exactly those files and the one table's Parquet file, external access is
disabled, extension autoload and autoinstall are off, and the configuration is locked, before any
user SQL runs. DuckDB's memory limit and threads are set from the options (D-83); its temp
directory is inside the temporary generation.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import threading
from dataclasses import dataclass
from typing import Any, Callable, Mapping, NamedTuple, Sequence

import duckdb

from collection import __version__
from collection.build.inputs import Digest, Input, digest_refusal, locate
from collection.canonical import canonical_json
from collection.recipe.model import Dataset, Table
from collection.recipe.refusal import Refusal, RefusedError
from collection.redact import scrub
from collection.store.generations import StateLocked, StateStore
from collection.store.groupsync import fsync_directory
from collection.transform import contract
from collection.transform.types import STORED_AS

BUILD_DIR = "build"
RECORD = "build.json"
DATABASE = "dataset.duckdb"
TEMP = "duckdb-temp"
RECORD_VERSION = 1
DEFAULT_KEEP = 2
MAX_THREADS = 8
# Fixed so the bytes depend on the rows alone (D-71): DuckDB's defaults may change between versions.
PARQUET_OPTIONS = "FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 122880, ROW_GROUP_SIZE_BYTES 16777216"
_MiB = 1 << 20
# DuckDB's CSV reader holds a buffer of at least max_line_size bytes, and at 1 GiB that buffer is
# the whole relation; a row longer than LINE_BYTES (a story of many MiB) makes the build read the
# relations again with the bound of 1 GiB (_LongRow), which any relation the writer made meets.
LINE_BYTES = 8 * _MiB
LONG_LINE_BYTES = 1 << 30
# dataset.duckdb's strings: DuckDB's default (dictionary + FSST) took 3x as long to write as the
# Parquet file itself in bench/build.py; zstd writes them at about the speed of reading them.
DATABASE_COMPRESSION = "zstd"
ALLOCATOR_FLUSH = "16MiB"
# DuckDB's vector, the unit its row groups are counted in, and its default (largest) row group.
VECTOR_ROWS = 2048
DUCKDB_ROW_GROUP = 122880
_OUT = "dataset_out"
MIN_MEMORY = 256 * _MiB
MAX_MEMORY = 4096 * _MiB
MEMORY_PER_THREAD = 512 * _MiB


class Threads(NamedTuple):
    """DuckDB's threads for the tables (their SELECTs sort under the memory limit) and for filling
    dataset.duckdb from the Parquet files (no sort: at most a row group per thread; D-83)."""
    tables: int
    fill: int


@dataclass(frozen=True)
class BuildSettings:
    state_dir: str
    memory_limit: str | None = None      # DuckDB's spelling ("1GB", "512MiB"); None: default_memory_limit
    threads: int | None = None           # None: default_threads
    keep: int = DEFAULT_KEEP
    force: bool = False                  # build even when the inputs and tables are those of the current build
    deadline_seconds: float | None = None
    check_sql: bool = True               # the pure statement check first (off only to attack the sandbox alone)
    dataset_path: str = "DATASET"        # how the command was given the document (for the advice it prints)


def default_threads(memory_limit: int | None = None) -> int:
    """The CPU count, at most MAX_THREADS; under the default memory limit also at most one thread per
    MEMORY_PER_THREAD of it (D-83): each DuckDB thread sorts and writes in buffers of its own (DuckDB's
    out-of-memory guide names fewer threads first), so a small limit is not spent on parallel
    buffers that make the sort spill."""
    threads = max(1, min(os.cpu_count() or 1, MAX_THREADS))
    if memory_limit is not None:
        threads = max(1, min(threads, memory_limit // MEMORY_PER_THREAD))
    return threads


def default_memory_limit(input_bytes: int) -> int:
    """One and a half times the relations' bytes, at least 256 MiB, at most 4 GiB and half the
    machine's memory (D-72, D-83): what a sort of the relation needs in memory with one thread,
    bounded so the build's peak stays near twice the relation and a build beside a run on a small
    server spills to disk instead of being killed."""
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        physical = 2 * MAX_MEMORY
    return int(max(MIN_MEMORY, min(3 * input_bytes // 2, MAX_MEMORY, physical // 2)))


def tables_digest(tables: Sequence[Table]) -> str:
    """sha256 of what a table's rows depend on: names, SQL, declared columns (not descriptions)."""
    import hashlib

    doc = [{"name": t.name, "sql": t.sql, "columns": [{"name": c.name, "type": c.type} for c in t.columns]}
           for t in tables]
    return hashlib.sha256(canonical_json(doc).encode("utf-8")).hexdigest()


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def read_csv_sql(item: Input, line_bytes: int = LINE_BYTES) -> str:
    """The relation read exactly as the writer wrote it (collection/merge/csvio.py, D-02): RFC 4180,
    comma, double quote doubled to escape it, LF rows, a header, every column VARCHAR by its
    declared name; no sniffing, no type detection, and no NULL: an empty field is '' (the CSV has
    no NULL to carry, PROV-16). The parallel reader cannot split rows at quoted newlines, which
    Reader columns hold (a story), so the file is read by one thread; its buffer is twice the
    longest row it accepts (LINE_BYTES)."""
    columns = "{" + ", ".join(f"{quote_literal(c)}: 'VARCHAR'" for c in item.columns) + "}"
    if item.empty:
        return "(select " + ", ".join(f"cast(null as varchar) as {quote_ident(c)}" for c in item.columns) + " where false)"
    names = "[" + ", ".join(quote_literal(c) for c in item.columns) + "]"
    return (f"read_csv({quote_literal(item.path)}, columns = {columns}, header = true, delim = ',', quote = '\"', "
            f"escape = '\"', new_line = '\\n', auto_detect = false, parallel = false, strict_mode = true, "
            f"null_padding = false, allow_quoted_nulls = false, force_not_null = {names}, "
            f"max_line_size = {line_bytes}, buffer_size = {2 * line_bytes}, encoding = 'utf-8')")


class _Clock:
    """--deadline: a timer that interrupts whichever connection is working when it fires."""

    def __init__(self, seconds: float | None):
        self.expired = False
        self.connection: Any = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire) if seconds else None
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            self.expired = True
            if self.connection is not None:
                self.connection.interrupt()

    def use(self, connection) -> None:
        with self._lock:
            self.connection = connection
            if self.expired:
                connection.interrupt()

    def check(self) -> None:
        """Between statements: an interrupt only stops a statement that is running."""
        if self.expired:
            raise _Deadline

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()


class _Deadline(Exception):
    pass


MAX_MESSAGE = 2000
_PATH = re.compile(r"(?<![\w.:/])(/[^\s\"']+)")


def _engine_error(exc: BaseException) -> tuple[str, int | None]:
    """DuckDB's message and the byte offset into the statement it points at, when it gives one: the
    connections set errors_as_json, so a message is `<Kind> Error: {json}` with `position`."""
    text = str(exc)
    head, sep, rest = text.partition(": {")
    if sep:
        import json

        try:
            data = json.loads("{" + rest)
        except ValueError:
            data = None
        if isinstance(data, dict) and isinstance(data.get("exception_message"), str):
            position = data.get("position")
            return (f"{head}: {data['exception_message']}",
                    int(position) if isinstance(position, str) and position.isdigit() else None)
    return text, None


def engine_message(exc: BaseException, state_dir: str) -> str:
    """DuckDB's message on one line, paths outside the state directory replaced by `…` (its own
    extension directory under HOME, say) and secrets scrubbed."""
    text = " ".join(_engine_error(exc)[0].split())
    root = os.path.abspath(state_dir) + os.sep

    def keep(match: re.Match) -> str:
        path = match.group(1)
        return path if path.startswith(root) else "…"

    text = scrub(_PATH.sub(keep, text))
    # a CSV error quotes the whole row, which may be a story of many MiB
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE] + "…"


def _config(memory_limit: str, threads: int, temp: str | None) -> dict:
    config = {"autoinstall_known_extensions": False, "autoload_known_extensions": False,
              "allow_community_extensions": False, "allow_unsigned_extensions": False,
              "memory_limit": memory_limit, "threads": threads, "preserve_insertion_order": True,
              "errors_as_json": True,
              # jemalloc hands freed memory back at 16 MiB rather than DuckDB's 128/512 MiB: the
              # build's peak is the sort's limit plus what the allocator still holds (D-83)
              "allocator_flush_threshold": ALLOCATOR_FLUSH, "allocator_bulk_deallocation_flush_threshold": ALLOCATOR_FLUSH}
    if temp is not None:
        config["temp_directory"] = temp
    return config


def sandbox(database: str, inputs: Sequence[Input], memory_limit: str, threads: int, temp: str | None,
            outputs: Sequence[str] = (), line_bytes: int = LINE_BYTES):
    """A DuckDB connection in which user SQL may run (D-72): the sources are temporary views of
    their relation files, the only files it may read; nothing may be written but `outputs` (the
    build's own Parquet files, named by the build's COPY), no extension installed or loaded, no
    setting changed."""
    connection = duckdb.connect(database, config=_config(memory_limit, threads, temp))
    try:
        connection.execute("SET TimeZone = 'UTC'")
        for item in inputs:
            connection.execute(f"CREATE TEMP VIEW {quote_ident(item.source.name)} AS SELECT * FROM "
                               f"{read_csv_sql(item, line_bytes)}")
        paths = "[" + ", ".join([quote_literal(item.path) for item in inputs if not item.empty]
                                + [quote_literal(path) for path in outputs]) + "]"
        connection.execute(f"SET allowed_paths = {paths}")
        connection.execute("SET allowed_directories = []")
        connection.execute("SET enable_external_access = false")
        connection.execute("SET lock_configuration = true")
    except BaseException:
        connection.close()
        raise
    return connection


def _refusal(code: str, index: int, table: str, text: str, rule: str, at: tuple[int, int] | None = None) -> Refusal:
    """`at`: the line and column in the table's SQL where DuckDB places the problem (as validate's
    findings say it)."""
    where = f", line {at[0]}, column {at[1]} of the SQL" if at else ""
    return Refusal(code, f"/tables/{index}/sql", f"table {table!r}{where}: {text}", rule)


@dataclass(frozen=True)
class _Placed:
    """Where the user's query sits in a statement the build ran: `prefix` characters of the build's
    own before it, and the query itself `query_at` characters into the table's SQL."""
    statement: str
    prefix: int
    query_at: int
    length: int

    def at(self, exc: BaseException, sql: str) -> tuple[int, int] | None:
        position = _engine_error(exc)[1]
        if position is None or self.query_at < 0:
            return None
        # DuckDB counts bytes of UTF-8; the SQL's line and column count characters
        chars = len(self.statement.encode("utf-8")[:position].decode("utf-8", "ignore"))
        inner = chars - self.prefix
        if not 0 <= inner < self.length:
            return None          # in the build's own text around the query
        return contract.line_column(sql, self.query_at + inner)


def _one_select(connection, index: int, table: Table, state_dir: str) -> tuple[str | None, Refusal | None]:
    """The statement DuckDB's own parser reads, when it is exactly one SELECT."""
    try:
        statements = connection.extract_statements(table.sql)
    except duckdb.Error as exc:
        return None, _refusal("BUILD_SQL_REFUSED", index, table.name,
                              f"DuckDB cannot parse the SQL: {engine_message(exc, state_dir)}", "D-68, D-72",
                              _Placed(table.sql, 0, 0, len(table.sql)).at(exc, table.sql))
    kinds = [str(s.type).rsplit(".", 1)[-1] for s in statements]
    if kinds != ["SELECT"]:
        shown = ", ".join(kinds) or "no statement"
        return None, _refusal("BUILD_SQL_REFUSED", index, table.name,
                              f"DuckDB reads the SQL as {shown}, not exactly one SELECT; nothing was run", "D-68, D-72")
    return statements[0].query.strip().rstrip(";").rstrip(), None


def _error_refusal(exc: BaseException, index: int, table: Table, state_dir: str, running: bool,
                   placed: _Placed) -> Refusal:
    if isinstance(exc, duckdb.InterruptException):
        raise _Deadline from None
    message = engine_message(exc, state_dir)
    at = placed.at(exc, table.sql)
    refused = isinstance(exc, (duckdb.PermissionException, duckdb.ParserException, duckdb.CatalogException,
                               duckdb.BinderException, duckdb.NotImplementedException))
    if running and not refused:
        return _refusal("BUILD_ROWS_FAILED", index, table.name, f"DuckDB failed on the data: {message}; nothing "
                        "was written (try_cast(… as …) gives NULL where a cast fails)", "D-71, D-72", at)
    return _refusal("BUILD_SQL_REFUSED", index, table.name, f"DuckDB refused the SQL: {message}", "D-68, D-72", at)


def check_tables(connection, tables: Sequence[Table], sources: Mapping[str, Sequence[str]],
                 state_dir: str) -> tuple[list[str], list[list[tuple[str, str]]], list[Refusal]]:
    """Point 2's checks against the real engine: each table's statement and DuckDB's DESCRIBE of it."""
    queries: list[str] = []
    described: list[list[tuple[str, str]]] = []
    refusals: list[Refusal] = []
    for index, table in enumerate(tables):
        query, refusal = _one_select(connection, index, table, state_dir)
        if refusal is not None:
            refusals.append(refusal)
            queries.append("")
            described.append([])
            continue
        statement = f"DESCRIBE {query}"
        try:
            rows = connection.execute(statement).fetchall()
        except duckdb.Error as exc:
            placed = _Placed(statement, len("DESCRIBE "), table.sql.find(query), len(query))
            refusals.append(_error_refusal(exc, index, table, state_dir, False, placed))
            queries.append("")
            described.append([])
            continue
        actual = [(str(r[0]), str(r[1])) for r in rows]
        for f in contract.compare_columns(table.name, table.sql, table.declared, actual, sources=sources):
            refusals.append(Refusal(f.code, f"/tables/{index}/sql", f.message, f.rule))
        queries.append(query)
        described.append(actual)
    return queries, described, refusals


def _typed_select(table: Table, query: str, actual: Sequence[tuple[str, str]]) -> tuple[str, int]:
    """The query's rows cast to the stored types, and where the query starts in that text."""
    items = []
    for (name, kind), (actual_name, _) in zip(table.declared, actual):
        items.append(f"CAST(_q.{quote_ident(actual_name)} AS {STORED_AS[kind]}) AS {quote_ident(name)}")
    head = f"SELECT {', '.join(items)} FROM (\n"
    # the newline ends a trailing `--` comment of the user's SQL before the closing parenthesis
    return f"{head}{query}\n) AS _q", len(head)


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _settle(digests) -> None:
    """Wait for every Digest thread: never leave one reading a file the caller may remove. Their
    errors are read where their results are used."""
    for digest in digests:
        try:
            digest.result()
        except OSError:
            pass


def _file_digest(digest: Digest) -> dict:
    sha, size = digest.result()
    return {"sha256": sha, "bytes": size}


def read_current_record(build_dir: str) -> dict | None:
    """The current build's record, or None (no build yet, or one that cannot be read)."""
    import json

    try:
        with open(os.path.join(build_dir, "current", RECORD), "rb") as handle:
            record = json.loads(handle.read())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


@dataclass
class BuildResult:
    generation: str
    directory: str
    unchanged: bool
    record: dict

    def to_json(self) -> dict:
        return {"generation": self.generation, "directory": self.directory, "unchanged": self.unchanged,
                "record": self.record}


def _identity(dataset: Dataset, inputs: Sequence[Input]) -> dict:
    """What the rows depend on: the tables, each input relation, the engine and the tool."""
    return {
        "dataset": {"name": dataset.name, "tables_sha256": tables_digest(dataset.tables)},
        "engine": {"duckdb": duckdb.__version__, "collection": {"version": __version__, "commit": _commit()}},
        "inputs": [{"source": item.source.name, "generation": item.generation, "run_number": item.run_number,
                    "rows": item.rows, "relation": {"sha256": item.recorded[0], "bytes": item.recorded[1]}}
                   for item in inputs],
    }


def _commit() -> str:
    from collection.buildinfo import commit

    return commit()


def _same_identity(record: dict | None, identity: dict) -> bool:
    return record is not None and all(record.get(key) == value for key, value in identity.items())


def build(dataset: Dataset, settings: BuildSettings, *, on_phase: Callable[[str], None] | None = None) -> BuildResult:
    """Build every table of `dataset` from the sources' current relations under settings.state_dir.
    RefusedError (nothing written, the previous build unchanged) or a BuildResult."""
    phase = on_phase or (lambda name: None)
    state_dir = os.path.abspath(settings.state_dir)
    if not dataset.tables:
        raise RefusedError(Refusal("BUILD_NO_TABLES", "/tables", f"dataset {dataset.name!r} declares no tables; "
                                   "there is nothing to build (docs/transform.md)", "D-69, D-71"))
    collections = {s.name: s for s in dataset.sources if s.is_collection and s.reader is not None}
    columns = {name: s.reader.relation_columns for name, s in collections.items()}
    if settings.check_sql:
        found = [Refusal(f.code, f"/tables/{i}/sql", f.message, f.rule)
                 for i, t in enumerate(dataset.tables) for f in contract.statement_findings(t.name, t.sql, columns)]
        if found:
            raise RefusedError(found)
    read: list[str] = []
    for table in dataset.tables:
        try:
            named = duckdb.get_table_names(table.sql)
        except duckdb.Error:
            named = set()          # DuckDB's own parse refuses it below, with its message
        read += [name for name in sorted(named) if name in collections and name not in read]
    located = [locate(state_dir, collections[name], settings.dataset_path) for name in sorted(read)]
    refused = [item for item in located if isinstance(item, Refusal)]
    if refused:
        raise RefusedError(refused)
    inputs: list[Input] = [item for item in located if isinstance(item, Input)]
    digests = {item.source.name: Digest(item.path) for item in inputs}
    if settings.memory_limit is None:
        limit = default_memory_limit(sum(i.recorded[1] for i in inputs))
        memory, tables = f"{limit // _MiB}MiB", settings.threads or default_threads(limit)
    else:
        memory, tables = settings.memory_limit, settings.threads or default_threads()
    threads = Threads(tables, settings.threads or default_threads())
    clock = _Clock(settings.deadline_seconds)
    try:
        return _build(dataset, settings, state_dir, inputs, digests, columns, threads, memory, clock, phase)
    except _Deadline:
        raise RefusedError(Refusal("BUILD_DEADLINE", "", f"the build passed --deadline {settings.deadline_seconds:g} s "
                                   "and was interrupted; nothing was written, the previous build is unchanged",
                                   "D-72")) from None
    finally:
        clock.cancel()
        _settle(digests.values())


def _check_digests(inputs: Sequence[Input], digests: Mapping[str, Digest]) -> None:
    problems = []
    for item in inputs:
        found = digests[item.source.name].result()
        problem = digest_refusal(item, found)
        if problem is not None:
            problems.append(problem)
    if problems:
        raise RefusedError(problems)


def _build(dataset, settings, state_dir, inputs, digests, columns, threads, memory, clock, phase) -> BuildResult:
    phase("check")
    try:
        connection = sandbox(":memory:", inputs, memory, threads.tables, None)
    except duckdb.Error as exc:       # a relation DuckDB cannot open as the writer wrote it
        raise RefusedError(Refusal("BUILD_SQL_REFUSED", "", f"DuckDB cannot read the inputs: "
                                   f"{engine_message(exc, state_dir)}", "D-71")) from None
    try:
        clock.use(connection)
        queries, described, refusals = check_tables(connection, dataset.tables, columns, state_dir)
    finally:
        connection.close()
    clock.check()
    if refusals:
        raise RefusedError(refusals)
    identity = _identity(dataset, inputs)
    build_dir = os.path.join(state_dir, BUILD_DIR)
    store = StateStore(build_dir, keep=settings.keep)
    first = not os.path.isdir(build_dir)
    committed = False
    try:
        store.acquire()
    except StateLocked:
        raise RefusedError(Refusal("STATE_LOCKED", "", f"another `collection build` is using {build_dir}; wait for "
                                   "it to finish (a lock left by a killed build is released automatically)",
                                   "one build per state directory (D-71)")) from None
    try:
        previous = read_current_record(build_dir)
        if not settings.force and _same_identity(previous, identity):
            _check_digests(inputs, digests)
            current = store.current()
            return BuildResult(os.path.basename(current), current, True, previous)
        generation = store.begin()
        try:
            record = _write(dataset, generation.path, inputs, queries, described, identity, threads, memory,
                            state_dir, clock, phase)
            _check_digests(inputs, digests)
            phase("commit")
            generation.write_bytes(RECORD, (canonical_json(record) + "\n").encode("utf-8"))
            fsync_directory(generation.path)
            final = store.commit(generation)
            committed = True
        except BaseException:
            generation.abandon()
            raise
        return BuildResult(os.path.basename(final), final, False, record)
    finally:
        if first and not committed:
            store.remove_if_unused()       # a refused first build leaves DIR/build absent, as it was (D-71)
        store.release()


class _LongRow(Exception):
    """A relation row longer than the CSV reader's bound: read the relations again with a larger one."""


def _long_row(exc: BaseException) -> bool:
    return isinstance(exc, duckdb.InvalidInputException) and "Maximum line size of" in str(exc)


def _write_parquet(dataset, inputs, queries, described, targets, threads, memory, temp, state_dir, clock,
                   line_bytes) -> list[int]:
    """Each table's SELECT, run once, straight into its Parquet file; the row counts. A sandbox per
    table, whose one writable file is that table's own Parquet file."""
    counts = []
    for index, table in enumerate(dataset.tables):
        clock.check()
        connection = sandbox(":memory:", inputs, memory, threads, temp, outputs=[targets[index]],
                             line_bytes=line_bytes)
        typed, head = _typed_select(table, queries[index], described[index])
        statement = f"COPY ({typed}) TO {quote_literal(targets[index])} ({PARQUET_OPTIONS})"
        try:
            clock.use(connection)
            copied = connection.execute(statement).fetchone()
        except duckdb.Error as exc:
            if line_bytes < LONG_LINE_BYTES and _long_row(exc):
                raise _LongRow from None
            placed = _Placed(statement, len("COPY (") + head, table.sql.find(queries[index]), len(queries[index]))
            raise RefusedError(_error_refusal(exc, index, table, state_dir, True, placed)) from None
        finally:
            connection.close()
        counts.append(int(copied[0]))
    return counts


def database_row_group(group_rows: Sequence[Sequence[int]]) -> int:
    """dataset.duckdb's row-group size, from the row counts of each Parquet file's row groups: the
    largest multiple of VECTOR_ROWS, at most DUCKDB_ROW_GROUP, that divides every group but each file's
    last (D-83). DuckDB's ordered insert writes a batch (a Parquet row group) on the thread that read
    it only when the batch fills whole row groups; a batch that leaves a part is merged with the
    next in order, on one thread, and the fill becomes serial again."""
    common = 0
    for rows in group_rows:
        for count in rows[:-1]:
            common = math.gcd(common, int(count))
    if common == 0 or common % VECTOR_ROWS:
        # one group per file (a small table), or groups not cut at whole vectors: vector-sized row
        # groups still divide every batch into whole row groups but its last vector
        return VECTOR_ROWS if common else DUCKDB_ROW_GROUP
    vectors = common // VECTOR_ROWS
    best = 1
    for k in range(1, DUCKDB_ROW_GROUP // VECTOR_ROWS + 1):
        if vectors % k == 0:
            best = k
    return best * VECTOR_ROWS


def fill_database(tables: Sequence[Table], database: str, targets: Sequence[str], threads: int, memory: str,
                  temp: str | None, state_dir: str, clock: "_Clock") -> None:
    """dataset.duckdb, by the build alone (no user SQL in this connection): each table read back
    from its Parquet file, in its order, as the stored types. The insert keeps the Parquet file's
    row order (preserve_insertion_order) and still runs on every thread: the database's row groups
    are sized to divide the Parquet file's (database_row_group), so each thread compresses and
    writes the row groups of the batch it read (D-83)."""
    config = {**_config(memory, threads, temp), "force_compression": DATABASE_COMPRESSION,
              "write_buffer_row_group_count": 1}
    connection = duckdb.connect(":memory:", config=config)
    try:
        clock.use(connection)
        try:
            groups = [[int(r[0]) for r in connection.execute(
                "SELECT row_group_num_rows FROM parquet_metadata(?) GROUP BY row_group_id, row_group_num_rows "
                "ORDER BY row_group_id", [target]).fetchall()] for target in targets]
            connection.execute(f"ATTACH {quote_literal(database)} AS {_OUT} "
                               f"(ROW_GROUP_SIZE {database_row_group(groups)})")
        except duckdb.InterruptException:
            raise _Deadline from None
        except duckdb.Error as exc:      # the build's own statements: the disk, memory
            raise RefusedError(Refusal("BUILD_ROWS_FAILED", "", f"DuckDB failed creating {DATABASE}: "
                                       f"{engine_message(exc, state_dir)}; nothing was written",
                                       "D-71, D-72")) from None
        for index, table in enumerate(tables):
            clock.check()
            columns = ", ".join(f"CAST({quote_ident(c.name)} AS {STORED_AS[c.type]}) AS {quote_ident(c.name)}"
                                for c in table.columns)
            try:
                connection.execute(f"CREATE TABLE {_OUT}.{quote_ident(table.name)} AS SELECT {columns} "
                                   f"FROM read_parquet({quote_literal(targets[index])})")
            except duckdb.InterruptException:
                raise _Deadline from None
            except duckdb.Error as exc:      # the build's own statement: out of memory, the disk
                raise RefusedError(_refusal("BUILD_ROWS_FAILED", index, table.name, "DuckDB failed writing "
                                            f"{DATABASE}: {engine_message(exc, state_dir)}; nothing was written "
                                            "(raise --memory-limit)", "D-71, D-72")) from None
        try:
            connection.execute(f"CHECKPOINT {_OUT}")
            connection.execute(f"DETACH {_OUT}")
        except duckdb.InterruptException:
            raise _Deadline from None
    finally:
        connection.close()


def _write(dataset, path, inputs, queries, described, identity, threads, memory, state_dir, clock, phase) -> dict:
    database = os.path.join(path, DATABASE)
    temp = os.path.join(path, TEMP)
    targets = [os.path.join(path, f"{table.name}.parquet") for table in dataset.tables]
    phase("tables")
    try:
        counts = _write_parquet(dataset, inputs, queries, described, targets, threads.tables, memory, temp, state_dir,
                                clock, LINE_BYTES)
    except _LongRow:
        for target in targets:
            if os.path.exists(target):
                os.remove(target)
        counts = _write_parquet(dataset, inputs, queries, described, targets, threads.tables, memory, temp, state_dir,
                                clock, LONG_LINE_BYTES)
    clock.check()
    # The user's SQL is done. The build alone makes the database file from the Parquet files, while
    # threads hash those files for the record (hashlib works outside the GIL).
    phase("database")
    hashing = {os.path.basename(target): Digest(target) for target in targets}
    try:
        fill_database(dataset.tables, database, targets, threads.fill, memory, temp, state_dir, clock)
    finally:
        _settle(hashing.values())
    clock.check()
    tables = [{
        "name": table.name, "rows": counts[index], "file": f"{table.name}.parquet",
        "columns": [{"name": c.name, "declared": c.type, "select_type": actual[1], "stored_type": STORED_AS[c.type]}
                    for c, actual in zip(table.columns, described[index])],
    } for index, table in enumerate(dataset.tables)]
    shutil.rmtree(temp, ignore_errors=True)
    files = {}
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        if os.path.isfile(full):
            _fsync(full)
            files[name] = _file_digest(hashing.get(name) or Digest(full))
    # Parquet's bytes are a function of the rows (fixed options; tests/test_build.py rebuilds and
    # compares); DuckDB's own file is not byte-reproducible, so it stands apart from the identity.
    database = files.pop(DATABASE)
    return {"record_version": RECORD_VERSION, **identity, "tables": tables, "files": files,
            "database": {"file": DATABASE, **database}}
