"""Loading the suite and linting it (`python -m conformance check`), clause bookkeeping."""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable
from urllib.parse import urlsplit

from conformance import CASES_DIR, CLAUSES_FILE, UNOBSERVABLE_FILE, load_schema

# Run-level refusal codes the specification itself names; compared whatever the implementation.
SPEC_RUN_CODES = frozenset({
    "COLLECTION_DISCOVERY_FAILED", "COLLECTION_MERGE_INVALID", "RESYNC_REQUIRED",
    "HOSTED_COLLECTION_UNSUPPORTED", "TRANSFORM_COLUMN_TYPE_MISMATCH",
})


@dataclass(frozen=True)
class Case:
    id: str
    path: Path
    area: str
    data: dict

    @property
    def kind(self) -> str:
        return self.data["kind"]

    @property
    def clauses(self) -> tuple[str, ...]:
        return tuple(self.data["clauses"])

    @property
    def modes(self) -> tuple[str, ...]:
        return tuple(self.data.get("modes", ("inline", "loopback")))

    @property
    def requires(self) -> tuple[str, ...]:
        return tuple(self.data.get("requires", ()))


def case_files(root: Path = CASES_DIR) -> list[Path]:
    # iterdir, not glob: inside collection-conformance.pyz the root is a zipfile.Path
    return sorted((f for d in root.iterdir() if d.is_dir() for f in d.iterdir() if f.name.endswith(".json")),
                  key=lambda p: (p.parent.name, p.name))


def _rel(path, root) -> str:
    return f"{path.parent.name}/{path.name}"


def load_cases(root: Path = CASES_DIR) -> list[Case]:
    cases = []
    for path in case_files(root):
        data = json.loads(path.read_text(encoding="utf-8"))
        cases.append(Case(data.get("id", path.name[:-5]), path, path.parent.name, data))
    return cases


def clauses() -> list[dict]:
    return json.loads(CLAUSES_FILE.read_text(encoding="utf-8"))["clauses"]


def unobservable() -> dict[str, str]:
    return {row["id"]: row["reason"] for row in json.loads(UNOBSERVABLE_FILE.read_text(encoding="utf-8"))["clauses"]}


def _validator(name: str):
    import jsonschema
    from referencing import Registry, Resource

    schema = load_schema(name)
    resources = [(load_schema(n)["$id"], Resource.from_contents(load_schema(n)))
                 for n in ("fixture.schema.json", "conformance-case.schema.json", "harness-protocol.schema.json")]
    registry = Registry().with_resources(resources)
    # relative refs ("fixture.schema.json") resolve against the $id's base
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema, registry=registry, format_checker=cls.FORMAT_CHECKER)


_CASE_VALIDATOR = None


def case_validator():
    global _CASE_VALIDATOR
    if _CASE_VALIDATOR is None:
        _CASE_VALIDATOR = _validator("conformance-case.schema.json")
    return _CASE_VALIDATOR


def _exchange_problems(exchanges: list, where: str) -> Iterable[str]:
    """What a fixture loader would refuse beyond the schema: bodies must decode, a URL is
    recorded once (after the canonical form's lowercasing), bodies are inline (a case is
    one file)."""
    seen: set[str] = set()
    for i, exchange in enumerate(exchanges):
        url = exchange["request"]["url"]
        parts = urlsplit(url)
        key = f"{parts.scheme.lower()}://{(parts.hostname or '').lower()}{parts.path}?{parts.query}"
        if key in seen:
            yield f"{where}/{i}: {url} recorded twice"
        seen.add(key)
        for j, response in enumerate(exchange.get("responses", [exchange.get("response")])):
            body = (response or {}).get("body") or {}
            if "file" in body:
                yield f"{where}/{i}: body files are not allowed in a case (keep it one file)"
            if "base64" in body:
                try:
                    base64.b64decode(body["base64"], validate=True)
                except ValueError:
                    yield f"{where}/{i}/responses/{j}: base64 body does not decode"
        if exchange.get("per") == "run":
            yield f"{where}/{i}: per: run is meaningless in a case (each run has its own exchanges)"


