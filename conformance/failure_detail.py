"""What a failing case shows beside its differences: the exchanges served in the failing
run, and the harness's own codes and ledger facts next to the expected ones (issue 26)."""

from __future__ import annotations

import base64
from urllib.parse import urlsplit

MAX_SERVED = 40
MAX_PAGES = 20


def _key(url: str) -> str:
    parts = urlsplit(url)
    return f"{(parts.hostname or '').lower()}{parts.path or '/'}{'?' + parts.query if parts.query else ''}"


def _size(response: dict) -> int:
    body = response.get("body") or {}
    if "text" in body:
        return len(body["text"].encode("utf-8"))
    if "base64" in body:
        try:
            return len(base64.b64decode(body["base64"]))
        except ValueError:
            return 0
    return 0


def _media_type(response: dict) -> str | None:
    return next((v for k, v in response.get("headers", []) if k.lower() == "content-type"), None)


def served(exchanges: list[dict], urls: list[str]) -> list[dict]:
    """One entry per request of the run, in order, with what the run's exchanges answer it:
    the n-th request to an address gets its n-th response (the last one repeats), an address
    not recorded answers 404 (as the fixture server and the README's defaults say)."""
    by_key = {_key(e["request"]["url"]): e for e in exchanges}
    counts: dict[str, int] = {}
    out = []
    for url in urls[:MAX_SERVED]:
        key = _key(url)
        n = counts[key] = counts.get(key, 0) + 1
        exchange = by_key.get(key)
        if exchange is None:
            robots = urlsplit(url).path == "/robots.txt"
            out.append({"method": "GET", "url": url, "status": 404, "media_type": "text/plain",
                        "bytes": 0 if robots else len(b"not recorded"), "note": "not recorded"})
            continue
        responses = exchange.get("responses") or [exchange["response"]]
        response = responses[min(n, len(responses)) - 1]
        entry = {"method": exchange["request"].get("method", "GET"), "url": url, "status": response["status"],
                 "media_type": _media_type(response), "bytes": _size(response)}
        notes = [k for k in ("delay_seconds", "drip", "drop_connection", "hang") if response.get(k)]
        if notes:
            entry["note"] = ", ".join(f"{k} {response[k]}" for k in notes)
        out.append(entry)
    if len(urls) > MAX_SERVED:
        out.append({"more": len(urls) - MAX_SERVED})
    if not urls:
        out = [{"method": e["request"].get("method", "GET"), "url": e["request"]["url"], "note": "offered, not requested"}
               for e in exchanges[:MAX_SERVED]]
    return out


def run_facts(expect: dict, result: dict) -> dict:
    """The harness's outcome, code and, per page the case names or the harness reports, the
    expected ledger facts beside the harness's values of the same members and its failure code."""
    facts: dict = {"outcome": result.get("outcome")}
    if result.get("code") is not None:
        facts["code"] = result["code"]
    rows = {row.get("page_id"): row for row in result.get("ledger") or [] if isinstance(row, dict)}
    expected = expect.get("ledger") or {}
    pages = list(expected) + [p for p in rows if p not in expected]
    ledger = []
    for page in pages[:MAX_PAGES]:
        want = expected.get(page)
        row = rows.get(page)
        keys = list(want or {}) or ["state", "revision"]
        if "failure_code" not in keys:
            keys.append("failure_code")
        ledger.append({"page_id": page, "expected": want,
                       "harness": None if row is None else {k: row.get(k, "<not reported>") for k in keys}})
    if ledger:
        facts["ledger"] = ledger
    if len(pages) > MAX_PAGES:
        facts["more_pages"] = len(pages) - MAX_PAGES
    return facts


def registration_facts(expect: dict, result: dict) -> dict:
    return {"registrable": {"expected": expect.get("registrable"), "harness": result.get("registrable")},
            "refusals": {"expected": expect.get("refusals", []),
                         "harness": [{"pointer": r.get("pointer"), "code": r.get("code")}
                                     for r in result.get("refusals", [])]}}


def lines(verdict) -> list[str]:
    """The detail as text lines (summary and JUnit)."""
    import json

    def j(value) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    out: list[str] = []
    facts = verdict.facts
    if "registrable" in facts:
        out.append(f"registrable: expected {j(facts['registrable']['expected'])}, the harness's {j(facts['registrable']['harness'])}")
        out.append(f"refusals expected:      {j(facts['refusals']['expected'])}")
        out.append(f"refusals (the harness): {j(facts['refusals']['harness'])}")
    elif facts:
        head = f"the harness's outcome: {facts.get('outcome')}"
        if "code" in facts:
            head += f" {facts['code']}"
        out.append(head)
        if facts.get("ledger"):
            out.append("ledger facts (expected | the harness's):")
            for row in facts["ledger"]:
                want = j(row["expected"]) if row["expected"] is not None else "(not named by the case)"
                have = j(row["harness"]) if row["harness"] is not None else "(no row)"
                out.append(f"  {row['page_id']}: {want} | {have}")
            if facts.get("more_pages"):
                out.append(f"  … {facts['more_pages']} more page(s)")
    if verdict.served:
        out.append(f"exchanges served in run {verdict.run} (method URL -> status, media type, body bytes):")
        for e in verdict.served:
            if "more" in e:
                out.append(f"  … {e['more']} more request(s)")
            elif "status" not in e:
                out.append(f"  {e['method']} {e['url']} ({e['note']})")
            else:
                note = f" ({e['note']})" if e.get("note") else ""
                out.append(f"  {e['method']} {e['url']} -> {e['status']}, {e['media_type'] or 'no Content-Type'}, "
                           f"{e['bytes']} B{note}")
    return out
