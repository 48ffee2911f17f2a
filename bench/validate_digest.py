"""A digest of every verdict validation gives on tables (issue 25 point 2), to prove that a change
made for speed changed no finding: code, message, pointer, rule, file and SQL line/column, fix.

It judges, and hashes the canonical JSON of every result of:

- generated: the differential test's generator (tests/transform_gen.py) over many seeds, each
  statement through infer_columns, check_table (a random declaration), statement_findings and
  compare_columns (with and without sources), and mutated copies (cut short, a character
  inserted, a token doubled) so the syntax refusals and their positions are judged too;
- registered: the same generator's SQL inside dataset documents over bench/validate.py's
  html.web_extract source, written plainly and with the SQL escaped over lines, through
  register_bytes (the file's line and column of each refusal);
- bench: bench/validate.py's own datasets, and each with one cast removed (a mismatch);
- conformance: every case under conformance/cases/ whose recipe carries tables;
- edges: hand-written statements the generator draws seldom (two-word types, quoted names,
  comments, every clause), each under declarations that all mismatch;
- captured (--captured FILE): inputs recorded while the transform, registration, fix-message and
  build tests ran (the refusal cases they hold; bench/validate_capture.py records them), replayed.

    PYTHONPATH=. .venv/bin/python bench/validate_digest.py [--seeds 40] [--captured FILE] [--dump FILE]

Run it on the baseline and after each change: any digest that moves names a changed verdict
(--dump writes every line, so `diff` finds which).
"""

from __future__ import annotations

import argparse
import base64
import copy
import hashlib
import json
import random
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from collection.recipe.registration import register_bytes, register_document  # noqa: E402
from collection.transform import contract, sqlparse  # noqa: E402
from collection.transform.types import DECLARED_TYPES  # noqa: E402
from transform_gen import PROVENANCE, Gen, declaration, layout  # noqa: E402

import validate as bench_validate  # noqa: E402

_MUTATION_CHARS = ["'", '"', "(", ")", ",", ";", "/*", "--", "\n", " x ", "#", "é", "1", "."]


def _outcome(fn: Callable[[], Any]) -> Any:
    """A call's result as JSON, or the refusal it raised (never a traceback: that is a finding too)."""
    try:
        return {"ok": _plain(fn())}
    except contract.SqlError as e:
        return {"sql_error": asdict(e.finding)}
    except sqlparse.ParseError as e:
        return {"parse_error": [e.kind, e.message, e.pos]}
    except Exception as e:  # noqa: BLE001 - a crash is recorded, so a change that adds or removes one shows
        return {"crash": f"{type(e).__name__}: {e}"}


