#!/usr/bin/env python3
"""Build `dist/collection.pyz`: one file that runs with `python3 collection.pyz ...`.

    python3 build_zipapp.py                      # -> dist/collection.pyz (the committed HEAD)
    python3 build_zipapp.py --with-build         # -> dist/collection-build-<cpXY>-<arch>.pyz
    python3 build_zipapp.py --with-build --target all    # the build file of every target

Operators copy one file to servers running CPython 3.11, 3.12 or 3.13 on x86_64 or aarch64
Linux. lxml, rpds-py, brotli and zstandard are native, so the stdlib `zipapp` cannot carry
them alone: the pyz holds a wheel of each dependency for every target below (unpacked
under `.deps/<wheel>/`), and its `__main__.py` (zipapp_main.py, stdlib only) unpacks, on
the first run under an interpreter, only the wheels of that interpreter's target into a
cache (D-74) and execs a small venv made of them; later runs reuse it.

`collection build` needs DuckDB (about 25 MB per target), which the default pyz does not
carry (D-73): `--with-build` makes a file for ONE target holding everything collection.pyz
holds for that target plus duckdb, so shipping one file to a server stays practical.

What it does, needing nothing but python3 (3.11+), git and access to PyPI:

1. installs its build tools (pinned pex and setuptools) into a private venv under
   `build/zipapp/tools` the first time;
2. exports the committed tree of HEAD (`git archive`) into a staging directory and writes
   the commit into it as `collection/_commit.txt` (read by `collection/buildinfo.py`); the
   working tree is never touched, and uncommitted changes are not part of the build;
3. builds the project wheel from the staged copy (pyproject decides what ships: the
   `collection` and `conformance` packages and `schemas/` as `collection.schemas`; its
   `dependencies` become the wheel's requirements);
4. resolves the project wheel's dependencies for each target on its own into a local
   wheelhouse (`pex3 download`, one `--platform` at a time: pex's resolver evaluates
   `python_full_version` markers, and one run per target says exactly which wheels that
   target gets); the build file adds the `build` extra's duckdb, resolved for glibc 2.28
   (DuckDB publishes no manylinux2014 wheels);
5. slims the wheels there (see SLIM): drops files that exist only for building against or
   testing a dependency, and zstandard's cffi backend, which no target loads. Each slimmed
   wheel keeps its name and, for every other entry, its contents, order, timestamp,
   permissions and compression method, and gets a regenerated RECORD: it depends only on
   the wheel PyPI served (not on the commit or the clock), so every build carrying it
   shares one unpacked copy of it in the cache;
6. writes the pyz itself: shebang `/usr/bin/env python3`, `__main__.py` with the manifest
   (targets -> wheels, each named by its sha256), then every wheel's files, entries in a
   fixed order with fixed timestamps, so two builds of one commit give one sha256 as long
   as PyPI serves the same dependency versions.
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
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
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
TARGETS = [f"cp{py.replace('.', '')}-{arch}" for py in PYTHONS for arch in ARCHES]   # cp311-x86_64, ...
# manylinux2014 = glibc 2.17 and newer: every supported server; lxml, rpds-py, brotli and
# zstandard publish wheels for it on both architectures. DuckDB publishes manylinux_2_28
# wheels only, so the build file needs glibc 2.28 (D-73).
GLIBC = (2, 17)
GLIBC_BUILD = (2, 28)
SHEBANG = "/usr/bin/env python3"
ENTRY = "collection.cli:main"
BOOT = ROOT / "zipapp_main.py"            # becomes the pyz's __main__.py


def platform_of(target: str, glibc: tuple[int, int]) -> str:
    """pex's --platform for a target. The version is written in full (3.11.0: pex >= 2.1.67
    reads a dotted PYVER) so that `python_full_version` markers can be evaluated: redis needs
    async-timeout below 3.11.3, and resolving for x.y.0 carries every such backport, which
    later patch releases simply ignore."""
    tag, arch = target.split("-", 1)
    py = f"{tag[2]}.{tag[3:]}"
    plat = "manylinux2014" if glibc == (2, 17) else f"manylinux_{glibc[0]}_{glibc[1]}"
    return f"{plat}_{arch}-cp-{py}.0-{tag}"


def local_target() -> str | None:
    """This interpreter's target, if it is one."""
    key = f"cp{sys.version_info[0]}{sys.version_info[1]}-{os.uname().machine}"
    return key if key in TARGETS and sys.platform.startswith("linux") else None


