"""Command line of the suite (also behind `collection conformance`).

    python -m conformance check                 lint the suite itself
    python -m conformance clauses [--json]      clauses without a case, and why
    python -m conformance --impl 'COMMAND' [-k PATTERN] [-j N] [--mode inline|loopback]
                          [--report FILE] [--junit FILE] [--timeout S]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence


def _check(args) -> int:
    from conformance.suite import check, load_cases

    problems = check()
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"suite OK: {len(load_cases())} cases")
    return 0


def _clauses(args) -> int:
    from conformance.suite import coverage_table

    by_clause, all_clauses, reasons = coverage_table()
    rows = []
    for c in all_clauses:
        cases = by_clause.get(c["id"], [])
        rows.append({"id": c["id"], "group": c["group"], "cases": cases,
                     "unobservable": reasons.get(c["id"])})
    covered = sum(1 for r in rows if r["cases"])
    observable = sum(1 for r in rows if r["unobservable"] is None)
    missing = [r for r in rows if not r["cases"] and r["unobservable"] is None]
    if args.json:
        json.dump({"total": len(rows), "observable": observable, "covered": covered, "clauses": rows}, sys.stdout, indent=1)
        print()
    else:
        print(f"{covered} clauses covered / {observable} observable / {len(rows)} total")
        if missing:
            print("\nobservable clauses without a case:")
            for r in missing:
                print(f"  {r['id']}")
        print("\nclauses without a case, and why (unobservable from outside an implementation):")
        for r in rows:
            if not r["cases"] and r["unobservable"]:
                print(f"  {r['id']:<9} {r['unobservable']}")
    return 1 if missing and args.strict else 0


def _run(args) -> int:
    from conformance import report
    from conformance.runner import run_suite

    log = open(args.harness_log, "a", encoding="utf-8") if args.harness_log else None

    def progress(v) -> None:
        if args.verbose:
            print(f"{v.status:<8} {v.area}/{v.case}", file=sys.stderr)

    outcome = run_suite(args.impl, pattern=args.k, jobs=args.j, mode=args.mode, timeout=args.timeout,
                        log=log, on_verdict=progress)
    if not outcome.verdicts:
        print("no case matches", file=sys.stderr)
        return 2
    if args.report:
        with open(args.report, "w", encoding="utf-8") as out:
            report.write_jsonl(outcome, out)
    if args.junit:
        report.write_junit(outcome, args.junit)
    report.write_summary(outcome, sys.stdout)
    return 0 if outcome.ok else 1


EXAMPLES = """examples:
  python -m conformance check
  python -m conformance --impl 'node my_harness.js' --report results.jsonl
  collection conformance -k merge -j 2
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m conformance", description="The collection conformance suite.",
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLES)
    sub = p.add_subparsers(dest="command")
    sub.add_parser("check", help="lint the suite (schema, ids, clauses, exchanges, expectations)")
    c = sub.add_parser("clauses", help="list clauses without a case and the reason")
    c.add_argument("--json", action="store_true")
    c.add_argument("--strict", action="store_true", help="exit 1 when an observable clause has no case")
    r = sub.add_parser("run", help="run the suite against an implementation (the default command)")
    for q in (p, r):
        q.add_argument("--impl", help="the harness command line, e.g. 'node harness.js'")
        q.add_argument("-k", metavar="PATTERN", help="only cases whose id, area/id or clause contains PATTERN (or matches a glob)")
        q.add_argument("-j", type=int, default=1, metavar="N", help="N harness processes in parallel")
        q.add_argument("--mode", choices=("inline", "loopback"), default="inline")
        q.add_argument("--report", metavar="FILE", help="write JSON lines (one per case)")
        q.add_argument("--junit", metavar="FILE", help="write JUnit XML")
        q.add_argument("--timeout", type=float, default=60.0, help="seconds a harness may take per run")
        q.add_argument("--harness-log", metavar="FILE", help="append the harnesses' stderr here")
        q.add_argument("-v", "--verbose", action="store_true")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.command == "check":
        return _check(args)
    if args.command == "clauses":
        return _clauses(args)
    if not args.impl:
        parser().print_usage(sys.stderr)
        print("give --impl COMMAND, or a subcommand (check, clauses)", file=sys.stderr)
        return 2
    return _run(args)
