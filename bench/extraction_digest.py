"""A digest of html.web_extract's whole output on every page it is measured on, to prove a speed change
changes nothing.

Pages: every page of every corpus split (bench/corpora/splits.json, from the corpora cache), the article
set (../shared/data) and the battery (tests/extraction_battery). Each is decoded twice, with the pin the
bench times (every metadata column) and with no options (the default story), and each output (rows, or
the failure's code and message) is hashed as canonical JSON. One line per page: `<id> <sha256>`.

    .venv/bin/python bench/extraction_digest.py OUT.txt [--against BASELINE.txt]

With `--against`, the pages whose digest differs from the baseline's are listed (exit 1 when any does).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "corpora"))
sys.path.insert(0, str(ROOT / "tests"))

from extraction_corpora import load  # noqa: E402
from prepare import DEFAULT_CACHE  # noqa: E402
import splits as declared  # noqa: E402

from collection.readers.base import Decoded, Pin, decode  # noqa: E402

PINS = (Pin("html.web_extract", "1.1.0", {"metadata": ["published_at", "modified_at", "author", "description",
                                                        "canonical_url", "language"]}),
        Pin("html.web_extract", "1.1.0", {}))


def digest(body: bytes, content_type: str, url: str) -> str:
    outputs = []
    for pin in PINS:
        result = decode(pin, body, content_type, url)
        outputs.append(["rows", result.rows] if isinstance(result, Decoded) else ["failure", result.code,
                                                                                   result.message])
    return hashlib.sha256(json.dumps(outputs, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--against", type=Path)
    args = parser.parse_args(argv)
    from extraction_battery import PAGES

    lines = []
    splits = declared.load()
    for corpus in sorted(splits):
        for split in ("tune", "eval"):
            for page_id, body, url, _ in load(args.cache, splits[corpus][split]):
                lines.append(f"{page_id} {digest(body, 'text/html', url or 'https://example.org/')}")
    for page in PAGES:
        lines.append(f"battery/{page.id} {digest(page.html(), 'text/html; charset=utf-8', 'https://www.example.org/' + page.id)}")
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} pages digested into {args.out}")
    if args.against:
        baseline = dict(line.split(" ", 1) for line in args.against.read_text(encoding="utf-8").splitlines())
        differ = [line.split(" ", 1)[0] for line in lines if baseline.get(line.split(" ", 1)[0]) != line.split(" ", 1)[1]]
        print(f"{len(differ)} of {len(lines)} differ from {args.against}" + (": " + ", ".join(differ[:20]) if differ else ""))
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
