#!/usr/bin/env python3
"""`collection build` on a 200,000-row relation against DuckDB alone, in the same run (issue 25).

    .venv/bin/python bench/build.py [--rows 200000] [--runs 3] [--keep DIR] [--also "ARGS"]...

Makes real state: the demo corpus replayed once (fixtures/datasets/council.json), its relation
scaled to --rows rows (page ids, titles and stories made distinct per row, html.web_extract's
columns), written through the state store as a run writes it (relation.csv in the relation's
dialect, run.json with its digests). Then, alternating, each in a fresh subprocess (interpreter
start and imports included on both sides):

  duckdb alone      read the same CSV with the same read_csv (all VARCHAR, the same dialect),
                    the table's own SQL, COPY TO Parquet (the build's Parquet options), DuckDB's
                    default settings (the issue's baseline);
  duckdb alone, 1 thread  the same at one thread: on a machine of few cores DuckDB's own
                    default can be the slower one (its CSV reader is serial here, and a second
                    thread's sort costs more than it gains), so the build is also compared with
                    DuckDB at its better setting;
  duckdb, same outputs  the same, but as the build makes its outputs: CREATE TABLE AS the SQL in
                    a DuckDB file, then COPY that table to Parquet (what DuckDB itself costs for
                    the two files, so the rest of the ratio is collection's own work);
  collection build  `python -m collection build council.json --state S --force` at its defaults:
                    the same Parquet plus dataset.duckdb, the record, the relation's digest, the
                    atomic generation;
  build ARGS        the same with --also's options (e.g. "--memory-limit 300MiB --threads 1"): how
                    the build trades time for memory, in the same run.

Each child runs once untimed first (bytecode caches written, as an installed tool has them).
Wall time is the median of --runs; the ratios are also given as the median of each round's own
ratio (the children of one round run seconds apart, so a machine whose speed drifts under other
load, as shared ones do by tens of per cent, moves both sides of a round together) and as the
ratio of the fastest runs; peak memory is the child's ru_maxrss (os.wait4). Printed: both figures,
build / duckdb-alone wall (target <= 1.2x), and peak RSS / CSV bytes for each (target for build
<= 2x). Figures only: nothing here is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from collection.merge import csvio  # noqa: E402
from collection.merge.csvio import CsvWriter  # noqa: E402
from collection.store.generations import LEDGER, RELATION, RUN_RECORD, StateStore  # noqa: E402

DATASET = ROOT / "fixtures" / "datasets" / "council.json"
FIXTURE = ROOT / "fixtures" / "council_decisions" / "council_decisions.fixture.json.gz"
# Bytecode caching as an installed tool has it (pip compiles on install): a shell that sets
# PYTHONDONTWRITEBYTECODE would make every child compile collection from source, and the build,
# importing more of it than DuckDB alone's child, would pay more of that (about 0.1 s).
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": str(ROOT)}

ALONE = r"""
import json, sys, duckdb
sys.path.insert(0, sys.argv[1])
from collection.build.engine import PARQUET_OPTIONS, read_csv_sql
from collection.build.inputs import locate
from collection.recipe.registration import register_bytes
model = register_bytes(open(sys.argv[2], 'rb').read()).dataset
item = locate(sys.argv[3], model.sources[0])
con = duckdb.connect(config=json.loads(sys.argv[5]))
con.execute("SET TimeZone = 'UTC'")
con.execute(f"CREATE TEMP VIEW council_decisions AS SELECT * FROM {read_csv_sql(item)}")
if len(sys.argv) > 6:     # the build's outputs: the table in a DuckDB file, then its Parquet copy
    con.execute(f"ATTACH '{sys.argv[6]}' AS out")
    con.execute(f"CREATE TABLE out.decisions AS {model.tables[0].sql}")
    con.execute(f"COPY out.decisions TO '{sys.argv[4]}' ({PARQUET_OPTIONS})")
    con.execute("DETACH out")
