"""`collection status DIR [--json]`: what the current generation holds and what to do next.

Reads only `DIR/current` (never takes the lock: a generation is immutable once current,
so status is safe beside a running `collection run`). Exit 0 when DIR has a generation,
1 when it has none yet, 2 for usage errors.
"""

from __future__ import annotations

import os
import sys
from collections import Counter

import click

from collection.commands import examples

from collection.canonical import ordered_json
from collection.merge.ledger import MergeInvalid, iter_ledger
from collection.store.generations import LEDGER, StateDamaged, check_generation, read_record_file
from collection.merge.states import FAILED, PAGE_STATES, PENDING, SKIPPED_ORIGIN

# What an operator does about a failure class (D-62).
_CLASS_ADVICE = {
    "gone": "the publisher no longer serves them (404/410); their rows are kept",
    "blocked": "check robots.txt and the User-Agent token, or ask the origin's operator",
    "error": "server errors, timeouts or decode failures; they are retried first on the next run",
}


def summarise(directory: str) -> dict | None:
    """The summary of DIR's current generation; None before the first run. Raises
    StateDamaged (pointer, files, run.json) or MergeInvalid (ledger.csv) naming the file."""
    import csv
    import os

    current = check_generation(directory)
    if current is None:
        return None
    record = read_record_file(directory, current)
    states: Counter = Counter({s: 0 for s in PAGE_STATES})
    by_class: Counter = Counter()
    by_code: Counter = Counter()
    try:
        with open(os.path.join(current, LEDGER), newline="", encoding="utf-8") as handle:
            for row in iter_ledger(handle):
                states[row.state] += 1
                if row.state in (FAILED, SKIPPED_ORIGIN) and row.failure_code:
                    by_code[row.failure_code] += 1
                    by_class[row.failure_class or "error"] += 1
    except UnicodeDecodeError as exc:
        raise MergeInvalid(f"not UTF-8 ({exc})", pointer=LEDGER, rule="D-02") from None
    except csv.Error as exc:
        raise MergeInvalid(f"not readable CSV ({exc})", pointer=LEDGER, rule="D-02") from None
    cov = record["coverage"]
    return {
        "state": os.path.abspath(directory),
        "generation": record["generation"],
        "run_number": record["run_number"],
        "finished_at": record["finished_at"],
        "coverage": cov,
        "truncated": record["truncated"],
        "rows": record["rows"],
        "pages": dict(states),
        "failures": {"by_class": dict(sorted(by_class.items())), "by_code": dict(sorted(by_code.items()))},
        "corrections": record["corrections"],
        "discovery_warning": record.get("discovery", {}).get("warning"),
        "next": advice(cov, record["truncated"], states, by_code, record.get("discovery", {}).get("warning"))
        + robots_advice(record),
    }


def advice(cov: dict, truncated: bool, states: Counter, by_code: Counter, warning: str | None = None) -> list[str]:
    """What to do next, most useful first (the human status ends with these lines)."""
    # A discovery that dropped records or found nothing comes first: "complete, nothing to
    # do" would hide a selector that matches the heading instead of its link.
    out: list[str] = [warning] if warning else []
    if cov["discovery_failure"]:
        out.append(f"discovery could not read {cov['discovery_failure']}: check that listing, then run again "
                   "(the pages listed before are kept)")
    elif not cov["discovery_complete"]:
        out.append("discovery stopped at a ceiling: raise discovery.max_requests (or pages.max_pages) to list the rest")
    if states[PENDING]:
        out.append(f"{states[PENDING]:,} pages pending: run again to continue")
    blocked = {code: n for code, n in by_code.items()
               if code in ("robots_disallowed", "http_status_401", "http_status_403", "http_status_429",
                           "waf_challenge")}
    if blocked:
        total = sum(blocked.values())
        out.append(f"{total:,} pages blocked ({', '.join(sorted(blocked))}): check robots and the User-Agent")
    gone = sum(n for code, n in by_code.items() if code in ("http_status_404", "http_status_410"))
    if gone:
        out.append(f"{gone:,} pages gone (404/410): their rows are kept; remove them from the publisher's index "
                   "or ignore")
    other = states[FAILED] - sum(blocked.values()) - gone
    if other > 0:
        out.append(f"{other:,} pages failed with errors: run again to retry them (oldest failure first)")
    if states[SKIPPED_ORIGIN]:
        out.append(f"{states[SKIPPED_ORIGIN]:,} pages outside allowed_origins: add their origin if they belong")
    if truncated:
        out.append("the relation hit limits.max_rows: raise it and run again to restore the clipped pages")
    if cov["budget_exhausted"] in ("max_requests", "max_source_bytes"):
        out.append(f"the run ran out of {cov['budget_exhausted']}: raise it, or run again")
    if not out and cov["complete"]:
        out.append("complete: nothing to do until the publisher changes")
    return out


