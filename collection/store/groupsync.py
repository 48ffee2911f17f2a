"""Group commit: how a dataset run's sources write their generations (shell; docs/run.md,
"Writing").

A single run makes its generation durable with six fsyncs: its three files, the generation's
directory before the rename, `generations/` after it, and DIR after the pointer switch. The
sources of a dataset finish together (an origin's waiters are served in turn, so its sources
end within one round of each other), and 256 of them writing at once were most of what a
dataset replay took beyond the single-source one (bench/fleet.py): 1,536 fsyncs, each a round
trip to the disk, and hundreds of threads each taking the interpreter back from the others
after every system call.

So a dataset run hands every source's write to one `Committer` thread. A write is a generator
(`StateStore.commit_steps`, driven by run/loop.py's generation writer) that yields each
directory whose contents must be on the disk before it may go on. The committer advances
every write it holds to its next yield, then makes all of them durable at once, and repeats:
writes that arrive while it works join the next round. With `FilesystemSync` one syncfs(2)
per filesystem stands for every fsync of the round (files are then not fsynced one by one,
StateStore(sync=...)); where syncfs is missing or cannot report errors, each directory is
fsynced, and so is each file as it is closed. Either way the order a state directory relies
on (files, then the rename, then the pointer) holds for each source, and a kill at any
instant leaves each source on its old generation or its new one.

syncfs also writes back other dirty data of the filesystem, which is why a single run, with
one generation to write, keeps its fsyncs.

Errors: Linux reports writeback errors to syncfs since 5.8, against the file descriptor it is
given, for errors after that descriptor was opened. So `watch` opens a descriptor per
filesystem before a generation writes its first byte there, and keeps it for the run; and
once a sync fails, every later one fails too (a page lost in the failed sync may have been
any waiter's, and the error is reported once). A write whose sync fails abandons its
generation and its source keeps the previous one, as after a failed fsync.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections import deque
from contextlib import nullcontext
from typing import Any, Callable, Generator, Iterable


def fsync_directory(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def drive(steps: Generator[str, None, Any], durable: Callable[[str], None] = fsync_directory) -> Any:
    """Run one write alone: make each directory it yields durable, return what it returns. A
    failure to make one durable is raised inside the write, which abandons its generation."""
    try:
        path = next(steps)
        while True:
            try:
                durable(path)
            except BaseException as exc:
                path = steps.throw(exc)
                continue
            path = steps.send(None)
    except StopIteration as done:
        return done.value


def _syncfs_function():
    if not sys.platform.startswith("linux"):
        return None
    try:
        release = tuple(int(part) for part in os.uname().release.split("-")[0].split(".")[:2])
    except ValueError:
        return None
    if release < (5, 8):
        return None                      # syncfs returned 0 after a failed writeback before 5.8
    try:
        function = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int]
    function.restype = ctypes.c_int
    return function


class FilesystemSync:
    """syncfs(2) per filesystem, on descriptors opened before the writes they vouch for."""

    def __init__(self, syncfs):
        self._syncfs = syncfs
        self._lock = threading.Lock()
        self._fds: dict[int, tuple[int, str]] = {}
        self._failure: OSError | None = None

    @classmethod
    def available(cls) -> FilesystemSync | None:
        function = _syncfs_function()
        return None if function is None else cls(function)

    def watch(self, path: str) -> None:
        """Before anything is written under `path`: have a descriptor on its filesystem."""
        device = os.stat(path).st_dev
        with self._lock:
            if device in self._fds:
                return
            self._fds[device] = (os.open(path, os.O_RDONLY | os.O_DIRECTORY), path)

    def sync(self, paths: Iterable[str]) -> None:
        """Everything written so far under `paths` is on the disk; OSError once a sync failed."""
        devices = {os.stat(path).st_dev for path in paths}
        with self._lock:
            for device in sorted(devices):
                if self._failure is not None:
                    raise OSError(self._failure.errno, self._failure.strerror, self._failure.filename)
                if device not in self._fds:
                    raise RuntimeError(f"{paths}: a filesystem was not watched before writing")
                fd, where = self._fds[device]
                if self._syncfs(fd) != 0:
                    error = ctypes.get_errno()
                    self._failure = OSError(error, f"syncfs: {os.strerror(error)}", where)
                    raise OSError(error, self._failure.strerror, where)

    def close(self) -> None:
        with self._lock:
            for fd, _ in self._fds.values():
                os.close(fd)
            self._fds.clear()


class _Write:
    def __init__(self, steps: Generator[str, None, Any]):
        self.steps = steps
        self.waiting_on: str | None = None
        self.started = False
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()


class Early:
    """A generation begun by the committer while its source still fetches (`Committer.early`):
    its directory and empty files made off the critical path. The write takes it; a run that
    ends without writing discards it."""

    def __init__(self, begin: Callable[[], Any]):
        self._begin = begin
        self.generation: Any = None
        self.error: BaseException | None = None
        self.taken = False
        self.done = threading.Event()

    def run(self) -> None:
        try:
            self.generation = self._begin()
        except BaseException as exc:        # noqa: BLE001 - the write re-raises it
            self.error = exc
        self.done.set()

    def take(self) -> Any:
        """The generation (in the committer's thread, which ran `run` before any write that
        was handed to it later)."""
        self.done.wait()
        self.taken = True
        if self.error is not None:
            raise self.error
        return self.generation

    def discard(self) -> None:
        """Remove the generation unless a write took it (any thread; waits for `run`)."""
        self.done.wait()
        if not self.taken and self.generation is not None:
            self.taken = True
            self.generation.abandon()


class Committer:
    """One thread that writes every generation handed to it, in rounds (module docstring)."""

    def __init__(self, sync: FilesystemSync | None, *, around: Callable[[], Any] | None = None):
        self.sync = sync
        self._around = around               # a context for each step (run/gcpause.paused_gc)
        self._cond = threading.Condition()
        self._arrived: deque[_Write] = deque()
        self._early: deque[Early] = deque()
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="collection-committer", daemon=True)
        self._thread.start()

    def early(self, begin: Callable[[], Any]) -> Early:
        """Run `begin` (a StateStore.begin) soon, before the writes that arrive after this call:
        while the sources fetch, the committer has nothing else to do."""
        return self._hand_over(self._early, Early(begin))

    def write(self, steps: Generator[str, None, Any]) -> Any:
        """Run `steps` to its end among the others; its return value, or what it raised."""
        item = self._hand_over(self._arrived, _Write(steps))
        item.done.wait()
        if item.error is not None:
            raise item.error
        return item.result

    def _hand_over(self, queue: deque, item):
        with self._cond:
            if self._closed:
                raise RuntimeError("the committer is closed")
            queue.append(item)
            self._cond.notify()
        return item

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify()
        self._thread.join()
        if self.sync is not None:
            self.sync.close()

    def _loop(self) -> None:
        active: list[_Write] = []
        while True:
            with self._cond:
                while not self._arrived and not self._early and not active and not self._closed:
                    self._cond.wait()
                if not self._arrived and not self._early and not active:
                    return                   # closed, and nothing left to write
                early = list(self._early)
                self._early.clear()
                active.extend(self._arrived)
                self._arrived.clear()
            for item in early:              # before any write, which may take what it makes
                item.run()
            try:
                for item in active:
                    self._advance(item)
                active = [item for item in active if not item.done.is_set()]
                if active:
                    self._make_durable(active)
            except BaseException as exc:    # noqa: BLE001 - a writer must never wait for a thread that died
                for item in active:
                    _fail(item, exc)
                active = []

    def _advance(self, item: _Write, error: BaseException | None = None) -> None:
        try:
            with self._around() if self._around is not None else nullcontext():
                if error is not None:
                    item.waiting_on = item.steps.throw(error)
                elif item.started:
                    item.waiting_on = item.steps.send(None)
                else:
                    item.started = True
                    item.waiting_on = next(item.steps)
        except StopIteration as done:
            item.result = done.value
            item.done.set()
        except BaseException as exc:        # noqa: BLE001 - the source's thread re-raises it
            item.error = exc
            item.done.set()

    def _make_durable(self, active: list[_Write]) -> None:
        paths = [item.waiting_on for item in active]
        try:
            if self.sync is not None:
                self.sync.sync(paths)
            else:
                for path in dict.fromkeys(paths):
                    fsync_directory(path)
        except (OSError, RuntimeError) as exc:
            # every write of the round is told, abandons its generation and ends with the error
            for item in active:
                self._advance(item, exc)
                _fail(item, exc)
            active.clear()


def _fail(item: _Write, exc: BaseException) -> None:
    """End a write that has not ended with `exc` (its generation abandoned as it closes)."""
    if item.done.is_set():
        return
    try:
        item.steps.close()
    except BaseException:               # noqa: BLE001 - the error to report is `exc`
        pass
    item.error = exc
    item.done.set()
