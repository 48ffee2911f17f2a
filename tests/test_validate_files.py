"""`collection validate` on hostile file names and directory entries (issue 24 point 8).

Every format (text, json, github, sarif, junit) shows a file name that is not UTF-8 with its
bytes escaped, never crashing; SARIF URIs percent-encode the bytes. In a directory argument, a
broken link, a link loop, a FIFO and an entry that cannot be read are errors (exit 2) named in
every format, and a FIFO never blocks. Real files, links, FIFOs and (for the unreadable entry)
a real process running under an unused uid, since root reads through chmod 000.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import tempfile
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from collection.cli import cli
from collection.commands.validate_formats import FORMATS, shown

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = (ROOT / "fixtures" / "recipes" / "council_decisions.json").read_bytes()
SARIF_SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json").read_text())
REPORT_SCHEMA = json.loads((ROOT / "schemas" / "validate-report.schema.json").read_text())

NOT_UTF8 = os.fsdecode(b"r\xff\xfe cipe.json")          # as the OS hands it over: surrogateescape


def invoke(*args):
    result = CliRunner().invoke(cli, ["validate", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


def _all_formats(*args) -> dict[str, object]:
    return {name: invoke("--format", name, *args) for name in FORMATS}


# --- names that are not UTF-8 ----------------------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_survives_a_file_name_that_is_not_utf8(tmp_path, fmt):
    """issue 24 point 8: a recipe whose name holds bytes 0xff 0xfe is checked and reported; the
    bytes appear as \\xff\\xfe, in every format."""
    path = os.path.join(str(tmp_path), NOT_UTF8)
    with open(os.fsencode(path), "wb") as handle:
        handle.write(EXAMPLE.replace(b'"retries": 2', b'"retries": 7'))
    result = invoke("--format", fmt, path)
    assert result.exit_code == 1
    out = result.stdout + result.stderr
    out.encode("utf-8")                                         # printable: no lone surrogate left
    if fmt == "sarif":                                          # SARIF names files by URI only
        assert "r%FF%FE%20cipe.json" in out
        return
    if fmt == "json":
        out = json.dumps(json.loads(out), ensure_ascii=False).replace("\\\\", "\\")
    assert "r\\xff\\xfe cipe.json" in out


def test_sarif_uri_percent_encodes_the_bytes_and_stays_valid(tmp_path):
    """issue 24 point 8: the SARIF artifact URI is the name's bytes percent-encoded (RFC 3986),
    and the log stays valid against the OASIS schema."""
    (tmp_path / "ok").mkdir()
    path = os.path.join(str(tmp_path), "ok", NOT_UTF8)
    with open(os.fsencode(path), "wb") as handle:
        handle.write(EXAMPLE.replace(b'"retries": 2', b'"retries": 7'))
    log = json.loads(invoke("--format", "sarif", os.path.join(str(tmp_path), "ok")).stdout)
    jsonschema.validate(log, SARIF_SCHEMA)
    uris = {a["location"]["uri"] for a in log["runs"][0]["artifacts"]}
    assert any(u.endswith("/ok/r%FF%FE%20cipe.json") for u in uris), uris
    assert log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] in uris


def test_json_report_names_the_file_as_printable_text_and_keeps_its_schema(tmp_path):
    """issue 24 point 8: the --json report's `file` is the shown name, valid UTF-8 text."""
    path = os.path.join(str(tmp_path), NOT_UTF8)
    with open(os.fsencode(path), "wb") as handle:
        handle.write(EXAMPLE)
    report = json.loads(invoke("--json", path).stdout)
    jsonschema.validate(report, REPORT_SCHEMA)
    assert report["files"][0]["file"] == shown(path) and report["files"][0]["file"].endswith("r\\xff\\xfe cipe.json")


def test_a_line_break_in_a_file_name_cannot_forge_a_report_line(tmp_path):
    """issue 24 point 8: a name holding a newline is one line of the text format, not two."""
    path = tmp_path / "a\nx.json:1:1: SCHEMA_TYPE at -: forged.json"
    path.write_bytes(EXAMPLE)
    result = invoke(str(path))
    assert result.exit_code == 0
    assert result.stdout.count("\n") == 1 and "\\x0a" in result.stdout


# --- directory entries that cannot be checked ----------------------------------------------------

@pytest.fixture
def hostile_tree(tmp_path):
    root = tmp_path / "recipes"
    (root / "sub").mkdir(parents=True)
    (root / "good.json").write_bytes(EXAMPLE)
    os.symlink("missing.json", root / "broken.json")
    os.symlink("loop.json", root / "loop.json")
    os.symlink("..", root / "sub" / "back")                     # a directory link leading upwards
    os.mkfifo(root / "pipe.json")
    (root / "notes.txt").write_text("not a recipe")
    return root


BAD = ("broken.json", "loop.json", "pipe.json", "sub/back")


