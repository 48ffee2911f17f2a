"""Faults in the state store and the dataset group commit, written from the specification
alone, run against the tests that guard them.

audit/faults/group_commit.json was written by a helper that read only docs/run.md ("The state
directory"), docs/running-many-sources.md and the GUIDE's state rule, never the code or the
tests. Each fault is implemented here as faithfully as its description allows, as an edit of a
scratch git worktree (no file of this checkout is touched); the state, dataset and group-commit
tests then run there with the worktree first on PYTHONPATH (the kill tests' child processes
inherit it). A fault is killed when a test fails.

    .venv/bin/python audit/state_mutants.py [--only ID,ID]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FAULTS = ROOT / "audit" / "faults" / "group_commit.json"
TESTS = ["tests/test_group_commit.py", "tests/test_state.py", "tests/test_dataset_run.py",
         "tests/test_crash_safety.py", "tests/test_damaged_state.py", "tests/test_run_e2e.py"]
NOT_APPLICABLE = {"abandoned-source-blocks-round": "the committer keeps no set of registered sources to wait for"}


def edit(tree: Path, path: str, old: str, new: str) -> None:
    file = tree / path
    text = file.read_text()
    if old not in text:
        raise SystemExit(f"{path}: the text this fault edits is gone; update audit/state_mutants.py")
    file.write_text(text.replace(old, new, 1))


def apply(fid: str, tree: Path) -> None:
    L, G, GS, D = "collection/run/loop.py", "collection/store/generations.py", "collection/store/groupsync.py", "collection/run/dataset.py"
    if fid == "precreated-ledger-left-empty":
        edit(tree, L, "        write_ledger(result.ledger, generation.open_text(LEDGER))\n        ledger_digest = generation.close_text(LEDGER)",
             "        if early is not None and not dispatcher.results:\n            ledger_digest = generation.write_bytes(LEDGER, b'')\n        else:\n            write_ledger(result.ledger, generation.open_text(LEDGER))\n            ledger_digest = generation.close_text(LEDGER)")
    elif fid == "syncfs-per-source-not-per-round":
        edit(tree, GS, "            if self.sync is not None:\n                self.sync.sync(paths)", "            if self.sync is not None:\n                for p in paths:\n                    self.sync.sync([p])")
    elif fid == "shared-generation-counter":
        edit(tree, G, "        number = self.next_number()\n        path = os.path.join(self.generations, f\"{_TMP_PREFIX}",
             "        number = self.next_number()\n        if self.sync is not None:\n            number = max(number, _SHARED[0] + 1)\n            _SHARED[0] = number\n        path = os.path.join(self.generations, f\"{_TMP_PREFIX}")
        edit(tree, G, "class StateStore:", "_SHARED = [0]\n\n\nclass StateStore:")
    elif fid == "dataset-path-never-prunes":
        edit(tree, G, "        generation.path = final\n        self.prune(generation.number)", "        generation.path = final\n        if self.sync is None:\n            self.prune(generation.number)")
    elif fid == "switch-unlink-then-symlink":
        edit(tree, G, "        os.symlink(os.path.join(\"generations\", generation.name), link_tmp)\n        os.replace(link_tmp, link)",
             "        if os.path.lexists(link):\n            os.unlink(link)\n        os.symlink(os.path.join(\"generations\", generation.name), link)")
    elif fid == "prune-before-switch":
        edit(tree, G, "        yield self.generations\n        link_tmp", "        yield self.generations\n        self.prune(generation.number)\n        link_tmp")
        # prune counting the just-renamed generation, before the switch; `current` still names the old one
    elif fid == "kernel-version-string-compare":
        edit(tree, GS, "    if release < (5, 8):", "    if os.uname().release.split('-')[0] < '5.8':")
    elif fid == "missing-syncfs-crashes":
        edit(tree, GS, "    try:\n        function = ctypes.CDLL(None, use_errno=True).syncfs\n    except (OSError, AttributeError):\n        return None\n", "    function = ctypes.CDLL(None, use_errno=True).syncfs\n")
    elif fid == "sync-failure-fails-only-first":
        edit(tree, GS, "            for item in active:\n                self._advance(item, exc)\n                _fail(item, exc)\n            active.clear()",
             "            first = active[0]\n            self._advance(first, exc)\n            _fail(first, exc)\n            active.remove(first)")
    elif fid == "sync-failure-not-sticky":
        edit(tree, GS, "                    self._failure = OSError(error, f\"syncfs: {os.strerror(error)}\", where)\n", "")
        edit(tree, GS, "                    raise OSError(error, self._failure.strerror, where)", "                    raise OSError(error, f\"syncfs: {os.strerror(error)}\", where)")
    elif fid == "final-sync-failure-leaves-switched":
        edit(tree, G, "            if previous is None:\n                os.unlink(link)\n            else:\n                os.symlink(previous, link_tmp)\n                os.replace(link_tmp, link)\n            raise",
             "            raise")
    elif fid == "abandoned-tmp-not-removed":
        edit(tree, L, "            on_exit.callback(early.discard)", "            pass")
    elif fid == "precreate-in-locked-dir":
        edit(tree, D, "        opening.acquire()\n", "        opening.acquire()\n        _pre = os.path.join(run_settings.state_dir, 'generations', f'.tmp-000001-{os.getpid()}')\n        try:\n            os.makedirs(_pre)\n        except OSError:\n            pass\n")
        edit(tree, D, "        except StateLocked as exc:\n", "        except StateLocked as exc:\n            import shutil as _sh\n            _g = os.path.join(run_settings.state_dir, 'generations')\n            for _n in os.listdir(_g):\n                if _n.startswith('.tmp-'):\n                    _sh.rmtree(os.path.join(_g, _n), ignore_errors=True)\n")
    elif fid == "recovery-keeps-uncommitted-generations":
        edit(tree, G, "            if name.startswith(_TMP_PREFIX) or never_current:", "            if name.startswith(_TMP_PREFIX):")
    elif fid == "lock-by-exclusive-file":
        edit(tree, G, "        fd = os.open(os.path.join(self.directory, \"lock\"), os.O_RDWR | os.O_CREAT, 0o644)\n        try:\n            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n        except OSError as exc:\n            os.close(fd)\n            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):\n                raise StateLocked(self.directory) from None\n            raise",
             "        try:\n            fd = os.open(os.path.join(self.directory, \"lock\"), os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)\n        except FileExistsError:\n            raise StateLocked(self.directory) from None")
        edit(tree, G, "        if self._lock_fd is not None:\n            os.close(self._lock_fd)", "        if self._lock_fd is not None:\n            os.unlink(os.path.join(self.directory, \"lock\"))\n            os.close(self._lock_fd)")
    else:
        raise SystemExit(f"unknown fault {fid}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated fault ids")
    args = parser.parse_args()
    faults = json.loads(FAULTS.read_text())
    ids = [f["id"] for f in faults if not args.only or f["id"] in args.only.split(",")]
    scratch = Path(tempfile.mkdtemp(prefix="state-mutants-")) / "tree"
    subprocess.run(["git", "worktree", "add", "-q", "--detach", str(scratch), "HEAD"], cwd=ROOT, check=True)
    for folder in ("collection", "tests"):       # this checkout's files as they are, committed or not
        shutil.copytree(ROOT / folder, scratch / folder, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["git", "add", "-A"], cwd=scratch, check=True)     # the working tree as it is, as the baseline
    subprocess.run(["git", "-c", "user.name=m", "-c", "user.email=m@m", "commit", "-qm", "baseline", "--allow-empty"],
                   cwd=scratch, check=True)
    env = dict(os.environ, PYTHONPATH=str(scratch))
    killed = applicable = 0
    try:
        baseline = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TESTS],
                                  cwd=scratch, env=env, capture_output=True, text=True)
        print(f"without a fault: {baseline.stdout.strip().splitlines()[-1]}")
        if baseline.returncode != 0:
            raise SystemExit("the tests fail without any fault: no kill would mean anything")
        for fid in ids:
            subprocess.run(["git", "checkout", "-q", "--", "."], cwd=scratch, check=True)
            if fid in NOT_APPLICABLE:
                print(f"{fid}: not applicable ({NOT_APPLICABLE[fid]})")
                continue
            apply(fid, scratch)
            applicable += 1
            done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *TESTS],
                                  cwd=scratch, env=env, capture_output=True, text=True)
            failed = [line for line in done.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
            if done.returncode == 0:
                print(f"{fid}: SURVIVED")
            else:
                killed += 1
                print(f"{fid}: killed by {failed[0].split()[1] if failed else f'exit {done.returncode}'}")
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(scratch)], cwd=ROOT)
    print(f"{killed} of {applicable} applicable faults killed")
    return 0 if killed == applicable else 1


if __name__ == "__main__":
    sys.exit(main())
