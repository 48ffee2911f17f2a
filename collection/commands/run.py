"""`collection run RECIPE --state DIR ...`: one run of a collection, or of every collection
source of a dataset (docs/run.md).

Exit 0 for a run that succeeded, complete or not (an incomplete corpus is not a failure) —
for a dataset, when every chosen collection source ran; 1 for a registration or run-level
refusal (the code on stderr, and in the JSON with --json) — for a dataset, when any chosen
source was refused; 2 for usage errors (bad flags, unreadable files, a recipe `run` cannot take).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from collection import codes
from collection.commands import examples, failure_lines

from collection.canonical import ordered_json
from collection.fetch.clock import SystemClock, VirtualClock
from collection.fetch.egress import Egress, parse_resolve
from collection.recipe.refusal import RefusedError
from collection.run.loop import RunSettings, RunUsageError, Shell, execute, gate_refusal, load_plan
from collection.store.generations import DEFAULT_KEEP, StateLocked
from collection.fetch.transport import DEFAULT_INFO_URL, DEFAULT_TOKEN


def _usage(message: str) -> None:
    click.echo(f"collection run: {message}", err=True)
    sys.exit(2)


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        _usage(f"cannot read {what} {path}: {exc.strerror or exc}")
        raise AssertionError  # unreachable


def _recording(transport, path: str, run_number: int, clock):
    """Wrap a transport so run `run_number` of the state directory is written as a fixture
    (`--record`), each exchange stamped with its end on the run's clock (so a replay gives the
    same timestamps). The recording transport lives in its own module; this plugs it in."""
    try:
        from collection.recording.record import RecordingTransport
    except ImportError:
        raise RunUsageError("--record is not available in this build") from None
    return RecordingTransport(transport, path, run=run_number, clock=clock)


def build_shell(*, replay: str | None, record: str | None, ca_bundle: str | None, resolve: tuple[str, ...],
                token: str | None, info_url: str | None, gate: str | None = None,
                gate_ca_bundle: str | None = None) -> Shell:

    token = token or DEFAULT_TOKEN
    info_url = info_url or DEFAULT_INFO_URL
    try:
        resolve_map = dict(parse_resolve(text) for text in resolve)
    except ValueError as exc:
        raise RunUsageError(str(exc)) from None
    if replay is not None:
        from collection.recording.format import FixtureError
        from collection.recording.replay import ReplayTransport, load_fixture

        try:
            fixture = load_fixture(replay)
        except FixtureError as exc:
            if exc.code is not None:        # a bound of this process (a gzip bomb, a memory limit): a refusal
                from collection.recipe.refusal import Refusal

                raise RefusedError([Refusal(exc.code, "", f"cannot replay {replay}: {exc.message}",
                                            "a fixture is read within the process's memory (docs/fixtures.md)")]) from None
            raise RunUsageError(f"cannot replay {replay}: {exc}") from None
        except (OSError, ValueError) as exc:
            raise RunUsageError(f"cannot replay {replay}: {exc}") from None
        clock = VirtualClock(turns=True)    # deterministic replays on several workers

        def transport_for(run_number: int):
            # A recorded run starts its virtual clock where the live run started (a fixture
            # without timing keeps the fixed epoch).
            started = fixture.started_at(run_number)
            if started is not None:
                clock.set_wall(started)
            transport = ReplayTransport(fixture, clock, run=run_number)
            return _recording(transport, record, run_number, clock) if record else transport

        def egress_for(source):
            # Replay opens no connection: map every allowed host so no name is resolved.
            hosts = {origin.split("://", 1)[1] for origin in source.collection.pages.allowed_origins}
            return Egress({(host, 443): ("127.0.0.1", 443) for host in hosts})

        return Shell(clock, transport_for, egress_for, token)

    from collection.fetch.urllib3_transport import Urllib3Transport

    try:
        from collection.fetch.transport import user_agent

        user_agent(token, info_url)
    except ValueError as exc:
        raise RunUsageError(str(exc)) from None

    clock = SystemClock()

    def live_transport(run_number: int):
        transport = Urllib3Transport(ca_bundle=ca_bundle, token=token, info_url=info_url)
        return _recording(transport, record, run_number, clock) if record else transport

    from collection.fetch.fetcher import ARRIVAL_MARGIN_SECONDS
    from collection.fetch.gate import GATE_ENV, GateUnavailable, parse_gate

    gate = gate or os.environ.get(GATE_ENV)
    try:
        shared_gate = parse_gate(gate, ARRIVAL_MARGIN_SECONDS, ca_bundle=gate_ca_bundle)
    except ValueError as exc:
        raise RunUsageError(str(exc)) from None       # its message is already redacted
    except GateUnavailable as exc:
        raise gate_refusal(exc, gate) from None       # which redacts the address
    return Shell(clock, live_transport, lambda source: Egress(resolve_map), token, gate=shared_gate)


def _took(record: dict) -> str:
    """How long the run took. A replay's own clock is the recorded crawl's (virtual) time, which
    says how long the publisher would have been busy, not how long the operator waited."""
    if record["clock"] == "virtual":
        return f"{record['duration_seconds']:.0f} s recorded, replayed in {record['wall_seconds']:.1f} s"
    return f"{record['wall_seconds']:.1f} s"


def human_summary(record: dict, state_dir: str | None = None, recipe: str = "RECIPE",
                  source: str | None = None) -> str:
    """`state_dir`: where the generation is (to name its kept failing bodies); `source`: the
    dataset source's name (for `collection decode --source`)."""
    cov = record["coverage"]
    req = record["requests"]
    lines = [
        f"{record['source']}: run {record['run_number']} ({record['mode']}) → generation {record['generation']}",
        f"  {'complete' if cov['complete'] else 'incomplete'}"
        + (f" (budget: {cov['budget_exhausted']})" if cov["budget_exhausted"] else "")
        + (" (relation truncated at max_rows)" if record["truncated"] else ""),
        f"  discovered {cov['discovered']} in {cov['discovery_requests']} listing requests"
        + ("" if cov["discovery_complete"] else " (discovery incomplete)")
        + (f"; discovery failed at {cov['discovery_failure']}" if cov["discovery_failure"] else ""),
        f"  fetched {cov['fetched_this_run']} (unchanged {cov['unchanged']}, changed {cov['changed']}), "
        f"failed {cov['failed_this_run']} this run",
        f"  known {cov['known']}: pending {cov['pending']}, failed {cov['failed']}, skipped {cov['skipped']}; "
        f"{record['rows']} rows",
        f"  requests {req['total']} (listing {req['listing']}, page {req['page']}, redirect {req['redirect']}, "
        f"retry {req['retry']}, robots {req['robots']}), {record['bytes']} bytes, {_took(record)}",
        f"  coverage {ordered_json(cov)}",
    ]
    warning = record.get("discovery", {}).get("warning")
    if warning:
        lines.insert(3, f"  warning: {warning}")
    for origin, until in sorted((record.get("held_until") or {}).items()):
        lines.append(f"  held: {origin} until {until} (Retry-After or Crawl-delay); its pages stay pending "
                     "(`collection gate show`, `collection gate clear`)")
    for c in record["corrections"][:10]:
        lines.append(f"  corrected {c['page_id']} → revision {c['revision']}")
    if len(record["corrections"]) > 10:
        lines.append(f"  … and {len(record['corrections']) - 10} more corrections")
    failing = record.get("failures", {}).get("failed_pages") or []
    generation_dir = (os.path.join(os.path.abspath(state_dir), "generations", record["generation"])
                      if state_dir else None)
    lines += failure_lines.page_lines(failing, generation_dir, recipe=recipe, source=source)
    lines += [f"  → {line}" for line in failure_lines.advice_lines(failure_lines.codes_of(failing))]
    return "\n".join(lines)


