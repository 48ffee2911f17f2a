"""The harness for this project's implementation (collection), protocol v2 (v1 when the
runner offers only that).

    python -m conformance.harnesses.collection_harness

The only module of the suite that imports `collection`, and only inside functions, so
the rest of the package stays standalone. Inline mode drives `collection.run.loop.execute`
with the replay transport on a virtual clock; loopback mode with the urllib3 transport,
the runner's CA bundle and its resolve map.

COLLECTION_MUTANT=<id> (audit/mutation.py) seeds one fault into collection before any
case runs, so the suite's strictness can be measured.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
import tempfile
import traceback
from datetime import datetime

PROTOCOL_VERSION = 2
CAPABILITIES = ["inline", "loopback", "registration", "runs", "virtual_clock", "codes:collection-v1",
                "action_plan", "deadline", "clock_advance", "transform:collection-v1"]


def _csv_rows(handle):
    """The ledger's rows, read with the state files' own reader (no 128 KiB field limit)."""
    from collection.merge import csvio

    rows = csvio.reader(handle)
    header = next(rows, [])
    return [dict(zip(header, row)) for row in rows]


def _apply_mutant() -> None:
    mutant = os.environ.get("COLLECTION_MUTANT")
    if not mutant:
        return
    import importlib.util
    from pathlib import Path

    path = os.environ.get("COLLECTION_MUTANTS_FILE") or str(Path(__file__).resolve().parents[2] / "audit" / "mutation.py")
    spec = importlib.util.spec_from_file_location("collection_mutation", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if hasattr(module, "_load_all"):
        module._load_all()
    module.apply(mutant)


class Session:
    def __init__(self) -> None:
        self.config: dict | None = None
        self.case_id: str | None = None
        self.state_dir: str | None = None
        self.clock = None
        self.version = 1
        self.root = tempfile.mkdtemp(prefix="collection-harness-")

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    # --- commands ---------------------------------------------------------------------
    def start(self, message: dict) -> dict:
        import collection

        _apply_mutant()
        self.version = PROTOCOL_VERSION if PROTOCOL_VERSION in message.get("versions", [1]) else 1
        return {"ready": True, "version": self.version,
                "implementation": {"name": "collection", "version": collection.__version__, "language": "python",
                                   "capabilities": CAPABILITIES}}

    def configure(self, message: dict) -> dict:
        self.config = message
        return {"configured": True}

    def run(self, case: dict) -> dict:
        if case["kind"] == "registration":
            return self._register(case)
        return self._run_step(case)

    # --- registration -------------------------------------------------------------------
    def _register(self, case: dict) -> dict:
        from collection.recipe.registration import register_bytes

        data = case["recipe_text"] if "recipe_text" in case else json.dumps(case.get("recipe"))
        registration = register_bytes(data.encode("utf-8"))
        return {"registrable": registration.registrable,
                "refusals": [{"code": r.code, "pointer": r.pointer, "message": r.message} for r in registration.refusals]}

    # --- runs -----------------------------------------------------------------------------
    def _run_step(self, case: dict) -> dict:
        from collection.fetch.clock import VirtualClock
        from collection.fetch.egress import Egress, parse_resolve
        from collection.recipe.refusal import RefusedError
        from collection.run.loop import RunSettings, Shell, execute

        mode = self.config["mode"]
        if case["run"] == 1 or case["id"] != self.case_id:
            if case["run"] != 1:
                raise RuntimeError(f"run {case['run']} of {case['id']} arrived without its run 1")
            if self.state_dir:
                shutil.rmtree(self.state_dir, ignore_errors=True)
            self.case_id = case["id"]
            self.state_dir = tempfile.mkdtemp(prefix="state-", dir=self.root)
            start = datetime.fromisoformat(self.config["clock"]["start"].replace("Z", "+00:00")).timestamp()
            self.clock = VirtualClock(start_wall=start, turns=True)
        if case.get("clock_advance_seconds"):
            self.clock.advance(case["clock_advance_seconds"])
        ua = self.config["user_agent"]
        seen: list[str] = []

        if mode == "inline":
            from collection.recording.format import parse_fixture
            from collection.recording.replay import ReplayTransport

            fixture = parse_fixture(case.get("exchanges", []))
            clock = self.clock

            def transport_for(run_number: int):
                return ReplayTransport(fixture, clock, run=1, on_request=lambda r: seen.append(r.url))

            def egress_for(source):
                hosts = {o.split("://", 1)[1] for o in source.collection.pages.allowed_origins}
                return Egress({(h, 443): ("127.0.0.1", 443) for h in hosts})

            shell = Shell(clock, transport_for, egress_for, ua["token"])
        else:
            from collection.fetch.clock import SystemClock
            from collection.fetch.urllib3_transport import Urllib3Transport

            loop = self.config["loopback"]
            resolve = dict(parse_resolve(f"{k}:{v}") for k, v in loop["resolve"].items())

            def transport_for(run_number: int):
                return Urllib3Transport(ca_bundle=loop["ca_bundle"], token=ua["token"], info_url=ua["info_url"])

            shell = Shell(SystemClock(), transport_for, lambda source: Egress(resolve), ua["token"])
        recipe = json.dumps(case["recipe"]).encode("utf-8")
        settings = RunSettings(self.state_dir, resync=bool(case.get("resync")),
                               deadline_seconds=case.get("deadline_seconds"), plan=case.get("action_plan"))
        try:
            record = execute(recipe, settings, shell)
        except RefusedError as exc:
            return {"outcome": "refused", "code": exc.code, "message": str(exc),
                    "requests": [{"url": u} for u in seen]}
        current = os.path.join(self.state_dir, "current")
        with open(os.path.join(current, "relation.csv"), encoding="utf-8", newline="") as handle:
            relation = handle.read()
        with open(os.path.join(current, "ledger.csv"), encoding="utf-8", newline="") as handle:
            ledger = [self._ledger_row(r) for r in _csv_rows(handle)]
        return {"outcome": "ok", "coverage": record["coverage"], "truncated": record["truncated"],
                "relation": relation, "ledger": ledger,
                "corrections": [c["page_id"] for c in record["corrections"]],
                "requests": [{"url": u} for u in seen]}


    V2_COLUMNS = ("url", "content_sha256", "previous_content_sha256", "failure_class", "discovered_at",
                  "last_seen_at", "last_fetched_at", "failed_at", "revision_hint")

    def _ledger_row(self, r: dict) -> dict:
        row = {"page_id": r["page_id"], "state": r["state"], "revision": int(r["revision"]),
               "failure_code": r["failure_code"] or None, "landed_url": r["landed_url"] or None}
        if self.version >= 2:
            row.update({name: r[name] or None for name in self.V2_COLUMNS})
        return row


def serve(stdin=sys.stdin, stdout=sys.stdout) -> int:
    session = Session()
    try:
        for line in stdin:
            if not line.strip():
                continue
            message = json.loads(line)
            cmd = message.get("cmd")
            if cmd == "stop":
                return 0
            if cmd == "start":
                reply = session.start(message)
            elif cmd == "configure":
                reply = session.configure(message)
            elif cmd == "run":
                try:
                    reply = {"seq": message["seq"], "result": session.run(message["case"])}
                except Exception as exc:  # the implementation failed: report it, keep serving
                    reply = {"seq": message["seq"], "errored": {"message": f"{type(exc).__name__}: {exc}",
                                                                "traceback": traceback.format_exc()}}
            else:
                reply = {"error": f"unknown command {cmd!r}"}
            stdout.write(json.dumps(reply, ensure_ascii=False) + "\n")
            stdout.flush()
    finally:
        session.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(serve())
