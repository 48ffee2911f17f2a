"""Building a fetcher wired to the loopback server (real urllib3 transport, resolve map)."""

from collection.fetch.budgets import Budget
from collection.fetch.clock import VirtualClock
from collection.fetch.egress import Egress
from collection.fetch.fetcher import ARRIVAL_MARGIN_SECONDS, Fetcher, FetchSpec
from collection.fetch.politeness import Politeness
from collection.fetch.urllib3_transport import Urllib3Transport

ORIGIN = "https://www.example.com"
HTML = (("Content-Type", "text/html; charset=utf-8"),)


def make_fetcher(server, *, clock=None, max_requests=1000, discovery_max_requests=100,
                 max_source_bytes=10**9, deadline=None, min_interval=1, concurrency=2,
                 allowed=(ORIGIN,), ca_bundle=None, **kwargs):
    """A Fetcher on the virtual clock (politeness waits jump) talking real TLS to `server`."""
    clock = clock or VirtualClock()
    transport = Urllib3Transport(ca_bundle=ca_bundle or server.ca_pem_path,
                                 read_gap_seconds=kwargs.pop("read_gap_seconds", 1.0))
    budget = Budget(max_requests, discovery_max_requests, max_source_bytes, deadline)
    kwargs.setdefault("request_timeout", 5)
    fetcher = Fetcher(transport, Egress(server.resolve_map()), allowed_origins=allowed, budget=budget,
                      politeness=Politeness(min_interval, concurrency, margin=ARRIVAL_MARGIN_SECONDS), clock=clock, **kwargs)
    return fetcher


def page(path, accepted=("text/html",), origin=ORIGIN):
    return FetchSpec(origin + path, "page", tuple(accepted))


def listing(path, accepted=("application/json",), origin=ORIGIN):
    return FetchSpec(origin + path, "listing", tuple(accepted))


def read_all(response):
    """A transport response's whole body, then closed."""
    out = b""
    while chunk := response.read(65536):
        out += chunk
    response.close()
    return out