@click.command("run", epilog=examples(
    "collection run fixtures/recipes/council_decisions.json --state /tmp/cd --replay fixtures/council_decisions/council_decisions.fixture.json.gz",
    "collection run recipe.json --state /var/lib/collection/decisions --deadline 3600 --json",
))
@click.argument("recipe", type=click.Path(dir_okay=False))
@click.option("--state", "state_dir", required=True, type=click.Path(file_okay=False),
              help="The state directory (created if missing); DIR/current names the latest generation.")
@click.option("--resync", is_flag=True, help="Start from an empty ledger and relation and rediscover the whole corpus.")
@click.option("--plan", "plan_path", type=click.Path(dir_okay=False),
              help="An action-plan JSON document; one carrying `schedule` is refused with RESYNC_REQUIRED.")
@click.option("--deadline", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="Stop choosing work after this many seconds and write what was fetched.  [default: no deadline]")
@click.option("--json", "as_json", is_flag=True, help="Print the run record (schemas/run-record.schema.json).")
@click.option("--ca-bundle", type=click.Path(dir_okay=False), help="CA certificates to trust.")
@click.option("--resolve", multiple=True, metavar="HOST:PORT:ADDR:PORT",
              help="Connect to ADDR:PORT for HOST:PORT, as curl --resolve (SNI and certificate keep the name).")
