"""Two inputs of the older battery that ended in INTERNAL_ERROR (issue 24 point 8; REF-04).

A recipe nested deeply enough for Python's RecursionError, given to `run` (and to validate,
decode, discover, a dataset run, an action plan, fixture check), is the coded refusal
JSON_TOO_DEEP naming the file. A gzip-bombed `--replay` fixture under a memory limit is
FIXTURE_TOO_LARGE naming the file: the fixture reader bounds the decompressed size by the
process's address-space limit, so the bomb is refused before memory runs out. Real processes,
with the limit set by resource.setrlimit(RLIMIT_AS) in preexec_fn.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from loopback import gzip_bomb

ROOT = Path(__file__).resolve().parent.parent
RECIPE = ROOT / "fixtures" / "recipes" / "council_decisions.json"
DEMO = ROOT / "fixtures" / "council_decisions" / "council_decisions.fixture.json.gz"
DEEP = "[" * 50_000 + "]" * 50_000            # far past the interpreter's recursion limit
LIMIT = 768 * 1024 * 1024                     # the address space each limited process gets


def _cli(*args, cwd, limit: int | None = None) -> subprocess.CompletedProcess:
    def limited():
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "collection", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300, preexec_fn=limited)


def _no_crash(done: subprocess.CompletedProcess) -> None:
    assert done.returncode != 70 and "INTERNAL_ERROR" not in done.stderr and "Traceback" not in done.stderr, \
        done.stderr[-500:]


@pytest.fixture
def deep_recipe(tmp_path) -> Path:
    path = tmp_path / "deep-recipe.json"
    path.write_text(RECIPE.read_text().rstrip()[:-1] + ', "x": ' + DEEP + "}")
    return path


def test_run_refuses_a_deeply_nested_recipe_with_a_code_naming_the_file(tmp_path, deep_recipe):
    """issue 24 point 8: `run` on a recipe nested 50,000 deep is JSON_TOO_DEEP (exit 1), the line
    names the recipe, --json carries the code, and no generation is written."""
    fixture = tmp_path / "empty.json"
    fixture.write_text("[]")
    done = _cli("run", str(deep_recipe), "--state", "state", "--replay", str(fixture), cwd=tmp_path)
    _no_crash(done)
    assert done.returncode == 1
    assert f"{deep_recipe}: JSON_TOO_DEEP" in done.stderr
    as_json = _cli("run", str(deep_recipe), "--state", "state", "--replay", str(fixture), "--json", cwd=tmp_path)
    assert as_json.returncode == 1 and json.loads(as_json.stdout)["code"] == "JSON_TOO_DEEP"
    assert not (tmp_path / "state" / "current").exists()


def test_a_dataset_with_a_deeply_nested_source_is_refused(tmp_path):
    """issue 24 point 8: the dataset check (is it a dataset?) no longer dies of RecursionError."""
    path = tmp_path / "deep-dataset.json"
    path.write_text('{"name": "council", "sources": [' + RECIPE.read_text() + ", " + DEEP + "]}")
    (tmp_path / "empty.json").write_text("[]")
    done = _cli("run", str(path), "--state", "state", "--replay", "empty.json", cwd=tmp_path)
    _no_crash(done)
    assert done.returncode == 1 and f"{path}: JSON_TOO_DEEP" in done.stderr


def test_a_deeply_nested_action_plan_is_a_usage_error_with_the_code(tmp_path):
    """issue 24 point 8: `--plan` of a deeply nested document is exit 2 naming the plan and the code."""
    (tmp_path / "plan.json").write_text('{"action": ' + DEEP + "}")
    (tmp_path / "empty.json").write_text("[]")
    done = _cli("run", str(RECIPE), "--state", "state", "--replay", "empty.json", "--plan", "plan.json", cwd=tmp_path)
    _no_crash(done)
    assert done.returncode == 2 and "JSON_TOO_DEEP" in done.stderr and "plan.json" in done.stderr


@pytest.mark.parametrize("command", [["validate"], ["decode", "page.html"], ["discover", "page.html"],
                                     ["validate", "--format", "sarif"]])
def test_validate_decode_and_discover_refuse_the_deep_recipe(tmp_path, deep_recipe, command):
    """issue 24 point 8: every command that reads a recipe refuses it as JSON_TOO_DEEP (exit 1)."""
    (tmp_path / "page.html").write_text("<html><body><article><h1>x</h1></article></body></html>")
    name, *rest = command
    args = [name, *rest, str(deep_recipe)] if name == "validate" else [name, str(deep_recipe), *rest]
    done = _cli(*args, cwd=tmp_path)
    _no_crash(done)
    assert done.returncode == 1 and "JSON_TOO_DEEP" in done.stdout + done.stderr


def test_fixture_check_reports_a_deeply_nested_fixture(tmp_path):
    """issue 24 point 8: `fixture check` of a fixture nested 50,000 deep is a reported problem (exit 1)."""
    (tmp_path / "deep.json").write_text(DEEP)
    done = _cli("fixture", "check", "deep.json", cwd=tmp_path)
    _no_crash(done)
    assert done.returncode == 1 and "JSON_TOO_DEEP" in done.stdout


# --- the gzip bomb -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def bomb(tmp_path_factory) -> Path:
    """900 MiB of zeros in under a megabyte: inside the 1 GiB cap, far past a 768 MiB process."""
    path = tmp_path_factory.mktemp("bomb") / "bomb.json.gz"
    path.write_bytes(gzip_bomb(900 * 1024 * 1024))
    return path


@pytest.mark.slow
def test_a_gzip_bomb_fixture_under_a_memory_limit_is_a_coded_refusal(tmp_path, bomb):
    """issue 24 point 8: under RLIMIT_AS, `run --replay bomb` is FIXTURE_TOO_LARGE (exit 1) naming
    the file, in the text and the --json output, instead of MemoryError / INTERNAL_ERROR; nothing
    is written."""
    done = _cli("run", str(RECIPE), "--state", "state", "--replay", str(bomb), cwd=tmp_path, limit=LIMIT)
    _no_crash(done)
    assert done.returncode == 1
    assert "FIXTURE_TOO_LARGE" in done.stderr and str(bomb) in done.stderr
    as_json = _cli("run", str(RECIPE), "--state", "state", "--replay", str(bomb), "--json", cwd=tmp_path, limit=LIMIT)
    report = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and report["code"] == "FIXTURE_TOO_LARGE" and str(bomb) in report["refusals"][0]["message"]
    assert not (tmp_path / "state" / "current").exists()


@pytest.mark.slow
def test_the_demo_corpus_still_replays_under_the_same_memory_limit(tmp_path):
    """The bound refuses bombs, not corpora: the demo corpus replays (exit 0) in the same 768 MiB
    (reading a fixture no longer reserves the whole 1 GiB cap up front)."""
    done = _cli("run", str(RECIPE), "--state", "state", "--replay", str(DEMO), cwd=tmp_path, limit=LIMIT)
    assert done.returncode == 0, done.stderr[-500:]
    assert (tmp_path / "state" / "current" / "relation.csv").exists()


@pytest.mark.slow
def test_fixture_check_refuses_the_bomb_under_the_memory_limit(tmp_path, bomb):
    """issue 24 point 8: `fixture check` decompresses within the same bound."""
    done = _cli("fixture", "check", str(bomb), cwd=tmp_path, limit=LIMIT)
    _no_crash(done)
    assert done.returncode == 1 and "FIXTURE_TOO_LARGE" in done.stdout


@pytest.mark.slow
def test_running_out_of_memory_while_reading_is_still_the_coded_refusal(tmp_path, bomb):
    """Where the bound is not enough (here: twice the address space allowed to the fixture, so the
    900 MiB bomb is inside the bound and only memory can stop it), the MemoryError becomes
    FIXTURE_TOO_LARGE all the same."""
    script = ("import sys; from collection.recording import replay; replay.MEMORY_SHARE = 0.5\n"
              "try:\n    replay.load_fixture(sys.argv[1])\n"
              "except replay.FixtureTooLarge as exc:\n    print(exc.code)\n")

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (512 * 1024 * 1024,) * 2)
    done = subprocess.run([sys.executable, "-c", script, str(bomb)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300, preexec_fn=limited, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.split() == ["FIXTURE_TOO_LARGE"], done.stderr[-500:]
