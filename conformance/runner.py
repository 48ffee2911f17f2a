"""The runner: drives N harness processes through the suite and collects verdicts."""

from __future__ import annotations

import fnmatch
import queue
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

from conformance import OPTIONAL_CAPABILITIES, compare, failure_detail, needs as runner_needs, versions
from conformance.protocol import Harness, ProtocolError
from conformance.suite import Case, load_cases

DEFAULT_CLOCK_START = "2024-01-01T00:00:00Z"
DEFAULT_TOKEN = "ConformanceBot"
DEFAULT_INFO_URL = "https://conformance.invalid/crawler"
# Checked on every loopback run whatever the case says (FETCH-01, FETCH-02, FETCH-24).
DEFAULT_WIRE = {"no_credentials": True,
                "user_agent_pattern": rf"{DEFAULT_TOKEN}-PublicHttps/1\.0 \(\+{DEFAULT_INFO_URL.replace('.', chr(92) + '.')}\)"}

PASS, FAIL, SKIPPED, ERRORED = "pass", "fail", "skipped", "errored"
# D-75: every member the negotiated protocol can express agreed, but the case also expects
# members it cannot (v2 ledger facts from a v1 harness): neither pass nor fail.
NOT_APPLICABLE = "not applicable"
STATUSES = (PASS, FAIL, ERRORED, SKIPPED, NOT_APPLICABLE)


@dataclass
class Verdict:
    case: str
    area: str
    mode: str
    status: str
    clauses: tuple[str, ...]
    diffs: list[dict] = field(default_factory=list)
    message: str = ""
    seconds: float = 0.0
    run: int | None = None
    needs: tuple[str, ...] = ()          # capabilities the case needs (the mode's and kind's included)
    applicable: bool = True              # False: the case does not run in this mode at all
    description: str = ""
    protocol: int | None = None          # the version the harness answered for this case
    beyond: list[str] = field(default_factory=list)   # members the protocol cannot express (D-75)
    needs_protocol: int | None = None    # the version that would express them
    served: list[dict] = field(default_factory=list)  # the failing run's exchanges, as served
    facts: dict = field(default_factory=dict)         # the harness's own codes and ledger facts (failing run)
    rerun: str = ""                       # the command that runs this case alone (failures)

    @property
    def optional(self) -> bool:
        return any(c in OPTIONAL_CAPABILITIES for c in self.needs)

    @property
    def required_skip(self) -> bool:
        """A case every implementation must run was skipped: the run is not green."""
        return self.status == SKIPPED and self.applicable and not self.optional

    def as_json(self) -> dict:
        return {"case": self.case, "area": self.area, "mode": self.mode, "status": self.status,
                "clauses": list(self.clauses), "run": self.run, "diffs": self.diffs,
                "message": self.message, "seconds": round(self.seconds, 3), "needs": list(self.needs),
                "optional": self.optional, "applicable": self.applicable, "description": self.description,
                "protocol": self.protocol, "beyond_protocol": self.beyond, "needs_protocol": self.needs_protocol,
                "served": self.served, "harness_facts": self.facts, "rerun": self.rerun}


@dataclass
class Outcome:
    verdicts: list[Verdict]
    implementation: dict | None
    mode: str
    seconds: float
    restarts: int = 0
    impl: str = ""

    @property
    def protocols(self) -> list[int]:
        """The protocol versions the harness answered (one, unless restarts disagreed)."""
        return sorted({v.protocol for v in self.verdicts if v.protocol is not None})

    @property
    def not_applicable(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.status == NOT_APPLICABLE]

    @property
    def ok(self) -> bool:
        """Green: no failure, no error, and no required case skipped. `not applicable` does
        not make a run red (D-75): the protocol it negotiated is one the suite accepts, and the
        summary names the cases it could not judge."""
        return (bool(self.verdicts) and all(v.status in (PASS, SKIPPED, NOT_APPLICABLE) for v in self.verdicts)
                and not any(v.required_skip for v in self.verdicts))


def select(cases: list[Case], pattern: str | list[str] | tuple[str, ...] | None) -> list[Case]:
    """Cases whose id, area/id or a clause contains one of the patterns (or matches it as a glob)."""
    if not pattern:
        return cases
    patterns = [pattern] if isinstance(pattern, str) else list(pattern)
    chosen = []
    for case in cases:
        names = (case.id, f"{case.area}/{case.id}", *case.clauses)
        for p in patterns:
            globbing = any(ch in p for ch in "*?[")
            if any(fnmatch.fnmatchcase(n, p) if globbing else p in n for n in names):
                chosen.append(case)
                break
    return chosen


def needs(case: Case, mode: str) -> tuple[str, ...]:
    return (mode, "registration" if case.kind == "registration" else "runs", *case.requires)


def configure_message(mode: str, server=None, clock_start: str = DEFAULT_CLOCK_START) -> dict:
    message = {"cmd": "configure", "mode": mode, "clock": {"start": clock_start, "virtual": mode == "inline"},
               "user_agent": {"token": DEFAULT_TOKEN, "info_url": DEFAULT_INFO_URL}}
    if mode == "loopback":
        message["loopback"] = {"ca_bundle": server.ca_path, "resolve": server.resolve_map()}
    return message


