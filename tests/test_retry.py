"""Retry policy (D-08, FETCH-21, D-47)."""

from __future__ import annotations

from email.utils import format_datetime
from datetime import datetime, timezone

import pytest
from hypothesis import given, strategies as st

from collection.fetch.retry import (
    MAX_RETRY_AFTER_SECONDS, NETWORK_ERROR, TIMEOUT, RetryPolicy, is_retryable, parse_retry_after,
)

NOW = 1_704_067_200.0   # 2024-01-01T00:00:00Z


@pytest.mark.parametrize("status, error, expected", [
    (None, NETWORK_ERROR, True), (None, TIMEOUT, True), (None, None, False), (None, "other", False),
    (429, None, True), (500, None, True), (502, None, True), (503, None, True), (599, None, True),
    (400, None, False), (401, None, False), (403, None, False), (404, None, False), (410, None, False),
    (200, None, False), (301, None, False),
])
def test_d08_which_outcomes_are_retried(status, error, expected):
    assert is_retryable(status, error) is expected


@pytest.mark.parametrize("value, expected", [
    ("120", 120.0), (" 0 ", 0.0), ("", None), (None, None), ("-5", None), ("1.5", None), ("soon", None),
    ("Mon, 01 Jan 2024 00:01:00 GMT", 60.0),            # IMF-fixdate
    ("Monday, 01-Jan-24 00:02:00 GMT", 120.0),          # obsolete RFC 850 form
    ("Mon Jan  1 00:00:30 2024", None),                 # asctime has no zone: refused rather than guessed
    ("Sun, 31 Dec 2023 23:00:00 GMT", 0.0),             # in the past
    ("Mon, 01 Jan 2024 00:00:60 GMT", None),
])
def test_parse_retry_after(value, expected):
    assert parse_retry_after(value, NOW) == expected


@pytest.mark.parametrize("min_interval, done, expected_delay", [
    (1, 0, 1.0), (1, 1, 2.0), (1, 2, 4.0), (5, 0, 5.0), (5, 2, 20.0), (3600, 2, 3600.0),
])
def test_exponential_backoff_never_below_min_interval(min_interval, done, expected_delay):
    decision = RetryPolicy(retries=3, min_interval=min_interval).decide(done, 500)
    assert decision.retry and decision.delay == expected_delay


def test_fetch_21_at_most_retries():
    policy = RetryPolicy(retries=2, min_interval=1)
    assert policy.decide(0, None, TIMEOUT).retry
    assert policy.decide(1, None, TIMEOUT).retry
    assert policy.decide(2, None, TIMEOUT).reason == "retries_exhausted"
    assert RetryPolicy(retries=0, min_interval=1).decide(0, 503).reason == "retries_exhausted"


def test_never_retry_other_4xx():
    assert RetryPolicy(3, 1).decide(0, 404).reason == "not_retryable"


@pytest.mark.parametrize("status, retry_after, expected", [
    (429, 30.0, 30.0), (503, 30.0, 30.0),
    (429, 0.0, 1.0),          # never less than min_interval
    (500, 30.0, 1.0),         # Retry-After only means something on 429 and 503
])
def test_retry_after_is_honoured(status, retry_after, expected):
    decision = RetryPolicy(2, 1).decide(0, status, retry_after=retry_after)
    assert decision.retry and decision.delay == expected


def test_retry_after_beyond_the_cap_gives_up_for_this_run():
    decision = RetryPolicy(2, 1).decide(0, 503, retry_after=MAX_RETRY_AFTER_SECONDS + 1)
    assert not decision.retry and decision.reason == "retry_after_too_long"


@given(st.integers(0, 3), st.integers(1, 3600), st.integers(0, 5),
       st.one_of(st.none(), st.integers(100, 599)), st.one_of(st.none(), st.floats(0, 7200)))
def test_property_delay_is_never_below_min_interval_or_retry_after(retries, min_interval, done, status, retry_after):
    decision = RetryPolicy(retries, min_interval).decide(done, status, NETWORK_ERROR, retry_after)
    if decision.retry:
        assert done < retries
        assert decision.delay >= min_interval
        if status in (429, 503) and retry_after is not None:
            assert decision.delay >= retry_after


@given(st.text(max_size=60))
def test_property_parse_retry_after_never_raises(text):
    result = parse_retry_after(text, NOW)
    assert result is None or result >= 0


def test_http_date_round_trip():
    when = datetime.fromtimestamp(NOW + 3000, tz=timezone.utc)
    assert parse_retry_after(format_datetime(when, usegmt=True), NOW) == 3000.0
