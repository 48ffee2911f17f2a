"""Benchmark: does the fetcher keep the politeness floor at the server without wasting time?

A loopback HTTPS site on 3 host names (mapped with the resolve map), 50 ms latency per
response, 60 page requests (20 per host), min_interval_seconds 1, concurrency 2, through the
real urllib3 transport and the real clock. Reports the achieved wall time against the ideal
schedule computed in the same run (the politeness scheduler replayed on a virtual clock with
the request duration measured here; target <= 1.03x), and the smallest gap between two
request arrivals at one host as the server saw them (must never be below 1 s).

    .venv/bin/python bench/politeness.py
"""

from __future__ import annotations

import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests"))

from loopback import LoopbackServer, Reply  # noqa: E402

from collection.fetch.budgets import Budget  # noqa: E402
from collection.fetch.clock import SystemClock  # noqa: E402
from collection.fetch.egress import Egress  # noqa: E402
from collection.fetch.fetcher import ARRIVAL_MARGIN_SECONDS, FETCHED, Fetcher, FetchSpec  # noqa: E402
from collection.fetch.politeness import Politeness  # noqa: E402
from collection.fetch.urllib3_transport import Urllib3Transport  # noqa: E402

HOSTS = ("a.example.com", "b.example.com", "c.example.com")
PER_HOST = 20
INTERVAL = 1
CONCURRENCY = 2
LATENCY = 0.05


def run_live(server) -> tuple[float, list[float], int]:
    fetcher = Fetcher(Urllib3Transport(ca_bundle=server.ca_pem_path), Egress(server.resolve_map(*HOSTS)),
                      allowed_origins=[f"https://{h}" for h in HOSTS], budget=Budget(1000, 10, None),
                      politeness=Politeness(INTERVAL, CONCURRENCY, margin=ARRIVAL_MARGIN_SECONDS), clock=SystemClock(), robots=False)
    work = {h: [FetchSpec(f"https://{h}/p{n}", "page", ("text/html",)) for n in range(PER_HOST)] for h in HOSTS}
    lock = threading.Lock()
    durations: list[float] = []
    fetched = [0]

    def next_spec():
        # The run loop's choice: the host the scheduler can serve soonest.
        with lock:
            waiting = [h for h, specs in work.items() if specs]
            if not waiting:
                return None
            with fetcher._lock:
                choice = fetcher.politeness.choose(waiting, time.monotonic())
            host = choice[0] if choice else waiting[0]
            return work[host].pop(0)

    def worker():
        while (spec := next_spec()) is not None:
            out = fetcher.fetch(spec)
            if out.outcome == FETCHED:
                with lock:
                    fetched[0] += 1

    start = time.monotonic()
    threads = [threading.Thread(target=worker) for _ in range(CONCURRENCY)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - start
    for host in HOSTS:
        arrivals = [r.arrived for r in server.requests_for(host=host)]
        durations.extend(b - a for a, b in zip(arrivals, arrivals[1:]))
    return elapsed, durations, fetched[0]


def ideal_seconds(request_seconds: float) -> float:
    """The same scheduler on a virtual timeline where each request takes `request_seconds`."""
    pol = Politeness(INTERVAL, CONCURRENCY)
    left = {h: PER_HOST for h in HOSTS}
    now, running, end = 0.0, [], 0.0
    while any(left.values()) or running:
        choice = pol.choose([h for h, n in left.items() if n], now)
        if choice is not None and choice[1] <= now:
            host = choice[0]
            running.append((now + request_seconds, pol.start(host, now)))
            left[host] -= 1
            continue
        times = [t for t, _ in running] + ([choice[1]] if choice is not None else [])
        now = min(times)
        for item in [r for r in running if r[0] <= now]:
            pol.finish(item[1], now)
            running.remove(item)
            end = max(end, now)
    return end


def measure_request_seconds(server) -> float:
    """One request's duration (connection reused) at this latency, measured in this run."""
    transport = Urllib3Transport(ca_bundle=server.ca_pem_path)
    egress = Egress(server.resolve_map(*HOSTS))
    samples = []
    for n in range(6):
        from collection.fetch.transport import Request
        t0 = time.monotonic()
        response = transport.send(Request("https://a.example.com/warm", (), egress.target("a.example.com")), t0 + 10)
        while response.read(65536):
            pass
        response.close()
        samples.append(time.monotonic() - t0)
    return statistics.median(samples[1:])


def main() -> None:
    with LoopbackServer(names=HOSTS) as server:
        server.route("*", Reply(200, [("Content-Type", "text/html")], b"<p>page</p>" * 50, delay=LATENCY))
        request_seconds = measure_request_seconds(server)
        server.clear()
        elapsed, gaps, fetched = run_live(server)
    ideal = ideal_seconds(request_seconds)
    print(f"requests fetched        {fetched} of {PER_HOST * len(HOSTS)} on {len(HOSTS)} hosts "
          f"(min_interval {INTERVAL}s, concurrency {CONCURRENCY}, latency {LATENCY * 1000:.0f} ms)")
    print(f"request duration        {request_seconds * 1000:.1f} ms (median, measured)")
    print(f"ideal schedule          {ideal:.3f} s")
    print(f"achieved wall time      {elapsed:.3f} s")
    print(f"ratio achieved / ideal  {elapsed / ideal:.4f}  (target <= 1.03)")
    print(f"min gap at the server   {min(gaps):.4f} s per host (floor {INTERVAL} s)")


if __name__ == "__main__":
    main()
