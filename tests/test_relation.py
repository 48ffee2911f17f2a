"""The relation: header, dialect (D-02), order (D-29) and the predecessor checks (REF-05)."""

from __future__ import annotations

import csv
import io

import pytest

from collection.merge.ledger import MergeInvalid
from collection.merge.relation import (PROVENANCE_COLUMNS, check_relation_header, iter_pages, relation_columns,
                                 scan_relation)
from collection.merge.csvio import to_csv_text

COLS = ("title",)


def test_provenance_columns_follow_the_pin_in_prov_03_order():
    assert relation_columns(("a", "b")) == ("a", "b", "page_id", "page_url", "page_fetched_at",
                                            "page_content_sha256", "page_revision", "page_discovered_at",
                                            "page_ordinal")
    assert len(PROVENANCE_COLUMNS) == 7


@pytest.mark.parametrize("field,written", [
    ("plain", "plain"),
    ("", ""),
    (" spaced ", " spaced "),
    ("a,b", '"a,b"'),
    ('say "hi"', '"say ""hi"""'),
    ("line\nbreak", '"line\nbreak"'),
    ("bare\rcr", '"bare\rcr"'),
    ("crlf\r\n", '"crlf\r\n"'),
    ("日本", "日本"),
])
def test_dialect_quotes_only_where_needed_and_ends_lines_with_lf(field, written):
    out = to_csv_text([[field, "x"]])
    assert out == f"{written},x\n"
    assert list(csv.reader(io.StringIO(out))) == [[field, "x"]]


def test_a_cr_in_one_row_does_not_change_its_neighbours():
    rows = [["a", "1"], ["b\r", "2"], ["c,", "3"]] * 1500
    out = to_csv_text(rows)
    assert out.count("\n") == 4500 and list(csv.reader(io.StringIO(out))) == rows


def rel(*pages):
    rows = [list(relation_columns(COLS))]
    for pid, n in pages:
        rows += [[f"t{i}", pid, "u", "t", "s", "1", "d", str(i)] for i in range(1, n + 1)]
    return to_csv_text(rows)


def test_scan_counts_rows_per_page():
    assert scan_relation(io.StringIO(rel(("a", 2), ("b", 1))), COLS) == {"a": 2, "b": 1}
    assert scan_relation(io.StringIO(""), COLS) == {}


@pytest.mark.parametrize("case,text", [
    ("pages out of order", rel(("b", 1), ("a", 1))),
    ("page split", rel(("a", 1), ("b", 1), ("a", 1))),
    ("ordinals out of order", rel(("a", 2)).replace(",1\n", ",9\n", 1)),
    ("wrong width", rel(("a", 1)).replace(",d,", ",")),
    ("other columns", rel(("a", 1)).replace("title", "name", 1)),
])
def test_a_corrupt_predecessor_relation_is_merge_invalid(case, text):
    with pytest.raises(MergeInvalid) as info:
        scan_relation(io.StringIO(text), COLS)
    assert info.value.code == "COLLECTION_MERGE_INVALID"


def test_header_check_reads_only_the_header():
    assert check_relation_header(io.StringIO(rel(("a", 1))), COLS) is None
    assert check_relation_header(io.StringIO(""), COLS) is None
    problem = check_relation_header(io.StringIO(rel(("a", 1))), ("title", "extra"))
    assert problem.code == "COLLECTION_MERGE_INVALID" and problem.rule == "REF-05"


def test_page_id_order_is_bytewise_utf8():
    ids = ["a", "B", "é", "z", "日本", "\U0001f600", "ｚ"]
    assert sorted(ids) == sorted(ids, key=lambda s: s.encode("utf-8"))
    text = rel(*[(pid, 1) for pid in sorted(ids)])
    assert [pid for pid, _ in iter_pages(io.StringIO(text), COLS)] == sorted(ids, key=lambda s: s.encode())