# Files dropped from dependency wheels before they are embedded: only what exists for building
# against a package or for testing it, and backends no target loads; never anything run time
# imports or reads. A first run unpacks its target's wheels, and its cost is per file and per
# byte, so each file cut here is cut from every first run (and from the pyz six times).
# fnmatch patterns on the path inside the wheel (`*` also matches `/`), keyed by the wheel's
# project name.
SLIM: dict[str, tuple[str, ...]] = {
    # C headers of libxml2/libxslt/lxml, Cython declarations (.pxd), sources (.pyx) and
    # includes (.pxi): lxml.get_include() and `cimport lxml...` use them, nothing at run time.
    "lxml": ("lxml/includes/*", "lxml/*.h", "lxml/*.pxd", "lxml/*.pyx", "lxml/*.pxi"),
    # Test suites and benchmarks: imported by their own test runners only.
    "jsonschema": ("jsonschema/tests/*", "jsonschema/benchmarks/*"),
    "jsonschema_specifications": ("jsonschema_specifications/tests/*",),
    "referencing": ("referencing/tests/*",),
    # zstandard's cffi backend (12 MB per target): `import zstandard` loads the C backend
    # (backend_c) and falls back to cffi only when that fails or PYTHON_ZSTANDARD_IMPORT_POLICY
    # asks for it; the C backend ships for every target (tests/test_packaging.py decodes a
    # zstd frame from the pyz) and cffi itself is not a dependency here.
    "zstandard": ("zstandard/_cffi.*", "zstandard/backend_cffi.py"),
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


def boot_check(pyz: Path, commit: str, targets: list[str]) -> None:
    """Run the fresh pyz once (`--version`, empty cache) under this interpreter when it is
    one of the file's targets: a pyz whose dependencies do not resolve at boot is never shipped."""
    if local_target() not in targets:
        log("boot check skipped: this interpreter is not one of the file's targets")
        return
    python = os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)
    with tempfile.TemporaryDirectory(dir=WORK, prefix="check-") as tmp:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "COLLECTION_PYZ_ROOT": tmp}
        proc = subprocess.run([python, "-I", str(pyz), "--version"], env=env, cwd=tmp,
                              capture_output=True, text=True, timeout=300)
    if proc.returncode != 0 or commit not in proc.stdout:
        raise SystemExit(f"build_zipapp: the built pyz does not boot under {python}:\n"
                         f"{proc.stdout}{proc.stderr[-4000:]}")
    log(f"boot check: {proc.stdout.strip()}")


def build_requirements() -> list[str]:
    """The `build` extra of pyproject.toml (duckdb): what the build file adds."""
    import tomllib
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return list(tomllib.load(fh)["project"]["optional-dependencies"]["build"])


def wheel_key(path: Path) -> str:
    """The cache directory name of a wheel: project, version and the first 16 hex digits of
    the (slimmed) wheel's sha256, so every build carrying the same wheel shares its copy."""
    project, version = path.name.split("-")[:2]
    return f"{project}-{version}-{sha256(path)[:16]}"


