"""Helpers for the dataset-run and gate tests (no tests of its own): collection sources that
read JSON pages (json.tabular) from named hosts, datasets of them, and replay fixtures."""

from __future__ import annotations

import json
import threading

from loopback import Reply

from collection.canonical import canonical_json

JSON_HEADERS = [["Content-Type", "application/json"]]


def source_doc(name: str, pages: list[str], *, discovery_host: str | None = None, min_interval: int = 1,
               concurrency: int = 2, max_fetches: int = 1000, timeout: int = 5) -> dict:
    """An explicit collection source listing `pages` (absolute https URLs)."""
    hosts = sorted({url.split("/")[2] for url in pages} | ({discovery_host} if discovery_host else set()))
    first = discovery_host or pages[0].split("/")[2]
    options = {"columns": [{"name": "title", "pointer": "/title"}, {"name": "body", "pointer": "/body"}]}
    members = [{"page_id": url.split("/")[2].split(".")[0] + "-" + url.rsplit("/", 1)[-1], "url": url} for url in pages]
    return {
        "name": name,
        "source_class": "user_url",
        "data_classification": "public",
        "locator": {"kind": "https_url", "display_locator": f"https://{first}/"},
        "rights_claim": {"claimed_basis": "public_domain_asserted", "claim_evidence_digest": "sha256:" + "0" * 64},
        "connector": {"adapter_id": "public.https.collection@2.0.0", "credential_mode": "none",
                      "origin": f"https://{first}",
                      "parameters": [{"name": "reader.family_id", "value": "json.tabular"},
                                     {"name": "reader.family_version", "value": "1.0.0"},
                                     {"name": "reader.decode_options", "value": canonical_json(options)}]},
        "limits": {"max_requests": 10 + 3 * max_fetches, "max_rows": 1000000},
        "collection": {
            "discovery": {"kind": "explicit", "max_requests": 1, "members": members},
            "pages": {"allowed_origins": [f"https://{h}" for h in hosts], "max_fetches_per_run": max_fetches,
                      "max_pages": max(len(pages), 1),
                      "concurrency": concurrency, "min_interval_seconds": min_interval,
                      "request_timeout_seconds": timeout, "retries": 0, "revisit": {"kind": "never"}},
        },
    }


def dataset_doc(name: str, *sources: dict) -> bytes:
    return json.dumps({"name": name, "sources": list(sources)}, indent=1).encode()


def page_body(url: str) -> bytes:
    tail = url.rsplit("/", 1)[-1]
    return json.dumps([{"title": f"title {tail}", "body": f"body of {url}"}]).encode()


def fixture_for(urls: list[str]) -> list[dict]:
    return [{"request": {"url": url}, "response": {"status": 200, "headers": JSON_HEADERS,
                                                   "body": {"text": page_body(url).decode()}}}
            for url in urls]


def pages(host: str, prefix: str, count: int) -> list[str]:
    return [f"https://{host}/{prefix}/{prefix}-{i}" for i in range(1, count + 1)]


class HeldPages:
    """A loopback reply handler that holds every page until `release()` (or 120 s), then serves its
    JSON page: a job whose pages are held keeps its locks for as long as a test needs, however slowly
    the machine starts the next process."""

    def __init__(self):
        self._released = threading.Event()

    def release(self) -> None:
        self._released.set()

    def __call__(self, rec):
        self._released.wait(120)
        return Reply(200, JSON_HEADERS, page_body(rec.target))
