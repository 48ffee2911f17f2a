"""Holds on an origin: a Retry-After or a Crawl-delay that makes a run wait longer than its own
gap (issue 24 point 6, docs/politeness.md "Holds").

A hold is seen, bounded and clearable:

- seen: the first time a run waits on a hold it says so on stderr (and as a `--log-json`
  event), with the origin, until when (UTC), how long, and the response that set it;
- bounded: a hold longer than `HOLD_WAIT_SECONDS`, or one that ends after the run's
  `--deadline`, ends that origin's work for this run at once (its pages stay pending, the run
  record says `held_until`); a shorter one is waited out, asking the gate again every
  `HOLD_POLL_SECONDS` so that `collection gate clear` takes effect in a running run;
- clearable: `collection gate clear ORIGIN` (collection.commands.gate).

Clocks: the local gate keeps CLOCK_MONOTONIC (valid for one boot), Redis its server's `TIME`.
Neither is shown as such: a gate computes how many seconds are left *on its own clock* and
the time shown is this machine's wall clock plus those seconds (`Hold.until`). The moment a
response set a hold (`set_by["at"]`) is the wall clock of the process that received it.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable, Mapping

RETRY_AFTER = "retry_after"
CRAWL_DELAY = "crawl_delay"
INTERVAL = "interval"          # another source sharing the origin asked a longer min_interval_seconds
HELD = "held"                  # the stop a fetch reports when its origin's work ended for a hold

# A run waits out a hold of at most this long (5 min: ten times the default request timeout).
# Overload answers (429/503) mostly ask for seconds to a couple of minutes, and waiting those
# out completes the run; a longer hold is a "come back later", which the next scheduled run
# does better than a process sitting idle beside it. --deadline only ever shortens it.
HOLD_WAIT_SECONDS = 300.0
HOLD_POLL_SECONDS = 5.0        # while waiting out a hold, ask the gate again this often
# A Crawl-delay or another source's interval is the publisher's (or the fleet's) standing pace,
# shown in the ETA: it is announced as a hold only when one wait on it is longer than a request
# may take (the default request timeout). A Retry-After, a push-back, is announced whatever its length.
HOLD_NOTICE_SECONDS = 30.0
_TOLERANCE_SECONDS = 0.5       # a wait this much past the run's own gap is a hold, not pacing
_MAX_SECONDS = 7 * 24 * 3600.0  # nothing a gate holds is longer (a record expires after a week)
_SETTER_KEYS = {"url": str, "status": int, "at": str, "by": str}


@dataclass(frozen=True)
class Hold:
    host: str
    kind: str                 # RETRY_AFTER or CRAWL_DELAY
    seconds: float            # left when it was read
    until: float              # epoch seconds (UTC): this machine's wall clock + `seconds`
    set_by: Mapping[str, Any] | None = None   # {"url", "status", "at", "by"}: the response that set it

    @property
    def origin(self) -> str:
        return f"https://{self.host}"

    def to_json(self) -> dict:
        return {"origin": self.origin, "kind": self.kind, "until": utc(self.until),
                "seconds": round(self.seconds, 3), "set_by": dict(self.set_by) if self.set_by else None}


def utc(epoch: float) -> str:
    """RFC 3339, UTC, whole seconds (as every timestamp the tool writes)."""
    return datetime.fromtimestamp(int(math.ceil(epoch)), tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def duration(seconds: float) -> str:
    seconds = int(math.ceil(max(0.0, seconds)))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


def setter(url: str, status: int | None, at: float, by: str) -> dict:
    return {"url": url, "status": status, "at": utc(at), "by": by}


def valid_setter(value: Any) -> dict | None:
    """A setter read back from a gate, or None when it is not one the tool wrote (a value
    from outside steers nothing: a bad one is shown as unknown, never trusted)."""
    if not isinstance(value, dict) or set(value) != set(_SETTER_KEYS):
        return None
    for key, kind in _SETTER_KEYS.items():
        item = value[key]
        if key == "status" and item is None:
            continue
        if not isinstance(item, kind) or isinstance(item, bool) or (kind is str and len(item) > 2048):
            return None
    return dict(value)


def finite(value: Any, what: str, low: float = -1e18, high: float = 1e18) -> float:
    """A number read from a gate record; ValueError (the caller's GateUnavailable) otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str, bytes)):
        raise ValueError(f"{what} is not a number")
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"{what} is not a number") from None
    if not math.isfinite(number) or not low <= number <= high:
        raise ValueError(f"{what} is out of range")
    return number