def assemble(output: Path, wheelhouse: Path, targets: dict[str, list[str]], glibc: tuple[int, int],
             epoch: int) -> None:
    """Write the pyz: shebang, __main__.py (zipapp_main.py with the manifest), then each wheel's
    files under .deps/<wheel>/, wheels sorted by name and each in its own entry order. Every
    entry has a fixed timestamp (the wheel's own; the commit's for __main__.py) and mode, so
    the bytes depend only on the commit and the wheels."""
    names = sorted({name for wheels in targets.values() for name in wheels})
    keys = {name: wheel_key(wheelhouse / name) for name in names}
    body = {"entry": ENTRY, "glibc": list(glibc),
            "targets": {t: sorted(keys[n] for n in wheels) for t, wheels in sorted(targets.items())},
            "wheels": {keys[n]: n for n in names}}
    boot = BOOT.read_text(encoding="utf-8")
    build_id = hashlib.sha256((boot + json.dumps(body, sort_keys=True)).encode("utf-8")).hexdigest()
    manifest = {"build": build_id, **body}
    placeholder = "MANIFEST = {}"
    if boot.count(placeholder) != 1:
        raise SystemExit(f"build_zipapp: {BOOT.name} must hold exactly one {placeholder!r}")
    main_py = boot.replace(placeholder, "MANIFEST = " + json.dumps(manifest, sort_keys=True, indent=1))
    stamp = time.gmtime(max(epoch, 315532800))[:6]          # zip timestamps start in 1980
    output.parent.mkdir(parents=True, exist_ok=True)
    with open(output, "wb") as raw:
        raw.write(f"#!{SHEBANG}\n".encode())
        with zipfile.ZipFile(raw, "w", zipfile.ZIP_DEFLATED) as zout:
            info = zipfile.ZipInfo("__main__.py", date_time=stamp)
            info.external_attr, info.create_system, info.compress_type = 0o644 << 16, 3, zipfile.ZIP_DEFLATED
            zout.writestr(info, main_py.encode("utf-8"))
            for name in names:
                with zipfile.ZipFile(wheelhouse / name) as zin:
                    for member in zin.infolist():
                        if member.is_dir():
                            continue
                        out = zipfile.ZipInfo(f".deps/{name}/{member.filename}", date_time=member.date_time)
                        mode = (member.external_attr >> 16) & 0o777
                        out.external_attr = ((mode or 0o644) | 0o100000) << 16
                        out.create_system, out.compress_type = 3, zipfile.ZIP_DEFLATED
                        zout.writestr(out, zin.read(member))
    output.chmod(0o755)