def _run_with_a_watchdog(fn):
    """Run `fn` on a thread; fail (rather than hang the suite) if it blocks, as on a FIFO."""
    box: dict = {}
    thread = threading.Thread(target=lambda: box.setdefault("value", fn()), daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "validate blocked"
    return box["value"]


def test_broken_links_loops_and_fifos_are_errors_in_every_format(hostile_tree):
    """issue 24 point 8: exit 2, each bad entry named in every format; the good file still checked;
    nothing blocks on the FIFO (no writer ever opens it)."""
    results = _run_with_a_watchdog(lambda: _all_formats(str(hostile_tree)))
    for fmt, result in results.items():
        assert result.exit_code == 2, fmt
        out = result.stdout + result.stderr
        for name in BAD:
            assert str(hostile_tree / name) in out, (fmt, name)
    report = json.loads(results["json"].stdout)
    jsonschema.validate(report, REPORT_SCHEMA)
    by_name = {Path(e["file"]).relative_to(hostile_tree).as_posix(): e for e in report["files"]}
    assert sorted(by_name) == sorted([*BAD, "good.json"])
    assert by_name["good.json"]["registrable"] is True
    assert all("error" in by_name[name] and not by_name[name]["registrable"] for name in BAD)
    sarif = json.loads(results["sarif"].stdout)
    jsonschema.validate(sarif, SARIF_SCHEMA)
    notified = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert len(notified) == len(BAD) and sarif["runs"][0]["invocations"][0]["executionSuccessful"] is False
    junit = ET.fromstring(results["junit"].stdout)
    assert int(junit.get("errors")) == len(BAD)
    github = results["github"].stdout.splitlines()
    assert sum(1 for line in github if line.startswith("::error") and "title=unreadable" in line) == len(BAD)


def test_a_fifo_named_on_the_command_line_never_blocks(tmp_path):
    """issue 24 point 8: a FIFO given as FILE is opened without blocking and refused as not a
    regular file (exit 2); a pipe is read through `-`."""
    fifo = tmp_path / "recipe.json"
    os.mkfifo(fifo)
    result = _run_with_a_watchdog(lambda: invoke(str(fifo)))
    assert result.exit_code == 2 and str(fifo) in result.stderr


def test_a_directory_linked_twice_is_checked_once_and_is_not_a_loop(tmp_path):
    """A directory reached by two links (not upwards) is followed once: no error, no duplicate."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "r.json").write_bytes(EXAMPLE)
    root = tmp_path / "recipes"
    root.mkdir()
    os.symlink(shared, root / "a")
    os.symlink(shared, root / "b")
    report = json.loads(invoke("--json", str(root)).stdout)
    assert [Path(e["file"]).relative_to(root).as_posix() for e in report["files"]] == ["a/r.json"]
    assert invoke(str(root)).exit_code == 0


def _unused_uid() -> int:
    for uid in range(54321, 60000):
        try:
            pwd.getpwuid(uid)
        except KeyError:
            return uid
    raise AssertionError("no unused uid")


def _as_another_user(fn):
    """`fn()` in a forked process that, when we are root (CI), first drops to an unused uid and
    gid, so chmod 000 really stops reads; its result comes back as JSON over a pipe."""
    fn()                            # warm the imports while every file is readable
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:                    # the child: never returns into pytest
        status = 1
        try:
            os.close(read_end)
            if os.geteuid() == 0:
                uid = _unused_uid()
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            with os.fdopen(write_end, "w") as out:
                json.dump(fn(), out)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end) as handle:
        data = handle.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and data, "the child failed"
    return json.loads(data)


def test_unreadable_entries_are_errors_in_every_format():
    """issue 24 point 8: a directory that cannot be listed and a recipe that cannot be read are
    errors (exit 2) named in every format; the readable recipe is still checked. Run as a user
    who lacks the permission (root ignores chmod 000)."""
    base = tempfile.mkdtemp(prefix="validate-unreadable-")
    try:
        os.chmod(base, 0o755)
        root = Path(base) / "recipes"
        (root / "locked").mkdir(parents=True)
        (root / "locked" / "inside.json").write_bytes(EXAMPLE)
        (root / "good.json").write_bytes(EXAMPLE)
        (root / "secret.json").write_bytes(EXAMPLE)
        for path in (base, root):
            os.chmod(path, 0o755)
        os.chmod(root / "good.json", 0o644)
        os.chmod(root / "secret.json", 0o000)
        os.chmod(root / "locked", 0o000)

        def every_format():
            return {name: [r.exit_code, r.stdout + r.stderr] for name, r in _all_formats(str(root)).items()}

        results = _as_another_user(every_format)
        for fmt, (code, out) in results.items():
            assert code == 2, (fmt, out)
            assert str(root / "locked") in out and str(root / "secret.json") in out, (fmt, out)
            assert str(root / "locked" / "inside.json") not in out
        report = json.loads(results["json"][1])
        assert [e["registrable"] for e in report["files"]] == [True, False, False]   # good, locked, secret
    finally:
        for dirpath, dirnames, filenames in os.walk(base):
            for name in dirnames + filenames:
                os.chmod(os.path.join(dirpath, name), 0o755, follow_symlinks=False)
        shutil.rmtree(base)


def test_expand_keeps_its_interface_for_callers_without_problems(hostile_tree):
    """bench/validate.py calls expand(paths) alone: the bad entries are still listed and, read,
    give an error rather than a block or a crash."""
    from collection.commands.validate import expand, validate_files

    paths = _run_with_a_watchdog(lambda: expand((str(hostile_tree),)))
    entries, status = _run_with_a_watchdog(lambda: validate_files(tuple(paths)))
    assert status == 2
    assert {Path(e["file"]).name for e in entries if "error" in e} == {"broken.json", "loop.json", "pipe.json", "back"}