def summarise_dataset(directory: str) -> dict | None:
    """A dataset state directory (DIR/<source name>/ per source, DIR/dataset-run.json): each
    source's summary and the last dataset run's verdict on it; None when DIR is not one."""
    import json
    import os

    from collection.run.dataset import DATASET_RECORD

    record = None
    try:
        with open(os.path.join(directory, DATASET_RECORD), "rb") as handle:
            record = json.loads(handle.read())
    except (OSError, ValueError):
        pass
    if record is not None:
        entries = [(s["name"], s) for s in record["sources"]]
    else:
        # no dataset record yet (a first dataset run killed before its end): every source
        # directory with a `current`, damaged or not (summarise says which)
        names = sorted(n for n in os.listdir(directory) if os.path.lexists(os.path.join(directory, n, "current")))
        if not names:
            return None
        entries = [(n, None) for n in names]
    sources, steps = [], []
    for name, last in entries:
        summary = summarise(os.path.join(directory, name))
        status = last["status"] if last else ("ran" if summary else "unknown")
        sources.append({"name": name, "last_run": status, "code": last.get("code") if last else None,
                        "summary": summary})
        if last and last["status"] == "refused":
            steps.append(f"{name}: last run refused with {last['code']}: `collection explain {last['code']}`")
        elif summary is not None:
            steps.extend(f"{name}: {line}" for line in summary["next"]
                         if not line.startswith("complete: nothing to do"))
        elif last is None or last["status"] not in ("not_collected", "not_chosen"):
            steps.append(f"{name}: no generation yet: run the dataset")
    if not steps:
        steps.append("every source is complete: nothing to do until the publishers change")
    return {"state": os.path.abspath(directory), "dataset": record["dataset"] if record else None,
            "dataset_run": record["dataset_run"] if record else None, "sources": sources, "next": steps}


def _source_line(entry: dict) -> str:
    summary = entry["summary"]
    if entry["last_run"] == "not_collected":
        return f"{entry['name']}: not collected by this tool (another adapter)"
    if summary is None:
        return f"{entry['name']}: no generation yet" + (f" (last run refused: {entry['code']})" if entry["code"] else "")
    cov = summary["coverage"]
    line = (f"{entry['name']}: generation {summary['generation']} (run {summary['run_number']}), "
            f"{'complete' if cov['complete'] else 'incomplete'}; {cov['known']:,} known, {cov['pending']:,} pending, "
            f"{cov['failed']:,} failed; {summary['rows']:,} rows")
    if entry["last_run"] == "refused":
        line += f"; last run refused: {entry['code']}"
    return line


def robots_advice(record: dict) -> list[str]:
    """D-66: a robots.txt that redirected outside allowed_origins blocked its whole origin."""
    return [f"robots.txt of {entry['origin']} redirects to {entry['redirect']}, outside allowed_origins, so every "
            f"page of {entry['origin']} was refused (D-66): add that origin to allowed_origins to follow it"
            for entry in record.get("robots_unreachable") or ()
            if isinstance(entry, dict) and {"origin", "redirect"} <= set(entry)]


def origin_hosts(directory: str) -> set[str]:
    """The hosts of the pages DIR's current generation knows (and any its last run found
    held): the origins whose holds `status` lists. Empty before the first run."""
    from urllib.parse import urlsplit

    current = check_generation(directory)
    if current is None:
        return set()
    hosts = set()
    with open(os.path.join(current, LEDGER), newline="", encoding="utf-8") as handle:
        for row in iter_ledger(handle):
            hosts.add(urlsplit(row.url).hostname or "")
    record = read_record_file(directory, current)
    held = record.get("held_until")
    if isinstance(held, dict):
        hosts.update(o[len("https://"):] for o in held if isinstance(o, str) and o.startswith("https://"))
    hosts.discard("")
    return hosts


def gate_holds(hosts: set[str], gate_value: str | None) -> tuple[list | None, str | None]:
    """(the holds on `hosts` now, None) read from the gate `--gate` names (the local gate by
    default, as `run`), or (None, why not). Only reads: `hold` never creates or changes a record."""
    from collection.fetch.fetcher import ARRIVAL_MARGIN_SECONDS
    from collection.fetch.gate import GATE_ENV, GateUnavailable, parse_gate

    try:
        gate = parse_gate(gate_value or os.environ.get(GATE_ENV), ARRIVAL_MARGIN_SECONDS)
    except (ValueError, GateUnavailable) as exc:
        return None, str(exc)
    if gate is None:
        return [], None
    try:
        holds = [hold for hold in (gate.hold(host) for host in sorted(hosts)) if hold is not None]
    except GateUnavailable as exc:
        return None, f"the gate {gate.description} cannot be read: {exc}"
    finally:
        gate.close()
    return holds, None


