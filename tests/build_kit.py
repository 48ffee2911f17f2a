"""Helpers for the build tests (no tests of its own): real state from a real `collection run
--replay` of the demo dataset, copies of it, datasets with other tables, snapshots of DIR/build."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATASET = ROOT / "fixtures" / "datasets" / "council.json"
FIXTURE = ROOT / "fixtures" / "council_decisions" / "council_decisions.fixture.json.gz"
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def collection(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "collection", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=ENV)


def replayed_state(directory: Path) -> Path:
    """A dataset state directory written by a real replayed run of fixtures/datasets/council.json."""
    res = collection("run", str(DATASET), "--state", str(directory), "--replay", str(FIXTURE), "--json")
    assert res.returncode == 0, res.stderr
    return directory


def copy_state(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, symlinks=True)
    return target


def council() -> dict:
    return json.loads(DATASET.read_text())


def with_tables(tables: list[dict], doc: dict | None = None) -> dict:
    doc = copy.deepcopy(doc or council())
    doc["tables"] = tables
    return doc


def write_doc(path: Path, doc: dict) -> Path:
    path.write_text(json.dumps(doc, indent=1))
    return path


def table(name: str, sql: str, columns: list[tuple[str, str]]) -> dict:
    return {"name": name, "sql": sql, "columns": [{"name": n, "type": t} for n, t in columns]}


def snapshot(directory: Path) -> dict[str, str]:
    """Every entry under `directory`: files by sha256, symlinks by target, directories by name."""
    found: dict[str, str] = {}
    if not directory.exists():
        return found
    for path in sorted(directory.rglob("*")):
        rel = str(path.relative_to(directory))
        if path.is_symlink():
            found[rel] = "-> " + os.readlink(path)
        elif path.is_dir():
            found[rel] = "dir"
        else:
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def build_record_validator():
    import jsonschema

    schema = json.loads((ROOT / "schemas" / "build-record.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)
