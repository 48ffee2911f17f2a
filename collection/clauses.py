"""The specification's clauses and the project's Decisions, by ID (REG-33, D-21, ...).

Messages and `explain CODE` cite clause and decision IDs; `collection explain REG-33` prints
the text, so a user can look up every ID a message names. The texts ship inside the package
as `collection/clauses.md`, a copy of the team's `spec/clauses.md` (each entry a line
`- **ID** text`, continued by indented lines).
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

_ENTRY = re.compile(r"- \*\*([A-Z]+-\d+)\*\* (.*)")
ID_SHAPE = re.compile(r"(?:REG|DISC|PAG|URL|FETCH|READ|PROV|MERGE|COV|REF|OPS|D)-\d+\Z")


@lru_cache(maxsize=1)
def clauses() -> dict[str, tuple[str, str]]:
    """{ID: (section title, text)} for every clause and decision."""
    text = resources.files("collection").joinpath("clauses.md").read_text(encoding="utf-8")
    found: dict[str, tuple[str, str]] = {}
    section = ""
    current: str | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            section, current = line[3:].strip(), None
            continue
        match = _ENTRY.match(line)
        if match:
            current = match.group(1)
            found[current] = (section, match.group(2).strip())
        elif current is not None and line.startswith("  ") and line.strip():
            title, body = found[current]
            found[current] = (title, f"{body} {line.strip()}")
        else:
            current = None
    return found


def lookup(identifier: str) -> tuple[str, str, str] | None:
    """(ID, section, text) for a clause or decision ID in any case, or None."""
    key = identifier.strip().upper()
    if not ID_SHAPE.match(key):
        return None
    for candidate in (key, _padded(key)):      # D-5 is D-05
        if candidate in clauses():
            return (candidate, *clauses()[candidate])
    return None


def _padded(key: str) -> str:
    prefix, _, number = key.partition("-")
    return f"{prefix}-{int(number):02d}"
