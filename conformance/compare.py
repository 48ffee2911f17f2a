"""Expected vs actual: each difference is a dict {what, expected, actual} (never prose only)."""

from __future__ import annotations

import csv
import io
import re
from datetime import datetime, timezone
from typing import Any, Iterable
from urllib.parse import urlsplit

from conformance.suite import SPEC_RUN_CODES

TS = "{{ts}}"
# {{ts}} any instant of the case's window; {{ts:NAME}} the same instant wherever NAME appears
# in the case (all runs, relation and ledger alike)
PLACEHOLDER = re.compile(r"\{\{ts(?::([^}]+))?\}\}")
_TS_RE = re.compile(r"\A(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?Z\Z")
DEFAULT_SLACK_SECONDS = 300


def parse_instant(text: Any) -> float | None:
    """Seconds since the epoch of an RFC 3339 UTC instant with a `Z` (D-02), or None when
    `text` is not one (a shape such as 9999-99-99T99:99:99Z is not an instant)."""
    if not isinstance(text, str):
        return None
    m = _TS_RE.match(text)
    if m is None:
        return None
    try:
        moment = datetime(*(int(g) for g in m.groups()[:6]), tzinfo=timezone.utc)
    except ValueError:
        return None
    return moment.timestamp() + (float(m.group(7)) if m.group(7) else 0.0)


class TimeBook:
    """The timestamps of one case, compared by value on the clock the harness was given.

    Inline: the virtual clock starts at `start` and each run may advance it
    (clock_advance_seconds); an instant written up to run n lies in [start, start + the
    advances so far + n * slack]. Loopback: the wall clock, [when the case began, now + 1 s].
    Named placeholders bind on first sight and must repeat exactly."""

    def __init__(self, start: float, *, virtual: bool = True, now=None) -> None:
        self.start = start
        self.virtual = virtual
        self.low = start
        self.high = start
        self.bound: dict[str, str] = {}
        self._now = now
        self.run = 0

    def begin_run(self, advance: float = 0, slack: float = DEFAULT_SLACK_SECONDS) -> None:
        self.run += 1
        if self.virtual:
            self.low += advance
            self.high += advance + slack

    def check(self, name: str | None, value: Any, where: str) -> dict | None:
        label = f"{{{{ts{':' + name if name else ''}}}}}"
        at = parse_instant(value)
        if at is None:
            return _diff(where, f"{label}: an RFC 3339 UTC instant (YYYY-MM-DDTHH:MM:SSZ)", value)
        high = self.high if self.virtual else (self._now() + 1.0 if self._now else float("inf"))
        if not self.start <= at <= high:
            lo = _fmt(self.start)
            hi = _fmt(high) if high != float("inf") else "now"
            return _diff(where, f"{label}: an instant between {lo} and {hi} ({'virtual' if self.virtual else 'wall'} clock)", value)
        if name:
            if name in self.bound and self.bound[name] != value:
                return _diff(where, f"{label}: the same instant as before, {self.bound[name]}", value)
            self.bound.setdefault(name, value)
        return None

    def order(self, constraints: list, where: str = "time_order") -> list[dict]:
        diffs = []
        for first, gap, second in constraints:
            a, b = parse_instant(self.bound.get(first)), parse_instant(self.bound.get(second))
            if a is None or b is None:
                continue      # not bound (an implementation's relation failed earlier): reported there
            if b - a < gap:
                diffs.append(_diff(f"{where}: {second} - {first}", f">= {gap} s", round(b - a, 3)))
        return diffs


