"""The command line: `collection COMMAND ...`.

Each command lives in its own module under `collection/commands/`; this module only
assembles the group. Exit codes (GUIDE): 0 success, 1 refusal, 2 usage error, 70 an
internal error (`INTERNAL_ERROR`: a bug, never a traceback).

Commands are registered lazily: `cli.add_lazy_command(NAME, "module:attribute")` imports
the module only when NAME runs (or `collection NAME --help` is asked), and
`collection --help` lists NAME with the first sentence of its docstring read from the
module's source, importing nothing. So starting the CLI costs click plus this module, not
every command's dependencies (bench/startup.py; the zipapp's warm start-up target).
`cli.add_command(obj)` still works for a command object already imported.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util

import click

from collection import __version__
from collection.commands import examples


def _version_text() -> str:
    from collection.buildinfo import commit

    return f"collection {__version__} (commit {commit()})"


def _static_help(target: str, name: str) -> str | None:
    """The docstring of the function `@click.command(name)` / `@click.group(name)` decorates in
    the module of `target`, read without importing it; None when that is not plain to see
    (then the listing imports the module instead)."""
    module = target.partition(":")[0]
    try:
        spec = importlib.util.find_spec(module)
        if spec is None or spec.loader is None:
            return None
        source = spec.loader.get_source(module)
        tree = ast.parse(source or "")
    except (ImportError, OSError, SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for deco in node.decorator_list:
            if (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute)
                    and deco.func.attr in ("command", "group") and deco.args
                    and isinstance(deco.args[0], ast.Constant) and deco.args[0].value == name):
                if any(kw.arg in (None, "help", "short_help", "hidden", "deprecated", "cls")
                       for kw in deco.keywords):
                    return None
                return ast.get_docstring(node, clean=True)
    return None


class LazyGroup(click.Group):
    """A click group whose subcommands can be imported only when used."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.lazy_commands: dict[str, str] = {}

    def add_lazy_command(self, name: str, target: str) -> None:
        """Register `target` ("package.module:attribute") as the subcommand `name`."""
        self.lazy_commands[name] = target

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(self.commands) | set(self.lazy_commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy_commands:
            module, _, attribute = self.lazy_commands[cmd_name].partition(":")
            self.add_command(getattr(importlib.import_module(module), attribute or "command"), cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            doc = None if name in self.commands else _static_help(self.lazy_commands[name], name)
            if doc is not None:
                rows.append((name, click.Command(name, help=doc).get_short_help_str(limit)))
                continue
            cmd = self.get_command(ctx, name)
            if cmd is None or cmd.hidden:
                continue
            rows.append((name, cmd.get_short_help_str(limit)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "show_default": True},
             epilog=examples(
                 "collection validate recipe.json",
                 "collection run recipe.json --state /var/lib/collection/decisions",
                 "collection status /var/lib/collection/decisions",
                 "collection explain REQUEST_BUDGET_SUM",
             ))
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=lambda ctx, _p, v: (click.echo(_version_text()), ctx.exit(0)) if v else None,
              help="Print the version and the commit it was built from.")
def cli() -> None:
    """Turn a web corpus (an index and its detail pages) into one relation."""


cli.add_lazy_command("decode", "collection.commands.decode:command")
cli.add_lazy_command("discover", "collection.commands.discover:command")
cli.add_lazy_command("explain", "collection.commands.explain:command")
cli.add_lazy_command("validate", "collection.commands.validate:command")
cli.add_lazy_command("robots-check", "collection.commands.robots_check:command")
cli.add_lazy_command("fixture", "collection.commands.fixture:command")
cli.add_lazy_command("run", "collection.commands.run:command")
cli.add_lazy_command("build", "collection.commands.build:command")
cli.add_lazy_command("status", "collection.commands.status:command")
cli.add_lazy_command("gate", "collection.commands.gate:command")
cli.add_lazy_command("conformance", "collection.commands.conformance:command")


# A bug nobody planned for: the message names it with a code, and the exit status is
# sysexits' EX_SOFTWARE, distinct from refusals (1) and usage errors (2). A run that dies
# this way leaves the previous generation current (the one being written is abandoned).
EXIT_INTERNAL_ERROR = 70


def main() -> None:
    try:
        cli(prog_name="collection")
    except Exception as exc:  # noqa: BLE001 - the last line of "never a traceback"
        import sys

        from collection.redact import scrub

        # scrub: a bug's message may quote a gate URL or a password (issue 24 point 1)
        click.echo(scrub(f"INTERNAL_ERROR: {type(exc).__name__}: {exc} (a bug in collection; the previous "
                         "generation is unchanged; please report this line with the command that gave it)"), err=True)
        sys.exit(EXIT_INTERNAL_ERROR)
