"""Benchmark: the politeness floor at the origin over >= 10,000 requests, with decoding running.

For each concurrency asked for (default 6 and 25), one real `collection run` of a dataset
against a loopback HTTPS site of many host names (each its own origin), every page a JSON
document decoded by the json.tabular Reader while other requests are written, so decoding
threads compete with the ones writing requests (FETCH-16, FETCH-18, FETCH-19, D-09, D-10):

- concurrency 6: 6 sources x 8 origins (a source lists at most 8, REG-20), pages.concurrency 1
  each, so at most 6 fetches in flight in the process;
- concurrency 25: 13 sources x 8 origins, pages.concurrency 2 each (26, held to the 25-fetch
  cap of a run).

Every request's arrival is the kernel's receive timestamp at the server (SO_TIMESTAMPNS) and
gaps are taken between those raw stamps. Printed per run: requests, gaps, gaps under 1 s, the
smallest gap (and the smallest per origin: lowest, median), connections opened per origin,
peak connections open at once per origin, peak requests in flight per origin, and the
origins' time from first to last arrival against the ideal schedule ((requests - 1) x (1 s +
arrival margin)) computed in the same run.

Baseline measured in the same run: a "metronome" client in its own process writes one
request every 1.000 s on one open connection to its own origin, with the start stamped
before the write and the next start counted from that stamp (what a scheduler that stamps a
slot and then writes does). Its gaps at the server, under the same load, show what a start
taken before the write loses.

`--trace` runs the client through bench/floor_trace.py and prints, from each request's
client-side instants set beside its kernel arrival, where the time between stamping a start
and the origin receiving the bytes goes.

    .venv/bin/python bench/floor.py [--requests 10000] [--concurrency 6 25] [--gate local|none|redis] [--trace]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "tests"))

import loopback  # noqa: E402
from dataset_kit import dataset_doc, pages, source_doc  # noqa: E402
from loopback import LoopbackServer, PeakInFlight, Reply  # noqa: E402

from collection.fetch.fetcher import ARRIVAL_MARGIN_SECONDS  # noqa: E402

PER_SOURCE_ORIGINS = 8          # REG-20
LATENCY = 0.10                  # the origin's time to answer, so fetches overlap
ROWS = 20                       # rows per page the Reader decodes
METRONOME_HOST = "metronome.example.com"
JSON = (("Content-Type", "application/json"),)

# (sources, pages.concurrency per source) for a run-wide concurrency
LAYOUTS = {6: (6, 1), 25: (13, 2)}


def layout(concurrency: int) -> tuple[int, int]:
    if concurrency in LAYOUTS:
        return LAYOUTS[concurrency]
    per = 1 if concurrency <= 8 else 2
    return math.ceil(concurrency / per), per


def page_body(target: str) -> bytes:
    return json.dumps([{"title": f"{target} #{n}", "body": f"row {n} of {target}: " + "lorem ipsum " * 12}
                       for n in range(ROWS)]).encode()


def _metronome(server, until: float) -> subprocess.Popen:
    script = ("import http.client, socket, ssl, sys, time\n"
              "port, ca, until = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])\n"
              "ctx = ssl.create_default_context(cafile=ca)\n"
              f"conn = http.client.HTTPSConnection({METRONOME_HOST!r}, port, context=ctx)\n"
              "conn.sock = ctx.wrap_socket(socket.create_connection(('127.0.0.1', port)), "
              f"server_hostname={METRONOME_HOST!r})\n"
              "start, n = time.monotonic(), 0\n"
              "while time.time() < until:\n"
              "    time.sleep(max(0.0, start + n - time.monotonic()))   # the slot: stamped, then written\n"
              "    conn.request('GET', f'/tick/{n}')\n"
              "    conn.getresponse().read()\n"
              "    n += 1\n")
    return subprocess.Popen([sys.executable, "-c", script, str(server.port), server.ca_pem_path, str(until)])


def _gaps(records) -> dict[str, list[float]]:
    by_host = defaultdict(list)
    for rec in records:
        by_host[rec.host].append(rec.kernel_wall if rec.kernel_wall is not None else None)
    out = {}
    for host, stamps in by_host.items():
        stamps = sorted(s for s in stamps if s is not None)
        out[host] = [b - a for a, b in zip(stamps, stamps[1:])]
    return out


def _peak_open(connections) -> dict[str, int]:
    events = defaultdict(list)
    end = time.monotonic()
    for c in connections:
        events[c.sni].append((c.opened, 1))
        events[c.sni].append((c.closed if c.closed is not None else end, -1))
    peak = {}
    for host, items in events.items():
        now = best = 0
        for _, step in sorted(items, key=lambda e: (e[0], e[1])):
            now += step
            best = max(best, now)
        peak[host] = best
    return peak


def _quantiles(values: list[float]) -> str:
    if not values:
        return "n/a"
    ordered = sorted(values)

    def q(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p * len(ordered)))]
    return (f"median {statistics.median(ordered) * 1000:.2f} ms, p99 {q(0.99) * 1000:.2f} ms, "
            f"p99.9 {q(0.999) * 1000:.2f} ms, max {ordered[-1] * 1000:.2f} ms")


def run(concurrency: int, requests: int, gate: str, trace: bool, work: str, redis_url: str | None) -> dict:
    sources, per_source = layout(concurrency)
    origins = [f"o{n:03d}.example.com" for n in range(sources * PER_SOURCE_ORIGINS)]
    per_origin = math.ceil(requests / len(origins)) - 1      # + its robots.txt
    origin = PeakInFlight(lambda rec: Reply(200, JSON, page_body(rec.target)), LATENCY)
    converted: dict[float, float] = {}
    if trace:
        # the kernel stamp as the loopback server converted it before (a monotonic/realtime
        # pair read after the peek, which a thread switch may split), beside the raw stamp
        kernel_arrival = loopback._kernel_arrival

        def old_conversion(peek):
            stamped = kernel_arrival(peek)
            if stamped is not None:
                mono, wall = time.monotonic(), time.time()
                converted[stamped[1]] = mono - (wall - stamped[1])
            return stamped
        loopback._kernel_arrival = old_conversion
    with LoopbackServer(names=tuple(origins) + (METRONOME_HOST,)) as server:
        for host in origins:
            server.route("/robots.txt", Reply(404, (("Content-Type", "text/plain"),), b""), host=host)
        server.route("*", Reply(handler=origin))
        server.route("*", Reply(200, (("Content-Type", "text/plain"),), b"tick"), host=METRONOME_HOST)
        docs = []
        for n in range(sources):
            urls = [u for host in origins[n * PER_SOURCE_ORIGINS:(n + 1) * PER_SOURCE_ORIGINS]
                    for u in pages(host, f"s{n}", per_origin)]
            docs.append(source_doc(f"floor_{n}", urls, concurrency=per_source, max_fetches=len(urls), timeout=30))
        recipe = os.path.join(work, f"floor-{concurrency}.json")
        with open(recipe, "wb") as handle:
            handle.write(dataset_doc(f"floor_{concurrency}", *docs))
        gate_value = {"local": f"local:{os.path.join(work, f'gate-{concurrency}')}", "none": "none",
                      "redis": redis_url}[gate]
        client = [os.path.join(ROOT, "bench", "floor_trace.py")] if trace else ["-m", "collection"]
        args = [sys.executable, *client, "run", recipe, "--state", os.path.join(work, f"state-{concurrency}"),
                "--ca-bundle", server.ca_pem_path, "--gate", gate_value, "--json"]
        for flag in server.resolve_flags(*origins):
            args += ["--resolve", flag]
        trace_path = os.path.join(work, f"trace-{concurrency}.json")
        env = dict(os.environ, FLOOR_TRACE=trace_path)
        started = time.monotonic()
        process = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        # the metronome ticks while the run is at full speed (not past its end)
        estimate = per_origin * (1 + ARRIVAL_MARGIN_SECONDS) * max(1.0, len(origins) / 100)
        metronome = _metronome(server, time.time() + min(estimate * 0.8, 240))
        out, err = process.communicate()
        wall = time.monotonic() - started
        metronome.wait()
        records = list(server.requests)
        connections = list(server.connections)
    if process.returncode != 0:
        print(err[-3000:], file=sys.stderr)
    fetched = 0
    try:
        for source in json.loads(out)["sources"]:
            fetched += (source.get("record") or {}).get("coverage", {}).get("fetched_this_run", 0)
    except (ValueError, KeyError, TypeError):
        pass
    site = [r for r in records if r.host != METRONOME_HOST]
    gaps = _gaps(site)
    every = [g for host_gaps in gaps.values() for g in host_gaps]
    per_origin_min = [min(g) for g in gaps.values() if g]
    opened = defaultdict(int)
    for c in connections:
        opened[c.sni] += 1
    peak_open = _peak_open([c for c in connections if c.sni != METRONOME_HOST])
    spans, ideal = [], []
    for host in origins:
        stamps = sorted(r.kernel_wall for r in site if r.host == host and r.kernel_wall is not None)
        if len(stamps) > 1:
            spans.append(stamps[-1] - stamps[0])
            ideal.append((len(stamps) - 1) * (1 + ARRIVAL_MARGIN_SECONDS))
    tick_gaps = _gaps([r for r in records if r.host == METRONOME_HOST]).get(METRONOME_HOST, [])
    result = {
        "concurrency": concurrency, "sources": sources, "per_source": per_source, "origins": len(origins),
        "exit": process.returncode, "wall": wall, "fetched": fetched, "requests": len(site),
        "unstamped": sum(1 for r in site if r.kernel_wall is None), "gaps": len(every),
        "under_1s": sum(1 for g in every if g < 1.0), "smallest": min(every),
        "per_origin_min": (min(per_origin_min), statistics.median(per_origin_min), max(per_origin_min)),
        "opened_max": max(opened[h] for h in origins), "opened_total": sum(opened[h] for h in origins),
        "peak_open": max(peak_open.values()), "peak_in_flight": max(origin.peak.values()),
        "span_ratio": sum(spans) / sum(ideal), "worst_span_ratio": max(s / i for s, i in zip(spans, ideal)),
        "tick_gaps": len(tick_gaps), "tick_under": sum(1 for g in tick_gaps if g < 1.0),
        "tick_smallest": min(tick_gaps) if tick_gaps else float("nan"),
    }
    if trace:
        result["trace"] = _trace_figures(trace_path, site, converted)
    return result


def _trace_figures(path: str, site, converted: dict[float, float]) -> dict:
    with open(path, encoding="utf-8") as handle:
        client = {(t["host"], t["path"]): t for t in json.load(handle) if "path" in t}
    joined = []
    for rec in site:
        t = client.get((rec.host, rec.target))
        if t is not None and rec.kernel_wall is not None and "writing" in t and "written" in t:
            joined.append((rec, t))
    to_arrival = [rec.kernel_wall - t["writing"] for rec, t in joined]
    after_written = [rec.kernel_wall - t["written"] for rec, t in joined]
    admitted_to_writing = [t["writing"] - t["admitted"] for _, t in joined]
    fresh = [t["connect"][1] - t["connect"][0] for _, t in joined if "connect" in t]
    # the server reading the request line, behind the kernel receiving it
    offset = loopback.wall_to_monotonic()
    read_lag = [rec.read_at - (rec.kernel_wall + offset) for rec, _ in joined if rec.read_at is not None]
    conversion = [abs(converted[rec.kernel_wall] - rec.arrived) for rec, _ in joined if rec.kernel_wall in converted]
    # What the origin would have seen had the next start been counted from the stamp taken
    # just before the write (the slot), as before issue 17, with these measured delays.
    by_host = defaultdict(list)
    for rec, t in joined:
        by_host[rec.host].append((rec.kernel_wall, t["writing"]))
    slot_gaps, read_gaps = [], []
    for host, items in by_host.items():
        items.sort()
        for (a_arr, a_write), (b_arr, b_write) in zip(items, items[1:]):
            slot_gaps.append(1 + ARRIVAL_MARGIN_SECONDS - (a_arr - a_write) + (b_arr - b_write))
    reads = defaultdict(list)
    for rec, _ in joined:
        if rec.read_at is not None:
            reads[rec.host].append(rec.read_at)
    for stamps in reads.values():
        stamps.sort()
        read_gaps.extend(b - a for a, b in zip(stamps, stamps[1:]))
    return {"joined": len(joined), "to_arrival": to_arrival, "after_written": after_written,
            "admitted_to_writing": admitted_to_writing, "fresh": fresh, "read_lag": read_lag,
            "conversion": conversion, "slot_gaps": slot_gaps, "read_gaps": read_gaps}


def report(r: dict) -> None:
    print(f"concurrency {r['concurrency']}: {r['sources']} sources x {PER_SOURCE_ORIGINS} origins, pages.concurrency "
          f"{r['per_source']} each; exit {r['exit']}, {r['fetched']} pages fetched and decoded in {r['wall']:.1f} s")
    print(f"  requests at the origins {r['requests']} ({r['unstamped']} without a kernel stamp); gaps {r['gaps']}; "
          f"under 1 s: {r['under_1s']}; smallest {r['smallest']:.4f} s")
    low, mid, high = r["per_origin_min"]
    print(f"  smallest gap per origin: lowest {low:.4f} s, median {mid:.4f} s, highest {high:.4f} s "
          f"(floor 1 s + margin {ARRIVAL_MARGIN_SECONDS * 1000:.0f} ms)")
    print(f"  connections opened per origin: at most {r['opened_max']} ({r['opened_total']} for {r['origins']} "
          f"origins); peak open at once per origin {r['peak_open']}; peak requests in flight per origin "
          f"{r['peak_in_flight']} (cap 2)")
    print(f"  first to last arrival, all origins: {r['span_ratio']:.4f}x the ideal schedule "
          f"(worst origin {r['worst_span_ratio']:.4f}x)")
    print(f"  baseline, same run: a 1.000 s metronome stamping its start before the write: {r['tick_gaps']} gaps, "
          f"{r['tick_under']} under 1 s, smallest {r['tick_smallest']:.4f} s")
    t = r.get("trace")
    if t:
        print(f"  trace ({t['joined']} requests joined to their kernel arrival):")
        print(f"    admitted -> writing (connection ready):     {_quantiles(t['admitted_to_writing'])}")
        print(f"    new connection (TCP + TLS), {len(t['fresh'])} of them: {_quantiles(t['fresh'])}")
        print(f"    writing -> kernel arrival at the origin:    {_quantiles(t['to_arrival'])}")
        print(f"    written -> kernel arrival (<= 0: arrived before the post-write stamp): "
              f"max {max(t['after_written']) * 1000:.3f} ms")
        slot = t["slot_gaps"]
        print(f"    had the next start counted from the stamp before the write (+{ARRIVAL_MARGIN_SECONDS * 1000:.0f} ms):"
              f" {sum(1 for g in slot if g < 1.0)} of {len(slot)} gaps under 1 s, smallest {min(slot):.4f} s")
        print(f"    server reading the request line after the kernel got it: {_quantiles(t['read_lag'])}")
        read = t["read_gaps"]
        print(f"    gaps stamped when the server read the request line: {sum(1 for g in read if g < 1.0)} of "
              f"{len(read)} under 1 s, smallest {min(read):.4f} s")
        if t["conversion"]:
            print(f"    kernel stamp converted by an unguarded monotonic/realtime pair, error: "
                  f"{_quantiles(t['conversion'])}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10000, help="requests per run (about)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[6, 25])
    parser.add_argument("--gate", choices=("local", "none", "redis"), default="local")
    parser.add_argument("--trace", action="store_true", help="client-side instants per request (bench/floor_trace.py)")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="bench-floor-")
    redis = None
    try:
        if args.gate == "redis":
            from redis_helper import RedisServer
            redis = RedisServer(work).start()
        for concurrency in args.concurrency:
            report(run(concurrency, args.requests, args.gate, args.trace, work, redis.url if redis else None))
            sys.stdout.flush()
    finally:
        if redis is not None:
            redis.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
