"""The state directory: generations on disk, switched atomically, one run at a time (shell).

Layout of a state directory DIR:

    DIR/lock                      fcntl.flock'd by the run that owns DIR (a killed process
                                  releases it with its file descriptors)
    DIR/current -> generations/000007
                                  a relative symlink, the only pointer readers follow
    DIR/generations/000007/       relation.csv, ledger.csv, run.json: one complete generation
    DIR/generations/.tmp-000008-<pid>/
                                  a generation being written (removed by recovery)

Why a symlink and not a pointer file: `DIR/current/relation.csv` must be a path a
shell, DuckDB or a transform can open directly, and replacing a symlink with
`os.replace` is atomic on POSIX, so a reader sees the old target or the new one.

Writing a generation (GUIDE, "State"): files go to a temporary directory, each is
fsynced, the directory is fsynced and renamed to its final number, the parent is fsynced,
a new symlink is made beside `current` and `os.replace`d onto it, and DIR is fsynced.
(`commit_steps` yields at each of those syncs; a dataset run's committer makes one syncfs
stand for every source's fsync at that step: collection/store/groupsync.py.)
A kill at any instant therefore leaves `current` naming the old generation or the new
one, never a mix. Recovery (under the lock, at the start of every run) removes what a
killed run left: temporary directories, a half-made symlink, and finished generations
newer than `current` that never became current.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO, Generator, Iterator, TextIO

from collection.recipe.refusal import Refusal
from collection.store.groupsync import FilesystemSync, drive, fsync_directory as _fsync_dir

RELATION = "relation.csv"
LEDGER = "ledger.csv"
RUN_RECORD = "run.json"
FILES = (RELATION, LEDGER, RUN_RECORD)
DEFAULT_KEEP = 3

SET_ASIDE = "set-aside"        # DIR/set-aside/: damaged generations --resync moved out of the way
STATE_DAMAGED = "STATE_DAMAGED"

_GENERATION = re.compile(r"\A[0-9]{6,}\Z")
_TMP_PREFIX = ".tmp-"
_LINK_TMP_PREFIX = ".current.tmp-"


ATOMIC_TMP = ".tmp-"            # `write_atomically`'s temporary files: PATH.tmp-PID-THREAD


def write_atomically(path: str, data: bytes) -> None:
    """Replace the file `path` with `data`: a reader sees the old bytes or the new ones, and a
    kill leaves one of them. The temporary file is the writer's own (process and thread in its
    name, created exclusively, so it is never a planted symlink nor another writer's file),
    fsynced, `os.replace`d onto `path`, and the directory fsynced. A leftover of a killed
    writer is `PATH.tmp-*`; whoever owns PATH may remove those (under its lock)."""
    tmp = f"{path}{ATOMIC_TMP}{os.getpid()}-{threading.get_ident()}"
    try:
        os.unlink(tmp)               # a dead process with this pid and thread id left it
    except FileNotFoundError:
        pass
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    _fsync_dir(os.path.dirname(os.path.abspath(path)))


@contextmanager
def exclusive_lock(path: str) -> Iterator[None]:
    """Hold an exclusive `flock` on the file `path` (created if missing) for the block; waits
    for the holder. For short read-modify-write sections only: the kernel drops the lock when
    its holder dies, so a killed process never leaves it taken."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)                 # closing drops the flock


class StateLocked(Exception):
    """Another process holds DIR/lock."""

    def __init__(self, directory: str):
        super().__init__(f"another run holds the lock on {directory}")
        self.directory = directory

    def to_refusal(self) -> Refusal:
        return Refusal("STATE_LOCKED", "", f"another `collection run` is using the state directory "
                       f"{self.directory}; wait for it to finish (a lock left by a killed run is "
                       "released automatically)", "one run per state directory")


