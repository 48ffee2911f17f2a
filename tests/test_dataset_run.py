"""`collection run DATASET --state DIR`: every collection source of a dataset in one process,
one politeness scheduler and one connection cap per origin shared by all (FETCH-16, FETCH-18,
FETCH-19, D-10), each source's own state under DIR/<name>/ (REG-05: 1 to 256 sources).

The end-to-end run is in-process on a VirtualClock against the loopback HTTPS publisher (real
TLS); the others replay a fixture holding every origin of the dataset."""

from __future__ import annotations

import csv
import json
import os
import random
import signal
import subprocess
import sys
import time

import jsonschema
import referencing
from dataset_kit import dataset_doc, fixture_for, page_body, pages, source_doc
from loopback import Reply
from test_run_kit import check_state, run_cli

from collection.fetch.clock import VirtualClock
from collection.fetch.egress import Egress
from collection.fetch.urllib3_transport import Urllib3Transport
from collection.recipe.resources import load_schema
from collection.run.dataset import DatasetSettings, execute_dataset
from collection.run.loop import Shell
from collection.store.generations import StateStore

DECISIONS = pages("a.example.com", "x", 4)
MINUTES = pages("a.example.com", "y", 3) + pages("b.example.com", "y", 3)
AGENDAS = pages("b.example.com", "z", 4)
SOURCES = (("decisions", DECISIONS), ("minutes", MINUTES), ("agendas", AGENDAS))


def _dataset(*extra: dict) -> bytes:
    return dataset_doc("council", *(source_doc(name, urls) for name, urls in SOURCES), *extra)


def _validator():
    record, dataset = load_schema("run-record.schema.json"), load_schema("dataset-run-record.schema.json")
    registry = referencing.Registry().with_resources([
        (record["$id"], referencing.Resource.from_contents(record)),
        (dataset["$id"], referencing.Resource.from_contents(dataset))])
    return jsonschema.Draft202012Validator(dataset, registry=registry)


def _rows(state, name: str) -> bytes:
    with open(os.path.join(str(state), name, "current", "relation.csv"), "rb") as handle:
        return handle.read()


def test_three_sources_on_two_shared_origins_end_to_end(loopback, tmp_path):
    """Each source gets its own generation, and the origin is paced once for all of them."""
    for url in DECISIONS + MINUTES + AGENDAS:
        host, path = url.split("/")[2], "/" + url.split("/", 3)[3]
        loopback.route(path, Reply(200, (("Content-Type", "application/json"),), page_body(url)), host=host)
    clock = VirtualClock(turns=True)
    shell = Shell(clock, lambda n: Urllib3Transport(ca_bundle=loopback.ca_pem_path),
                  lambda source: Egress(loopback.resolve_map()))
    record = execute_dataset(_dataset(), DatasetSettings(str(tmp_path / "state")), shell)
    _validator().validate(record)
    assert [(s["name"], s["status"]) for s in record["sources"]] == [(n, "ran") for n, _ in SOURCES]
    for name, urls in SOURCES:
        run = next(s["record"] for s in record["sources"] if s["name"] == name)
        assert run["coverage"]["complete"] and run["rows"] == len(urls)
        assert _rows(tmp_path / "state", name).count(b"\n") == len(urls) + 1
    # a.example.com serves decisions (x) and minutes (y): their pages alternate from the start
    on_a = [r.path.split("/")[1] for r in sorted(loopback.requests_for(host="a.example.com"), key=lambda r: r.arrived)
            if r.path != "/robots.txt"]
    assert on_a.count("x") == 4 and on_a.count("y") == 3
    # one scheduler for the origin: 7 pages + 2 robots.txt on a.example.com need 8 gaps of 1 s
    assert max(s["record"]["duration_seconds"] for s in record["sources"]) >= 8.0
    assert clock.monotonic() < 12.0          # ... and the two origins were served side by side


def _write(tmp_path, data: bytes, fixture: list) -> tuple[str, str]:
    recipe, replay = tmp_path / "dataset.json", tmp_path / "fixture.json"
    recipe.write_bytes(data)
    replay.write_text(json.dumps(fixture))
    return str(recipe), str(replay)


