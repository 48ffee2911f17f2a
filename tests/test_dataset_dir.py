"""A dataset directory shared by concurrent `--only` jobs, and `collection status` on a dataset
directory whatever is damaged in it (issue 24 point 7; docs/running-many-sources.md, "Many
jobs on one dataset directory"; the state store's GUIDE rule and MERGE-01, REF-04 for damage).

Real processes: eight `collection run DATASET --only NAME --state DIR` at once, against the
loopback HTTPS publisher (real TLS, the machine-local gate) and as replays, round after round.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from dataset_kit import dataset_doc, fixture_for, page_body, source_doc
from loopback import Reply
from test_dataset_run import _validator
from test_run_kit import PYTHON, check_state, run_cli

from collection.run.dataset import merge_record
from collection.store.generations import write_atomically

JOBS = 8
HOSTS = ("a.example.com", "b.example.com", "c.example.com", "cdn.example.com")
NAMES = [f"s{i}" for i in range(JOBS)]
# two sources per host, two pages each: each job's pages are its own, its host shared with one other
URLS = {name: [f"https://{HOSTS[i % len(HOSTS)]}/{name}/{name}-{k}" for k in (1, 2)] for i, name in enumerate(NAMES)}
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _dataset() -> bytes:
    return dataset_doc("fleet", *(source_doc(name, URLS[name]) for name in NAMES))


def _rows(state, name: str) -> list[tuple[str, str]]:
    with open(os.path.join(str(state), name, "current", "relation.csv"), encoding="utf-8", newline="") as handle:
        return sorted((row["title"], row["body"]) for row in csv.DictReader(handle))


def _expected_rows(name: str) -> list[tuple[str, str]]:
    return sorted((json.loads(page_body(url))[0]["title"], json.loads(page_body(url))[0]["body"]) for url in URLS[name])


def _concurrent_round(recipe: str, state, extra: list[str]) -> list[dict]:
    """Start the eight jobs together, wait for all; every one must exit 0."""
    procs = [subprocess.Popen([PYTHON, "-m", "collection", "run", recipe, "--only", name, "--state", str(state),
                               "--json", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
             for name in NAMES]
    outputs = []
    for name, proc in zip(NAMES, procs):
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, (name, err)
        outputs.append(json.loads(out))
    return outputs


def _check_round(state, outputs: list[dict], round_number: int) -> None:
    validator = _validator()
    # each job's --json: its own number, its source ran, the others not chosen
    numbers = set()
    for name, record in zip(NAMES, outputs):
        validator.validate(record)
        numbers.add(record["dataset_run"])
        assert {s["name"]: s["status"] for s in record["sources"]} == {
            n: ("ran" if n == name else "not_chosen") for n in NAMES}
    done_before = JOBS * (round_number - 1)
    assert numbers == set(range(done_before + 1, done_before + JOBS + 1))   # no number twice, none lost
    with open(state / "dataset-run.json", "rb") as handle:
        merged = json.loads(handle.read())
    validator.validate(merged)
    assert merged["dataset_run"] == JOBS * round_number
    assert merged["counts"] == {"ran": JOBS, "refused": 0, "not_collected": 0, "not_chosen": 0, "error": 0}
    by_job = {record["dataset_run"]: name for name, record in zip(NAMES, outputs)}
    for entry in merged["sources"]:
        name = entry["name"]
        # the entry is the one its own job wrote this round, naming the generation now current
        assert entry["status"] == "ran" and by_job[entry["dataset_run"]] == name
        generation = check_state(state / name, ("title", "body"))
        assert generation == f"{round_number:06d}" == entry["record"]["generation"]
        assert entry["record"]["run_number"] == round_number
        assert _rows(state, name) == _expected_rows(name)
    leftovers = [n for n in os.listdir(state) if ".tmp" in n]
    assert leftovers == []


def test_eight_concurrent_only_jobs_live_keep_every_source_and_every_count(loopback, tmp_path):
    """Issue 24 point 7: eight `--only` jobs at once on one dataset directory, against the
    loopback HTTPS publisher, twice: every job exits 0 (one raced on dataset-run.json.tmp and
    exited 2), every source's generation is current and exact, the dataset record holds each
    source's own last run and counts all sixteen runs."""
    for name in NAMES:
        for url in URLS[name]:
            host, path = url.split("/")[2], "/" + url.split("/", 3)[3]
            loopback.route(path, Reply(200, (("Content-Type", "application/json"),), page_body(url)), host=host)
    recipe = tmp_path / "fleet.dataset.json"
    recipe.write_bytes(_dataset())
    state = tmp_path / "state"
    extra = ["--ca-bundle", loopback.ca_pem_path]
    for flag in loopback.resolve_flags(*HOSTS):
        extra += ["--resolve", flag]
    for round_number in (1, 2):
        _check_round(state, _concurrent_round(str(recipe), state, extra), round_number)


