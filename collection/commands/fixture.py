"""`collection fixture …`: tools for recorded-exchange fixtures (docs/fixtures.md).

    collection fixture check FIXTURE [--recipe RECIPE] [--run N] [--json]
    collection fixture import-warc FILE.warc.gz... --out FIXTURE [--json]
    collection fixture export-warc FIXTURE --out FILE.warc.gz

check: exit 0 when the fixture is valid (and, with a recipe, answers every request the
recipe's runs would make), 1 when it is invalid or has gaps (or the recipe is refused), 2 for
usage errors and unreadable files. import-warc / export-warc: 0 done, 1 nothing to write or a
broken archive, 2 usage.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from collection.commands import examples

from collection.canonical import ordered_json


def _fail(message: str, status: int) -> None:
    click.echo(message, err=True)
    sys.exit(status)


@click.group("fixture", epilog=examples(
    "collection fixture check fixtures/council_decisions/council_decisions.fixture.json.gz --recipe fixtures/recipes/council_decisions.json",
    "collection fixture import-warc crawl.warc.gz --out site.json.gz",
))
def group() -> None:
    """Check fixtures, and convert them to and from web archives (WARC)."""


@group.command("check", epilog=examples(
    "collection fixture check fixtures/council_decisions/council_decisions.fixture.json.gz",
    "collection fixture check site.json.gz --recipe recipe.json --json",
))
@click.argument("fixture", type=click.Path(dir_okay=False))
@click.option("--recipe", default=None, type=click.Path(dir_okay=False),
              help="Also list what this recipe's runs would request that the fixture cannot answer.")
@click.option("--source", "source_name", default=None, help="Which source of a dataset document to use.")
@click.option("--run", "only_run", type=click.IntRange(min=1), default=None,
              help="Check only this run (default: every run the fixture records).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def check(fixture: str, recipe: str | None, source_name: str | None, only_run: int | None, as_json: bool) -> None:
    """Validate FIXTURE against the fixture schema; with --recipe, find the gaps."""
    from collection.recording import check as fc
    from collection.recipe.registration import register_bytes

    try:
        data = Path(fixture).read_bytes()
        recipe_bytes = Path(recipe).read_bytes() if recipe else None
    except OSError as exc:
        _fail(f"cannot read {exc.filename}: {exc.strerror}", 2)
    loaded, problems = fc.validate(data, os.path.dirname(os.path.abspath(fixture)))
    report: dict = {"fixture": fixture, "valid": not problems, "errors": [p.as_json() for p in problems],
                    "exchanges": len(loaded.exchanges) if loaded else None,
                    "runs_recorded": fc.recorded_runs(loaded) if loaded else None,
                    "recipe": recipe, "runs": [], "complete": False}
    refused = False
    if recipe_bytes is not None and loaded is not None and not problems:
        registration = register_bytes(recipe_bytes)
        if not registration.registrable:
            refused = True
            report["recipe_refusals"] = [{"code": r.code, "pointer": r.pointer, "message": r.message}
                                         for r in registration.refusals]
        else:
            sources = [s for s in registration.sources if s.is_collection
                       and (source_name is None or s.name == source_name)]
            if not sources:
                _fail(f"{recipe}: no collection source{' named ' + source_name if source_name else ''}", 2)
            if len(sources) > 1:
                _fail(f"{recipe}: several collection sources; choose one with --source "
                      f"({', '.join(s.name for s in sources)})", 2)
            runs = [only_run] if only_run else list(range(1, fc.recorded_runs(loaded) + 1))
            report["runs"] = [fc.check_recipe(loaded, sources[0], n).as_json() for n in runs]
    gaps = sum(len(r["gaps"]) for r in report["runs"])
    report["complete"] = report["valid"] and not refused and gaps == 0
    if as_json:
        click.echo(ordered_json(report))
    else:
        _print_check(report)
    sys.exit(0 if report["complete"] else 1)


def _print_check(report: dict) -> None:
    name = report["fixture"]
    for error in report["errors"]:
        click.echo(f"{name}: invalid at {error['pointer'] or '/'}: {error['message']}")
    if not report["valid"]:
        return
    click.echo(f"{name}: valid, {report['exchanges']} exchanges, {report['runs_recorded']} recorded run(s)")
    for refusal in report.get("recipe_refusals", ()):
        click.echo(f"{report['recipe']}: {refusal['code']} at {refusal['pointer'] or '/'}: {refusal['message']}")
    for run in report["runs"]:
        d = run["discovery"]
        click.echo(f"run {run['run']}: discovered {d['discovered']} in {d['requests']} listing requests "
                   f"({d['stop_reason']}, {'complete' if d['complete'] else 'incomplete'}); "
                   f"{run['addresses']} addresses, {len(run['gaps'])} missing")
        for gap in run["gaps"]:
            via = f" (redirected from {gap['redirected_from']})" if "redirected_from" in gap else ""
            click.echo(f"  missing {gap['role']}: {gap['url']}{via}")
        for note in run["notes"]:
            click.echo(f"  note: {note}")


@group.command("import-warc", epilog=examples(
    "collection fixture import-warc crawl.warc.gz --out site.json.gz",
    "collection fixture import-warc part-1.warc.gz part-2.warc.gz --out site.json.gz --json",
))
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="The fixture to write (.gz: compressed).")
@click.option("--json", "as_json", is_flag=True,
              help="Print what was imported, and each record skipped counted by reason, as JSON.")
def import_warc(files: tuple[str, ...], out: str, as_json: bool) -> None:
    """Turn the HTTPS response records of FILES into a fixture."""
    from collection.recording import warc
    from collection.recording.record import write_fixture

    try:
        fixture, stats = warc.import_warcs(files)
    except OSError as exc:
        _fail(f"cannot read {exc.filename}: {exc.strerror}", 2)
    except warc.WarcError as exc:
        _fail(f"{exc}", 1)
    written = bool(fixture.exchanges)
    if written:
        write_fixture(out, fixture)
    # what was left out, and why, is reported whether or not anything was written
    if as_json:
        click.echo(ordered_json({"out": out if written else None, "exchanges": len(fixture.exchanges), **stats}))
    else:
        _print_import(out if written else None, len(fixture.exchanges), stats)
    if not written:
        _fail(f"no HTTPS response records in {', '.join(files)}", 1)
    sys.exit(0)


def _print_import(out: str | None, exchanges: int, stats: dict) -> None:
    from collection.recording.warc import SKIP_REASONS

    head = f"{out}: {exchanges} exchanges" if out else "nothing written"
    click.echo(f"{head} from {stats['records']} records: {stats['responses']} responses "
               f"({stats['stored_decoded']} stored decoded, {stats['truncated']} cut short), "
               f"{stats['revisits_resolved']} revisits resolved, {stats['requests']} requests paired, "
               f"{stats['skipped']} records skipped")
    for reason, count in sorted(stats["skipped_by_reason"].items()):
        click.echo(f"  skipped {count} ({reason}): {SKIP_REASONS.get(reason, reason)}")
    for note in stats["notes"]:
        click.echo(f"  note: {note}")
    if stats["notes_left_off"]:
        click.echo(f"  ({stats['notes_left_off']} more notes left off; --json counts every record by reason)")


@group.command("export-warc", epilog=examples(
    "collection fixture export-warc site.json.gz --out site.warc.gz",
))
@click.argument("fixture", type=click.Path(dir_okay=False))
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="The WARC to write (gzip per record).")
def export_warc(fixture: str, out: str) -> None:
    """Write FIXTURE as a WARC file (request and response records, deterministic)."""
    from collection.recording import warc
    from collection.recording.format import FixtureError
    from collection.recording.replay import load_fixture

    try:
        loaded = load_fixture(fixture)
    except FileNotFoundError as exc:
        _fail(f"cannot read {exc.filename}: {exc.strerror}", 2)
    except FixtureError as exc:
        _fail(f"{fixture}: invalid at {exc.pointer or '/'}: {exc.message}", 1)
    count = warc.export_warc(loaded, out)
    click.echo(f"{out}: {count} records")
    sys.exit(0)


command = group
