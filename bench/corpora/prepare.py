"""Fill the corpora cache that bench/extraction_corpora.py reads: one directory per corpus, holding
`<id>.html` (the page's bytes as published) and `<id>.txt` (its ground-truth main text, UTF-8), plus
`urls.json` where the corpus names each page's address.

Nothing here is committed to this repository (the licences below do not all allow it): the pages are read
from git copies of the public repositories that publish them, and written under the cache directory
(`$COLLECTION_CORPORA`, default `~/.cache/collection/corpora`). On a fresh machine:

    git clone --depth 1 https://github.com/j-szulc/html-cleaning-dataset-merged
    git clone --depth 1 https://github.com/seomoz/dragnet_data
    git clone --depth 1 https://github.com/geodrome/page-signal
    git clone --depth 1 https://github.com/mozilla/readability
    .venv/bin/python bench/corpora/prepare.py --repos .   # the directory holding the four clones

`--repos DIR` looks for `DIR/<name>` (a clone) and `DIR/<owner>+<name>/repo` (a bare mirror, the layout
of /work/.mirror here). Each source is read at its HEAD with `git archive`, so a bare mirror works too.

Corpora, sources and licences (bench/corpora/SOURCES.md has the detail):
- cleaneval (dev and final sets; Baroni et al., CleanEval 2007; research use, no licence published):
  j-szulc/html-cleaning-dataset-merged `cleaneval-dev/`, `cleaneval-final/`.
- cleanportaleval (ppke-nlpg/CleanPortalEval, Hungarian and English news portals): same repository.
- dragnet (Peters & Lecocq 2013; data AGPLv3): pages from j-szulc/html-cleaning-dataset-merged
  `dragnet_data/input/` (seomoz/dragnet_data keeps its HTML tarball in Git LFS), truth from
  seomoz/dragnet_data `dragnet_Corrected.tar.gz`, the article part (before its COMMENTS marker).
- l3s-gn1 (Kohlschütter et al., WSDM 2010, the Google News set page-signal evaluates on; research use
  only): geodrome/page-signal `L3S-GN1-*/original` and `annotated`; truth is the text of the blocks
  labelled headline, full text or supplemental (x-nc-sel1..3), leaf spans only, as WCEB reads it.
- readability (mozilla/readability test pages, Apache-2.0): `test/test-pages/*/source.html` and the body
  text of `expected.html`.
The truth conversions follow the Web Content Extraction Benchmark's dataset readers
(chatnoir-eu/web-content-extraction-benchmark, src/extraction_benchmark/dataset_readers.py, Apache-2.0),
with lxml in place of resiliparse.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Iterator

from lxml import html as lxml_html

DEFAULT_CACHE = Path(os.environ.get("COLLECTION_CORPORA") or Path.home() / ".cache" / "collection" / "corpora")
SOURCES = {
    "merged": "j-szulc/html-cleaning-dataset-merged",
    "dragnet": "seomoz/dragnet_data",
    "l3s": "geodrome/page-signal",
    "readability": "mozilla/readability",
}
DRAGNET_COMMENTS = "!@#$%^&*()  COMMENTS"
_URL_LINE = re.compile(r"^\s*URL:\s*(\S+)")
_TEXT_WRAPPER = re.compile(rb"(?:^\s*<text [^>]*>\s*|\s*</text>\s*$)", re.M)
_INDENT = re.compile(r"\n[ \t]+")


def git_dir(repos: Path, repo: str) -> Path:
    owner, name = repo.split("/")
    for candidate in (repos / f"{owner}+{name}" / "repo", repos / name / ".git", repos / name):
        if (candidate / "HEAD").is_file():
            return candidate
    raise SystemExit(f"{repo}: no git copy under {repos} (tried {owner}+{name}/repo, {name}/.git); "
                     f"clone https://github.com/{repo} there")


def members(git: Path, *paths: str) -> Iterator[tuple[str, bytes]]:
    """(path, bytes) of every file under `paths` at HEAD."""
    archive = subprocess.run(["git", "--git-dir", str(git), "archive", "--format=tar", "HEAD", *paths],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar:
            if member.isfile():
                yield member.name, tar.extractfile(member).read()


def body_text(markup: bytes | str) -> str:
    """The text of a page's body, one text node after another (the WCEB readers' `body.text`)."""
    if isinstance(markup, bytes):
        markup = decode(markup)  # the gold files are UTF-8; left to itself lxml guesses Latin-1
    root = lxml_html.fromstring(markup if markup.strip() else "<p></p>")
    body = root.find(".//body")
    text = " ".join((body if body is not None else root).itertext())
    return _INDENT.sub("\n", text).strip()


def decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def cleaneval_like(git: Path, folder: str) -> Iterator[tuple[str, bytes, str, str]]:
    pages, truths = {}, {}
    for path, data in members(git, f"{folder}/input", f"{folder}/GoldStandard"):
        name = Path(path).name
        if name.startswith("."):
            continue
        if "/input/" in path:
            pages[Path(name).stem] = _TEXT_WRAPPER.sub(b"", data)
        else:
            truths[Path(name).stem] = decode(data)
    for page_id in sorted(pages.keys() & truths.keys()):
        truth = truths[page_id]
        match = _URL_LINE.match(truth)
        truth = _URL_LINE.sub("", truth, count=1)
        # The gold files mark blocks with <p>, <h>, <l>: parsed as HTML, only their text remains.
        yield page_id, pages[page_id], body_text("<html><body>" + truth + "</body></html>"), match.group(1) if match else ""


def dragnet(merged: Path, seomoz: Path) -> Iterator[tuple[str, bytes, str, str]]:
    pages = {Path(path).stem: data for path, data in members(merged, "dragnet_data/input")
             if not Path(path).name.startswith(".")}
    (tarball,) = [data for _, data in members(seomoz, "dragnet_Corrected.tar.gz")]
    with tarfile.open(fileobj=io.BytesIO(tarball)) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if not member.isfile():
                continue
            page_id = Path(member.name).name.removesuffix(".html.corrected.txt")
            if page_id in pages:
                truth = decode(tar.extractfile(member).read()).split(DRAGNET_COMMENTS)[0]
                yield page_id, pages[page_id], truth.strip(), ""


_SELECTED = ("x-nc-sel1", "x-nc-sel2", "x-nc-sel3")
_BREAKING = frozenset("address article aside blockquote canvas dd div dl dt fieldset figcaption figure footer form "
                      "h1 h2 h3 h4 h5 h6 header hr li main nav noscript ol p pre section table tfoot ul video".split())


def l3s_truth(annotated: bytes) -> str:
    root = lxml_html.fromstring(annotated)
    parts = []
    for span in root.iter("span"):
        classes = (span.get("class") or "").split()
        if not any(name in classes for name in _SELECTED) or len(span) or span.text is None:
            continue  # leaf spans only, so nested labels are not counted twice
        parent = span.getparent()
        if parent is not None and parent.tag in _BREAKING:
            parts.append("\n")
        parts.append(span.text.strip() + " ")
    return "".join(parts).strip()


def l3s(git: Path) -> Iterator[tuple[str, bytes, str, str]]:
    folder = "L3S-GN1-20100130203947-00001"
    originals, annotated, urls = {}, {}, {}
    for path, data in members(git, f"{folder}/original", f"{folder}/annotated", f"{folder}/url-mapping.txt"):
        if path.endswith("url-mapping.txt"):
            for line in decode(data).splitlines():
                if "\t" in line:
                    uuid, url = line.split("\t", 1)
                    urls[uuid.strip("<>").removeprefix("urn:uuid:")] = url.strip()
        elif "/original/" in path:
            originals[Path(path).stem] = data
        elif "/annotated/" in path:
            annotated[Path(path).stem] = data
    for page_id in sorted(originals.keys() & annotated.keys()):
        yield page_id, originals[page_id], l3s_truth(annotated[page_id]), urls.get(page_id, "")


def readability(git: Path) -> Iterator[tuple[str, bytes, str, str]]:
    files: dict[str, dict[str, bytes]] = {}
    for path, data in members(git, "test/test-pages"):
        parts = Path(path).parts
        if len(parts) == 4 and parts[3] in ("source.html", "expected.html"):
            files.setdefault(parts[2], {})[parts[3]] = data
    for case in sorted(files):
        if len(files[case]) == 2:
            yield case, files[case]["source.html"], body_text(files[case]["expected.html"]), "http://fakehost/test/page.html"


def write(cache: Path, corpus: str, pages: Iterator[tuple[str, bytes, str, str]]) -> int:
    folder = cache / corpus
    folder.mkdir(parents=True, exist_ok=True)
    urls = {}
    count = 0
    for page_id, page, truth, url in pages:
        (folder / f"{page_id}.html").write_bytes(page)
        (folder / f"{page_id}.txt").write_text(truth, encoding="utf-8")
        urls[page_id] = url
        count += 1
    (folder / "urls.json").write_text(json.dumps(urls, indent=0, sort_keys=True), encoding="utf-8")
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=Path, default=Path("/work/.mirror"),
                        help="directory holding the source repositories (clones or owner+name/repo mirrors)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    args = parser.parse_args(argv)
    merged = git_dir(args.repos, SOURCES["merged"])
    jobs = {
        "cleaneval-dev": lambda: cleaneval_like(merged, "cleaneval-dev"),
        "cleaneval-final": lambda: cleaneval_like(merged, "cleaneval-final"),
        "cleanportaleval": lambda: cleaneval_like(merged, "CleanPortalEval-master"),
        "dragnet": lambda: dragnet(merged, git_dir(args.repos, SOURCES["dragnet"])),
        "l3s-gn1": lambda: l3s(git_dir(args.repos, SOURCES["l3s"])),
        "readability": lambda: readability(git_dir(args.repos, SOURCES["readability"])),
    }
    for corpus, job in jobs.items():
        print(f"{corpus}: {write(args.cache, corpus, job())} pages -> {args.cache / corpus}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