class _Worker:
    def __init__(self, impl: str, mode: str, timeout: float, env: dict | None, log) -> None:
        self.mode = mode
        self.server = None
        if mode == "loopback":
            from conformance.loopback import FixtureServer

            self.server = FixtureServer()
        self.harness = Harness(impl, env=env, timeout=timeout, log=log)
        self.start_error: str | None = None
        try:
            self.implementation = self.harness.start(configure_message(mode, self.server))
        except ProtocolError as exc:
            self.implementation = None
            self.start_error = str(exc)

    def close(self) -> None:
        self.harness.stop()
        if self.server is not None:
            self.server.close()

    def run_case(self, case: Case) -> Verdict:
        began = time.monotonic()
        verdict = Verdict(case.id, case.area, self.mode, PASS, case.clauses, needs=needs(case, self.mode),
                          applicable=self.mode in case.modes, description=case.data.get("description", ""))
        self.harness.owner = case.id
        try:
            if self.harness.proc is None:
                self.harness.restart()
            verdict.protocol = self.harness.version
            self._run(case, verdict)
        except ProtocolError as exc:
            verdict.status, verdict.message = ERRORED, str(exc)
            self._restart(verdict)
        if verdict.status == PASS:
            self._judge_protocol(case, verdict)
        verdict.seconds = time.monotonic() - began
        return verdict

    def _judge_protocol(self, case: Case, verdict: Verdict) -> None:
        """Everything compared agreed; if the case expects members the negotiated protocol
        cannot carry, it was not judged in full: not applicable, never pass (D-75)."""
        missing = versions.beyond(case.data, self.harness.version)
        if not missing:
            return
        verdict.status = NOT_APPLICABLE
        verdict.needs_protocol = max(need for _, _, need in missing)
        verdict.beyond = [f"run {n}: {member}" for n, member, _ in missing]
        runs = sorted({n for n, _, _ in missing})
        verdict.message = (f"protocol v{self.harness.version} cannot express {len(missing)} expected member(s) "
                           f"of run(s) {', '.join(map(str, runs))} (they need v{verdict.needs_protocol}): "
                           f"{', '.join(m for _, m, _ in missing[:6])}{' …' if len(missing) > 6 else ''}; "
                           f"the rest was compared and agreed")

    def _restart(self, verdict: Verdict) -> None:
        try:
            self.harness.restart()
        except ProtocolError as again:
            verdict.message += f"; restart failed: {again}"
            self.harness.kill()

    def blame_stray_output(self, verdict: Verdict, *, stopping: bool = False) -> None:
        """Output the harness wrote after its reply to `verdict`'s case (checked before the
        next command, or once it stopped) belongs to that case: it errors, not the next one."""
        stray = self.harness.take_stray(verdict.case)
        if not stray:
            return
        verdict.status = ERRORED
        verdict.message = (f"out_of_turn: the harness wrote {len(stray)} line(s) after its reply to this case: "
                           f"{stray[0][:200]!r}")

    def _skip_reason(self, case: Case) -> str | None:
        if self.mode not in case.modes:
            return f"case does not run in {self.mode} mode"
        caps = self.harness.capabilities
        missing = [c for c in (*case.requires, self.mode, "registration" if case.kind == "registration" else "runs")
                   if c not in caps]
        if missing:
            return f"implementation lacks {', '.join(missing)}"
        return None

    def _run(self, case: Case, verdict: Verdict) -> None:
        reason = self._skip_reason(case)
        if reason:
            verdict.status, verdict.message = SKIPPED, reason
            return
        data = case.data
        caps = self.harness.capabilities
        if case.kind == "registration":
            message = {"id": case.id, "kind": "registration"}
            for key in ("recipe", "recipe_text"):
                if key in data:
                    message[key] = data[key]
            if self.server:
                self.server.load([])
            reply = self.harness.run(message)
            if not self._reply_ok(reply, verdict):
                return
            verdict.diffs = compare.compare_registration(data["expect"], reply["result"], caps)
            if self.server and self.server.seen():    # REG-37: registration makes no request
                verdict.diffs.append({"what": "requests during registration", "expected": [],
                                      "actual": [r["url"] for r in self.server.seen()]})
            verdict.status = FAIL if verdict.diffs else PASS
            if verdict.diffs:
                verdict.facts = failure_detail.registration_facts(data["expect"], reply["result"])
            return
        previous: list[dict | None] = []
        recipe = data["recipe"]
        runs = data["runs"]
        if self.mode == "inline":
            times = compare.TimeBook(compare.parse_instant(DEFAULT_CLOCK_START), virtual=True)
        else:   # the harness runs on the wall clock: instants lie between now and the comparison
            times = compare.TimeBook(int(time.time()), virtual=False, now=time.time)
        bound = versions.bound_names(data, self.harness.version)
        for n, run in enumerate(runs, 1):
            times.begin_run(run.get("clock_advance_seconds", 0),
                            run["expect"].get("clock_slack_seconds", compare.DEFAULT_SLACK_SECONDS))
            recipe = run.get("recipe", recipe)
            message: dict[str, Any] = {"id": case.id, "kind": "runs", "run": n, "of": len(runs), "recipe": recipe}
            for key in ("resync", "deadline_seconds", "action_plan", "clock_advance_seconds"):
                if key in run:
                    message[key] = run[key]
            if self.server:
                self.server.load(run["exchanges"])
            else:
                message["exchanges"] = run["exchanges"]
            reply = self.harness.run(message)
            if not self._reply_ok(reply, verdict):
                verdict.run = n
                return
            result = reply["result"]
            seen = self.server.seen() if self.server else None
            urls = [r["url"] for r in seen] if seen is not None else None
            expect = versions.expectation_at(run["expect"], self.harness.version, bound)
            diffs = compare.compare_run(expect, result, capabilities=caps, previous=previous, request_urls=urls,
                                        times=times)
            if seen is not None:
                diffs.extend(compare.compare_wire({**DEFAULT_WIRE, **run["expect"].get("wire", {})}, seen))
            previous.append(result)
            if diffs:
                verdict.status, verdict.diffs, verdict.run = FAIL, diffs, n
                requested = urls if urls is not None else [r["url"] for r in result.get("requests") or []]
                verdict.served = failure_detail.served(run["exchanges"], requested)
                verdict.facts = failure_detail.run_facts(run["expect"], result)
                return

    @staticmethod
    def _reply_ok(reply: dict, verdict: Verdict) -> bool:
        if "skipped" in reply:
            verdict.status, verdict.message = SKIPPED, reply["skipped"]
            return False
        if "errored" in reply:
            verdict.status, verdict.message = ERRORED, reply["errored"].get("message", "")
            return False
        return True


