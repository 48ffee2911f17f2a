"""Expected vs actual: each difference is a dict {what, expected, actual} (never prose only)."""

from __future__ import annotations

import re
from typing import Any, Iterable
from urllib.parse import urlsplit

from conformance.suite import SPEC_RUN_CODES

TS = "{{ts}}"
_TS_RE = re.compile(r"\A\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z\Z")
COVERAGE_ORDER = ("discovered", "discovery_requests", "discovery_complete", "discovery_failure",
                  "duplicates_dropped", "known", "fetched_this_run", "unchanged", "changed",
                  "failed_this_run", "pending", "failed", "skipped", "budget_exhausted", "complete")
CODES_CAPABILITY = "codes:collection-v1"


def _diff(what: str, expected: Any, actual: Any) -> dict:
    return {"what": what, "expected": expected, "actual": actual}


def _count_ok(expected: Any, actual: Any) -> bool:
    if isinstance(expected, dict) and "between" in expected:
        low, high = expected["between"]
        return isinstance(actual, int) and not isinstance(actual, bool) and low <= actual <= high
    if isinstance(expected, bool) or isinstance(actual, bool):
        return expected is actual
    return expected == actual and type(expected) is type(actual)


def compare_registration(expect: dict, result: dict, capabilities: frozenset[str]) -> list[dict]:
    diffs = []
    if result["registrable"] != expect["registrable"]:
        diffs.append(_diff("registrable", expect["registrable"], result["registrable"]))
        return diffs
    actual = result.get("refusals", [])
    pointers = {r["pointer"] for r in actual}
    by_pointer: dict[str, set[str]] = {}
    for r in actual:
        by_pointer.setdefault(r["pointer"], set()).add(r["code"])
    for refusal in expect.get("refusals", []):
        pointer = refusal["pointer"]
        if pointer not in pointers:
            diffs.append(_diff(f"refusal at {pointer or '/'}", refusal, sorted(pointers)))
            continue
        code = refusal.get("code")
        if code and (CODES_CAPABILITY in capabilities or code in SPEC_RUN_CODES) and code not in by_pointer[pointer]:
            diffs.append(_diff(f"refusal code at {pointer or '/'}", code, sorted(by_pointer[pointer])))
    return diffs


def relation_matches(expected: str, actual: str) -> list[dict]:
    exp_lines = expected.split("\n")
    act_lines = actual.split("\n")
    diffs = []
    for i in range(max(len(exp_lines), len(act_lines))):
        e = exp_lines[i] if i < len(exp_lines) else None
        a = act_lines[i] if i < len(act_lines) else None
        if e == a:
            continue
        if e is not None and a is not None and TS in e and _line_matches(e, a):
            continue
        diffs.append(_diff(f"relation line {i + 1}", e, a))
        if len(diffs) >= 10:
            break
    return diffs


def _line_matches(pattern: str, line: str) -> bool:
    # {{ts}} never occurs in a quoted field (timestamps need no quoting), so a split on the
    # literal text is enough: the pieces between placeholders must match exactly, and each
    # placeholder must match one timestamp.
    pieces = pattern.split(TS)
    regex = "".join(re.escape(p) + ("(\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(?:\\.\\d+)?Z)" if k < len(pieces) - 1 else "")
                    for k, p in enumerate(pieces))
    return re.fullmatch(regex, line) is not None


def _is_robots(url: str) -> bool:
    return urlsplit(url).path == "/robots.txt"


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def compare_requests(expect: dict, urls: list[str]) -> list[dict]:
    diffs = []
    pages = [u for u in urls if not _is_robots(u)]
    if "count" in expect and not _count_ok(expect["count"], len(pages)):
        diffs.append(_diff("requests.count", expect["count"], len(pages)))
    if "order" in expect and expect["order"] != pages:
        first = next((i for i, (e, a) in enumerate(zip(expect["order"], pages)) if e != a),
                     min(len(expect["order"]), len(pages)))
        diffs.append(_diff(f"requests.order[{first}]",
                           expect["order"][first] if first < len(expect["order"]) else None,
                           pages[first] if first < len(pages) else None))
    for url in expect.get("include", []):
        if url not in pages:
            diffs.append(_diff("requests.include", url, None))
    for url in expect.get("never", []):
        if url in urls:
            diffs.append(_diff("requests.never", f"never {url}", url))
    if "max_per_url" in expect:
        counts: dict[str, int] = {}
        for url in pages:
            counts[url] = counts.get(url, 0) + 1
        for url, n in sorted(counts.items()):
            if n > expect["max_per_url"]:
                diffs.append(_diff(f"requests to {url}", f"<= {expect['max_per_url']}", n))
    for origin, count in expect.get("robots", {}).items():
        n = sum(1 for u in urls if _is_robots(u) and _origin(u) == origin)
        if not _count_ok(count, n):
            diffs.append(_diff(f"robots.txt requests to {origin}", count, n))
    return diffs


