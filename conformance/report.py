"""Reports: JSON lines, JUnit XML, and a human summary per clause group."""

from __future__ import annotations

import json
from typing import TextIO
from xml.etree import ElementTree as ET

from conformance import OPTIONAL_CAPABILITIES
from conformance.runner import ERRORED, FAIL, PASS, SKIPPED, Outcome
from conformance.suite import clauses, group_of, unobservable


def write_jsonl_header(out: TextIO, mode: str, impl: str) -> None:
    out.write(json.dumps({"record": "start", "mode": mode, "impl": impl}) + "\n")
    out.flush()


def write_jsonl_verdict(out: TextIO, verdict) -> None:
    out.write(json.dumps(verdict.as_json(), ensure_ascii=False) + "\n")
    out.flush()


def write_jsonl_footer(out: TextIO, outcome: Outcome) -> None:
    out.write(json.dumps({"record": "end", "implementation": outcome.implementation, "mode": outcome.mode,
                          "seconds": round(outcome.seconds, 3), "restarts": outcome.restarts, "ok": outcome.ok}) + "\n")


def write_jsonl(outcome: Outcome, out: TextIO) -> None:
    out.write(json.dumps({"implementation": outcome.implementation, "mode": outcome.mode,
                          "seconds": round(outcome.seconds, 3), "restarts": outcome.restarts}) + "\n")
    for verdict in outcome.verdicts:
        out.write(json.dumps(verdict.as_json(), ensure_ascii=False) + "\n")


def _diff_text(diffs: list[dict]) -> str:
    return "\n".join(f"{d['what']}: expected {json.dumps(d['expected'], ensure_ascii=False)}, "
                     f"actual {json.dumps(d['actual'], ensure_ascii=False)}" for d in diffs)


def write_junit(outcome: Outcome, path: str) -> None:
    counts = {s: sum(1 for v in outcome.verdicts if v.status == s) for s in (PASS, FAIL, SKIPPED, ERRORED)}
    name = (outcome.implementation or {}).get("name", "unknown")
    suite = ET.Element("testsuite", name=f"conformance[{name}, {outcome.mode}]", tests=str(len(outcome.verdicts)),
                       failures=str(counts[FAIL]), errors=str(counts[ERRORED]), skipped=str(counts[SKIPPED]),
                       time=f"{outcome.seconds:.3f}")
    for v in outcome.verdicts:
        case = ET.SubElement(suite, "testcase", classname=f"conformance.{v.area}", name=v.case, time=f"{v.seconds:.3f}")
        ET.SubElement(case, "properties").extend(
            [ET.Element("property", name="clause", value=c) for c in v.clauses])
        if v.status == FAIL:
            ET.SubElement(case, "failure", message=(v.diffs[0]["what"] if v.diffs else "failed")).text = \
                (f"run {v.run}\n" if v.run else "") + _diff_text(v.diffs)
        elif v.status == ERRORED:
            ET.SubElement(case, "error", message=v.message[:200]).text = v.message
        elif v.status == SKIPPED:
            ET.SubElement(case, "skipped", message=v.message)
    tree = ET.ElementTree(ET.Element("testsuites"))
    tree.getroot().append(suite)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)


def clause_summary(outcome: Outcome) -> dict[str, dict]:
    """Per group: clauses covered by a case that ran, and those whose every case passed."""
    per_clause: dict[str, list[str]] = {}
    for v in outcome.verdicts:
        for c in v.clauses:
            per_clause.setdefault(c, []).append(v.status)
    groups: dict[str, dict] = {}
    for clause in clauses():
        g = groups.setdefault(clause["group"], {"clauses": 0, "ran": 0, "passed": 0})
        g["clauses"] += 1
        statuses = [s for s in per_clause.get(clause["id"], []) if s != SKIPPED]
        if statuses:
            g["ran"] += 1
            if all(s == PASS for s in statuses):
                g["passed"] += 1
    return groups


def capability_counts(outcome: Outcome) -> dict[str, dict[str, int]]:
    """Per capability a case needs: pass / fail / errored / skipped among those cases."""
    table: dict[str, dict[str, int]] = {}
    for v in outcome.verdicts:
        if not v.applicable:
            continue
        for cap in v.needs:
            row = table.setdefault(cap, {PASS: 0, FAIL: 0, ERRORED: 0, SKIPPED: 0})
            row[v.status] += 1
    return table


def write_summary(outcome: Outcome, out: TextIO, selected: bool = False) -> None:
    impl = outcome.implementation or {}
    counts = {s: sum(1 for v in outcome.verdicts if v.status == s) for s in (PASS, FAIL, SKIPPED, ERRORED)}
    out.write(f"implementation: {impl.get('name', '?')} {impl.get('version', '?')} ({impl.get('language', '?')}), "
              f"mode {outcome.mode}\n")
    out.write(f"cases: {len(outcome.verdicts)}  pass {counts[PASS]}  fail {counts[FAIL]}  "
              f"errored {counts[ERRORED]}  skipped {counts[SKIPPED]}  in {outcome.seconds:.1f} s"
              f"{f'  (harness restarts: {outcome.restarts})' if outcome.restarts else ''}\n\n")
    required_skips = [v for v in outcome.verdicts if v.required_skip]
    out.write("capabilities (cases needing each: pass / fail / errored / skipped):\n")
    for cap, row in sorted(capability_counts(outcome).items(), key=lambda kv: (kv[0] in OPTIONAL_CAPABILITIES, kv[0])):
        kind = "optional" if cap in OPTIONAL_CAPABILITIES else "required"
        out.write(f"  {cap:<22} {kind:<8} {row[PASS]:>4} / {row[FAIL]:>3} / {row[ERRORED]:>3} / {row[SKIPPED]:>3}\n")
    not_here = sum(1 for v in outcome.verdicts if not v.applicable)
    if not_here:
        out.write(f"  ({not_here} cases do not run in {outcome.mode} mode)\n")
    if required_skips:
        out.write(f"\nNOT GREEN: {len(required_skips)} required case(s) skipped "
                  f"(they need no optional capability): {' '.join(v.case for v in required_skips[:20])}"
                  f"{' …' if len(required_skips) > 20 else ''}\n")
    out.write("\nclauses by group (passed / exercised / total):\n")
    for group, g in clause_summary(outcome).items():
        out.write(f"  {group:<6} {g['passed']:>3} / {g['ran']:>3} / {g['clauses']:>3}\n")
    failures = [v for v in outcome.verdicts if v.status in (FAIL, ERRORED)]
    if failures:
        out.write("\nfailures:\n")
        for v in failures:
            out.write(f"- {v.area}/{v.case} [{v.status}]{f' run {v.run}' if v.run else ''} "
                      f"({', '.join(v.clauses)})\n")
            if v.message:
                for line in v.message.strip().splitlines()[:25]:
                    out.write(f"    {line[:300]}\n")
            for line in _diff_text(v.diffs).splitlines():
                out.write(f"    {line[:600]}\n")
            if outcome.impl:
                from conformance.cli import rerun_command
                out.write(f"    re-run: {rerun_command(outcome.impl, outcome.mode, v.case)}\n")
    covered = {c for v in outcome.verdicts for c in v.clauses}
    reasons = unobservable()
    missing = [c["id"] for c in clauses() if c["id"] not in covered and c["id"] not in reasons]
    if missing and not selected:
        out.write(f"\nclauses without a case in this selection (and not in the unobservable table): "
                  f"{len(missing)}\n  {' '.join(missing)}\n")
