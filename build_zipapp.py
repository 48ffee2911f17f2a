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
4. resolves the project wheel's dependencies for every target into a local wheelhouse
   (`pex3 download`: pex's own resolver, so the same versions pex itself would pick);
5. slims the wheels there (see SLIM): drops files that exist only for building against or
   testing a dependency (lxml's C headers and Cython sources, test suites), which pex
   would otherwise unpack into PEX_ROOT on every first run. Each slimmed wheel keeps its
   name and, for every other entry, its contents, order, timestamp, permissions and
   compression method, and gets a regenerated RECORD: it depends only on the wheel PyPI
   served (not on the commit or the clock), so it is reproducible and every build of
   the pyz shares one extracted copy of it in PEX_ROOT;
6. runs pex on the wheelhouse alone (`--no-pypi --find-links`): `--venv`, wheels only, one
   `--platform` per target, shebang `/usr/bin/env python3`, timestamps fixed
   (`--no-use-system-time`, SOURCE_DATE_EPOCH = commit time), so two builds of one commit
   give one sha256 as long as PyPI serves the same dependency versions.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import csv
import fcntl
import fnmatch
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import venv
import zipfile
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
# The version is written in full (3.11.0: pex >= 2.1.67 reads a dotted PYVER) so that
# `python_full_version` markers can be evaluated: redis needs async-timeout below 3.11.3, and
# resolving for x.y.0 carries every such backport, which later patch releases simply ignore.
PLATFORMS = [f"manylinux2014_{arch}-cp-{py}.0-cp{py.replace('.', '')}"
             for py in PYTHONS for arch in ARCHES]
SHEBANG = "/usr/bin/env python3"

# Files dropped from dependency wheels before pex embeds them: only what exists for building
# against a package or for testing it, never anything run time imports or reads. pex unpacks
# every embedded wheel (all six targets) on a pyz's first run, and that run's cost is per
# file, so each file cut here is cut six times for native packages. fnmatch patterns on the
# path inside the wheel (`*` also matches `/`), keyed by the wheel's project name.
SLIM: dict[str, tuple[str, ...]] = {
    # C headers of libxml2/libxslt/lxml, Cython declarations (.pxd), sources (.pyx) and
    # includes (.pxi): lxml.get_include() and `cimport lxml...` use them, nothing at run time.
    "lxml": ("lxml/includes/*", "lxml/*.h", "lxml/*.pxd", "lxml/*.pyx", "lxml/*.pxi"),
    # Test suites and benchmarks: imported by their own test runners only.
    "jsonschema": ("jsonschema/tests/*", "jsonschema/benchmarks/*"),
    "jsonschema_specifications": ("jsonschema_specifications/tests/*",),
    "referencing": ("referencing/tests/*",),
}


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


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def slim_wheel(path: Path, patterns: tuple[str, ...]) -> int:
    """Rewrite the wheel at `path` in place without the files matching `patterns`; returns how
    many files were dropped (0: the wheel is left untouched).

    Deterministic: kept entries keep their order, names, timestamps, permissions and
    compression method, so the result depends only on the input wheel and `patterns` (the
    timestamps are the wheel's own, not SOURCE_DATE_EPOCH: pex caches an installed wheel by
    its hash, and a commit-independent hash lets every build share that cache entry). The
    RECORD is rewritten (sha256 and size of every kept file, RECORD itself without hash, as
    the wheel spec says), after checking every kept file against the original RECORD.
    Directory entries left empty are dropped with their contents.
    """
    with zipfile.ZipFile(path) as zin:
        infos = zin.infolist()
        dist_info = {i.filename.split("/")[0] for i in infos if i.filename.split("/")[0].endswith(".dist-info")}
        if len(dist_info) != 1:
            raise SystemExit(f"build_zipapp: {path.name}: expected one .dist-info, found {sorted(dist_info)}")
        record_name = f"{dist_info.pop()}/RECORD"
        record = {row[0]: (row[1], row[2])
                  for row in csv.reader(io.StringIO(zin.read(record_name).decode("utf-8"))) if row}

        def dropped(name: str) -> bool:
            if name.split("/")[0].endswith((".dist-info", ".data")):
                return False                       # metadata, scripts, headers of the dist: untouched
            return any(fnmatch.fnmatchcase(name, pat) for pat in patterns)

        files = [i for i in infos if not i.is_dir()]
        drop = {i.filename for i in files if dropped(i.filename)}
        if not drop:
            return 0
        kept_files = [i.filename for i in files if i.filename not in drop]
        kept = [i for i in infos
                if (i.is_dir() and any(f.startswith(i.filename) for f in kept_files))
                or (not i.is_dir() and i.filename not in drop)]
        if any(name.endswith((".jws", ".p7s")) and "/RECORD" in name for name in kept_files):
            raise SystemExit(f"build_zipapp: {path.name} is signed; slimming would break its signature")

        rows, payload = [], {}
        for info in kept:
            if info.is_dir():
                continue
            data = zin.read(info)
            payload[info.filename] = data
            if info.filename == record_name:
                rows.append((record_name, "", ""))
                continue
            digest = _record_hash(data)
            if record.get(info.filename) != (digest, str(len(data))):
                raise SystemExit(f"build_zipapp: {path.name}: {info.filename} does not match its RECORD entry")
            rows.append((info.filename, digest, str(len(data))))
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(rows)
        payload[record_name] = text.getvalue().encode("utf-8")

        tmp = path.with_name(path.name + ".slim")
        with zipfile.ZipFile(tmp, "w") as zout:
            for info in kept:
                out = zipfile.ZipInfo(info.filename, date_time=info.date_time)
                out.external_attr = info.external_attr
                out.create_system = info.create_system
                out.compress_type = info.compress_type
                if info.is_dir():
                    zout.writestr(out, b"")
                else:
                    zout.writestr(out, payload[info.filename])
    os.replace(tmp, path)
    return len(drop)


def wheel_project(filename: str) -> str:
    """The normalised project name of a wheel file name (`jsonschema_specifications-2025...`)."""
    return filename.split("-")[0].lower().replace(".", "_").replace("-", "_")


def slim_wheelhouse(wheelhouse: Path) -> None:
    total = 0
    for whl in sorted(wheelhouse.glob("*.whl")):
        patterns = SLIM.get(wheel_project(whl.name))
        if patterns:
            n = slim_wheel(whl, patterns)
            total += n
            log(f"slimmed {whl.name}: {n} build/test-only files dropped")
    log(f"slimmed the wheelhouse: {total} files dropped in all")


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
            resolve_args = [*[arg for plat in PLATFORMS for arg in ("--platform", plat)],
                            "--pip-version", PIP_VERSION,  # pex's vendored pip 20.3 mis-resolves extras (PEP 685)
                            "--no-build",                  # native deps as wheels for every target, never sdists
                            "--no-emit-warnings"]
            wheelhouse = Path(tmp) / "wheelhouse"
            log(f"resolving the dependencies for {len(PLATFORMS)} targets: {', '.join(PLATFORMS)}")
            run([str(py), "-m", "pex.cli", "download", str(wheel), "-d", str(wheelhouse), *resolve_args],
                env=env, cwd=tmp, stdout=sys.stderr)
            slim_wheelhouse(wheelhouse)
            output.parent.mkdir(parents=True, exist_ok=True)
            partial = output.with_name(output.name + ".partial")
            cmd = [str(py), "-m", "pex", str(wheel),
                   "--no-pypi", "--find-links", str(wheelhouse),  # the slimmed wheels, nothing else
                   "--console-script", "collection",
                   "--venv",
                   *resolve_args,
                   "--python-shebang", SHEBANG,
                   "--no-use-system-time",        # fixed zip timestamps: reproducible
                   *(extra_pex_args or []),
                   "-o", str(partial)]
            log("running pex on the wheelhouse")
            run(cmd, env=env, cwd=tmp, stdout=sys.stderr)
            if check:
                boot_check(partial, commit)
            os.replace(partial, output)
    return output


def embedded_commit(pyz: Path) -> str | None:
    """The commit written into a built pyz (collection/_commit.txt inside its wheel), if any."""
    try:
        with zipfile.ZipFile(pyz) as zf:
            for name in zf.namelist():
                if name.endswith("/collection/_commit.txt"):
                    return zf.read(name).decode().strip()
    except (OSError, zipfile.BadZipFile):
        return None
    return None


# --- collection-conformance.pyz: the suite alone -----------------------------------------
CONFORMANCE_SCHEMAS = ("conformance-case.schema.json", "harness-protocol.schema.json", "fixture.schema.json")
CONFORMANCE_MAIN = """import sys
from conformance.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def build_conformance(output: Path, commit: str = "HEAD") -> Path:
    """`collection-conformance.pyz`: the conformance package and the three schemas it reads,
    from the committed tree of `commit`, as a stdlib zipapp (pure Python, no collection).
    It needs `jsonschema` in the interpreter (inline mode); loopback mode also `trustme`,
    named in a clear error when missing. Deterministic: fixed timestamps, sorted entries."""
    with tempfile.TemporaryDirectory(prefix="conformance-pyz-") as tmp:
        archive = run(["git", "-C", str(ROOT), "archive", "--format=tar", commit, "conformance", "schemas"],
                      capture_output=True).stdout
        staged = Path(tmp)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            members = [m for m in tar.getmembers()
                       if m.name.startswith("conformance/") or m.name in tuple(f"schemas/{n}" for n in CONFORMANCE_SCHEMAS)]
            tar.extractall(staged, members=members, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        entries: dict[str, bytes] = {"__main__.py": CONFORMANCE_MAIN.encode("utf-8")}
        for path in sorted((staged / "conformance").rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts:
                entries[path.relative_to(staged).as_posix()] = path.read_bytes()
        for name in CONFORMANCE_SCHEMAS:
            entries[f"conformance/schemas/{name}"] = (staged / "schemas" / name).read_bytes()
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_suffix(output.suffix + ".part")
    with open(partial, "wb") as raw:
        raw.write(b"#!/usr/bin/env python3\n")
        with zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as zf:
            for name in sorted(entries):
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                info.external_attr = 0o644 << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                zf.writestr(info, entries[name])
    partial.chmod(0o755)
    partial.replace(output)
    return output


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", type=Path, default=ROOT / "dist" / "collection.pyz",
                    help="where to write the pyz (default: dist/collection.pyz)")
    ap.add_argument("--commit", default="HEAD", help="the commit to build (default: HEAD)")
    ap.add_argument("--no-check", action="store_true",
                    help="skip running the built pyz once under this interpreter")
    ap.add_argument("--conformance", action="store_true",
                    help="build dist/collection-conformance.pyz (the suite alone, no collection) instead")
    ap.add_argument("--pex-arg", action="append", default=[], metavar="ARG",
                    help="extra argument for pex, repeatable (for experiments; e.g. --pex-arg=--max-install-jobs=0)")
    args = ap.parse_args(argv)
    if sys.version_info < (3, 11):
        ap.error("needs Python 3.11 or newer")
    if args.conformance:
        default = ROOT / "dist" / "collection.pyz"
        target = ROOT / "dist" / "collection-conformance.pyz" if args.output == default else args.output
        out = build_conformance(target.resolve(), args.commit)
        print(f"{out}  {out.stat().st_size} bytes  sha256 {sha256(out)}")
        return 0
    out = build(args.output.resolve(), args.commit, check=not args.no_check,
                extra_pex_args=args.pex_arg)
    print(f"{out}  {out.stat().st_size} bytes  sha256 {sha256(out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
