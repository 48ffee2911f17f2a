"""How well html.web_extract finds a page's story, beside trafilatura on the same pages in the same run.

Three extractors: ours (html.web_extract 1.1.0, collection/readers/extract_engine.py), trafilatura with its
defaults (the target: ours must not score below it) and trafilatura with `favor_precision` (the engine 1.1.0
used before ours). trafilatura is a benchmark-only dependency, in the `test` extra.

Data: /work/shared/data/article-extraction (121 pages with ground truth; read from there, never copied).
Metric (that data's README, the Scrapinghub article-extraction benchmark): word tokens (runs of \\w), shingles of
4 consecutive tokens, per-page multiset tp/fp/fn normalised to sum 1; precision and recall are means over pages
(a page where both texts are empty counts 1) and F1 is computed from the two means.

    .venv/bin/python bench/extraction.py [--data DIR] [--worst N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "article-extraction"
_TOKEN = re.compile(r"\w+")


def shingles(text: str, n: int = 4) -> Counter:
    tokens = _TOKEN.findall(text or "")
    if len(tokens) < n:
        return Counter([tuple(tokens)]) if tokens else Counter()
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def page_scores(extracted: str, truth: str) -> tuple[float, float]:
    got, want = shingles(extracted), shingles(truth)
    if not got and not want:
        return 1.0, 1.0
    tp = sum((got & want).values())
    fp = sum((got - want).values())
    fn = sum((want - got).values())
    total = tp + fp + fn
    tp, fp, fn = tp / total, fp / total, fn / total
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    return precision, recall


def load(data: Path) -> list[tuple[str, bytes, str, str]]:
    truth = json.loads((data / "ground-truth.json").read_text(encoding="utf-8"))
    pages = []
    for page_id in sorted(truth):
        path = data / "html" / f"{page_id}.html.gz"
        if path.exists():
            pages.append((page_id, gzip.decompress(path.read_bytes()), truth[page_id]["url"], truth[page_id]["articleBody"]))
    return pages


def our_story(body: bytes, url: str) -> str:
    from collection.readers.base import Pin, decode

    result = decode(Pin("html.web_extract", "1.1.0", {}), body, "text/html; charset=utf-8", url)
    if not hasattr(result, "rows") or not result.rows:
        return ""
    return result.rows[0][1]


def trafilatura_story(body: bytes, url: str) -> str:
    import trafilatura

    return trafilatura.extract(body, url=url, output_format="txt", with_metadata=False) or ""


def trafilatura_precision_story(body: bytes, url: str) -> str:
    import trafilatura

    return trafilatura.extract(body, url=url, output_format="txt", with_metadata=False, include_comments=False,
                               favor_precision=True, deduplicate=False) or ""


def measure(name: str, extract: Callable[[bytes, str], str], pages) -> dict:
    precisions, recalls, per_page = [], [], []
    started = time.perf_counter()
    outputs = [extract(body, url) for _, body, url, _ in pages]
    seconds = time.perf_counter() - started
    for (page_id, _, _, truth), out in zip(pages, outputs):
        p, r = page_scores(out, truth)
        precisions.append(p)
        recalls.append(r)
        per_page.append((2 * p * r / (p + r) if p + r else 0.0, page_id))
    precision = sum(precisions) / len(precisions)
    recall = sum(recalls) / len(recalls)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"name": name, "f1": f1, "precision": precision, "recall": recall, "seconds": seconds,
            "worst": sorted(per_page)[:10]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--worst", type=int, default=0, help="list the N worst pages of each extractor")
    args = parser.parse_args(argv)
    pages = load(args.data)
    if not pages:
        print(f"no pages under {args.data}", file=sys.stderr)
        return 2
    import trafilatura

    results = [measure("html.web_extract 1.1.0", our_story, pages),
               measure(f"trafilatura {trafilatura.__version__} default", trafilatura_story, pages),
               measure(f"trafilatura {trafilatura.__version__} precision", trafilatura_precision_story, pages)]
    print(f"{len(pages)} pages from {args.data}")
    print(f"{'extractor':<34}{'F1':>8}{'P':>8}{'R':>8}{'pages/s':>10}")
    for r in results:
        print(f"{r['name']:<34}{r['f1']:>8.4f}{r['precision']:>8.4f}{r['recall']:>8.4f}{len(pages) / r['seconds']:>10.1f}")
    ours, default, precision = results
    print(f"F1 difference (ours - trafilatura default): {ours['f1'] - default['f1']:+.4f}"
          f"  (ours - trafilatura precision): {ours['f1'] - precision['f1']:+.4f}")
    for r in results[: 3 if args.worst else 0]:
        print(f"worst pages of {r['name']}: " + ", ".join(f"{pid}={f:.2f}" for f, pid in r["worst"][: args.worst]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
