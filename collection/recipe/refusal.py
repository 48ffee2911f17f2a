"""A refusal: one reason a document (or a run) is not accepted, as a value.

Like jsonschema's ValidationError it says what is wrong and where, but it is a frozen
value with a stable `code` from collection.codes, so callers and tests compare codes,
never message text.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Refusal:
    code: str
    pointer: str          # RFC 6901 pointer of the offending member ("" for the document)
    message: str
    rule: str             # the bound or rule broken, with its clause IDs
    line: int | None = None
    column: int | None = None

    def at(self, prefix: str) -> "Refusal":
        """The same refusal inside a larger document (a source inside a dataset)."""
        return Refusal(self.code, prefix + self.pointer, self.message, self.rule, self.line, self.column)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        where = f"{self.line}:{self.column}" if self.line is not None else "-"
        return f"{where} {self.code} at {self.pointer or '/'}: {self.message}"


class RefusedError(Exception):
    """Raised by code that cannot continue past a refusal (the run loop); carries the values."""

    def __init__(self, refusals: list[Refusal] | Refusal):
        self.refusals = [refusals] if isinstance(refusals, Refusal) else list(refusals)
        super().__init__("; ".join(str(r) for r in self.refusals))

    @property
    def code(self) -> str:
        return self.refusals[0].code
