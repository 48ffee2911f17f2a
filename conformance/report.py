"""Reports: JSON lines, JUnit XML, and a human summary per clause group."""

from __future__ import annotations

import json
from typing import TextIO
from xml.etree import ElementTree as ET

from conformance import OPTIONAL_CAPABILITIES, PROTOCOL_VERSIONS, failure_detail
from conformance.runner import ERRORED, FAIL, NOT_APPLICABLE, PASS, SKIPPED, STATUSES, Outcome
from conformance.suite import clauses, unobservable


def protocol_text(outcome: Outcome) -> str:
    """`protocol v1` (what the harness answered), or why there is none."""
    versions = outcome.protocols
    if not versions:
        return "protocol: none negotiated (no harness answered the handshake)"
    return f"protocol v{', v'.join(map(str, versions))}"


def counts(outcome: Outcome) -> dict[str, int]:
    return {s: sum(1 for v in outcome.verdicts if v.status == s) for s in STATUSES}


def write_jsonl_header(out: TextIO, mode: str, impl: str) -> None:
    # the harness has not answered yet: the version it chose is on every case record and the end record
    out.write(json.dumps({"record": "start", "mode": mode, "impl": impl,
                          "runner_protocols": list(PROTOCOL_VERSIONS)}) + "\n")
    out.flush()


def write_jsonl_verdict(out: TextIO, verdict) -> None:
    out.write(json.dumps(verdict.as_json(), ensure_ascii=False) + "\n")
    out.flush()


def _totals(outcome: Outcome) -> dict:
    return {"implementation": outcome.implementation, "mode": outcome.mode, "protocol": outcome.protocols,
            "counts": counts(outcome), "not_applicable": [v.case for v in outcome.not_applicable],
            "seconds": round(outcome.seconds, 3), "restarts": outcome.restarts, "ok": outcome.ok}


def write_jsonl_footer(out: TextIO, outcome: Outcome) -> None:
    out.write(json.dumps({"record": "end", **_totals(outcome)}) + "\n")


def write_jsonl(outcome: Outcome, out: TextIO) -> None:
    out.write(json.dumps(_totals(outcome)) + "\n")
    for verdict in outcome.verdicts:
        out.write(json.dumps(verdict.as_json(), ensure_ascii=False) + "\n")


def _diff_text(diffs: list[dict]) -> str:
    return "\n".join(f"{d['what']}: expected {json.dumps(d['expected'], ensure_ascii=False)}, "
                     f"actual {json.dumps(d['actual'], ensure_ascii=False)}" for d in diffs)


def _failure_text(v) -> str:
    lines = [v.description] if v.description else []
    lines.append(f"clauses: {', '.join(v.clauses)}")
    if v.run:
        lines.append(f"run {v.run}")
    if v.message:
        lines.append(v.message)
    lines.append(_diff_text(v.diffs))
    lines.extend(failure_detail.lines(v))
    if v.rerun:
        lines.append(f"re-run: {v.rerun}")
    return "\n".join(line for line in lines if line)


def write_junit(outcome: Outcome, path: str) -> None:
    n = counts(outcome)
    name = (outcome.implementation or {}).get("name", "unknown")
    # JUnit has no "not applicable": such a case is a <skipped> whose message says so, and
    # the suite's properties carry the protocol and the count (D-75)
    suite = ET.Element("testsuite", name=f"conformance[{name}, {outcome.mode}, {protocol_text(outcome)}]",
                       tests=str(len(outcome.verdicts)), failures=str(n[FAIL]), errors=str(n[ERRORED]),
                       skipped=str(n[SKIPPED] + n[NOT_APPLICABLE]), time=f"{outcome.seconds:.3f}")
    ET.SubElement(suite, "properties").extend([
        ET.Element("property", name="protocol", value=",".join(map(str, outcome.protocols)) or "none"),
        ET.Element("property", name="not_applicable", value=str(n[NOT_APPLICABLE])),
        ET.Element("property", name="mode", value=outcome.mode)])
    for v in outcome.verdicts:
        case = ET.SubElement(suite, "testcase", classname=f"conformance.{v.area}", name=v.case, time=f"{v.seconds:.3f}")
        ET.SubElement(case, "properties").extend(
            [ET.Element("property", name="clause", value=c) for c in v.clauses]
            + [ET.Element("property", name="verdict", value=v.status)]
            + ([ET.Element("property", name="protocol", value=str(v.protocol))] if v.protocol is not None else []))
        if v.status == FAIL:
            ET.SubElement(case, "failure", message=(v.diffs[0]["what"] if v.diffs else "failed")).text = _failure_text(v)
        elif v.status == ERRORED:
            ET.SubElement(case, "error", message=v.message[:200]).text = _failure_text(v)
        elif v.status == NOT_APPLICABLE:
            ET.SubElement(case, "skipped", message=f"not applicable: {v.message}")
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
            row = table.setdefault(cap, {s: 0 for s in STATUSES})
            row[v.status] += 1
    return table


