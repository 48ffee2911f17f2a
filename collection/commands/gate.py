"""`collection gate show|clear`: see and lift the politeness gate's state (issue 24 point 6).

`show` lists every origin the gate has a record of: the last start, the next start its gap
allows, the Crawl-delay, a Retry-After or Crawl-delay hold (until when in UTC, how long, and
the response that set it), the requests in flight (leases), and the last clearing. It only
reads (exit 0; 1 when the gate cannot be read, GATE_UNAVAILABLE; 2 for usage errors).

`clear ORIGIN` lifts the origin's Retry-After hold and its Crawl-delay. It leaves the gap and
the leases: the gap is the tool's own floor between two starts (it is over within seconds)
and a lease is a request really in flight, so clearing can never bring two requests closer
than the floor. The clearing is recorded in the origin's record (who and when: `gate show`
prints it for as long as the record lives, a week unused) and printed as one line on stderr
(for the operator's shell history or journal), with `--json` on stdout as well.
"""

from __future__ import annotations

import os
import sys

import click

from collection.commands import examples

_GATE_HELP = ("The gate: `local` (the default: this user's machine-local gate), `local:DIR`, or "
              "`redis://HOST:PORT/DB` (also COLLECTION_GATE), as `collection run --gate`.")


def _usage(message: str) -> None:
    click.echo(f"collection gate: {message}", err=True)
    sys.exit(2)


def open_gate(value: str | None, ca_bundle: str | None = None):
    """The gate `--gate` (or COLLECTION_GATE) names, for reading or clearing; usage error for
    `none` (there is no shared state to show) or a value `run` would not take."""
    from collection.fetch.fetcher import ARRIVAL_MARGIN_SECONDS
    from collection.fetch.gate import GATE_ENV, GateUnavailable, parse_gate

    try:
        gate = parse_gate(value or os.environ.get(GATE_ENV), ARRIVAL_MARGIN_SECONDS, ca_bundle=ca_bundle)
    except ValueError as exc:
        _usage(str(exc))
    except GateUnavailable as exc:
        _unavailable(exc, value)
    if gate is None:
        _usage("--gate none has no shared state to show or clear")
    return gate


def _unavailable(exc, gate) -> None:
    from collection.redact import redact_url, scrub

    # `gate` may still be the raw --gate value: shown only through the redaction rule
    shown = getattr(gate, "description", None) or redact_url(str(gate))
    click.echo(scrub(f"GATE_UNAVAILABLE: the politeness gate {shown} cannot be used: {exc}"), err=True)
    sys.exit(1)


def origin_host(text: str) -> str:
    """The host of ORIGIN: `https://HOST` or a bare HOST, lowercase DNS name (as in
    allowed_origins, D-40). Anything else is a usage error."""
    from collection.urls import is_canonical_origin

    candidate = text if text.startswith("https://") else f"https://{text}"
    if not is_canonical_origin(candidate):
        _usage(f"ORIGIN {text!r} is not an https origin (https://host, lowercase, no port or path) or a host name")
    return candidate[len("https://"):]


def row_json(row: dict) -> dict:
    hold = row["hold"]
    return {**{k: v for k, v in row.items() if k not in ("hold", "host")},
            "hold": hold.to_json() if hold is not None else None}


def hold_text(hold) -> str:
    from collection.fetch.holds import KIND_TEXT, duration, utc

    what = KIND_TEXT[hold.kind]
    by = hold.set_by
    return (f"held by {what} until {utc(hold.until)} ({duration(hold.seconds)})"
            + (f", set by {by['status']} {by['url']} at {by['at']} ({by['by']})" if by else ""))