def _hold_lines(holds: list | None, problem: str | None) -> list[str]:
    from collection.commands.gate import hold_text

    if problem is not None:
        return [f"holds: not known ({problem})"]
    return [f"held: {hold.origin} {hold_text(hold)}; its pages wait: `collection gate clear {hold.origin}` lifts it"
            for hold in holds or ()]


@click.command("status", epilog=examples(
    "collection status /tmp/cd",
    "collection status /var/lib/collection/decisions --json",
))
@click.argument("directory", type=click.Path(file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@click.option("--gate", "gate_value", default=None, metavar="GATE",
              help="The politeness gate whose holds on these origins to list, as `run --gate` (default: the "
                   "local gate, or COLLECTION_GATE); `none` lists none. Only read.")
def command(directory: str, as_json: bool, gate_value: str | None) -> None:
    """Summarise the state directory DIRECTORY: coverage, pages by state, what to do next."""
    try:
        summary = summarise(directory)
    except (StateDamaged, MergeInvalid) as exc:
        # a damaged state directory: the code, the file and what is wrong (exit 2, as any
        # unreadable state); `run --resync` sets the damaged generation aside
        refusal = exc.to_refusal()
        if as_json:
            click.echo(ordered_json({"state": directory, "code": refusal.code, "message": refusal.message}))
        click.echo(f"collection status: {directory}: {refusal.code}: {refusal.message}", err=True)
        sys.exit(2)
    except (OSError, ValueError, KeyError) as exc:
        click.echo(f"collection status: cannot read {directory}: {exc}", err=True)
        sys.exit(2)
    if summary is None and os.path.isdir(directory):
        try:
            dataset = summarise_dataset(directory)
        except (OSError, ValueError, KeyError, MergeInvalid, StateDamaged) as exc:
            click.echo(f"collection status: cannot read {directory}: {exc}", err=True)
            sys.exit(2)
        if dataset is not None:
            hosts: set[str] = set()
            for entry in dataset["sources"]:
                try:
                    hosts |= origin_hosts(os.path.join(directory, entry["name"]))
                except (OSError, ValueError, KeyError, MergeInvalid, StateDamaged):
                    pass            # that source's line says what is wrong with it
            holds, problem = gate_holds(hosts, gate_value)
            dataset["holds"] = [h.to_json() for h in holds] if holds is not None else None
            dataset["next"] = dataset["next"] + _hold_lines(holds, problem)
            if as_json:
                click.echo(ordered_json(dataset))
                sys.exit(0)
            title = f"dataset {dataset['dataset']}, run {dataset['dataset_run']}" if dataset["dataset"] else "dataset"
            click.echo(f"{dataset['state']}: {title}")
            for entry in dataset["sources"]:
                click.echo(f"  {_source_line(entry)}")
            for line in dataset["next"]:
                click.echo(f"  → {line}")
            sys.exit(0)
    if summary is None:
        if as_json:
            click.echo(ordered_json({"state": directory, "generation": None}))
        click.echo(f"{directory}: no generation yet (run `collection run RECIPE --state {directory}`)", err=True)
        sys.exit(1)
    try:
        holds, problem = gate_holds(origin_hosts(directory), gate_value)
    except (OSError, ValueError, KeyError, MergeInvalid, StateDamaged) as exc:
        holds, problem = None, str(exc)
    summary["holds"] = [h.to_json() for h in holds] if holds is not None else None
    summary["next"] = summary["next"] + _hold_lines(holds, problem)
    if as_json:
        click.echo(ordered_json(summary))
        sys.exit(0)
    cov = summary["coverage"]
    pages = summary["pages"]
    click.echo(f"{summary['state']}: generation {summary['generation']} (run {summary['run_number']}, "
               f"{summary['finished_at']})")
    click.echo(f"  {'complete' if cov['complete'] else 'incomplete'}; {cov['known']:,} pages known, "
               f"{summary['rows']:,} rows" + (" (truncated)" if summary["truncated"] else ""))
    click.echo("  pages: " + ", ".join(f"{state} {n:,}" for state, n in pages.items()))
    if summary["failures"]["by_code"]:
        click.echo("  failures: " + ", ".join(f"{code} {n:,}" for code, n in summary["failures"]["by_code"].items()))
    for c in summary["corrections"][:10]:
        click.echo(f"  last run corrected {c['page_id']} (revision {c['revision']})")
    for line in summary["next"]:
        click.echo(f"  → {line}")
    sys.exit(0)
