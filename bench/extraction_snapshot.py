"""Digests of html.web_extract's output on every page the extraction benches read, to prove a speed-only
change to the engine changes no output (issue 27).

    .venv/bin/python bench/extraction_snapshot.py --write before.json    # at the old engine
    .venv/bin/python bench/extraction_snapshot.py --compare before.json  # after the change: exit 1 on a difference

Pages: every page of every declared split (bench/corpora/splits.json, read from the corpora cache that
bench/corpora/prepare.py fills, and the article set in ../shared/data). Each page is read with the Reader and
every metadata column, as the speed bench reads it; the digest is the sha256 of the row (or of the failure's
code and message). Only digests and page ids are written or printed, never a page's text, so a comparison
shows nothing of an evaluation page's output beyond "same" or "differs" (D-78).
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

from extraction_corpora import load  # noqa: E402
from prepare import DEFAULT_CACHE  # noqa: E402
import splits as declared  # noqa: E402

METADATA = ["published_at", "author", "description", "canonical_url", "language"]


def digests(cache: Path) -> dict[str, str]:
    from collection.readers.base import Pin, decode

    pin = Pin("html.web_extract", "1.1.0", {"metadata": METADATA})
    found = {}
    for corpus, parts in sorted(declared.load().items()):
        for split in ("tune", "eval"):
            for page_id, body, url, _ in load(cache, parts[split]):
                result = decode(pin, body, "text/html", url or "https://example.org/")
                shown = repr(result.rows) if hasattr(result, "rows") else repr(result)
                found[page_id] = hashlib.sha256(shown.encode("utf-8", "surrogatepass")).hexdigest()
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", type=Path, help="write the digests to this file")
    action.add_argument("--compare", type=Path, help="compare with the digests in this file")
    args = parser.parse_args(argv)
    found = digests(args.cache)
    if args.write:
        args.write.write_text(json.dumps(found, sort_keys=True, indent=0), encoding="utf-8")
        print(f"{len(found)} pages: digests written to {args.write}")
        return 0
    before = json.loads(args.compare.read_text(encoding="utf-8"))
    differ = sorted(page for page in before.keys() | found.keys() if before.get(page) != found.get(page))
    print(f"{len(found)} pages, {len(differ)} differ from {args.compare}" + (": " + ", ".join(differ[:20]) if differ else ""))
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
