"""The mechanism behind bench/mutation.py: a registry of faults and the monkeypatch helpers
that seed one into collection inside the harness process (no source file is edited).

bench/mutation.py (this project's faults) and bench/mutants_independent.py (faults written
from the specification alone by someone who never read collection/) both register here.
"""

from __future__ import annotations

import functools
import sys
from urllib.parse import urlsplit, urlunsplit

MUTANTS: dict[str, dict] = {}      # id -> {set, area, what, clauses, mode}
_APPLY: dict[str, callable] = {}


def mutant(mid: str, area: str, what: str, *, clauses: tuple[str, ...] = (), mode: str = "inline",
           fault_set: str = "ours"):
    """Register a fault. `fault_set` says who wrote it ("ours": this project's engineers,
    "independent": faults.json, written from the specification alone); `mode` is where
    its author expected it to show."""
    def register(fn):
        if mid in MUTANTS:
            raise ValueError(f"mutant {mid!r} registered twice")
        MUTANTS[mid] = {"set": fault_set, "area": area, "what": what, "clauses": list(clauses), "mode": mode}
        _APPLY[mid] = fn
        return fn
    return register


def _replace_everywhere(original, replacement) -> None:
    """Rebind every `collection.*` module global that names `original` (names imported with
    `from x import y` are copies, so patching the defining module alone is not enough)."""
    import collection.run.loop  # noqa: F401  (load the whole graph first)
    for name, module in list(sys.modules.items()):
        if name == "collection" or name.startswith("collection."):
            for attr, value in list(vars(module).items()):
                if value is original:
                    setattr(module, attr, replacement)


def _wrap(module_name: str, attr: str, make):
    import importlib
    module = importlib.import_module(module_name)
    original = getattr(module, attr)
    _replace_everywhere(original, make(original))



# --- helpers shared by both fault sets ---------------------------------------------------
def _reorder(fn):
    def make(original):
        @functools.wraps(original)
        def work_order(ledger, revisit, now):
            return fn(original(ledger, revisit, now))
        return work_order
    _wrap("collection.merge.planner", "work_order", make)


def _split(choices):
    return ([c for c in choices if c.why == "pending"], [c for c in choices if c.why == "failed"],
            [c for c in choices if c.why == "revisit"])


def _provenance(transform):
    def make(original):
        @functools.wraps(original)
        def provenance_row(reader_row, page_id, page_url, fetched_at, sha, revision, discovered_at, ordinal):
            args = transform(list((reader_row, page_id, page_url, fetched_at, sha, revision, discovered_at, ordinal)))
            return original(*args)
        return provenance_row
    _wrap("collection.merge.relation", "provenance_row", make)


def _coverage(transform):
    import collection.merge.coverage as cov
    original = cov.Coverage.as_dict

    def as_dict(self):
        return transform(original(self))
    cov.Coverage.as_dict = as_dict


def _canonical(transform):
    def make(original):
        @functools.wraps(original)
        def canonicalise(link, base=None):
            return transform(original(link, base), link)
        return canonicalise
    _wrap("collection.urls", "canonicalise", make)


def apply(mid: str) -> None:
    """Seed fault `mid` (called by the harness before any case runs)."""
    if mid not in _APPLY:
        raise SystemExit(f"unknown mutant {mid!r}")
    _APPLY[mid]()


