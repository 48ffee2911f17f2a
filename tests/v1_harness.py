"""A harness that speaks protocol v1 only, as an implementation written against v1 would
(issue 26): it answers the handshake with version 1 and its ledger rows carry v1's five
members, whatever it is offered. Behind it, collection's own harness does the work.

    python tests/v1_harness.py [INNER HARNESS COMMAND...]

The inner harness is started with a v1-only handshake (no `versions`), and each ledger
row it returns is cut to v1's members, so no v2 fact can reach the runner even if the
inner harness sent one.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

V1_LEDGER = ("page_id", "state", "revision", "failure_code", "landed_url")


def main(argv: list[str]) -> int:
    inner = argv or [sys.executable, "-m", "conformance.harnesses.collection_harness"]
    proc = subprocess.Popen(inner, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8")

    def ask(message: dict) -> dict:
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"v1 harness: the inner harness {shlex.join(inner)} exited")
        return json.loads(line)

    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            message = json.loads(line)
            if message.get("cmd") == "stop":
                break
            if message.get("cmd") == "start":
                reply = ask({"cmd": "start", "version": 1})        # what a v1 runner sends
                reply["version"] = 1
            else:
                reply = ask(message)
                result = reply.get("result")
                if isinstance(result, dict) and isinstance(result.get("ledger"), list):
                    result["ledger"] = [{k: row.get(k) for k in V1_LEDGER} for row in result["ledger"]]
            sys.stdout.write(json.dumps(reply, ensure_ascii=False) + "\n")
            sys.stdout.flush()
    finally:
        try:
            proc.stdin.write(json.dumps({"cmd": "stop"}) + "\n")
            proc.stdin.close()
            proc.wait(timeout=10)
        except (OSError, ValueError, subprocess.TimeoutExpired):
            proc.kill()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
