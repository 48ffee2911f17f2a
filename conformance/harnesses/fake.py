"""A deliberately faulty harness for the runner's own tests (tests/test_conformance_runner.py).

    python -m conformance.harnesses.fake --fault FAULT

It answers every registration case "registrable" and every run with one fixed empty
result (FIXED_RESULT), so a test writes cases whose expectations match that answer, then
selects a fault:
  none          answer correctly
  wrong-seq     reply with seq + 1
  crash         exit on the first run
  crash-once    exit on the first run of the process that first sees it (a marker file
                named by --marker), then behave: tests the runner's restart
  hang          never answer a run
  malformed     answer a run with a line that is not JSON
  invalid       answer a run with JSON that breaks the protocol schema
  wrong-answer  answer "not registrable" and a run result with different coverage
  skip          answer every run `skipped`
  error         answer every run `errored`
  bad-start     answer `start` with the wrong protocol version
  non-utf8      answer a run with bytes that are not UTF-8
  no-newline    answer a run without the closing newline, then exit
  close-stdout  close stdout on the first run and keep running
  stray         after each reply, write one more line nobody asked for
  crash-stderr  write a traceback-like message to stderr, then exit on the first run
  child         start a grandchild process (its pid in the --marker file) and hang: tests that
                the runner kills the harness's whole process group
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

COVERAGE = {"discovered": 0, "discovery_requests": 1, "discovery_complete": True, "discovery_failure": None,
            "duplicates_dropped": 0, "known": 0, "fetched_this_run": 0, "unchanged": 0, "changed": 0,
            "failed_this_run": 0, "pending": 0, "failed": 0, "skipped": 0, "budget_exhausted": None, "complete": True}
RELATION = "title,page_id,page_url,page_fetched_at,page_content_sha256,page_revision,page_discovered_at,page_ordinal\n"
FIXED_RESULT = {"outcome": "ok", "coverage": COVERAGE, "truncated": False, "relation": RELATION, "ledger": [],
                "corrections": [], "requests": [{"url": "https://www.example.com/list"}]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fault", default="none")
    parser.add_argument("--marker")
    args = parser.parse_args(argv)
    fault = args.fault
    if fault == "crash-once":
        if args.marker and not os.path.exists(args.marker):
            open(args.marker, "w").close()
            fault = "crash"
        else:
            fault = "none"

    def say(obj) -> None:
        sys.stdout.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
        sys.stdout.flush()

    for line in sys.stdin:
        message = json.loads(line)
        cmd = message["cmd"]
        if cmd == "start":
            say({"ready": True, "version": 3 if fault == "bad-start" else 1,
                 "implementation": {"name": "fake", "version": "0", "language": "python",
                                    "capabilities": ["inline", "loopback", "registration", "runs"]}})
        elif cmd == "configure":
            say({"configured": True})
        elif cmd == "stop":
            return 0
        elif cmd == "run":
            seq = message["seq"]
            kind = message["case"]["kind"]
            if fault == "crash":
                os._exit(3)
            if fault == "crash-stderr":
                sys.stderr.write("Traceback (most recent call last):\nValueError: the fake harness broke\n")
                sys.stderr.flush()
                os._exit(4)
            if fault == "non-utf8":
                sys.stdout.buffer.write(b'{"seq": ' + str(seq).encode() + b', "skipped": "\xff\xfe"}\n')
                sys.stdout.flush()
                continue
            if fault == "no-newline":
                sys.stdout.write(json.dumps({"seq": seq, "skipped": "no newline"}))
                sys.stdout.flush()
                os._exit(0)
            if fault == "close-stdout":
                sys.stdout.close()
                os.close(1)
                time.sleep(3600)
            if fault == "child":
                import subprocess
                child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
                if args.marker:
                    with open(args.marker, "w") as handle:
                        handle.write(str(child.pid))
                time.sleep(3600)
            if fault == "hang":
                time.sleep(3600)
            if fault == "malformed":
                say("{this is not json")
                continue
            if fault == "invalid":
                say({"seq": seq, "result": {"outcome": "ok"}})
                continue
            if fault == "skip":
                say({"seq": seq, "skipped": "the fake skips everything"})
                continue
            if fault == "error":
                say({"seq": seq, "errored": {"message": "the fake fails"}})
                continue
            if kind == "registration":
                result = {"registrable": fault != "wrong-answer", "refusals": []}
            else:
                result = json.loads(json.dumps(FIXED_RESULT))
                if fault == "wrong-answer":
                    result["coverage"]["pending"] = 7
            say({"seq": seq + 1 if fault == "wrong-seq" else seq, "result": result})
            if fault == "stray":
                say({"note": "written out of turn"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