@click.option("--user-agent-token", default=None,
              help=f"Product token of the User-Agent, also matched against robots.txt user-agent lines."
                   f"  [default: {DEFAULT_TOKEN}]")
@click.option("--user-agent-url", default=None,
              help=f"The https page about this crawler that the User-Agent names.  [default: {DEFAULT_INFO_URL}]")
@click.option("--keep", type=click.IntRange(min=1), default=DEFAULT_KEEP, show_default=True,
              help="Generations kept in the state directory.")
@click.option("--log-json", is_flag=True, help="Log events as JSON lines on stderr.")
@click.option("--replay", type=click.Path(dir_okay=False), help="Serve a recorded fixture on a virtual clock.")
@click.option("--record", type=click.Path(dir_okay=False), help="Record the run's exchanges as a fixture.")
@click.option("--gate", default=None, metavar="GATE",
              help="The politeness gate shared with other runs: `local` (the default: every run of this user "
                   "on this machine), `local:DIR`, `redis://[USER:PASSWORD@]HOST:PORT/DB` (a fleet; `rediss://` "
                   "for TLS, `unix:///PATH` for a socket; also COLLECTION_GATE, and the password may be in "
                   "COLLECTION_GATE_PASSWORD instead), or `none` — only for a run the operator knows is alone, "
                   "since other runs then cannot see its requests. Replays never use a shared gate.")
@click.option("--gate-ca-bundle", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="CA certificates a rediss:// gate's certificate is checked against (also "
                   "COLLECTION_GATE_CA_BUNDLE).  [default: the system's]")
@click.option("--only", multiple=True, metavar="NAME", help="Dataset: run only this source (repeatable).")
@click.option("--metrics-file", "metrics_file", default=None, metavar="PATH",
              help="Write the run's figures to PATH (*.prom) in the Prometheus text format, atomically, "
                   "for node_exporter's textfile collector (also when the run is refused).")
