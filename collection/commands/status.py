"""`collection status DIR [--json]`: what the current generation holds and what to do next.

Reads only `DIR/current` (never takes the lock: a generation is immutable once current,
so status is safe beside a running `collection run`). Exit 0 when DIR has a generation,
1 when it has none yet, 2 for usage errors and damaged state. A dataset directory
(DIR/<source>/..., DIR/dataset-run.json) gets a line per source whatever is damaged; exit 2
when the dataset record or any source is damaged, each named on its own line.
"""

from __future__ import annotations

import os
import sys
from collections import Counter

import click

from collection.commands import examples

from collection.canonical import ordered_json
from collection.merge.ledger import MergeInvalid, iter_ledger
from collection.store.generations import (LEDGER, RUN_RECORD, STATE_DAMAGED, StateDamaged, check_generation,
                                          read_record_file)
from collection.merge.states import FAILED, PAGE_STATES, PENDING, SKIPPED_ORIGIN
from collection.commands import failure_lines
from collection.run.failed_pages import streaks_of
from collection.store.datasetrecord import DATASET_RECORD, DatasetRecordDamaged, is_source_name, read_dataset_record


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
    streaks = streaks_of(record)
    failed_pages = []
    try:
        with open(os.path.join(current, LEDGER), newline="", encoding="utf-8") as handle:
            for row in iter_ledger(handle):
                states[row.state] += 1
                if row.state in (FAILED, SKIPPED_ORIGIN) and row.failure_code:
                    by_code[row.failure_code] += 1
                    by_class[row.failure_class or "error"] += 1
                if row.state == FAILED:
                    failed_pages.append(_failed_page(row, streaks.get(row.page_id)))
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
        "failed_pages": sorted(failed_pages, key=lambda e: (e["since"] or "", e["page_id"])),
        "corrections": record["corrections"],
        "discovery_warning": record.get("discovery", {}).get("warning"),
        "next": gate_advice(record)
        + advice(cov, record["truncated"], states, by_code, record.get("discovery", {}).get("warning"),
                 held=sorted(record.get("held_until") or {}))
        + robots_advice(record),
    }


def _failed_page(row, streak: dict | None) -> dict:
    """A failed ledger row as status shows it; since/attempts from the run record when it
    kept them (a generation written before it did: since its latest failure, attempts
    unknown)."""
    return {"page_id": row.page_id, "url": row.url, "failure_code": row.failure_code,
            "failure_class": row.failure_class, "failed_at": row.failed_at,
            "since": streak["since"] if streak else row.failed_at,
            "attempts": streak["attempts"] if streak else None,
            "body": streak["body"] if streak else None, "media_type": streak["media_type"] if streak else None}


def advice(cov: dict, truncated: bool, states: Counter, by_code: Counter, warning: str | None = None,
           held: list[str] = ()) -> list[str]:
    """What to do next, most useful first (the human status ends with these lines)."""
    # A discovery that dropped records or found nothing comes first: "complete, nothing to
    # do" would hide a selector that matches the heading instead of its link.
    out: list[str] = [warning] if warning else []
    if cov["discovery_failure"]:
        out.append(f"discovery could not read {cov['discovery_failure']}: check that listing, then run again "
                   "(the pages listed before are kept)")
    elif not cov["discovery_complete"] and held:
        # a held listing origin ends discovery as a ceiling would; the hold, not a budget, is why
        out.append(f"discovery did not finish while {', '.join(held)} was held (the run record's held_until): if "
                   "that is a listing's origin, the next run after the hold lists the rest; otherwise raise "
                   "discovery.max_requests (or pages.max_pages)")
    elif not cov["discovery_complete"]:
        out.append("discovery stopped at a ceiling: raise discovery.max_requests (or pages.max_pages) to list the rest")
    if states[PENDING]:
        out.append(f"{states[PENDING]:,} pages pending: run again to continue")
    # advice by class (issue 24 point 9): a decode failure is the recipe's, never "run again"
    out.extend(failure_lines.advice_lines(by_code))
    if states[SKIPPED_ORIGIN]:
        out.append(f"{states[SKIPPED_ORIGIN]:,} pages outside allowed_origins: add their origin if they belong")
    if truncated:
        out.append("the relation hit limits.max_rows: raise it and run again to restore the clipped pages")
    if cov["budget_exhausted"] in ("max_requests", "max_source_bytes"):
        out.append(f"the run ran out of {cov['budget_exhausted']}: raise it, or run again")
    if not out and cov["complete"]:
        out.append("complete: nothing to do until the publisher changes")
    return out


def _damage(exc: Exception, name: str) -> dict:
    """What is damaged in source `name` (a file relative to the dataset directory) and its code."""
    refusal = exc.to_refusal()
    # StateDamaged names a file relative to the source's directory, MergeInvalid one of
    # `current`'s files
    file = exc.file if isinstance(exc, StateDamaged) else os.path.join("current", exc.pointer)
    return {"code": refusal.code, "file": os.path.join(name, file) if file else name, "message": refusal.message}


