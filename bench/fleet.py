"""Benchmark: many runs, one promise (docs/running-many-sources.md).

1. fleet: PROCESSES `collection run` processes at once, each a source of PAGES pages on each of
   2 loopback HTTPS origins (min_interval_seconds 1), sharing the local gate and then the Redis
   gate (a redis-server started here). Per gate: the time the origins took from the first
   arrival to the last against the ideal shared schedule computed in the same run ((requests
   per origin - 1) x the gap, the gap being 1 s plus the arrival margin), the smallest gap
   between two arrivals at one origin (kernel receive stamps; must be >= 1 s) and the most
   requests in flight at one origin (must be <= 2).
2. gate cost: one lease (acquire + sent + release) on the local and the Redis gate, beside one
   HTTPS request's round trip on an open loopback connection, measured here.
3. dataset replay: DATASET_SOURCES sources over 16 origins replayed on the virtual clock,
   pages per second and peak RSS, beside one source holding the same number of pages over 8
   origins (a source lists at most 8, REG-20), ROUNDS alternating runs of each measured in the
   same run: the median ratio and its spread.

    .venv/bin/python bench/fleet.py [--pages 30] [--processes 3] [--dataset-sources 256] [--rounds 5]
                                    [--dataset-pages 20] [--skip-fleet] [--state-root DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "tests"))

from dataset_kit import JSON_HEADERS, dataset_doc, fixture_for, page_body, pages, source_doc  # noqa: E402
from loopback import LoopbackServer, Reply  # noqa: E402
from redis_helper import RedisServer  # noqa: E402

from collection.fetch.fetcher import ARRIVAL_MARGIN_SECONDS  # noqa: E402
from collection.fetch.gate import Lease, LocalGate  # noqa: E402
from collection.fetch.redis_gate import RedisGate  # noqa: E402

ORIGINS = ("a.example.com", "b.example.com")


class _Tracker:
    def __init__(self):
        self.lock = threading.Lock()
        self.now: dict[str, int] = {}
        self.peak: dict[str, int] = {}

    def __call__(self, rec):
        with self.lock:
            self.now[rec.host] = self.now.get(rec.host, 0) + 1
            self.peak[rec.host] = max(self.peak.get(rec.host, 0), self.now[rec.host])
        time.sleep(0.02)                 # the origin's own work
        with self.lock:
            self.now[rec.host] -= 1
        return Reply(200, JSON_HEADERS, page_body(rec.target))


def fleet(gate: str, processes: int, per_origin: int, work: str) -> dict:
    tracker = _Tracker()
    with LoopbackServer() as server:
        for host in ORIGINS:
            server.route("/robots.txt", Reply(404, (("Content-Type", "text/plain"),), b""), host=host)
            server.route("*", Reply(handler=tracker), host=host)
        runs = []
        started = time.monotonic()
        for n in range(processes):
            urls = [u for host in ORIGINS for u in pages(host, f"s{n}", per_origin)]
            recipe = os.path.join(work, f"fleet-{n}.json")
            with open(recipe, "w") as handle:
                json.dump(source_doc(f"fleet_{n}", urls, max_fetches=len(urls)), handle)
            args = [sys.executable, "-m", "collection", "run", recipe, "--state", os.path.join(work, f"state-{gate[:5]}-{n}"),
                    "--ca-bundle", server.ca_pem_path, "--gate", gate, "--json"]
            for flag in server.resolve_flags(*ORIGINS):
                args += ["--resolve", flag]
            runs.append(subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        codes = [run.wait() for run in runs]
        ended = time.monotonic()
        wall = ended - started
        for run in runs:
            if run.returncode != 0:
                print(run.stderr.read(), file=sys.stderr)
        spans, smallest, counts = [], [], []
        every = sorted(r.arrived for r in server.requests)
        for host in ORIGINS:
            arrivals = sorted(r.arrived for r in server.requests_for(host=host))
            counts.append(len(arrivals))
            spans.append(arrivals[-1] - arrivals[0])
            smallest.append(min(b - a for a, b in zip(arrivals, arrivals[1:])))
    ideal = (max(counts) - 1) * (1.0 + ARRIVAL_MARGIN_SECONDS)
    return {"exit_codes": codes, "wall": wall, "requests_per_origin": counts, "span": max(spans), "ideal": ideal,
            "ratio": max(spans) / ideal, "smallest_gap": min(smallest), "peak_in_flight": max(tracker.peak.values()),
            "to_first": every[0] - started, "after_last": ended - every[-1], "all_span": every[-1] - every[0]}


def gate_cost(gate, rounds: int) -> float:
    gate.check()
    for n in range(rounds):
        # the Redis gate fences an origin it has no record of (one interval's wait, docs/politeness.md):
        # meet every fence first, so the rounds below time a grant, not a fence
        answer = gate.acquire(f"h{n}.example.com", 1.0, 30)
        if isinstance(answer, Lease):
            gate.sent(answer)
            gate.release(answer)
    time.sleep(1.1)
    times = []
    for n in range(rounds):
        t0 = time.perf_counter()
        lease = gate.acquire(f"h{n}.example.com", 1.0, 30)
        assert isinstance(lease, Lease)
        gate.sent(lease)
        gate.release(lease)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def round_trip(rounds: int) -> float:
    import urllib3

    with LoopbackServer() as server:
        server.route("*", Reply(200, JSON_HEADERS, page_body("x")))
        pool = urllib3.HTTPSConnectionPool("127.0.0.1", server.port, ca_certs=server.ca_pem_path,
                                           server_hostname="a.example.com", assert_hostname="a.example.com")
        pool.request("GET", "/warm", headers={"Host": "a.example.com"})
        times = []
        for n in range(rounds):
            t0 = time.perf_counter()
            pool.request("GET", f"/p{n}", headers={"Host": "a.example.com"})
            times.append(time.perf_counter() - t0)
        return statistics.median(times)


def replay(work: str, name: str, recipe: str, fixture: str, states: str) -> tuple[float, int, float]:
    """One `collection run --replay` in its own process and a fresh state directory: its wall
    time (the process's, start-up and fixture loading included), exit code and peak RSS (MiB)."""
    script = ("import resource, subprocess, sys, time\n"
              "t0 = time.monotonic()\n"
              "done = subprocess.run(sys.argv[1:], capture_output=True)\n"
              "wall = time.monotonic() - t0\n"
              "sys.stderr.write(done.stderr.decode()[-2000:])\n"
              "print(done.returncode, wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", script, sys.executable, "-m", "collection", "run", recipe, "--state",
                          os.path.join(states, f"state-{name}"), "--replay", fixture, "--json"],
                         cwd=ROOT, capture_output=True, text=True)
    code, wall, rss_kib = out.stdout.split()
    if code != "0":
        print(out.stderr, file=sys.stderr)
    return float(wall), int(code), int(rss_kib) / 1024


