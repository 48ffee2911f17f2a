"""Helpers for the run-loop tests (no tests of its own): recipes for each discovery kind, a
publisher programmed onto the loopback server, and runs in-process or as a subprocess.

In-process runs use the real urllib3 transport and real TLS against the loopback server
but a VirtualClock, so politeness waits jump and a test stays fast; the wire-level
behaviour (gaps at the server, exit codes) is checked by the subprocess runs on the real
clock in test_run_e2e.py.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field

from loopback import Reply

from collection.canonical import canonical_json
from collection.fetch.clock import VirtualClock
from collection.fetch.egress import Egress
from collection.run.loop import RunSettings, Shell, execute
from collection.fetch.urllib3_transport import Urllib3Transport

ORIGIN = "https://www.example.com"
HOST = "www.example.com"
PYTHON = sys.executable
JSON_PAGE = (("Content-Type", "application/json"),)
COLUMNS = ("title", "body")


def recipe(kind: str, *, ids=("1", "2", "3", "4", "5"), max_fetches: int = 100, revisit: str = "never",
           concurrency: int = 2, max_requests: int | None = None, retries: int = 1, max_rows: int = 100000,
           origins=(ORIGIN,), extra_members=(), discovery_max: int = 10) -> bytes:
    """A collection source reading JSON pages with json.tabular (title, body)."""
    options = {"columns": [{"name": "title", "pointer": "/title"}, {"name": "body", "pointer": "/body"}]}
    discovery: dict = {"kind": kind, "max_requests": discovery_max}
    if kind == "json_api":
        discovery.update(url=f"{ORIGIN}/api/items?per_page=100",
                         pagination={"kind": "page_parameter", "parameter": "page", "first": 1},
                         records={"pointer": ""}, link={"pointer": "/link"}, identity={"pointer": "/id"},
                         revision={"pointer": "/modified"})
    elif kind == "html_index":
        discovery.update(url=f"{ORIGIN}/index.html", records={"selector": "a.item"})
    elif kind == "sitemap":
        discovery.update(url=f"{ORIGIN}/sitemap.xml")
    elif kind == "explicit":
        discovery["members"] = [{"page_id": f"id-{i}", "url": f"{ORIGIN}/p/{i}"} for i in ids] + list(extra_members)
    pages = {"allowed_origins": list(origins), "max_fetches_per_run": max_fetches, "concurrency": concurrency,
             "min_interval_seconds": 1, "request_timeout_seconds": 5, "retries": retries,
             "revisit": {"kind": revisit}}
    doc = {
        "name": f"test_{kind}",
        "source_class": "user_url",
        "data_classification": "public",
        "locator": {"kind": "https_url", "display_locator": f"{ORIGIN}/"},
        "rights_claim": {"claimed_basis": "public_domain_asserted", "claim_evidence_digest": "sha256:" + "0" * 64},
        "connector": {"adapter_id": "public.https.collection@2.0.0", "credential_mode": "none", "origin": ORIGIN,
                      "parameters": [{"name": "reader.family_id", "value": "json.tabular"},
                                     {"name": "reader.family_version", "value": "1.0.0"},
                                     {"name": "reader.decode_options", "value": canonical_json(options)}]},
        "limits": {"max_requests": max_requests or (10 + 3 * max_fetches + 10), "max_rows": max_rows},
        "collection": {"discovery": discovery, "pages": pages},
    }
    return json.dumps(doc, indent=1).encode()


def page_body(pid: str, version: int = 1, rows: int = 2) -> bytes:
    return json.dumps([{"title": f"page {pid} v{version} #{n}", "body": f"text of {pid}, row {n}"}
                       for n in range(1, rows + 1)]).encode()


@dataclass
class Publisher:
    """What the loopback site serves: listing entries and pages, reprogrammed between runs."""

    server: object
    kind: str
    pages: dict = field(default_factory=dict)       # id -> Reply
    listed: list = field(default_factory=list)      # ids in listing order
    hints: dict = field(default_factory=dict)       # id -> revision hint
    listing_reply: Reply | None = None              # override the listing (failures)

    def publish(self, *ids: str, version: int = 1) -> "Publisher":
        for pid in ids:
            self.pages[pid] = Reply(200, JSON_PAGE, page_body(pid, version))
            self.hints.setdefault(pid, "2024-01-01")
            if pid not in self.listed:
                self.listed.append(pid)
        return self

    def change(self, pid: str, version: int) -> None:
        self.pages[pid] = Reply(200, JSON_PAGE, page_body(pid, version))
        self.hints[pid] = f"2024-02-0{version}"

    def install(self) -> None:
        s = self.server
        for pid, reply in self.pages.items():
            s.route(f"/p/{pid}", reply)
        if self.kind == "json_api":
            items = [{"id": f"id-{pid}", "link": f"{ORIGIN}/p/{pid}", "modified": self.hints[pid]} for pid in self.listed]
            s.route("/api/items?per_page=100&page=1",
                    self.listing_reply or Reply(200, JSON_PAGE, json.dumps(items).encode()))
            s.route("/api/items?per_page=100&page=2", Reply(200, JSON_PAGE, b"[]"))
        elif self.kind == "html_index":
            links = "".join(f'<li><a class="item" href="/p/{pid}">{pid}</a></li>' for pid in self.listed)
            s.route("/index.html", self.listing_reply or Reply(200, (("Content-Type", "text/html"),),
                                                               f"<html><body><ul>{links}</ul></body></html>".encode()))
        elif self.kind == "sitemap":
            urls = "".join(f"<url><loc>{ORIGIN}/p/{pid}</loc><lastmod>{self.hints[pid]}</lastmod></url>"
                           for pid in self.listed)
            body = f'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>'
            s.route("/sitemap.xml", self.listing_reply or Reply(200, (("Content-Type", "application/xml"),), body.encode()))


def page_id(kind: str, pid: str) -> str:
    return f"id-{pid}" if kind in ("json_api", "explicit") else f"{ORIGIN}/p/{pid}"


def run_in_process(server, data: bytes, state_dir, *, resync=False, deadline=None, plan=None, keep=3,
                   clock=None) -> dict:
    clock = clock or VirtualClock()
    shell = Shell(clock, lambda n: Urllib3Transport(ca_bundle=server.ca_pem_path),
                  lambda source: Egress(server.resolve_map()))
    return execute(data, RunSettings(str(state_dir), resync=resync, deadline_seconds=deadline, plan=plan, keep=keep),
                   shell)


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([PYTHON, "-m", "collection", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def current(state_dir, name: str) -> bytes:
    with open(os.path.join(str(state_dir), "current", name), "rb") as handle:
        return handle.read()


def ledger_rows(state_dir) -> dict[str, dict]:
    rows = csv.DictReader(io.StringIO(current(state_dir, "ledger.csv").decode()))
    return {r["page_id"]: r for r in rows}


def relation_rows(state_dir) -> list[dict]:
    return list(csv.DictReader(io.StringIO(current(state_dir, "relation.csv").decode())))


def page_requests(server) -> list[str]:
    return [r.target for r in server.requests if r.path.startswith("/p/")]


# --- a replay corpus (crash tests and benchmarks) -----------------------------------------------

def corpus(pages: int, hosts: tuple[str, ...] = ("a.example.com", "b.example.com"), rows: int = 5,
           max_fetches: int = 10000, concurrency: int = 2) -> tuple[bytes, list]:
    """(recipe, fixture exchanges): a sitemap on www.example.com listing `pages` JSON pages
    spread round-robin over `hosts`, each page `rows` rows."""
    page_urls = [f"https://{hosts[i % len(hosts)]}/p/{i}" for i in range(1, pages + 1)]
    locs = "".join(f"<url><loc>{u}</loc></url>" for u in page_urls)
    sitemap = ('<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
               + locs + "</urlset>")
    fixture = [{"request": {"url": f"{ORIGIN}/sitemap.xml"},
                "response": {"status": 200, "headers": [["Content-Type", "application/xml"]], "body": {"text": sitemap}}}]
    for i, u in enumerate(page_urls, 1):
        fixture.append({"request": {"url": u}, "response": {"status": 200, "headers": [["Content-Type", "application/json"]],
                                                            "body": {"text": page_body(str(i), rows=rows).decode()}}})
    doc = json.loads(recipe("sitemap", max_fetches=max_fetches, concurrency=concurrency,
                            origins=tuple(sorted({ORIGIN, *(f"https://{h}" for h in hosts)}))))
    doc["collection"]["pages"]["max_pages"] = max(pages, 1)
    doc["limits"]["max_requests"] = 10 + 2 * max_fetches
    return json.dumps(doc, indent=1).encode(), fixture


def check_state(state_dir, columns=COLUMNS) -> str | None:
    """The crash invariant: `current` is absent or one complete generation whose files agree
    (run.json's digests, ledger ↔ relation ↔ coverage). Returns the generation name."""
    import hashlib

    from collection.merge.ledger import read_ledger
    from collection.merge.relation import scan_relation
    from collection.store.generations import current_generation

    path = current_generation(str(state_dir))
    if path is None:
        return None
    with open(os.path.join(path, "run.json"), "rb") as handle:
        record = json.loads(handle.read())
    assert record["generation"] == os.path.basename(path)
    for name in ("relation.csv", "ledger.csv"):
        with open(os.path.join(path, name), "rb") as handle:
            data = handle.read()
        assert hashlib.sha256(data).hexdigest() == record["files"][name]["sha256"], name
    with open(os.path.join(path, "ledger.csv"), newline="", encoding="utf-8") as handle:
        ledger = read_ledger(handle)
    with open(os.path.join(path, "relation.csv"), newline="", encoding="utf-8") as handle:
        counts = scan_relation(handle, columns)
    assert set(counts) <= set(ledger)
    assert len(ledger) == record["coverage"]["known"]
    assert sum(counts.values()) == record["rows"]
    for pid, row in ledger.items():
        if row.state == "fetched":
            assert counts.get(pid, 0) == row.row_count, pid
    return record["generation"]


def write_corpus(workdir: str, recipe: bytes, fixture: list) -> tuple[str, str]:
    """Write a `corpus()` into `workdir`; (recipe path, fixture path)."""
    recipe_path = os.path.join(workdir, "recipe.json")
    fixture_path = os.path.join(workdir, "fixture.json")
    with open(recipe_path, "wb") as handle:
        handle.write(recipe)
    with open(fixture_path, "w") as handle:
        json.dump(fixture, handle)
    return recipe_path, fixture_path


def live_run_args(loopback, recipe_path, state, *extra) -> list[str]:
    """`collection run RECIPE --state DIR` against the loopback publisher (its CA and resolve map)."""
    args = ["run", str(recipe_path), "--state", str(state), "--ca-bundle", loopback.ca_pem_path]
    for flag in loopback.resolve_flags("www.example.com"):
        args += ["--resolve", flag]
    return args + list(extra)
