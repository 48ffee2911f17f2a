"""Command line of the suite (also behind `collection conformance`).

    python -m conformance check                 lint the suite itself
    python -m conformance clauses [--json]      clauses without a case, and why
    python -m conformance --impl 'COMMAND' [-k PATTERN]... [-j N] [--mode inline|loopback]
                          [--case ID]... [--report FILE] [--junit FILE] [--timeout S] [-x] [-v]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
import threading
import time
import zipfile
from typing import Sequence

from conformance.needs import MissingDependency, require

DEFAULT_TIMEOUT = 60.0


def _check(args) -> int:
    require("check")
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


def invocation() -> list[str]:
    """How this runner was started, as words a shell runs again from the same directory:
    the standalone pyz by its path, otherwise this interpreter with `-m conformance`. An
    absolute interpreter path, because `python` on PATH may be another one (D-76)."""
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0 and os.path.isfile(argv0) and not argv0.endswith(".py") and zipfile.is_zipfile(argv0):
        return [sys.executable, os.path.abspath(argv0)]
    return [sys.executable, "-m", "conformance"]


def rerun_command(prog: Sequence[str], impl: str, mode: str, case: str, timeout: float = DEFAULT_TIMEOUT) -> str:
    """The command that runs just one case again (printed beside each failure). `--case`
    selects that id alone; `-k` would also take every id containing it (pag-cursor-…)."""
    words = [*prog, "--impl", impl, "--mode", mode]
    if timeout != DEFAULT_TIMEOUT:
        words += ["--timeout", f"{timeout:g}"]
    return shlex.join([*words, "--case", case])


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


def _run(args, prog: Sequence[str]) -> int:
    from conformance import report
    from conformance.runner import ERRORED, FAIL, NOT_APPLICABLE, PASS, SKIPPED, STATUSES, run_suite
    from conformance.suite import load_cases
    from conformance.runner import select

    _terminate_on_signal()
    require("run", args.mode)
    log = open(args.harness_log, "a", encoding="utf-8") if args.harness_log else None
    patterns = _patterns(args)
    cases = load_cases()
    total = len(select(cases, patterns))
    stream = open(args.report, "w", encoding="utf-8") if args.report else None
    if stream is not None:
        report.write_jsonl_header(stream, args.mode, args.impl)
    counts = {s: 0 for s in STATUSES}
    lock = threading.Lock()
    tty = sys.stderr.isatty()
    last = [0.0]

    def progress(v) -> None:
        with lock:
            counts[v.status] += 1
            done = sum(counts.values())
            if v.status in (FAIL, ERRORED):
                v.rerun = rerun_command(prog, args.impl, args.mode, v.case, args.timeout)
            if stream is not None:      # streamed as cases finish
                report.write_jsonl_verdict(stream, v)
            if args.verbose:
                protocol = f"  [protocol v{v.protocol}]" if v.protocol is not None else ""
                print(f"{v.status:<14} {v.area}/{v.case}{protocol}", file=sys.stderr)
                return
            line = (f"[{done}/{total}] pass {counts[PASS]}  fail {counts[FAIL]}  errored {counts[ERRORED]}  "
                    f"skipped {counts[SKIPPED]}"
                    + (f"  not applicable {counts[NOT_APPLICABLE]}" if counts[NOT_APPLICABLE] else ""))
            if tty:
                print("\r" + line, end="" if done < total else "\n", file=sys.stderr, flush=True)
            elif done == total or time.monotonic() - last[0] >= 5:
                last[0] = time.monotonic()
                print(line, file=sys.stderr, flush=True)

    try:
        outcome = run_suite(args.impl, cases=cases, pattern=patterns, jobs=args.j, mode=args.mode, timeout=args.timeout,
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
    report.write_summary(outcome, sys.stdout, selected=bool(patterns))
    return 0 if outcome.ok else 1


def _patterns(args) -> list[str] | None:
    """-k patterns, and --case ids as globs that match that id alone (no glob character
    can occur in an id: the schema allows [a-z0-9-] only)."""
    patterns = list(args.k or []) + [f"[{c[0]}]{c[1:]}" for c in (args.case or []) if c]
    return patterns or None


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown beside each option, and the examples kept as written."""


def _examples(prog: str) -> str:
    return f"""examples:
  {prog} check
  {prog} --impl 'node my_harness.js' --report results.jsonl
  {prog} --impl 'node my_harness.js' --case merge-ledger-digests -v
"""


def parser(prog: str = "python -m conformance") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="The collection conformance suite.",
                                formatter_class=_HelpFormatter, epilog=_examples(prog))
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
        q.add_argument("--case", metavar="ID", action="append",
                       help="exactly the case with this id (what a failure's re-run line uses); repeat to add cases")
        q.add_argument("-j", type=int, default=1, metavar="N", help="N harness processes in parallel")
        q.add_argument("--mode", choices=("inline", "loopback"), default="inline",
                       help="inline: the harness replays each run's exchanges on a virtual clock; loopback: it "
                            "fetches them over TLS from the runner's server on the wall clock")
        q.add_argument("--report", metavar="FILE", help="write JSON lines, one per case as it finishes")
        q.add_argument("--junit", metavar="FILE", help="write JUnit XML")
        q.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds a harness may take per run")
        q.add_argument("--harness-log", metavar="FILE", help="append the harnesses' stderr here")
        q.add_argument("-x", "--exitfirst", action="store_true", help="start no case after the first failure or error")
        q.add_argument("-v", "--verbose", action="store_true", help="one line per case instead of the progress line")
    return p


def main(argv: Sequence[str] | None = None, *, prog: Sequence[str] | None = None,
         usage_prog: str | None = None) -> int:
    """`prog`: the words that start this runner again (re-run lines; default: how this
    process was started); `usage_prog`: the name --help shows."""
    words = list(prog) if prog else invocation()
    name = usage_prog or ("python -m conformance" if words[1:2] == ["-m"] else os.path.basename(words[-1]))
    try:
        return _main(argv, words, name)
    except MissingDependency as exc:     # the runner's own gap: one line, never the harness's fault
        print(exc, file=sys.stderr)
        return 2
    except BrokenPipeError:       # `... | head`: the reader left; say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _main(argv: Sequence[str] | None, prog: list[str], name: str) -> int:
    args = parser(name).parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.command == "check":
        return _check(args)
    if args.command == "clauses":
        return _clauses(args)
    if not args.impl:
        parser(name).print_usage(sys.stderr)
        print("give --impl COMMAND, or a subcommand (check, clauses)", file=sys.stderr)
        return 2
    return _run(args, prog)
