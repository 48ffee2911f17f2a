"""Benchmark: validating 1,000 distinct recipes in one process (issue 2).

Prints recipes/s for `collection`'s registration (bytes in: strict JSON, the source schema
compiled once, every rule) beside a plain `jsonschema.validate` loop over the same
documents in the same run (the schema re-checked and the validator rebuilt on each call,
as that function does). Target: ≥ 2,000 recipes/s.

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

if __name__ == "__main__":
    main()
