"""Group commit (collection/store/groupsync.py): a dataset run's sources write their
generations through one Committer, whose rounds share one syncfs per filesystem.

What users rely on: each source's generation is on the disk before its rename, the rename
before its pointer switch (the order every state directory keeps, docs/run.md "Writing"),
so a kill leaves each source old or new; a failed sync leaves every source of that round
on its previous generation; and the shared syncs are really fewer than the fsyncs they
stand for. The syncs are real syncfs(2) calls on the test's filesystem."""

from __future__ import annotations

import ctypes
import errno
import os
import sys
import threading

import pytest

from collection.store.generations import StateStore, current_generation
from collection.store.groupsync import Committer, FilesystemSync, _syncfs_function, drive


class CountingSync(FilesystemSync):
    """The real FilesystemSync, noting each sync in one event log with the writes' steps."""

    def __init__(self, events: list, lock: threading.Lock):
        super().__init__(_syncfs_function())
        self.events = events
        self.lock = lock

    def sync(self, paths):
        with self.lock:
            self.events.append(("sync-start",))
        super().sync(paths)
        with self.lock:
            self.events.append(("sync-end",))


def _failing_syncfs(fd: int) -> int:
    ctypes.set_errno(errno.EIO)
    return -1


def _generation(store: StateStore, text: str):
    """A generation's writing and commit as steps, as run/loop.py's writer does it."""
    generation = store.begin()
    try:
        for name in ("relation.csv", "ledger.csv"):
            generation.open_text(name).write(f"{name}:{text}\n")
            generation.close_text(name)
        generation.write_bytes("run.json", b"{}\n")
        return (yield from store.commit_steps(generation))
    except BaseException:
        generation.abandon()
        raise


def _read(directory, name="relation.csv") -> str:
    with open(os.path.join(str(directory), "current", name)) as handle:
        return handle.read()


needs_syncfs = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="syncfs(2) is Linux's")


@needs_syncfs
def test_syncfs_is_used_on_this_machine():
    """CI runs Linux >= 5.8: the dataset's group commit is the syncfs one, not the fallback."""
    release = tuple(int(p) for p in os.uname().release.split("-")[0].split(".")[:2])
    assert (FilesystemSync.available() is not None) == (release >= (5, 8))


@needs_syncfs
def test_writes_of_a_round_share_its_syncs_and_each_step_waits_for_one(tmp_path):
    """Forty sources hand their generations over at once: every one is current afterwards
    with its own bytes, fewer syncs ran than the 240 fsyncs they stand for, and every
    step of every write came after a sync that began after its previous step."""
    events: list = []
    lock = threading.Lock()
    sync = CountingSync(events, lock)
    committer = Committer(sync)
    stores = [StateStore(str(tmp_path / f"s{n}"), sync=sync) for n in range(40)]
    for store in stores:
        store.acquire()

    def steps(n: int):
        inner = _generation(stores[n], f"text {n}")
        try:
            path = next(inner)
            while True:
                with lock:
                    events.append(("step", n))
                path = inner.send((yield path))
        except StopIteration as done:
            with lock:
                events.append(("done", n))
            return done.value

    results: dict[int, str] = {}
    threads = [threading.Thread(target=lambda n=n: results.__setitem__(n, committer.write(steps(n))))
               for n in range(40)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    committer.close()
    for n, store in enumerate(stores):
        assert results[n] == current_generation(store.directory)
        assert _read(store.directory) == f"relation.csv:text {n}\n"
        store.release()
    syncs = sum(1 for e in events if e[0] == "sync-end")
    assert 3 <= syncs < 40 * 3, syncs
    # each step after the first (and the end) follows a whole sync begun after the step before
    for n in range(40):
        marks = [i for i, e in enumerate(events) if e in (("step", n), ("done", n))]
        assert len(marks) == 4           # three steps that wait for a sync, then the end
        for before, after in zip(marks, marks[1:]):
            between = [e[0] for e in events[before + 1:after]]
            assert "sync-start" in between and "sync-end" in between[between.index("sync-start"):], (n, between)


@needs_syncfs
def test_a_failed_sync_leaves_every_source_of_the_round_on_its_previous_generation(tmp_path):
    """syncfs reports a writeback error: every write then waiting fails with it, abandons its
    generation (no .tmp- directory stays) and `current` still names the previous one; a
    later write fails too, since the lost page may have been anyone's."""
    stores = [StateStore(str(tmp_path / f"s{n}")) for n in range(3)]
    for store in stores:
        store.acquire()
        drive(_generation(store, "first"))
    failing = FilesystemSync(_failing_syncfs)
    for store in stores:
        store.sync = failing
    committer = Committer(failing)
    errors: dict[int, BaseException] = {}

    def write(n: int) -> None:
        try:
            committer.write(_generation(stores[n], "second"))
        except OSError as exc:
            errors[n] = exc

    threads = [threading.Thread(target=write, args=(n,)) for n in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(errors) == [0, 1, 2] and all(e.errno == errno.EIO for e in errors.values())
    with pytest.raises(OSError):
        committer.write(_generation(stores[0], "third"))
    committer.close()
    for store in stores:
        assert _read(store.directory) == "relation.csv:first\n"
        assert os.path.basename(current_generation(store.directory)) == "000001"
        assert [n for n in os.listdir(store.generations) if n.startswith(".tmp-")] == []
        store.release()


def test_without_syncfs_every_file_and_directory_is_fsynced(tmp_path, monkeypatch):
    """The fallback (no syncfs, or Linux before 5.8): the committer fsyncs each directory a
    step names and each file is fsynced as it is closed, six per generation as a single
    run does."""
    synced: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real(fd))[1])
    committer = Committer(None)
    stores = [StateStore(str(tmp_path / f"s{n}")) for n in range(4)]
    for store in stores:
        store.acquire()
    threads = [threading.Thread(target=committer.write, args=(_generation(store, "x"),)) for store in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    committer.close()
    assert len(synced) >= 4 * 6
    for store in stores:
        assert _read(store.directory) == "relation.csv:x\n"
        store.release()


@needs_syncfs
def test_a_filesystem_is_watched_before_anything_is_written_there(tmp_path):
    """Writeback errors reach a syncfs only through a descriptor opened before them: a sync
    of a filesystem nobody watched is a defect, never a silent success."""
    sync = FilesystemSync.available()
    with pytest.raises(RuntimeError, match="not watched"):
        sync.sync([str(tmp_path)])
    sync.watch(str(tmp_path))
    sync.sync([str(tmp_path)])
    sync.close()


def test_the_state_store_lists_its_generations_once_while_it_holds_the_lock(tmp_path, monkeypatch):
    """Under the lock nothing else changes DIR, so three commits after recovery list
    generations/ no more: the numbers, pruning and `keep` come out as when it was listed."""
    with StateStore(str(tmp_path), keep=2) as store:
        drive(_generation(store, "1"))
    listed: list[str] = []
    real = os.listdir
    monkeypatch.setattr(os, "listdir", lambda path=".": (listed.append(str(path)), real(path))[1])
    with StateStore(str(tmp_path), keep=2) as store:
        before = len(listed)
        for n in (2, 3, 4):
            assert os.path.basename(drive(_generation(store, str(n)))) == f"{n:06d}"
        assert [p for p in listed[before:] if p.endswith("generations")] == []
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path / "generations")) == ["000003", "000004"]
    assert _read(tmp_path) == "relation.csv:4\n"


