#!/usr/bin/env python3
"""Startup of `collection.pyz --help`, first run and warm, against baselines in the same run.

    .venv/bin/python bench/startup.py [--runs 15] [--first-runs 5] [--pyz dist/collection.pyz] [--no-build]

Measures, interleaved round-robin so drift hits every row alike, the median wall time of:

  python -c pass                       the interpreter alone (floor)
  .venv/bin/collection --help          the installed console script (the developer's baseline)
  python -I collection.pyz --help      warm: PEX_ROOT already holds the extracted venv
  python -I collection.pyz --help      first run: a fresh, empty PEX_ROOT each time

`python` is the real interpreter behind this venv (not a pyenv shim, whose own bash start
would dominate). The pyz is built with build_zipapp.py if missing or built from another
commit, unless --no-build (to compare builds: measure the given pyz as it is). A first run's
cost is mostly pex creating files in PEX_ROOT, so the report counts them too. Targets:
warm <= 0.30 s, first run <= 2.5 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from build_zipapp import embedded_commit  # noqa: E402
TARGET_WARM = 0.30
TARGET_FIRST = 2.5


def real_python() -> str:
    base = getattr(sys, "_base_executable", None) or sys.executable
    return os.path.realpath(base)


def ensure_pyz(pyz: Path) -> None:
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    if pyz.exists() and (not head or embedded_commit(pyz) == head):
        return
    print(f"building {pyz} (missing or not from {head[:12]}) ...", file=sys.stderr)
    subprocess.run([sys.executable, str(ROOT / "build_zipapp.py"), "-o", str(pyz)], check=True,
                   stdout=subprocess.DEVNULL)


def du(path: Path) -> tuple[int, int]:
    """(bytes, regular files) under `path`, symlinks not counted."""
    total = count = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            p = os.path.join(dirpath, f)
            if not os.path.islink(p):
                total += os.lstat(p).st_size
                count += 1
    return total, count


def timed(cmd: list[str], env: dict[str, str], cwd: str) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pyz", type=Path, default=ROOT / "dist" / "collection.pyz")
    ap.add_argument("--python", default=real_python(), help="interpreter to run the pyz with")
    ap.add_argument("--runs", type=int, default=15, help="runs of each warm row")
    ap.add_argument("--first-runs", type=int, default=5, help="first runs (each on an empty PEX_ROOT)")
    ap.add_argument("--no-build", action="store_true",
                    help="measure --pyz as it is, even if built from another commit")
    args = ap.parse_args()

    pyz = args.pyz.resolve()
    if args.no_build:
        if not pyz.is_file():
            ap.error(f"--no-build: {pyz} does not exist")
    else:
        ensure_pyz(pyz)
    py = args.python
    # The console script of the venv running this bench (the editable install's `collection`).
    console = Path(sys.executable).parent / "collection"

    with tempfile.TemporaryDirectory(prefix="startup-bench-") as tmp:
        tmp_p = Path(tmp)
        cwd = tmp_p / "cwd"
        cwd.mkdir()
        home = tmp_p / "home"
        home.mkdir()
        base_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}
        warm_root = tmp_p / "warm_root"
        warm_env = {**base_env, "COLLECTION_PYZ_ROOT": str(warm_root)}

        pyz_cmd = [py, "-I", str(pyz), "--help"]
        rows: dict[str, tuple[list[str], dict[str, str]]] = {
            "python -c pass": ([py, "-c", "pass"], base_env),
        }
        if console.exists():
            rows[".venv/bin/collection --help"] = ([str(console), "--help"], base_env)
        rows["collection.pyz --help (warm)"] = (pyz_cmd, warm_env)

        # One untimed first run fills the warm cache and tells how much it holds.
        first_one = timed(pyz_cmd, warm_env, str(cwd))
        cache_bytes, cache_files = du(warm_root)
        for cmd, env in rows.values():      # warm the OS page cache for every row alike
            timed(cmd, env, str(cwd))

        samples: dict[str, list[float]] = {name: [] for name in rows}
        first: list[float] = [first_one]
        for i in range(max(args.runs, args.first_runs)):
            if i < args.runs:
                for name, (cmd, env) in rows.items():
                    samples[name].append(timed(cmd, env, str(cwd)))
            if i + 1 < args.first_runs:
                fresh = tmp_p / f"first_root_{i}"
                first.append(timed(pyz_cmd, {**base_env, "COLLECTION_PYZ_ROOT": str(fresh)}, str(cwd)))
                shutil.rmtree(fresh)
        samples["collection.pyz --help (first run)"] = first

    med = {name: statistics.median(v) for name, v in samples.items()}
    floor = med["python -c pass"]
    console_med = med.get(".venv/bin/collection --help")
    version = subprocess.run([py, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True,
                             text=True).stdout.strip()
    print(f"interpreter: {py} (CPython {version}); pyz: {pyz}")
    print(f"pyz size: {pyz.stat().st_size:,} bytes ({pyz.stat().st_size / 2**20:.1f} MiB); "
          f"PEX_ROOT after one first run: {cache_bytes / 2**20:.1f} MiB in {cache_files:,} files")
    print()
    header = f"{'command':<36} {'runs':>4} {'median s':>9} {'min s':>7} {'max s':>7} {'x pass':>7} {'x console':>9}"
    print(header)
    print("-" * len(header))
    for name, vals in samples.items():
        xc = f"{med[name] / console_med:9.2f}" if console_med else f"{'-':>9}"
        print(f"{name:<36} {len(vals):>4} {med[name]:9.3f} {min(vals):7.3f} {max(vals):7.3f} "
              f"{med[name] / floor:7.1f} {xc}")
    print()
    warm, cold = med["collection.pyz --help (warm)"], med["collection.pyz --help (first run)"]
    print(f"target warm <= {TARGET_WARM:.2f} s: {warm:.3f} s {'OK' if warm <= TARGET_WARM else 'OVER'}")
    print(f"target first run <= {TARGET_FIRST:.1f} s: {cold:.3f} s {'OK' if cold <= TARGET_FIRST else 'OVER'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