class StateDamaged(ValueError):
    """The state directory is not what a run left: `current` is not a symlink to a generation,
    a generation file is missing or not a regular file, or run.json is unreadable. `file`
    names what is wrong (relative to DIR), `problem` says how. A refresh refuses with
    STATE_DAMAGED; `run --resync` sets the damaged generation aside and starts again."""

    def __init__(self, directory: str, file: str, problem: str):
        super().__init__(f"{os.path.join(directory, file)}: {problem}")
        self.directory = directory
        self.file = file
        self.problem = problem
        self.code = STATE_DAMAGED

    def to_refusal(self) -> Refusal:
        return Refusal(STATE_DAMAGED, "", f"{os.path.join(self.directory, self.file)}: {self.problem}; "
                       "`collection run --resync` sets the damaged generation aside (under "
                       f"{os.path.join(self.directory, SET_ASIDE)}) and starts again",
                       "state directory (GUIDE: State)")


def _generation_number(name: str) -> int | None:
    return int(name) if _GENERATION.match(name) else None


def current_generation(directory: str) -> str | None:
    """The directory `DIR/current` names, or None when there is none yet (read-only).

    Raises StateDamaged when `current` is not a symlink; `check_generation` checks what it
    names."""
    link = os.path.join(directory, "current")
    try:
        target = os.readlink(link)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.EINVAL:   # not a symlink: not a directory this module wrote
            kind = "a directory" if os.path.isdir(link) else "a file"
            raise StateDamaged(directory, "current", f"is {kind}, not the symlink to a generation "
                               "that every run writes") from None
        raise
    return os.path.normpath(os.path.join(directory, target))


# run.json members that status and the next run read, with the type each must have
_RECORD_MEMBERS = (("run_number", int), ("generation", str), ("finished_at", str), ("coverage", dict),
                   ("truncated", bool), ("rows", int), ("corrections", list))


def check_generation(directory: str) -> str | None:
    """The current generation's path after checking it is whole enough to read: `current`
    a symlink to a directory, its three files regular files (a FIFO would hang a reader),
    run.json a JSON object with the members readers use. None before the first run;
    StateDamaged naming the file otherwise. Reads run.json only (small)."""
    path = current_generation(directory)
    if path is None:
        return None
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise StateDamaged(directory, "current", f"names {os.readlink(os.path.join(directory, 'current'))!r}, "
                           "which does not exist (a dangling symlink)") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StateDamaged(directory, "current", "is a symlink loop") from None
        raise
    if not stat.S_ISDIR(mode):
        raise StateDamaged(directory, "current", "does not name a directory")
    generation = os.path.relpath(path, directory)
    for name in FILES:
        try:
            file_mode = os.stat(os.path.join(path, name)).st_mode
        except FileNotFoundError:
            raise StateDamaged(directory, os.path.join(generation, name), "is missing") from None
        if not stat.S_ISREG(file_mode):
            raise StateDamaged(directory, os.path.join(generation, name),
                               "is not a regular file (a FIFO, device or directory)")
    read_record_file(directory, path)
    return path


def read_record_file(directory: str, path: str) -> dict:
    """run.json of the generation at `path`, checked; StateDamaged when it cannot serve."""
    where = os.path.join(os.path.relpath(path, directory), RUN_RECORD)
    try:
        with open(os.path.join(path, RUN_RECORD), "rb") as handle:
            record = json.loads(handle.read())
    except (ValueError, RecursionError) as exc:
        raise StateDamaged(directory, where, f"is not JSON (truncated or damaged): {exc}") from None
    if not isinstance(record, dict):
        raise StateDamaged(directory, where, "is not a JSON object")
    for member, kind in _RECORD_MEMBERS:
        value = record.get(member)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise StateDamaged(directory, where, f"member {member!r} is {value!r}, not a JSON "
                               f"{ {int: 'integer', str: 'string', dict: 'object', bool: 'boolean', list: 'array'}[kind] }")
    if record["run_number"] < 1:
        raise StateDamaged(directory, where, f"member 'run_number' is {record['run_number']}, not a positive integer")
    return record


