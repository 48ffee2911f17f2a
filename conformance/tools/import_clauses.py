"""Copy the clause IDs of spec/clauses.md into conformance/clauses.json (id, group, text).

    python -m conformance.tools.import_clauses /work/shared/spec/clauses.md

The suite ships its own copy so that it is self-contained; rerun this after clauses.md changes.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from conformance import CLAUSES_FILE

_LINE = re.compile(r"^- \*\*((REG|DISC|PAG|URL|FETCH|READ|PROV|MERGE|COV|REF|OPS|D)-(\d{2}))\*\* (.*)$")


def parse(text: str) -> list[dict]:
    clauses = []
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if match:
            clauses.append({"id": match.group(1), "group": match.group(2), "text": match.group(4).strip()})
    return clauses


def main(argv: list[str]) -> int:
    source = Path(argv[0] if argv else "/work/shared/spec/clauses.md")
    clauses = parse(source.read_text(encoding="utf-8"))
    ids = [c["id"] for c in clauses]
    if len(ids) != len(set(ids)):
        raise SystemExit("clauses.md repeats an id")
    CLAUSES_FILE.write_text(json.dumps({"source": "spec/clauses.md", "clauses": clauses}, indent=1,
                                       ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(clauses)} clauses written to {CLAUSES_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