def _row_text(row: dict) -> str:
    parts = [row["origin"] + ":"]
    parts.append(f"last start {row['last_start'] or 'never'}")
    if row["next_start"]:
        parts.append(f"next start {row['next_start']}")
    if row["crawl_delay"]:
        parts.append(f"crawl delay {row['crawl_delay']:g} s")
    parts.append(f"{row['leases']} in flight")
    text = ", ".join(parts[1:])
    if row["hold"] is not None:
        text += "; " + hold_text(row["hold"])
    if row["cleared"]:
        text += f"; cleared by {row['cleared']['by']} at {row['cleared']['at']}"
    return f"{parts[0]} {text}"


@click.group("gate", epilog=examples(
    "collection gate show",
    "collection gate show --gate redis://gate.internal:6379/0 --json",
    "collection gate clear https://www.example.com",
))
def command() -> None:
    """See (show) and lift (clear) the politeness gate's per-origin state shared by runs."""


@command.command("show", epilog=examples("collection gate show", "collection gate show --gate local:/srv/gate --json"))
@click.option("--gate", "gate_value", default=None, metavar="GATE", help=_GATE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the origins as JSON.")
@click.option("--gate-ca-bundle", "gate_ca_bundle", default=None, metavar="FILE",
              help="The CA certificates of a rediss:// gate (as `run --gate-ca-bundle`).")
def show(gate_value: str | None, as_json: bool, gate_ca_bundle: str | None) -> None:
    """List every origin the gate knows: last start, gap, crawl delay, hold and who set it, leases."""
    from collection.canonical import ordered_json
    from collection.fetch.gate import GateUnavailable

    gate = open_gate(gate_value, gate_ca_bundle)
    try:
        rows = gate.show()
    except GateUnavailable as exc:
        _unavailable(exc, gate)
    finally:
        gate.close()
    if as_json:
        click.echo(ordered_json({"gate": gate.description, "origins": [row_json(r) for r in rows]}))
        sys.exit(0)
    click.echo(f"gate {gate.description}: {len(rows)} origin{'s' if len(rows) != 1 else ''}")
    for row in rows:
        click.echo(f"  {_row_text(row)}")
    sys.exit(0)


@command.command("clear", epilog=examples("collection gate clear https://www.example.com",
                                          "collection gate clear www.example.com --gate redis://gate:6379/0"))
@click.argument("origin")
@click.option("--gate", "gate_value", default=None, metavar="GATE", help=_GATE_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print what was lifted as JSON.")
@click.option("--gate-ca-bundle", "gate_ca_bundle", default=None, metavar="FILE",
              help="The CA certificates of a rediss:// gate (as `run --gate-ca-bundle`).")
def clear(origin: str, gate_value: str | None, as_json: bool, gate_ca_bundle: str | None) -> None:
    """Lift ORIGIN's Retry-After hold and Crawl-delay (the gap and requests in flight stay); recorded."""
    from collection.canonical import ordered_json
    import socket
    import time

    from collection.fetch.gate import GateUnavailable
    from collection.fetch.holds import utc

    host = origin_host(origin)
    gate = open_gate(gate_value, gate_ca_bundle)
    by = f"{_user()} on {socket.gethostname()}"
    try:
        lifted = gate.clear(host, by)
    except GateUnavailable as exc:
        _unavailable(exc, gate)
    finally:
        gate.close()
    at = utc(time.time())
    if lifted is None:
        line = f"collection gate: https://{host}: the gate {gate.description} holds nothing for it; nothing cleared"
    else:
        what = hold_text(lifted["hold"]) if lifted["hold"] is not None else "not held"
        if lifted["crawl_delay"]:
            what += f", crawl delay {lifted['crawl_delay']:g} s"
        line = f"collection gate: https://{host}: cleared by {by} at {at} (was {what})"
    click.echo(line, err=True)
    if as_json:
        click.echo(ordered_json({"gate": gate.description, "origin": f"https://{host}", "cleared": lifted is not None,
                                 "by": by, "at": at, "was": row_json(lifted) if lifted is not None else None}))
    sys.exit(0)


def _user() -> str:
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return f"uid {os.getuid()}"
