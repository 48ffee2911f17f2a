"""The zipapp: `build_zipapp.py` builds one `collection.pyz` that runs under each CPython.

The pyz is built once per session from the current commit into a temporary directory
(or `dist/collection.pyz` is reused when it carries the current commit), then run the way
an operator runs it: `python3 -I collection.pyz ...` from an empty directory, with an empty
cache (COLLECTION_PYZ_ROOT) and HOME, under every local CPython 3.11 / 3.12 / 3.13 that can be found.
Figures (sizes, startup times) live in bench/startup.py, not here.
"""

from __future__ import annotations

import base64
import csv
import glob
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import collection

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from build_zipapp import embedded_commit  # noqa: E402  one reading of the pyz's commit
BUILD = ROOT / "build_zipapp.py"
RECIPE = ROOT / "fixtures" / "recipes" / "council_decisions.json"
# The demo corpus, recorded: a replayed run parses its listings and pages with lxml.
REPLAY_FIXTURE = ROOT / "fixtures" / "council_decisions" / "council_decisions.fixture.json.gz"
PYTHON_VERSIONS = ["3.11", "3.12", "3.13"]
TIMEOUT = 120   # a hang must fail the test, not stall CI


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()




def build(output: Path, commit: str) -> Path:
    # --no-check: the build's own boot check is what the tests below do, more thoroughly.
    proc = subprocess.run([sys.executable, str(BUILD), "--commit", commit, "--no-check", "-o", str(output)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"build_zipapp.py failed:\n{proc.stdout}\n{proc.stderr}"
    assert output.is_file()
    return output


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """(path of the pyz, commit it was built from) — built once per session."""
    commit = _git("rev-parse", "HEAD")
    dist = ROOT / "dist" / "collection.pyz"
    if embedded_commit(dist) == commit:
        return dist, commit
    return build(tmp_path_factory.mktemp("pyz") / "collection.pyz", commit), commit


def _works(python: str) -> bool:
    try:
        return subprocess.run([python, "-c", "pass"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def find_python(version: str) -> str | None:
    """A runnable CPython `version`: on PATH, else under pyenv's versions (its shims may refuse)."""
    candidates = [shutil.which(f"python{version}")]
    pyenv_root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv"))
    candidates += sorted(glob.glob(str(pyenv_root / "versions" / f"{version}.*" / "bin" / f"python{version}")),
                         reverse=True)
    for cand in candidates:
        if cand and _works(cand):
            return cand
    return None


def run_pyz(python: str, pyz: Path, args: list[str], pex_root: Path, cwd: Path,
            extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -I collection.pyz ARGS` as on a server: no project, no PYTHON* settings; the
    pyz's cache (D-74) in `pex_root`."""
    home = pex_root.parent / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
           "COLLECTION_PYZ_ROOT": str(pex_root), **(extra_env or {})}
    return subprocess.run([python, "-I", str(pyz), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)


def listed_commands(help_text: str) -> list[str]:
    """The subcommands a click group's --help lists under 'Commands:'."""
    _, _, tail = help_text.partition("\nCommands:\n")
    section = tail.split("\n\n", 1)[0]          # the examples section follows after a blank line
    return [m.group(1) for m in re.finditer(r"^  (\S+)", section, re.M)]


@pytest.fixture
def workdir(tmp_path):
    """An empty directory holding only a copy of the example recipe; nothing of the project."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    shutil.copy(RECIPE, cwd / RECIPE.name)
    return cwd


def test_pyz_is_a_python3_zipapp(built):
    pyz, _ = built
    with open(pyz, "rb") as fh:
        assert fh.readline() == b"#!/usr/bin/env python3\n"
    assert zipfile.is_zipfile(pyz)


def test_pyz_carries_native_wheels_for_every_target(built):
    """Every native dependency (lxml, rpds-py, ...) has a wheel per CPython minor per architecture."""
    pyz, _ = built
    with zipfile.ZipFile(pyz) as zf:
        deps = {name.split("/")[1] for name in zf.namelist()
                if name.startswith(".deps/") and name.split("/")[1].endswith(".whl")}
    native: dict[str, set[str]] = {}
    for dist in deps:
        project, *_, py_tag, abi_tag, plat_tag = dist[:-len(".whl")].split("-")
        if plat_tag != "any":
            native.setdefault(project, set()).add(dist)
    assert {"lxml", "rpds_py", "brotli", "zstandard"} <= set(native), sorted(deps)
    for project, wheels in native.items():
        for py in PYTHON_VERSIONS:
            tag = "cp" + py.replace(".", "")
            for arch in ("x86_64", "aarch64"):
                assert any((f"-{tag}-{tag}-" in w or "-abi3-" in w) and arch in w for w in wheels), \
                    f"no {project} wheel for {tag} {arch}: {sorted(wheels)}"
    assert any(d.startswith("collection-") for d in deps)


@pytest.mark.parametrize("version", PYTHON_VERSIONS)
def test_every_subcommand_runs_from_the_pyz(built, version, tmp_path, workdir):
    python = find_python(version)
    if python is None:
        pytest.skip(f"no CPython {version} on this machine")
    pyz, commit = built
    pex_root = tmp_path / "pex_root"          # empty: the first run extracts

    res = run_pyz(python, pyz, ["--version"], pex_root, workdir)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"collection {collection.__version__} (commit {commit})"

    res = run_pyz(python, pyz, ["--help"], pex_root, workdir)
    assert res.returncode == 0, res.stderr
    commands = listed_commands(res.stdout)
    assert "explain" in commands and "validate" in commands, res.stdout
    for name in commands:
        res = run_pyz(python, pyz, [name, "--help"], pex_root, workdir)
        assert res.returncode == 0, f"{name} --help: {res.stderr}"
        assert "usage:" in res.stdout.lower(), f"{name} --help printed no usage"  # click or argparse

    res = run_pyz(python, pyz, ["explain", "REQUEST_BUDGET_SUM"], pex_root, workdir)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("REQUEST_BUDGET_SUM")

    res = run_pyz(python, pyz, ["validate", RECIPE.name], pex_root, workdir)
    assert res.returncode == 0, f"validate: {res.stdout}\n{res.stderr}"

    # The clause texts ship inside the package (collection/clauses.md), so `explain REG-33` works.
    res = run_pyz(python, pyz, ["explain", "REG-33"], pex_root, workdir)
    assert res.returncode == 0 and res.stdout.startswith("REG-33"), res.stderr

    res = run_pyz(python, pyz, ["explain", "NO_SUCH_CODE"], pex_root, workdir)
    assert res.returncode == 2, "a usage error keeps exit code 2 through the pyz"

    # A whole run of the demo corpus, replayed: the Readers (lxml.etree, lxml.html) at work.
    res = run_pyz(python, pyz, ["run", RECIPE.name, "--state", str(tmp_path / "state"),
                                "--replay", str(REPLAY_FIXTURE), "--json"], pex_root, workdir)
    assert res.returncode == 0, f"replayed run: {res.stdout}\n{res.stderr}"
    record = json.loads(res.stdout)
    assert record["rows"] > 0 and record["coverage"]["fetched_this_run"] > 0, res.stdout
    assert (tmp_path / "state" / "current" / "relation.csv").is_file()


def _findings(fmt: str, out: str) -> list[tuple[str, int, int]]:
    """(code, line, column) of each refusal in one --format's output of `collection validate`."""
    if fmt == "json":
        return [(r["code"], r["line"], r["column"]) for f in json.loads(out)["files"] for r in f["refusals"]]
    if fmt == "sarif":
        return [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"],
                 r["locations"][0]["physicalLocation"]["region"]["startColumn"])
                for r in json.loads(out)["runs"][0]["results"]]
    pattern = {"text": r"^.*:(\d+):(\d+): ([A-Z_]+) at ", "junit": r"^.*:(\d+):(\d+): ([A-Z_]+) at ",
               "github": r"^::error file=.*,line=(\d+),col=(\d+),title=([A-Z_]+)::"}[fmt]
    return [(c, int(l), int(col)) for l, col, c in re.findall(pattern, out, re.M)]


@pytest.mark.parametrize("version", PYTHON_VERSIONS)
def test_validate_checks_a_transform_from_the_pyz_in_every_format(built, version, tmp_path, workdir):
    """Issue 25 point 2 (D-68, D-70): collection.pyz, which carries no DuckDB, checks a table's
    declared types under every interpreter and in every --format: the spec's transform is
    registrable; with page_ordinal left bare it is TRANSFORM_COLUMN_TYPE_MISMATCH at the bare
    name's line and column in the file, with the fix, as registration in process gives it."""
    from collection.recipe.registration import register_bytes

    python = find_python(version)
    if python is None:
        pytest.skip(f"no CPython {version} on this machine")
    pyz, _ = built
    good = (ROOT / "fixtures" / "datasets" / "council.json").read_text()
    bare = good.replace("cast(page_ordinal as integer) as page_ordinal", "page_ordinal")
    assert bare != good
    (workdir / "good.json").write_text(good)
    (workdir / "bare.json").write_text(bare)
    (want,) = register_bytes(bare.encode()).refusals
    assert want.code == "TRANSFORM_COLUMN_TYPE_MISMATCH" and want.pointer == "/tables/0/sql"
    assert bare.splitlines()[want.line - 1][want.column - 1:].startswith("page_ordinal")
    pex_root = tmp_path / "pex_root"
    for fmt in ("text", "json", "github", "sarif", "junit"):
        res = run_pyz(python, pyz, ["validate", "--format", fmt, "good.json"], pex_root, workdir)
        assert res.returncode == 0, f"{fmt}: {res.stdout}\n{res.stderr}"
        res = run_pyz(python, pyz, ["validate", "--format", fmt, "bare.json"], pex_root, workdir)
        assert res.returncode == 1, f"{fmt}: {res.stdout}\n{res.stderr}"
        assert _findings(fmt, res.stdout) == [(want.code, want.line, want.column)], f"{fmt}: {res.stdout}"
        assert "cast(page_ordinal as integer)" in res.stdout, f"{fmt}: {res.stdout}"


# What build_zipapp.py's SLIM drops from dependency wheels (build- and test-only files), and,
# for lxml, what must stay: every module and every data file it reads at run time.
_SLIMMED = re.compile(r"^(lxml/includes/|lxml/.*\.(h|pxd|pyx|pxi)$|jsonschema/(tests|benchmarks)/"
                      r"|jsonschema_specifications/tests/|referencing/tests/|zstandard/(_cffi\.|backend_cffi\.py))")


def _embedded_dists(zf: zipfile.ZipFile) -> dict[str, dict[str, zipfile.ZipInfo]]:
    """{wheel file name: {path inside the installed wheel: entry}} for every dependency in .deps/."""
    dists: dict[str, dict[str, zipfile.ZipInfo]] = {}
    for info in zf.infolist():
        parts = info.filename.split("/", 2)
        if parts[0] == ".deps" and len(parts) == 3 and parts[2] and not info.is_dir():
            dists.setdefault(parts[1], {})[parts[2]] = info
    return dists


def test_embedded_wheels_are_slimmed_and_their_records_match(built):
    """No build/test-only files in the dependency wheels; each slimmed wheel's RECORD lists
    exactly its files with their sha256 and size; lxml keeps its modules and data."""
    pyz, _ = built
    with zipfile.ZipFile(pyz) as zf:
        dists = _embedded_dists(zf)
        lxml_wheels = [name for name in dists if name.startswith("lxml-")]
        assert len(lxml_wheels) == 6, sorted(dists)
        for wheel, files in dists.items():
            if wheel.startswith("collection-"):
                continue
            leftovers = [path for path in files if _SLIMMED.match(path)]
            assert not leftovers, f"{wheel} still carries build/test-only files: {leftovers[:5]}"
            if not wheel.startswith(("lxml-", "jsonschema-", "jsonschema_specifications-", "referencing-",
                                     "zstandard-")):
                continue
            (record_path,) = [p for p in files if p.count("/") == 1 and p.endswith(".dist-info/RECORD")]
            def pex_own(path: str) -> bool:   # what pex adds when it installs a wheel
                return path.startswith((".layout.json", ".prefix/")) or ".pex-info/" in path

            rows = {row[0]: row[1:] for row in csv.reader(io.StringIO(zf.read(files[record_path]).decode()))
                    if row and not pex_own(row[0])}
            assert rows.pop(record_path) == ["", ""]
            listed = {p for p in files if not pex_own(p)}
            assert set(rows) == listed - {record_path}, f"{wheel}: RECORD and files differ"
            for path, (digest, size) in rows.items():
                data = zf.read(files[path])
                want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                assert (digest, size) == (want, str(len(data))), f"{wheel}: {path}"
        for wheel in lxml_wheels:
            files = dists[wheel]
            for must in ("lxml/__init__.py", "lxml/html/__init__.py", "lxml/isoschematron/__init__.py",
                         "lxml/isoschematron/resources/rng/iso-schematron.rng"):
                assert must in files, f"{wheel} lost {must}"
            assert sum(p.startswith("lxml/etree.cpython-") and p.endswith(".so") for p in files) == 1, wheel


def test_the_code_comes_from_the_pyz_not_from_the_checkout(built, tmp_path, workdir):
    """Under `-I` from an empty directory, every import resolves inside the pyz cache."""
    python = find_python("3.11") or sys.executable
    pyz, _ = built
    pex_root = tmp_path / "pex_root"
    code = "import collection, click, lxml.etree, jsonschema; print(collection.__file__); print(lxml.etree.__file__)"
    res = run_pyz(python, pyz, ["-c", code], pex_root, workdir, {"COLLECTION_PYZ_INTERPRETER": "1"})
    assert res.returncode == 0, res.stderr
    paths = res.stdout.split()
    assert len(paths) == 2
    # Every run-time part of the slimmed wheels still imports and works (lxml.html.clean
    # needs lxml_html_clean, which collection does not use).
    code = ("import lxml.etree, lxml.html, lxml.objectify, lxml.builder, lxml.sax, lxml.ElementInclude, "
            "lxml.cssselect, lxml.isoschematron, lxml.html.diff, lxml.html.formfill, lxml.html.builder, "
            "jsonschema, referencing, jsonschema_specifications, zstandard, brotli\n"
            "assert lxml.html.fromstring('<p>a<b>b</b></p>').text_content() == 'ab'\n"
            "jsonschema.validate(3, {'$schema': 'https://json-schema.org/draft/2020-12/schema', 'type': 'integer'})\n"
            "jsonschema.Draft202012Validator.check_schema({'type': 'integer'})\n"
            # WARC import's decoders: zstandard's C backend (its cffi one is slimmed away) and brotli.
            "assert zstandard.backend == 'cext', zstandard.backend\n"
            "assert zstandard.ZstdDecompressor().decompress(zstandard.ZstdCompressor().compress(b'z' * 99)) == b'z' * 99\n"
            "assert brotli.decompress(brotli.compress(b'b' * 99)) == b'b' * 99\n"
            "print('ok')")
    res = run_pyz(python, pyz, ["-c", code], pex_root, workdir, {"COLLECTION_PYZ_INTERPRETER": "1"})
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stderr
    for path in paths:
        assert Path(path).resolve().is_relative_to(pex_root.resolve()), path
        assert not Path(path).resolve().is_relative_to(ROOT)


def test_eight_concurrent_first_runs_on_an_empty_cache_all_succeed(built, tmp_path, workdir):
    python = find_python("3.11") or sys.executable
    pyz, _ = built
    pex_root = tmp_path / "pex_root"
    (tmp_path / "home").mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path / "home"),
           "LANG": "C.UTF-8", "COLLECTION_PYZ_ROOT": str(pex_root)}
    procs = [subprocess.Popen([python, "-I", str(pyz), "explain", "REQUEST_BUDGET_SUM"], cwd=workdir, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(8)]
    results = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        results.append((proc.returncode, out, err))
    failures = [r for r in results if r[0] != 0]
    assert not failures, failures
    assert len({out for _, out, _ in results}) == 1, "every run printed the same report"


def test_two_builds_of_one_commit_are_byte_identical(built, tmp_path):
    pyz, commit = built
    again = build(tmp_path / "again" / "collection.pyz", commit)
    assert _sha256(again) == _sha256(pyz)


def test_listed_commands_parses_click_help():
    text = "Usage: x\n\nOptions:\n  --help  Show.\n\nCommands:\n  explain   Print.\n  validate  Check.\n"
    assert listed_commands(text) == ["explain", "validate"]
    assert listed_commands("Usage: x\n") == []


# --- start-up: the CLI imports a command's module only when that command is used ----------
# (collection/cli.py LazyGroup; the figures are in bench/startup.py)

_HELP_PROBE = """
import sys
from click.testing import CliRunner
from collection.cli import cli
first = CliRunner().invoke(cli, ["--help"], prog_name="collection")
loaded = sorted(m for m in sys.modules if m.startswith("collection.commands."))
ctx = cli.make_context("collection", ["--help"], resilient_parsing=True)
for name in cli.list_commands(ctx):
    cli.get_command(ctx, name)
second = CliRunner().invoke(cli, ["--help"], prog_name="collection")
print(repr((first.exit_code, first.output, loaded, second.output)))
"""


def test_help_lists_every_command_without_importing_any():
    import ast as _ast

    proc = subprocess.run([sys.executable, "-c", _HELP_PROBE], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    code, lazy_help, loaded, eager_help = _ast.literal_eval(proc.stdout.strip())
    assert code == 0
    assert loaded == [], f"--help imported command modules: {loaded}"
    assert lazy_help == eager_help, "the lazy listing differs from the imported commands' own help"
    assert "validate" in listed_commands(lazy_help) and "explain" in listed_commands(lazy_help)


def test_the_fleet_gate_works_from_the_pyz(built, tmp_path, workdir, loopback, redis_server):
    """The redis client rides in the pyz: a live run through the Redis gate, from the one file."""
    from dataset_kit import page_body, source_doc
    from loopback import Reply

    loopback.route("/robots.txt", Reply(404, (("Content-Type", "text/plain"),), b""), host="a.example.com")
    loopback.route("/p/1", Reply(200, (("Content-Type", "application/json"),), page_body("1")), host="a.example.com")
    (workdir / "source.json").write_text(json.dumps(source_doc("pyz_gate", ["https://a.example.com/p/1"])))
    args = ["run", "source.json", "--state", str(tmp_path / "state"), "--gate", redis_server.url, "--json",
            "--ca-bundle", loopback.ca_pem_path, *[a for f in loopback.resolve_flags("a.example.com")
                                                   for a in ("--resolve", f)]]
    res = run_pyz(sys.executable, built[0], args, tmp_path / "pex_root", workdir)
    assert res.returncode == 0, f"{res.stdout}\n{res.stderr}"
    assert json.loads(res.stdout)["coverage"]["fetched_this_run"] == 1
    import redis

    assert redis.Redis.from_url(redis_server.url).exists("collection:gate:{a.example.com}") == 1


def test_a_dataset_runs_from_the_pyz_and_commits_with_syncfs(built, tmp_path, workdir):
    """Group commit rides in the pyz (collection/store/groupsync.py reaches libc's syncfs
    through ctypes): a dataset of three sources replays from the one file, and on Linux >= 5.8
    the syncfs path, not the fsync fallback, is the one taken."""
    from dataset_kit import dataset_doc, fixture_for, pages, source_doc

    urls = {name: pages(f"{host}.example.com", name, 2) for name, host in (("x", "a"), ("y", "a"), ("z", "b"))}
    (workdir / "dataset.json").write_bytes(dataset_doc("pyz", *(source_doc(n, u) for n, u in urls.items())))
    (workdir / "fixture.json").write_text(json.dumps(fixture_for([u for us in urls.values() for u in us])))
    res = run_pyz(sys.executable, built[0], ["run", "dataset.json", "--state", str(tmp_path / "state"),
                                             "--replay", "fixture.json", "--json"], tmp_path / "pex_root", workdir)
    assert res.returncode == 0, f"{res.stdout}\n{res.stderr}"
    assert json.loads(res.stdout)["counts"]["ran"] == 3
    for name in urls:
        assert (tmp_path / "state" / name / "current" / "relation.csv").read_text().count("\n") == 3
    code = "from collection.store.groupsync import FilesystemSync; print(FilesystemSync.available() is not None)"
    res = run_pyz(sys.executable, built[0], ["-c", code], tmp_path / "pex_root", workdir, {"COLLECTION_PYZ_INTERPRETER": "1"})
    release = tuple(int(p) for p in os.uname().release.split("-")[0].split(".")[:2])
    expected = sys.platform.startswith("linux") and release >= (5, 8)
    assert res.returncode == 0 and res.stdout.strip() == str(expected), res.stderr


# --- issue 26 point 4: only the running target is unpacked; the cache's place (D-74) ---------

def pyz_manifest(pyz: Path) -> dict:
    """The manifest build_zipapp.py wrote into the pyz's __main__.py (targets -> wheel keys)."""
    with zipfile.ZipFile(pyz) as zf:
        text = zf.read("__main__.py").decode("utf-8")
    start = text.index("\nMANIFEST = ") + len("\nMANIFEST = ")
    return json.JSONDecoder().raw_decode(text, start)[0]


def _tree_size(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def local_target() -> str:
    return f"cp{sys.version_info[0]}{sys.version_info[1]}-{os.uname().machine}"


def test_a_first_run_unpacks_only_its_own_target_and_stays_small(built, tmp_path, workdir):
    """Issue 26 point 4: the file <= 80 MB; a first run unpacks the wheels of its interpreter's
    target and no other (no aarch64 lxml on x86_64, no cp312 wheel under 3.11), and the cache
    after one interpreter is <= 100 MB. The default file carries no DuckDB (D-73)."""
    pyz, _ = built
    assert pyz.stat().st_size <= 80 * 2**20, pyz.stat().st_size
    manifest = pyz_manifest(pyz)
    assert sorted(manifest["targets"]) == sorted(f"cp{v.replace('.', '')}-{a}" for v in PYTHON_VERSIONS
                                                 for a in ("x86_64", "aarch64"))
    assert not any(name.startswith("duckdb-") for name in manifest["wheels"].values()), "duckdb: D-73"
    cache = tmp_path / "cache"
    res = run_pyz(sys.executable, pyz, ["--version"], cache, workdir)
    assert res.returncode == 0, res.stderr
    unpacked = sorted(p.name for p in (cache / "wheels").iterdir())
    assert unpacked == sorted(manifest["targets"][local_target()])
    foreign = [n for n in unpacked if any(t in manifest["wheels"][n] for t in ("aarch64", "cp312", "cp313", "cp311")
                                          if t not in local_target())]
    assert not foreign, foreign
    assert _tree_size(cache) <= 100 * 2**20, _tree_size(cache)
    assert len(list((cache / "envs").iterdir())) == 1


def _bare_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir(exist_ok=True)
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "TMPDIR": str(tmpdir), **extra}


def _run_bare(pyz: Path, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-I", str(pyz), "--version"], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=TIMEOUT)


@pytest.mark.parametrize("home", ["unset", "missing", "a-file"])
def test_without_a_usable_home_the_cache_is_a_private_dir_in_tmp_and_home_is_untouched(built, tmp_path, workdir,
                                                                                        home):
    """D-74: HOME unset, missing or not a directory -> ($TMPDIR)/collection-pyz-<uid>, mode 0700;
    nothing is created under HOME, nor under the account's home from the password file."""
    import pwd

    pyz, commit = built
    env = _bare_env(tmp_path)
    if home == "missing":
        env["HOME"] = str(tmp_path / "no-such-home")
    elif home == "a-file":
        (tmp_path / "home-file").write_text("x")
        env["HOME"] = str(tmp_path / "home-file")
    passwd_cache = Path(pwd.getpwuid(os.getuid()).pw_dir) / ".cache" / "collection-pyz"
    existed = passwd_cache.exists()
    res = _run_bare(pyz, env, workdir)
    assert res.returncode == 0 and commit in res.stdout, res.stderr
    cache = Path(env["TMPDIR"]) / f"collection-pyz-{os.getuid()}"
    assert (cache / "wheels").is_dir() and (cache / "envs").is_dir()
    assert cache.stat().st_mode & 0o777 == 0o700
    assert passwd_cache.exists() == existed, "wrote to the home of the password file"
    if home == "missing":
        assert not (tmp_path / "no-such-home").exists()
    if home == "a-file":
        assert (tmp_path / "home-file").read_text() == "x"
    res = _run_bare(pyz, env, workdir)                     # the second run reuses it
    assert res.returncode == 0 and commit in res.stdout, res.stderr


@pytest.mark.parametrize("spoil", ["group-writable", "another-owner", "a-symlink"])
def test_a_shared_tmp_cache_that_is_not_private_is_refused(built, tmp_path, workdir, spoil):
    """D-74: the temp-dir fallback is used only if it is a real directory of this uid that no one
    else may write; otherwise the run stops (exit 70) naming COLLECTION_PYZ_ROOT, and unpacks nothing."""
    pyz, _ = built
    env = _bare_env(tmp_path)
    cache = Path(env["TMPDIR"]) / f"collection-pyz-{os.getuid()}"
    if spoil == "a-symlink":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        cache.symlink_to(tmp_path / "elsewhere")
    else:
        cache.mkdir()
        cache.chmod(0o777 if spoil == "group-writable" else 0o700)
        if spoil == "another-owner":
            if os.getuid() != 0:
                pytest.skip("only root can give a directory to another owner")
            os.chown(cache, 65534, -1)
    res = _run_bare(pyz, env, workdir)
    assert res.returncode == 70, (res.returncode, res.stdout, res.stderr)
    assert "COLLECTION_PYZ_ROOT" in res.stderr and str(cache) in res.stderr, res.stderr
    assert list(cache.iterdir()) == [] and (not (tmp_path / "elsewhere").exists()
                                           or list((tmp_path / "elsewhere").iterdir()) == [])


@pytest.mark.parametrize("variable", ["COLLECTION_PYZ_ROOT", "PEX_ROOT", "XDG_CACHE_HOME", "HOME"])
def test_the_cache_location_follows_the_documented_order(built, tmp_path, workdir, variable):
    """D-74: COLLECTION_PYZ_ROOT itself; PEX_ROOT/collection-pyz (deployments written for the
    pex-based builds keep working); $XDG_CACHE_HOME/collection-pyz; $HOME/.cache/collection-pyz."""
    pyz, commit = built
    base = tmp_path / "base"
    base.mkdir()
    env = _bare_env(tmp_path, **{variable: str(base)})
    expected = {"COLLECTION_PYZ_ROOT": base, "PEX_ROOT": base / "collection-pyz",
                "XDG_CACHE_HOME": base / "collection-pyz", "HOME": base / ".cache" / "collection-pyz"}[variable]
    res = _run_bare(pyz, env, workdir)
    assert res.returncode == 0 and commit in res.stdout, res.stderr
    assert (expected / "wheels").is_dir() and (expected / "envs").is_dir()
    assert not Path(env["TMPDIR"], f"collection-pyz-{os.getuid()}").exists()


def test_collection_conformance_starts_its_harness_from_the_pyz(built, tmp_path, workdir):
    """`collection conformance` runs its harness as `sys.executable -m ...`: from the pyz that is
    the cache's env python, which imports the pyz's code (and nothing of the system)."""
    pyz, _ = built
    code = "import sys, collection; print(sys.executable); print(collection.__file__)"
    res = run_pyz(sys.executable, pyz, ["-c", code], tmp_path / "cache", workdir,
                  {"COLLECTION_PYZ_INTERPRETER": "1"})
    assert res.returncode == 0, res.stderr
    exe, module = res.stdout.split()
    child = subprocess.run([exe, "-c", "import collection, lxml.etree; print(collection.__file__)"],
                           capture_output=True, text=True, timeout=TIMEOUT, cwd=workdir,
                           env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    assert child.returncode == 0 and child.stdout.strip() == module, child.stderr
    assert Path(module).resolve().is_relative_to((tmp_path / "cache").resolve())


# --- issue 25 point 5: the build file (D-73) ---------------------------------------------------

def target_of(version: str) -> str:
    return f"cp{version.replace('.', '')}-{os.uname().machine}"


@pytest.fixture(scope="session")
def build_files(tmp_path_factory):
    """collection-build-<target>.pyz of HEAD for a target, built at most once per session. Only
    targets whose interpreter this machine has are built (each resolves and compresses DuckDB)."""
    commit = _git("rev-parse", "HEAD")
    made: dict[str, Path] = {}

    def get(target: str) -> Path:
        if target not in made:
            dist = ROOT / "dist" / f"collection-build-{target}.pyz"
            if embedded_commit(dist) == commit:
                made[target] = dist
            else:
                out = tmp_path_factory.mktemp("build-pyz") / dist.name
                proc = subprocess.run([sys.executable, str(BUILD), "--with-build", "--target", target, "--commit",
                                       commit, "--no-check", "-o", str(out)], capture_output=True, text=True,
                                      timeout=900)
                assert proc.returncode == 0, f"build_zipapp.py --with-build failed:\n{proc.stdout}\n{proc.stderr}"
                made[target] = out
        return made[target]
    return get


def _python_and_build_file(build_files, version: str) -> tuple[str, Path]:
    python = find_python(version)
    if python is None:
        pytest.skip(f"no CPython {version} on this machine")
    return python, build_files(target_of(version))


@pytest.mark.parametrize("version", PYTHON_VERSIONS)
def test_the_build_file_carries_one_target_and_runs_duckdb_from_itself(build_files, version, tmp_path, workdir):
    """D-73: one target; DuckDB imported from the file's own unpacked wheel (not the test venv's)
    and working; every command of collection.pyz runs from it too. For every target whose
    interpreter this machine has (docs/packaging.md "What is proven")."""
    python, build_file = _python_and_build_file(build_files, version)
    manifest = pyz_manifest(build_file)
    assert list(manifest["targets"]) == [target_of(version)]
    assert manifest["glibc"] == [2, 28]
    assert any(name.startswith("duckdb-") for name in manifest["wheels"].values())
    cache = tmp_path / "cache"
    code = ("import sys, duckdb; print(duckdb.__file__); print(duckdb.sql('select 40 + 2').fetchall()[0][0]); "
            "print(f'{sys.version_info[0]}.{sys.version_info[1]}')")
    res = run_pyz(python, build_file, ["-c", code], cache, workdir, {"COLLECTION_PYZ_INTERPRETER": "1"})
    assert res.returncode == 0, res.stderr
    where, answer, running = res.stdout.split()
    assert answer == "42" and running == version and Path(where).resolve().is_relative_to(cache.resolve()), res.stdout
    res = run_pyz(python, build_file, ["validate", RECIPE.name], cache, workdir)
    assert res.returncode == 0, f"validate: {res.stdout}\n{res.stderr}"


@pytest.mark.parametrize("version", PYTHON_VERSIONS)
def test_a_real_build_runs_from_the_build_file(build_files, version, tmp_path, workdir):
    """D-73: `collection build --help`, then the demo dataset (fixtures/datasets/council.json,
    issue 25's) replayed and built from the one file, under that file's interpreter, into typed
    Parquet and dataset.duckdb, read back with DuckDB."""
    import duckdb

    python, build_file = _python_and_build_file(build_files, version)
    res = run_pyz(python, build_file, ["build", "--help"], tmp_path / "cache", workdir)
    assert res.returncode == 0 and "usage:" in res.stdout.lower(), res.stderr

    shutil.copy(ROOT / "fixtures" / "datasets" / "council.json", workdir / "council.json")
    cache, state = tmp_path / "cache", tmp_path / "state"
    res = run_pyz(python, build_file, ["run", "council.json", "--state", str(state), "--replay",
                                       str(REPLAY_FIXTURE), "--json"], cache, workdir)
    assert res.returncode == 0, f"{res.stdout}\n{res.stderr}"
    res = run_pyz(python, build_file, ["build", "council.json", "--state", str(state)], cache, workdir)
    assert res.returncode == 0, f"{res.stdout}\n{res.stderr}"
    current = state / "build" / "current"
    record = json.loads((current / "build.json").read_text())
    (table,) = record["tables"]
    got = duckdb.sql(f"select count(*), typeof(any_value(page_ordinal)), typeof(any_value(page_fetched_at)) "
                     f"from read_parquet('{current / 'decisions.parquet'}')").fetchall()[0]
    assert got == (table["rows"], "BIGINT", "TIMESTAMP WITH TIME ZONE") and table["rows"] > 0, got
    with duckdb.connect(str(current / "dataset.duckdb"), read_only=True) as db:
        assert db.execute("select count(*) from decisions").fetchone()[0] == table["rows"]


def test_the_default_pyz_sends_build_to_the_build_file(built, tmp_path, workdir):
    """D-73: collection.pyz has no DuckDB; `build` says so in one line (exit 2) naming the build file."""
    shutil.copy(ROOT / "fixtures" / "datasets" / "council.json", workdir / "council.json")
    res = run_pyz(sys.executable, built[0], ["build", "council.json", "--state", str(tmp_path / "s")],
                  tmp_path / "cache", workdir)
    assert res.returncode == 2, (res.stdout, res.stderr)
    assert len(res.stderr.strip().splitlines()) == 1 and "collection-build-" in res.stderr, res.stderr
