"""Crash safety of the state directory: SIGKILL `collection run` at random instants.

After every kill, `DIR/current` must be the old generation or the new one, never a mix,
and its files must agree with each other (run.json's digests ↔ relation ↔ ledger); and
the next run from that state must complete. The runs replay a corpus on the virtual
clock, so one takes a fraction of a second and the kill instants cover startup,
discovery, fetching, the merge and the generation switch. bench/crash_stress.py runs
the same loop for 500+ kills.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time

from test_run_kit import check_state, corpus, write_corpus

from collection.fetch.clock import VirtualClock
from collection.fetch.egress import Egress
from collection.run.loop import RunSettings, Shell, execute
from collection.recording.replay import ReplayTransport, load_fixture


def _next_run_completes(recipe_path: str, fixture_path: str, state_dir: str) -> None:
    """One more run, in-process, from (a copy of) the state the kill left."""
    data = open(recipe_path, "rb").read()
    fixture = load_fixture(fixture_path)
    clock = VirtualClock()
    shell = Shell(clock, lambda n: ReplayTransport(fixture, clock, run=n),
                  lambda source: Egress({(o.split("://")[1], 443): ("127.0.0.1", 443)
                                         for o in source.collection.pages.allowed_origins}))
    before = check_state(state_dir)
    record = execute(data, RunSettings(state_dir), shell)
    assert check_state(state_dir) == record["generation"] != before


def crash_loop(workdir: str, kills: int, *, seed: int, pages: int = 400, rows: int = 8,
               max_fetches: int = 150, max_iterations: int | None = None, report=None) -> dict:
    rng = random.Random(seed)
    recipe, fixture = corpus(pages, rows=rows, max_fetches=max_fetches)
    recipe_path, fixture_path = write_corpus(workdir, recipe, fixture)
    state = os.path.join(workdir, "state")
    args = [sys.executable, "-m", "collection", "run", recipe_path, "--state", state, "--replay", fixture_path,
            "--keep", "2"]
    cwd = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

    # How long an uncontended run takes from spawn to exit, so kill instants span all of it.
    t0 = time.monotonic()
    subprocess.run(args + ["--state", os.path.join(workdir, "probe")], cwd=cwd, capture_output=True, check=True)
    span = time.monotonic() - t0
    shutil.rmtree(os.path.join(workdir, "probe"))

    killed = finished = iterations = 0
    generations: set[str] = set()
    while killed < kills and (max_iterations is None or iterations < max_iterations):
        iterations += 1
        before = check_state(state)
        started = time.monotonic()
        child = subprocess.Popen(args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # Most of a short run is interpreter start-up; weight the instants towards the
        # run's own work (discovery, fetch, merge, the switch) without leaving start-up out.
        delay = span * (rng.uniform(0.0, 1.05) if rng.random() < 0.25 else rng.uniform(0.45, 1.05))
        try:
            child.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGKILL)
        child.wait()
        stderr = child.stderr.read().decode(errors="replace")
        child.stderr.close()
        if child.returncode == -signal.SIGKILL:
            killed += 1
        else:
            assert child.returncode == 0, stderr
            finished += 1
            # The machine got faster than when `span` was measured (shared CI): aim the
            # next instants inside the run as it now is, or the kills never land.
            span = min(span, time.monotonic() - started)
        after = check_state(state)          # old or new generation, files agreeing
        if before is not None:                # a kill never loses the generation that was current
            assert after is not None and after >= before
        if after is not None:
            generations.add(after)
        copy = os.path.join(workdir, "next")
        shutil.rmtree(copy, ignore_errors=True)
        if os.path.exists(state):
            shutil.copytree(state, copy, symlinks=True)
        else:                                   # killed before it created anything: start afresh
            os.makedirs(copy)
        _next_run_completes(recipe_path, fixture_path, copy)
        if report is not None and iterations % 50 == 0:
            report(f"{iterations} runs: {killed} killed, {finished} finished, {len(generations)} generations seen")
    return {"killed": killed, "finished": finished, "iterations": iterations, "generations": len(generations)}


def test_sigkill_at_random_instants_leaves_old_or_new_generation(tmp_path):
    result = crash_loop(str(tmp_path), 50, seed=8, max_iterations=200)
    assert result["killed"] >= 50
