"""The ledger format (D-01 + version, failure class, row count) and its header check (REF-06)."""

from __future__ import annotations

import csv
import io

import pytest

from collection.merge.ledger import (LEDGER_COLUMNS, LEDGER_VERSION, LedgerRow, MergeInvalid, check_ledger_header,
                               read_ledger, write_ledger)

ROW = LedgerRow(page_id="p,1", url="https://www.example.com/a?b=1,2", state="fetched",
                discovered_at="2024-01-01T00:00:00Z", last_seen_at="2024-01-02T00:00:00Z", discovery_ordinal=3,
                last_fetched_at="2024-01-02T00:00:05Z", content_sha256="a" * 64, revision=2,
                previous_content_sha256="b" * 64, revision_hint='"w/1"\r', revision_hint_at_fetch="0",
                row_count=0)


def text(rows):
    out = io.StringIO()
    write_ledger(rows, out)
    return out.getvalue()


def test_round_trip_keeps_every_field_and_sorts_by_page_id():
    other = LedgerRow("Ä", "https://www.example.com/x", "pending", "t", "t", 1)
    first = LedgerRow("B", "https://www.example.com/y", "skipped_origin", "t", "t", 2,
                      landed_url="https://elsewhere.example/", failure_code="skipped_origin", failure_class="blocked")
    written = text([other, ROW, first])
    assert [r[1] for r in csv.reader(io.StringIO(written))][1:] == ["B", "p,1", "Ä"]
    back = read_ledger(io.StringIO(written))
    assert back == {"p,1": ROW, "Ä": other, "B": first}
    assert text(back.values()) == written


def test_header_and_version():
    assert text([]) == ",".join(LEDGER_COLUMNS) + "\n"
    assert LEDGER_COLUMNS[0] == "ledger_version" and text([ROW]).splitlines()[1].startswith(LEDGER_VERSION + ",")
    assert "\r" not in text([ROW]).replace('\r"', "")          # the only \r is inside a quoted field


@pytest.mark.parametrize("case,damage", [
    ("missing column", lambda s: s.replace(",row_count", "", 1)),
    ("renamed column", lambda s: s.replace("failure_class", "liveness", 1)),
    ("reordered", lambda s: s.replace("url,state", "state,url", 1)),
    ("other version", lambda s: s.replace("\n1,", "\n2,", 1)),
])
def test_a_ledger_under_another_header_is_merge_invalid(case, damage):
    bad = damage(text([ROW]))
    problem = check_ledger_header(io.StringIO(bad))
    assert problem is not None and problem.code == "COLLECTION_MERGE_INVALID" and problem.rule == "REF-06"
    with pytest.raises(MergeInvalid):
        read_ledger(io.StringIO(bad))


@pytest.mark.parametrize("case,damage", [
    ("unknown state", lambda s: s.replace(",fetched,", ",done,")),
    ("revision not a number", lambda s: s.replace(",2,", ",two,")),
    ("short row", lambda s: s.rstrip("\n").rsplit(",", 1)[0] + "\n"),
    ("duplicate page", lambda s: s + s.splitlines(keepends=True)[1]),
])
def test_damaged_rows_are_merge_invalid(case, damage):
    with pytest.raises(MergeInvalid) as info:
        read_ledger(io.StringIO(damage(text([ROW]))))
    assert info.value.code == "COLLECTION_MERGE_INVALID"


def test_empty_stream_is_the_empty_ledger():
    assert check_ledger_header(io.StringIO("")) is None and read_ledger(io.StringIO("")) == {}
