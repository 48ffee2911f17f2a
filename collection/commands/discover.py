"""`collection discover RECIPE FILE [--url U] [--media-type T] [--header H] [--json]`: the listing dry-run.

The counterpart of `decode` for listings (as `scrapy shell` is for selectors): reads one
saved listing page with the recipe's discovery settings and prints the records found (page
id, link, revision), every dropped record with its reason, and the next request the
pagination grammar would make. No request is made. Exit 0 when the page is read (zero
records included), 1 when the recipe is refused or the page is not a listing the recipe
accepts, 2 for usage errors and unreadable files.
"""

from __future__ import annotations

import sys

import click

from collection.canonical import ordered_json
from collection.commands import examples
from collection.discover.findings import dry_run
from collection.commands.saved import recipe_and_page


def _header(text: str) -> tuple[str, str]:
    name, colon, value = text.partition(":")
    if not colon or not name.strip():
        raise click.BadParameter(f"{text!r} is not NAME: VALUE", param_hint="--header")
    return name.strip(), value.strip()


@click.command("discover", epilog=examples(
    "collection discover recipe.json saved/listing-page-1.html --url https://www.example.gov/decisions?page=1",
    "collection discover recipe.json saved/posts.json --header 'Link: <https://www.example.gov/wp-json/wp/v2/posts?page=2>; rel=\"next\"' --json",
))
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--url", default=None,
              help="The page's address: links resolve against it and pagination continues from it "
                   "(default: the first listing address of the recipe).")
@click.option("--media-type", "media_type", default=None,
              help="The page's Content-Type (default: the first media type the discovery kind accepts).")
@click.option("--header", "headers", multiple=True, metavar="'NAME: VALUE'",
              help="A response header the saved page came with, e.g. a Link header for link_header pagination.")
@click.option("--source", "source_name", default=None, help="Which source of a dataset document to use.")
@click.option("--json", "as_json", is_flag=True, help="Print the dry-run as JSON.")
def command(recipe: str, file: str, url: str | None, media_type: str | None, headers: tuple[str, ...],
            source_name: str | None, as_json: bool) -> None:
    """Read saved listing FILE with the discovery settings of RECIPE and print what a run would list."""
    parsed_headers = tuple(_header(h) for h in headers)
    source, body = recipe_and_page(recipe, file, source_name, lambda s: s.is_collection, "")
    collection = source.collection
    result = dry_run(collection.discovery, collection.pages.allowed_origins, body, url=url,
                     media_type=media_type, headers=parsed_headers)
    if as_json:
        click.echo(ordered_json(result.as_dict()))
    else:
        _print_text(result)
    if result.failure is not None:
        click.echo(f"{file}: {result.failure['code']}: {result.failure['message']}", err=True)
        sys.exit(1)
    sys.exit(0)


def _print_text(result) -> None:
    click.echo(f"listing {result.url} ({result.media_type})")
    click.echo(f"  {len(result.records)} records found, {result.dropped_records} dropped, "
               f"{result.duplicates} duplicates")
    for record in result.records:
        revision = f"  revision {record['revision']}" if record["revision"] is not None else ""
        unreachable = f"  (not fetched: {record['unreachable']})" if "unreachable" in record else ""
        click.echo(f"  record {record['page_id']}  link {record['link']}{revision}{unreachable}")
    for line in result.dropped:
        click.echo(f"  dropped {line}")
    for url in result.next_requests:
        click.echo(f"  next request {url}")
    if result.stop_reason is not None:
        click.echo(f"  stop {result.stop_reason}: {_meaning(result.stop_reason)}")
    if result.warning:
        click.echo(f"  warning: {result.warning}")


def _meaning(reason: str) -> str:
    from collection.discover.driver import STOP_REASONS

    return STOP_REASONS[reason].meaning
