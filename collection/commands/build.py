"""`collection build DATASET --state DIR`: the dataset's tables as typed Parquet and a DuckDB file
under DIR/build/, one atomic generation (docs/transform.md, "Build"; D-71, D-72).

Exit 0 when the build was written (or was already current: the same inputs and tables), 1 when
it was refused (the document's refusals as validate gives them, or a build refusal: the code on
stderr, and in the JSON with --json), 2 for usage errors (a file that cannot be read, a source
document, DuckDB missing from this copy of collection, a state directory that cannot be used).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import click

from collection import codes
from collection.canonical import ordered_json
from collection.commands import examples


def _usage(message: str) -> None:
    click.echo(f"collection build: {message}", err=True)
    sys.exit(2)


def _target() -> str:
    return f"cp{sys.version_info[0]}{sys.version_info[1]}-{os.uname().machine}"


def _require_duckdb() -> None:
    """collection.pyz carries no DuckDB (D-73): one line naming what does."""
    try:
        import duckdb  # noqa: F401
    except ImportError:
        _usage(f"DuckDB is not in this copy of collection (collection.pyz carries none, D-73): run build from "
               f"collection-build-{_target()}.pyz (python3 build_zipapp.py --with-build), or pip install "
               "'collection[build]'")


def _refusal_text(refusal, path: str) -> str:
    """A refusal of the document names the file, line and column (as validate does); one of the build
    names its table in the message."""
    entry = codes.lookup(refusal.code)
    where = ""
    if refusal.line is not None:
        where = f"{path}:{refusal.line}:{refusal.column}: "
    elif entry is not None and entry.kind == codes.REGISTRATION:
        where = f"{path}: "
    return (f"{where}{refusal.code}: {refusal.message} [{refusal.rule}]"
            + (f" at {refusal.pointer}" if refusal.pointer else ""))


def summary(result, state_dir: str, seconds: float) -> str:
    record = result.record
    current = os.path.join(state_dir, "build", "current")
    head = (f"build {result.generation}: unchanged (the same inputs and tables as the current build; nothing written)"
            if result.unchanged else f"build {result.generation}: written in {seconds:.1f} s")
    lines = [head]
    for item in record["inputs"]:
        lines.append(f"  input {item['source']}: generation {item['generation']} (run {item['run_number']}), "
                     f"{item['rows']} rows, relation sha256 {item['relation']['sha256'][:12]}…")
    for table in record["tables"]:
        kinds = ", ".join(f"{c['name']} {c['declared']}" for c in table["columns"])
        lines.append(f"  table {table['name']}: {table['rows']} rows ({kinds}) → {current}/{table['file']}")
    lines.append(f"  database {current}/dataset.duckdb; record {current}/build.json")
    return "\n".join(lines)


@click.command("build", epilog=examples(
    "collection build fixtures/datasets/council.json --state /tmp/council",
    "collection build dataset.json --state /var/lib/collection/council --memory-limit 2GB --threads 4 --json",
))
@click.argument("dataset", type=click.Path(dir_okay=False))
@click.option("--state", "state_dir", required=True, type=click.Path(file_okay=False),
              help="The dataset's state directory (`collection run DATASET --state DIR` wrote DIR/<source>/); "
                   "the build goes to DIR/build/, DIR/build/current names the latest.")
@click.option("--memory-limit", default=None, metavar="SIZE",
              help="DuckDB's memory limit (e.g. 1GB, 512MiB); beyond it DuckDB spills to the build's temporary "
                   "directory.  [default: one and a half times the relations' size, at least 256 MiB, at most "
                   "4 GiB and half the machine's memory]")
@click.option("--threads", type=click.IntRange(min=1, max=256), default=None,
              help="DuckDB's threads.  [default: the CPU count, at most 8, and at most one per 512 MiB of the "
                   "default memory limit]")
@click.option("--keep", type=click.IntRange(min=1), default=2, show_default=True, help="Builds kept in DIR/build/.")
@click.option("--force", is_flag=True, help="Build even when the inputs and tables are those of the current build.")
@click.option("--deadline", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Interrupt the build after this many seconds (nothing is written).  [default: no deadline]")
@click.option("--json", "as_json", is_flag=True,
              help="Print the result: generation, directory, unchanged and the build record "
                   "(schemas/build-record.schema.json).")
def command(dataset: str, state_dir: str, memory_limit: str | None, threads: int | None, keep: int, force: bool,
            deadline: float | None, as_json: bool) -> None:
    """Build the typed tables of the DATASET document from each source's current relation in --state
    (typed Parquet, one file per table, and a DuckDB database file under DIR/build/)."""
    _require_duckdb()
    from collection.build.engine import BuildSettings, build
    from collection.recipe.model import Dataset
    from collection.recipe.refusal import RefusedError
    from collection.recipe.registration import DATASET, register_bytes

    if memory_limit is not None:
        import duckdb

        try:
            duckdb.connect(config={"memory_limit": memory_limit}).close()
        except duckdb.Error as exc:
            _usage(f"--memory-limit {memory_limit!r}: {' '.join(str(exc).split())} (write e.g. 1GB, 512MiB)")
    try:
        data = Path(dataset).read_bytes()
    except OSError as exc:
        _usage(f"cannot read the dataset document {dataset}: {exc.strerror or exc}")
    registration = register_bytes(data)
    if registration.kind not in (None, DATASET):
        _usage(f"{dataset} is a source document; build takes a dataset document with `tables` (docs/transform.md)")
    started = time.monotonic()
    try:
        if not registration.registrable:
            raise RefusedError(list(registration.refusals))
        model: Dataset = registration.dataset
        result = build(model, BuildSettings(state_dir, memory_limit=memory_limit, threads=threads, keep=keep,
                                            force=force, deadline_seconds=deadline, dataset_path=dataset))
    except RefusedError as exc:
        for refusal in exc.refusals:
            click.echo(_refusal_text(refusal, dataset), err=True)
        if as_json:
            click.echo(ordered_json({"refused": True, "code": exc.refusals[0].code,
                                     "refusals": [r.to_json() for r in exc.refusals]}))
        sys.exit(1)
    except OSError as exc:
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        _usage(f"cannot use the state directory {state_dir}{where}: {exc.strerror or exc}; the previous build "
               "is unchanged")
    except _duckdb_error() as exc:
        # DuckDB failing outside any user SQL (a disk full while it writes its file, a bad --memory-limit)
        from collection.build.engine import engine_message

        _usage(f"DuckDB: {engine_message(exc, state_dir)}; the previous build is unchanged")
    if as_json:
        click.echo(ordered_json(result.to_json()))
    else:
        click.echo(summary(result, state_dir, time.monotonic() - started))
    sys.exit(0)


def _duckdb_error():
    import duckdb

    return duckdb.Error