def test_eight_concurrent_only_jobs_replayed_three_rounds(tmp_path):
    """The same with replays (the same merge under the same lock), three rounds."""
    recipe, replay = tmp_path / "fleet.dataset.json", tmp_path / "fleet.fixture.json"
    recipe.write_bytes(_dataset())
    replay.write_text(json.dumps(fixture_for([url for name in NAMES for url in URLS[name]])))
    state = tmp_path / "state"
    for round_number in (1, 2, 3):
        _check_round(state, _concurrent_round(str(recipe), state, ["--replay", str(replay)]), round_number)


def test_jobs_killed_at_random_instants_leave_a_sound_record_and_the_next_round_is_exact(tmp_path):
    """Issue 24 point 7 (GUIDE, State: a kill at any instant leaves old or new): three of
    eight concurrent jobs are SIGKILLed at random instants; the record is still a sound
    record, every source old or new, and the next round of eight exits 0 with every source
    current and exact and the counter up by exactly eight."""
    import random
    import signal
    import time

    recipe, replay = tmp_path / "fleet.dataset.json", tmp_path / "fleet.fixture.json"
    recipe.write_bytes(_dataset())
    replay.write_text(json.dumps(fixture_for([url for name in NAMES for url in URLS[name]])))
    state = tmp_path / "state"
    rng = random.Random(24)
    for _ in range(2):
        procs = [subprocess.Popen([PYTHON, "-m", "collection", "run", str(recipe), "--only", name, "--state",
                                   str(state), "--replay", str(replay)], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, cwd=REPO) for name in NAMES]
        victims = rng.sample(procs, 3)
        started = time.monotonic()
        for proc, at in sorted(((p, rng.uniform(0.2, 2.5)) for p in victims), key=lambda pair: pair[1]):
            time.sleep(max(0.0, started + at - time.monotonic()))
            proc.send_signal(signal.SIGKILL)
        for proc in procs:
            proc.wait(timeout=300)
        for name in NAMES:
            check_state(state / name, ("title", "body"))
        if (state / "dataset-run.json").exists():
            _validator().validate(json.loads((state / "dataset-run.json").read_bytes()))
    before = json.loads((state / "dataset-run.json").read_bytes())["dataset_run"] \
        if (state / "dataset-run.json").exists() else 0
    outputs = _concurrent_round(str(recipe), state, ["--replay", str(replay)])
    merged = json.loads((state / "dataset-run.json").read_bytes())
    _validator().validate(merged)
    assert merged["dataset_run"] == before + JOBS
    assert sorted(o["dataset_run"] for o in outputs) == list(range(before + 1, before + JOBS + 1))
    for entry, output in zip(merged["sources"], outputs):
        assert entry["status"] == "ran" and entry["dataset_run"] == output["dataset_run"]
        assert entry["record"]["generation"] == check_state(state / entry["name"], ("title", "body"))
        assert _rows(state, entry["name"]) == _expected_rows(entry["name"])
    assert not [n for n in os.listdir(state) if ".tmp" in n]
    status = run_cli("status", str(state))
    assert status.returncode == 0, status.stderr