def write_summary(outcome: Outcome, out: TextIO, selected: bool = False) -> None:
    impl = outcome.implementation or {}
    n = counts(outcome)
    newest = max(PROTOCOL_VERSIONS)
    out.write(f"implementation: {impl.get('name', '?')} {impl.get('version', '?')} ({impl.get('language', '?')}), "
              f"mode {outcome.mode}, {protocol_text(outcome)}"
              f"{f' (the runner speaks up to v{newest})' if outcome.protocols and max(outcome.protocols) < newest else ''}\n")
    out.write(f"cases: {len(outcome.verdicts)}  pass {n[PASS]}  fail {n[FAIL]}  "
              f"errored {n[ERRORED]}  skipped {n[SKIPPED]}  not applicable {n[NOT_APPLICABLE]}  in {outcome.seconds:.1f} s"
              f"{f'  (harness restarts: {outcome.restarts})' if outcome.restarts else ''}\n\n")
    required_skips = [v for v in outcome.verdicts if v.required_skip]
    out.write("capabilities (cases needing each: pass / fail / errored / skipped / not applicable):\n")
    for cap, row in sorted(capability_counts(outcome).items(), key=lambda kv: (kv[0] in OPTIONAL_CAPABILITIES, kv[0])):
        kind = "optional" if cap in OPTIONAL_CAPABILITIES else "required"
        out.write(f"  {cap:<22} {kind:<8} {row[PASS]:>4} / {row[FAIL]:>3} / {row[ERRORED]:>3} / {row[SKIPPED]:>3}"
                  f" / {row[NOT_APPLICABLE]:>3}\n")
    not_here = sum(1 for v in outcome.verdicts if not v.applicable)
    if not_here:
        out.write(f"  ({not_here} cases do not run in {outcome.mode} mode)\n")
    if outcome.not_applicable:
        worst = max(v.needs_protocol or newest for v in outcome.not_applicable)
        out.write(f"\nNOT APPLICABLE at {protocol_text(outcome)}: {len(outcome.not_applicable)} case(s) expect members "
                  f"this protocol cannot express (they need v{worst}); everything else in them was compared and "
                  f"agreed, but they did not pass:\n")
        for v in outcome.not_applicable:
            out.write(f"  {v.area}/{v.case} ({', '.join(v.clauses)}): {len(v.beyond)} member(s), e.g. "
                      f"{'; '.join(v.beyond[:3])}\n")
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
            if v.description:
                out.write(f"    {v.description}\n")
            if v.message:
                for line in v.message.strip().splitlines()[:25]:
                    out.write(f"    {line[:300]}\n")
            for line in _diff_text(v.diffs).splitlines():
                out.write(f"    {line[:600]}\n")
            for line in failure_detail.lines(v):
                out.write(f"    {line[:600]}\n")
            rerun = v.rerun
            if not rerun and outcome.impl:      # run_suite called as a library: the suite's own command line
                from conformance.cli import invocation, rerun_command
                rerun = rerun_command(invocation(), outcome.impl, outcome.mode, v.case)
            if rerun:
                out.write(f"    re-run: {rerun}\n")
    covered = {c for v in outcome.verdicts for c in v.clauses}
    reasons = unobservable()
    missing = [c["id"] for c in clauses() if c["id"] not in covered and c["id"] not in reasons]
    if missing and not selected:
        out.write(f"\nclauses without a case in this selection (and not in the unobservable table): "
                  f"{len(missing)}\n  {' '.join(missing)}\n")
    if outcome.not_applicable:     # last, so that no one reads the counts above as the whole story
        out.write(f"\n{protocol_text(outcome)}: {len(outcome.not_applicable)} of {len(outcome.verdicts)} case(s) "
                  f"not applicable (not judged in full; see NOT APPLICABLE above)\n")
