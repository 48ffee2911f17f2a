"""Hostile tool input (issue 15): robots-check addresses, replay fixtures that overflow, nest,
bomb or point outside their folder, and recordings our own schema must be able to replay.
Each ends with a coded refusal or a documented exit code, never a traceback."""

from __future__ import annotations

import gzip
import json
import os
import sys

import pytest
from click.testing import CliRunner
from loopback import Reply, gzip_bomb
from test_run_kit import HOST, JSON_PAGE, Publisher, recipe, run_cli

from collection.cli import cli
from collection.fetch.clock import VirtualClock
from collection.recording.format import FixtureError, parse_fixture
from collection.recording.record import Recorder, RecordingTransport
from collection.recording.replay import ReplayTransport, load_fixture
from fetch_helpers import HTML, make_fetcher, page

ORIGIN = "https://www.example.com"


def _exchange(**response):
    return {"request": {"url": f"{ORIGIN}/p"}, "response": {"status": 200, **response}}


# --- robots-check ----------------------------------------------------------------------------------

@pytest.mark.parametrize("url", ["https://[::1", "http://[zz]/", "https://x]/"])
def test_robots_check_refuses_a_broken_address_as_usage(tmp_path, url):
    robots = tmp_path / "robots.txt"
    robots.write_text("User-agent: *\nDisallow: /\n")
    result = CliRunner().invoke(cli, ["robots-check", "--robots", str(robots), "--agent", "Bot", url])
    assert result.exit_code == 2
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)


# --- fixtures: times, depth, bombs, body files ------------------------------------------------------

@pytest.mark.parametrize("document", [
    {"exchanges": [_exchange()], "runs": [{"run": 1, "started_at": 253402214400}]},     # 9999-12-31
    [_exchange(completed_at=1e20)],
    [_exchange(completed_at=1e400)],                                                      # JSON → inf
])
def test_times_past_what_a_timestamp_can_hold_are_refused(document):
    with pytest.raises(FixtureError):
        parse_fixture(json.dumps(document).replace("Infinity", "1e400"))


def test_a_fixture_nested_100000_deep_is_refused():
    with pytest.raises(FixtureError) as info:
        parse_fixture("[" * 100_000 + "]" * 100_000)
    assert info.value.pointer == ""


def test_a_gzip_bomb_fixture_is_refused_without_decompressing_it(tmp_path, monkeypatch):
    from collection.recording import replay

    monkeypatch.setattr(replay, "MAX_FIXTURE_BYTES", 16 * 1024 * 1024)     # the real cap is 1 GiB
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip_bomb(64 * 1024 * 1024))
    with pytest.raises(FixtureError) as info:
        load_fixture(str(path))
    assert "more than" in info.value.message


def test_a_body_file_symlinked_outside_the_folder_is_refused(tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("machine secret")
    folder = tmp_path / "fixture"
    folder.mkdir()
    os.symlink(outside, folder / "body.html")
    (folder / "f.json").write_text(json.dumps([_exchange(body={"file": "body.html"})]))
    with pytest.raises(FixtureError) as info:
        load_fixture(str(folder / "f.json"))
    assert "outside" in info.value.message


def test_a_body_file_that_is_a_fifo_is_refused_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "body.html")
    (tmp_path / "f.json").write_text(json.dumps([_exchange(body={"file": "body.html"})]))
    with pytest.raises(FixtureError):
        load_fixture(str(tmp_path / "f.json"))


def test_run_replay_of_a_hostile_fixture_exits_2_without_traceback(tmp_path):
    recipe_path = tmp_path / "recipe.json"
    recipe_path.write_bytes(recipe("explicit", ids=("1",)))
    fixture = tmp_path / "f.json"
    fixture.write_text(json.dumps({"exchanges": [_exchange()], "runs": [{"run": 1, "started_at": 1e20}]}))
    done = run_cli("run", str(recipe_path), "--state", str(tmp_path / "state"), "--replay", str(fixture))
    assert done.returncode == 2 and "Traceback" not in done.stderr


# --- recordings replay ----------------------------------------------------------------------------

def test_a_recording_of_odd_headers_and_statuses_replays(loopback, tmp_path):
    """A NUL inside a header value becomes SP (RFC 9110 §5.5) before anything records it; a
    999 answer is recorded and replayed as itself."""
    loopback.route("/odd", Reply(200, [*HTML, ("X-Odd", "a\x00b")], b"<p>odd</p>"))
    loopback.route("/no", Reply(999, HTML, b""))
    path = str(tmp_path / "rec.json")
    recorder = Recorder.load(path, run=1)
    fetcher = make_fetcher(loopback, retries=0)
    fetcher.transport = RecordingTransport(fetcher.transport, recorder)
    live = [fetcher.fetch(page(p)) for p in ("/odd", "/no")]
    recorder.save(path)
    assert ("X-Odd", "a b") in live[0].headers
    fixture = load_fixture(path)                  # our own schema accepts what we recorded
    clock = VirtualClock()
    again = make_fetcher(loopback, clock=clock, retries=0)
    again.transport = ReplayTransport(fixture, clock)
    replayed = [again.fetch(page(p)) for p in ("/odd", "/no")]
    assert [(o.outcome, o.failure_code, o.body) for o in replayed] == \
        [(o.outcome, o.failure_code, o.body) for o in live]
    assert live[1].failure_code == "http_status_999"


# --- the last line: an unplanned error is a code and exit 70, never a traceback ------------------

def test_an_unplanned_error_exits_70_with_a_code(tmp_path):
    """Fault injection stands for a bug nobody has found yet: the CLI's last handler."""
    import subprocess

    program = ("import sys, collection.cli as c, collection.commands.status as s\n"
               "s.summarise = lambda directory: 1 / 0\n"
               "sys.argv = ['collection', 'status', sys.argv[1]]\n"
               "c.main()\n")
    done = subprocess.run([sys.executable, "-c", program, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 70
    assert done.stderr.startswith("INTERNAL_ERROR: ZeroDivisionError") and "Traceback" not in done.stderr
