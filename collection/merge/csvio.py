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
