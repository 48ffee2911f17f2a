"""README's "What the main command shows" against a real replay of the demo corpus: the first run's
coverage block, the six-run table (fetched, failed, corrected, pending after each run) and why the
sixth run's corrections are the changed decisions that run 1 fetched in the first state (issue 26
point 5; MERGE-10 revisits last, MERGE-29 revision_hint revisits, COV-01 coverage)."""

from __future__ import annotations

import csv
import gzip
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from collection.cli import cli

ROOT = Path(__file__).resolve().parent.parent
RECIPE = ROOT / "fixtures" / "recipes" / "council_decisions.json"
FIXTURE = ROOT / "fixtures" / "council_decisions" / "council_decisions.fixture.json.gz"
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _ledger_urls(state: Path, wanted_state: str) -> dict[str, str]:
    with open(state / "current" / "ledger.csv", newline="", encoding="utf-8") as f:
        return {row["page_id"]: row["url"] for row in csv.DictReader(f) if row["state"] == wanted_state}


def _changed_decisions() -> set[str]:
    """Detail pages the fixture serves differently in the publisher's second state (not the page
    that fails in run 1 only, whose exchange carries a comment saying so)."""
    exchanges = json.loads(gzip.decompress(FIXTURE.read_bytes()))
    return {x["request"]["url"] for x in exchanges
            if "responses" in x and "/decisions/cd-" in x["request"]["url"] and "comment" not in x}


@pytest.mark.slow
def test_the_readme_demo_table_is_what_six_replayed_runs_report(tmp_path):
    state = tmp_path / "council_decisions"
    records, fetched_in_run_1 = [], {}
    for run in range(1, 7):
        result = CliRunner().invoke(cli, ["run", str(RECIPE), "--state", str(state), "--replay", str(FIXTURE),
                                          "--json"])
        assert result.exit_code == 0, result.output
        records.append(json.loads(result.stdout))
        if run == 1:
            fetched_in_run_1 = _ledger_urls(state, "fetched")

    first = records[0]["coverage"]
    block = re.search(r"^coverage (\{.*\})$", README, re.M).group(1)
    assert json.loads(block) == first

    for run, record in enumerate(records, 1):
        c = record["coverage"]
        assert c["changed"] == len(record["corrections"])
        line = f"| {run} | {c['fetched_this_run']:,} | {c['failed_this_run']:,} | {c['changed']:,} | {c['pending']:,} |"
        assert line in README, f"README lacks the row {line}"

    changed = _changed_decisions()
    assert len(changed) == 40 and "(40 decisions changed, one" in README
    urls = _ledger_urls(state, "fetched")
    corrected = {urls[c["page_id"]] for c in records[5]["corrections"]}
    # the sixth run's corrections are exactly the changed decisions run 1 had fetched in the first state
    assert corrected == changed & set(fetched_in_run_1.values())
    assert all(c["revision"] == 2 for c in records[5]["corrections"])
    assert [len(r["corrections"]) for r in records[:5]] == [0] * 5
    assert f"were fetched in the first state: {len(corrected)} of the {len(changed)}." in README
    assert f'`"changed": {len(corrected)}`' in README