def test_a_refused_source_is_reported_and_the_others_finish(tmp_path):
    """One source refused at registration, one by a run-level refusal (its state directory is
    locked), one of another adapter: the fourth runs; exit 1."""
    other = source_doc("archive", pages("c.example.com", "w", 1))
    other["connector"]["adapter_id"] = "public.https.file@1.0.0"
    del other["collection"]
    broken = source_doc("broken", pages("c.example.com", "v", 2))
    broken["collection"]["discovery"]["members"][1]["page_id"] = broken["collection"]["discovery"]["members"][0]["page_id"]
    recipe, replay = _write(tmp_path, _dataset(other, broken), fixture_for(DECISIONS + MINUTES + AGENDAS))
    state = tmp_path / "state"
    with StateStore(str(state / "minutes")):
        done = run_cli("run", recipe, "--state", str(state), "--replay", replay, "--json")
    assert done.returncode == 1, done.stderr
    record = json.loads(done.stdout)
    _validator().validate(record)
    verdicts = {s["name"]: (s["status"], s["code"]) for s in record["sources"]}
    assert verdicts == {"decisions": ("ran", None), "minutes": ("refused", "STATE_LOCKED"),
                        "agendas": ("ran", None), "archive": ("not_collected", None),
                        "broken": ("refused", "EXPLICIT_DUPLICATE_PAGE_ID")}
    assert record["counts"] == {"ran": 2, "refused": 2, "not_collected": 1, "not_chosen": 0, "error": 0}
    assert _rows(state, "decisions").count(b"\n") == 5 and _rows(state, "agendas").count(b"\n") == 5
    assert not os.path.exists(state / "minutes" / "current") and not os.path.exists(state / "broken")

    status = run_cli("status", str(state))
    assert status.returncode == 0 and "STATE_LOCKED" in status.stdout


def test_only_picks_sources_and_an_unknown_name_is_a_usage_error(tmp_path):
    recipe, replay = _write(tmp_path, _dataset(), fixture_for(DECISIONS + MINUTES + AGENDAS))
    state = tmp_path / "state"
    done = run_cli("run", recipe, "--state", str(state), "--replay", replay, "--only", "agendas", "--only",
                   "decisions", "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert [(s["name"], s["status"]) for s in record["sources"]] == [
        ("decisions", "ran"), ("minutes", "not_chosen"), ("agendas", "ran")]
    assert sorted(os.listdir(state)) == ["agendas", "dataset-run.json", "dataset-run.lock", "decisions"]
    assert run_cli("run", recipe, "--state", str(state), "--replay", replay, "--only", "nope").returncode == 2

    status = run_cli("status", str(state), "--json")
    assert status.returncode == 0
    summary = json.loads(status.stdout)
    assert [(s["name"], s["last_run"]) for s in summary["sources"]] == [
        ("decisions", "ran"), ("minutes", "not_chosen"), ("agendas", "ran")]


def test_a_dataset_replay_is_identical_run_to_run(tmp_path):
    """Same fixture, same bytes: every source's relation, ledger and run record (but the
    wall-clock seconds it took), and the dataset record."""
    recipe, replay = _write(tmp_path, _dataset(), fixture_for(DECISIONS + MINUTES + AGENDAS))
    outputs = []
    for attempt in ("one", "two"):
        state = tmp_path / attempt
        done = run_cli("run", recipe, "--state", str(state), "--replay", replay, "--json")
        assert done.returncode == 0, done.stderr
        record = json.loads(done.stdout)
        files = {}
        for name, _ in SOURCES:
            for file in ("relation.csv", "ledger.csv", "run.json"):
                with open(state / name / "current" / file, "rb") as handle:
                    data = handle.read()
                if file == "run.json":
                    data = json.loads(data)
                    data.pop("wall_seconds")
                files[(name, file)] = data
        for source in record["sources"]:
            source["record"].pop("wall_seconds")
        outputs.append((record, files))
    assert outputs[0] == outputs[1]
    assert outputs[0][0]["dataset_run"] == 1


def test_sources_sharing_one_origin_take_turns(tmp_path):
    """Fairness: on a virtual clock that gives ties to the first enrolled thread, the second
    source is still served while the first has pages left (the host's waiters queue)."""
    first, second = pages("a.example.com", "p", 6), pages("a.example.com", "q", 6)
    data = dataset_doc("shared", source_doc("first", first), source_doc("second", second))
    recipe, replay = _write(tmp_path, data, fixture_for(first + second))
    state = tmp_path / "state"
    done = run_cli("run", recipe, "--state", str(state), "--replay", replay)
    assert done.returncode == 0, done.stderr
    times = {}
    for name in ("first", "second"):
        with open(state / name / "current" / "ledger.csv", encoding="utf-8") as handle:
            times[name] = sorted(row["last_fetched_at"] for row in csv.DictReader(handle))
    # of the first six pages served, each source had at least two (first come, first served;
    # without the queue the first source's workers win every tie: five pages before the second's first)
    earliest = sorted((t, name) for name, ts in times.items() for t in ts)[:6]
    assert min(sum(1 for _, n in earliest if n == name) for name in times) >= 2, times


