"""The progress line and the summary an operator reads after a run (issue 14, GUIDE "Progress").

A real replay of the demo corpus's first run (2,819 listed, 500 fetches allowed, 3 pages fail)
with the progress line drawn after every page: the page count reaches its target, which moves
on by one for each failed page (a failure does not use up max_fetches_per_run); "requests left"
counts down with every request made until the last page and ends at limits.max_requests minus
the requests the run record reports. The text summary gives the recorded (virtual) duration and
the time the replay really took, side by side."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from collection.commands.run import build_shell, human_summary
from collection.run.loop import RunSettings, execute
from collection.run.progress import Progress

ROOT = Path(__file__).resolve().parent.parent
RECIPE = ROOT / "fixtures/recipes/council_decisions.json"
FIXTURE = ROOT / "fixtures/council_decisions/council_decisions.fixture.json.gz"
LINE = re.compile(r"pages (\d+)/(\d+) · requests left (\d+) · failures (\d+) · ETA \S+")


def test_progress_counts_every_page_and_request_to_the_end(tmp_path):
    stream = io.StringIO()

    def factory(*args):
        return Progress(*args, stream=stream, every=0.0)

    shell = build_shell(replay=str(FIXTURE), record=None, ca_bundle=None, resolve=(), token=None, info_url=None)
    record = execute(RECIPE.read_bytes(), RunSettings(str(tmp_path / "state")), shell, progress_factory=factory)
    lines = [LINE.fullmatch(part.strip()) for part in stream.getvalue().split("\r") if part.strip()]
    assert lines and all(lines)
    seen = [tuple(int(g) for g in m.groups()) for m in lines]
    max_requests = json.loads(RECIPE.read_text())["limits"]["max_requests"]
    cov = record["coverage"]
    attempted = cov["fetched_this_run"] + cov["failed_this_run"]
    done, target, left, failures = seen[-1]
    assert (done, target, failures) == (attempted, attempted, cov["failed_this_run"]) == (503, 503, 3)
    assert left == max_requests - record["requests"]["total"]
    # one line per finished page at least, and the count of requests left never goes back up
    # and keeps moving through the last pages of the run
    assert len({s[0] for s in seen}) >= attempted
    assert all(b[2] <= a[2] for a, b in zip(seen, seen[1:]))
    last_pages = [s for s in seen if s[0] > attempted - 20]
    assert len({s[2] for s in last_pages}) >= 15
    assert all(d <= t for d, t, _, _ in seen)


def test_replay_summary_says_recorded_time_and_real_time(tmp_path):
    shell = build_shell(replay=str(FIXTURE), record=None, ca_bundle=None, resolve=(), token=None, info_url=None)
    record = execute(RECIPE.read_bytes(), RunSettings(str(tmp_path / "state")), shell)
    text = human_summary(record)
    recorded, replayed = re.search(r"(\d+) s recorded, replayed in ([\d.]+) s", text).groups()
    assert int(recorded) == round(record["duration_seconds"]) > 60
    assert float(replayed) == round(record["wall_seconds"], 1) < int(recorded)
