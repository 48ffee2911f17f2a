"""Benchmark: validating 1,000 distinct recipes in one process (issue 2), and dataset documents
with a transform against the same documents without it (issue 25).

Prints recipes/s for `collection`'s registration (bytes in: strict JSON, the source schema
compiled once, every rule) beside a plain `jsonschema.validate` loop over the same
documents in the same run (the schema re-checked and the validator rebuilt on each call,
as that function does). Target: ≥ 2,000 recipes/s.

Then the transform (issue 25 point 2, "at the speed of validation today"): each source above as a
one-source dataset, once with a `tables` member (one to three SELECTs: the spec's, one with a
WHERE and casts, one aggregate) and once without, registered in the same run; prints both rates and
the ratio, so the cost of the SQL contract is read against this machine's own baseline.

    .venv/bin/python bench/validate.py [--count 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
from pathlib import Path

import jsonschema

from collection.recipe.registration import register_bytes
from collection.recipe.resources import load_schema

EXAMPLE = json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "recipes" / "council_decisions.json").read_text())
KINDS = ["json_api", "html_index", "sitemap", "explicit"]


def recipe(i: int) -> dict:
    doc = copy.deepcopy(EXAMPLE)
    doc["name"] = f"source_{i}"
    host = f"https://www{i}.example.com"
    doc["connector"]["origin"] = host
    pages = doc["collection"]["pages"]
    pages["allowed_origins"] = [host, f"https://cdn{i}.example.com"]
    pages["max_fetches_per_run"] = 100 + i % 400
    pages["retries"] = i % 4
    kind = KINDS[i % 4]
    if kind == "json_api":
        doc["collection"]["discovery"]["url"] = f"{host}/wp-json/wp/v2/items_{i}?per_page=100"
    elif kind == "html_index":
        doc["collection"]["discovery"] = {"kind": "html_index", "url": f"{host}/list/{i}",
                                          "records": {"selector": "ul.items > li a"},
                                          "pagination": {"kind": "next_selector", "selector": "a[rel=next]"},
                                          "max_requests": 40}
        pages["revisit"] = {"kind": "interval", "seconds": 3600 + i}
    elif kind == "sitemap":
        doc["collection"]["discovery"] = {"kind": "sitemap", "url": f"{host}/sitemap_{i}.xml", "max_requests": 40}
    else:
        doc["collection"]["discovery"] = {"kind": "explicit", "members": [
            {"page_id": f"p{j}", "url": f"{host}/p/{j}"} for j in range(1 + i % 20)]}
        pages["revisit"] = {"kind": "never"}
    return doc


def timed(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    documents = [recipe(i) for i in range(args.count)]
    blobs = [json.dumps(d, indent=2).encode() for d in documents]
    assert all(register_bytes(b).registrable for b in blobs), "the benchmark's recipes must register"
    schema = load_schema("source.schema.json")

    ours = timed(lambda: [register_bytes(b) for b in blobs], args.repeat)
    plain = timed(lambda: [jsonschema.validate(d, schema) for d in documents], args.repeat)
    compiled = jsonschema.Draft202012Validator(schema)
    bare = timed(lambda: [compiled.validate(d) for d in documents], args.repeat)

    n = args.count
    print(f"{'what':<58} {'seconds':>8} {'recipes/s':>10}")
    for label, seconds in (("collection register_bytes (bytes in, schema + rules)", ours),
                           ("plain jsonschema.validate loop (baseline)", plain),
                           ("compiled Draft202012Validator.validate, schema only", bare)):
        print(f"{label:<58} {seconds:8.3f} {n / seconds:10.0f}")
    print(f"ratio collection / plain jsonschema.validate: {plain / ours:.2f}× faster")
    print(f"target ≥ 2,000 recipes/s: {'met' if n / ours >= 2000 else 'NOT met'} ({n / ours:.0f}/s)")
    formats(blobs, args.repeat, ours)
    transforms(documents, args.repeat)


def formats(blobs: list[bytes], repeat: int, register_seconds: float) -> None:
    """`validate --format F DIR` end to end minus process start: the files read from a directory,
    registered and rendered; once with the registrable recipes above (the target's workload) and
    once with one in four refused (so the refusal path and the renderers do work)."""
    import tempfile

    from collection.commands.validate import expand, validate_files
    from collection.commands.validate_formats import FORMATS, RENDERERS

    n = len(blobs)
    for label, refuse_every in (("all registrable", 0), ("one in four refused", 4)):
        with tempfile.TemporaryDirectory() as root:
            for i, blob in enumerate(blobs):
                if refuse_every and i % refuse_every == refuse_every - 1:
                    blob = blob.replace(b'"retries": ', b'"retries": 9', 1).replace(b'"concurrency": 2',
                                                                                     b'"concurrency": 0')
                Path(root, f"recipe_{i:05d}.json").write_bytes(blob)
            print(f"{'validate --format F DIR, ' + label:<58} {'seconds':>8} {'recipes/s':>10}")
            for name in FORMATS:
                def once() -> None:
                    entries, status = validate_files(tuple(expand((root,))))
                    RENDERERS[name](entries, status == 0)
                seconds = timed(once, repeat)
                print(f"  --format {name:<48} {seconds:8.3f} {n / seconds:10.0f}"
                      f"   ({register_seconds / seconds:.2f}× register_bytes alone; "
                      f"target ≥ 2,000/s {'met' if n / seconds >= 2000 else 'NOT met'})")

SPEC_TABLE = load_schema("dataset.schema.json")["properties"]["tables"]["examples"][0][0]


def tables_for(i: int, source: str) -> list[dict]:
    """One to three tables over `source` (an html.web_extract relation: title, story, provenance)."""
    spec = copy.deepcopy(SPEC_TABLE)
    spec["sql"] = spec["sql"].replace("council_decisions", source)
    tables = [spec]
    if i % 3 >= 1:
        tables.append({"name": "recent", "sql": (
            f"select page_id, page_url, cast(page_revision as integer) as revision,\n"
            f"       cast(page_fetched_at as timestamp with time zone) as fetched_at, upper(title) as title\n"
            f"from {source}\nwhere page_ordinal is not null and length(story) > {i % 50}\norder by page_id"),
            "columns": [{"name": "page_id", "type": "string"}, {"name": "page_url", "type": "string"},
                        {"name": "revision", "type": "integer"}, {"name": "fetched_at", "type": "timestamp"},
                        {"name": "title", "type": "string"}]})
    if i % 3 == 2:
        tables.append({"name": "per_day", "sql": (
            f"select cast(cast(page_fetched_at as timestamp with time zone) as date) as day, count(*) as pages\n"
            f"from {source} group by 1"),
            "columns": [{"name": "day", "type": "date"}, {"name": "pages", "type": "integer"}]})
    return tables


def transforms(sources: list[dict], repeat: int) -> None:
    """Dataset documents with tables against the same documents without them, in this run."""
    plain = [{"name": f"dataset_{i}", "sources": [s]} for i, s in enumerate(sources)]
    typed = [{**d, "tables": tables_for(i, d["sources"][0]["name"])} for i, d in enumerate(plain)]
    plain_blobs = [json.dumps(d, indent=2).encode() for d in plain]
    typed_blobs = [json.dumps(d, indent=2).encode() for d in typed]
    for blob in typed_blobs[:3]:
        registration = register_bytes(blob)
        assert registration.registrable, [str(r) for r in registration.refusals]
    assert all(register_bytes(b).registrable for b in plain_blobs + typed_blobs), "the datasets must register"
    n = len(sources)
    tables = sum(len(d["tables"]) for d in typed)
    without = timed(lambda: [register_bytes(b) for b in plain_blobs], repeat)
    with_tables = timed(lambda: [register_bytes(b) for b in typed_blobs], repeat)
    print(f"{'datasets (one source each), register_bytes':<58} {'seconds':>8} {'datasets/s':>10}")
    print(f"  {'without tables (baseline)':<56} {without:8.3f} {n / without:10.0f}")
    print(f"  {f'with tables ({tables} SELECTs, {tables / n:.1f} per dataset)':<56} {with_tables:8.3f} {n / with_tables:10.0f}")
    print(f"ratio with / without tables: {with_tables / without:.2f}× the time "
          f"({tables / (with_tables - without) if with_tables > without else float('inf'):.0f} SELECTs checked per second)")


if __name__ == "__main__":
    main()
