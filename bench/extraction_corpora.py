"""html.web_extract on public annotated corpora it was never written for, beside three peers, in one run.

Corpora (bench/corpora/SOURCES.md): CleanEval (dev / final), Dragnet (its train / test lists), L3S-GN1 (the
Google News set page-signal evaluates on), Mozilla Readability's test pages, CleanPortalEval, and the
article-extraction pages in ../shared/data. Their pages live in a cache (`$COLLECTION_CORPORA`, default
`~/.cache/collection/corpora`) that bench/corpora/prepare.py fills; only the split ids are in the repository
(bench/corpora/splits.json, declared in SPLITS.md before any tuning). Both splits of each corpus are reported.

Extractors: ours (html.web_extract 1.1.0), trafilatura 2.3.1 with its defaults and with `favor_precision`,
and jusText (its English stop list, the paragraphs it does not call boilerplate). All four run on every page
in this process.

Metrics, per page and then averaged over a split's pages:
- token F1 (every corpus): the multisets of lower-cased word tokens (runs of \\w) of the extraction and of the
  truth; P = shared / extracted, R = shared / truth, F1 their harmonic mean (both empty: 1). The Dragnet and
  L3S-GN1 papers score with token-level P/R/F1 of this kind.
- Lev (every corpus): the Web Content Extraction Benchmark's Levenshtein score, `Levenshtein.ratio` of the
  two whitespace-token sequences (its eval.py), which is also CleanEval's own kind of measure (an edit
  distance over the text's tokens). WCEB's ROUGE-LSum is not computed (see SOURCES.md).
- shingle F1 (the article set only): that benchmark's own metric (bench/extraction.py).
Leads: ours minus trafilatura's better setting on that split (the better of the two by token F1 there),
with a paired bootstrap 95% interval (pages resampled, the same pages for both; 2000 resamples, fixed seed).
Pooled: every evaluation page of every corpus, resampled within its corpus.
Speed: CPU seconds of ours (the Reader with all metadata columns) against a bare `lxml.html.fromstring` of the
same bytes, best of N alternating passes over a fixed sample of the pages (target: within 3x).

    .venv/bin/python bench/extraction_corpora.py [--cache DIR] [--data DIR] [--only CORPUS ...] [--repeat N] [--reuse-peers]

`--reuse-peers` reads the peers' outputs saved by an earlier run (under the cache's `outputs/`) instead of
running them again, for quick looks while tuning on tuning splits; the figures to report come from a run
without it.
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
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "bench" / "corpora"))

from extraction import DEFAULT_DATA, page_scores, trafilatura_precision_story, trafilatura_story  # noqa: E402
from prepare import DEFAULT_CACHE  # noqa: E402
import splits as declared  # noqa: E402

_WORD = re.compile(r"\w+")
SAMPLES = 2000


def our_story(body: bytes, url: str) -> str:
    from collection.readers.base import Pin, decode

    # No charset in the content type: the Reader decides from the bytes and the page's own <meta>, as it
    # does for a server that names none (the corpora's pages come with no headers).
    result = decode(Pin("html.web_extract", "1.1.0", {}), body, "text/html", url or "https://example.org/")
    if not hasattr(result, "rows") or not result.rows:
        return ""
    return result.rows[0][1]


def justext_story(body: bytes, url: str) -> str:
    import justext

    try:
        paragraphs = justext.justext(body, justext.get_stoplist("English"))
    except Exception:  # a page jusText cannot parse is an empty extraction, as for the others
        return ""
    return "\n".join(paragraph.text for paragraph in paragraphs if not paragraph.is_boilerplate)


def safe(extract: Callable[[bytes, str], str]) -> Callable[[bytes, str], str]:
    def run(body: bytes, url: str) -> str:
        try:
            return extract(body, url) or ""
        except Exception:
            return ""
    return run


def token_prf(extracted: str, truth: str) -> tuple[float, float, float]:
    got, want = Counter(_WORD.findall(extracted.lower())), Counter(_WORD.findall(truth.lower()))
    if not got and not want:
        return 1.0, 1.0, 1.0
    shared = sum((got & want).values())
    precision = shared / sum(got.values()) if got else 0.0
    recall = shared / sum(want.values()) if want else 0.0
    return precision, recall, (2 * precision * recall / (precision + recall) if shared else 0.0)


def levenshtein(extracted: str, truth: str) -> float:
    import Levenshtein

    got, want = extracted.split(), truth.split()
    if not got and not want:
        return 1.0
    return Levenshtein.ratio(want, got)


def load(cache: Path, page_ids: list[str], data: Path = DEFAULT_DATA) -> list[tuple[str, bytes, str, str]]:
    """(id, body, url, truth) of each page; the article set is read from `data` (../shared/data)."""
    pages = []
    urls: dict[str, dict] = {}
    article = None
    for page_id in page_ids:
        folder, name = page_id.split("/", 1)
        if folder == "scrapinghub":
            if article is None:
                article = json.loads((data / "ground-truth.json").read_text(encoding="utf-8"))
            body = gzip.decompress((data / "html" / f"{name}.html.gz").read_bytes())
            pages.append((page_id, body, article[name]["url"], article[name]["articleBody"]))
            continue
        if folder not in urls:
            urls[folder] = json.loads((cache / folder / "urls.json").read_text(encoding="utf-8"))
        pages.append((page_id, (cache / folder / f"{name}.html").read_bytes(), urls[folder].get(name, ""),
                      (cache / folder / f"{name}.txt").read_text(encoding="utf-8")))
    return pages


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def bootstrap(ours: list[float], other: list[float], strata: list[list[int]], samples: int = SAMPLES):
    """95% interval of mean(ours) - mean(other) over pages resampled within each stratum, and the
    share of resamples in which ours is not ahead."""
    rng = random.Random(27)
    leads = []
    for _ in range(samples):
        total = 0.0
        count = 0
        for stratum in strata:
            for _ in stratum:
                i = stratum[rng.randrange(len(stratum))]
                total += ours[i] - other[i]
                count += 1
        leads.append(total / count)
    leads.sort()
    return leads[int(0.025 * samples)], leads[int(0.975 * samples) - 1], sum(lead <= 0 for lead in leads) / samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="the article set (ground-truth.json, html/); default: shared/data beside the checkout")
    parser.add_argument("--only", nargs="*", help="corpora to run (default: all declared)")
    parser.add_argument("--splits", nargs="*", default=["tune", "eval"], choices=["tune", "eval"])
    parser.add_argument("--repeat", type=int, default=3, help="speed: best of N passes")
    parser.add_argument("--speed-pages", type=int, default=300, help="speed: pages in the timed sample")
    parser.add_argument("--reuse-peers", action="store_true", help="peers' outputs from the last full run")
    parser.add_argument("--worst", type=int, default=0, help="list our N worst pages per corpus and split")
    args = parser.parse_args(argv)
    splits = declared.load()
    corpora = [c for c in sorted(splits) if not args.only or c in args.only]
    missing = [c for c in corpora if c != "scrapinghub" and not (args.cache / (
        "cleaneval-dev" if c == "cleaneval" else c)).is_dir()]
    if missing:
        print(f"corpora not in the cache {args.cache}: {', '.join(missing)}; fill it with "
              f"bench/corpora/prepare.py (see bench/corpora/SOURCES.md)", file=sys.stderr)
        return 2
    if "scrapinghub" in corpora and not (args.data / "ground-truth.json").is_file():
        print(f"the article set is not at {args.data} (no ground-truth.json): pass --data DIR, or leave it out "
              f"with --only {' '.join(c for c in corpora if c != 'scrapinghub')}", file=sys.stderr)
        return 2
    import trafilatura

    extractors = [("ours", our_story), ("traf-default", safe(trafilatura_story)),
                  ("traf-precision", safe(trafilatura_precision_story)), ("jusText", justext_story)]
    names = [name for name, _ in extractors]
    saved_path = args.cache / "outputs" / f"peers-trafilatura-{trafilatura.__version__}.json"
    saved = json.loads(saved_path.read_text(encoding="utf-8")) if args.reuse_peers and saved_path.exists() else {}
    outputs_to_save: dict[str, dict[str, str]] = {name: dict(saved.get(name, {})) for name in names[1:]}

    rows = []  # (corpus, split, page indexes) over `pages`
    pages: list[tuple[str, bytes, str, str]] = []
    for corpus in corpora:
        for split in args.splits:
            ids = splits[corpus][split]
            if ids:
                start = len(pages)
                pages.extend(load(args.cache, ids, args.data))
                rows.append((corpus, split, list(range(start, len(pages)))))
    print(f"{len(pages)} pages in {len(rows)} corpus splits from {args.cache} and {args.data}")
    scores: dict[str, dict[str, list[float]]] = {}
    seconds = {}
    for name, extract in extractors:
        started = time.process_time()
        texts = []
        for page_id, body, url, _ in pages:
            if name != "ours" and page_id in saved.get(name, {}):
                texts.append(saved[name][page_id])
                continue
            texts.append(extract(body, url))
            if name != "ours":
                outputs_to_save[name][page_id] = texts[-1]
        seconds[name] = time.process_time() - started
        prf = [token_prf(text, truth) for text, (_, _, _, truth) in zip(texts, pages)]
        scores[name] = {"P": [p for p, _, _ in prf], "R": [r for _, r, _ in prf], "F1": [f for _, _, f in prf],
                        "Lev": [levenshtein(text, truth) for text, (_, _, _, truth) in zip(texts, pages)],
                        "shingle": [page_scores(text, truth) for text, (_, _, _, truth) in zip(texts, pages)]}
    saved_path.parent.mkdir(parents=True, exist_ok=True)
    saved_path.write_text(json.dumps(outputs_to_save, sort_keys=True), encoding="utf-8")
    print("CPU seconds (extraction only): " + ", ".join(f"{n} {seconds[n]:.1f}" for n in names)
          + ("  (peers partly reused from the last run)" if saved else ""))

    print()
    print(f"{'corpus':<16}{'split':<6}{'pages':>6}  " + "".join(f"{n + ' F1':>18}" for n in names)
          + "  " + "".join(f"{n[:8] + ' Lev':>13}" for n in names))
    for corpus, split, indexes in rows:
        line = f"{corpus:<16}{split:<6}{len(indexes):>6}  "
        for n in names:
            pr = f"({mean([scores[n]['P'][i] for i in indexes]):.2f}/{mean([scores[n]['R'][i] for i in indexes]):.2f})"
            line += f"{mean([scores[n]['F1'][i] for i in indexes]):>7.4f} {pr:>10}"
        line += "  " + "".join(f"{mean([scores[n]['Lev'][i] for i in indexes]):>13.4f}" for n in names)
        print(line)
        if corpus == "scrapinghub":
            shingle = []
            for n in names:
                ps = [scores[n]["shingle"][i][0] for i in indexes]
                rs = [scores[n]["shingle"][i][1] for i in indexes]
                p, r = mean(ps), mean(rs)
                shingle.append(f"{n} {2 * p * r / (p + r) if p + r else 0:.4f}")
            print(f"{'':<22}article benchmark's own shingle F1: " + ", ".join(shingle))
    print("(token F1 with mean token precision/recall in brackets; Lev: WCEB's Levenshtein ratio, higher is better)")

    print()
    print("Our token-F1 lead over trafilatura's better setting on each split (paired bootstrap, "
          f"{SAMPLES} resamples, 95% interval):")
    for split in args.splits:
        chosen = [(corpus, indexes) for corpus, s, indexes in rows if s == split]
        for corpus, indexes in chosen + [("pooled", None)]:
            strata = [indexes] if indexes is not None else [ix for c, ix in chosen if c != "scrapinghub"]
            if not strata or not any(strata):
                continue
            flat = [i for stratum in strata for i in stratum]
            best = max(("traf-default", "traf-precision"), key=lambda n: mean([scores[n]["F1"][i] for i in flat]))
            lead = mean([scores["ours"]["F1"][i] for i in flat]) - mean([scores[best]["F1"][i] for i in flat])
            low, high, behind = bootstrap(scores["ours"]["F1"], scores[best]["F1"], strata)
            verdict = "ahead, significantly" if low > 0 else ("ahead, not significantly" if lead > 0 else "BEHIND")
            print(f"  {split:<5}{corpus:<16} vs {best:<15} {lead:+.4f}  [{low:+.4f}, {high:+.4f}]  "
                  f"not ahead in {behind:.1%}  {verdict}")
    print("  (pooled: every corpus but the article set, whose pages were tuned on before; resampled per corpus)")
    if args.worst:
        for corpus, split, indexes in rows:
            worst = sorted(indexes, key=lambda i: scores["ours"]["F1"][i] - max(
                scores["traf-default"]["F1"][i], scores["traf-precision"]["F1"][i]))[: args.worst]
            print(f"worst vs trafilatura, {corpus}/{split}: " + ", ".join(
                f"{pages[i][0].split('/', 1)[1][:14]}={scores['ours']['F1'][i]:.2f}/"
                f"{max(scores['traf-default']['F1'][i], scores['traf-precision']['F1'][i]):.2f}" for i in worst))

    print()
    from lxml import html

    from collection.readers.base import Pin, decode
    from readers import timed  # bench/readers.py: best of N CPU-second passes, alternating

    step = max(1, len(pages) // args.speed_pages)
    sample = [body for _, body, _, _ in pages[::step]][: args.speed_pages]
    pin = Pin("html.web_extract", "1.1.0", {"metadata": ["published_at", "author", "description", "canonical_url",
                                                          "language"]})
    reader, bare = timed((lambda body: decode(pin, body, "text/html", "https://example.com/a"), html.fromstring),
                         sample, args.repeat)
    print(f"Speed: {len(sample)} pages (every {step}th), best of {args.repeat}: html.web_extract "
          f"{len(sample) / reader:.1f} pages/CPU s, lxml.html.fromstring {len(sample) / bare:.1f} pages/CPU s, "
          f"ratio {reader / bare:.2f}x (target: within 3x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