def test_a_recorded_dataset_run_replays_to_the_same_state(loopback, tmp_path):
    """--record writes one fixture holding every origin of the dataset; --replay of it gives
    each source the same relation and ledger, byte for byte."""
    first, second = pages("a.example.com", "r", 2), pages("b.example.com", "s", 1)
    for url in first + second:
        host, path = url.split("/")[2], "/" + url.split("/", 3)[3]
        loopback.route(path, Reply(200, (("Content-Type", "application/json"),), page_body(url)), host=host)
    recipe = tmp_path / "dataset.json"
    recipe.write_bytes(dataset_doc("recorded", source_doc("first", first), source_doc("second", second)))
    fixture = str(tmp_path / "fixture.json")
    live = ["run", str(recipe), "--state", str(tmp_path / "live"), "--record", fixture, "--ca-bundle",
            loopback.ca_pem_path, *[arg for flag in loopback.resolve_flags() for arg in ("--resolve", flag)]]
    done = run_cli(*live)
    assert done.returncode == 0, done.stderr
    replayed = run_cli("run", str(recipe), "--state", str(tmp_path / "replayed"), "--replay", fixture)
    assert replayed.returncode == 0, replayed.stderr
    for name in ("first", "second"):
        for file in ("relation.csv", "ledger.csv"):
            with open(tmp_path / "live" / name / "current" / file, "rb") as a, \
                    open(tmp_path / "replayed" / name / "current" / file, "rb") as b:
                assert a.read() == b.read(), (name, file)


