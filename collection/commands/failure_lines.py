"""What the run summary and `status` say about failed pages (issue 24 point 9, D-45, D-62):
the first ten by name, and advice that fits the failure's class — a decode failure is the
recipe's (running again gives the same answer), a publisher error is retried, a block is
robots.txt or the User-Agent."""

from __future__ import annotations

import os
import shlex
from collections import Counter
from typing import Iterable, Mapping

from collection import codes

SHOWN = 10

RECIPE_FIX = "recipe"       # deterministic decode failure: fix the recipe
RETRIED = "retried"         # publisher or network error: the next run retries it
BLOCKED = "blocked"         # robots.txt, the User-Agent, the network policy
GONE = "gone"               # 404/410: rows kept


def kind_of(code: str | None, klass: str | None) -> str:
    if code in codes.DECODE_FAILURES:
        return RECIPE_FIX
    if klass == codes.GONE:
        return GONE
    if klass == codes.BLOCKED:
        return BLOCKED
    return RETRIED


def decode_command(entry: Mapping, body_path: str | None, recipe: str = "RECIPE", source: str | None = None) -> str:
    """How to reproduce a decode failure on the kept body (or on the page saved by hand)."""
    words = ["collection", "decode", recipe, body_path or "SAVED_PAGE", "--url", entry.get("url") or ""]
    if entry.get("media_type"):
        words += ["--media-type", entry["media_type"]]
    if source:
        words += ["--source", source]
    return " ".join(w if w in ("RECIPE", "SAVED_PAGE") else shlex.quote(w) for w in words)


def page_lines(entries: list[Mapping], generation_dir: str | None, *, recipe: str = "RECIPE",
               source: str | None = None, indent: str = "  ") -> list[str]:
    """The first SHOWN failed pages, one line each (code, URL, since when, attempts), with
    the `collection decode` line under a decode failure; then how many more."""
    out = []
    for entry in entries[:SHOWN]:
        attempts = entry.get("attempts")
        tries = "" if attempts is None else f", {attempts} attempt{'s' if attempts != 1 else ''}"
        out.append(f"{indent}failed {entry.get('failure_code')}: {entry.get('url')} "
                   f"(since {entry.get('since') or entry.get('failed_at')}{tries})")
        if entry.get("failure_code") in codes.DECODE_FAILURES:
            body = entry.get("body")
            path = os.path.join(generation_dir, body) if body and generation_dir else None
            command = decode_command(entry, path, recipe, source)
            out.append(f"{indent}  reproduce: {command}" if path else
                       f"{indent}  reproduce: save the page from its URL, then {command}")
    if len(entries) > SHOWN:
        out.append(f"{indent}… and {len(entries) - SHOWN:,} more failed pages (every one in --json)")
    return out


def advice_lines(by_code: Mapping[str, int]) -> list[str]:
    """One line per kind of failure present, most actionable first."""
    groups: dict[str, Counter] = {RECIPE_FIX: Counter(), BLOCKED: Counter(), RETRIED: Counter(), GONE: Counter()}
    for code, n in by_code.items():
        if code == "skipped_origin" or not n:
            continue
        groups[kind_of(code, _klass(code))][code] += n
    out = []
    if groups[RECIPE_FIX]:
        c = groups[RECIPE_FIX]
        out.append(f"{sum(c.values()):,} pages fail to decode ({', '.join(sorted(c))}): the pinned Reader gives the "
                   "same answer on every run, so running again will not help — fix the recipe (Reader options, "
                   "selectors, or the pin), reproducing each with the `collection decode` line shown")
    if groups[BLOCKED]:
        c = groups[BLOCKED]
        reasons = []
        if c.get("robots_disallowed"):
            reasons.append("robots.txt disallows them for our User-Agent token (`collection robots-check`)")
        if c.get("egress_refused"):
            reasons.append("their address is on a private network (map it with --resolve if intended)")
        if set(c) - {"robots_disallowed", "egress_refused"}:
            reasons.append("the origin refuses us (401/403/429 or a bot challenge): check the User-Agent token "
                           "(--user-agent-token, --user-agent-url) or ask the origin's operator")
        out.append(f"{sum(c.values()):,} pages blocked ({', '.join(sorted(c))}): " + "; ".join(reasons))
    if groups[RETRIED]:
        c = groups[RETRIED]
        out.append(f"{sum(c.values()):,} pages failed with publisher or network errors ({', '.join(sorted(c))}): "
                   "the next run retries them, oldest failure first")
    if groups[GONE]:
        c = groups[GONE]
        out.append(f"{sum(c.values()):,} pages gone ({', '.join(sorted(c))}): the publisher no longer serves them; "
                   "their rows are kept")
    return out


def _klass(code: str) -> str | None:
    try:
        return codes.liveness(code)
    except KeyError:
        return None


def codes_of(entries: Iterable[Mapping]) -> Counter:
    return Counter(e.get("failure_code") for e in entries if e.get("failure_code"))
