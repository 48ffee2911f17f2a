"""The progress line operators see on a terminal (stderr), and JSON-lines logs (shell).

Off a terminal nothing is printed but the result (GUIDE, "Progress"), so `Progress` is
made only when stderr is a TTY. The ETA is the politeness limit, not a guess from past
speed: the pages still to fetch, spread over the hosts that have them, one request per
host per gap — a run can never beat it and a healthy one comes close.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from urllib.parse import urlsplit


def _duration(seconds: float) -> str:
    seconds = int(max(0, seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


class Progress:
    def __init__(self, dispatcher, fetcher, planner, pages, stream=None, every: float = 0.5):
        self.dispatcher = dispatcher
        self.fetcher = fetcher
        self.planner = planner
        self.stream = stream or sys.stderr
        self.every = every
        self.chosen = min(len(planner.queue), pages.max_fetches_per_run)
        self.hosts = max(1, len({urlsplit(c.url).hostname for c in planner.queue}))
        self._last = 0.0
        self._width = 0

    def line(self) -> str:
        d = self.dispatcher
        done = sum(d.counts.values())
        failures = d.counts.get("failed", 0)
        left = max(0, self.chosen - done)
        gap = self.fetcher.politeness.min_interval
        eta = left * gap / self.hosts
        requests_left = self.fetcher.budget.requests_left()
        return (f"pages {done}/{self.chosen} · requests left {requests_left} · failures {failures}"
                f" · ETA {_duration(eta)}")

    def tick(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < self.every:
            return
        self._last = now
        text = self.line()
        pad = max(0, self._width - len(text))
        self._width = len(text)
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()

    def done(self) -> None:
        self.tick(force=True)
        self.stream.write("\n")
        self.stream.flush()


class JsonLog:
    """`--log-json`: one JSON object per line on stderr: {"event", "t", ...fields}."""

    def __init__(self, clock, stream=None):
        self.clock = clock
        self.stream = stream or sys.stderr
        self._lock = threading.Lock()

    def __call__(self, event: str, **fields) -> None:
        entry = {"event": event, "t": round(self.clock.wall(), 3)}
        entry.update({k: v for k, v in fields.items() if v is not None})
        text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            self.stream.write(text + "\n")
            self.stream.flush()
