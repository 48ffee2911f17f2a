"""A dataset run: every collection source of a dataset in one process (docs/run.md, "Running
many sources").

Each source runs as it would alone (collection.run.loop.run_source) into `DIR/<source name>/`,
with its own budgets, ledger, relation, generations and coverage block; what they share is
the transport (one connection pool per origin) and one pacer: one politeness scheduler, one
cap of two requests in flight per origin, at most 25 in flight overall, the waiters of a host
served in the order they came (no source starves another on a shared origin), and the gate
shared with other processes.

A source refused (at registration, or by a run-level refusal such as STATE_LOCKED) is
reported and the others still run. The dataset record (schemas/dataset-run-record.schema.json)
lists every source in the dataset's order; `--json` prints this run's. DIR/dataset-run.json
is the directory's: several runs (`--only` jobs) may share DIR at once, so each merges its
outcomes into it (`merge_record`) under a lock (collection/store/datasetrecord.py): a source's
entry there is from the last run that ran it, and `dataset_run` counts the runs. A run's
number is taken from the counter when it writes the record; the fixture run a `--replay` or
`--record` uses (one fixture holds every origin of the dataset) is the counter read at its
start, the same number unless another run wrote the record meanwhile.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable
from urllib.parse import urlsplit

from collection.fetch.clock import VirtualClock
from collection.fetch.fetcher import ARRIVAL_MARGIN_SECONDS
from collection.fetch.gate import GateUnavailable
from collection.fetch.pacer import Pacer
from collection.fetch.politeness import WORKER_CAP, Politeness
from collection.recipe.model import Source
from collection.recipe.refusal import Refusal, RefusedError
from collection.recipe.registration import dataset_entries
from collection.run.loop import RunSettings, RunUsageError, SharedRun, Shell, gate_refusal, run_source
from collection.store.datasetrecord import DATASET_RECORD, last_dataset_run, update_dataset_record
from collection.store.generations import StateLocked
from collection.store.groupsync import Committer, FilesystemSync
from collection.run.gcpause import paused_gc
from collection.redact import scrub

DATASET_RECORD_VERSION = 1

RAN = "ran"
REFUSED = "refused"
NOT_COLLECTED = "not_collected"      # a source of another adapter: not collected by this tool
NOT_CHOSEN = "not_chosen"            # left out by --only
ERROR = "error"                      # its state directory could not be used (exit 2)
STATUSES = (RAN, REFUSED, NOT_COLLECTED, NOT_CHOSEN, ERROR)


@dataclass(frozen=True)
class DatasetSettings:
    state_dir: str
    only: tuple[str, ...] = ()
    resync: bool = False
    deadline_seconds: float | None = None
    keep: int = 3
    plan: Any = None


def is_dataset(data: bytes) -> bool:
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False        # registration says why (JSON_INVALID, JSON_TOO_DEEP), naming the file
    return isinstance(document, dict) and "sources" in document and "connector" not in document


class DatasetRecordError(OSError):
    """DIR/dataset-run.json could not be written after the sources ran: `record` is this
    run's record (each source's own generation is as it reports)."""

    def __init__(self, record: dict, exc: OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        super().__init__(f"cannot write the dataset record {DATASET_RECORD}{where}: {exc.strerror or exc}; "
                         "every source that ran kept its new generation")
        self.record = record


# This run's outcomes that say nothing new about a source: left out by --only, or locked by
# another run (which writes its own outcome for that source).
def _keeps_previous(entry: dict) -> bool:
    return entry["status"] == NOT_CHOSEN or (entry["status"] == REFUSED and entry["code"] == "STATE_LOCKED")


def merge_record(previous: dict | None, run: dict, counter: int) -> tuple[dict, dict]:
    """DIR/dataset-run.json after `run` (this run's record; pure): (the directory's record,
    this run's record), both numbered counter + 1. A source's entry is this run's unless this
    run left it out or found it locked and the previous record has one: then the previous
    entry stays. Every entry says which dataset run wrote it; sources no longer in the
    dataset are dropped; `counts` counts the entries."""
    number = counter + 1
    mine = [{**entry, "dataset_run": number} for entry in run["sources"]]
    before = {}
    if previous is not None:
        before = {entry["name"]: {**entry, "dataset_run": entry.get("dataset_run", previous["dataset_run"])}
                  for entry in previous["sources"]}
    merged = [before[entry["name"]] if _keeps_previous(entry) and entry["name"] in before else entry
              for entry in mine]
    this_run = {**run, "dataset_run": number, "sources": mine}
    return {**this_run, "counts": _counts(merged), "sources": merged}, this_run


def _counts(sources: list[dict]) -> dict:
    return {status: sum(1 for s in sources if s["status"] == status) for status in STATUSES}


def host_sharers(sources: Iterable[Source]) -> dict[str, int]:
    """How many of `sources` may fetch from each host (their allowed_origins): the sources
    that split the host's connection slots in this run."""
    counts: Counter[str] = Counter()
    for source in sources:
        counts.update({urlsplit(origin).hostname or "" for origin in source.collection.pages.allowed_origins})
    return dict(counts)


def _refused(refusals: Iterable[Refusal]) -> dict:
    refusals = list(refusals)
    return {"status": REFUSED, "code": refusals[0].code, "refusals": [r.to_json() for r in refusals], "record": None}


def execute_dataset(data: bytes, settings: DatasetSettings, shell: Shell, *, log=None, warn=None) -> dict:
    """Run the dataset; returns this run's dataset record, once merged into
    DIR/dataset-run.json. RefusedError when the dataset as a whole is refused (its envelope,
    or the gate before any request); RunUsageError for --only naming no source of it;
    DatasetRecordError when the sources ran but the record could not be written. `warn`
    hears of a damaged record set aside."""
    registration, envelope, entries = dataset_entries(data)
    if envelope or not entries:
        raise RefusedError(list(envelope or registration.refusals))
    names = [entry.name for entry in entries]
    unknown = sorted(set(settings.only) - set(names))
    if unknown:
        raise RunUsageError(f"--only {', '.join(unknown)}: no such source in the dataset (it has {', '.join(names)})")
    gate = shell.gate
    if gate is not None:
        try:
            gate.check()
        except GateUnavailable as exc:
            raise gate_refusal(exc, gate) from None
    os.makedirs(settings.state_dir, exist_ok=True)
    dataset_run = last_dataset_run(settings.state_dir) + 1

    results: dict[int, dict] = {}
    chosen = []
    for entry in entries:
        if settings.only and entry.name not in settings.only:
            results[entry.index] = {"status": NOT_CHOSEN, "code": None, "refusals": [], "record": None}
        elif entry.source is None:
            results[entry.index] = _refused(entry.refusals)
        elif not entry.source.is_collection:
            results[entry.index] = {"status": NOT_COLLECTED, "code": None, "refusals": [], "record": None,
                                    "adapter_id": entry.source.connector.adapter_id}
        else:
            chosen.append(entry)

    transport = shell.transport_for(dataset_run)
    margin = 0.0 if shell.virtual else ARRIVAL_MARGIN_SECONDS
    pacer = Pacer(Politeness(1, WORKER_CAP, margin=margin), gate, fair=True)
    dataset_name = registration.dataset.name if registration.dataset else _dataset_name(data)
    shared = SharedRun(transport, pacer, sharers=host_sharers(entry.source for entry in chosen),
                       committer=Committer(FilesystemSync.available(), around=paused_gc), dataset=dataset_name)
    lock = threading.Lock()
    # The sources open their state directories (lock, recovery, the predecessor's files) one
    # at a time: 256 threads doing it at once spent four times the CPU, each taking the
    # interpreter back from the others after every system call (bench/fleet.py).
    opening = threading.Lock()

    def run_one(entry, participant) -> None:
        def source_log(event, **fields):
            with lock:
                log(event, **{"source": entry.name, **fields})

        run_settings = RunSettings(os.path.join(settings.state_dir, entry.name), resync=settings.resync,
                                   deadline_seconds=settings.deadline_seconds, keep=settings.keep, plan=settings.plan)
        holding = True

        def opened() -> None:
            nonlocal holding
            if holding:
                holding = False
                opening.release()

        def join_clock() -> None:
            opened()
            if participant is not None:
                participant.join()

        opening.acquire()
        try:
            try:
                record = run_source(entry.source, run_settings, shell, shared=shared,
                                    log=source_log if log is not None else None, join_clock=join_clock,
                                    leave_clock=participant.leave if participant is not None else None)
            finally:
                opened()
                if participant is not None:
                    participant.leave()      # also when it never joined: the others' turns wait for it
            outcome = {"status": RAN, "code": None, "refusals": [], "record": record}
        except RefusedError as exc:
            outcome = _refused(exc.refusals)
            # GATE_UNAVAILABLE after pages were fetched: refused, and its generation written
            outcome["record"] = getattr(exc, "record", None)
        except StateLocked as exc:
            outcome = _refused([exc.to_refusal()])
        except (RunUsageError, OSError) as exc:
            # the disk or the command line, not the recipe: exit 2 once every source has run
            where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
            outcome = {"status": ERROR, "code": None, "refusals": [], "record": None,
                       "message": f"{getattr(exc, 'strerror', None) or exc}{where}; the previous generation is unchanged"}
        except Exception as exc:        # noqa: BLE001 - one source's defect must not hide the others' results
            outcome = {"status": ERROR, "code": None, "refusals": [], "record": None,
                       "message": scrub(f"internal error: {type(exc).__name__}: {exc}; "
                                        "the previous generation is unchanged")}
        with lock:
            results[entry.index] = outcome

    virtual = isinstance(shell.clock, VirtualClock)
    # Every source thread is enrolled before any starts (a virtual clock taking turns must
    # know all of them before it hands out the first).
    participants = [shell.clock.enroll() if virtual else None for _ in chosen]
    threads = [threading.Thread(target=run_one, args=(entry, participant), daemon=True,
                                name=f"collection-source-{entry.name}")
               for entry, participant in zip(chosen, participants)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        close = getattr(transport, "close", None)
        if close is not None:
            close()
        shared.committer.close()

    sources = []
    for entry in entries:
        outcome = results[entry.index]
        sources.append({"name": entry.name, **outcome})
    counts = {status: sum(1 for s in sources if s["status"] == status) for status in STATUSES}
    record = {
        "record_version": DATASET_RECORD_VERSION,
        "dataset": dataset_name,
        "dataset_run": dataset_run,
        "gate": getattr(gate, "description", "none"),
        "counts": counts,
        "sources": sources,
    }
    mine: list[dict] = []

    def merge(previous: dict | None, counter: int) -> dict:
        merged, this_run = merge_record(previous, record, counter)
        mine.append(this_run)
        return merged

    try:
        update_dataset_record(settings.state_dir, merge, warn=warn)
    except OSError as exc:
        raise DatasetRecordError(mine[0] if mine else record, exc) from None
    return mine[0]


def _dataset_name(data: bytes) -> str:
    try:
        return str(json.loads(data).get("name", ""))
    except (ValueError, AttributeError, RecursionError):
        return ""

