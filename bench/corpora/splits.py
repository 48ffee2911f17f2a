"""The declared tuning and evaluation splits of every corpus (bench/corpora/SPLITS.md says why each).

`splits.json` beside this file is the record: corpus -> {"tune": [ids], "eval": [ids]}, written once by
`python bench/corpora/splits.py --write` from the cache (bench/corpora/prepare.py) and seomoz/dragnet_data's
own lists, then committed before any engine change. The bench reads only the committed file, so a page
cannot move between splits without a commit that shows it.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SPLITS = HERE / "splits.json"
# Corpora with no split of their own: a page is in the tuning third when the first 8 hex digits of
# sha256("<corpus>:<id>") are 0 modulo 3, else in the evaluation two thirds.
HASHED = ("l3s-gn1", "readability", "cleanportaleval")


def hashed_tune(corpus: str, page_id: str) -> bool:
    return int(hashlib.sha256(f"{corpus}:{page_id}".encode()).hexdigest()[:8], 16) % 3 == 0


def load() -> dict[str, dict[str, list[str]]]:
    return json.loads(SPLITS.read_text(encoding="utf-8"))


def _ids(cache: Path, corpus: str) -> list[str]:
    return sorted(path.stem for path in (cache / corpus).glob("*.txt"))


def write(cache: Path, dragnet_git: Path) -> dict:
    def listed(name: str) -> set[str]:
        text = subprocess.run(["git", "--git-dir", str(dragnet_git), "show", f"HEAD:{name}"], check=True,
                              capture_output=True, text=True).stdout
        return {line.strip() for line in text.splitlines() if line.strip()}

    dragnet = set(_ids(cache, "dragnet"))
    splits = {
        # CleanEval's own split: the development set for tuning, the final (competition) set for evaluation.
        "cleaneval": {"tune": [f"cleaneval-dev/{i}" for i in _ids(cache, "cleaneval-dev")],
                      "eval": [f"cleaneval-final/{i}" for i in _ids(cache, "cleaneval-final")]},
        # Dragnet's own training.txt / test.txt.
        "dragnet": {"tune": sorted(f"dragnet/{i}" for i in listed("training.txt") & dragnet),
                    "eval": sorted(f"dragnet/{i}" for i in listed("test.txt") & dragnet)},
    }
    for corpus in HASHED:
        ids = _ids(cache, corpus)
        splits[corpus] = {"tune": [f"{corpus}/{i}" for i in ids if hashed_tune(corpus, i)],
                          "eval": [f"{corpus}/{i}" for i in ids if not hashed_tune(corpus, i)]}
    # The article-extraction pages in ../shared/data were tuned on before this issue: they are a
    # tuning corpus (and a floor, F1 >= 0.975), never evidence of generalisation.
    article = HERE.parents[1] / "bench" / "extraction.py"
    sys.path.insert(0, str(article.parent))
    from extraction import DEFAULT_DATA

    truth = json.loads((DEFAULT_DATA / "ground-truth.json").read_text(encoding="utf-8"))
    splits["scrapinghub"] = {"tune": sorted(f"scrapinghub/{i}" for i in truth
                                            if (DEFAULT_DATA / "html" / f"{i}.html.gz").exists()),
                             "eval": []}
    SPLITS.write_text(json.dumps(splits, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return splits


if __name__ == "__main__":
    if sys.argv[1:2] != ["--write"]:
        raise SystemExit("usage: splits.py --write [CACHE] [DRAGNET_GIT_DIR]")
    sys.path.insert(0, str(HERE))
    from prepare import DEFAULT_CACHE

    cache = Path(sys.argv[2]) if len(sys.argv) > 2 else DEFAULT_CACHE
    git = Path(sys.argv[3]) if len(sys.argv) > 3 else Path("/work/.mirror/seomoz+dragnet_data/repo")
    for corpus, split in sorted(write(cache, git).items()):
        print(f"{corpus:<16} tune {len(split['tune']):>5}  eval {len(split['eval']):>5}")