def command(recipe, state_dir, resync, plan_path, deadline, as_json, ca_bundle, resolve, user_agent_token,
            user_agent_url, keep, log_json, replay, record, gate, gate_ca_bundle, only, metrics_file) -> None:
    """Run the collection RECIPE (a source, or every collection source of a dataset into
    --state/<source name>/) against its publisher and write a new generation to --state."""
    from collection.run.dataset import DatasetRecordError, DatasetSettings, execute_dataset, is_dataset
    from collection.run.progress import JsonLog, Progress

    data = _read(recipe, "recipe")
    dataset = is_dataset(data)
    if only and not dataset:
        _usage("--only picks sources of a dataset; RECIPE is a source document")
    if metrics_file is not None:
        from collection.run.metrics import check_path

        problem = check_path(metrics_file)
        if problem:
            _usage(problem)
    metrics = _Metrics(metrics_file, data, state_dir, dataset)
    try:
        plan = load_plan(_read(plan_path, "action plan"), f"the action plan {plan_path}") if plan_path else None
        shell = build_shell(replay=replay, record=record, ca_bundle=ca_bundle, resolve=resolve,
                            token=user_agent_token, info_url=user_agent_url, gate=gate,
                            gate_ca_bundle=gate_ca_bundle)
        log = JsonLog(shell.clock) if log_json else None
        if log_json:
            shell.warn = lambda text: None      # the `origin_held` event says it on stderr instead
        if dataset:
            try:
                result = execute_dataset(data, DatasetSettings(state_dir, only=tuple(only), resync=resync,
                                                               deadline_seconds=deadline, keep=keep, plan=plan),
                                         shell, log=log, warn=lambda line: click.echo(f"collection run: {line}",
                                                                                      err=True))
            except DatasetRecordError as exc:
                # the sources' own generations are written: report them, then the record (exit 2)
                click.echo(f"collection run: {exc}", err=True)
                metrics.dataset(exc.record)
                _dataset_exit(exc.record, as_json, state_dir, recipe, record_failed=True)
            metrics.dataset(result)
            _dataset_exit(result, as_json, state_dir, recipe)
        settings = RunSettings(state_dir, resync=resync, deadline_seconds=deadline, keep=keep, plan=plan)
        progress = Progress if sys.stderr.isatty() and not log_json else None
        result = execute(data, settings, shell, log=log, progress_factory=progress)
    except RunUsageError as exc:
        _usage(str(exc))
    except OSError as exc:
        # The disk, not the recipe: the generation being written is abandoned (the next run
        # removes it) and `current` still names the previous one, so nothing is lost.
        where = f" ({exc.filename})" if getattr(exc, "filename", None) else ""
        _usage(f"cannot use the state directory {state_dir}{where}: {exc.strerror or exc}; "
               "the previous generation is unchanged")
    except (RefusedError, StateLocked) as exc:
        refusals = exc.refusals if isinstance(exc, RefusedError) else [exc.to_refusal()]
        for refusal in refusals:
            # a registration refusal is the recipe's: name the file, as validate does
            entry = codes.lookup(refusal.code)
            click.echo(("" if entry is None or entry.kind != codes.REGISTRATION else f"{recipe}: ")
                       + f"{refusal.code}: {refusal.message} [{refusal.rule}]"
                       + (f" at {refusal.pointer}" if refusal.pointer else ""), err=True)
        if as_json:
            shown = {"refused": True, "code": refusals[0].code, "refusals": [r.to_json() for r in refusals]}
            if getattr(exc, "requests", None) is not None:
                # GATE_UNAVAILABLE mid-run: the requests made, and the generation written if any
                shown["requests"] = exc.requests
                shown["record"] = exc.record
            click.echo(ordered_json(shown))
        metrics.refused()
        sys.exit(1)
    metrics.source(result)
    if as_json:
        click.echo(ordered_json(result))
    else:
        click.echo(human_summary(result, state_dir, recipe))
    sys.exit(0)


