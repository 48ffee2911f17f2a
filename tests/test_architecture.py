"""The architecture is checked, not hoped for (GUIDE "Architecture"; issue 14).

`lint-imports` reads the contracts in pyproject.toml: the pure core (registration, URL rules,
listing parsers, pagination, robots, politeness and budget decisions, Readers, the merge)
imports no clock, transport, urllib3, socket, state store, run loop or CLI; `conformance/`
imports `collection` only from its harness. The second test breaks a copy of the tree on
purpose, so a checker that had stopped looking would be caught.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT = str(Path(sys.executable).with_name("lint-imports"))


def lint(root: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(root))
    return subprocess.run([LINT, "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_the_contracts_hold_on_this_tree():
    result = lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 kept, 0 broken" in result.stdout


@pytest.fixture
def tree_copy(tmp_path: Path) -> Path:
    for name in ("collection", "conformance"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__", "cases"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    return tmp_path


@pytest.mark.parametrize("module, line, contract, chain", [
    ("collection/merge/engine.py", "import socket", "pure core", "collection.merge.engine -> socket"),
    ("collection/discover/pagination.py", "from collection.fetch.clock import SystemClock", "pure core",
     "collection.discover.pagination -> collection.fetch.clock"),
    ("collection/readers/json_tabular.py", "import urllib3", "pure core", "collection.readers.json_tabular -> urllib3"),
    ("collection/fetch/robots.py", "from collection.store import generations", "pure core",
     "collection.fetch.robots -> collection.store.generations"),
    ("conformance/compare.py", "import collection.urls", "conformance suite stands alone",
     "conformance.compare -> collection.urls"),
])
def test_a_deliberately_broken_import_fails_the_check(tree_copy, module, line, contract, chain):
    path = tree_copy / module
    path.write_text(path.read_text() + f"\n{line}  # deliberately broken\n")
    result = lint(tree_copy)
    assert result.returncode == 1, result.stdout
    broken = [ln for ln in result.stdout.splitlines() if " BROKEN" in ln]
    assert len(broken) == 1 and contract in broken[0], result.stdout
    assert chain in result.stdout
