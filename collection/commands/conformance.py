"""`collection conformance ...`: the conformance suite (a thin wrapper over `python -m conformance`).

With no --impl and no subcommand it runs the suite against this project's own harness.
"""

from __future__ import annotations

import shlex
import sys

import click


@click.command("conformance", context_settings={"ignore_unknown_options": True, "allow_extra_args": True,
                                                "help_option_names": []})
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def command(args: tuple[str, ...]) -> None:
    """Run or lint the conformance suite: check | clauses | [--impl CMD] [-k PATTERN] [-j N] [--mode M] [--report F] [--junit F]."""
    from conformance.cli import main

    argv = list(args)
    if not argv or (argv[0] not in ("check", "clauses", "run", "-h", "--help") and "--impl" not in argv):
        argv = ["--impl", f"{shlex.quote(sys.executable)} -m conformance.harnesses.collection_harness", *argv]
    sys.exit(main(argv))
