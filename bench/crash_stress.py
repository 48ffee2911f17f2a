"""Stress: SIGKILL `collection run` (replay, virtual clock) at ≥ 500 random instants.

The same loop as tests/test_crash_safety.py, longer: after every kill `DIR/current` is the
old or the new generation with files that agree, and the next run from that state
completes. Prints progress every 50 runs and a summary.

    .venv/bin/python bench/crash_stress.py [--kills 500] [--seed N] [--pages 400]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from test_crash_safety import crash_loop  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kills", type=int, default=500)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--pages", type=int, default=400)
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="crash-stress-") as workdir:
        result = crash_loop(workdir, args.kills, seed=args.seed, pages=args.pages, report=print)
    elapsed = time.monotonic() - started
    print(f"seed {args.seed}: {result['killed']} kills, {result['finished']} runs finished uninterrupted, "
          f"{result['generations']} distinct generations seen as current, every state consistent and every "
          f"next run completed; {elapsed:.0f} s")


if __name__ == "__main__":
    main()