# --- the merge rule (pure) ----------------------------------------------------------------------

def _entry(name: str, status: str, code: str | None = None) -> dict:
    return {"name": name, "status": status, "code": code, "refusals": [], "record": None}


def _run(*entries: dict) -> dict:
    return {"record_version": 1, "dataset": "fleet", "dataset_run": 1, "gate": "none",
            "counts": {}, "sources": list(entries)}


def test_merge_keeps_entries_a_run_says_nothing_new_about():
    """Issue 24 point 7: a source left out by --only, or found locked by another run (which
    writes its own outcome), keeps its entry; a refusal on its own merits replaces it; a
    source gone from the dataset is dropped; counts count the merged entries."""
    previous, _ = merge_record(None, _run(_entry("a", "ran"), _entry("b", "ran"), _entry("gone", "ran")), 4)
    assert previous["dataset_run"] == 5
    run = _run(_entry("a", "not_chosen"), _entry("b", "refused", "STATE_LOCKED"), _entry("c", "refused", "X"))
    merged, mine = merge_record(previous, run, 9)
    assert [(e["name"], e["status"], e["dataset_run"]) for e in merged["sources"]] == [
        ("a", "ran", 5), ("b", "ran", 5), ("c", "refused", 10)]
    assert merged["dataset_run"] == mine["dataset_run"] == 10
    assert merged["counts"]["ran"] == 2 and merged["counts"]["refused"] == 1
    assert [e["status"] for e in mine["sources"]] == ["not_chosen", "refused", "refused"]


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
                     lambda inner: (st.lists(inner, max_size=4)
                                    | st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                     max_leaves=20)
_MEMBERS = ("record_version", "dataset", "dataset_run", "gate", "counts", "sources")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_JSON | st.fixed_dictionaries({m: _JSON for m in _MEMBERS}),
       entry=st.dictionaries(st.sampled_from(("name", "status", "code", "refusals", "record", "dataset_run")), _JSON))
def test_reading_a_dataset_record_never_raises_anything_but_damage(tmp_path, value, entry):
    """Issue 24 point 7 (a value from outside is validated before it steers anything): any
    JSON value, whole or as one source entry, is a record or DatasetRecordDamaged."""
    from collection.store.datasetrecord import DatasetRecordDamaged, check_dataset_record

    base = {"record_version": 1, "dataset": "d", "dataset_run": 1, "gate": "none",
            "counts": {"ran": 0, "refused": 0, "not_collected": 0, "not_chosen": 1, "error": 0},
            "sources": [{"name": "a", "status": "not_chosen", "code": None, "refusals": [], "record": None}]}
    for document in (value, {**base, "sources": [entry]}):
        try:
            assert check_dataset_record(str(tmp_path), document) is document
        except DatasetRecordDamaged as exc:
            assert exc.file == "dataset-run.json" and exc.code == "STATE_DAMAGED"
    assert check_dataset_record(str(tmp_path), base) is base


# --- status on a damaged dataset directory --------------------------------------------------------

SMALL = ("alpha", "beta", "gamma")


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory):
    """A dataset directory of three sources after one replayed run (copied per test)."""
    root = tmp_path_factory.mktemp("dataset")
    urls = {name: [f"https://a.example.com/{name}/{name}-{k}" for k in (1, 2)] for name in SMALL}
    recipe, replay = root / "small.dataset.json", root / "small.fixture.json"
    recipe.write_bytes(dataset_doc("small", *(source_doc(name, urls[name]) for name in SMALL)))
    replay.write_text(json.dumps(fixture_for([u for name in SMALL for u in urls[name]])))
    done = run_cli("run", str(recipe), "--state", str(root / "state"), "--replay", str(replay))
    assert done.returncode == 0, done.stderr
    return root / "state"


@pytest.fixture
def state(dataset_dir, tmp_path):
    import shutil

    copy = tmp_path / "state"
    shutil.copytree(dataset_dir, copy, symlinks=True)
    return copy


