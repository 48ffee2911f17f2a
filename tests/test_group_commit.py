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


# --- tests for faults written from the specification alone (audit/faults/group_commit.json) ---

def _committed(store, text):
    return drive(_generation(store, text))


def test_current_never_goes_missing_or_dangling_while_it_is_switched(tmp_path, monkeypatch):
    """docs/run.md: a symlink is made beside `current` and os.replace'd onto it, then old
    generations are pruned. At every link made or replaced during a commit, `current` still
    names a whole generation (not unlinked first, not pruned before the switch), even with
    --keep 1. Faults: switch-unlink-then-symlink, prune-before-switch."""
    seen: list[bool] = []
    real_symlink, real_replace = os.symlink, os.replace
    current = tmp_path / "current"

    def watch(real):
        def call(*args, **kwargs):
            seen.append(os.path.exists(current / "relation.csv"))
            return real(*args, **kwargs)
        return call

    with StateStore(str(tmp_path), keep=1) as store:
        _committed(store, "0")
        monkeypatch.setattr(os, "symlink", watch(real_symlink))
        monkeypatch.setattr(os, "replace", watch(real_replace))
        for n in range(1, 6):
            _committed(store, str(n))
    monkeypatch.undo()
    assert len(seen) == 10 and all(seen), seen
    assert os.listdir(tmp_path / "generations") == ["000006"] and _read(tmp_path) == "relation.csv:5\n"


def test_a_dataset_keeps_keep_generations_per_source(tmp_path):
    """--keep applies to every source of a dataset as to a single run: after four dataset
    runs with --keep 2, each source holds its two newest generations. Fault:
    dataset-path-never-prunes."""
    import json as json_

    from dataset_kit import dataset_doc, fixture_for, pages, source_doc

    from collection.commands.run import build_shell
    from collection.run.dataset import DatasetSettings, execute_dataset

    urls = {"x": pages("a.example.com", "x", 2), "y": pages("a.example.com", "y", 2)}
    fixture = tmp_path / "fixture.json"
    fixture.write_text(json_.dumps(fixture_for(urls["x"] + urls["y"])))
    data = dataset_doc("keep", *(source_doc(n, u) for n, u in urls.items()))
    for _ in range(4):
        shell = build_shell(replay=str(fixture), record=None, ca_bundle=None, resolve=(), token=None, info_url=None)
        record = execute_dataset(data, DatasetSettings(str(tmp_path / "state"), keep=2), shell)
        assert record["counts"]["ran"] == 2
    for name in urls:
        assert sorted(os.listdir(tmp_path / "state" / name / "generations")) == ["000003", "000004"]


@pytest.mark.parametrize("release, usable", [("5.15.0-91-generic", True), ("5.8.0", True), ("6.1.0", True),
                                             ("5.7.19", False), ("5.4.0-150-generic", False), ("4.19.0", False)])
def test_syncfs_is_trusted_from_linux_5_8_on(monkeypatch, release, usable):
    """Kernel releases compare as numbers: 5.15 is after 5.8. Fault:
    kernel-version-string-compare. (The release is faked: the machine has one kernel.)"""
    from collection.store import groupsync

    real = os.uname()
    fake = os.uname_result((real.sysname, real.nodename, release, real.version, real.machine))
    monkeypatch.setattr(groupsync.os, "uname", lambda: fake)
    monkeypatch.setattr(groupsync.sys, "platform", "linux")
    assert (groupsync._syncfs_function() is not None) == usable


def test_without_a_syncfs_symbol_the_fsync_path_is_taken(monkeypatch):
    """A libc without syncfs (or one ctypes cannot load) means the fsync fallback, never an
    error out of a commit. Fault: missing-syncfs-crashes."""
    from collection.store import groupsync

    class NoSyncfs:
        def __init__(self, *args, **kwargs):
            pass

        def __getattr__(self, name):
            raise AttributeError(name)

    monkeypatch.setattr(groupsync.ctypes, "CDLL", NoSyncfs)
    assert groupsync._syncfs_function() is None and FilesystemSync.available() is None
    monkeypatch.setattr(groupsync.ctypes, "CDLL", lambda *a, **k: (_ for _ in ()).throw(OSError("no libc")))
    assert FilesystemSync.available() is None


def _syncfs_failing_at(calls: set[int]):
    """The real syncfs, except that its n-th calls (1-based) in `calls` report EIO."""
    real = _syncfs_function()
    count = [0]

    def syncfs(fd: int) -> int:
        count[0] += 1
        if count[0] in calls:
            ctypes.set_errno(errno.EIO)
            return -1
        return real(fd)
    return syncfs


