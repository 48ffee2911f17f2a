"""Benchmark: the floor at the server, collection beside Scrapy, on one loopback site in one run.

One loopback HTTPS site of 3 host names, 20 JSON pages each, 50 ms to answer; arrivals
stamped with the kernel's receive time (SO_TIMESTAMPNS). Crawled twice, one after the other,
each in its own process:

- Scrapy (the `bench` extra: pip install -e '.[bench]'): DOWNLOAD_DELAY 1 with
  RANDOMIZE_DOWNLOAD_DELAY off (a fixed 1 s per host, the setting closest to our floor),
  CONCURRENT_REQUESTS_PER_DOMAIN 2, CONCURRENT_REQUESTS 6, ROBOTSTXT_OBEY on, AUTOTHROTTLE
  off; each page parsed with json.loads in the callback. The host names resolve to 127.0.0.1
  through a DNS_RESOLVER of this script; Scrapy's default TLS context does not verify
  certificates (it still sends SNI);
- collection: `collection run` of one source over the same 3 origins, min_interval_seconds 1,
  pages.concurrency 6 (so at most 2 per origin), json.tabular decoding each page.

Printed for each: requests, server-side gaps, gaps under 1 s, the smallest gap, TLS connections
per host, and wall time (process start to exit, and first to last arrival), beside the ideal
schedule for 21 requests per host at 1 s.

    .venv/bin/python bench/scrapy_floor.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "tests"))

from dataset_kit import JSON_HEADERS, page_body, source_doc  # noqa: E402
from loopback import LoopbackServer, Reply  # noqa: E402

HOSTS = ("a.example.com", "b.example.com", "c.example.com")
PAGES = 20
LATENCY = 0.05

SPIDER = r'''
import json, sys
from twisted.internet import defer
from scrapy import Request, Spider
from scrapy.crawler import CrawlerProcess
from scrapy.resolver import CachingThreadedResolver

PORT, HOSTS, PAGES = int(sys.argv[1]), sys.argv[2].split(","), int(sys.argv[3])


class LoopbackResolver(CachingThreadedResolver):
    """Every host name of the loopback site is 127.0.0.1 (the --resolve of collection)."""

    def getHostByName(self, name, timeout=()):
        if name in HOSTS:
            return defer.succeed("127.0.0.1")
        return super().getHostByName(name, timeout)


class Pages(Spider):
    name = "pages"

    async def start(self):
        for n in range(PAGES):
            for host in HOSTS:
                yield Request(f"https://{host}:{PORT}/p/{n}", callback=self.parse)

    def parse(self, response):
        for row in json.loads(response.body):
            yield {"title": row.get("title"), "body": row.get("body")}


process = CrawlerProcess(settings={
    "DOWNLOAD_DELAY": 1.0, "RANDOMIZE_DOWNLOAD_DELAY": False, "CONCURRENT_REQUESTS": 6,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 2, "ROBOTSTXT_OBEY": True, "AUTOTHROTTLE_ENABLED": False,
    "USER_AGENT": "ScrapyBench (+https://collection.invalid/crawler)", "LOG_LEVEL": "ERROR",
    "DNS_RESOLVER": "__main__.LoopbackResolver", "TELNETCONSOLE_ENABLED": False,
    "RETRY_ENABLED": False, "COOKIES_ENABLED": False,
})
process.crawl(Pages)
process.start()
'''


def _figures(server, hosts, wall: float) -> dict:
    gaps, per_host_conns, firsts, lasts, requests = [], {}, [], [], 0
    for host in hosts:
        seen = server.requests_for(host=host)
        requests += len(seen)
        stamps = sorted(r.kernel_wall for r in seen if r.kernel_wall is not None)
        gaps.extend(b - a for a, b in zip(stamps, stamps[1:]))
        per_host_conns[host] = len({r.connection for r in seen})
        firsts.append(stamps[0])
        lasts.append(stamps[-1])
    return {"requests": requests, "gaps": len(gaps), "under": sum(1 for g in gaps if g < 1.0),
            "smallest": min(gaps), "connections": per_host_conns, "wall": wall, "span": max(lasts) - min(firsts)}


def _serve(server) -> None:
    for host in HOSTS:
        server.route("/robots.txt", Reply(404, (("Content-Type", "text/plain"),), b""), host=host)
        server.route("*", Reply(200, JSON_HEADERS, page_body("page"), delay=LATENCY), host=host)


def scrapy_run(server, work: str) -> dict:
    script = os.path.join(work, "spider.py")
    with open(script, "w", encoding="utf-8") as handle:
        handle.write(SPIDER)
    started = time.monotonic()
    done = subprocess.run([sys.executable, script, str(server.port), ",".join(HOSTS), str(PAGES)],
                          cwd=work, capture_output=True, text=True)
    wall = time.monotonic() - started
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
    return _figures(server, HOSTS, wall) | {"exit": done.returncode}


def collection_run(server, work: str) -> dict:
    urls = [f"https://{host}/p/{n}" for n in range(PAGES) for host in HOSTS]
    recipe = os.path.join(work, "side.json")
    with open(recipe, "w", encoding="utf-8") as handle:
        json.dump(source_doc("side", urls, concurrency=6, max_fetches=len(urls)), handle)
    args = [sys.executable, "-m", "collection", "run", recipe, "--state", os.path.join(work, "state"),
            "--ca-bundle", server.ca_pem_path, "--gate", f"local:{os.path.join(work, 'gate')}", "--json"]
    for flag in server.resolve_flags(*HOSTS):
        args += ["--resolve", flag]
    started = time.monotonic()
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - started
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
    return _figures(server, HOSTS, wall) | {"exit": done.returncode}


def main() -> int:
    try:
        import scrapy
    except ImportError:
        print("Scrapy is not installed: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    work = tempfile.mkdtemp(prefix="bench-scrapy-")
    try:
        results = {}
        for name, crawl in (("Scrapy " + scrapy.__version__, scrapy_run), ("collection", collection_run)):
            with LoopbackServer(names=HOSTS) as server:
                _serve(server)
                results[name] = crawl(server, work)
        ideal = PAGES * 1.0           # 21 requests per host (robots.txt + 20 pages): 20 gaps of 1 s
        print(f"one loopback site: {len(HOSTS)} hosts x {PAGES} pages (+ robots.txt), {LATENCY * 1000:.0f} ms to "
              f"answer, 1 s per host; gaps from kernel receive stamps; ideal first-to-last {ideal:.0f} s")
        print(f"{'':14} {'exit':>4} {'requests':>8} {'gaps':>5} {'< 1 s':>6} {'smallest':>9} "
              f"{'connections per host':>22} {'wall':>8} {'first-last':>10}")
        for name, r in results.items():
            conns = "/".join(str(r["connections"][h]) for h in HOSTS)
            print(f"{name:14} {r['exit']:>4} {r['requests']:>8} {r['gaps']:>5} {r['under']:>6} "
                  f"{r['smallest']:>8.4f}s {conns:>22} {r['wall']:>7.2f}s {r['span']:>9.2f}s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
