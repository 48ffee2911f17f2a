"""The state store: generations, the atomic `current` switch, pruning, the lock, recovery."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from collection.store.generations import StateLocked, StateStore, current_generation


def _write(store: StateStore, text: str) -> str:
    generation = store.begin()
    for name in ("relation.csv", "ledger.csv"):
        sink = generation.open_text(name)
        sink.write(f"{name}:{text}\n")
        generation.close_text(name)
    generation.write_bytes("run.json", b"{}\n")
    return store.commit(generation)


def test_commit_switches_current_and_keeps_the_newest(tmp_path):
    with StateStore(str(tmp_path), keep=2) as store:
        assert store.current() is None
        for n in range(1, 5):
            path = _write(store, str(n))
            assert store.current() == path and os.path.basename(path) == f"{n:06d}"
            with open(tmp_path / "current" / "relation.csv") as handle:
                assert handle.read() == f"relation.csv:{n}\n"
        assert sorted(os.listdir(tmp_path / "generations")) == ["000003", "000004"]
        assert os.readlink(tmp_path / "current") == os.path.join("generations", "000004")   # relative


def test_digests_are_of_the_bytes_written(tmp_path):
    import hashlib

    with StateStore(str(tmp_path)) as store:
        generation = store.begin()
        sink = generation.open_text("relation.csv")
        sink.write("é,1\n")
        digest = generation.close_text("relation.csv")
        assert digest.sha256 == hashlib.sha256("é,1\n".encode()).hexdigest() and digest.bytes == 5
        generation.abandon()
        assert not os.path.exists(generation.path)


def test_recovery_removes_leftovers_of_a_killed_run(tmp_path):
    with StateStore(str(tmp_path)) as store:
        _write(store, "1")
    gens = tmp_path / "generations"
    (gens / ".tmp-000002-999").mkdir()                      # killed while writing
    (gens / "000003").mkdir()                               # renamed, never made current
    os.symlink("generations/000003", tmp_path / ".current.tmp-999")   # killed before os.replace
    with StateStore(str(tmp_path)) as store:
        assert sorted(os.listdir(gens)) == ["000001"]
        assert not os.path.lexists(tmp_path / ".current.tmp-999")
        assert store.current() == str(gens / "000001")
        assert os.path.basename(_write(store, "2")) == "000002"


def test_first_generation_never_made_current_is_removed(tmp_path):
    os.makedirs(tmp_path / "generations" / "000001")
    with StateStore(str(tmp_path)) as store:
        assert os.listdir(tmp_path / "generations") == [] and store.current() is None


def test_a_second_store_is_refused_while_the_first_holds_the_lock(tmp_path):
    with StateStore(str(tmp_path)):
        with pytest.raises(StateLocked) as locked:
            StateStore(str(tmp_path)).acquire()
        assert locked.value.to_refusal().code == "STATE_LOCKED"
    with StateStore(str(tmp_path)):                          # released on exit
        pass


def test_a_killed_process_releases_the_lock(tmp_path):
    code = ("import sys, time; from collection.store.generations import StateStore; "
            f"s = StateStore({str(tmp_path)!r}); s.acquire(); print('locked', flush=True); time.sleep(60)")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "locked"
        with pytest.raises(StateLocked):
            StateStore(str(tmp_path)).acquire()
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        deadline = time.monotonic() + 10
        while True:
            try:
                StateStore(str(tmp_path)).acquire()
                break
            except StateLocked:
                assert time.monotonic() < deadline
                time.sleep(0.05)
    finally:
        if child.poll() is None:
            child.kill()


def test_current_that_is_not_a_symlink_is_refused(tmp_path):
    (tmp_path / "current").mkdir()
    with pytest.raises(ValueError):
        current_generation(str(tmp_path))


def test_writing_needs_the_lock(tmp_path):
    store = StateStore(str(tmp_path))
    with pytest.raises(RuntimeError):
        store.begin()


def test_a_failed_fsync_abandons_the_generation_and_keeps_current(tmp_path):
    """A directory that cannot be made durable during commit: the error reaches the caller, the
    half-made generation is removed at once (not when it is garbage-collected) and `current`
    still names the previous generation."""
    from collection.store.groupsync import drive

    def steps(store, text):
        generation = store.begin()
        try:
            sink = generation.open_text("relation.csv")
            sink.write(text)
            generation.close_text("relation.csv")
            return (yield from store.commit_steps(generation))
        except BaseException:
            generation.abandon()
            raise

    def failing(path):
        raise OSError(5, "Input/output error", path)

    with StateStore(str(tmp_path)) as store:
        first = drive(steps(store, "one"))
        second = steps(store, "two")       # held, as a committer holds the writes it drives
        with pytest.raises(OSError, match="Input/output"):
            drive(second, failing)
        assert second.gi_frame is None                 # the write ended, not merely left suspended
        assert [n for n in os.listdir(tmp_path / "generations") if n.startswith(".tmp-")] == []
        assert current_generation(str(tmp_path)) == first


def test_an_unused_directory_is_removed_under_its_lock_and_a_used_one_kept(tmp_path):
    """D-71: a refused first use leaves no trace (the lock file and the empty generations
    directory acquire() made are removed, the directory too); a directory holding a generation,
    or one never locked by this store, is left alone."""
    fresh = tmp_path / "fresh"
    store = StateStore(str(fresh))
    store.acquire()
    assert sorted(os.listdir(fresh)) == ["generations", "lock"]
    store.remove_if_unused()
    store.release()
    assert not fresh.exists()

    used = tmp_path / "used"
    with StateStore(str(used)) as store:
        _write(store, "a\n")
        store.remove_if_unused()
    assert current_generation(str(used)) is not None and (used / "lock").is_file()

    unlocked = tmp_path / "unlocked"
    StateStore(str(unlocked)).remove_if_unused()           # not acquired: nothing to remove, no error
    (unlocked / "generations").mkdir(parents=True)
    StateStore(str(unlocked)).remove_if_unused()
    assert (unlocked / "generations").is_dir()


def test_acquire_makes_the_directory_again_when_a_holder_removed_it_meanwhile(tmp_path, monkeypatch):
    """The race remove_if_unused opens: another process removes the directory between acquire's
    makedirs and its open of the lock. acquire makes it afresh and locks it."""
    from collection.store import generations

    directory = tmp_path / "build"
    real_open, calls = os.open, []

    def open_after_removal(path, *args, **kwargs):
        if path.endswith("lock") and not calls:
            calls.append(path)
            os.rmdir(directory / "generations")               # what the other holder does, for real
            os.rmdir(directory)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(generations.os, "open", open_after_removal)
    store = StateStore(str(directory))
    store.acquire()
    try:
        assert calls and sorted(os.listdir(directory)) == ["generations", "lock"]
        with pytest.raises(StateLocked):
            StateStore(str(directory)).acquire()
    finally:
        store.release()