def compare_run(expect: dict, result: dict, *, capabilities: frozenset[str], previous: list[dict | None],
                request_urls: list[str] | None = None) -> list[dict]:
    """One run's result against its expectation. `previous` holds earlier runs' results."""
    diffs: list[dict] = []
    if result["outcome"] != expect["outcome"]:
        diffs.append(_diff("outcome", expect["outcome"] + (f" {expect.get('code')}" if expect.get("code") else ""),
                           result["outcome"] + (f" {result.get('code')}" if result.get("code") else "")))
        return diffs
    urls = request_urls if request_urls is not None else [r["url"] for r in result.get("requests") or []]
    if expect["outcome"] == "refused":
        if result.get("code") != expect["code"]:
            diffs.append(_diff("refusal code", expect["code"], result.get("code")))
        if "requests" in expect:
            diffs.extend(compare_requests(expect["requests"], urls))
        return diffs
    coverage = result["coverage"]
    keys = list(coverage)
    if keys != list(COVERAGE_ORDER):
        diffs.append(_diff("coverage members (in order)", list(COVERAGE_ORDER), keys))
    for name in COVERAGE_ORDER:
        if name not in expect.get("coverage", {}):
            continue
        want, got = expect["coverage"][name], coverage.get(name, "<absent>")
        if name in ("discovery_complete", "complete", "discovery_failure", "budget_exhausted"):
            if want != got or type(want) is not type(got):
                diffs.append(_diff(f"coverage.{name}", want, got))
        elif not _count_ok(want, got):
            diffs.append(_diff(f"coverage.{name}", want, got))
    if "truncated" in expect and expect["truncated"] is not result["truncated"]:
        diffs.append(_diff("truncated", expect["truncated"], result["truncated"]))
    if "relation" in expect:
        diffs.extend(relation_matches(expect["relation"], result["relation"]))
    same = expect.get("relation_same_as_run")
    if same is not None:
        earlier = previous[same - 1] if same - 1 < len(previous) else None
        if earlier is None or earlier.get("relation") != result["relation"]:
            first = _first_difference(earlier.get("relation", "") if earlier else "", result["relation"])
            diffs.append(_diff(f"relation bytes same as run {same}", first[0], first[1]))
    ledger = {row["page_id"]: row for row in result["ledger"]}
    for page_id, facts in expect.get("ledger", {}).items():
        row = ledger.get(page_id)
        if row is None:
            diffs.append(_diff(f"ledger[{page_id}]", facts, None))
            continue
        for key, want in facts.items():
            got = row.get(key)
            if key == "failure_code":
                if (want is None) != (got is None):
                    diffs.append(_diff(f"ledger[{page_id}].failure_code", want, got))
                elif want is not None and (CODES_CAPABILITY in capabilities or want == "skipped_origin") and want != got:
                    diffs.append(_diff(f"ledger[{page_id}].failure_code", want, got))
            elif want != got:
                diffs.append(_diff(f"ledger[{page_id}].{key}", want, got))
    if "ledger_pages" in expect and sorted(expect["ledger_pages"]) != sorted(ledger):
        diffs.append(_diff("ledger pages", sorted(expect["ledger_pages"]), sorted(ledger)))
    if "corrections" in expect and sorted(expect["corrections"]) != sorted(result.get("corrections") or []):
        diffs.append(_diff("corrections", sorted(expect["corrections"]), sorted(result.get("corrections") or [])))
    if "requests" in expect:
        diffs.extend(compare_requests(expect["requests"], urls))
    return diffs


def _first_difference(a: str, b: str) -> tuple[str | None, str | None]:
    al, bl = a.split("\n"), b.split("\n")
    for x, y in zip(al, bl):
        if x != y:
            return x, y
    if len(al) != len(bl):
        return (al[len(bl)] if len(al) > len(bl) else None), (bl[len(al)] if len(bl) > len(al) else None)
    return None, None


def compare_wire(expect: dict, seen: list[dict], allowed_hosts: Iterable[str] | None = None) -> list[dict]:
    """Loopback: what the fixture server saw. `seen` entries: t, host, target, conn, headers."""
    diffs = []
    gap = expect.get("min_gap_seconds")
    if gap is not None:
        last: dict[str, float] = {}
        for r in seen:
            if r["host"] in last and r["t"] - last[r["host"]] < gap:
                diffs.append(_diff(f"gap between requests to {r['host']}", f">= {gap}", round(r["t"] - last[r["host"]], 4)))
                break
            last[r["host"]] = r["t"]
    limit = expect.get("max_connections_per_origin")
    if limit is not None:
        # concurrent connections: a connection is open from its first to its last request
        spans: dict[tuple[str, int], list[float]] = {}
        for r in seen:
            span = spans.setdefault((r["host"], r["conn"]), [r["t"], r["t_end"]])
            span[1] = max(span[1], r["t_end"])
        by_host: dict[str, list[tuple[float, int]]] = {}
        for (host, _), (a, b) in spans.items():
            by_host.setdefault(host, []).extend([(a, 1), (b, -1)])
        for host, events in by_host.items():
            open_now = peak = 0
            for _, delta in sorted(events, key=lambda e: (e[0], e[1])):
                open_now += delta
                peak = max(peak, open_now)
            if peak > limit:
                diffs.append(_diff(f"concurrent connections to {host}", f"<= {limit}", peak))
    if expect.get("robots_first"):
        robots_seen: set[str] = set()
        for r in seen:
            if r["target"].split("?")[0] == "/robots.txt":
                robots_seen.add(r["host"])
            elif r["host"] not in robots_seen:
                diffs.append(_diff(f"robots.txt of {r['host']} before {r['target']}", "robots.txt first", r["target"]))
                break
    if expect.get("no_credentials"):
        for r in seen:
            names = {k.lower() for k, _ in r["headers"]}
            bad = names & {"authorization", "cookie", "proxy-authorization"}
            if bad or r.get("method", "GET") != "GET":
                diffs.append(_diff(f"request {r['target']}", "credential-free GET", f"{r.get('method')} {sorted(bad)}"))
                break
    pattern = expect.get("user_agent_pattern")
    if pattern:
        for r in seen:
            ua = next((v for k, v in r["headers"] if k.lower() == "user-agent"), "")
            if not re.fullmatch(pattern, ua):
                diffs.append(_diff("User-Agent", pattern, ua))
                break
    return diffs
