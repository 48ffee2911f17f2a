"""Reports: JSON lines, JUnit XML, and a human summary per clause group."""

from __future__ import annotations

import json
from typing import TextIO
from xml.etree import ElementTree as ET

from conformance.runner import ERRORED, FAIL, PASS, SKIPPED, Outcome
from conformance.suite import clauses, group_of, unobservable


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


def write_summary(outcome: Outcome, out: TextIO) -> None:
    impl = outcome.implementation or {}
    counts = {s: sum(1 for v in outcome.verdicts if v.status == s) for s in (PASS, FAIL, SKIPPED, ERRORED)}
    out.write(f"implementation: {impl.get('name', '?')} {impl.get('version', '?')} ({impl.get('language', '?')}), "
              f"mode {outcome.mode}\n")
    out.write(f"cases: {len(outcome.verdicts)}  pass {counts[PASS]}  fail {counts[FAIL]}  "
              f"errored {counts[ERRORED]}  skipped {counts[SKIPPED]}  in {outcome.seconds:.1f} s"
              f"{f'  (harness restarts: {outcome.restarts})' if outcome.restarts else ''}\n\n")
    out.write("clauses by group (passed / exercised / total):\n")
    for group, g in clause_summary(outcome).items():
        out.write(f"  {group:<6} {g['passed']:>3} / {g['ran']:>3} / {g['clauses']:>3}\n")
    failures = [v for v in outcome.verdicts if v.status in (FAIL, ERRORED)]
    if failures:
        out.write("\nfailures:\n")
        for v in failures:
            out.write(f"- {v.area}/{v.case} [{v.status}]{f' run {v.run}' if v.run else ''} "
                      f"({', '.join(v.clauses)})\n")
            if v.message:
                out.write(f"    {v.message.strip().splitlines()[-1][:300]}\n")
            for line in _diff_text(v.diffs).splitlines():
                out.write(f"    {line[:400]}\n")
    covered = {c for v in outcome.verdicts for c in v.clauses}
    reasons = unobservable()
    missing = [c["id"] for c in clauses() if c["id"] not in covered and c["id"] not in reasons]
    if missing:
        out.write(f"\nclauses without a case in this selection (and not in the unobservable table): "
                  f"{len(missing)}\n  {' '.join(missing)}\n")
