#!/usr/bin/env python3
"""Build `dist/collection.pyz`: one file that runs with `python3 collection.pyz ...`.

    python3 build_zipapp.py            # -> dist/collection.pyz (the committed HEAD)

Operators copy one file to servers running CPython 3.11, 3.12 or 3.13 on x86_64 or aarch64
Linux. lxml and rpds-py are native, so the stdlib `zipapp` cannot carry them; pex can: the
pyz holds a wheel of each native dependency for every target below, and on its first run
it unpacks the ones matching the interpreter into a venv under PEX_ROOT (default
~/.cache/pex), which later runs reuse.

What it does, needing nothing but python3 (3.11+), git and access to PyPI:

1. installs its build tools (pinned pex and setuptools) into a private venv under
   `build/zipapp/tools` the first time;
2. exports the committed tree of HEAD (`git archive`) into a staging directory and writes
   the commit into it as `collection/_commit.txt` (read by `collection/buildinfo.py`); the
   working tree is never touched, and uncommitted changes are not part of the build;
3. builds the project wheel from the staged copy (pyproject decides what ships: the
   `collection` and `conformance` packages and `schemas/` as `collection.schemas`; its
   `dependencies` become the wheel's requirements, which pex resolves for every target);
4. runs pex: `--venv`, wheels only, one `--platform` per target, shebang
   `/usr/bin/env python3`, timestamps fixed (`--no-use-system-time`, SOURCE_DATE_EPOCH =
   commit time), so two builds of one commit give one sha256 as long as PyPI serves the
   same dependency versions.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
WORK = ROOT / "build" / "zipapp"          # build/ is gitignored
TOOLS = WORK / "tools"                    # private venv holding the build tools
PEX_CACHE = WORK / "pex-root"             # pex's download/build cache for builds

# Pinned so that the same commit builds the same bytes (the pex version shapes the file).
BUILD_REQUIREMENTS = ["pex==2.105.2", "setuptools==84.2.1"]

# The pip pex resolves with. Pex's default (its vendored pip 20.3.4) does not normalise extra
# names, so `lxml[html_clean]` (from justext, via trafilatura) silently lost lxml_html_clean
# and the pyz refused to boot. Pinned, like the tools above, for reproducibility.
PIP_VERSION = "26.2.1"

PYTHONS = ["3.11", "3.12", "3.13"]
ARCHES = ["x86_64", "aarch64"]
# manylinux2014 = glibc 2.17 and newer: every supported server; lxml and rpds-py publish
# wheels for it on both architectures.
PLATFORMS = [f"manylinux2014_{arch}-cp-{py.replace('.', '')}-cp{py.replace('.', '')}"
             for py in PYTHONS for arch in ARCHES]
SHEBANG = "/usr/bin/env python3"


def log(msg: str) -> None:
    print(f"build_zipapp: {msg}", file=sys.stderr, flush=True)


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, **kw)


def git(*args: str) -> str:
    return run(["git", "-C", str(ROOT), *args], capture_output=True, text=True).stdout.strip()


@contextlib.contextmanager
def locked(path: Path):
    """Serialise concurrent builds sharing build/zipapp (tools venv, caches)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def tools_python() -> Path:
    """The private build venv's python, creating it and installing the pinned tools if needed."""
    py = TOOLS / "bin" / "python"
    stamp = TOOLS / "requirements.txt"
    wanted = "\n".join(BUILD_REQUIREMENTS) + "\n"
    if py.exists() and stamp.exists() and stamp.read_text() == wanted:
        return py
    log(f"installing build tools into {TOOLS.relative_to(ROOT)}: {' '.join(BUILD_REQUIREMENTS)}")
    if TOOLS.exists():
        shutil.rmtree(TOOLS)
    venv.EnvBuilder(with_pip=True, clear=True).create(TOOLS)
    run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", *BUILD_REQUIREMENTS])
    stamp.write_text(wanted)
    return py


