"""DIR/dataset-run.json, the record of a dataset directory, read checked and changed under a
lock (shell; docs/running-many-sources.md, "Many jobs on one dataset directory").

Any number of processes may run sources of one dataset into one DIR at once (one Kubernetes
Job per source, `--only NAME`). Each source's own state (DIR/<name>/) has its own lock; what
they share is this record. So it is only ever changed by a read-merge-write under an
exclusive flock on DIR/dataset-run.lock, written with `write_atomically` (a temporary file of
the writer's own, fsync, rename, fsync of DIR): a job never loses another's entry or count,
and a reader without the lock (`collection status`) sees one whole record.

A record is read back only after checking it against schemas/dataset-run-record.schema.json
(and that its source names are names, each once): anything else is `DatasetRecordDamaged`,
which names the file and what is wrong, never an exception nobody planned for.
"""

from __future__ import annotations

import json
import os
import re
import stat
import time
from typing import Any, Callable

from collection.canonical import ordered_json
from collection.store.generations import (ATOMIC_TMP, SET_ASIDE, StateDamaged, exclusive_lock,
                                          write_atomically)
from collection.store.groupsync import fsync_directory

DATASET_RECORD = "dataset-run.json"
DATASET_LOCK = "dataset-run.lock"
SCHEMA = "dataset-run-record.schema.json"

# A source's name (schemas/source.schema.json "name"), matched whole: an entry names the
# directory DIR/<name>/ that status reads, so it must never be a path.
_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
_DETAIL = 300                   # keep the message one line


class DatasetRecordDamaged(StateDamaged):
    """DIR/dataset-run.json is not a record a dataset run wrote. `dataset_run`: the run
    counter when it could still be read from the damaged file (else 0)."""

    def __init__(self, directory: str, problem: str, dataset_run: int = 0):
        super().__init__(directory, DATASET_RECORD, problem)
        self.dataset_run = dataset_run

    def to_refusal(self):
        from collection.recipe.refusal import Refusal

        return Refusal(self.code, "", f"{os.path.join(self.directory, DATASET_RECORD)}: {self.problem}; the next "
                       f"dataset run sets it aside (under {os.path.join(self.directory, SET_ASIDE)}) and starts "
                       "a new record; every source's own state is untouched",
                       "dataset record (docs/running-many-sources.md)")


_CHECK: list[Callable[[Any], bool]] = []
_VALIDATOR: list[Any] = []


def _validator():
    if not _VALIDATOR:
        import jsonschema
        from referencing import Registry, Resource

        from collection.recipe.resources import load_schema
        from collection.recipe.schemacheck import compile_check

        run, dataset = load_schema("run-record.schema.json"), load_schema(SCHEMA)
        registry = Registry().with_resources([(run["$id"], Resource.from_contents(run)),
                                              (dataset["$id"], Resource.from_contents(dataset))])
        _VALIDATOR.append(jsonschema.Draft202012Validator(dataset, registry=registry))
        _CHECK.append(compile_check(dataset, {run["$id"]: run}))
    return _CHECK[0], _VALIDATOR[0]


def is_source_name(name: str) -> bool:
    return _NAME.fullmatch(name) is not None


def _salvage(document: Any) -> int:
    value = document.get("dataset_run") if isinstance(document, dict) else None
    return value if type(value) is int and value >= 1 else 0


def _describe(error) -> str:
    """The rule a value broke, never the value: a record an older version wrote may hold what
    must not be printed (a gate URL with its password, say)."""
    if error.validator in ("required", "additionalProperties"):
        return error.message          # names members, not their values
    return f"fails {error.validator!s} {json.dumps(error.validator_value, sort_keys=True)}"