def _plain(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        return asdict(value)
    if isinstance(value, sqlparse.Query):
        return "query"
    return value


def _registration(blob: bytes) -> Any:
    r = register_bytes(blob)
    return {"registrable": r.registrable, "refusals": [x.to_json() for x in r.refusals]}


def _declaration(rng: random.Random, actual: list[tuple[str, str]] | None) -> list[tuple[str, str]]:
    """The differential test's declaration; for SQL that cannot be typed, one of a few VARCHARs."""
    return declaration(rng, actual or [(f"c{k}", "VARCHAR") for k in range(rng.randint(1, 3))])


def _mutations(rng: random.Random, sql: str) -> Iterator[str]:
    cut = rng.randint(0, len(sql))
    yield sql[:cut]
    at = rng.randint(0, len(sql))
    yield sql[:at] + rng.choice(_MUTATION_CHARS) + sql[at:]
    words = sql.split(" ")
    k = rng.randrange(len(words))
    yield " ".join(words[:k] + [words[k]] + words[k:])


def _contract_lines(rng: random.Random, sql: str, sources: dict[str, list[str]]) -> Iterator[Any]:
    inferred = _outcome(lambda: contract.infer_columns(sql, sources))
    actual = [tuple(c) for c in inferred["ok"]] if "ok" in inferred else None
    declared = _declaration(rng, actual)
    yield {"infer": inferred}
    yield {"check": _outcome(lambda: contract.check_table("t", sql, declared, sources)), "declared": declared}
    yield {"statement": _outcome(lambda: contract.statement_findings("t", sql, sources))}
    if actual is not None:
        yield {"compare_sources": _outcome(lambda: contract.compare_columns("t", sql, declared, actual,
                                                                            sources=sources))}
        yield {"compare_bare": _outcome(lambda: contract.compare_columns("t", sql, declared, actual))}
    yield {"parse": _outcome(lambda: sqlparse.parse(sql))}


# shapes the generator draws seldom or never: spans that end in a two-word type, quoted names,
# comments and escapes, every clause; each judged under declarations that all mismatch, so every
# fix (which quotes the SQL's own text) is in the digest
EDGES = [
    "select title::double precision as x, title::character varying as y, page_id::text as z from s",
    "select cast(title as double precision) as x, cast(title as char varying) as y, page_id from s",
    "select title::decimal(10,2) as x, title::numeric as y, (title)::int as z, ((title))::bigint as w from s",
    "select title::timestamp with time zone as x, title::timestamp without time zone as y from s",
    "select try_cast(title as integer) as x, -cast(title as integer) as y, +1 as z from s",
    'select "title", s.title, "s"."title" as t2, s.* from s',
    "select * , title from s",
    "select title as \"Odd \"\"name\"\"\", 'it''s' as q from s -- trailing\n",
    "/* lead */ select /* mid */ title /* in */ as x from s /* end */ ;",
    "select title from s where title like 'a%' and not title ilike 'b%' or title in ('x', 'y')",
    "select title, count(*) as n from s group by title having count(*) > 1 order by n desc nulls last limit 5 offset 1",
    "select extract(year from cast(page_fetched_at as date)) as y, substring(title from 2 for 3) as z from s",
    "select case title when 'a' then 1 when 'b' then 2 else 3 end as k, case when title is null then 'n' end as m from s",
    "select a.title from s as a join s b on a.page_id = b.page_id left join s c using (page_id)",
    "with w as (select cast(page_ordinal as integer) as o from s) select o, o + 1 as p, o * 2.5 as q from w",
    "select title from s union all select page_id from s order by 1",
    "select cast(page_revision as integer) between 1 and 10 as b, title is not null as nn from s",
    "select 1e3 as f, 1.50 as d, 2147483648 as big, -9223372036854775808 as small from s",
    "select coalesce(title, 'x') as c, nullif(title, '') as n, greatest(1, 2) as g, abs(-1) as a from s",
    "select date '2024-01-01' as d, timestamp '2024-01-01 00:00:00' as t, timestamptz '2024-01-01' as tz from s",
]


def edges() -> Iterator[Any]:
    sources = {"s": ["title", *PROVENANCE]}
    for sql in EDGES:
        for kind in DECLARED_TYPES:
            inferred = _outcome(lambda: contract.infer_columns(sql, sources))
            names = [c[0] for c in inferred["ok"]] if "ok" in inferred else ["x", "y", "z"]
            # every other run renames every column, so each fix quotes its select item as written
            declared = [(n + "_renamed" if kind in ("integer", "date", "string") else n, kind) for n in names]
            yield {"sql": sql, "infer": inferred,
                   "check": _outcome(lambda: contract.check_table("t", sql, declared, sources)),
                   "compare_bare": _outcome(lambda: contract.compare_columns(
                       "t", sql, declared, [(n, "VARCHAR") for n in names])),
                   "statement": _outcome(lambda: contract.statement_findings("t", sql, sources))}


def generated(seeds: int, per_seed: int) -> Iterator[Any]:
    for seed in range(seeds):
        rng = random.Random(7000 + seed)
        for _ in range(5):
            sources = layout(rng)
            gen = Gen(rng, sources)
            for _ in range(per_seed // 5):
                sql = gen.statement()
                for line in _contract_lines(rng, sql, sources):
                    yield {"sql": sql, **line}
                for mutated in _mutations(rng, sql):
                    yield {"sql": mutated, "declared": None,
                           "check": _outcome(lambda: contract.check_table("t", mutated, [("c0", "string")], sources))}


def registered(seeds: int, per_seed: int) -> Iterator[Any]:
    """Generated SQL inside dataset documents, through registration (file positions included)."""
    source = bench_validate.recipe(0)
    name = source["name"]
    columns = {name: ["title", "story", *PROVENANCE]}
    for seed in range(seeds):
        rng = random.Random(9000 + seed)
        gen = Gen(rng, columns)
        for k in range(per_seed):
            sql = gen.statement()
            if k % 3 == 0:
                sql = next(_mutations(rng, sql)) if rng.random() < 0.5 else sql.replace(" from ", "\nfrom ", 1)
            inferred = _outcome(lambda: contract.infer_columns(sql, columns))
            actual = [tuple(c) for c in inferred["ok"]] if "ok" in inferred else None
            declared = [(n, t) for n, t in _declaration(rng, actual) if n.replace("_", "a").isalnum()] or \
                [("c0", "string")]
            table = {"name": f"t{k}", "sql": sql, "columns": [{"name": n, "type": t} for n, t in declared]}
            document = {"name": "ds", "sources": [source], "tables": [table]}
            yield {"doc": document, "compact": _registration(json.dumps(document).encode())}
            yield {"doc": document, "indented": _registration(json.dumps(document, indent=2,
                                                                         ensure_ascii=False).encode())}


def bench_datasets(count: int) -> Iterator[Any]:
    for i in range(count):
        source = bench_validate.recipe(i)
        tables = bench_validate.tables_for(i, source["name"])
        document = {"name": f"dataset_{i}", "sources": [source], "tables": tables}
        yield {"i": i, "bench": _registration(json.dumps(document, indent=2).encode())}
        broken = copy.deepcopy(document)
        sql = broken["tables"][i % len(tables)]["sql"]
        broken["tables"][i % len(tables)]["sql"] = sql.replace("cast(", "(", 1).replace(" as integer)", ")", 1)
        yield {"i": i, "bench_broken": _registration(json.dumps(broken, indent=2).encode())}


def conformance() -> Iterator[Any]:
    for path in sorted((ROOT / "conformance" / "cases").rglob("*.json")):
        case = json.loads(path.read_text())
        recipe = case.get("recipe")
        if isinstance(recipe, dict) and "tables" in recipe:
            r = register_document(recipe)
            yield {"case": case.get("id"), "refusals": [x.to_json() for x in r.refusals]}


def captured(path: Path) -> Iterator[Any]:
    seen: set[str] = set()
    for raw in path.read_text().splitlines():
        if raw in seen:
            continue
        seen.add(raw)
        rec = json.loads(raw)
        kind = rec["kind"]
        if kind == "check_table":
            out = _outcome(lambda: contract.check_table(rec["table"], rec["sql"], [tuple(d) for d in rec["declared"]],
                                                        rec["sources"]))
        elif kind == "statement_findings":
            out = _outcome(lambda: contract.statement_findings(rec["table"], rec["sql"], rec["sources"]))
        elif kind == "compare_columns":
            out = _outcome(lambda: contract.compare_columns(rec["table"], rec["sql"],
                                                            [tuple(d) for d in rec["declared"]],
                                                            [tuple(a) for a in rec["actual"]],
                                                            sources=rec["sources"]))
        elif kind == "infer_columns":
            out = _outcome(lambda: contract.infer_columns(rec["sql"], rec["sources"]))
        elif kind == "parse":
            out = _outcome(lambda: sqlparse.parse(rec["sql"]))
        elif kind == "register_bytes":
            out = _registration(base64.b64decode(rec["data_b64"]))
        else:
            continue
        yield {"input": raw, "out": out}


def digest(lines: Iterable[Any], dump) -> tuple[int, str]:
    h = hashlib.sha256()
    n = 0
    for line in lines:
        text = json.dumps(line, sort_keys=True, ensure_ascii=False, default=str)
        h.update(text.encode() + b"\n")
        if dump is not None:
            dump.write(text + "\n")
        n += 1
    return n, h.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=40)
    parser.add_argument("--per-seed", type=int, default=250)
    parser.add_argument("--bench-count", type=int, default=600)
    parser.add_argument("--captured", type=Path)
    parser.add_argument("--dump", type=Path)
    args = parser.parse_args()
    sections: list[tuple[str, Callable[[], Iterable[Any]]]] = [
        ("generated", lambda: generated(args.seeds, args.per_seed)),
        ("registered", lambda: registered(max(1, args.seeds // 4), args.per_seed)),
        ("bench", lambda: bench_datasets(args.bench_count)),
        ("conformance", conformance),
        ("edges", edges),
    ]
    if args.captured:
        sections.append(("captured", lambda: captured(args.captured)))
    dump = args.dump.open("w") if args.dump else None
    whole = hashlib.sha256()
    for name, make in sections:
        if dump is not None:
            dump.write(f"## {name}\n")
        n, hexdigest = digest(make(), dump)
        whole.update(f"{name} {hexdigest}\n".encode())
        print(f"{name:<12} {n:>7} lines  {hexdigest}")
    print(f"{'all':<12} {'':>7}        {whole.hexdigest()}")


if __name__ == "__main__":
    main()
