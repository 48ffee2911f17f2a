"""Command line of the suite (also behind `collection conformance`).

    python -m conformance check                 lint the suite itself
    python -m conformance clauses [--json]      clauses without a case, and why
    python -m conformance --impl 'COMMAND' [-k PATTERN]... [-j N] [--mode inline|loopback]
                          [--report FILE] [--junit FILE] [--timeout S] [-x]
"""

from __future__ import annotations

import argparse
import json
import shlex
import signal
import sys
import threading
import time
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


def _fault_kills() -> dict:
    """conformance/fault_kills.json: faults seeded into an implementation and whether the suite
    killed them (written by audit/mutation.py --write); empty when absent."""
    from conformance import HERE

    path = HERE / "fault_kills.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _clauses(args) -> int:
    from conformance.suite import coverage_table

    by_clause, all_clauses, reasons = coverage_table()
    kills = _fault_kills()
    per_clause = kills.get("clauses", {})
    rows = []
    for c in all_clauses:
        cases = by_clause.get(c["id"], [])
        faults = per_clause.get(c["id"], {"faults": 0, "killed": []})
        rows.append({"id": c["id"], "group": c["group"], "cases": cases, "unobservable": reasons.get(c["id"]),
                     "faults": faults["faults"], "killed": faults["killed"]})
    # covered: a fault of the clause was seeded and killed; a case naming it is not enough
    covered = sum(1 for r in rows if r["killed"])
    named = sum(1 for r in rows if r["cases"])
    observable = sum(1 for r in rows if r["unobservable"] is None)
    missing = [r for r in rows if not r["cases"] and r["unobservable"] is None]
    untested = [r for r in rows if r["cases"] and not r["killed"]]
    if args.json:
        json.dump({"total": len(rows), "observable": observable, "covered": covered, "named_by_a_case": named,
                   "faults": kills.get("faults"), "faults_killed": kills.get("killed"), "clauses": rows}, sys.stdout, indent=1)
        print()
    else:
        print(f"{covered} clauses covered (a seeded fault of the clause is killed) / {observable} observable / "
              f"{len(rows)} total")
        print(f"{named} clauses named by a case; faults seeded: {kills.get('faults', 0)}, killed: {kills.get('killed', 0)}"
              + (f" ({kills.get('source')})" if kills.get("source") else ""))
        if missing:
            print("\nobservable clauses without a case:")
            for r in missing:
                print(f"  {r['id']}")
        if untested:
            print("\nclauses named by a case but with no killed fault (the case may not notice a fault there):")
            print("  " + " ".join(r["id"] for r in untested))
        print("\nclauses without a case, and why (unobservable from outside an implementation):")
        for r in rows:
            if not r["cases"] and r["unobservable"]:
                print(f"  {r['id']:<9} {r['unobservable']}")
    return 1 if missing and args.strict else 0


def rerun_command(impl: str, mode: str, case: str) -> str:
    """The command that runs just one case again (printed beside each failure)."""
    return f"python -m conformance --impl {shlex.quote(impl)} --mode {mode} -k {shlex.quote(case)}"


def _terminate_on_signal() -> None:
    """A CI timeout sends SIGTERM: kill every harness's process group and remove the fixture
    servers' CA directories before exiting, so nothing outlives the runner."""
    def handler(signum, frame) -> None:
        from conformance.protocol import kill_all

        kill_all()
        try:
            from conformance.loopback import close_all
            close_all()
        except ImportError:
            pass
        raise SystemExit(128 + signum)

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, handler)