class _HashingFile:
    """A text sink that encodes UTF-8 once and hashes what it writes (for run.json's digests)."""

    def __init__(self, raw: BinaryIO):
        self._raw = raw
        self.sha256 = hashlib.sha256()
        self.size = 0

    def write(self, text: str) -> int:
        data = text.encode("utf-8")
        self.sha256.update(data)
        self.size += len(data)
        self._raw.write(data)
        return len(text)


@dataclass(frozen=True)
class FileDigest:
    sha256: str
    bytes: int

    def as_dict(self) -> dict:
        return {"sha256": self.sha256, "bytes": self.bytes}


class Generation:
    """A generation being written. Open files with `open_text`, then `StateStore.commit`."""

    def __init__(self, store: "StateStore", number: int, path: str):
        self.store = store
        self.number = number
        self.path = path
        self.digests: dict[str, FileDigest] = {}
        self._open: dict[str, tuple[BinaryIO, _HashingFile]] = {}
        self._made: set[str] = set()      # files begin() created empty, before there was anything to write

    @property
    def name(self) -> str:
        return f"{self.number:06d}"

    def open_text(self, name: str) -> TextIO:
        """A write-only text sink for `name`; `close_text` fsyncs it and records its digest."""
        raw = open(os.path.join(self.path, name), "wb" if name in self._made else "xb")
        self._made.discard(name)
        sink = _HashingFile(raw)
        self._open[name] = (raw, sink)
        return sink  # type: ignore[return-value]

    def close_text(self, name: str) -> FileDigest:
        raw, sink = self._open.pop(name)
        raw.flush()
        if self.store.sync is None:
            os.fsync(raw.fileno())       # else the sync of the commit's first step covers it
        raw.close()
        digest = FileDigest(sink.sha256.hexdigest(), sink.size)
        self.digests[name] = digest
        return digest

    def write_bytes(self, name: str, data: bytes) -> FileDigest:
        sink = self.open_text(name)
        self._open[name][0].write(data)
        sink.sha256.update(data)
        sink.size += len(data)
        return self.close_text(name)

    def abandon(self) -> None:
        for raw, _ in self._open.values():
            raw.close()
        self._open.clear()
        shutil.rmtree(self.path, ignore_errors=True)