def run_suite(impl: str, *, cases: list[Case] | None = None, pattern: str | None = None, jobs: int = 1,
              mode: str = "inline", timeout: float = 60.0, env: dict | None = None, log=None,
              on_verdict: Callable[[Verdict], None] | None = None, stop_on_failure: bool = False,
              keep_order: bool = False) -> Outcome:
    """Run the chosen cases. `stop_on_failure`: take no new case after the first failure or
    error (-x); `keep_order`: run cases in the order given instead of longest first."""
    runner_needs.require("run", mode)
    began = time.monotonic()
    chosen = select(load_cases() if cases is None else cases, pattern)
    work: queue.Queue = queue.Queue()
    # longest first (runs with many exchanges) so parallel workers finish together
    for case in (chosen if keep_order else
                 sorted(chosen, key=lambda c: -sum(len(r.get("exchanges", [])) for r in c.data.get("runs", [])))):
        work.put(case)
    stopped = threading.Event()
    verdicts: list[Verdict] = []
    lock = threading.Lock()
    implementation: dict | None = None
    restarts = 0

    def worker() -> None:
        nonlocal implementation, restarts
        try:
            w = _Worker(impl, mode, timeout, env, log)
        except Exception as exc:       # e.g. the fixture server could not start
            w = None
            error = f"{type(exc).__name__}: {exc}"
        held: Verdict | None = None      # reported once the harness has been seen quiet after it

        def report(v: Verdict) -> None:
            nonlocal implementation
            if stop_on_failure and v.status in (FAIL, ERRORED):
                stopped.set()
            with lock:
                verdicts.append(v)
                if w is not None and w.implementation:
                    implementation = w.implementation
            if on_verdict:
                on_verdict(v)

        try:
            while True:
                if stopped.is_set():
                    break
                try:
                    case = work.get_nowait()
                except queue.Empty:
                    break
                if w is None or w.start_error:
                    v = Verdict(case.id, case.area, mode, ERRORED, case.clauses, needs=needs(case, mode),
                                description=case.data.get("description", ""),
                                message=(f"harness did not start: {w.start_error}" if w else
                                         f"the runner could not prepare a worker (not the harness's fault): {error}"))
                else:
                    try:
                        v = w.run_case(case)
                    except Exception:     # a runner bug must not hang the suite
                        v = Verdict(case.id, case.area, mode, ERRORED, case.clauses, needs=needs(case, mode),
                                    message=traceback.format_exc())
                # the previous case is reported once the harness answered the next one: output it
                # wrote after its reply has arrived by then and is blamed on it
                if held is not None:
                    if w is not None and not w.start_error:
                        w.blame_stray_output(held)
                    report(held)
                held = v
        finally:
            if w is not None:
                with lock:
                    restarts += w.harness.restarts
                w.close()
                if held is not None and not w.start_error:
                    w.blame_stray_output(held, stopping=True)
            if held is not None:
                report(held)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, min(jobs, len(chosen) or 1)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    verdicts.sort(key=lambda v: (v.area, v.case))
    return Outcome(verdicts, implementation, mode, time.monotonic() - began, restarts, impl)
