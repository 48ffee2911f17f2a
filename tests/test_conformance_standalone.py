"""The suite runs without the collection package (issue 16, item 6): build_zipapp.py
--conformance builds collection-conformance.pyz; with `collection` (and `trustme`) made
unimportable, the pyz lints the suite, drives a harness inline, and names trustme when asked
for loopback mode."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import build_zipapp  # noqa: E402


@pytest.fixture(scope="module")
def pyz(tmp_path_factory):
    out = build_zipapp.build_conformance(tmp_path_factory.mktemp("pyz") / "collection-conformance.pyz")
    return out


@pytest.fixture(scope="module")
def blocked(tmp_path_factory):
    """A PYTHONPATH entry that shadows collection and trustme with modules that refuse to import."""
    root = tmp_path_factory.mktemp("blocked")
    for name in ("collection", "trustme"):
        (root / name).mkdir()
        (root / name / "__init__.py").write_text(f"raise ImportError('{name} is blocked for this test')\n")
    return root


def _run(pyz, blocked, *args):
    env = {**os.environ, "PYTHONPATH": f"{blocked}{os.pathsep}{pyz}"}
    return subprocess.run([sys.executable, str(pyz), *args], capture_output=True, text=True, env=env, timeout=120)


def test_pyz_holds_the_suite_and_no_collection(pyz):
    names = zipfile.ZipFile(pyz).namelist()
    assert "__main__.py" in names and "conformance/cli.py" in names
    assert "conformance/schemas/harness-protocol.schema.json" in names
    assert any(n.startswith("conformance/cases/") for n in names)
    assert not any(n.startswith("collection/") for n in names)
    assert build_zipapp.build_conformance(pyz.with_name("again.pyz")).read_bytes() == pyz.read_bytes()   # deterministic


def test_pyz_runs_without_collection(pyz, blocked):
    check = _run(pyz, blocked, "check")
    assert check.returncode == 0 and "suite OK" in check.stdout, check.stderr
    run = _run(pyz, blocked, "--impl", f"{sys.executable} -m conformance.harnesses.fake", "-k", "reg-worked-example")
    assert run.returncode == 0 and "pass 1" in run.stdout, run.stdout + run.stderr
    assert "ImportError" not in run.stderr


def test_pyz_loopback_names_its_extra_dependency(pyz, blocked):
    run = _run(pyz, blocked, "--impl", f"{sys.executable} -m conformance.harnesses.fake", "--mode", "loopback")
    assert run.returncode == 2 and "trustme" in run.stderr and "Traceback" not in run.stderr
