"""`collection conformance ...`: the conformance suite (a thin wrapper over `python -m conformance`).

With no --impl and no subcommand it runs the suite against this project's own harness.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys

import click


def _invocation() -> list[str]:
    """The words that start `collection conformance` again, as printed in re-run lines:
    `python -m collection` when started so, else the program itself (the console script, or
    collection.pyz by its path), by its bare name only when PATH finds that very file."""
    argv0 = sys.argv[0] if sys.argv else ""
    if not argv0 or argv0.endswith("__main__.py") or not os.path.isfile(argv0):
        return [sys.executable, "-m", "collection", "conformance"]
    found = shutil.which(os.path.basename(argv0))
    if found and os.path.samefile(found, argv0):
        return [os.path.basename(argv0), "conformance"]
    if not os.access(argv0, os.X_OK):      # collection.pyz without its executable bit (pex sets argv[0] to it)
        return ["python3", os.path.abspath(argv0), "conformance"]
    return [os.path.abspath(argv0), "conformance"]


@click.command("conformance", context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                                                "help_option_names": []})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def command(args: tuple[str, ...]) -> None:
    """Run or lint the conformance suite: check | clauses | [--impl CMD] [-k PATTERN] [-j N] [--mode M] [--report F] [--junit F]."""
    from conformance.cli import main

    argv = list(args)
    if not argv or (argv[0] not in ("check", "clauses", "run", "-h", "--help") and "--impl" not in argv):
        argv = ["--impl", f"{shlex.quote(sys.executable)} -m conformance.harnesses.collection_harness", *argv]
    sys.exit(main(argv, prog=_invocation(), usage_prog="collection conformance"))
