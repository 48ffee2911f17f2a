"""The mechanism behind audit/mutation.py: a registry of faults and the monkeypatch helpers
that seed one into collection inside the harness process (no source file is edited).

audit/mutation.py (this project's faults) and audit/mutants_independent.py (faults written
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
    "independent": faults/independent.json, written from the specification alone); `mode` is where
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




def _drop_rows(which):
    """Rows of pages which(page_id, prepared, results) names are left out of the merged relation."""
    import collection.merge.engine as M
    original_merge, original_iter = M.merge, M.iter_pages
    dropped: set[str] = set()

    def merge(prepared, results, *a, **kw):
        results = list(results)
        dropped.clear()
        dropped.update(which(prepared, results))
        return original_merge(prepared, results, *a, **kw)

    def iter_pages(stream, cols, **kw):
        for page_id, rows in original_iter(stream, cols, **kw):
            if page_id not in dropped:
                yield page_id, rows
    _replace_everywhere(original_merge, merge)
    _replace_everywhere(original_iter, iter_pages)


def failures_use_fetches() -> None:
    """Failed fetches use up max_fetches_per_run (against D-15)."""
    import collection.merge.planner as planner
    original = planner.Planner.report

    def report(self, result):
        original(self, result)
        if result.outcome != "fetched":
            self.fetched += 1
    planner.Planner.report = report


# --- registration: the schema, the refusals, the document as read -------------------------
def schema_members(name: str, where=lambda sub: True) -> list[dict]:
    """Every subschema of source.schema.json describing a member `name` (edited in place
    before any validator is built: the harness seeds the fault before the first case)."""
    from collection.recipe.resources import load_schema

    found: list[dict] = []

    def walk(node) -> None:
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict) and isinstance(props.get(name), dict) and where(props[name]):
                found.append(props[name])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
    walk(load_schema("source.schema.json"))
    if not found:
        raise LookupError(f"no schema member {name!r}")
    return found


def schema_edit(name: str, where=lambda sub: True, **changes) -> None:
    """Change (value) or drop (None) keywords of member `name` in the schema."""
    for sub in schema_members(name, where):
        for key, value in changes.items():
            if value is None:
                sub.pop(key, None)
            else:
                sub[key] = value


def reg_post(fn) -> None:
    """Rewrite a source document's refusals: fn(doc, refusals) -> refusals. A document left
    without refusals registers (its model built as registration would have)."""
    import collection.recipe.registration as R
    original = R.register_value

    def register_value(parsed):
        result = original(parsed)
        doc = parsed.value
        if not isinstance(doc, dict) or "connector" not in doc:
            return result
        out = list(fn(doc, list(result.refusals)))
        if out == list(result.refusals):
            return result
        if out:
            return R.Registration(R.SOURCE, tuple(out))
        _, reader = R._reader_rules(doc)
        return R.Registration(R.SOURCE, (), source=R.source_from(doc, reader))
    _replace_everywhere(original, register_value)


def reg_drop(code: str, when=lambda doc, refusal: True) -> None:
    reg_post(lambda doc, rs: [r for r in rs if not (r.code == code and when(doc, r))])


def reg_add(code: str, pointer: str, when) -> None:
    from collection.recipe.refusal import Refusal
    reg_post(lambda doc, rs: rs + [Refusal(code, pointer, "seeded fault", "seeded fault")] if when(doc) else rs)


def reg_pre(fn) -> None:
    """Change the document before registration reads it: fn(doc) edits the parsed JSON in place."""
    import copy
    import json as _json

    import collection.recipe.registration as R
    original = R.register_bytes

    def register_bytes(data):
        try:
            doc = _json.loads(data)
        except ValueError:
            return original(data)
        edited = copy.deepcopy(doc)
        if isinstance(edited, dict):
            fn(edited)
        if edited == doc:
            return original(data)
        return original(_json.dumps(edited, ensure_ascii=False, indent=1))
    _replace_everywhere(original, register_bytes)


def dig(doc, *path, default=None):
    for part in path:
        if isinstance(doc, dict) and part in doc:
            doc = doc[part]
        elif isinstance(doc, list) and isinstance(part, int) and part < len(doc):
            doc = doc[part]
        else:
            return default
    return doc