def create_cost(where: str, count: int = 2048) -> float:
    """Microseconds to create an empty file in `where`, the median of `count` creates: what one
    of a dataset's 2,048 first-run inodes (8 per source) costs on this filesystem now. On an
    ext4 without a journal (this machine's) it moves from about 15 us to over 200 us for some
    minutes after many files near it were deleted (the allocator steps over inodes freed in the
    last few minutes), and the dataset replay with it. The files are left for the bench's
    clean-up: deleting them here would slow what follows."""
    probe = os.path.join(where, f"create-probe-{time.monotonic_ns()}")
    os.makedirs(probe, exist_ok=True)
    times = []
    for n in range(count):
        started = time.perf_counter()
        os.close(os.open(os.path.join(probe, f"f{n}"), os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644))
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def replays(work: str, sources: int, per: int, rounds: int, state_root: str | None = None) -> None:
    """The dataset replay beside the single-source one, `rounds` times each, alternating
    (single, dataset, dataset, single, ...) so that both meet the same load on the machine;
    each round's ratio is taken within the round. State directories are kept until the end: a
    run into a directory just emptied of thousands of files pays for the deletions on
    filesystems that avoid reusing recently freed inodes (ext4 without a journal scans
    past them on every file it creates), a cost of the bench's clean-up, not of the run."""
    hosts = [f"o{n}.example.com" for n in range(16)]
    urls = {n: pages(hosts[n % 16], f"d{n}", per) for n in range(sources)}
    every = [u for n in range(sources) for u in urls[n]]
    data = dataset_doc("bench", *(source_doc(f"source_{n}", urls[n]) for n in range(sources)))
    # One source may list at most 8 origins (REG-20): the baseline spreads the same number
    # of pages over 8 of them.
    alone = [u.replace(f"o{n}.example.com", f"o{n % 8}.example.com") for u in every for n in (int(u.split("/")[2][1:].split(".")[0]),)]
    single = json.dumps(source_doc("single", alone, max_fetches=len(alone))).encode()
    # one fixture holding both sets of pages serves both runs
    fixture = os.path.join(work, "replay-fixture.json")
    with open(fixture, "w") as handle:
        json.dump(fixture_for(sorted(set(every) | set(alone))), handle)
    recipes = {}
    for name, body in (("single", single), ("dataset", data)):
        recipes[name] = os.path.join(work, f"{name}.json")
        with open(recipes[name], "wb") as handle:
            handle.write(body)
    states = state_root or work
    before = create_cost(states)
    runs: dict[str, list[tuple[float, int, float]]] = {"single": [], "dataset": []}
    for n in range(rounds):
        # single then dataset, then the other way round: neither always runs second
        for name in ("single", "dataset") if n % 2 == 0 else ("dataset", "single"):
            runs[name].append(replay(work, f"{name}-{n}", recipes[name], fixture, states))
    count = len(every)
    print(f"replay on the virtual clock: {count} pages, {rounds} rounds of one source and {sources} sources; "
          f"state directories in {states}, where creating a file took {before:.0f} us before the rounds "
          f"and {create_cost(states, 256):.0f} us after them (median)")
    for name, label in (("single", "one source over 8 origins"), ("dataset", f"{sources} sources over 16 origins")):
        rates = [count / wall for wall, _, _ in runs[name]]
        print(f"  {label}: {statistics.median(rates):.0f} pages/s median ({', '.join(f'{r:.0f}' for r in rates)}; "
              f"exit {sorted({code for _, code, _ in runs[name]})}), "
              f"peak RSS {max(rss for _, _, rss in runs[name]):.0f} MiB"
              + (" (target <= 1024 MiB)" if name == "dataset" else ""))
    ratios = [one[0] / many[0] for one, many in zip(runs["single"], runs["dataset"])]
    print(f"  dataset pages/s relative to one source: median {statistics.median(ratios):.2f}, "
          f"spread {min(ratios):.2f}-{max(ratios):.2f} ({', '.join(f'{r:.2f}' for r in ratios)}) "
          f"(target >= 1/1.2 = 0.83)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=30, help="pages per origin per process")
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--dataset-sources", type=int, default=256)
    parser.add_argument("--dataset-pages", type=int, default=20, help="pages per source in the dataset replay")
    parser.add_argument("--rounds", type=int, default=5, help="alternating replays of each kind")
    parser.add_argument("--skip-fleet", action="store_true")
    parser.add_argument("--state-root", help="make the replays' state directories under this directory (for "
                        "instance a tmpfs such as /dev/shm, to measure the runs without the disk's file creation); "
                        "default: the bench's temporary directory")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="bench-fleet-")
    state_root = tempfile.mkdtemp(prefix="bench-fleet-state-", dir=args.state_root) if args.state_root else None
    redis = RedisServer(work).start()
    try:
        print("gate cost per request (median of 2000 leases: acquire + sent + release) beside an HTTPS round trip")
        trip = round_trip(500)
        local = gate_cost(LocalGate(os.path.join(work, "cost-gate")), 2000)
        fleet_gate = gate_cost(RedisGate(redis.url), 2000)
        print(f"  HTTPS round trip on an open loopback connection: {trip * 1000:.3f} ms")
        print(f"  local gate: {local * 1000:.3f} ms ({local / trip:.2f}x the round trip)")
        print(f"  redis gate: {fleet_gate * 1000:.3f} ms ({fleet_gate / trip:.2f}x the round trip)")

        if not args.skip_fleet:
            for label, gate in (("local", f"local:{os.path.join(work, 'gate')}"), ("redis", redis.url)):
                result = fleet(gate, args.processes, args.pages, work)
                print(f"fleet, {label} gate: {args.processes} processes x {len(ORIGINS)} origins x {args.pages} pages, "
                      f"exit codes {result['exit_codes']}")
                print(f"  requests per origin {result['requests_per_origin']}; first to last arrival "
                      f"{result['span']:.2f} s against the ideal shared schedule {result['ideal']:.2f} s: "
                      f"ratio {result['ratio']:.4f} (target <= 1.05)")
                print(f"  whole fleet wall {result['wall']:.2f} s = {result['to_first']:.2f} s from spawning to the "
                      f"first arrival + {result['all_span']:.2f} s first to last arrival (both origins) + "
                      f"{result['after_last']:.2f} s to the last exit; (span + start-up) / wall "
                      f"{(result['all_span'] + result['to_first']) / result['wall']:.3f}")
                print(f"  fleet wall / ideal shared schedule: {result['wall'] / result['ideal']:.4f} (target <= 1.05; "
                      f"the wall includes the processes' start-up)")
                print(f"  smallest gap at one origin {result['smallest_gap']:.4f} s (floor 1 s); "
                      f"peak in flight at one origin {result['peak_in_flight']} (cap 2)")

        replays(work, args.dataset_sources, args.dataset_pages, args.rounds, state_root)
    finally:
        redis.stop()
        shutil.rmtree(work, ignore_errors=True)
        if state_root:
            shutil.rmtree(state_root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
