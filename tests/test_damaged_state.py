"""Damaged state directories (issue 15): each damage gives a coded refusal naming the file,
`status` reports it without a traceback, the damaged generation is left exactly as it was
by a refresh, and `run --resync` always gets a run going again, setting the damaged
generation aside (DIR/set-aside/) and never deleting it.

Damage is done to a copy of real state written by a run against the loopback server.
Clauses: MERGE-01, REF-04, REF-05/06 (format), D-01, D-02, GUIDE (State).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading

import pytest
from click.testing import CliRunner
from loopback import Reply
from test_run_kit import Publisher, recipe, run_in_process

from collection.cli import cli
from collection.recipe.refusal import RefusedError

DATA = recipe("explicit", ids=("1", "2"))


def _snapshot(root) -> dict[str, str]:
    """Every path under `root` (symlinks as their target, files as their digest)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                out[rel] = "-> " + os.readlink(path)
            elif os.path.isfile(path) and not rel.endswith("lock"):
                with open(path, "rb") as handle:
                    out[rel] = hashlib.sha256(handle.read()).hexdigest()
            elif not os.path.isdir(path) and not rel.endswith("lock"):
                out[rel] = "special"
    return out


@pytest.fixture(scope="module")
def real_state(tmp_path_factory):
    """Two generations written by real runs (a pristine copy; each test damages its own)."""
    from loopback import LoopbackServer

    root = tmp_path_factory.mktemp("real-state") / "state"
    with LoopbackServer() as server:
        Publisher(server, "explicit").publish("1", "2").install()
        run_in_process(server, DATA, root)
        server.route("/p/2", Reply(404, (("Content-Type", "application/json"),), b"{}"))
        run_in_process(server, DATA, root)
    return root


def _gen(state) -> str:
    return os.path.join(state, os.readlink(os.path.join(state, "current")))


def _truncate_run_json(state):
    path = os.path.join(_gen(state), "run.json")
    data = open(path, "rb").read()
    open(path, "wb").write(data[: len(data) // 2])
    return "run.json"


def _run_number_text(state):
    path = os.path.join(_gen(state), "run.json")
    record = json.loads(open(path, "rb").read())
    record["run_number"] = "two"
    open(path, "w").write(json.dumps(record))
    return "run.json"


def _current_real_directory(state):
    target = _gen(state)
    os.unlink(os.path.join(state, "current"))
    shutil.copytree(target, os.path.join(state, "current"))
    return "current"


def _dangling_current(state):
    os.unlink(os.path.join(state, "current"))
    os.symlink("generations/999999", os.path.join(state, "current"))
    return "current"


def _symlink_loop(state):
    os.unlink(os.path.join(state, "current"))
    os.symlink("current", os.path.join(state, "current"))
    return "current"


def _missing_run_json(state):
    os.unlink(os.path.join(_gen(state), "run.json"))
    return "run.json"


def _huge_revision(state):
    path = os.path.join(_gen(state), "ledger.csv")
    lines = open(path, encoding="utf-8").read().split("\n")
    fields = lines[1].split(",")
    fields[9] = "9" * 5000
    lines[1] = ",".join(fields)
    open(path, "w", encoding="utf-8").write("\n".join(lines))
    return "ledger.csv"


def _relation_fifo(state):
    path = os.path.join(_gen(state), "relation.csv")
    os.unlink(path)
    os.mkfifo(path)
    return "relation.csv"


def _ledger_not_utf8(state):
    path = os.path.join(_gen(state), "ledger.csv")
    data = open(path, "rb").read()
    open(path, "wb").write(data.replace(b"id-1", b"id-\xff", 1))
    return "ledger.csv"


DAMAGE = {
    "truncated run.json": (_truncate_run_json, "STATE_DAMAGED"),
    "run_number not an integer": (_run_number_text, "STATE_DAMAGED"),
    "current a real directory": (_current_real_directory, "STATE_DAMAGED"),
    "dangling current": (_dangling_current, "STATE_DAMAGED"),
    "symlink loop": (_symlink_loop, "STATE_DAMAGED"),
    "missing run.json": (_missing_run_json, "STATE_DAMAGED"),
    "revision of 5000 digits": (_huge_revision, "COLLECTION_MERGE_INVALID"),
    "relation.csv a FIFO": (_relation_fifo, "STATE_DAMAGED"),
    "ledger not UTF-8": (_ledger_not_utf8, "COLLECTION_MERGE_INVALID"),
}


def _bounded(fn, seconds=20):
    """Call fn in a thread; fail (instead of hanging the suite) if it does not return."""
    result: dict = {}

    def target():
        try:
            result["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            result["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "hung"
    if "error" in result:
        raise result["error"]
    return result["value"]


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_damage_is_refused_reported_and_resync_sets_it_aside(loopback, tmp_path, real_state, damage):
    make, code = DAMAGE[damage]
    state = tmp_path / "state"
    shutil.copytree(real_state, state, symlinks=True)
    damaged_generation = os.path.realpath(_gen(state)) if not damage.startswith(("dangling", "symlink")) else None
    named = make(state)
    before = _snapshot(state)
    Publisher(loopback, "explicit").publish("1", "2").install()

    # a refresh refuses with a code naming the file, before any request, touching nothing
    with pytest.raises(RefusedError) as refused:
        _bounded(lambda: run_in_process(loopback, DATA, state))
    assert refused.value.code == code
    assert named in refused.value.refusals[0].message
    assert [r for r in loopback.requests] == []
    assert _snapshot(state) == before

    # status reports it with its code, no traceback, exit 2
    result = _bounded(lambda: CliRunner().invoke(cli, ["status", "--json", str(state)]))
    assert result.exit_code == 2
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert json.loads(result.stdout)["code"] == code
    assert "Traceback" not in result.output

    # --resync gets a run going again and keeps the damaged generation (set aside)
    record = _bounded(lambda: run_in_process(loopback, DATA, state, resync=True))
    assert record["coverage"]["fetched_this_run"] == 2 and record["mode"] == "resync"
    aside = state / "set-aside"
    if damaged_generation is not None:
        (kept,) = os.listdir(aside)
        assert _snapshot(aside / kept) == {k.split("/", 2)[-1]: v for k, v in before.items()
                                           if k.startswith(os.path.relpath(damaged_generation, state) + "/")} \
            or kept.startswith("current-")
    # and the next refresh runs normally on the fresh generation
    assert run_in_process(loopback, DATA, state)["mode"] == "refresh"


def test_set_aside_generation_is_never_pruned(loopback, tmp_path, real_state):
    state = tmp_path / "state"
    shutil.copytree(real_state, state, symlinks=True)
    _truncate_run_json(state)
    Publisher(loopback, "explicit").publish("1", "2").install()
    run_in_process(loopback, DATA, state, resync=True, keep=1)
    for _ in range(3):
        run_in_process(loopback, DATA, state, keep=1)
    (kept,) = os.listdir(state / "set-aside")
    assert kept.startswith("000002-")
    assert os.listdir(state / "generations") == [os.path.basename(_gen(state))]