class _Metrics:
    """--metrics-file: written after the run (or its refusal); a failure to write it is said
    on stderr and makes the exit 2, since a monitor reading a stale file would be misled."""

    def __init__(self, path: str | None, data: bytes, state_dir: str, dataset: bool):
        self.path, self.data, self.state_dir, self.is_dataset = path, data, state_dir, dataset

    def _write(self, samples) -> None:
        if self.path is None:
            return
        from collection.run.metrics import render
        from collection.store.generations import write_atomically

        try:
            write_atomically(self.path, render(samples).encode("utf-8"))
        except OSError as exc:
            click.echo(f"collection run: cannot write --metrics-file {self.path}: {exc.strerror or exc} "
                       "(the run itself is as reported)", err=True)
            sys.exit(2)

    def source(self, record: dict) -> None:
        from collection.run.metrics import source_samples

        self._write(source_samples({"source": record["source"]}, record, refused=False))

    def dataset(self, result: dict) -> None:
        from collection.run.metrics import source_samples

        samples = []
        for entry in result["sources"]:
            if entry["status"] not in ("ran", "refused", "error"):
                continue        # not chosen (--only) or another adapter's: another job's figures
            labels = {"dataset": result["dataset"], "source": entry["name"]}
            record = entry["record"] if entry["status"] == "ran" else None
            samples += source_samples(labels, record, refused=record is None,
                                      last_success=None if record else
                                      _current_record(os.path.join(self.state_dir, entry["name"])))
        self._write(samples)

    def refused(self) -> None:
        """A refused run writes nothing to the state, so the last success is the current
        generation's (none when there is none): never this refusal's time."""
        if self.path is None:
            return
        from collection.run.metrics import source_samples

        name = _recipe_name(self.data)
        if self.is_dataset:
            labels = {"dataset": name}
            last = None
        else:
            labels = {"source": name}
            last = _current_record(self.state_dir)
        self._write(source_samples(labels, None, refused=True, last_success=last))


def _recipe_name(data: bytes) -> str:
    import json

    try:
        name = json.loads(data).get("name")
    except (ValueError, AttributeError, RecursionError):
        name = None
    return name if isinstance(name, str) else ""


def _current_record(directory: str) -> dict | None:
    from collection.store.generations import check_generation, read_record_file

    try:
        current = check_generation(directory)
        return read_record_file(directory, current) if current else None
    except Exception:  # noqa: BLE001 - a damaged state directory has no last success to report
        return None


def dataset_summary(result: dict, state_dir: str | None = None, recipe: str = "RECIPE") -> str:
    lines = [f"dataset {result['dataset']}: run {result['dataset_run']} (gate {result['gate']})"]
    for source in result["sources"]:
        status = source["status"]
        if status == "ran":
            lines.append(human_summary(source["record"], os.path.join(state_dir, source["name"]) if state_dir else None,
                                       recipe, source["name"]))
        elif status == "refused":
            first = source["refusals"][0]
            lines.append(f"{source['name']}: refused {source['code']}: {first['message']}"
                         + (f" at {first['pointer']}" if first["pointer"] else ""))
        elif status == "not_collected":
            lines.append(f"{source['name']}: not collected by this tool (adapter {source['adapter_id']})")
        elif status == "error":
            lines.append(f"{source['name']}: cannot use its state directory: {source['message']}")
        else:
            lines.append(f"{source['name']}: not chosen (--only)")
    counts = result["counts"]
    lines.append(f"{counts['ran']} ran, {counts['refused']} refused, {counts['not_collected']} not collected, "
                 f"{counts['not_chosen']} not chosen")
    return "\n".join(lines)


def _dataset_exit(result: dict, as_json: bool, state_dir: str | None = None, recipe: str = "RECIPE",
                  record_failed: bool = False) -> None:
    for source in result["sources"]:
        for refusal in source["refusals"]:
            click.echo(f"{source['name']}: {refusal['code']}: {refusal['message']} [{refusal['rule']}]"
                       + (f" at {refusal['pointer']}" if refusal["pointer"] else ""), err=True)
        if source["status"] == "error":
            click.echo(f"collection run: {source['name']}: cannot use its state directory: {source['message']}",
                       err=True)
    click.echo(ordered_json(result) if as_json else dataset_summary(result, state_dir, recipe))
    counts = result["counts"]
    sys.exit(2 if counts["error"] or record_failed else 1 if counts["refused"] else 0)
