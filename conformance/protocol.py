"""The harness protocol (v1 and v2): talking to one harness process over JSON lines.

The runner writes one command per line to the harness's stdin and reads one reply per
line from its stdout; stderr goes to a log. Every reply is validated against
schemas/harness-protocol.schema.json; a reply that is late, malformed, invalid or carries
the wrong `seq` is a ProtocolError, after which the process is killed and restarted
(its stream can no longer be trusted). The runner offers every version it speaks and
records the one the harness answered (`Harness.version`); what that version can express
is conformance/versions.py's business (D-75).
"""

from __future__ import annotations

import collections
import json
import os
import queue
import shlex
import subprocess
import threading
import time
from typing import Any

from conformance import PROTOCOL_VERSIONS, load_schema


class ProtocolError(Exception):
    """The harness broke the protocol. `kind`: timeout, crashed, malformed, invalid, seq."""

    def __init__(self, kind: str, message: str):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


_VALIDATORS: dict[str, Any] = {}
_VLOCK = threading.Lock()


def validator(definition: str):
    """A validator for one `$defs` entry of the protocol schema."""
    with _VLOCK:
        if definition not in _VALIDATORS:
            import jsonschema

            schema = load_schema("harness-protocol.schema.json")
            sub = {"$schema": schema["$schema"], "$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"}
            cls = jsonschema.validators.validator_for(schema)
            _VALIDATORS[definition] = cls(sub)
        return _VALIDATORS[definition]


def validate(definition: str, message: Any) -> list[str]:
    # each problem names the offending member by its JSON pointer: for a oneOf, the error of the
    # branch that got furthest into the reply (the deepest), not "valid under none of them"
    problems = []
    for error in validator(definition).iter_errors(message):
        while error.context:
            error = max(error.context, key=lambda e: len(e.absolute_path))
        problems.append(f"at /{'/'.join(str(p) for p in error.absolute_path)}: {error.message[:200]}")
    return problems


# Every harness process alive in this runner, so that a SIGTERM to the runner (a CI timeout)
# can kill their whole process groups before it exits (see kill_all).
_LIVE: set = set()


def kill_all() -> None:
    for proc in list(_LIVE):
        try:
            os.killpg(proc.pid, 9)
        except (ProcessLookupError, PermissionError, OSError):
            pass
        _LIVE.discard(proc)


