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


@pytest.mark.slow
def test_pre_commit_passes_staged_names_that_look_like_options_as_files(tmp_path):
    """issue 24 point 8: the hook ends its options with `--`, so staged recipes named `-x.json`
    and `--json.json` are checked as files (one refused, one registrable), not read as options."""
    repo = tmp_path / "recipes"
    repo.mkdir()
    (repo / "-x.json").write_text(EXAMPLE.replace('"retries": 2', '"retries": 7'))
    (repo / "--json.json").write_text(EXAMPLE)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "add", "--", "-x.json", "--json.json"], cwd=repo, check=True, env=env)
    done = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "collection-validate",
                           "--all-files"], cwd=repo, env=env, capture_output=True, text=True, timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "-x.json:" in out and "SCHEMA_BOUND at /collection/pages/retries" in out
    assert "--json.json: registrable source" in out
    assert "No such option" not in out


def test_a_file_named_like_an_option_is_a_file_after_the_double_dash(tmp_path):
    """issue 24 point 8: `collection validate -- --json` checks the file `--json` (what the
    hook's `--` relies on)."""
    (tmp_path / "--json").write_text(EXAMPLE)
    done = subprocess.run([sys.executable, "-m", "collection", "validate", "--", "--json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == "--json: registrable source\n"
