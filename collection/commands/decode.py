"""`collection decode RECIPE FILE [--url URL] [--media-type TYPE] [--source NAME] [--json]`.

Runs the recipe's pinned Reader on one saved page and prints its rows: how a recipe author
tries a Reader pin before a run (GUIDE). Exit 0 when the page decodes (zero rows included,
D-50), 1 when the recipe is refused or the page fails (the failure code on stderr and in the
JSON), 2 for usage errors and unreadable files.
"""

from __future__ import annotations

import csv
import io
import sys

import click

from collection.commands import examples

from collection.canonical import ordered_json
from collection.readers import registry
from collection.readers.base import DecodeFailure, Pin, decode
from collection.commands.saved import recipe_and_page


@click.command("decode", epilog=examples(
    "collection decode recipe.json saved/decision-42.html --url https://www.example.gov/decisions/42",
    "collection decode recipe.json saved/item.json --media-type application/json --json",
))
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--url", default="", show_default=False, help="The page's address (resolves relative links such as canonical_url).")
@click.option("--media-type", "media_type", default=None,
              help="The page's Content-Type; default: the first media type the pinned family takes.")
@click.option("--source", "source_name", default=None, help="Which source of a dataset document to use.")
@click.option("--json", "as_json", is_flag=True, help='Print {"columns", "rows", "failure"} as JSON.')
def command(recipe: str, file: str, url: str, media_type: str | None, source_name: str | None, as_json: bool) -> None:
    """Decode saved page FILE with the Reader pinned in RECIPE and print the rows."""
    source, body = recipe_and_page(recipe, file, source_name, lambda s: s.reader is not None, " with a Reader pin")
    reader = source.reader
    pin = Pin(reader.family_id, reader.family_version, reader.options)
    content_type = media_type if media_type is not None else registry.FAMILIES[pin.family_id].media_types[0]
    result = decode(pin, body, content_type, url)
    if isinstance(result, DecodeFailure):
        if as_json:
            click.echo(ordered_json({"columns": list(reader.columns), "rows": None,
                                     "failure": {"code": result.code, "message": result.message}}))
        click.echo(f"{file}: {result.code}: {result.message}", err=True)
        sys.exit(1)
    if as_json:
        click.echo(ordered_json({"columns": list(result.columns), "rows": [list(r) for r in result.rows], "failure": None}))
    else:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(result.columns)
        writer.writerows(result.rows)
        click.echo(out.getvalue(), nl=False)
    sys.exit(0)