def hold_of(host: str, *, now: float, wall: float, last_start: float, not_before: float, crawl_delay: float,
            margin: float, hold_by: Any = None, crawl_by: Any = None, next_start: float = -math.inf) -> Hold | None:
    """The hold on `host` read at `now` (the gate's clock) from its record, or None. A
    Crawl-delay holds only while the wait it makes after the last start is still running; so
    does a `next_start` further than the floor after the last start (another source's longer
    min_interval_seconds, which nobody received: its setter is unknown)."""
    from collection.fetch.politeness import FLOOR_SECONDS

    retry = not_before - now
    crawl = last_start + crawl_delay + margin - now if crawl_delay > FLOOR_SECONDS else -math.inf
    interval = (next_start - now if next_start - last_start > FLOOR_SECONDS + margin + _TOLERANCE_SECONDS
                else -math.inf)
    if max(retry, crawl, interval) <= 0:
        return None
    if retry >= crawl and retry >= interval:
        seconds, kind, by = retry, RETRY_AFTER, hold_by
    elif crawl >= interval - _TOLERANCE_SECONDS:
        seconds, kind, by = max(crawl, interval), CRAWL_DELAY, crawl_by
    else:
        seconds, kind, by = interval, INTERVAL, None
    seconds = min(seconds, _MAX_SECONDS)
    return Hold(host, kind, seconds, wall + seconds, valid_setter(by))


KIND_TEXT = {RETRY_AFTER: "Retry-After", CRAWL_DELAY: "Crawl-delay", INTERVAL: "min_interval_seconds"}


def line(hold: Hold, ends: bool) -> str:
    """The stderr line of a hold (one per origin and hold, off a terminal too)."""
    what = KIND_TEXT[hold.kind]
    by = hold.set_by
    source = (f"set by {by['status']} {by['url']} at {by['at']} ({by['by']})" if by
              else "asked by another source of this origin" if hold.kind == INTERVAL else "set by an unknown response")
    then = ("its pages stay pending for the next run (`collection gate clear` lifts it)" if ends
            else "waiting it out")
    return (f"collection run: warning: {hold.origin} is held by {what} until {utc(hold.until)} "
            f"({duration(hold.seconds)}), {source}: {then}")


@dataclass
class HoldBook:
    """The holds one process has met (shared by a dataset's fetchers through their pacer):
    which were announced, which ended an origin's work, and the setters of holds this process
    received itself (what `--gate none` has to tell)."""

    notify: Callable[[Hold, bool], None] | None = None
    announced: dict = field(default_factory=dict)        # host -> (kind, until) last announced
    ended: dict = field(default_factory=dict)            # host -> Hold whose wait ended its work
    setters: dict = field(default_factory=dict)          # (host, kind) -> setter dict
    lock: threading.Lock = field(default_factory=threading.Lock)

    def saw(self, hold: Hold, ends: bool) -> None:
        with self.lock:
            if ends:
                self.ended.setdefault(hold.host, hold)
            last = self.announced.get(hold.host)
            # once per hold: again only when it is a new one (another kind, or a later end)
            fresh = last is None or last[0] != hold.kind or hold.until > last[1] + 1.0 or (ends and not last[2])
            if fresh:
                self.announced[hold.host] = (hold.kind, hold.until, ends)
        if fresh and self.notify is not None:
            self.notify(hold, ends)

    def waiting(self, wall: float) -> list[tuple[str, float]]:
        """(host, until) of the holds announced and not yet over (the progress line)."""
        with self.lock:
            return sorted((host, until) for host, (_k, until, _e) in self.announced.items() if until > wall)