def _source_dirs(directory: str) -> list[str]:
    """The source state directories in a dataset directory: DIR/<source name>/ holding what
    a run leaves (a `current`, `generations/` or the lock), sorted."""
    found = []
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if is_source_name(name) and os.path.isdir(path) and any(
                os.path.lexists(os.path.join(path, member)) for member in ("current", "generations", "lock")):
            found.append(name)
    return found


def summarise_dataset(directory: str) -> dict | None:
    """A dataset state directory (DIR/<source name>/ per source, DIR/dataset-run.json): a line
    per source — its summary, or what is damaged in it — and the dataset record's verdict on
    it; None when DIR is not one. Never raises for one source's damage nor for a damaged
    dataset record: each is named (`damage`, `record_damage`) and the rest is still listed."""
    record, record_damage = None, None
    try:
        record = read_dataset_record(directory)
    except DatasetRecordDamaged as exc:
        refusal = exc.to_refusal()
        record_damage = {"code": refusal.code, "file": exc.file, "message": refusal.message}
    on_disk = _source_dirs(directory)
    if record is not None:
        entries = [(s["name"], s) for s in record["sources"]]
        listed = {name for name, _ in entries}
        # a source directory the record does not list (the dataset lost it, or the record was
        # started again): still shown
        entries += [(name, None) for name in on_disk if name not in listed]
    else:
        # no dataset record yet (a first dataset run killed before its end) or a damaged one:
        # every source directory, damaged or not
        if not on_disk and record_damage is None:
            return None
        entries = [(name, None) for name in on_disk]
    sources, steps = [], []
    if record_damage is not None:
        steps.append(f"{DATASET_RECORD}: {record_damage['code']}: the next dataset run sets it aside and "
                     "starts a new record (the sources' own state is untouched)")
    for name, last in entries:
        summary, damage = None, None
        try:
            summary = summarise(os.path.join(directory, name))
            if summary is not None:
                _source_line({"name": name, "last_run": "ran", "code": None, "summary": summary, "damage": None})
        except (StateDamaged, MergeInvalid) as exc:
            damage = _damage(exc, name)
        except (KeyError, TypeError, ValueError) as exc:
            # run.json has its members but not what they hold (a coverage block without its
            # members, a count that is not a number): the generation cannot be summarised
            summary, damage = None, {"code": STATE_DAMAGED, "file": os.path.join(name, "current", RUN_RECORD),
                                     "message": f"{os.path.join(directory, name, 'current', RUN_RECORD)}: cannot be "
                                                f"summarised ({type(exc).__name__}: {str(exc)[:200]}); `collection "
                                                "run --resync` sets the damaged generation aside and starts again"}
        except OSError as exc:
            damage = {"code": None, "file": os.path.join(name, os.path.relpath(exc.filename, os.path.join(
                directory, name))) if exc.filename else name, "message": f"cannot be read: {exc.strerror or exc}"}
        status = last["status"] if last else ("ran" if summary else "unknown")
        sources.append({"name": name, "last_run": status, "code": last.get("code") if last else None,
                        "dataset_run": last.get("dataset_run") if last else None,
                        "summary": summary, "damage": damage})
        if damage is not None and damage["code"] is not None:
            steps.append(f"{name}: {damage['code']}: `collection run DATASET --only {name} --resync --state "
                         f"{directory}` sets the damaged generation aside and starts again "
                         f"(`collection explain {damage['code']}`)")
        elif damage is not None:
            steps.append(f"{name}: check that {os.path.join(directory, damage['file'])} can be read")
        elif last and last["status"] == "refused":
            steps.append(f"{name}: last run refused with {last['code']}: `collection explain {last['code']}`")
        elif summary is not None:
            steps.extend(f"{name}: {line}" for line in summary["next"]
                         if not line.startswith("complete: nothing to do"))
        elif last is None or last["status"] not in ("not_collected", "not_chosen"):
            steps.append(f"{name}: no generation yet: run the dataset")
    if not steps:
        steps.append("every source is complete: nothing to do until the publishers change")
    damaged = record_damage is not None or any(s["damage"] for s in sources)
    return {"state": os.path.abspath(directory), "dataset": record["dataset"] if record else None,
            "dataset_run": record["dataset_run"] if record else None, "record_damage": record_damage,
            "damaged": damaged, "sources": sources, "next": steps}


def _source_line(entry: dict) -> str:
    summary, damage = entry["summary"], entry["damage"]
    if damage is not None:
        return f"{entry['name']}: {damage['code'] or 'unreadable'}: {damage['message']}"
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


def _dataset_page_lines(state: str, entry: dict) -> list[str]:
    summary = entry.get("summary")
    if not isinstance(summary, dict) or not summary.get("failed_pages"):
        return []
    return failure_lines.page_lines(summary["failed_pages"], os.path.join(state, entry["name"], "current"),
                                    source=entry["name"], indent="    ")


