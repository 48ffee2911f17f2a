"""`run --metrics-file PATH`: the run's figures in the Prometheus text exposition format
(issue 24 point 10), for node_exporter's textfile collector (docs/run.md, "Metrics").

The file is written whole or not at all: into a temporary file in PATH's directory (its name
does not end in `.prom`, so the collector never reads it half-written), fsynced, then
renamed onto PATH. Figures of one run are gauges (they go down as well as up from one run
to the next); the runs of a state directory are the one counter (`collection_runs_total`,
the run number). No sample carries a timestamp: the textfile collector refuses them.
"""

from __future__ import annotations

import math
import os
from datetime import datetime, timezone
from typing import Iterable, Mapping

from collection import codes

SUFFIX = ".prom"

# name, type, help: the order the file lists them in
_FAMILIES = (
    ("collection_runs_total", "counter", "Runs of the source's state directory (its run number), resyncs included."),
    ("collection_last_run_refused", "gauge",
     "1 when the last run of the source was refused (nothing written), 0 when it wrote a generation."),
    ("collection_last_success_timestamp_seconds", "gauge",
     "When the source's current generation was written (its run record's finished_at), Unix time."),
    ("collection_last_run_pages_fetched", "gauge", "Pages fetched by the last run (new, unchanged and changed)."),
    ("collection_last_run_pages_unchanged", "gauge", "Pages the last run fetched with unchanged content."),
    ("collection_last_run_pages_changed", "gauge", "Pages the last run fetched with changed content (corrections)."),
    ("collection_last_run_pages_failed", "gauge", "Pages that failed in the last run, by liveness class (D-62)."),
    ("collection_pages_pending", "gauge", "Pages the ledger holds as pending after the last run."),
    ("collection_pages_failed", "gauge", "Pages the ledger holds as failed after the last run."),
    ("collection_last_run_requests", "gauge", "HTTP requests of the last run, by kind (robots counted, never charged)."),
    ("collection_last_run_body_bytes", "gauge", "Decoded body bytes of the last run's listings and pages (D-20)."),
    ("collection_coverage_complete", "gauge", "1 when the last run's coverage is complete (COV-18)."),
    ("collection_relation_truncated", "gauge", "1 when the relation hit limits.max_rows in the last run (D-17)."),
    ("collection_last_run_duration_seconds", "gauge", "Real time the last run took."),
    ("collection_last_run_gate_wait_seconds", "gauge",
     "Time the last run's fetches slept because the shared politeness gate said not yet."),
)
_REQUEST_KINDS = ("listing", "page", "redirect", "retry", "range", "robots")


def check_path(path: str) -> str | None:
    """Why PATH cannot take the metrics (said before the run starts), or None."""
    if not path.endswith(SUFFIX) or os.path.basename(path) == SUFFIX:
        return f"--metrics-file {path}: the textfile collector reads only files named *{SUFFIX}"
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        return f"--metrics-file {path}: the directory {directory} does not exist"
    if not os.access(directory, os.W_OK | os.X_OK):
        return f"--metrics-file {path}: the directory {directory} is not writable"
    if os.path.isdir(path):
        return f"--metrics-file {path}: is a directory"
    return None


def escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def _timestamp(text: object) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp()
    except ValueError:
        return None


def _number(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    value = float(value)
    return repr(value) if math.isfinite(value) else "NaN"


def source_samples(labels: Mapping[str, str], record: Mapping | None, *, refused: bool,
                   last_success: Mapping | None = None) -> list[tuple[str, dict, object]]:
    """(family, labels, value) for one source. `record`: the run record this run wrote (None
    when it was refused); `last_success`: the run record of the generation that is current
    (for a refused run, the predecessor's: the timestamp stays that of the last run that
    really succeeded, and a source that never succeeded has none)."""
    base = dict(labels)
    out: list[tuple[str, dict, object]] = [("collection_last_run_refused", base, 1 if refused else 0)]
    current = record if record is not None else last_success
    if current is not None and isinstance(current.get("run_number"), int):
        out.append(("collection_runs_total", base, current["run_number"]))
    when = _timestamp(current.get("finished_at")) if current is not None else None
    if when is not None:
        out.append(("collection_last_success_timestamp_seconds", base, int(when)))
    if record is None:
        return out
    cov = record["coverage"]
    out += [
        ("collection_last_run_pages_fetched", base, cov["fetched_this_run"]),
        ("collection_last_run_pages_unchanged", base, cov["unchanged"]),
        ("collection_last_run_pages_changed", base, cov["changed"]),
    ]
    by_class = record.get("failures", {}).get("by_class", {})
    out += [("collection_last_run_pages_failed", {**base, "class": klass}, by_class.get(klass, 0))
            for klass in codes.LIVENESS_CLASSES]
    out += [("collection_pages_pending", base, cov["pending"]), ("collection_pages_failed", base, cov["failed"])]
    out += [("collection_last_run_requests", {**base, "kind": kind}, record["requests"].get(kind, 0))
            for kind in _REQUEST_KINDS]
    out += [
        ("collection_last_run_body_bytes", base, record["bytes"]),
        ("collection_coverage_complete", base, bool(cov["complete"])),
        ("collection_relation_truncated", base, bool(record["truncated"])),
        ("collection_last_run_duration_seconds", base, record["wall_seconds"]),
        ("collection_last_run_gate_wait_seconds", base, record.get("gate_wait_seconds", 0.0)),
    ]
    return out


def render(samples: Iterable[tuple[str, dict, object]]) -> str:
    """The exposition text: each family once (HELP, TYPE, then its samples), in a fixed order."""
    by_family: dict[str, list[tuple[dict, object]]] = {}
    for family, labels, value in samples:
        by_family.setdefault(family, []).append((labels, value))
    lines: list[str] = []
    for name, kind, text in _FAMILIES:
        if name not in by_family:
            continue
        lines.append(f"# HELP {name} {_escape_help(text)}")
        lines.append(f"# TYPE {name} {kind}")
        for labels, value in by_family[name]:
            inside = ",".join(f'{key}="{escape_label(str(v))}"' for key, v in sorted(labels.items()))
            lines.append(f"{name}{{{inside}}} {_number(value)}" if inside else f"{name} {_number(value)}")
    return "\n".join(lines) + "\n"
