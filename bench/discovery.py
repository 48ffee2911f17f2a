"""Discovery benchmark: a 50,000-URL sitemap and a 100-page JSON listing.

Prints time (best of N) and peak traced memory for the listing parser, for the whole
discovery pass (parser + resolution + canonicalisation + origin checks + duplicates), and
beside them the bare `lxml.etree.fromstring` / `json.loads` of the same bytes in the same
run. Targets: the sitemap parser within 2x the bare parse; peak memory at most 100 MiB.

    .venv/bin/python bench/discovery.py [--repeat N]
"""

from __future__ import annotations

import argparse
import gc
import resource
import json
import time
import tracemalloc

from lxml import etree

from collection.discovery import DiscoveryConfig, ListingResponse, json_response, run_offline
from collection.listing_json import JsonListingSpec, parse_json_listing
from collection.listing_sitemap import parse_sitemap

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


def measure(fn, repeat: int) -> tuple[float, float]:
    """(best seconds, peak MiB); peak is measured in a separate traced run."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
        del result
    gc.collect()
    tracemalloc.start()
    result = fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    return best, peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    repeat = parser.parse_args().repeat

    sitemap = sitemap_bytes()
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

    rows = [
        ("sitemap 50k: lxml.etree.fromstring (bare)", lambda: etree.fromstring(sitemap)),
        ("sitemap 50k: parse_sitemap (iterative)", lambda: parse_sitemap(sitemap)),
        ("sitemap 50k: full discovery pass", lambda: run_offline(sitemap_config, [HOST], sitemap_response)),
        ("json 100 pages: json.loads (bare)", lambda: [json.loads(b) for b in bodies]),
        ("json 100 pages: parse_json_listing", lambda: [parse_json_listing(b, spec) for b in bodies]),
        ("json 100 pages: full discovery pass", lambda: run_offline(json_config, [HOST], pages)),
    ]
    results = {}
    print(f"sitemap body {len(sitemap) / 2**20:.1f} MiB; json bodies {sum(map(len, bodies)) / 2**20:.1f} MiB "
          f"in {len(bodies)} pages; best of {repeat}")
    for name, fn in rows:
        seconds, peak = measure(fn, repeat)
        results[name] = (seconds, peak)
        print(f"  {name:<45} {seconds * 1000:8.1f} ms   peak {peak:7.1f} MiB")
    s_bare, s_parse, s_full = (results[name][0] for name, _ in rows[:3])
    j_bare, j_parse, j_full = (results[name][0] for name, _ in rows[3:])
    print(f"ratio sitemap parser / bare parse:  {s_parse / s_bare:5.2f}x  (target <= 2.00x)")
    print(f"ratio sitemap discovery / bare:     {s_full / s_bare:5.2f}x")
    print(f"ratio json parser / bare loads:     {j_parse / j_bare:5.2f}x")
    print(f"ratio json discovery / bare loads:  {j_full / j_bare:5.2f}x")
    worst = max(peak for _, peak in results.values())
    print(f"peak traced Python memory (worst row): {worst:.1f} MiB  (target <= 100 MiB)")
    # tracemalloc does not see libxml2's own allocations; the process's high-water mark
    # (everything above, bare parses included, plus the interpreter) bounds them.
    print(f"process max RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
