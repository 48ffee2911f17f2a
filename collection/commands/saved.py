"""What `decode` and `discover` share: a recipe and one saved page, read for a dry run.

Exit codes as both commands document them: 2 for a file that cannot be read or a recipe
without the source asked for, 1 for a recipe registration refuses (its refusals on stderr).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

import click

from collection.recipe.model import Source
from collection.recipe.registration import register_bytes


def fail(message: str, status: int) -> None:
    click.echo(message, err=True)
    sys.exit(status)


def recipe_and_page(recipe: str, file: str, source_name: str | None, keep: Callable[[Source], bool],
                    lacking: str) -> tuple[Source, bytes]:
    """The one source of RECIPE that `keep` accepts (chosen with --source among several) and
    FILE's bytes; exits with the command's status otherwise. `lacking` ends the message for a
    recipe with no such source ("with a Reader pin")."""
    try:
        recipe_bytes = Path(recipe).read_bytes()
        body = Path(file).read_bytes()
    except OSError as exc:
        fail(f"cannot read {exc.filename}: {exc.strerror}", 2)
    registration = register_bytes(recipe_bytes)
    if not registration.registrable:
        for refusal in registration.refusals:
            click.echo(f"{recipe}: {refusal.code} at {refusal.pointer or '/'}: {refusal.message}", err=True)
        sys.exit(1)
    sources = [s for s in registration.sources if keep(s) and (source_name is None or s.name == source_name)]
    if not sources:
        fail(f"{recipe}: no collection source{' named ' + source_name if source_name else ''}{lacking}", 2)
    if len(sources) > 1:
        fail(f"{recipe}: several collection sources; choose one with --source ({', '.join(s.name for s in sources)})", 2)
    return sources[0], body
