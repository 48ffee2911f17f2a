"""`html.tabular` 1.0.0: rows from a <table>, or from repeated elements (pure).

Table mode: the first table the selector matches is laid out on a grid (rowspan and
colspan copy a cell's text into every slot it covers, as a reader of the table sees it);
its first row is the header and must equal the declared headers, else the page fails with
`column_mismatch` (READ-09, D-12). No matching table is zero rows (D-50).

Records mode: one row per element the records selector matches; each column is the first
match of its selector inside the record (the record itself included), read as the named
attribute or as its text.
"""

from __future__ import annotations

from typing import Any, Mapping

from collection.readers.base import ReaderFailure, Rows, reader
from collection.readers.text import inline_text, normalize, parse_html
from collection.readers.selectors import compile_selector

FAMILY_ID = "html.tabular"
# A table bigger than this is not a page of records; the cap keeps a hostile colspan (the
# HTML parser allows up to 1000 per cell) from building a grid of millions of slots.
MAX_GRID_CELLS = 1_000_000
_MAX_SPAN = 1000


@reader(FAMILY_ID)
def read(options: Mapping[str, Any], body: bytes, content_type: str, url: str) -> Rows:
    root = parse_html(body, content_type)
    if "table" in options:
        return _table(root, options["table"])
    return _records(root, options["records"])


def header_of(column: Any) -> tuple[str, str]:
    """(name, header text) of a declared column: a string is both."""
    if isinstance(column, str):
        return column, column
    return column["name"], column.get("header", column["name"])


def _table(root: Any, options: Mapping[str, Any]) -> Rows:
    tables = [t for t in compile_selector(options["selector"]).select(root) if t.tag == "table"]
    if not tables:
        return ()
    grid = _grid(tables[0])
    if not grid:
        raise ReaderFailure("column_mismatch", "the table has no header row")
    headers = tuple(header_of(column)[1] for column in options["columns"])
    header = list(grid[0])
    while len(header) > len(headers) and header[-1] == "":
        header.pop()
    if tuple(header) != headers:
        raise ReaderFailure("column_mismatch", f"the table's header is {header!r}, the pin declares {list(headers)!r}")
    rows = []
    for cells in grid[1:]:
        cells = list(cells)
        if len(cells) > len(headers):
            if any(cells[len(headers):]):
                raise ReaderFailure("column_mismatch",
                                    f"a row has {len(cells)} cells under a header of {len(headers)}")
            cells = cells[:len(headers)]
        cells += [""] * (len(headers) - len(cells))
        if any(cells):  # rows with no text at all are spacers, not records
            rows.append(tuple(cells))
    return tuple(rows)


def _own_rows(table: Any) -> list:
    """The table's rows in order, not those of tables nested in its cells."""
    rows = []
    for child in table:
        if not isinstance(child.tag, str):
            continue
        if child.tag == "tr":
            rows.append(child)
        elif child.tag in ("thead", "tbody", "tfoot"):
            rows.extend(row for row in child if row.tag == "tr")
    return rows


def _span(cell: Any, attribute: str) -> int:
    try:
        value = int((cell.get(attribute) or "1").strip())
    except ValueError:
        return 1
    # HTML: rowspan=0 means "to the end of the section"; treated as 1, the common reading
    # of sloppy pages, so one odd cell never swallows the table.
    return min(max(value, 1), _MAX_SPAN)


def _grid(table: Any) -> list[list[str]]:
    grid: list[list[str]] = []
    pending: dict[tuple[int, int], str] = {}  # (row, column) slots filled by a rowspan above
    slots = 0
    rows = _own_rows(table)
    for r, row in enumerate(rows):
        line: list[str] = []
        c = 0
        for cell in row:
            if cell.tag not in ("td", "th"):
                continue
            while (r, c) in pending:
                line.append(pending.pop((r, c)))
                c += 1
            text = inline_text(cell)
            rowspan = min(_span(cell, "rowspan"), len(rows) - r)
            colspan = _span(cell, "colspan")
            slots += rowspan * colspan
            if slots > MAX_GRID_CELLS:
                raise ReaderFailure("decode_error", "the table is too large to lay out")
            for dc in range(colspan):
                line.append(text)
                for dr in range(1, rowspan):
                    pending[(r + dr, c + dc)] = text
            c += colspan
        while (r, c) in pending:
            line.append(pending.pop((r, c)))
            c += 1
        grid.append(line)
    return grid


def _records(root: Any, options: Mapping[str, Any]) -> Rows:
    columns = [(compile_selector(column["selector"]), column.get("attribute")) for column in options["columns"]]
    rows = []
    for record in compile_selector(options["selector"]).select(root):
        row = []
        for selector, attribute in columns:
            value = ""
            for element in selector.select(record):
                value = normalize(element.get(attribute)) if attribute else inline_text(element)
                break
            row.append(value)
        rows.append(tuple(row))
    return tuple(rows)
