"""This project's harness passes the inline suite (the run loop against every case)."""

from __future__ import annotations

import sys

from conformance.runner import ERRORED, FAIL, run_suite

HARNESS = f"{sys.executable} -m conformance.harnesses.collection_harness"


def test_collection_passes_inline_suite():
    outcome = run_suite(HARNESS, jobs=4)
    broken = {v.case: v.diffs or v.message for v in outcome.verdicts if v.status in (FAIL, ERRORED)}
    assert broken == {}
    assert len(outcome.verdicts) > 100
