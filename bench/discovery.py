"""Discovery benchmark: a 50,000-URL sitemap (two shapes), a 100-page JSON listing and
HTML indexes of 50,000 and 1,000,000 links.

Each row (the listing parser, the whole discovery pass — parser + resolution +
canonicalisation + origin checks + duplicates — and beside them the bare
`lxml.etree.fromstring` / `json.loads` of the same bytes) is measured in a fresh
subprocess, so one row's memory never shows in another's figure:
  time    best of --repeat calls (CPU time of the process: the machine is shared, and
          waiting for a core is not the code's cost);
  traced  peak Python allocations of one call (tracemalloc; blind to libxml2);
  rss     growth of the process's peak resident set over one call, after returning
          freed heap to the system and resetting the high-water mark (Linux), so it
          counts libxml2's trees as well as Python's objects.
--rounds rounds are run, interleaved, and medians printed; a ratio is taken within a
round (same bytes, adjacent runs) before its median. Targets: the sitemap parser within
2x the bare parse; peak memory at most 100 MiB for the sitemap and JSON rows; for every
listing kind, the whole discovery pass's peak at most 10x the bytes of the listing bodies
(the HTML index row: one 1,000,000-link page, the shape of a large archive page; its bare
baseline is lxml.html's whole-tree parse of the same bytes). The 1M-link rows are measured
once per round (--repeat does not apply: one call takes seconds).

    .venv/bin/python bench/discovery.py [--repeat N] [--rounds R]
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc

from lxml import etree
from lxml import html as lxml_html

from collection.discover.driver import DiscoveryConfig, ListingResponse, json_response, run_offline
from collection.discover.json_index import JsonListingSpec, parse_json_listing
from collection.discover.sitemap import parse_sitemap

HOST = "https://www.example.com"
NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def sitemap_bytes(n: int = 50_000) -> bytes:
    parts = [f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}">\n']
    for i in range(n):
        parts.append(f"  <url><loc>{HOST}/decisions/{2000 + i % 25}/{i}-council-decision/?lang=en&amp;v=2</loc>"
                     f"<lastmod>2024-{i % 12 + 1:02d}-{i % 28 + 1:02d}T10:00:00+00:00</lastmod>"
                     f"<changefreq>monthly</changefreq></url>\n")
    parts.append("</urlset>\n")
    return "".join(parts).encode()


def pretty_sitemap_bytes(n: int = 50_000) -> bytes:
    """The shape SEO plugins write: indented, each entry with an image extension element."""
    parts = [f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}" '
             f'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">\n']
    for i in range(n):
        parts.append(f"\t<url>\n\t\t<loc>{HOST}/decisions/{i}-council-decision/</loc>\n"
                     f"\t\t<lastmod>2024-{i % 12 + 1:02d}-{i % 28 + 1:02d}T10:00:00+00:00</lastmod>\n"
                     f"\t\t<image:image>\n\t\t\t<image:loc>{HOST}/img/{i}.jpg</image:loc>\n"
                     f"\t\t</image:image>\n\t</url>\n")
    parts.append("</urlset>\n")
    return "".join(parts).encode()


def html_index_bytes(n: int = 1_000_000) -> bytes:
    parts = ["<!doctype html><html><head><title>All decisions</title></head><body><main>\n"]
    parts.extend(f'<a href="/d/{i}">{i}</a>\n' for i in range(n))
    parts.append("</main></body></html>\n")
    return "".join(parts).encode()


def json_pages(pages: int = 100, per_page: int = 100) -> dict[str, ListingResponse]:
    base = f"{HOST}/wp-json/wp/v2/decisions?per_page={per_page}"
    responses = {}
    for n in range(1, pages + 1):
        url = f"{base}&page={n}"
        records = [{"id": (n - 1) * per_page + k, "date": "2024-01-01T00:00:00",
                    "modified": "2024-02-01T00:00:00", "slug": f"decision-{(n - 1) * per_page + k}",
                    "link": f"{HOST}/decisions/{(n - 1) * per_page + k}/",
                    "title": {"rendered": "Council decision on the matter of item %d" % k},
                    "excerpt": {"rendered": "<p>" + "Lorem ipsum dolor sit amet. " * 8 + "</p>"}}
                   for k in range(per_page)]
        responses[url] = json_response(url, records)
    url = f"{base}&page={pages + 1}"
    responses[url] = json_response(url, {"code": "rest_post_invalid_page_number", "data": {"status": 400}}, status=400)
    return responses


def _rows() -> list[tuple[str, object, int | None]]:
    """(name, the call measured, bytes of listing body it reads or None for a parse-only row)."""
    sitemap = sitemap_bytes()
    pretty = pretty_sitemap_bytes()
    sitemap_url = f"{HOST}/sitemap.xml"
    sitemap_config = DiscoveryConfig.from_mapping({"kind": "sitemap", "url": sitemap_url})
    sitemap_response = {sitemap_url: ListingResponse(sitemap_url, 200, (("Content-Type", "application/xml"),), sitemap)}

    pages = json_pages()
    json_config = DiscoveryConfig.from_mapping({
        "kind": "json_api", "url": f"{HOST}/wp-json/wp/v2/decisions?per_page=100",
        "pagination": {"kind": "page_parameter", "parameter": "page"}, "records": {"pointer": ""},
        "link": {"pointer": "/link"}, "identity": {"pointer": "/id"}, "revision": {"pointer": "/modified"},
        "max_requests": 128})
    bodies = [r.body for r in pages.values() if r.status == 200]
    spec = JsonListingSpec("", "/link", "/id", "/modified")
    html_body = html_index_bytes()
    html_url = f"{HOST}/decisions/all"
    html_config = DiscoveryConfig.from_mapping({"kind": "html_index", "url": html_url,
                                                "records": {"selector": "main a"}})
    html_response = {html_url: ListingResponse(html_url, 200, (("Content-Type", "text/html; charset=utf-8"),),
                                               html_body)}
    json_bytes = sum(len(b) for b in bodies)
    html_50k = html_index_bytes(50_000)
    html_50k_response = {html_url: ListingResponse(html_url, 200, (("Content-Type", "text/html; charset=utf-8"),),
                                                   html_50k)}
    return [
        ("sitemap 50k: lxml.etree.fromstring (bare)", lambda: etree.fromstring(sitemap), None),
        ("sitemap 50k: parse_sitemap (iterative)", lambda: parse_sitemap(sitemap), None),
        ("sitemap 50k: full discovery pass", lambda: run_offline(sitemap_config, [HOST], sitemap_response),
         len(sitemap)),
        ("indented + image:image: fromstring (bare)", lambda: etree.fromstring(pretty), None),
        ("indented + image:image: parse_sitemap", lambda: parse_sitemap(pretty), None),
        ("json 100 pages: json.loads (bare)", lambda: [json.loads(b) for b in bodies], None),
        ("json 100 pages: parse_json_listing", lambda: [parse_json_listing(b, spec) for b in bodies], None),
        ("json 100 pages: full discovery pass", lambda: run_offline(json_config, [HOST], pages), json_bytes),
        ("html 50k links: lxml.html parse (bare)", lambda: lxml_html.document_fromstring(html_50k), None),
        ("html 50k links: full discovery pass", lambda: run_offline(html_config, [HOST], html_50k_response),
         len(html_50k)),
        ("html 1M links: lxml.html parse (bare)", lambda: lxml_html.document_fromstring(html_body), None),
        ("html 1M links: full discovery pass", lambda: run_offline(html_config, [HOST], html_response),
         len(html_body)),
    ]


def _trim_heap() -> None:
    """Hand freed heap back to the system, so the RSS baseline is what is live."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _reset_peak_rss() -> bool:
    """Reset the kernel's resident high-water mark (Linux >= 4.0); False where it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _rss_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise LookupError(field)


def measure(fn, repeat: int) -> dict[str, float]:
    """Best CPU seconds of `repeat` calls, then one traced call and one RSS-watched call."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.process_time()
        result = fn()
        best = min(best, time.process_time() - start)
        del result
    gc.collect()
    tracemalloc.start()
    result = fn()
    _, traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    gc.collect()
    _trim_heap()
    rss = float("nan")
    if _reset_peak_rss():
        base = _rss_kib("VmRSS")
        result = fn()
        rss = (_rss_kib("VmHWM") - base) / 1024
        del result
    return {"seconds": best, "traced": traced / 2**20, "rss": rss}


