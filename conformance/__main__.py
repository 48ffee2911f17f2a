"""python -m conformance [check | clauses | --impl COMMAND ...]"""

from __future__ import annotations

import argparse
import sys

from conformance.cli import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
