"""Retry policy (pure), D-08 and FETCH-21.

Retried: network errors, timeouts, 429 and 5xx. Never: any other status (a 404 is an
answer, not a hiccup). At most `pages.retries` retries per logical fetch (D-47: a retry
belongs to the one fetch of its page, keeps its concurrency slot and is charged to the
budget as a request).

Backoff is exponential from `min_interval_seconds` (1×, 2×, 4× …), never shorter than
`min_interval_seconds`, and never shorter than the origin's `Retry-After` (seconds or an
HTTP date). A `Retry-After` longer than `MAX_RETRY_AFTER_SECONDS` (one hour) is not waited
for inside a run: the fetch gives up now and the page is retried on a later run, because
holding a worker (and the run) for hours helps nobody, and retrying earlier than the
origin asked would be rude. The politeness scheduler still holds the host (capped).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

MAX_RETRY_AFTER_SECONDS = 3600.0
MAX_BACKOFF_SECONDS = 3600.0

NETWORK_ERROR = "network_error"     # connection refused or reset, TLS failure, DNS, broken body
TIMEOUT = "timeout"


def is_retryable(status: int | None, error: str | None = None) -> bool:
    """A response status, or no status and an error kind (NETWORK_ERROR, TIMEOUT)."""
    if status is None:
        return error in (NETWORK_ERROR, TIMEOUT)
    return status == 429 or 500 <= status <= 599


def parse_retry_after(value: str | None, now_wall: float) -> float | None:
    """Seconds to wait from a `Retry-After` value (RFC 9110 §10.2.3): delay-seconds or an
    HTTP-date, relative to `now_wall` (epoch seconds). None when absent or unreadable; a
    date in the past means 0."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if text.isascii() and text.isdigit():
        return float(int(text))
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None or when.tzinfo is None:
        # RFC 9110 dates are always GMT; a zone-less date is not one of its three forms.
        return None
    try:
        seconds = when.timestamp() - now_wall
    except (OverflowError, OSError, ValueError):
        return None
    return max(0.0, seconds) if math.isfinite(seconds) else None


@dataclass(frozen=True)
class RetryDecision:
    retry: bool
    delay: float = 0.0            # seconds from the failure to the earliest retry
    reason: str = ""              # why not, when retry is False


@dataclass(frozen=True)
class RetryPolicy:
    retries: int                  # pages.retries, 0..3
    min_interval: float           # pages.min_interval_seconds

    def decide(self, retries_done: int, status: int | None, error: str | None = None,
               retry_after: float | None = None) -> RetryDecision:
        """After a failed attempt: retry, and after how long? `retry_after` is already
        parsed (`parse_retry_after`); it only counts for 429 and 503, where it has meaning."""
        if not is_retryable(status, error):
            return RetryDecision(False, reason="not_retryable")
        if retries_done >= self.retries:
            return RetryDecision(False, reason="retries_exhausted")
        floor = max(float(self.min_interval), 1.0)
        delay = min(floor * (2 ** retries_done), MAX_BACKOFF_SECONDS)
        if retry_after is not None and status in (429, 503):
            if retry_after > MAX_RETRY_AFTER_SECONDS:
                return RetryDecision(False, reason="retry_after_too_long")
            delay = max(delay, retry_after)
        return RetryDecision(True, delay=max(delay, floor))
