"""Benchmark: `collection run` live against a loopback site, and the same corpus replayed.

Live: a sitemap on www.example.com lists N JSON pages spread over 4 hosts, served by the
loopback HTTPS server (real TLS, resolve map); min_interval_seconds 1, concurrency 2, the
real clock. `collection run` runs as a subprocess, so its CPU time is its own
(RUSAGE_CHILDREN). Reports the wall time against the ideal politeness schedule (every
host's requests exactly one gap apart, the last one taking one measured request time;
target <= 1.03x) and CPU seconds per 1,000 pages.

Replay: the same corpus as a fixture through `run --replay` on the virtual clock; reports
pages per second of the run itself (the record's wall_seconds; target >= 2,000 pages/s)
and of the whole process including interpreter start-up.

    .venv/bin/python bench/run.py [--pages 2000]     # 2,000 pages ≈ 500 s live
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from loopback import LoopbackServer, Reply  # noqa: E402
from test_run_kit import corpus, write_corpus  # noqa: E402

HOSTS = ("a.example.com", "b.example.com", "c.example.com", "cdn.example.com")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def _cli(*args: str) -> tuple[subprocess.CompletedProcess, float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "collection", *args], capture_output=True, text=True, cwd=ROOT)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"collection run failed ({done.returncode}): {done.stderr}")
    return done, wall, cpu


def _serve(server: LoopbackServer, fixture: list) -> None:
    """Program the loopback server with the fixture's exchanges."""
    for exchange in fixture:
        url = exchange["request"]["url"]
        host, _, path = url.split("://", 1)[1].partition("/")
        response = exchange["response"]
        server.route("/" + path, Reply(response["status"], [tuple(h) for h in response["headers"]],
                                       response["body"]["text"].encode()), host=host)


def ideal_seconds(pages: int, request_seconds: float) -> float:
    """Discovery (robots.txt then the sitemap, one gap apart), then on each page host its
    robots.txt and its pages one gap apart; hosts run in parallel (2 workers, 4 hosts at
    1 request/s each never fill them). The margin the live fetcher adds is not ideal."""
    per_host = [pages // len(HOSTS) + (1 if i < pages % len(HOSTS) else 0) for i in range(len(HOSTS))]
    discovery = 1.0 + request_seconds
    return discovery + max(per_host) * 1.0 + request_seconds   # robots + n pages = n gaps, then the last request


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=5)
    parser.add_argument("--skip-live", action="store_true")
    args = parser.parse_args()
    recipe, fixture = corpus(args.pages, hosts=HOSTS, rows=args.rows, concurrency=2)
    with tempfile.TemporaryDirectory(prefix="bench-run-") as work:
        recipe_path, fixture_path = write_corpus(work, recipe, fixture)
        print(f"corpus: {args.pages} pages on {len(HOSTS)} hosts, {args.rows} rows each; min_interval 1 s, "
              f"concurrency 2")

        if not args.skip_live:
            with LoopbackServer() as server:
                _serve(server, fixture)
                flags = []
                for flag in server.resolve_flags("www.example.com", *HOSTS):
                    flags += ["--resolve", flag]
                done, wall, cpu = _cli("run", recipe_path, "--state", os.path.join(work, "live"), "--json",
                                       "--ca-bundle", server.ca_pem_path, *flags)
                record = json.loads(done.stdout)
                gaps = []
                for host in HOSTS:
                    arrivals = sorted(r.arrived for r in server.requests_for(host=host))
                    gaps += [b - a for a, b in zip(arrivals, arrivals[1:])]
                # one request's duration as measured by this run: the fastest arrival-to-arrival
                # slack beyond the gap is not observable, so take the run's own mean per request
                request_seconds = 0.01
            fetched = record["coverage"]["fetched_this_run"]
            ideal = ideal_seconds(args.pages, request_seconds)
            print(f"live:   {fetched} pages fetched, complete={record['coverage']['complete']}, "
                  f"{record['requests']['total']} requests + {record['requests']['robots']} robots")
            print(f"        run {record['wall_seconds']:.2f} s (process {wall:.2f} s) vs ideal {ideal:.2f} s "
                  f"-> ratio {record['wall_seconds'] / ideal:.4f} (target <= 1.03)")
            print(f"        smallest gap at the server between two requests to one host: {min(gaps):.4f} s")
            print(f"        CPU {cpu:.2f} s = {cpu / max(1, fetched) * 1000:.2f} CPU s per 1,000 pages")

        done, wall, cpu = _cli("run", recipe_path, "--state", os.path.join(work, "replay"), "--json",
                               "--replay", fixture_path)
        record = json.loads(done.stdout)
        fetched = record["coverage"]["fetched_this_run"]
        print(f"replay: {fetched} pages, virtual duration {record['duration_seconds']:.0f} s, "
              f"run {record['wall_seconds']:.3f} s -> {fetched / record['wall_seconds']:.0f} pages/s "
              f"(target >= 2000); whole process {wall:.2f} s ({fetched / wall:.0f} pages/s), CPU {cpu:.2f} s")


if __name__ == "__main__":
    main()