class Harness:
    """One harness process. Not thread-safe: one runner worker owns it."""

    def __init__(self, command: str, *, env: dict[str, str] | None = None, timeout: float = 60.0,
                 start_timeout: float = 30.0, log=None, cwd: str | None = None):
        self.command = command
        self.env = env
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.log = log
        self.cwd = cwd
        self.proc: subprocess.Popen | None = None
        self.lines: queue.Queue = queue.Queue()
        self.seq = 0
        self.implementation: dict | None = None
        self.capabilities: frozenset[str] = frozenset()
        self.configure_message: dict | None = None
        self.restarts = 0
        self.version = 1
        self.stray: dict[str | None, list[str]] = {}
        self.owner: str | None = None            # the case the runner is running now
        self.replied_owner: str | None = None    # the case whose command was answered last
        self.stderr_tail: collections.deque = collections.deque(maxlen=40)
        self._pumps: list[threading.Thread] = []

    def stderr_text(self, lines: int = 15) -> str:
        """The last lines the harness wrote to stderr (for a crash report)."""
        return "\n".join(list(self.stderr_tail)[-lines:])

    # --- process ------------------------------------------------------------------------
    def _spawn(self) -> None:
        args = shlex.split(self.command)
        env = dict(os.environ)
        if self.env:
            env.update(self.env)
        try:
            self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         env=env, cwd=self.cwd, start_new_session=True)
        except OSError as exc:
            raise ProtocolError("crashed", f"cannot start {self.command!r}: {exc}") from None
        _LIVE.add(self.proc)
        lines: queue.Queue = queue.Queue()
        self.lines = lines
        stdout, stderr = self.proc.stdout, self.proc.stderr
        tail: collections.deque = collections.deque(maxlen=40)
        self.stderr_tail = tail
        log = self.log

        def pump() -> None:
            # bytes, not text: a reply that is not UTF-8 is reported as such, not as a crash
            try:
                for raw in stdout:
                    lines.put(raw)
            except (OSError, ValueError):
                pass
            lines.put(None)

        def pump_stderr() -> None:
            try:
                for raw in stderr:
                    text = raw.decode("utf-8", "replace")
                    tail.append(text.rstrip("\n"))
                    if log is not None:
                        log.write(text)
                        log.flush()
            except (OSError, ValueError):
                pass

        self._pumps = [threading.Thread(target=pump, daemon=True), threading.Thread(target=pump_stderr, daemon=True)]
        for thread in self._pumps:
            thread.start()

    def kill(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        _LIVE.discard(proc)
        try:
            os.killpg(proc.pid, 9)
        except (ProcessLookupError, PermissionError):
            try:
                proc.kill()
            except ProcessLookupError:
                pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            try:
                stream.close()
            except (OSError, AttributeError):
                pass

    def _send(self, message: dict) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write((json.dumps(message, separators=(",", ":")) + "\n").encode("utf-8"))
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError) as exc:
            raise ProtocolError("crashed", f"cannot write to the harness: {exc}") from None

    def _receive(self, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        try:
            line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise ProtocolError("timeout", f"no answer within {timeout:g} s") from None
        if line is None:
            code = None
            if self.proc is not None:
                try:
                    code = self.proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    code = None
            for thread in self._pumps[1:]:
                thread.join(timeout=1)     # let the stderr tail arrive
            tail = self.stderr_text()
            what = (f"the harness exited (status {code})" if code is not None
                    else "the harness closed its stdout but is still running")
            raise ProtocolError("crashed", what + (f"; its stderr ends:\n{tail}" if tail else "; it wrote nothing to stderr"))
        if not line.endswith(b"\n"):
            raise ProtocolError("malformed", f"a reply without its closing newline (then end of output): {line[:200]!r}")
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolError("malformed", f"a reply that is not UTF-8 (byte {exc.start}): {line[:200]!r}") from None
        try:
            return json.loads(text)
        except ValueError:
            raise ProtocolError("malformed", f"not a JSON line: {text[:200]!r}") from None

    def _exchange(self, message: dict, reply_def: str, timeout: float) -> dict:
        problems = validate("command", message)
        if problems:          # the runner's own bug: never blame the harness for it
            raise AssertionError(f"runner sent an invalid command: {problems}")
        early = self.stray_output()      # written after the last reply: the last replier's
        if early:
            self.stray.setdefault(self.replied_owner, []).extend(early)
        self._send(message)
        try:
            reply = self._receive(timeout)
            problems = validate(reply_def, reply)
            if problems:
                raise ProtocolError("invalid", f"{reply_def} reply breaks the schema: {'; '.join(_detail(reply, problems)[:3])}")
            if "seq" in message and reply.get("seq") != message["seq"]:
                raise ProtocolError("seq", f"answered seq {reply.get('seq')!r} to seq {message['seq']}")
        except ProtocolError as first:
            if first.kind in ("timeout", "crashed"):
                raise
            # A line the harness wrote after its previous reply, before it read this command,
            # arrives first: if the next line is this command's reply, the first was out of turn.
            try:
                again = self._receive(min(timeout, 2.0))
            except ProtocolError:
                raise first from None
            if validate(reply_def, again) or ("seq" in message and again.get("seq") != message["seq"]):
                raise first from None
            self.stray.setdefault(self.replied_owner, []).append(first.message)
            reply = again
        self.replied_owner = self.owner
        return reply

    def take_stray(self, owner: str | None) -> list[str]:
        """What `owner`'s case wrote out of turn (its reply answered, more lines followed)."""
        lines = self.stray.pop(owner, [])
        if owner == self.replied_owner:
            lines += self.stray_output()
        return lines

    # --- commands -----------------------------------------------------------------------
    def start(self, configure: dict) -> dict:
        """Spawn, handshake and configure. Returns the implementation block."""
        self.kill()
        self._spawn()
        self.stray = {}
        self.replied_owner = None
        self.seq = 0
        started = self._exchange({"cmd": "start", "version": 1, "versions": list(PROTOCOL_VERSIONS)}, "started",
                                  self.start_timeout)
        self.version = started["version"]
        self.implementation = started["implementation"]
        self.capabilities = frozenset(self.implementation.get("capabilities", ()))
        self.configure_message = configure
        self._exchange(configure, "configured", self.start_timeout)
        return self.implementation

    def restart(self) -> None:
        self.restarts += 1
        assert self.configure_message is not None
        self.start(self.configure_message)

    def run(self, case: dict, timeout: float | None = None) -> dict:
        """Send one `run` and return its reply (result, skipped or errored)."""
        if self.proc is None:
            self.restart()
        self.seq += 1
        seq = self.seq
        reply = self._exchange({"cmd": "run", "seq": seq, "case": case}, "run_reply",
                               self.timeout if timeout is None else timeout)
        if "result" in reply:
            problems = _result_shape(case, reply["result"])
            if problems:
                raise ProtocolError("invalid", problems)
            if self.version >= 2 and isinstance(reply["result"].get("ledger"), list):
                for index, row in enumerate(reply["result"]["ledger"]):
                    bad = validate("ledger_row_v2", row)
                    if bad:
                        raise ProtocolError("invalid", f"protocol v2 ledger row /result/ledger/{index} "
                                                       f"({row.get('page_id')!r}) breaks the schema: {'; '.join(bad[:3])}")
        return reply

    def stray_output(self) -> list[str]:
        """Lines the harness wrote that no command asked for (drained now)."""
        stray: list[str] = []
        ended = False
        while True:
            try:
                line = self.lines.get_nowait()
            except queue.Empty:
                break
            if line is None:
                ended = True
                continue
            stray.append(line.decode("utf-8", "replace").rstrip("\n") if isinstance(line, bytes) else str(line))
        if ended:
            self.lines.put(None)
        return stray

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            self._send({"cmd": "stop"})
            self.proc.wait(timeout=5)
            if self._pumps:
                self._pumps[0].join(timeout=1)
        except (ProtocolError, subprocess.TimeoutExpired):
            pass
        self.kill()


def _detail(reply: Any, problems: list[str]) -> list[str]:
    """A run reply's result checked against the one definition it claims to be (by its
    members), so the problem names the offending member rather than "none of the oneOf"."""
    result = reply.get("result") if isinstance(reply, dict) else None
    if not isinstance(result, dict):
        return problems
    definition = ("registration_result" if "registrable" in result
                  else "run_refused" if result.get("outcome") == "refused" else "run_ok")
    inner = validate(definition, result)
    return [p.replace("at /", "at /result/", 1).replace("/result/:", "/result:") for p in inner] or problems


def _result_shape(case: dict, result: dict) -> str | None:
    kind = case.get("kind")
    if kind == "registration" and "registrable" not in result:
        return "a registration case answered with a run result"
    if kind == "runs" and "outcome" not in result:
        return "a run case answered with a registration result"
    return None
