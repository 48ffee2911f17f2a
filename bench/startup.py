#!/usr/bin/env python3
"""Start-up and footprint of collection.pyz (and the build file), against the console script in the same run.

    .venv/bin/python bench/startup.py [--runs 15] [--first-runs 5] [--pyz dist/collection.pyz]
                                      [--build-pyz dist/collection-build-<target>.pyz] [--no-build]

Measures, interleaved round-robin so drift hits every row alike, the median wall time of:

  python -c pass                       the interpreter alone (floor)
  <venv>/bin/collection --help         the editable install's console script (the baseline)
  python -I collection.pyz --help      warm: the cache already holds this build's env
  python -I collection.pyz --help      first run: a fresh, empty cache each time
  ... and the same two rows for the build file (collection build's file, D-73)

and prints the file sizes, and the cache after one first run (bytes and files) beside the
console script's own footprint (the installed dependencies' files it imports from: the
site-packages distributions collection needs). `python` is the real interpreter behind this
venv (not a pyenv shim, whose own bash start would dominate). The files are built with
build_zipapp.py if missing or built from another commit, unless --no-build (to compare
builds: measure the given files as they are). Targets (issue 26): warm <= 0.30 s, first run
<= 2.5 s, cache <= 100 MB, file <= 80 MB.
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from build_zipapp import embedded_commit  # noqa: E402
TARGET_WARM = 0.30
TARGET_FIRST = 2.5
TARGET_CACHE = 100 * 10**6
TARGET_FILE = 80 * 10**6
# What the console script imports from site-packages for the same commands: the baseline of
# the cache's size (collection's own dependencies, as installed by pip).
CONSOLE_DISTS = ("urllib3", "lxml", "jsonschema", "jsonschema_specifications", "referencing", "rpds", "attrs",
                 "click", "cssselect", "warcio", "brotli", "_brotli", "zstandard", "redis", "six", "typing_extensions")


def real_python() -> str:
    base = getattr(sys, "_base_executable", None) or sys.executable
    return os.path.realpath(base)


def ensure_pyz(pyz: Path, *extra: str) -> None:
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    if pyz.exists() and (not head or embedded_commit(pyz) == head):
        return
    print(f"building {pyz} (missing or not from {head[:12]}) ...", file=sys.stderr)
    subprocess.run([sys.executable, str(ROOT / "build_zipapp.py"), *extra, "-o", str(pyz)], check=True,
                   stdout=subprocess.DEVNULL)


def console_footprint() -> tuple[int, int]:
    """(bytes, files) of the console script's dependencies in this venv's site-packages, plus
    collection's own package: what an installed copy reads from disk."""
    import sysconfig
    site = Path(sysconfig.get_paths()["purelib"])
    total = count = 0
    for entry in site.iterdir():
        name = entry.name.split("-")[0].split(".")[0].lower()
        if name in CONSOLE_DISTS:
            b, n = du(entry) if entry.is_dir() else (entry.stat().st_size, 1)
            total, count = total + b, count + n
    b, n = du(ROOT / "collection")
    return total + b, count + n


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


