"""html.tabular 1.0.0: tables with merged cells, repeated records (READ-05, READ-09, D-12, D-50)."""

from __future__ import annotations

import pytest

from collection.readers.base import Decoded, DecodeFailure, Pin, decode

# A ward results table shaped like a real council page: a caption, a two-level header
# flattened by the pin, a rowspan over two rows, a colspan over two columns, a footer.
RESULTS = """<html><head><meta charset="utf-8"><title>Results</title></head><body>
<table class="layout"><tr><td>not the data</td></tr></table>
<table id="results" class="data">
  <caption>Ward results, 2 May 2024</caption>
  <thead><tr><th>Ward</th><th>Candidate</th><th>Party</th><th>Votes</th></tr></thead>
  <tbody>
    <tr><td rowspan="2">Abbey</td><td>J.&nbsp;Smith</td><td>Green</td><td>1,204</td></tr>
    <tr><td>A. Jones</td><td>Labour</td><td>987</td></tr>
    <tr><td>Castle</td><td colspan="2">Uncontested<br>(returned unopposed)</td><td>–</td></tr>
    <tr><td></td><td></td><td></td><td></td></tr>
    <tr><td>Docks</td><td>Zoë   Brown</td><td>Ind.</td><td>
      2,001</td></tr>
  </tbody>
  <tfoot><tr><td>Total</td><td></td><td></td><td>4,192</td></tr></tfoot>
</table></body></html>"""

ROWS = (
    ("Abbey", "J. Smith", "Green", "1,204"),
    ("Abbey", "A. Jones", "Labour", "987"),
    ("Castle", "Uncontested (returned unopposed)", "Uncontested (returned unopposed)", "–"),
    ("Docks", "Zoë Brown", "Ind.", "2,001"),
    ("Total", "", "", "4,192"),
)

CASES = [
    # (options, expected rows or failure code)
    ({"table": {"selector": "#results", "columns": ["Ward", "Candidate", "Party", "Votes"]}}, ROWS),
    ({"table": {"selector": "table.data", "columns": [{"name": "ward", "header": "Ward"}, "Candidate", "Party",
                                                       {"name": "votes", "header": "Votes"}]}}, ROWS),
    ({"table": {"selector": "table:nth-child(2)", "columns": ["Ward", "Candidate", "Party", "Votes"]}}, ROWS),
    ({"table": {"selector": "#results", "columns": ["Ward", "Candidate", "Party"]}}, "column_mismatch"),
    ({"table": {"selector": "#results", "columns": ["Ward", "Party", "Candidate", "Votes"]}}, "column_mismatch"),
    ({"table": {"selector": "#results", "columns": ["ward", "Candidate", "Party", "Votes"]}}, "column_mismatch"),
    ({"table": {"selector": "table.missing", "columns": ["Ward"]}}, ()),  # D-50: no table, no rows
    ({"table": {"selector": "#results td", "columns": ["Ward"]}}, ()),  # only <table> elements count
    ({"records": {"selector": "#results tbody tr", "columns": [
        {"name": "first", "selector": "td:first-child"},
        {"name": "votes", "selector": "td:last-child"},
        {"name": "colspan", "selector": "td[colspan]", "attribute": "colspan"}]}},
     (("Abbey", "1,204", ""), ("A. Jones", "987", ""), ("Castle", "–", "2"), ("", "", ""), ("Docks", "2,001", ""))),
]


@pytest.mark.parametrize("options,expected", CASES)
def test_results_table(options: dict, expected) -> None:
    result = decode(Pin("html.tabular", "1.0.0", options), RESULTS.encode("utf-8"), "text/html", "https://e.example/")
    if isinstance(expected, str):
        assert isinstance(result, DecodeFailure) and result.code == expected  # READ-09
    else:
        assert isinstance(result, Decoded) and result.rows == expected


SPANS = [
    # (table body, declared columns, rows)
    ("<tr><th>a</th><th>b</th><th>c</th></tr><tr><td rowspan=3>1</td><td colspan=2>2</td></tr>"
     "<tr><td>3</td><td rowspan=2>4</td></tr><tr><td>5</td></tr>",
     ["a", "b", "c"], (("1", "2", "2"), ("1", "3", "4"), ("1", "5", "4"))),
    ("<tr><th colspan=2>ab</th></tr><tr><td>1</td><td>2</td></tr>",
     [{"name": "a", "header": "ab"}, {"name": "b", "header": "ab"}], (("1", "2"),)),
    ("<tr><th>a</th><th>b</th></tr><tr><td>1</td></tr>", ["a", "b"], (("1", ""),)),  # short rows are padded
    ("<tr><th>a</th><th></th></tr><tr><td>1</td><td></td></tr>", ["a"], (("1",),)),  # empty trailing cells ignored
    ("<tr><th>a</th></tr><tr><td>1</td><td>extra</td></tr>", ["a"], "column_mismatch"),
    ("<tr><th>a</th></tr><tr><td rowspan=0>1</td></tr><tr><td>2</td></tr>", ["a"], (("1",), ("2",))),
    ("<tr><th>a</th></tr><tr><td rowspan=x colspan=-1>1</td></tr>", ["a"], (("1",),)),
    ("<tr><th>a</th></tr><tr><td><table><tr><td>inner</td></tr></table>outer</td></tr>", ["a"], (("inner outer",),)),
    ("", ["a"], "column_mismatch"),
]


@pytest.mark.parametrize("body,columns,expected", SPANS)
def test_rowspan_and_colspan(body: str, columns: list, expected) -> None:
    page = f"<html><body><table>{body}</table></body></html>".encode()
    result = decode(Pin("html.tabular", "1.0.0", {"table": {"selector": "table", "columns": columns}}),
                    page, "application/xhtml+xml", "")
    if isinstance(expected, str):
        assert result.code == expected
    else:
        assert result.rows == expected


def test_hostile_spans_are_bounded() -> None:
    page = ("<table><tr><th>a</th></tr>" + "<tr><td rowspan=1000 colspan=1000>x</td></tr>" * 3 + "</table>").encode()
    result = decode(Pin("html.tabular", "1.0.0", {"table": {"selector": "table", "columns": ["a"]}}),
                    page, "text/html", "")
    assert isinstance(result, (Decoded, DecodeFailure))


def test_same_bytes_same_rows() -> None:
    pin = Pin("html.tabular", "1.0.0", CASES[0][0])
    assert decode(pin, RESULTS.encode(), "text/html", "") == decode(pin, RESULTS.encode(), "text/html", "")
