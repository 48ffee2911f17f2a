"""The pre-commit hook `collection-validate` (.pre-commit-hooks.yaml), run for real with
`pre-commit try-repo` against a temporary repository holding a good and a bad recipe.

pre-commit installs this repository into its own environment (language: python), which
needs PyPI for the dependencies, as any user of the hook does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = (ROOT / "fixtures" / "recipes" / "council_decisions.json").read_text()


@pytest.mark.slow
def test_pre_commit_try_repo_refuses_the_bad_recipe_and_passes_the_good(tmp_path):
    repo = tmp_path / "recipes"
    repo.mkdir()
    (repo / "good.json").write_text(EXAMPLE)
    (repo / "bad.json").write_text(EXAMPLE.replace('"retries": 2', '"retries": 7'))
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "add", "good.json", "bad.json"], cwd=repo, check=True, env=env)

    def try_repo(*files: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "collection-validate",
                               "--files", *files], cwd=repo, env=env, capture_output=True, text=True, timeout=600)

    both = try_repo("good.json", "bad.json")
    assert both.returncode == 1, both.stdout + both.stderr
    line = next(i for i, text in enumerate(EXAMPLE.splitlines(), 1) if '"retries": 2' in text)
    assert f"bad.json:{line}:" in both.stdout and "SCHEMA_BOUND at /collection/pages/retries" in both.stdout
    assert "good.json: registrable source" in both.stdout
    good = try_repo("good.json")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "collection validate" in good.stdout and "Passed" in good.stdout