def local_target() -> str:
    return f"cp{sys.version_info[0]}{sys.version_info[1]}-{os.uname().machine}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pyz", type=Path, default=ROOT / "dist" / "collection.pyz")
    ap.add_argument("--build-pyz", type=Path, default=ROOT / "dist" / f"collection-build-{local_target()}.pyz",
                    help="the build file to measure beside it (D-73)")
    ap.add_argument("--python", default=real_python(), help="interpreter to run the pyz with")
    ap.add_argument("--runs", type=int, default=15, help="runs of each warm row")
    ap.add_argument("--first-runs", type=int, default=5, help="first runs (each on an empty cache)")
    ap.add_argument("--no-build", action="store_true",
                    help="measure the files as they are, even if built from another commit")
    args = ap.parse_args()

    files = {"collection.pyz": args.pyz.resolve(), "build file": args.build_pyz.resolve()}
    for label, path in files.items():
        if args.no_build:
            if not path.is_file():
                ap.error(f"--no-build: {path} does not exist")
        else:
            ensure_pyz(path, *(["--with-build"] if label == "build file" else []))
    py = args.python
    # The console script of the venv running this bench (the editable install's `collection`).
    console = Path(sys.executable).parent / "collection"
    if not console.exists():
        ap.error(f"no console script at {console}: run this with the venv's python (pip install -e .)")

    with tempfile.TemporaryDirectory(prefix="startup-bench-") as tmp:
        tmp_p = Path(tmp)
        cwd = tmp_p / "cwd"
        cwd.mkdir()
        home = tmp_p / "home"
        home.mkdir()
        base_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}
        rows: dict[str, tuple[list[str], dict[str, str]]] = {
            "python -c pass": ([py, "-c", "pass"], base_env),
            "console script --help": ([str(console), "--help"], base_env),
        }
        cache: dict[str, tuple[int, int]] = {}
        first: dict[str, list[float]] = {}
        for label, path in files.items():
            warm_root = tmp_p / f"warm-{len(cache)}"
            warm_env = {**base_env, "COLLECTION_PYZ_ROOT": str(warm_root)}
            cmd = [py, "-I", str(path), "--help"]
            # One untimed first run fills the warm cache and tells how much it holds.
            first[label] = [timed(cmd, warm_env, str(cwd))]
            cache[label] = du(warm_root)
            rows[f"{label} --help (warm)"] = (cmd, warm_env)
        for cmd, env in rows.values():      # warm the OS page cache for every row alike
            timed(cmd, env, str(cwd))

        samples: dict[str, list[float]] = {name: [] for name in rows}
        for i in range(max(args.runs, args.first_runs)):
            if i < args.runs:
                for name, (cmd, env) in rows.items():
                    samples[name].append(timed(cmd, env, str(cwd)))
            if i + 1 < args.first_runs:
                for label, path in files.items():
                    fresh = tmp_p / f"first_root_{i}"
                    first[label].append(timed([py, "-I", str(path), "--help"],
                                              {**base_env, "COLLECTION_PYZ_ROOT": str(fresh)}, str(cwd)))
                    shutil.rmtree(fresh)
        for label in files:
            samples[f"{label} --help (first run)"] = first[label]

    med = {name: statistics.median(v) for name, v in samples.items()}
    floor, console_med = med["python -c pass"], med["console script --help"]
    version = subprocess.run([py, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True,
                             text=True).stdout.strip()
    load = os.getloadavg()[0]
    print(f"interpreter: {py} (CPython {version}); console script: {console}; load average {load:.2f}"
          f"{' (not a quiet machine: times are inflated)' if load > 1.0 else ''}")
    cons_bytes, cons_files = console_footprint()
    print()
    print(f"{'footprint':<36} {'file MB':>8} {'cache MB':>9} {'cache files':>11}")
    print(f"{'console script (site-packages)':<36} {'-':>8} {cons_bytes / 1e6:9.1f} {cons_files:11,}")
    for label, path in files.items():
        b, n = cache[label]
        print(f"{label:<36} {path.stat().st_size / 1e6:8.1f} {b / 1e6:9.1f} {n:11,}")
    print()
    header = f"{'command':<36} {'runs':>4} {'median s':>9} {'min s':>7} {'max s':>7} {'x pass':>7} {'x console':>9}"
    print(header)
    print("-" * len(header))
    for name, vals in samples.items():
        print(f"{name:<36} {len(vals):>4} {med[name]:9.3f} {min(vals):7.3f} {max(vals):7.3f} "
              f"{med[name] / floor:7.1f} {med[name] / console_med:9.2f}")
    print()
    for label, path in files.items():
        warm, cold = med[f"{label} --help (warm)"], med[f"{label} --help (first run)"]
        size, cache_b = path.stat().st_size, cache[label][0]
        print(f"{label}: warm {warm:.3f} s (<= {TARGET_WARM:.2f}: {'OK' if warm <= TARGET_WARM else 'OVER'}), "
              f"first run {cold:.3f} s (<= {TARGET_FIRST:.1f}: {'OK' if cold <= TARGET_FIRST else 'OVER'}), "
              f"cache {cache_b / 1e6:.1f} MB (<= 100: {'OK' if cache_b <= TARGET_CACHE else 'OVER'}), "
              f"file {size / 1e6:.1f} MB (<= 80: {'OK' if size <= TARGET_FILE else 'OVER'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