def _one(index: int, repeat: int) -> None:
    name, fn, _ = _rows()[index]
    print(json.dumps(measure(fn, 1 if name.startswith("html 1M") else repeat)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one is not None:
        _one(args.one, args.repeat)
        return

    rows = _rows()
    names = [name for name, _, _ in rows]
    body_bytes = [size for _, _, size in rows]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")])))
    rounds: list[list[dict[str, float]]] = []
    for _ in range(args.rounds):
        rounds.append([json.loads(subprocess.run(
            [sys.executable, __file__, "--one", str(i), "--repeat", str(args.repeat)],
            check=True, capture_output=True, text=True, env=env).stdout) for i in range(len(names))])

    def median(i: int, key: str) -> float:
        return statistics.median(r[i][key] for r in rounds)

    def ratio(i: int, j: int) -> float:
        return statistics.median(r[i]["seconds"] / r[j]["seconds"] for r in rounds)

    print(f"best of {args.repeat} CPU-time calls per row, each row in a fresh process; "
          f"medians of {args.rounds} rounds")
    print(f"  {'':<45} {'time':>9}   {'traced':>8}   {'rss':>8}")
    for i, name in enumerate(names):
        print(f"  {name:<45} {median(i, 'seconds') * 1000:6.1f} ms   {median(i, 'traced'):5.1f} MiB"
              f"   {median(i, 'rss'):5.1f} MiB")
    print(f"ratio sitemap parser / bare parse:  {ratio(1, 0):5.2f}x  (target <= 2.00x)")
    print(f"ratio sitemap discovery / bare:     {ratio(2, 0):5.2f}x")
    print(f"ratio indented sitemap / bare:      {ratio(4, 3):5.2f}x")
    print(f"ratio json parser / bare loads:     {ratio(6, 5):5.2f}x")
    print(f"ratio json discovery / bare loads:  {ratio(7, 5):5.2f}x")
    print(f"ratio html 50k discovery / bare:    {ratio(9, 8):5.2f}x")
    print(f"ratio html 1M discovery / bare:     {ratio(11, 10):5.2f}x")
    ours = [i for i, name in enumerate(names) if "(bare)" not in name and not name.startswith("html ")]
    worst = max(max(median(i, "traced"), median(i, "rss")) for i in ours)
    print(f"worst peak of the sitemap and json rows (traced or rss growth): {worst:.1f} MiB  (target <= 100 MiB; "
          f"the bare parses are baselines)")
    print("peak memory of a whole discovery pass / bytes of the listing bodies it read (target <= 10x):")
    for i, size in enumerate(body_bytes):
        if size:
            peak = max(median(i, "traced"), median(i, "rss")) * 2**20
            print(f"  {names[i]:<45} {size / 2**20:6.1f} MiB of listings   {peak / size:5.2f}x")
    html_bare = max(median(10, "traced"), median(10, "rss")) * 2**20
    print(f"  (baseline: lxml.html's whole tree of the 1M-link page alone is {html_bare / body_bytes[11]:5.2f}x)")


if __name__ == "__main__":
    main()
