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

from collection.redact import scrub


def _duration(seconds: float) -> str:
    seconds = int(max(0, seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def held_text(waiting: list[tuple[str, float]]) -> str:
    """` · held HOST until HH:MM:SSZ` for each origin a hold keeps waiting (issue 24 point 6)."""
    from collection.fetch.holds import utc

    return "".join(f" · held {host} until {utc(until)[11:]}" for host, until in waiting[:3]) + (
        f" (+{len(waiting) - 3} more)" if len(waiting) > 3 else "")


class Progress:
    """`pages done/target · requests left · failures · ETA`, redrawn as pages finish.

    The target counts what the run will attempt: failed and skipped pages do not use up
    `max_fetches_per_run`, so each one moves the target on by one (never past the pages
    chosen). Requests left are `limits.max_requests` minus the requests made, the figure the
    run record reports at the end; reservations of requests still in flight are not
    subtracted, so the count moves only when a request is really made."""

    def __init__(self, dispatcher, fetcher, planner, pages, stream=None, every: float = 0.5):
        self.dispatcher = dispatcher
        self.fetcher = fetcher
        self.stream = stream or sys.stderr
        self.every = every
        self.queued = len(planner.queue)
        self.max_fetches = pages.max_fetches_per_run
        self.hosts = max(1, len({urlsplit(c.url).hostname for c in planner.queue}))
        self._last = 0.0
        self._width = 0
        self._lock = threading.Lock()

    def line(self) -> str:
        counts = self.dispatcher.counts
        done = sum(counts.values())
        not_fetched = done - counts.get("fetched", 0)
        target = min(self.queued, self.max_fetches + not_fetched)
        left = max(0, target - done)
        eta = left * self.fetcher.politeness.min_interval / self.hosts
        budget = self.fetcher.budget
        requests_left = max(0, budget.max_requests - budget.counts().charged)
        text = (f"pages {done}/{target} · requests left {requests_left} · failures {counts.get('failed', 0)}"
                f" · ETA {_duration(eta)}")
        return text + held_text(self.fetcher.pacer.holds.waiting(self.fetcher.clock.wall()))

    def tick(self, force: bool = False) -> None:
        with self._lock:
            now = time.monotonic()
            if not force and now - self._last < self.every:
                return
            self._last = now
            text = self.line()
            pad = max(0, self._width - len(text))
            self._width = len(text)
            self.stream.write("\r" + text + " " * pad)
            self.stream.flush()

    def warn(self, text: str) -> None:
        """A warning line (a hold) above the progress line, which is then drawn again."""
        with self._lock:
            self.stream.write("\r" + text + " " * max(0, self._width - len(text)) + "\n")
            self._width = 0
        self.tick(force=True)

    def done(self) -> None:
        self.tick(force=True)
        with self._lock:
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
        # scrub: an error's text in a field may quote a gate URL or a password (issue 24 point 1)
        entry = {k: scrub(v) if isinstance(v, str) else v for k, v in entry.items()}
        text = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            self.stream.write(text + "\n")
            self.stream.flush()
