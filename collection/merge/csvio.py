"""The CSV dialect of the state files (D-02): RFC 4180, UTF-8, LF, header, minimal quoting.

Python's csv writer, given lineterminator="\\n", quotes a field holding \\n but leaves a
bare \\r unquoted, and a reader would then split the row there. This writer serialises
chunks with the LF writer and, only for the rare chunk that contains a \\r at all,
re-serialises its rows with a CRLF writer (which quotes both) and swaps the terminator.
The LF writer never emits a \\r itself, so one substring test per chunk is the whole cost.
"""

from __future__ import annotations

import csv
import io
from itertools import islice
from typing import Iterable, Sequence, TextIO

_CHUNK = 2048

# Python's csv reader refuses a field over 131,072 characters by default, yet one page's
# text (a 150 KB story) or a publisher's 200 KB id is written as one field: every later run
# would die reading back what this one wrote. The bound is raised past anything a run can
# write (a body is capped at 32 MiB decoded, a listing likewise), to the largest value every
# platform's C long takes. csv's limit is process-wide; this only ever raises it.
FIELD_LIMIT = 2**31 - 1


def reader(stream: Iterable[str]):
    """csv.reader over a state file, able to read back every field the writer wrote."""
    if csv.field_size_limit() < FIELD_LIMIT:
        csv.field_size_limit(FIELD_LIMIT)
    return csv.reader(stream)


class CsvWriter:
    def __init__(self, out: TextIO):
        self._out = out
        self._buf = io.StringIO()
        self._lf = csv.writer(self._buf, lineterminator="\n")
        self._crlf_buf = io.StringIO()
        self._crlf = csv.writer(self._crlf_buf, lineterminator="\r\n")

    def _crlf_row(self, row: Sequence[str]) -> str:
        b = self._crlf_buf
        b.seek(0)
        b.truncate()
        self._crlf.writerow(row)
        return b.getvalue()[:-2] + "\n"

    def writerow(self, row: Sequence[str]) -> None:
        self.writerows((row,))

    def writerows(self, rows: Iterable[Sequence[str]]) -> None:
        it = iter(rows)
        buf = self._buf
        while True:
            chunk = list(islice(it, _CHUNK))
            if not chunk:
                return
            buf.seek(0)
            buf.truncate()
            self._lf.writerows(chunk)
            text = buf.getvalue()
            if "\r" in text:
                text = "".join(self._crlf_row(r) for r in chunk)
            self._out.write(text)


def to_csv_text(rows: Iterable[Sequence[str]]) -> str:
    out = io.StringIO()
    CsvWriter(out).writerows(rows)
    return out.getvalue()