def check(root: Path = CASES_DIR) -> list[str]:
    """Every problem with the suite itself; empty when the suite is sound."""
    problems: list[str] = []
    known = {c["id"] for c in clauses()}
    try:
        reasons = unobservable()
    except (OSError, ValueError, KeyError) as exc:
        reasons = {}
        problems.append(f"unobservable.json: {exc}")
    for cid in reasons:
        if cid not in known:
            problems.append(f"unobservable.json: {cid} is not a clause")
    validator = case_validator()
    ids: dict[str, Path] = {}
    covered: set[str] = set()
    files = case_files(root)
    if not files:
        problems.append("no cases")
    for path in files:
        rel = _rel(path, root)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            problems.append(f"{rel}: not JSON: {exc}")
            continue
        for error in sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path)):
            pointer = "/" + "/".join(str(p) for p in error.absolute_path)
            problems.append(f"{rel}: schema: {pointer}: {error.message[:200]}")
        if not isinstance(data, dict):
            continue
        cid = data.get("id")
        if cid in ids:
            problems.append(f"{rel}: id {cid!r} also used by {_rel(ids[cid], root)}")
        elif isinstance(cid, str):
            ids[cid] = path
        if isinstance(cid, str) and path.name[:-5] != cid:
            problems.append(f"{rel}: file name must be the id ({cid}.json)")
        for clause in data.get("clauses", []):
            if clause not in known:
                problems.append(f"{rel}: clause {clause} does not exist")
            covered.add(clause)
        runs = data.get("runs") or []
        for n, run in enumerate(runs, 1):
            if not isinstance(run, dict):
                continue
            problems.extend(f"{rel}: {p}" for p in _exchange_problems(run.get("exchanges") or [], f"/runs/{n - 1}/exchanges"))
            expect = run.get("expect") or {}
            if expect.get("outcome") == "ok":
                if "relation" not in expect and "relation_same_as_run" not in expect:
                    problems.append(f"{rel}: run {n} expects ok but states no relation")
                if "ledger" not in expect:
                    problems.append(f"{rel}: run {n} expects ok but states no ledger facts")
                if "requests" not in expect:
                    problems.append(f"{rel}: run {n} expects ok but states no requests")
                same = expect.get("relation_same_as_run")
                if same is not None and not (1 <= same < n):
                    problems.append(f"{rel}: run {n}: relation_same_as_run {same} is not an earlier run")
        if data.get("kind") == "registration":
            exp = data.get("expect") or {}
            if exp.get("registrable") is False and not exp.get("refusals"):
                problems.append(f"{rel}: a refused registration case must name at least one refusal pointer")
    problems.extend(_protocol_problems())
    for cid in sorted(reasons):
        if cid in covered:
            problems.append(f"unobservable.json: {cid} has a case; remove it from the table")
    return problems


def _protocol_problems() -> list[str]:
    """Every ledger fact a case may expect is a member of some protocol version's ledger row,
    so the runner knows which version can express it (D-75)."""
    from conformance.versions import fact_version

    facts = load_schema("conformance-case.schema.json")["$defs"]["ledger_fact"]["properties"]
    return [f"conformance-case.schema.json: ledger fact {key!r} is in no protocol version's ledger row"
            for key in sorted(facts) if fact_version(key) is None]


def coverage_table(cases: list[Case] | None = None) -> tuple[dict[str, list[str]], list[dict], dict[str, str]]:
    """clause id → case ids, all clauses, the unobservable table."""
    cases = load_cases() if cases is None else cases
    by_clause: dict[str, list[str]] = {}
    for case in cases:
        for clause in case.clauses:
            by_clause.setdefault(clause, []).append(case.id)
    return by_clause, clauses(), unobservable()


def group_of(clause_id: str) -> str:
    return re.match(r"[A-Z]+", clause_id).group(0)