def _status(state) -> tuple[subprocess.CompletedProcess, dict, subprocess.CompletedProcess]:
    as_json = run_cli("status", str(state), "--json")
    human = run_cli("status", str(state))
    return as_json, json.loads(as_json.stdout), human


def _source_lines(human: subprocess.CompletedProcess) -> dict[str, str]:
    lines = [line.strip() for line in human.stdout.splitlines()]
    return {line.split(":")[0]: line for line in lines if line.split(":")[0] in SMALL}


def test_status_of_a_sound_dataset_directory_is_one_line_per_source(state):
    as_json, summary, human = _status(state)
    assert as_json.returncode == 0 and human.returncode == 0
    assert summary["damaged"] is False and summary["record_damage"] is None
    assert [(s["name"], s["last_run"], s["damage"]) for s in summary["sources"]] == [(n, "ran", None) for n in SMALL]
    assert sorted(_source_lines(human)) == sorted(SMALL)


WRONG_SHAPES = {
    "a list": b"[1, 2, 3]\n",
    "an object missing members": b'{"record_version": 1, "dataset": "small"}\n',
    "wrong types": b'{"record_version": 1, "dataset": 7, "dataset_run": "3", "gate": "none", "counts": {}, '
                   b'"sources": {}}\n',
    "a source that is not an object": None,          # filled in from the real record below
    "a source name that is a path": None,
    "a source named twice": None,
    "truncated": None,
    "not UTF-8": b'{"record_version": 1, "dataset": "\xff\xfe"}\n',
    "empty": b"",
    "a number where the counter is": b'{"dataset_run": 1e400}',
    "a secret in a member of the wrong type": b'{"record_version": 1, "dataset": "small", "dataset_run": 2, '
                                              b'"gate": ["redis://:hunter2@gate:6379/0"], "counts": {}, "sources": []}',
}


@pytest.mark.parametrize("kind", sorted(WRONG_SHAPES))
def test_status_names_a_damaged_dataset_record_and_still_lists_every_source(state, kind):
    """Issue 24 point 7: dataset-run.json of another shape (valid JSON or not) is
    STATE_DAMAGED naming the file, never INTERNAL_ERROR; every source still has its line and
    summary; exit 2. The next dataset run sets the record aside (never deleted) and writes a
    sound one."""
    path = state / "dataset-run.json"
    real = json.loads(path.read_bytes())
    data = WRONG_SHAPES[kind]
    if kind == "a source that is not an object":
        data = json.dumps({**real, "sources": ["alpha", *real["sources"][1:]]}).encode()
    elif kind == "a source name that is a path":
        path_name = {**real["sources"][0], "name": "../../etc"}
        data = json.dumps({**real, "sources": [path_name, *real["sources"][1:]]}).encode()
    elif kind == "a source named twice":
        data = json.dumps({**real, "sources": [real["sources"][0], *real["sources"]]}).encode()
    elif kind == "truncated":
        data = path.read_bytes()[:200]
    path.write_bytes(data)
    as_json, summary, human = _status(state)
    assert as_json.returncode == 2 and human.returncode == 2, (as_json.stderr, human.stderr)
    assert "INTERNAL_ERROR" not in as_json.stderr + human.stderr
    assert summary["record_damage"]["code"] == "STATE_DAMAGED"
    assert summary["record_damage"]["file"] == "dataset-run.json" and summary["damaged"] is True
    assert [(s["name"], s["damage"]) for s in summary["sources"]] == [(n, None) for n in SMALL]
    assert all(s["summary"]["rows"] == 2 for s in summary["sources"])
    assert sorted(_source_lines(human)) == sorted(SMALL)
    assert any(line.strip().startswith("dataset-run.json: STATE_DAMAGED") for line in human.stdout.splitlines())
    # the message names the rule broken, never the value (an older record may hold a password)
    assert "hunter2" not in as_json.stdout + as_json.stderr + human.stdout + human.stderr