def _fmt(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
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


def _rows(text: str) -> list[list[str]] | None:
    try:
        return list(csv.reader(io.StringIO(text, newline="")))
    except csv.Error:
        return None


def relation_matches(expected: str, actual: str, times: TimeBook | None = None) -> list[dict]:
    """Row-level differences (missing, extra, changed rows, keyed by page_id and
    page_ordinal), then the CSV bytes themselves (dialect: quoting, line ends, BOM).
    Placeholders are checked by value (see TimeBook)."""
    times = times if times is not None else TimeBook(0, virtual=False)
    exp_rows, act_rows = _rows(expected), _rows(actual)
    if act_rows is None:
        return [_diff("relation", "RFC 4180 CSV", actual[:300])]
    if not exp_rows or not act_rows:
        return [] if expected == actual else [_diff("relation", expected[:300], actual[:300])]
    header, act_header = exp_rows[0], act_rows[0]
    if header != act_header:
        return [_diff("relation header", header, act_header)]
    try:
        key_at = (header.index("page_id"), header.index("page_ordinal"))
    except ValueError:
        key_at = None

    def key(row: list[str], index: int) -> tuple:
        return tuple(row[k] for k in key_at) if key_at and len(row) == len(header) else ("line", index)

    exp_by = {key(r, i): r for i, r in enumerate(exp_rows[1:], 2)}
    act_by = {key(r, i): r for i, r in enumerate(act_rows[1:], 2)}
    diffs: list[dict] = []
    for k, row in exp_by.items():
        got = act_by.get(k)
        label = f"page_id {k[0]!r} ordinal {k[1]}" if key_at and k[0] != "line" else f"line {k[1]}"
        if got is None:
            diffs.append(_diff(f"relation: missing row ({label})", dict(zip(header, row)), None))
            continue
        if len(got) != len(header):
            diffs.append(_diff(f"relation: row ({label}) width", len(header), len(got)))
            continue
        changed_e, changed_a = {}, {}
        for column, want, have in zip(header, row, got):
            m = PLACEHOLDER.fullmatch(want)
            if m:
                problem = times.check(m.group(1), have, f"relation ({label}).{column}")
                if problem:
                    changed_e[column], changed_a[column] = problem["expected"], have
            elif want != have:
                changed_e[column], changed_a[column] = want, have
        if changed_e:
            diffs.append(_diff(f"relation: row ({label}) changed", changed_e, changed_a))
    for k, row in act_by.items():
        if k not in exp_by:
            label = f"page_id {k[0]!r} ordinal {k[1]}" if key_at and k[0] != "line" else f"line {k[1]}"
            diffs.append(_diff(f"relation: extra row ({label})", None, dict(zip(header, row))))
    if diffs:
        return diffs[:20]
    exp_keys = [key(r, i) for i, r in enumerate(exp_rows[1:], 2)]
    act_keys = [key(r, i) for i, r in enumerate(act_rows[1:], 2)]
    if exp_keys != act_keys:
        first = next(i for i, (a, b) in enumerate(zip(exp_keys, act_keys)) if a != b)
        return [_diff(f"relation row order (row {first + 2})", list(exp_keys[first]), list(act_keys[first]))]
    # same rows in the same order: the bytes must match too, placeholders taking the actual values
    values = iter([act_rows[i][j] for i, r in enumerate(exp_rows) for j, f in enumerate(r) if PLACEHOLDER.fullmatch(f)])
    rebuilt = PLACEHOLDER.sub(lambda m: next(values), expected)
    if rebuilt != actual:
        a, b = _first_difference(rebuilt, actual)
        return [_diff("relation bytes (CSV dialect: quoting, line ends, encoding)", a, b)]
    return []


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
                request_urls: list[str] | None = None, times: TimeBook | None = None) -> list[dict]:
    """One run's result against its expectation. `previous` holds earlier runs' results."""
    diffs: list[dict] = []
    times = times if times is not None else TimeBook(0, virtual=False)
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
        diffs.extend(relation_matches(expect["relation"], result["relation"], times))
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
            # members the harness's protocol cannot carry were taken out before (versions.expectation_at,
            # D-75); v1 rows may leave out their optional members, which then read as null
            got = row.get(key)
            m = PLACEHOLDER.fullmatch(want) if isinstance(want, str) else None
            if m:
                problem = times.check(m.group(1), got, f"ledger[{page_id}].{key}")
                if problem:
                    diffs.append(problem)
            elif key == "failure_code":
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
    if "time_order" in expect and times.virtual:
        diffs.extend(times.order(expect["time_order"]))
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
