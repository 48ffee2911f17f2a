"""`collection explain CODE`: what a code means and how to fix it."""

from __future__ import annotations

import click

from collection.commands import examples

from collection import codes
from collection.canonical import canonical_json


@click.command("explain", epilog=examples(
    "collection explain REQUEST_BUDGET_SUM",
    "collection explain COLLECTION_DISCOVERY_FAILED --json",
))
@click.argument("code")
@click.option("--json", "as_json", is_flag=True, help="Print the entry as canonical JSON.")
def command(code: str, as_json: bool) -> None:
    """Print what CODE (in any case, or a clause or decision ID) means and how to fix it."""
    entries = codes.lookup_any_case(code)
    if not entries and _explain_clause(code, as_json):
        return
    if not entries:
        known = ", ".join(sorted(codes.CATALOGUE))
        raise click.UsageError(f"unknown code {code!r}; known codes: {known}, http_status_<nnn>")
    if as_json:
        # one object; a name that folds to two codes (INTERNAL_ERROR, internal_error) gives both
        shown = [_entry_json(entry) for entry in entries]
        click.echo(canonical_json(shown[0] if len(shown) == 1 else shown))
        return
    for entry in entries:
        _print_entry(entry)


def _entry_json(entry: codes.Code) -> dict:
    return {"code": entry.code, "kind": entry.kind, "summary": entry.summary, "fix": entry.fix,
            "clauses": list(entry.clauses), "liveness": entry.liveness}


def _print_entry(entry: codes.Code) -> None:
    click.echo(f"{entry.code} ({entry.kind}{', ' + entry.liveness if entry.liveness else ''})")
    click.echo(f"  {entry.summary}")
    click.echo(f"  Fix: {entry.fix}")
    if entry.clauses:
        click.echo(f"  Clauses: {', '.join(entry.clauses)}")


def _explain_clause(identifier: str, as_json: bool) -> bool:
    """A clause or decision ID cited in a message (REG-33, D-21): print its text."""
    from collection import clauses

    found = clauses.lookup(identifier)
    if found is None:
        return False
    key, section, text = found
    if as_json:
        click.echo(canonical_json({"clause": key, "section": section, "text": text}))
    else:
        click.echo(f"{key} ({section})")
        click.echo(f"  {text}")
    return True
