"""`collection validate [--format text|json|github|sarif|junit] [--probe] FILE|DIR|-...`: is each recipe registrable?

Exit 0 when every file is registrable, 1 when any is refused, 2 for a usage error or a
file that cannot be read (GUIDE, "Interfaces users rely on").
"""

from __future__ import annotations

import errno
import os
import stat
import sys
from pathlib import Path

import click

from collection.commands import examples
from collection.commands.validate_formats import FORMATS, RENDERERS, shown
from collection.recipe.registration import register_bytes


def expand(paths: tuple[str, ...], problems: dict[str, str] | None = None) -> list[str]:
    """The files to check: a directory stands for every `*.json` under it (recursively, in
    sorted order, hidden entries skipped, linked directories followed once); `-` is standard
    input; anything else as given.

    What a directory holds that cannot be checked is not skipped: a `*.json` that is a broken
    link, a link loop, a FIFO, a socket or a device, a linked directory leading back to one of
    its ancestors, and a directory that cannot be listed are returned too, with the reason in
    `problems` (validate reports each and exits 2; a FIFO is never opened, so nothing blocks)."""
    problems = {} if problems is None else problems
    files: list[str] = []
    for path in paths:
        if path != "-" and os.path.isdir(path):
            found = _walk(path, problems)
            # A directory with nothing to check stays in the list and is reported unreadable
            # (exit 2): a CI job pointed at the wrong folder must not pass in silence.
            files.extend(found or [path])
        else:
            files.append(path)
    return files


def _walk(root: str, problems: dict[str, str]) -> list[str]:
    found: list[str] = []
    seen: set[tuple[int, int]] = set()
    # (directory, the (device, inode) of it and of each directory above it on this path)
    stack: list[tuple[str, frozenset[tuple[int, int]]]] = []
    try:
        top = os.stat(root)
    except OSError as exc:            # gone or changed since it was found to be a directory
        problems[root] = _reason(exc)
        return [root]
    seen.add((top.st_dev, top.st_ino))
    stack.append((root, frozenset({(top.st_dev, top.st_ino)})))
    while stack:
        directory, above = stack.pop()
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            problems[directory] = f"cannot list the directory: {_reason(exc)}"
            found.append(directory)
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = os.path.join(directory, entry.name)
            candidate = entry.name.endswith(".json")
            try:
                status = os.stat(path)
            except OSError as exc:
                if candidate:
                    problems[path] = _link_reason(path, exc)
                    found.append(path)
                continue
            if stat.S_ISDIR(status.st_mode):
                key = (status.st_dev, status.st_ino)
                if key in above:
                    problems[path] = "a symbolic link loop: it leads back to a directory above it"
                    found.append(path)
                elif key not in seen:     # a directory reached by two links is checked once
                    seen.add(key)
                    stack.append((path, above | {key}))
            elif candidate and not stat.S_ISREG(status.st_mode):
                problems[path] = f"not a regular file ({_kind(status.st_mode)}); it was not opened"
                found.append(path)
            elif candidate:
                found.append(path)
    return sorted(found)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


def _link_reason(path: str, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "a symbolic link loop"
    if exc.errno == errno.ENOENT and os.path.islink(path):
        return f"a broken symbolic link (to {shown(os.readlink(path))}, which does not exist)"
    return _reason(exc)


def _reason(exc: OSError) -> str:
    if isinstance(exc, PermissionError):
        return "permission denied"
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    return exc.strerror or str(exc)


def _read(path: str) -> tuple[bytes | None, str | None]:
    """The file's bytes, or why not. A file is opened without blocking and read only when it is
    a regular file, so a FIFO (named, found in a directory, or swapped in after the listing)
    never stalls validate; a pipe is read as `-`."""
    if path == "-":
        return sys.stdin.buffer.read(), None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(fd, "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            if stat.S_ISDIR(mode):
                return None, "is a directory holding no *.json file"
            if not stat.S_ISREG(mode):
                return None, f"not a regular file ({_kind(mode)}); give a pipe as -"
            return handle.read(), None
    except IsADirectoryError:
        return None, "is a directory holding no *.json file"
    except OSError as exc:
        return None, _reason(exc) if exc.errno != errno.ELOOP else "a symbolic link loop"


def validate_files(paths: tuple[str, ...], probe_options: dict | None = None,
                   problems: dict[str, str] | None = None) -> tuple[list[dict], int]:
    """The per-file report entries and the exit code. `problems` are the reasons `expand` found
    for entries of a directory that cannot be checked; those entries are never opened."""
    entries: list[dict] = []
    unreadable = refused = False
    problems = problems or {}
    for path in paths:
        error = problems.get(path)
        data = None
        if error is None:
            data, error = _read(path)
        if data is None:
            unreadable = True
            entries.append({"file": path, "kind": None, "registrable": False, "refusals": [],
                            "error": f"cannot read {shown(path)}: {error}"})
            continue
        registration = register_bytes(data)
        refusals = [r.to_json() for r in registration.refusals]
        probes: list[dict] = []
        if registration.registrable and probe_options is not None:
            from collection.run.probe import probe_registration

            probes, probe_refusals = probe_registration(registration, **probe_options)
            refusals.extend(r.to_json() for r in probe_refusals)
        entry = {"file": path, "kind": registration.kind, "registrable": not refusals, "refusals": refusals}
        if probe_options is not None:
            entry["probes"] = probes
        refused |= bool(refusals)
        entries.append(entry)
    return entries, 2 if unreadable else 1 if refused else 0


@click.command("validate", epilog=examples(
    "collection validate fixtures/recipes/council_decisions.json",
    "collection validate --format github recipes/",
    "collection validate --probe recipe.json",
))
@click.argument("files", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (schemas/validate-report.schema.json); "
              "the same as --format json.")
@click.option("--format", "output_format", type=click.Choice(FORMATS), default=None,
              help="text (default), json, github (workflow commands), sarif (SARIF 2.1.0) or junit (JUnit XML).")
@click.option("--probe", is_flag=True,
              help="Also make one request to each collection's first discovery address (robots.txt honoured) "
                   "and check its media type and that the records pointer names an array.")
@click.option("--ca-bundle", type=click.Path(dir_okay=False), help="CA certificates to trust for --probe.")
@click.option("--resolve", "resolve", multiple=True, metavar="HOST:PORT:ADDR:PORT",
              help="Connect to ADDR:PORT for HOST:PORT (as curl --resolve) for --probe.")
@click.option("--user-agent-token", default=None, help="Product token of the User-Agent for --probe.")
def command(files: tuple[str, ...], as_json: bool, output_format: str | None, probe: bool, ca_bundle: str | None,
            resolve: tuple[str, ...], user_agent_token: str | None) -> None:
    """Check recipe FILEs (source or dataset documents; a directory means its *.json, - means stdin)."""
    if as_json and output_format not in (None, "json"):
        raise click.UsageError("--json is --format json; give one of them")
    problems: dict[str, str] = {}
    paths = expand(files, problems)
    probe_options = None
    if probe:
        probe_options = {"ca_bundle": ca_bundle, "resolve": resolve, "user_agent_token": user_agent_token}
    entries, status = validate_files(tuple(paths), probe_options, problems)
    out, err = RENDERERS["json" if as_json else output_format or "text"](entries, status == 0)
    if out:
        click.echo(out, nl=False)
    if err:
        click.echo(err, nl=False, err=True)
    sys.exit(status)