else:
    con.execute(f"COPY ({model.tables[0].sql}) TO '{sys.argv[4]}' ({PARQUET_OPTIONS})")
"""


def make_state(directory: Path, rows: int, shuffled: bool = False) -> int:
    """DIR/council_decisions with a current relation of `rows` rows; returns the CSV's bytes. With
    `shuffled`, each story's words are shuffled per row (seeded), so the 2,819 demo stories no longer
    repeat and the outputs compress as distinct prose does, not as 71 copies of each story."""
    demo = Path(tempfile.mkdtemp(prefix="bench-build-demo-"))
    try:
        subprocess.run([sys.executable, "-m", "collection", "run", str(DATASET), "--state", str(demo), "--replay",
                        str(FIXTURE), "--json"], check=True, capture_output=True, cwd=ROOT, env=ENV)
        with open(demo / "council_decisions" / "current" / RELATION, newline="", encoding="utf-8") as f:
            table = list(csvio.reader(f))
    finally:
        shutil.rmtree(demo, ignore_errors=True)
    header, body = table[0], table[1:]
    at = {name: i for i, name in enumerate(header)}
    rng = random.Random(25)

    def scaled():
        for k in range(rows):
            row = list(body[k % len(body)])
            row[at["page_id"]] = f"{k:08d}"
            row[at["page_url"]] = f"https://www.example.com/decisions/{k}/"
            row[at["title"]] = f"{row[at['title']]} ({k})"
            story = row[at["story"]]
            if shuffled:
                words = story.split(" ")
                rng.shuffle(words)
                story = " ".join(words)
            row[at["story"]] = f"Decision {k}. {story}"
            row[at["page_ordinal"]] = "1"
            yield row

    with StateStore(str(directory / "council_decisions")) as store:
        generation = store.begin()
        sink = generation.open_text(RELATION)
        writer = CsvWriter(sink)
        writer.writerow(header)
        writer.writerows(scaled())
        relation = generation.close_text(RELATION)
        ledger = generation.write_bytes(LEDGER, b"")
        record = {"run_number": 1, "generation": generation.name, "finished_at": "2024-01-01T00:00:00Z",
                  "coverage": {}, "truncated": False, "rows": rows, "corrections": [],
                  "files": {RELATION: relation.as_dict(), LEDGER: ledger.as_dict()}}
        generation.write_bytes(RUN_RECORD, json.dumps(record).encode())
        store.commit(generation)
    return relation.bytes


def measure(command: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (bytes) of one child process."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{command} failed: {proc.stderr.read().decode()}")
    return wall, usage.ru_maxrss * 1024


def same_rows(alone: Path, built: Path) -> str:
    """Whether DuckDB alone and the build wrote the same rows in the same order. Their bytes differ by
    design: the build stores a declared `integer` as BIGINT (STORED_AS), DuckDB alone as the SQL's INTEGER."""
    import duckdb
    query = ("SELECT count(*) FROM (SELECT row_number() OVER () AS n, * FROM read_parquet(?) "
             "EXCEPT SELECT row_number() OVER () AS n, * FROM read_parquet(?))")
    with duckdb.connect() as db:
        apart = db.execute(query, [str(alone), str(built)]).fetchone()[0]
        apart += db.execute(query, [str(built), str(alone)]).fetchone()[0]
    return "the same rows in the same order" if apart == 0 else f"{apart} rows differ"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--shuffled", action="store_true",
                        help="shuffle each story's words per row (a new state; not with an existing --keep state)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", type=Path, default=None, help="make the state here and keep it")
    parser.add_argument("--also", action="append", default=[], metavar="ARGS",
                        help="another build row with these options of `collection build` (repeatable)")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-build-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        state = work / "state"
        if not (state / "council_decisions" / "current").exists():
            csv_bytes = make_state(state, args.rows, args.shuffled)
        elif args.shuffled:
            raise SystemExit(f"--shuffled makes a new state, and {state} already holds one: give another --keep")
        else:
            csv_bytes = (state / "council_decisions" / "current" / RELATION).stat().st_size
        alone_out = work / "alone.parquet"
        alone = [sys.executable, "-c", ALONE, str(ROOT), str(DATASET), str(state), str(alone_out), "{}"]
        alone1 = [sys.executable, "-c", ALONE, str(ROOT), str(DATASET), str(state), str(work / "alone1.parquet"),
                  '{"threads": 1}']
        both_db = work / "both.duckdb"
        both = [sys.executable, "-c", ALONE, str(ROOT), str(DATASET), str(state), str(work / "both.parquet"), "{}",
                str(both_db)]
        build = [sys.executable, "-m", "collection", "build", str(DATASET), "--state", str(state), "--force"]
        figures: dict[str, list[tuple[float, int]]] = {"duckdb alone": [], "duckdb alone, 1 thread": [],
                                                       "duckdb, same outputs": [], "collection build": []}
        figures.update({f"build {extra}": [] for extra in args.also})
        for command in (alone, alone1, build):     # untimed: writes the bytecode caches both children read
            measure(command)
        for _ in range(args.runs):
            figures["duckdb alone"].append(measure(alone))
            figures["duckdb alone, 1 thread"].append(measure(alone1))
            both_db.unlink(missing_ok=True)
            figures["duckdb, same outputs"].append(measure(both))
            figures["collection build"].append(measure(build))
            for extra in args.also:
                figures[f"build {extra}"].append(measure(build + extra.split()))
        built = state / "build" / "current" / "decisions.parquet"
        same = alone_out.read_bytes() == built.read_bytes()
        print(f"relation: {args.rows} rows, {csv_bytes / 2**20:.1f} MiB CSV; {args.runs} runs each, alternating; "
              f"{os.cpu_count()} CPUs")
        med = {}
        width = max(len(name) for name in figures)
        alone_wall = statistics.median(w for w, _ in figures["duckdb alone"])
        for name, runs in figures.items():
            wall = statistics.median(w for w, _ in runs)
            rss = max(r for _, r in runs)
            med[name] = (wall, rss)
            print(f"  {name:{width}s} wall {wall:6.2f} s = {wall / alone_wall:.2f}x alone (runs "
                  f"{', '.join(f'{w:.2f}' for w, _ in runs)})   peak RSS {rss / 2**20:7.1f} MiB = "
                  f"{rss / csv_bytes:.2f}x the CSV")
        ratio = med["collection build"][0] / med["duckdb alone"][0]
        print(f"build / duckdb alone: wall {ratio:.2f}x (target <= 1.2x); build peak RSS / CSV "
              f"{med['collection build'][1] / csv_bytes:.2f}x (target <= 2x)")
        fastest = {name: min(w for w, _ in runs) for name, runs in figures.items()}
        for base in ("duckdb alone", "duckdb alone, 1 thread"):
            paired = sorted(b / a for (a, _), (b, _) in zip(figures[base], figures["collection build"]))
            print(f"build / {base}: median of the rounds' own ratios {statistics.median(paired):.2f}x (rounds "
                  f"{', '.join(f'{r:.2f}' for r in paired)}); fastest run of each "
                  f"{fastest['collection build'] / fastest[base]:.2f}x")
        print(f"build / duckdb with the same outputs: wall "
              f"{med['collection build'][0] / med['duckdb, same outputs'][0]:.2f}x")
        print(f"the two Parquet files are {'byte-identical' if same else 'different bytes'}; {same_rows(alone_out, built)}")
        record = json.loads((state / "build" / "current" / "build.json").read_text())
        sizes = ", ".join(f"{k} {v['bytes'] / 2**20:.1f} MiB" for k, v in record["files"].items())
        print(f"outputs: {sizes}, dataset.duckdb {record['database']['bytes'] / 2**20:.1f} MiB")
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