@pytest.mark.parametrize("kind", ["counts wrong, counter readable", "not UTF-8", "a list", "truncated"])
def test_a_run_sets_a_damaged_dataset_record_aside_and_keeps_a_counter_it_can_still_read(state, tmp_path, kind):
    """Issue 24 point 7: the next dataset run moves a damaged record to DIR/set-aside/ and
    writes a sound one (never INTERNAL_ERROR); a counter still readable in the damaged record
    keeps counting, else counting starts again."""
    path = state / "dataset-run.json"
    real = json.loads(path.read_bytes())
    damaged, after = {"counts wrong, counter readable": (json.dumps({**real, "dataset_run": 41, "counts": "?"}), 42),
                      "not UTF-8": ('{"dataset_run": 41, "dataset": "\udcff"}', 1),
                      "a list": ("[41]", 1),
                      "truncated": (path.read_text()[:100], 1)}[kind]
    damaged = damaged.encode("utf-8", "surrogateescape")
    path.write_bytes(damaged)
    recipe, replay = _small_recipe(tmp_path)
    done = run_cli("run", recipe, "--state", str(state), "--replay", replay, "--only", "beta", "--json")
    assert done.returncode == 0, done.stderr
    assert "STATE_DAMAGED" in done.stderr and "INTERNAL_ERROR" not in done.stderr
    assert json.loads(done.stdout)["dataset_run"] == after
    aside = os.listdir(state / "set-aside")
    assert len(aside) == 1 and (state / "set-aside" / aside[0]).read_bytes() == damaged
    as_json, summary, _ = _status(state)
    assert as_json.returncode == 0 and summary["dataset_run"] == after
    # the record starts again: only beta's entry is from a run; the others are listed, unchosen
    assert [(s["name"], s["last_run"]) for s in summary["sources"]] == [
        ("alpha", "not_chosen"), ("beta", "ran"), ("gamma", "not_chosen")]
    assert all(s["summary"]["rows"] == 2 for s in summary["sources"])


def _small_recipe(tmp_path) -> tuple[str, str]:
    urls = [f"https://a.example.com/{name}/{name}-{k}" for name in SMALL for k in (1, 2)]
    recipe, replay = tmp_path / "small.dataset.json", tmp_path / "small.fixture.json"
    recipe.write_bytes(dataset_doc("small", *(source_doc(n, [u for u in urls if f"/{n}/" in u]) for n in SMALL)))
    replay.write_text(json.dumps(fixture_for(urls)))
    return str(recipe), str(replay)


def test_a_job_finding_its_source_locked_keeps_the_entry_of_the_run_that_holds_it(state, tmp_path):
    """Issue 24 point 7: while another run holds beta, an `--only beta` job is refused with
    STATE_LOCKED (exit 1) and counted, but beta's entry stays the one of its last real run
    (the holder writes its own); a killed writer's temporary record file is removed."""
    from collection.store.generations import StateStore

    recipe, replay = _small_recipe(tmp_path)
    (state / "dataset-run.json.tmp-999999-1").write_bytes(b'{"half": ')     # a killed writer's
    with StateStore(str(state / "beta")):
        done = run_cli("run", recipe, "--state", str(state), "--replay", replay, "--only", "beta", "--json")
    assert done.returncode == 1, done.stderr
    mine = json.loads(done.stdout)
    assert mine["dataset_run"] == 2
    assert [(s["name"], s["status"], s["code"]) for s in mine["sources"]] == [
        ("alpha", "not_chosen", None), ("beta", "refused", "STATE_LOCKED"), ("gamma", "not_chosen", None)]
    merged = json.loads((state / "dataset-run.json").read_bytes())
    _validator().validate(merged)
    assert merged["dataset_run"] == 2
    assert [(s["name"], s["status"], s["dataset_run"]) for s in merged["sources"]] == [
        ("alpha", "ran", 1), ("beta", "ran", 1), ("gamma", "ran", 1)]
    assert not [n for n in os.listdir(state) if ".tmp" in n]


