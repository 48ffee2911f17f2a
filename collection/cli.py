"""The command line: `collection COMMAND ...`.

Each command lives in its own module under `collection/commands/`; this module only
assembles the group. Exit codes (GUIDE): 0 success, 1 refusal, 2 usage error.
"""

from __future__ import annotations

import click

from collection import __version__
from collection.commands import decode, explain, validate
from collection.commands import robots_check
from collection.commands import fixture as fixture_command
from collection.commands import run as run_command
from collection.commands import status as status_command
from collection.commands import conformance as conformance_command


def _version_text() -> str:
    from collection.buildinfo import commit

    return f"collection {__version__} (commit {commit()})"


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=lambda ctx, _p, v: (click.echo(_version_text()), ctx.exit(0)) if v else None,
              help="Print the version and the commit it was built from.")
def cli() -> None:
    """Turn a web corpus (an index and its detail pages) into one relation."""


cli.add_command(decode.command)
cli.add_command(explain.command)
cli.add_command(validate.command)
cli.add_command(robots_check.command)
cli.add_command(fixture_command.command)
cli.add_command(run_command.command)
cli.add_command(status_command.command)
cli.add_command(conformance_command.command)


def main() -> None:
    cli(prog_name="collection")