def _three_in_one_round(committer: Committer, writes) -> list:
    """Hand `writes` over together, so the committer takes them in one round."""
    from collection.store.groupsync import _Write

    items = [_Write(w) for w in writes]
    with committer._cond:
        committer._arrived.extend(items)
        committer._cond.notify()
    for item in items:
        item.done.wait()
    return items


@needs_syncfs
def test_a_failed_sync_stops_every_write_of_its_round_at_that_step(tmp_path):
    """docs/running-many-sources.md: a failed sync fails every source whose write was waiting
    for it. No write of the round goes on to rename its generation. Fault:
    sync-failure-fails-only-first."""
    sync = FilesystemSync(_syncfs_failing_at({1}))
    stores = [StateStore(str(tmp_path / f"s{n}"), sync=sync) for n in range(3)]
    for store in stores:
        store.acquire()
    committer = Committer(sync)
    items = _three_in_one_round(committer, [_generation(store, "x") for store in stores])
    committer.close()
    assert all(isinstance(item.error, OSError) for item in items)
    for store in stores:
        assert os.listdir(store.generations) == [] and current_generation(store.directory) is None
        store.release()


@needs_syncfs
def test_a_sync_that_failed_once_fails_every_later_write_of_the_run(tmp_path):
    """A page lost in a failed sync may have been any source's, and the error is reported
    once: a write handed over after the failure fails too, even though the next syncfs
    call would report nothing. Fault: sync-failure-not-sticky."""
    sync = FilesystemSync(_syncfs_failing_at({1}))
    first, later = (StateStore(str(tmp_path / name), sync=sync) for name in ("first", "later"))
    first.acquire()
    later.acquire()
    committer = Committer(sync)
    with pytest.raises(OSError):
        committer.write(_generation(first, "x"))
    with pytest.raises(OSError):
        committer.write(_generation(later, "y"))
    committer.close()
    assert current_generation(later.directory) is None and os.listdir(later.generations) == []
    first.release()
    later.release()


@needs_syncfs
def test_when_the_last_sync_fails_current_is_put_back_on_the_previous_generation(tmp_path):
    """The run says the source keeps its previous generation; the directory must say the same
    when the sync after the pointer switch fails (the third of the commit's three syncs).
    Fault: final-sync-failure-leaves-switched."""
    with StateStore(str(tmp_path)) as store:
        first = drive(_generation(store, "first"))
    sync = FilesystemSync(_syncfs_failing_at({3}))
    with StateStore(str(tmp_path), sync=sync) as store:
        committer = Committer(sync)
        with pytest.raises(OSError):
            committer.write(_generation(store, "second"))
        committer.close()
        assert current_generation(str(tmp_path)) == first and _read(tmp_path) == "relation.csv:first\n"
    with StateStore(str(tmp_path)) as store:      # recovery removes the generation never made current
        assert os.listdir(store.generations) == ["000001"]


def test_a_first_run_whose_last_sync_fails_leaves_no_current(tmp_path):
    """The same on a first run, through a single run's fsyncs: no `current` at all."""
    def fail_on_dir(path):
        if os.path.realpath(path) == os.path.realpath(tmp_path):
            raise OSError(errno.EIO, "Input/output error", path)

    with StateStore(str(tmp_path)) as store:
        with pytest.raises(OSError):
            drive(_generation(store, "first"), fail_on_dir)
    assert not os.path.lexists(tmp_path / "current")


def test_a_dataset_never_writes_into_a_source_directory_another_run_holds(tmp_path):
    """A source whose directory another process holds is refused STATE_LOCKED, and the
    dataset run creates nothing there and removes nothing of the holder's (here the
    generation it is writing). Fault: precreate-in-locked-dir."""
    import json as json_

    from dataset_kit import dataset_doc, fixture_for, pages, source_doc

    from collection.commands.run import build_shell
    from collection.run.dataset import DatasetSettings, execute_dataset

    urls = {"x": pages("a.example.com", "x", 2), "y": pages("b.example.com", "y", 2)}
    fixture = tmp_path / "fixture.json"
    fixture.write_text(json_.dumps(fixture_for(urls["x"] + urls["y"])))
    state = tmp_path / "state"
    with StateStore(str(state / "y")) as holder:
        writing = holder.begin(("relation.csv",))
        before = sorted(os.listdir(holder.generations))
        shell = build_shell(replay=str(fixture), record=None, ca_bundle=None, resolve=(), token=None, info_url=None)
        record = execute_dataset(dataset_doc("held", *(source_doc(n, u) for n, u in urls.items())),
                                 DatasetSettings(str(state)), shell)
        assert {s["name"]: s["code"] for s in record["sources"]} == {"x": None, "y": "STATE_LOCKED"}
        assert sorted(os.listdir(holder.generations)) == before and os.path.isdir(writing.path)