def _dangling(state):
    os.remove(state / "beta" / "current")
    os.symlink("generations/000009", state / "beta" / "current")


def _ledger_not_utf8(state):
    ledger = os.path.join(os.path.realpath(state / "beta" / "current"), "ledger.csv")
    with open(ledger, "ab") as handle:
        handle.write(b"\xff\xfe,broken\n")


def _ledger_missing(state):
    os.remove(os.path.join(os.path.realpath(state / "beta" / "current"), "ledger.csv"))


def _run_json_wrong(state):
    write_atomically(os.path.join(os.path.realpath(state / "beta" / "current"), "run.json"), b"[]")


def _coverage_hollow(state):
    path = os.path.join(os.path.realpath(state / "beta" / "current"), "run.json")
    with open(path, "rb") as handle:
        record = json.loads(handle.read())
    write_atomically(path, json.dumps({**record, "coverage": {"known": "many"}}).encode())


DAMAGE = {"current dangling": (_dangling, "STATE_DAMAGED", "beta/current"),
          "ledger not UTF-8": (_ledger_not_utf8, "COLLECTION_MERGE_INVALID", "beta/current/ledger.csv"),
          "ledger missing": (_ledger_missing, "STATE_DAMAGED", "beta/generations/000001/ledger.csv"),
          "run.json not an object": (_run_json_wrong, "STATE_DAMAGED", "beta/generations/000001/run.json"),
          "run.json coverage hollow": (_coverage_hollow, "STATE_DAMAGED", "beta/current/run.json")}


@pytest.mark.parametrize("kind", sorted(DAMAGE))
@pytest.mark.parametrize("record", ["sound record", "no record"])
def test_one_damaged_source_gets_its_own_line_and_the_others_are_summarised(state, kind, record):
    """Issue 24 point 7 (MERGE-01, REF-04): one source's pointer dangling or its ledger or
    run.json damaged: that source's line carries the code `collection status DIR/<name>`
    gives and the file; the other two are summarised as usual; exit 2 (human and --json)."""
    damage, code, file = DAMAGE[kind]
    damage(state)
    if record == "no record":
        os.remove(state / "dataset-run.json")
    as_json, summary, human = _status(state)
    assert as_json.returncode == 2 and human.returncode == 2, (as_json.stderr, human.stderr)
    assert "INTERNAL_ERROR" not in as_json.stderr + human.stderr
    entries = {s["name"]: s for s in summary["sources"]}
    assert sorted(entries) == sorted(SMALL) and summary["damaged"] is True
    assert entries["beta"]["damage"]["code"] == code and entries["beta"]["damage"]["file"] == file
    assert entries["beta"]["summary"] is None
    for name in ("alpha", "gamma"):
        assert entries[name]["damage"] is None and entries[name]["summary"]["rows"] == 2
    lines = _source_lines(human)
    assert sorted(lines) == sorted(SMALL)
    assert lines["beta"].startswith(f"beta: {code}")
    assert "generation 000001" in lines["alpha"] and "generation 000001" in lines["gamma"]
    # the same code as status on the source's own directory (which names no code for a
    # coverage block it cannot summarise: exit 2 all the same)
    alone = run_cli("status", str(state / "beta"), "--json")
    assert alone.returncode == 2
    if kind != "run.json coverage hollow":
        assert json.loads(alone.stdout)["code"] == code


def test_write_atomically_never_follows_a_planted_temporary_name(tmp_path):
    """The temporary file is created exclusively: a symlink planted at its name is replaced,
    its target untouched, and nothing but the file is left."""
    import threading

    target, victim = tmp_path / "dataset-run.json", tmp_path / "victim"
    victim.write_bytes(b"keep")
    os.symlink(victim, f"{target}.tmp-{os.getpid()}-{threading.get_ident()}")
    write_atomically(str(target), b"{}\n")
    assert target.read_bytes() == b"{}\n" and victim.read_bytes() == b"keep"
    assert sorted(os.listdir(tmp_path)) == ["dataset-run.json", "victim"]