def check_dataset_record(directory: str, document: Any) -> dict:
    """`document` (parsed JSON) if it is a dataset record; DatasetRecordDamaged otherwise."""
    check, validator = _validator()
    try:
        sound = check(document)
    except RecursionError:
        raise DatasetRecordDamaged(directory, "is nested too deeply to be a dataset record") from None
    if not sound:
        import jsonschema

        try:
            error = jsonschema.exceptions.best_match(validator.iter_errors(document))
        except RecursionError:
            raise DatasetRecordDamaged(directory, "is nested too deeply to be a dataset record") from None
        where = "/" + "/".join(str(p) for p in error.absolute_path) if error is not None else ""
        detail = _describe(error) if error is not None else "invalid"
        if len(detail) > _DETAIL:
            detail = detail[:_DETAIL] + "…"
        raise DatasetRecordDamaged(directory, f"does not match {SCHEMA} at {where or '/'}: {detail}",
                                   _salvage(document))
    seen: set[str] = set()
    for index, entry in enumerate(document["sources"]):
        name = entry["name"]
        if not _NAME.fullmatch(name):
            raise DatasetRecordDamaged(directory, f"/sources/{index}/name {name[:80]!r} is not a source name",
                                       _salvage(document))
        if name in seen:
            raise DatasetRecordDamaged(directory, f"/sources/{index}/name {name!r} is listed twice",
                                       _salvage(document))
        seen.add(name)
    return document


def read_dataset_record(directory: str) -> dict | None:
    """DIR/dataset-run.json checked; None when there is none; DatasetRecordDamaged otherwise."""
    path = os.path.join(directory, DATASET_RECORD)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise DatasetRecordDamaged(directory, f"cannot be read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(mode):       # a FIFO would hang the reader
        raise DatasetRecordDamaged(directory, "is not a regular file (a FIFO, device or directory)")
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise DatasetRecordDamaged(directory, f"cannot be read: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DatasetRecordDamaged(directory, f"is not UTF-8 (byte {data[exc.start]:#04x} at offset {exc.start})") \
            from None
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise DatasetRecordDamaged(directory, f"is not JSON (truncated or damaged): {exc}") from None
    return check_dataset_record(directory, document)


def _set_aside(directory: str) -> str:
    aside = os.path.join(directory, SET_ASIDE)
    os.makedirs(aside, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    moved = os.path.join(aside, f"dataset-run-{stamp}-{os.getpid()}.json")
    os.rename(os.path.join(directory, DATASET_RECORD), moved)
    fsync_directory(aside)
    fsync_directory(directory)
    return moved


def update_dataset_record(directory: str, merge: Callable[[dict | None, int], dict],
                          *, warn: Callable[[str], None] | None = None) -> dict:
    """Change DIR/dataset-run.json under its lock: `merge(previous, counter)` gets the record
    as it is now (None when there is none) and the run counter it holds, and returns the new
    record, which is written atomically and returned. A damaged record is moved to
    DIR/set-aside/ (never deleted; `warn` is told where) and `merge` gets None and the
    counter salvaged from it, if any."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, DATASET_RECORD)
    with exclusive_lock(os.path.join(directory, DATASET_LOCK)):
        # Only the lock's holder writes the record, so any temporary file of it now is a
        # killed writer's.
        for name in os.listdir(directory):
            if name.startswith(DATASET_RECORD + ATOMIC_TMP):
                try:
                    os.unlink(os.path.join(directory, name))
                except FileNotFoundError:
                    pass
        try:
            previous = read_dataset_record(directory)
            counter = int(previous["dataset_run"]) if previous else 0     # 7.0 is an integer to JSON Schema
        except DatasetRecordDamaged as exc:
            moved = _set_aside(directory) if os.path.lexists(path) else None
            if warn is not None:
                warn(f"{exc.to_refusal().code}: {os.path.join(directory, DATASET_RECORD)} {exc.problem}; "
                     f"set aside as {moved}, a new record starts"
                     + (f" (the run counter {exc.dataset_run} is kept)" if exc.dataset_run else ""))
            previous, counter = None, exc.dataset_run
        record = merge(previous, counter)
        write_atomically(path, (ordered_json(record) + "\n").encode("utf-8"))
    return record


def last_dataset_run(directory: str) -> int:
    """The run counter DIR/dataset-run.json holds now (0 when none; what a damaged one still
    says, else 0). Read without the lock: it numbers the fixture run a replay starts with."""
    try:
        record = read_dataset_record(directory)
    except DatasetRecordDamaged as exc:
        return exc.dataset_run
    return int(record["dataset_run"]) if record else 0
