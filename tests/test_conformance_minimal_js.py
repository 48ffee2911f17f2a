"""The minimal Node.js harness completes the handshake and declines every case."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conformance.runner import SKIPPED, run_suite
from conformance.suite import load_cases

NODE = shutil.which("node")
MINIMAL = Path(__file__).resolve().parents[1] / "conformance" / "harnesses" / "minimal.js"


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_minimal_js_handshake():
    cases = [c for c in load_cases() if c.id in ("reg-worked-example", "disc-json-api-basic")]
    outcome = run_suite(f"{NODE} {MINIMAL}", cases=cases)
    assert outcome.implementation == {"name": "minimal-js", "version": "0.0.1", "language": "javascript",
                                      "capabilities": ["inline", "registration", "runs"]}
    assert [v.status for v in outcome.verdicts] == [SKIPPED, SKIPPED]
    assert all("minimal.js" in v.message for v in outcome.verdicts)