def _in_flight(state, names: list[str], host: str, delay: int) -> list[tuple[int, int]]:
    """(start, end) on the virtual clock of every page fetched from `host`: each answer took
    `delay` seconds, and a page's time in the ledger is when its fetch ended."""
    spans = []
    for name in names:
        with open(state / name / "current" / "ledger.csv", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                if row["url"].split("/")[2] == host:
                    end = int(row["last_fetched_at"][11:13]) * 3600 + int(row["last_fetched_at"][14:16]) * 60 \
                        + int(row["last_fetched_at"][17:19])
                    spans.append((end - delay, end))
    return sorted(spans)


def _most_at_once(spans: list[tuple[int, int]]) -> int:
    return max(sum(1 for s, e in spans if s <= start < e) for start, _ in spans)


def test_the_two_slots_of_an_origin_are_used_whether_one_source_reads_it_or_several(tmp_path):
    """FETCH-18 with answers slower than the gap (3 s against 1 s): an origin read by one
    source of the dataset has two of its requests in flight at once, as a source run alone
    would; an origin read by two sources has two in flight between them (they split its two
    slots, one worker each, rather than four threads waiting for two slots); never three."""
    solo = pages("a.example.com", "solo", 4)
    first, second = pages("b.example.com", "p", 3), pages("b.example.com", "q", 3)
    data = dataset_doc("slow", source_doc("solo", solo), source_doc("first", first), source_doc("second", second))
    fixture = fixture_for(solo + first + second)
    for exchange in fixture:
        exchange["response"]["delay_seconds"] = 3
    recipe, replay = _write(tmp_path, data, fixture)
    state = tmp_path / "state"
    done = run_cli("run", recipe, "--state", str(state), "--replay", replay, "--json")
    assert done.returncode == 0, done.stderr
    assert all(s["record"]["coverage"]["fetched_this_run"] == len(urls) for s, urls in
               zip(json.loads(done.stdout)["sources"], (solo, first, second)))
    alone = _in_flight(state, ["solo"], "a.example.com", 3)
    shared = _in_flight(state, ["first", "second"], "b.example.com", 3)
    assert len(alone) == 4 and len(shared) == 6
    assert _most_at_once(alone) == 2, alone
    assert _most_at_once(shared) == 2, shared


def test_a_dataset_run_killed_at_any_instant_leaves_every_source_old_or_new(tmp_path):
    """Crash safety with many sources writing their generations at once (a few at a time,
    SharedRun.writing): SIGKILL a dataset replay at random instants, weighted towards its end
    where the sources finish together and write; every source's `current` is then its old
    generation or its new one with files that agree, never an older one, and the next run
    of the dataset completes for every source."""
    names = [f"s{n:02d}" for n in range(32)]
    urls = {name: pages(f"o{n % 4}.example.com", name, 4) for n, name in enumerate(names)}
    recipe, replay = _write(tmp_path, dataset_doc("crash", *(source_doc(name, urls[name]) for name in names)),
                            fixture_for([u for name in names for u in urls[name]]))
    state = tmp_path / "state"
    args = [sys.executable, "-m", "collection", "run", recipe, "--state", str(state), "--replay", replay, "--keep", "2"]
    cwd = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    spans = []
    for _ in range(2):          # the first run also pays for cold caches: the quicker one is the span
        started = time.monotonic()
        assert subprocess.run(args, cwd=cwd, capture_output=True).returncode == 0
        spans.append(time.monotonic() - started)
    span = min(spans)
    rng = random.Random(17)
    killed = 0
    for _ in range(80):          # a loaded machine (the suite's other workers) finishes some runs in time
        before = {name: check_state(state / name, ("title", "body")) for name in names}
        started = time.monotonic()
        child = subprocess.Popen(args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            child.wait(timeout=span * rng.uniform(0.6, 1.05))
            # finished in time: the machine got quicker than when the span was measured (other
            # workers ended), so later kills aim at the quicker span
            span = min(span, time.monotonic() - started)
        except subprocess.TimeoutExpired:
            child.send_signal(signal.SIGKILL)
        killed += child.wait() == -signal.SIGKILL
        for name in names:
            after = check_state(state / name, ("title", "body"))
            assert after is not None and after >= before[name], (name, before[name], after)
        if killed >= 12:
            break
    assert killed >= 12
    last = {name: check_state(state / name, ("title", "body")) for name in names}
    done = subprocess.run(args + ["--json"], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert all(check_state(state / name, ("title", "body")) > last[name] for name in names)


def test_sources_allowing_the_same_origins_ask_for_robots_txt_once(tmp_path):
    """D-58 (robots.txt once per run) across the sources of a dataset: the sources that allow
    the same origins share one answer per origin, so a publisher read by three sources sees
    one robots.txt request, not three; an answer D-66 makes unreachable (a redirect outside
    the allowlist) disallows every page of each of them and each run record names it."""
    blocked = {name: pages("a.example.com", name, 2) for name in ("x", "y", "z")}
    open_ = {name: pages("b.example.com", name, 2) for name in ("u", "v")}
    sources = {**blocked, **open_}
    fixture = fixture_for([u for urls in sources.values() for u in urls])
    fixture.append({"request": {"url": "https://a.example.com/robots.txt"},
                    "response": {"status": 301, "headers": [["Location", "https://elsewhere.example.com/robots.txt"]],
                                 "body": {"text": ""}}})
    recipe, replay = _write(tmp_path, dataset_doc("robots", *(source_doc(n, u) for n, u in sources.items())), fixture)
    done = run_cli("run", recipe, "--state", str(tmp_path / "state"), "--replay", replay, "--json")
    assert done.returncode == 0, done.stderr
    records = {s["name"]: s["record"] for s in json.loads(done.stdout)["sources"]}
    assert sum(records[n]["requests"]["robots"] for n in blocked) == 1
    assert sum(records[n]["requests"]["robots"] for n in open_) == 1
    for name in blocked:
        assert records[name]["robots_unreachable"] == [{"origin": "https://a.example.com",
                                                        "redirect": "https://elsewhere.example.com/robots.txt"}]
        assert records[name]["rows"] == 0
        assert {p["failure_code"] for p in records[name]["failures"]["pages"]} == {"robots_disallowed"}
    for name in open_:
        assert "robots_unreachable" not in records[name] and records[name]["rows"] == 2


def test_status_summarises_a_dataset_directory_before_its_first_dataset_record(tmp_path):
    """A first dataset run killed after some sources committed but before it wrote
    dataset-run.json: `collection status DIR` still summarises every source that has a
    generation, one line each (it raised NameError there)."""
    recipe, replay = _write(tmp_path, _dataset(), fixture_for(DECISIONS + MINUTES + AGENDAS))
    state = tmp_path / "state"
    assert run_cli("run", recipe, "--state", str(state), "--replay", replay).returncode == 0
    os.remove(state / "dataset-run.json")
    status = run_cli("status", str(state))
    assert status.returncode == 0, status.stderr
    lines = [line.strip() for line in status.stdout.splitlines()]
    assert [line.split(":")[0] for line in lines if line.split(":")[0] in {n for n, _ in SOURCES}] == \
        ["agendas", "decisions", "minutes"]