def stage(commit: str, dest: Path) -> None:
    """The committed tree of `commit` in `dest`, plus collection/_commit.txt."""
    archive = run(["git", "-C", str(ROOT), "archive", "--format=tar", commit], capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        if hasattr(tarfile, "data_filter"):      # 3.11.4+
            tar.extractall(dest, filter="data")
        else:
            tar.extractall(dest)
    (dest / "collection" / "_commit.txt").write_text(commit + "\n", encoding="utf-8")


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def boot_check(pyz: Path, commit: str) -> None:
    """Run the fresh pyz once (`--version`, empty PEX_ROOT) under this interpreter when it is
    one of the targets: a pyz whose dependencies do not resolve at boot is never shipped."""
    import platform
    if f"{sys.version_info[0]}.{sys.version_info[1]}" not in PYTHONS or platform.machine() not in ARCHES:
        log("boot check skipped: this interpreter is not one of the targets")
        return
    python = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    with tempfile.TemporaryDirectory(dir=WORK, prefix="check-") as tmp:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "PEX_ROOT": tmp}
        proc = subprocess.run([python, "-I", str(pyz), "--version"], env=env, cwd=tmp,
                              capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 or commit not in proc.stdout:
        raise SystemExit(f"build_zipapp: the built pyz does not boot under {python}:\n"
                         f"{proc.stdout}{proc.stderr[-4000:]}")
    log(f"boot check: {proc.stdout.strip()}")


def build(output: Path, commit: str = "HEAD", check: bool = True,
          extra_pex_args: list[str] | None = None) -> Path:
    commit = git("rev-parse", "--verify", f"{commit}^{{commit}}")
    epoch = git("log", "-1", "--format=%ct", commit)
    if git("status", "--porcelain", "--untracked-files=no"):
        log("note: the working tree has uncommitted changes; they are NOT in the build "
            f"(building commit {commit[:12]})")
    env = {**os.environ, "SOURCE_DATE_EPOCH": epoch, "PEX_ROOT": str(PEX_CACHE),
           "PYTHONHASHSEED": "0"}
    for var in ("PEX_PYTHON", "PEX_PYTHON_PATH", "PEX_VERBOSE", "PEX_MODULE", "PEX_SCRIPT"):
        env.pop(var, None)

    with locked(WORK / ".lock"):
        py = tools_python()
        with tempfile.TemporaryDirectory(dir=WORK, prefix="stage-") as tmp:
            src, wheels = Path(tmp) / "src", Path(tmp) / "wheels"
            src.mkdir()
            stage(commit, src)
            log(f"building the project wheel of {commit[:12]}")
            run([str(py), "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "--no-deps",
                 "--no-build-isolation", "-w", str(wheels), str(src)], env=env, cwd=tmp,
                stdout=subprocess.DEVNULL)
            (wheel,) = wheels.glob("collection-*.whl")
            output.parent.mkdir(parents=True, exist_ok=True)
            partial = output.with_name(output.name + ".partial")
            cmd = [str(py), "-m", "pex", str(wheel),
                   "--console-script", "collection",
                   "--venv",
                   *[arg for plat in PLATFORMS for arg in ("--platform", plat)],
                   "--python-shebang", SHEBANG,
                   "--pip-version", PIP_VERSION,  # pex's vendored pip 20.3 mis-resolves extras (PEP 685)
                   "--no-build",                  # native deps as wheels for every target, never sdists
                   "--no-use-system-time",        # fixed zip timestamps: reproducible
                   "--no-emit-warnings",
                   *(extra_pex_args or []),
                   "-o", str(partial)]
            log(f"running pex for {len(PLATFORMS)} targets: {', '.join(PLATFORMS)}")
            run(cmd, env=env, cwd=tmp, stdout=sys.stderr)
            if check:
                boot_check(partial, commit)
            os.replace(partial, output)
    return output


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", type=Path, default=ROOT / "dist" / "collection.pyz",
                    help="where to write the pyz (default: dist/collection.pyz)")
    ap.add_argument("--commit", default="HEAD", help="the commit to build (default: HEAD)")
    ap.add_argument("--no-check", action="store_true",
                    help="skip running the built pyz once under this interpreter")
    ap.add_argument("--pex-arg", action="append", default=[], metavar="ARG",
                    help="extra argument for pex, repeatable (for experiments; e.g. --pex-arg=--max-install-jobs=0)")
    args = ap.parse_args(argv)
    if sys.version_info < (3, 11):
        ap.error("needs Python 3.11 or newer")
    out = build(args.output.resolve(), args.commit, check=not args.no_check,
                extra_pex_args=args.pex_arg)
    print(f"{out}  {out.stat().st_size} bytes  sha256 {sha256(out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
