"""How well html.web_extract finds a page's story, beside trafilatura on the same pages in the same run.

Three extractors: ours (html.web_extract 1.1.0, collection/readers/extract_engine.py), trafilatura with its
defaults and trafilatura with `favor_precision` (the two settings ours must beat). trafilatura is a
benchmark-only dependency, in the `test` extra (with lxml_html_clean, which lxml 6 split out and trafilatura
imports).

1. Article set: /work/shared/data/article-extraction (121 pages with ground truth; read from there, never
   copied). Metric (that data's README, the Scrapinghub article-extraction benchmark): word tokens (runs of \\w),
   shingles of 4 consecutive tokens, per-page multiset tp/fp/fn normalised to sum 1; precision and recall are
   means over pages (a page where both texts are empty counts 1) and F1 is computed from the two means. Reported
   on all pages and on a fixed dev / hold-out split (page ids sorted, every other one held out), with a paired
   bootstrap (pages resampled together for both extractors, fixed seed) 95% interval for our F1 lead.
2. Battery: tests/extraction_battery (62 short and structured pages in real templates' chrome); a page holds
   when its story has every must-contain string and none of its boilerplate.
3. Speed: pages per CPU second of ours (with all metadata columns) against a bare `lxml.html.fromstring` of
   the same bytes, best of N alternating passes (target: within 3x).

    .venv/bin/python bench/extraction.py [--data DIR] [--worst N] [--repeat N] [--failures]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))
# The data lives beside the project (../shared/data); a worktree sits one level deeper.
DEFAULT_DATA = next((base / "shared" / "data" / "article-extraction" for base in ROOT.parents
                     if (base / "shared" / "data" / "article-extraction").is_dir()),
                    ROOT.parent / "shared" / "data" / "article-extraction")
_TOKEN = re.compile(r"\w+")
SAMPLES = 2000


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
        return ""  # a failed page (story_not_found) has no story
    return result.rows[0][1]


def trafilatura_story(body: bytes, url: str) -> str:
    import trafilatura

    return trafilatura.extract(body, url=url, output_format="txt", with_metadata=False) or ""


def trafilatura_precision_story(body: bytes, url: str) -> str:
    import trafilatura

    return trafilatura.extract(body, url=url, output_format="txt", with_metadata=False, include_comments=False,
                               favor_precision=True, deduplicate=False) or ""


def f1(precisions: list[float], recalls: list[float]) -> float:
    precision = sum(precisions) / len(precisions)
    recall = sum(recalls) / len(recalls)
    return 2 * precision * recall / (precision + recall) if precision + recall else 0.0


def measure(name: str, extract: Callable[[bytes, str], str], pages) -> dict:
    started = time.perf_counter()
    outputs = [extract(body, url) for _, body, url, _ in pages]
    seconds = time.perf_counter() - started
    scores = [page_scores(out, truth) for (_, _, _, truth), out in zip(pages, outputs)]
    precisions = [p for p, _ in scores]
    recalls = [r for _, r in scores]
    per_page = sorted((2 * p * r / (p + r) if p + r else 0.0, page_id) for (page_id, *_), (p, r) in zip(pages, scores))
    return {"name": name, "precisions": precisions, "recalls": recalls, "f1": f1(precisions, recalls),
            "precision": sum(precisions) / len(precisions), "recall": sum(recalls) / len(recalls),
            "seconds": seconds, "worst": per_page[:10]}


def subset(result: dict, indexes: list[int]) -> float:
    return f1([result["precisions"][i] for i in indexes], [result["recalls"][i] for i in indexes])


def paired_bootstrap(ours: dict, other: dict, indexes: list[int], samples: int = SAMPLES) -> tuple[float, float, float]:
    """95% interval of F1(ours) - F1(other), resampling pages (the same pages for both), and the share of
    resamples in which ours is not ahead."""
    rng = random.Random(18)
    leads = []
    for _ in range(samples):
        drawn = [indexes[rng.randrange(len(indexes))] for _ in indexes]
        leads.append(subset(ours, drawn) - subset(other, drawn))
    leads.sort()
    return leads[int(0.025 * samples)], leads[int(0.975 * samples) - 1], sum(lead <= 0 for lead in leads) / samples


def battery(extract: Callable[[bytes, str], str]) -> tuple[int, list[str]]:
    from extraction_battery import PAGES, holds

    failed = [page.id for page in PAGES if not holds(page, extract(page.html(), f"https://www.example.org/{page.id}"))]
    return len(PAGES) - len(failed), failed


def speed(pages, repeat: int) -> tuple[float, float]:
    """Best-of-N CPU seconds of ours (the Reader, metadata included) and of the bare parse."""
    from lxml import html

    from collection.readers.base import Pin, decode

    pin = Pin("html.web_extract", "1.1.0", {"metadata": ["published_at", "author", "description", "canonical_url",
                                                          "language"]})
    from readers import timed  # bench/readers.py: best of N CPU-second passes, alternating

    reader, bare = timed((lambda body: decode(pin, body, "text/html", "https://example.com/a"), html.fromstring),
                         [body for _, body, _, _ in pages], repeat)
    return reader, bare


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--worst", type=int, default=0, help="list the N worst pages of each extractor")
    parser.add_argument("--repeat", type=int, default=5, help="speed: best of N passes")
    parser.add_argument("--failures", action="store_true", help="list the battery pages each extractor fails")
    args = parser.parse_args(argv)
    pages = load(args.data)
    if not pages:
        print(f"no pages under {args.data}", file=sys.stderr)
        return 2
    import trafilatura

    extractors = [("html.web_extract 1.1.0", our_story),
                  (f"trafilatura {trafilatura.__version__} default", trafilatura_story),
                  (f"trafilatura {trafilatura.__version__} precision", trafilatura_precision_story)]
    results = [measure(name, extract, pages) for name, extract in extractors]
    everything = list(range(len(pages)))
    dev, hold_out = everything[0::2], everything[1::2]
    print(f"Article set: {len(pages)} pages from {args.data} (dev {len(dev)}, hold-out {len(hold_out)})")
    print(f"{'extractor':<34}{'F1':>8}{'P':>8}{'R':>8}{'dev F1':>9}{'hold F1':>9}{'pages/s':>9}")
    for r in results:
        print(f"{r['name']:<34}{r['f1']:>8.4f}{r['precision']:>8.4f}{r['recall']:>8.4f}{subset(r, dev):>9.4f}"
              f"{subset(r, hold_out):>9.4f}{len(pages) / r['seconds']:>9.1f}")
    ours = results[0]
    for other in results[1:]:
        for label, indexes in (("all", everything), ("hold-out", hold_out)):
            low, high, behind = paired_bootstrap(ours, other, indexes)
            lead = subset(ours, indexes) - subset(other, indexes)
            print(f"lead over {other['name'].split(' ', 2)[2]:<10} {label:<9} F1 {lead:+.4f}  95% CI [{low:+.4f}, {high:+.4f}]"
                  f"  resamples not ahead {behind:.1%}  (paired bootstrap, {SAMPLES} samples)")
    for r in results[: 3 if args.worst else 0]:
        print(f"worst pages of {r['name']}: " + ", ".join(f"{pid[:12]}={f:.2f}" for f, pid in r["worst"][: args.worst]))

    print()
    held = [(name, *battery(extract)) for name, extract in extractors]
    from extraction_battery import PAGES

    print(f"Battery: {len(PAGES)} short and structured pages (tests/extraction_battery)")
    for name, count, failed in held:
        print(f"{name:<34}{count:>4} / {len(PAGES)} hold ({count / len(PAGES):.1%})"
              + (f"   fails: {', '.join(failed)}" if args.failures else ""))

    print()
    reader, bare = speed(pages, args.repeat)
    print(f"Speed: {len(pages)} pages, best of {args.repeat}: html.web_extract {len(pages) / reader:.1f} pages/s, "
          f"lxml.html.fromstring {len(pages) / bare:.1f} pages/s, ratio {reader / bare:.2f}x (target: within 3x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