def build(output: Path, commit: str = "HEAD", check: bool = True,
          targets: list[str] | None = None, with_build: bool = False) -> Path:
    """The pyz of `commit` for `targets` (default: all six); with_build adds the `build` extra
    (duckdb) and raises the glibc floor to DuckDB's."""
    targets = list(targets or TARGETS)
    commit = git("rev-parse", "--verify", f"{commit}^{{commit}}")
    epoch = git("log", "-1", "--format=%ct", commit)
    if git("status", "--porcelain", "--untracked-files=no"):
        log("note: the working tree has uncommitted changes; they are NOT in the build "
            f"(building commit {commit[:12]})")
    env = {**os.environ, "SOURCE_DATE_EPOCH": epoch, "PEX_ROOT": str(PEX_CACHE),
           "PYTHONHASHSEED": "0"}
    for var in ("PEX_PYTHON", "PEX_PYTHON_PATH", "PEX_VERBOSE", "PEX_MODULE", "PEX_SCRIPT"):
        env.pop(var, None)
    common = ["--pip-version", PIP_VERSION,  # pex's vendored pip 20.3 mis-resolves extras (PEP 685)
              "--no-build",                  # native deps as wheels for every target, never sdists
              "--no-emit-warnings"]

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
            wheelhouse = Path(tmp) / "wheelhouse"
            wheelhouse.mkdir()
            jobs = []                                  # (target, requirements, platform)
            for target in targets:
                jobs.append((target, [str(wheel)], platform_of(target, GLIBC)))
                if with_build:
                    jobs.append((target, build_requirements(), platform_of(target, GLIBC_BUILD)))

            def resolve(job: tuple[str, list[str], str]) -> Path:
                _target, reqs, plat = job
                dest = Path(tmp) / "resolve" / f"{len(reqs)}-{plat}"
                run([str(py), "-m", "pex.cli", "download", *reqs, "-d", str(dest), "--platform", plat,
                     *common], env=env, cwd=tmp, stdout=sys.stderr)
                return dest

            log(f"resolving for {len(targets)} target(s), one pex3 download per platform: "
                + ", ".join(sorted({plat for _, _, plat in jobs})))
            # One resolve per platform says exactly which wheels that target gets; they are
            # independent (pex locks its own cache), so they run side by side.
            from concurrent.futures import ThreadPoolExecutor
            with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
                dests = list(pool.map(resolve, jobs))
            per_target: dict[str, list[str]] = {t: [] for t in targets}
            for (target, _reqs, _plat), dest in zip(jobs, dests):
                for whl in sorted(dest.glob("*.whl")):
                    if not (wheelhouse / whl.name).exists():
                        shutil.copy2(whl, wheelhouse / whl.name)
                    per_target[target].append(whl.name)
            slim_wheelhouse(wheelhouse)
            partial = output.with_name(output.name + ".partial")
            log(f"writing {output.name} for {', '.join(targets)}")
            assemble(partial, wheelhouse, per_target, GLIBC_BUILD if with_build else GLIBC, int(epoch))
            if check:
                boot_check(partial, commit, targets)
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
    ap.add_argument("--with-build", action="store_true",
                    help="build the file that ships `collection build` (D-73): everything collection.pyz "
                         "holds plus duckdb, for ONE target -> dist/collection-build-<cpXY>-<arch>.pyz")
    ap.add_argument("--target", action="append", default=[], metavar="cpXY-ARCH",
                    help="with --with-build: the target(s) to build, repeatable, or 'all' "
                         f"(default: this interpreter's); one of {', '.join(TARGETS)}")
    args = ap.parse_args(argv)
    if sys.version_info < (3, 11):
        ap.error("needs Python 3.11 or newer")
    if args.conformance:
        default = ROOT / "dist" / "collection.pyz"
        target = ROOT / "dist" / "collection-conformance.pyz" if args.output == default else args.output
        out = build_conformance(target.resolve(), args.commit)
        print(f"{out}  {out.stat().st_size} bytes  sha256 {sha256(out)}")
        return 0
    if args.target and not args.with_build:
        ap.error("--target goes with --with-build (collection.pyz always carries every target)")
    if args.with_build:
        targets = TARGETS if "all" in args.target else (args.target or [local_target()])
        if None in targets:
            ap.error("this interpreter is not a target; name one with --target")
        unknown = sorted(set(targets) - set(TARGETS))
        if unknown:
            ap.error(f"unknown target {unknown[0]}; targets: {', '.join(TARGETS)}")
        if len(targets) > 1 and args.output != ROOT / "dist" / "collection.pyz":
            ap.error("-o names one file; build several targets into dist/ without it")
        for target in targets:
            if not target.endswith("-x86_64"):
                # docs/packaging.md "What is proven": tests/test_packaging.py runs the x86_64 build files only
                log(f"note: the build file for {target} is built but not claimed: no test here has run it; "
                    "run its `build --help` on that server first, or install with pip (docs/packaging.md)")
            dest = (ROOT / "dist" / f"collection-build-{target}.pyz" if args.output == ROOT / "dist" / "collection.pyz"
                    else args.output)
            out = build(dest.resolve(), args.commit, check=not args.no_check, targets=[target], with_build=True)
            print(f"{out}  {out.stat().st_size} bytes  sha256 {sha256(out)}")
        return 0
    out = build(args.output.resolve(), args.commit, check=not args.no_check)
    print(f"{out}  {out.stat().st_size} bytes  sha256 {sha256(out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