def test_a_write_whose_round_breaks_unexpectedly_fails_and_the_committer_goes_on(tmp_path):
    """A defect while making a round durable (here a directory nobody watched) must end the
    writes of that round with the error, never leave their sources waiting on a dead thread;
    the next write is committed."""
    sync = FilesystemSync.available() if sys.platform.startswith("linux") else None
    committer = Committer(sync)
    store = StateStore(str(tmp_path / "s"), sync=sync)
    store.acquire()

    def broken():
        yield str(tmp_path / "never-watched") if sync is not None else str(tmp_path / "missing")
        return "unreachable"

    (tmp_path / "never-watched").mkdir()
    with pytest.raises((RuntimeError, OSError)):
        committer.write(broken())
    path = committer.write(_generation(store, "after"))
    committer.close()
    assert path == current_generation(store.directory) and _read(store.directory) == "relation.csv:after\n"
    store.release()


def test_a_source_that_ends_without_writing_leaves_no_generation_begun_for_it(tmp_path, monkeypatch):
    """A dataset's committer begins each source's generation (its directory and empty files)
    while the source fetches. A source that then fails before writing (here its discovery
    raises) must leave its state directory as it was: no `.tmp-` generation, no `current`;
    the source beside it is written whole. Against a real replay of two sources."""
    import json as json_

    from dataset_kit import dataset_doc, fixture_for, pages, source_doc

    import collection.run.loop as loop
    from collection.commands.run import build_shell
    from collection.run.dataset import DatasetSettings, execute_dataset

    ok, bad = pages("a.example.com", "ok", 3), pages("b.example.com", "bad", 3)
    fixture = tmp_path / "fixture.json"
    fixture.write_text(json_.dumps(fixture_for(ok + bad)))
    real = loop._discover

    def discover(source, fetcher, log):
        if source.name == "bad":
            raise RuntimeError("a defect in discovery")
        return real(source, fetcher, log)

    monkeypatch.setattr(loop, "_discover", discover)
    shell = build_shell(replay=str(fixture), record=None, ca_bundle=None, resolve=(), token=None, info_url=None)
    state = tmp_path / "state"
    record = execute_dataset(dataset_doc("two", source_doc("ok", ok), source_doc("bad", bad)),
                             DatasetSettings(str(state)), shell)
    verdicts = {s["name"]: s["status"] for s in record["sources"]}
    assert verdicts == {"ok": "ran", "bad": "error"}
    assert os.listdir(state / "bad" / "generations") == [] and not os.path.lexists(state / "bad" / "current")
    assert os.listdir(state / "ok" / "generations") == ["000001"]
    assert _read(state / "ok").count("\n") == 4