class StateStore:
    """One state directory, locked for the lifetime of the object (use as a context manager)."""

    def __init__(self, directory: str, *, keep: int = DEFAULT_KEEP, sync: FilesystemSync | None = None):
        """`sync`: files are not fsynced one by one; whoever drives `commit_steps` syncs the
        filesystem at each step (a dataset run's Committer, collection/store/groupsync.py)."""
        if keep < 1:
            raise ValueError("keep at least one generation")
        self.directory = os.path.abspath(directory)
        self.keep = keep
        self.sync = sync
        # While the lock is held nothing else changes DIR: the finished generations' numbers
        # and the highest set-aside one are read once, not listed again at every step
        # (None: not known yet).
        self._held: list[int] | None = None
        self._aside_max: int | None = None
        self.generations = os.path.join(self.directory, "generations")
        self._lock_path = os.path.join(self.directory, "lock")
        self._lock_fd: int | None = None

    # --- lock -------------------------------------------------------------------------------
    def __enter__(self) -> "StateStore":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def acquire(self) -> None:
        os.makedirs(self.generations, exist_ok=True)
        try:
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:
            # a holder removing the unused directory (remove_if_unused) did so between the two
            # calls above: make it afresh, once; gone again means the directory itself is going away
            os.makedirs(self.generations, exist_ok=True)
            fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StateLocked(self.directory) from None
            raise
        self._lock_fd = fd
        self.recover()

    def remove_if_unused(self) -> None:
        """While the lock is held: remove the directory when it holds no generation, only what
        acquire() made (the lock file and an empty generations directory), so that a refused first
        use leaves no trace. Under the lock, a user opening the lock after this makes the directory
        afresh and one that opened it before finds it locked."""
        if self._lock_fd is None or self.current() is not None:
            return
        try:
            os.rmdir(self.generations)
            os.unlink(self._lock_path)
            os.rmdir(self.directory)
        except OSError:
            pass                                     # something else is there: leave it

    def release(self) -> None:
        self._held = self._aside_max = None
        if self._lock_fd is not None:
            os.close(self._lock_fd)     # closing drops the flock
            self._lock_fd = None

    # --- reading ----------------------------------------------------------------------------
    def current(self) -> str | None:
        """The path of the current generation, or None before the first complete run."""
        return current_generation(self.directory)

    def current_file(self, name: str) -> str | None:
        path = self.current()
        return None if path is None else os.path.join(path, name)

    def read_record(self) -> dict | None:
        path = self.current()
        return None if path is None else read_record_file(self.directory, path)

    def check(self) -> str | None:
        """The current generation, checked (StateDamaged when it cannot be read)."""
        return check_generation(self.directory)

    def next_number(self) -> int:
        """The number the next generation gets (set-aside ones included, so none repeats)."""
        if self._aside_max is None or self._lock_fd is None:
            aside = os.path.join(self.directory, SET_ASIDE)
            names = os.listdir(aside) if os.path.isdir(aside) else []
            found = [int(m.group(0)) for m in (re.match(r"[0-9]{6,}", n) for n in names) if m]
            aside_max = max(found, default=0)
            if self._lock_fd is None:
                return max(self._numbers() + [aside_max], default=0) + 1
            self._aside_max = aside_max
        return max(self._numbers() + [self._aside_max], default=0) + 1

    def set_aside(self, damage: Exception) -> str | None:
        """Move the damaged current generation (or a `current` that is not a symlink) to
        DIR/set-aside/ and remove the pointer, so a resync can start; never deletes.
        Returns where it went (None when there was nothing to move)."""
        self._require_lock()
        aside = os.path.join(self.directory, SET_ASIDE)
        os.makedirs(aside, exist_ok=True)
        link = os.path.join(self.directory, "current")
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        moved = None
        if os.path.islink(link):
            target = os.path.normpath(os.path.join(self.directory, os.readlink(link)))
            inside = os.path.dirname(target) == self.generations
            if inside and os.path.isdir(target) and not os.path.islink(target):
                moved = os.path.join(aside, f"{os.path.basename(target)}-{stamp}")
                os.rename(target, moved)
            os.unlink(link)
        elif os.path.lexists(link):
            moved = os.path.join(aside, f"current-{stamp}")
            os.rename(link, moved)
        self._held = self._aside_max = None
        _fsync_dir(aside)
        _fsync_dir(self.directory)
        return moved

    def _numbers(self) -> list[int]:
        if self._held is not None and self._lock_fd is not None:
            return list(self._held)
        found = []
        for name in os.listdir(self.generations):
            number = _generation_number(name)
            if number is not None:
                found.append(number)
        return sorted(found)

    # --- recovery ---------------------------------------------------------------------------
    def recover(self) -> list[str]:
        """Remove what a killed run left behind; returns what was removed (for the log)."""
        self._require_lock()
        removed: list[str] = []
        for name in os.listdir(self.directory):
            if name.startswith(_LINK_TMP_PREFIX):
                os.unlink(os.path.join(self.directory, name))
                removed.append(name)
        try:
            current = self.current()
        except StateDamaged:
            current = ""       # damaged: only temporary leftovers go; the run decides the rest
        current_number = _generation_number(os.path.basename(current)) if current else None
        # a damaged or foreign `current`, or none since a resync set one aside: finished
        # generations may be all that is left of the history, so none is removed here
        foreign = (current == "" or (current is not None and current_number is None)
                   or (current is None and os.path.isdir(os.path.join(self.directory, SET_ASIDE))))
        held = []
        for name in os.listdir(self.generations):
            path = os.path.join(self.generations, name)
            number = _generation_number(name)
            never_current = (number is not None and not foreign
                             and (current_number is None or number > current_number))
            if name.startswith(_TMP_PREFIX) or never_current:
                shutil.rmtree(path, ignore_errors=True)
                removed.append(os.path.join("generations", name))
            elif number is not None:
                held.append(number)
        self._held = sorted(held)
        if removed:
            _fsync_dir(self.generations)
            _fsync_dir(self.directory)
        return removed

    # --- writing ----------------------------------------------------------------------------
    def begin(self, files: tuple[str, ...] = ()) -> Generation:
        """A new generation's temporary directory, with `files` created empty in it: a dataset
        run makes them while its sources fetch (groupsync.Committer.early), so that creating
        them, which a filesystem may make slow, is not left to the end."""
        self._require_lock()
        number = self.next_number()
        path = os.path.join(self.generations, f"{_TMP_PREFIX}{number:06d}-{os.getpid()}")
        if self.sync is not None:
            self.sync.watch(self.generations)
            self.sync.watch(self.directory)
        os.mkdir(path)
        generation = Generation(self, number, path)
        try:
            for name in files:
                os.close(os.open(os.path.join(path, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
                generation._made.add(name)
        except BaseException:
            generation.abandon()
            raise
        return generation

    def commit(self, generation: Generation) -> str:
        """Make `generation` current (atomically), then prune old ones; returns its path."""
        if self.sync is None:
            return drive(self.commit_steps(generation))
        return drive(self.commit_steps(generation), lambda path: self.sync.sync([path]))

    def commit_steps(self, generation: Generation) -> Generator[str, None, str]:
        """`commit` as steps: yields each directory whose contents must be on the disk before
        the next step (its driver fsyncs it, or syncs the filesystem: groupsync.py)."""
        self._require_lock()
        if generation._open:
            raise RuntimeError(f"files still open: {sorted(generation._open)}")
        yield generation.path
        final = os.path.join(self.generations, generation.name)
        os.rename(generation.path, final)
        if self._held is not None:
            self._held = sorted({*self._held, generation.number})
        yield self.generations
        link_tmp = os.path.join(self.directory, f"{_LINK_TMP_PREFIX}{os.getpid()}")
        link = os.path.join(self.directory, "current")
        previous = os.readlink(link) if os.path.islink(link) else None
        os.symlink(os.path.join("generations", generation.name), link_tmp)
        os.replace(link_tmp, link)
        try:
            yield self.directory
        except BaseException:
            # The switch could not be made durable: put `current` back, so that what the run
            # reports (the previous generation is unchanged) is what DIR says; the generation
            # left behind was never current and the next run's recovery removes it.
            if previous is None:
                os.unlink(link)
            else:
                os.symlink(previous, link_tmp)
                os.replace(link_tmp, link)
            raise
        generation.path = final
        self.prune(generation.number)
        return final

    def prune(self, current_number: int | None = None) -> list[int]:
        """Keep the newest `keep` generations (the current one always). `current_number`: the
        generation just made current (else `current` is read)."""
        if current_number is None:
            current = self.current()
            if current is None:
                return []
            current_number = _generation_number(os.path.basename(current))
        numbers = self._numbers()
        doomed = [n for n in numbers[:-self.keep] if n != current_number]
        for number in doomed:
            shutil.rmtree(os.path.join(self.generations, f"{number:06d}"), ignore_errors=True)
        if self._held is not None:
            self._held = [n for n in self._held if n not in doomed]
        if doomed:
            _fsync_dir(self.generations)
        return doomed

    def _require_lock(self) -> None:
        if self._lock_fd is None:
            raise RuntimeError("the state directory is not locked")
