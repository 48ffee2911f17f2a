"""`collection validate [--json] [--probe] FILE...`: is each recipe registrable?

Exit 0 when every file is registrable, 1 when any is refused, 2 for a usage error or a
file that cannot be read (GUIDE, "Interfaces users rely on").
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from collection.commands import examples

from collection.canonical import canonical_json
from collection.recipe.registration import register_bytes


def _read(path: str) -> tuple[bytes | None, str | None]:
    try:
        return Path(path).read_bytes(), None
    except IsADirectoryError:
        return None, "is a directory"
    except FileNotFoundError:
        return None, "no such file"
    except PermissionError:
        return None, "permission denied"
    except OSError as exc:
        return None, exc.strerror or str(exc)


def validate_files(paths: tuple[str, ...], probe_options: dict | None = None) -> tuple[list[dict], int]:
    """The per-file report entries and the exit code."""
    entries: list[dict] = []
    unreadable = refused = False
    for path in paths:
        data, error = _read(path)
        if data is None:
            unreadable = True
            entries.append({"file": path, "kind": None, "registrable": False, "refusals": [],
                            "error": f"cannot read {path}: {error}"})
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
    "collection validate --json recipes/*.json",
    "collection validate --probe recipe.json",
))
@click.argument("files", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (schemas/validate-report.schema.json).")
@click.option("--probe", is_flag=True,
              help="Also make one request to each collection's first discovery address (robots.txt honoured) "
                   "and check its media type and that the records pointer names an array.")
@click.option("--ca-bundle", type=click.Path(dir_okay=False), help="CA certificates to trust for --probe.")
@click.option("--resolve", "resolve", multiple=True, metavar="HOST:PORT:ADDR:PORT",
              help="Connect to ADDR:PORT for HOST:PORT (as curl --resolve) for --probe.")
@click.option("--user-agent-token", default=None, help="Product token of the User-Agent for --probe.")
def command(files: tuple[str, ...], as_json: bool, probe: bool, ca_bundle: str | None,
            resolve: tuple[str, ...], user_agent_token: str | None) -> None:
    """Check recipe FILEs (source or dataset documents) against the schemas and registration rules."""
    probe_options = None
    if probe:
        probe_options = {"ca_bundle": ca_bundle, "resolve": resolve, "user_agent_token": user_agent_token}
    entries, status = validate_files(files, probe_options)
    if as_json:
        click.echo(canonical_json({"files": entries, "registrable": status == 0}))
    else:
        for entry in entries:
            if "error" in entry:
                click.echo(f"{entry['file']}: {entry['error']}", err=True)
            elif entry["registrable"]:
                click.echo(f"{entry['file']}: registrable {entry['kind']}")
            else:
                for refusal in entry["refusals"]:
                    where = f"{refusal['line']}:{refusal['column']}" if refusal["line"] is not None else "-"
                    click.echo(f"{entry['file']}:{where}: {refusal['code']} at {refusal['pointer'] or '/'}: "
                               f"{refusal['message']} [{refusal['rule']}]")
    sys.exit(status)