def gate_advice(record: dict) -> list[str]:
    """Issue 24 point 2: the last run was stopped by a gate fault after it fetched pages (the
    generation kept them); its pending pages wait for the gate, not for the publisher."""
    fault = record.get("gate_failure")
    if not isinstance(fault, dict) or not isinstance(fault.get("message"), str):
        return []
    return [f"the last run was stopped by the politeness gate (GATE_UNAVAILABLE: {fault['message'][:300]}); "
            "the pages it fetched are kept: make the gate work, then run again for the pending ones"]


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


def gate_holds(hosts: set[str], gate_value: str | None,
               ca_bundle: str | None = None) -> tuple[list | None, str | None]:
    """(the holds on `hosts` now, None) read from the gate `--gate` names (the local gate by
    default, as `run`), or (None, why not). Only reads: `hold` never creates or changes a record."""
    from collection.fetch.fetcher import ARRIVAL_MARGIN_SECONDS
    from collection.fetch.gate import GATE_ENV, GateUnavailable, parse_gate

    try:
        gate = parse_gate(gate_value or os.environ.get(GATE_ENV), ARRIVAL_MARGIN_SECONDS, ca_bundle=ca_bundle)
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
@click.option("--gate-ca-bundle", "gate_ca_bundle", default=None, metavar="FILE",
              help="The CA certificates of a rediss:// gate (as `run --gate-ca-bundle`).")
def command(directory: str, as_json: bool, gate_value: str | None, gate_ca_bundle: str | None) -> None:
    """Summarise the state directory DIRECTORY: coverage, pages by state, what to do next."""
    if os.path.lexists(os.path.join(directory, DATASET_RECORD)):
        # a dataset directory, whatever its sources are named (one may be `current`)
        _print_dataset(_with_holds(_dataset_or_exit(directory), directory, gate_value, gate_ca_bundle), directory,
                       as_json)
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
        dataset = _dataset_or_exit(directory)
        if dataset is not None:
            _print_dataset(_with_holds(dataset, directory, gate_value, gate_ca_bundle), directory, as_json)
    if summary is None:
        if as_json:
            click.echo(ordered_json({"state": directory, "generation": None}))
        click.echo(f"{directory}: no generation yet (run `collection run RECIPE --state {directory}`)", err=True)
        sys.exit(1)
    try:
        holds, problem = gate_holds(origin_hosts(directory), gate_value, gate_ca_bundle)
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
    for line in failure_lines.page_lines(summary["failed_pages"], os.path.join(summary["state"], "current")):
        click.echo(line)
    for c in summary["corrections"][:10]:
        click.echo(f"  last run corrected {c['page_id']} (revision {c['revision']})")
    for line in summary["next"]:
        click.echo(f"  → {line}")
    sys.exit(0)


def _dataset_or_exit(directory: str) -> dict | None:
    try:
        return summarise_dataset(directory)
    except OSError as exc:          # DIR itself cannot be listed
        click.echo(f"collection status: cannot read {directory}: {exc.strerror or exc}", err=True)
        sys.exit(2)


def _with_holds(dataset: dict, directory: str, gate_value: str | None, ca_bundle: str | None = None) -> dict:
    """The dataset summary with the gate's holds on every source's origins."""
    if dataset is None:
        return dataset
    hosts: set[str] = set()
    for entry in dataset["sources"]:
        try:
            hosts |= origin_hosts(os.path.join(directory, entry["name"]))
        except (OSError, ValueError, KeyError, MergeInvalid, StateDamaged):
            pass            # that source's line says what is wrong with it
    holds, problem = gate_holds(hosts, gate_value, ca_bundle)
    dataset["holds"] = [h.to_json() for h in holds] if holds is not None else None
    dataset["next"] = dataset["next"] + _hold_lines(holds, problem)
    return dataset


def _print_dataset(dataset: dict, directory: str, as_json: bool) -> None:
    """A line per source, damaged or not; exit 2 when the dataset record or any source is
    damaged (as `status` on one damaged source directory), else 0."""
    if as_json:
        click.echo(ordered_json(dataset))
    else:
        title = f"dataset {dataset['dataset']}, run {dataset['dataset_run']}" if dataset["dataset"] else "dataset"
        click.echo(f"{dataset['state']}: {title}")
        if dataset["record_damage"] is not None:
            damage = dataset["record_damage"]
            click.echo(f"  {damage['file']}: {damage['code']}: {damage['message']}")
        for entry in dataset["sources"]:
            click.echo(f"  {_source_line(entry)}")
            for line in _dataset_page_lines(dataset["state"], entry):
                click.echo(line)
        for line in dataset["next"]:
            click.echo(f"  → {line}")
    if dataset["damaged"]:
        named = [d["file"] for d in [dataset["record_damage"], *(s["damage"] for s in dataset["sources"])] if d]
        click.echo(f"collection status: {directory}: damaged: {', '.join(named)}", err=True)
        sys.exit(2)
    sys.exit(0)
