"""Which protocol version each expectation of a case needs (D-75).

Read from the protocol schema rather than listed here, so a ledger column added to a later
version cannot be compared against a harness that never promised it: v1's ledger row is
`$defs/run_ok/properties/ledger/items`, v2's is `$defs/ledger_row_v2`. Every other member
of a case's expectations (outcome, coverage, relation, requests, corrections, wire,
registration refusals) is v1. A `time_order` constraint needs the lowest version at which
both of its names are bound by a compared member (a relation placeholder, or a ledger fact
of that version).
"""

from __future__ import annotations

from functools import lru_cache

from conformance import PROTOCOL_VERSIONS, load_schema

LEDGER_KEY = "ledger"


@lru_cache(maxsize=None)
def ledger_members(version: int) -> frozenset[str]:
    """The ledger row members a harness answering `version` reports."""
    defs = load_schema("harness-protocol.schema.json")["$defs"]
    members = set(defs["run_ok"]["properties"]["ledger"]["items"]["properties"])
    if version >= 2:
        members |= set(defs["ledger_row_v2"]["properties"])
    return frozenset(members)


def fact_version(key: str) -> int | None:
    """The lowest protocol version whose ledger row carries `key` (None: no version does)."""
    return next((v for v in PROTOCOL_VERSIONS if key in ledger_members(v)), None)


def _names(text) -> set[str]:
    from conformance.compare import PLACEHOLDER

    return {m.group(1) for m in PLACEHOLDER.finditer(text)} if isinstance(text, str) else set()


def bound_names(data: dict, version: int) -> set[str]:
    """Timestamp names some member compared at `version` binds, anywhere in the case."""
    names: set[str] = set()
    for run in data.get("runs") or []:
        expect = run.get("expect") or {}
        names |= _names(expect.get("relation"))
        for facts in (expect.get(LEDGER_KEY) or {}).values():
            for key, value in facts.items():
                if key in ledger_members(version):
                    names |= _names(value)
    return names


def beyond(data: dict, version: int) -> list[tuple[int, str, int]]:
    """(run, member, version it needs) for every expectation `version` cannot express."""
    found: list[tuple[int, str, int]] = []
    if data.get("kind") != "runs":
        return found
    newest = max(PROTOCOL_VERSIONS)
    bound = {v: bound_names(data, v) for v in PROTOCOL_VERSIONS}
    for n, run in enumerate(data.get("runs") or [], 1):
        expect = run.get("expect") or {}
        for page, facts in (expect.get(LEDGER_KEY) or {}).items():
            for key in facts:
                need = fact_version(key) or newest
                if need > version:
                    found.append((n, f"ledger[{page}].{key}", need))
        for first, gap, second in expect.get("time_order") or []:
            need = next((v for v in PROTOCOL_VERSIONS if {first, second} <= bound[v]), newest)
            if need > version:
                found.append((n, f"time_order {second} >= {first} + {gap} s", need))
    return found


def minimum_protocol(data: dict) -> int:
    """The lowest protocol version at which every expectation of the case is compared."""
    return max([min(PROTOCOL_VERSIONS), *(need for _, _, need in beyond(data, min(PROTOCOL_VERSIONS)))])


def expectation_at(expect: dict, version: int, bound: set[str]) -> dict:
    """`expect` with what `version` cannot express taken out: ledger facts its rows do not
    carry (the page itself stays expected) and time orders between names it cannot bind."""
    out = dict(expect)
    if LEDGER_KEY in expect:
        out[LEDGER_KEY] = {page: {k: v for k, v in facts.items() if k in ledger_members(version)}
                           for page, facts in expect[LEDGER_KEY].items()}
    if "time_order" in expect:
        out["time_order"] = [c for c in expect["time_order"] if {c[0], c[2]} <= bound]
    return out
