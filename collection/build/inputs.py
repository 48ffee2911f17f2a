"""What a build reads: each source's current relation in a dataset's state directory (D-71).

A dataset run writes source NAME's state under DIR/NAME/ (collection/store/generations.py):
DIR/NAME/current names the generation, whose relation.csv is the relation and whose run.json
records that file's sha256 and size. A build resolves `current` once and reads the generation's
own relation.csv (never through the symlink again), so a run that finishes meanwhile does not
change what this build reads. The relation's header must be the pin's columns then the seven
provenance columns (PROV-02): with DuckDB reading every column by position under its declared
name, a relation written under another pin would otherwise be misnamed.

The relation is hashed while DuckDB reads it (`Digest`, a thread: hashlib releases the GIL on
large blocks), and the digest must be the one run.json records (else STATE_DAMAGED: the
generation's files disagree).
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass

from collection.merge.relation import check_relation_header
from collection.recipe.model import Source
from collection.recipe.refusal import Refusal
from collection.store.generations import RELATION, STATE_DAMAGED, StateDamaged, check_generation, read_record_file

_BLOCK = 1 << 20


@dataclass(frozen=True)
class Input:
    """One source's current relation, as the build reads it."""

    source: Source
    path: str                 # DIR/NAME/generations/NNNNNN/relation.csv (the resolved generation)
    generation: str           # NNNNNN
    run_number: int
    rows: int
    recorded: tuple[str, int]     # run.json's (sha256, bytes) of relation.csv

    @property
    def columns(self) -> tuple[str, ...]:
        return self.source.reader.relation_columns

    @property
    def empty(self) -> bool:
        """A relation of zero bytes: the empty relation of a full run (no header row)."""
        return self.recorded[1] == 0


def locate(state_dir: str, source: Source, dataset_path: str = "DATASET") -> Input | Refusal:
    """The current relation of `source` under `state_dir`, checked; or the refusal that says why
    it cannot be read (BUILD_NO_STATE, STATE_DAMAGED, BUILD_RELATION_COLUMNS)."""
    directory = os.path.join(state_dir, source.name)
    try:
        current = check_generation(directory)
        record = read_record_file(directory, current) if current else None
    except StateDamaged as exc:
        return exc.to_refusal()
    if current is None:
        return Refusal("BUILD_NO_STATE", "", f"source {source.name!r} has no current generation under "
                       f"{directory} (it never ran there); run it first: collection run {dataset_path} "
                       f"--state {state_dir} --only {source.name}", "a build reads each source's current relation (D-71)")
    path = os.path.join(current, RELATION)
    recorded = (record.get("files") or {}).get(RELATION) or {}
    sha, size = recorded.get("sha256"), recorded.get("bytes")
    if not isinstance(sha, str) or not isinstance(size, int) or isinstance(size, bool):
        return StateDamaged(directory, os.path.join(os.path.relpath(current, directory), "run.json"),
                            "does not record relation.csv's sha256 and size").to_refusal()
    with open(path, encoding="utf-8", newline="") as stream:
        try:
            problem = check_relation_header(stream, source.reader.columns)
        except (UnicodeDecodeError, ValueError) as exc:
            return StateDamaged(directory, os.path.relpath(path, directory), f"cannot be read as CSV: {exc}").to_refusal()
    if problem is not None:
        return Refusal("BUILD_RELATION_COLUMNS", "", f"{path}: the header is not the columns of source "
                       f"{source.name!r}'s Reader pin ({', '.join(source.reader.relation_columns)}); run the source "
                       "again (--resync after a pin change), then build", "PROV-02, REF-05, D-71")
    rows = record.get("rows")
    return Input(source, path, os.path.basename(current), int(record["run_number"]),
                 rows if isinstance(rows, int) and not isinstance(rows, bool) else 0, (sha, size))


class Digest:
    """sha256 and size of a file, computed in a thread while DuckDB reads the same file."""

    def __init__(self, path: str):
        self.path = path
        self.sha256 = hashlib.sha256()
        self.size = 0
        self.error: OSError | None = None
        self._thread = threading.Thread(target=self._run, name=f"digest {os.path.basename(path)}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            with open(self.path, "rb", buffering=0) as handle:
                while True:
                    block = handle.read(_BLOCK)
                    if not block:
                        return
                    self.sha256.update(block)
                    self.size += len(block)
        except OSError as exc:
            self.error = exc

    def result(self) -> tuple[str, int]:
        self._thread.join()
        if self.error is not None:
            raise self.error
        return self.sha256.hexdigest(), self.size


def digest_refusal(item: Input, found: tuple[str, int]) -> Refusal | None:
    """STATE_DAMAGED when the relation's bytes are not those its run.json records."""
    if found == item.recorded:
        return None
    return Refusal(STATE_DAMAGED, "", f"{item.path}: its bytes (sha256 {found[0]}, {found[1]} bytes) are not the "
                   f"relation run.json records (sha256 {item.recorded[0]}, {item.recorded[1]} bytes); the generation's "
                   "files disagree: `collection run --resync` for this source starts again",
                   "state directory (GUIDE: State)")