def _run(args) -> int:
    from conformance import report
    from conformance.runner import ERRORED, FAIL, PASS, SKIPPED, run_suite
    from conformance.suite import load_cases
    from conformance.runner import select

    _terminate_on_signal()
    if args.mode == "loopback":
        try:
            import trustme  # noqa: F401
        except ImportError:
            print("loopback mode needs the trustme package (pip install trustme); inline mode does not",
                  file=sys.stderr)
            return 2
    log = open(args.harness_log, "a", encoding="utf-8") if args.harness_log else None
    total = len(select(load_cases(), args.k))
    stream = open(args.report, "w", encoding="utf-8") if args.report else None
    if stream is not None:
        report.write_jsonl_header(stream, args.mode, args.impl)
    counts = {PASS: 0, FAIL: 0, ERRORED: 0, SKIPPED: 0}
    lock = threading.Lock()
    tty = sys.stderr.isatty()
    last = [0.0]

    def progress(v) -> None:
        with lock:
            counts[v.status] += 1
            done = sum(counts.values())
            if stream is not None:      # streamed as cases finish
                report.write_jsonl_verdict(stream, v)
            if args.verbose:
                print(f"{v.status:<8} {v.area}/{v.case}", file=sys.stderr)
                return
            line = (f"[{done}/{total}] pass {counts[PASS]}  fail {counts[FAIL]}  errored {counts[ERRORED]}  "
                    f"skipped {counts[SKIPPED]}")
            if tty:
                print("\r" + line, end="" if done < total else "\n", file=sys.stderr, flush=True)
            elif done == total or time.monotonic() - last[0] >= 5:
                last[0] = time.monotonic()
                print(line, file=sys.stderr, flush=True)

    try:
        outcome = run_suite(args.impl, pattern=args.k, jobs=args.j, mode=args.mode, timeout=args.timeout,
                            log=log, on_verdict=progress, stop_on_failure=args.exitfirst)
    finally:
        if stream is not None:
            stream.flush()
    if not outcome.verdicts:
        print("no case matches", file=sys.stderr)
        return 2
    if stream is not None:
        report.write_jsonl_footer(stream, outcome)
        stream.close()
    if args.junit:
        report.write_junit(outcome, args.junit)
    report.write_summary(outcome, sys.stdout, selected=bool(args.k))
    return 0 if outcome.ok else 1


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown beside each option, and the examples kept as written."""


EXAMPLES = """examples:
  python -m conformance check
  python -m conformance --impl 'node my_harness.js' --report results.jsonl
  collection conformance -k merge -j 2
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m conformance", description="The collection conformance suite.",
                                formatter_class=_HelpFormatter, epilog=EXAMPLES)
    sub = p.add_subparsers(dest="command")
    sub.add_parser("check", help="lint the suite (schema, ids, clauses, exchanges, expectations)")
    c = sub.add_parser("clauses", help="list clauses without a case and the reason")
    c.add_argument("--json", action="store_true")
    c.add_argument("--strict", action="store_true", help="exit 1 when an observable clause has no case")
    r = sub.add_parser("run", help="run the suite against an implementation (the default command)",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    for q in (p, r):
        q.add_argument("--impl", help="the harness command line, e.g. 'node harness.js'")
        q.add_argument("-k", metavar="PATTERN", action="append",
                       help="only cases whose id, area/id or clause contains PATTERN (or matches a glob); repeat to add patterns")
        q.add_argument("-j", type=int, default=1, metavar="N", help="N harness processes in parallel")
        q.add_argument("--mode", choices=("inline", "loopback"), default="inline",
                       help="inline: the harness replays each run's exchanges on a virtual clock; loopback: it "
                            "fetches them over TLS from the runner's server on the wall clock")
        q.add_argument("--report", metavar="FILE", help="write JSON lines, one per case as it finishes")
        q.add_argument("--junit", metavar="FILE", help="write JUnit XML")
        q.add_argument("--timeout", type=float, default=60.0, help="seconds a harness may take per run")
        q.add_argument("--harness-log", metavar="FILE", help="append the harnesses' stderr here")
        q.add_argument("-x", "--exitfirst", action="store_true", help="start no case after the first failure or error")
        q.add_argument("-v", "--verbose", action="store_true", help="one line per case instead of the progress line")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:       # `... | head`: the reader left; say nothing more
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _main(argv: Sequence[str] | None = None) -> int:
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
