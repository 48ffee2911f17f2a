#!/usr/bin/env python3
"""Replay the whole demo corpus to completion in one run and report wall time and peak memory.

    python bench/replay.py [--fixture F] [--recipe R]

Copies the council_decisions recipe with pages.max_fetches_per_run raised to cover the corpus
(and limits.max_requests to fit, REG: discovery.max_requests + max_fetches_per_run <=
max_requests), runs `collection run RECIPE --state DIR --replay FIXTURE --json` as a
subprocess, and prints the coverage, the wall time and the child's peak RSS (getrusage).
Targets: <= 10 s and <= 300 MiB. Figures, never assertions.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixture", default=os.path.join(ROOT, "fixtures", "council_decisions",
                                                           "council_decisions.fixture.json.gz"))
    parser.add_argument("--recipe", default=os.path.join(ROOT, "fixtures", "recipes", "council_decisions.json"))
    args = parser.parse_args()
    recipe = json.load(open(args.recipe))
    pages = recipe["collection"]["pages"]
    pages["max_fetches_per_run"] = 10_000
    recipe["limits"]["max_requests"] = recipe["collection"]["discovery"]["max_requests"] + 2 * 10_000
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as tmp:
        recipe_path = os.path.join(tmp, "recipe.json")
        with open(recipe_path, "w") as handle:
            json.dump(recipe, handle)
        command = [sys.executable, "-m", "collection", "run", recipe_path, "--state", os.path.join(tmp, "state"),
                   "--replay", args.fixture, "--json"]
        start = time.perf_counter()
        result = subprocess.run(command, capture_output=True, text=True)
        wall = time.perf_counter() - start
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024   # KiB on Linux
    if result.returncode != 0:
        print(result.stderr, file=sys.stderr)
        return 1
    record = json.loads(result.stdout)
    cov = record["coverage"]
    print(f"fixture: {os.path.relpath(args.fixture, ROOT)}")
    print(f"coverage: discovered {cov['discovered']}, fetched {cov['fetched_this_run']}, "
          f"failed {cov['failed_this_run']}, pending {cov['pending']}, complete {cov['complete']}, "
          f"budget_exhausted {cov['budget_exhausted']}")
    print(f"requests: {record['requests']['total']} ({record['requests']}), rows {record.get('rows')}")
    print(f"virtual duration: {record.get('duration_seconds')} s (what the politeness limit costs live)")
    print(f"wall time: {wall:.2f} s (target <= 10 s), ratio {wall / 10:.2f}")
    print(f"peak RSS: {peak_mib:.0f} MiB (target <= 300 MiB), ratio {peak_mib / 300:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
