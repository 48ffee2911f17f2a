"""`run --metrics-file PATH` (issue 24 point 10): the run's figures in the Prometheus text
exposition format, read back with prometheus_client's own parser; written atomically into
the directory node_exporter's textfile collector reads (*.prom, never a half-written *.prom);
a refused run never moves the last success's timestamp.

Real runs: the CLI against the loopback HTTPS publisher on the real clock, dataset runs on
replay fixtures, and a run whose origin another process holds in a real machine-local gate.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone

import pytest
from dataset_kit import dataset_doc, fixture_for, pages, source_doc
from loopback import Reply
from prometheus_client.parser import text_string_to_metric_families
from test_run_kit import JSON_PAGE, Publisher, live_run_args as _cli_args, recipe, run_cli

from collection.run import metrics as M


def _families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def _value(families: dict, name: str, **labels) -> float:
    """The one sample of `name` (a counter's family name drops `_total`) with these labels."""
    family = families[name[:-len("_total")] if name.endswith("_total") else name]
    found = [s.value for s in family.samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(found) == 1, (name, labels, family.samples)
    return found[0]


def _epoch(text: str) -> float:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()


def test_a_live_run_writes_its_figures_for_the_textfile_collector(loopback, tmp_path):
    """Issue 24 point 10: pages fetched/unchanged/changed, failed by class, pending, requests by
    kind, bytes, complete, truncated, run seconds, gate wait seconds, last success and the run
    counter, labelled by source; HELP and TYPE for each; nothing but *.prom left in the directory."""
    pub = Publisher(loopback, "explicit").publish("1", "2", "3")
    pub.pages["3"] = Reply(404, JSON_PAGE, b"gone")
    pub.install()
    recipe_path = tmp_path / "recipe.json"
    recipe_path.write_bytes(recipe("explicit", ids=("1", "2", "3"), retries=0))
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    target = textfile / "collection-test.prom"
    done = run_cli(*_cli_args(loopback, recipe_path, tmp_path / "state", "--json", "--metrics-file", str(target)))
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert os.listdir(textfile) == ["collection-test.prom"]
    text = target.read_text()
    families = _families(text)
    source = {"source": "test_explicit"}
    cov = record["coverage"]
    assert _value(families, "collection_last_run_pages_fetched", **source) == cov["fetched_this_run"] == 2
    assert _value(families, "collection_last_run_pages_unchanged", **source) == cov["unchanged"]
    assert _value(families, "collection_last_run_pages_changed", **source) == cov["changed"]
    assert _value(families, "collection_last_run_pages_failed", **source, **{"class": "gone"}) == 1
    assert _value(families, "collection_last_run_pages_failed", **source, **{"class": "error"}) == 0
    assert _value(families, "collection_pages_pending", **source) == cov["pending"]
    for kind in ("listing", "page", "redirect", "retry", "range", "robots"):
        assert _value(families, "collection_last_run_requests", **source, kind=kind) == record["requests"][kind]
    assert _value(families, "collection_last_run_body_bytes", **source) == record["bytes"] > 0
    assert _value(families, "collection_coverage_complete", **source) == (1 if cov["complete"] else 0)
    assert _value(families, "collection_relation_truncated", **source) == 0
    assert _value(families, "collection_last_run_duration_seconds", **source) == pytest.approx(record["wall_seconds"])
    assert _value(families, "collection_last_run_gate_wait_seconds", **source) == record["gate_wait_seconds"]
    assert _value(families, "collection_last_success_timestamp_seconds", **source) == _epoch(record["finished_at"])
    assert _value(families, "collection_runs_total", **source) == record["run_number"] == 1
    assert _value(families, "collection_last_run_refused", **source) == 0
    assert families["collection_runs"].type == "counter"
    assert families["collection_last_run_pages_fetched"].type == "gauge"
    for name in families:
        assert f"# HELP {name}" in text and f"# TYPE {name}" in text

    # a refused run (the state directory is locked) says so and keeps the last success's time
    from collection.store.generations import StateStore

    before = target.stat().st_ino
    with StateStore(str(tmp_path / "state")):
        refused = run_cli(*_cli_args(loopback, recipe_path, tmp_path / "state", "--metrics-file", str(target)))
    assert refused.returncode == 1 and "STATE_LOCKED" in refused.stderr
    after = _families(target.read_text())
    assert target.stat().st_ino != before                      # replaced by rename, not rewritten in place
    assert _value(after, "collection_last_run_refused", **source) == 1
    assert _value(after, "collection_last_success_timestamp_seconds", **source) == _epoch(record["finished_at"])
    assert _value(after, "collection_runs_total", **source) == 1
    assert "collection_last_run_pages_fetched" not in after
    assert os.listdir(textfile) == ["collection-test.prom"]


def test_a_refused_first_run_reports_no_success_at_all(tmp_path):
    """Issue 24 point 10: a source that never succeeded has no last-success timestamp (not 0,
    not the refusal's time)."""
    doc = json.loads(recipe("explicit", ids=("1",)))
    doc["connector"]["adapter_id"] = "public.https.collection@1.0.0"
    recipe_path = tmp_path / "recipe.json"
    recipe_path.write_text(json.dumps(doc))
    target = tmp_path / "c.prom"
    done = run_cli("run", str(recipe_path), "--state", str(tmp_path / "state"), "--metrics-file", str(target))
    assert done.returncode == 1 and "HOSTED_COLLECTION_UNSUPPORTED" in done.stderr
    families = _families(target.read_text())
    assert _value(families, "collection_last_run_refused", source="test_explicit") == 1
    assert "collection_last_success_timestamp_seconds" not in families


@pytest.mark.parametrize("name", ["metrics.txt", "prom", "missing-dir/c.prom"])
def test_a_path_the_collector_would_not_read_is_a_usage_error_before_any_request(loopback, tmp_path, name):
    """Issue 24 point 10: node_exporter reads only *.prom in an existing directory; anything
    else would lose the figures in silence, so it is refused (exit 2) before the run."""
    Publisher(loopback, "explicit").publish("1").install()
    recipe_path = tmp_path / "recipe.json"
    recipe_path.write_bytes(recipe("explicit", ids=("1",)))
    done = run_cli(*_cli_args(loopback, recipe_path, tmp_path / "state", "--metrics-file", str(tmp_path / name)))
    assert done.returncode == 2 and "--metrics-file" in done.stderr
    assert loopback.requests == [] and not (tmp_path / "state").exists()


def test_a_dataset_run_labels_each_source_by_dataset_and_source(tmp_path):
    """Issue 24 point 10: one file for the dataset run, a sample set per chosen source."""
    a, b = pages("a.example.com", "d", 2), pages("b.example.com", "m", 3)
    data = dataset_doc("council", source_doc("decisions", a), source_doc("minutes", b))
    exchanges = fixture_for(a + b)
    exchanges[-1]["response"]["body"] = {"text": "not json"}        # one decode failure in minutes
    recipe_path, replay = tmp_path / "dataset.json", tmp_path / "fixture.json"
    recipe_path.write_bytes(data)
    replay.write_text(json.dumps(exchanges))
    target = tmp_path / "council.prom"
    done = run_cli("run", str(recipe_path), "--state", str(tmp_path / "state"), "--replay", str(replay),
                   "--metrics-file", str(target), "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    families = _families(target.read_text())
    for entry in result["sources"]:
        labels = {"dataset": "council", "source": entry["name"]}
        record = entry["record"]
        assert _value(families, "collection_last_run_pages_fetched", **labels) == record["coverage"]["fetched_this_run"]
        assert _value(families, "collection_last_success_timestamp_seconds", **labels) == _epoch(record["finished_at"])
    assert _value(families, "collection_last_run_pages_failed", dataset="council", source="minutes",
                  **{"class": "error"}) == 1

    # --only: the file names only the source this job ran (each job writes its own file)
    only = tmp_path / "council-minutes.prom"
    done = run_cli("run", str(recipe_path), "--state", str(tmp_path / "state"), "--replay", str(replay),
                   "--only", "minutes", "--metrics-file", str(only))
    assert done.returncode == 0, done.stderr
    fetched = _families(only.read_text())["collection_last_run_pages_fetched"]
    assert {s.labels["source"] for s in fetched.samples} == {"minutes"}


def test_label_values_and_help_are_escaped_as_the_format_says():
    """Issue 24 point 10: a backslash, a double quote and a newline in a label value survive
    prometheus_client's parser exactly."""
    hostile = 'a\\b"c\nd'
    record = {"run_number": 2, "finished_at": "2026-01-02T03:04:05Z", "coverage": {
        "fetched_this_run": 1, "unchanged": 0, "changed": 1, "pending": 0, "failed": 0, "complete": True},
        "failures": {"by_class": {"gone": 0, "blocked": 0, "error": 0}},
        "requests": {"listing": 1, "page": 1, "redirect": 0, "retry": 0, "range": 0, "robots": 1},
        "bytes": 10, "truncated": False, "wall_seconds": 0.5, "gate_wait_seconds": 0.25}
    text = M.render(M.source_samples({"dataset": hostile, "source": "s"}, record, refused=False))
    families = _families(text)
    assert _value(families, "collection_last_run_pages_changed", dataset=hostile, source="s") == 1
    assert _value(families, "collection_last_run_gate_wait_seconds", dataset=hostile, source="s") == 0.25
    assert _value(families, "collection_last_success_timestamp_seconds", dataset=hostile, source="s") == \
        _epoch("2026-01-02T03:04:05Z")


def test_gate_wait_is_the_time_the_shared_gate_held_the_run(loopback, tmp_path):
    """Issue 24 point 10: another process's start on the origin (taken in the same real local
    gate just before) makes this run's first request wait on the gate; the run record and the
    metrics say how long, and never more than the run took. In-process on the real clock, so
    no interpreter start eats into the gap."""
    from collection.fetch.clock import SystemClock
    from collection.fetch.egress import Egress
    from collection.fetch.fetcher import ARRIVAL_MARGIN_SECONDS
    from collection.fetch.gate import parse_gate
    from collection.fetch.urllib3_transport import Urllib3Transport
    from collection.run.loop import RunSettings, Shell, execute

    Publisher(loopback, "explicit").publish("1").install()
    doc = json.loads(recipe("explicit", ids=("1",)))
    doc["collection"]["pages"]["min_interval_seconds"] = 2
    other = parse_gate(f"local:{tmp_path / 'gate'}", ARRIVAL_MARGIN_SECONDS)
    other.check()
    lease = other.acquire("www.example.com", 2.0, 30.0)
    other.sent(lease)
    other.release(lease)
    gate = parse_gate(f"local:{tmp_path / 'gate'}", ARRIVAL_MARGIN_SECONDS)
    shell = Shell(SystemClock(), lambda n: Urllib3Transport(ca_bundle=loopback.ca_pem_path),
                  lambda source: Egress(loopback.resolve_map()), gate=gate)
    record = execute(json.dumps(doc).encode(), RunSettings(str(tmp_path / "state")), shell)
    assert 0 < record["gate_wait_seconds"] <= record["wall_seconds"]
    families = _families(M.render(M.source_samples({"source": record["source"]}, record, refused=False)))
    assert _value(families, "collection_last_run_gate_wait_seconds", source="test_explicit") == \
        record["gate_wait_seconds"]
