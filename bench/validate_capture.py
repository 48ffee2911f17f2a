"""pytest plugin for bench/validate_digest.py --captured: records every input the tests hand to the
transform contract, the SQL parser and registration of a document with tables, one JSON line each,
so the digest can replay the test suites' refusal cases against changed code. Record once, on the
baseline; the digest replays the same file on every version it compares.

    CAPTURE_OUT=/tmp/captured.jsonl PYTHONPATH=.:bench .venv/bin/python -m pytest -q -n 0 \\
        -p validate_capture tests/test_transform_*.py tests/test_registration.py tests/test_fix_messages.py
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any, Callable

import collection.recipe.registration as registration
import collection.transform.contract as contract
import collection.transform.sqlparse as sqlparse

_OUT = open(os.environ.get("CAPTURE_OUT", "/tmp/captured.jsonl"), "a")


def _record(kind: str, **members: Any) -> None:
    _OUT.write(json.dumps({"kind": kind, **members}, sort_keys=True, default=list) + "\n")


def _wrap(module: Any, name: str, record: Callable[..., None]) -> None:
    """Replace module.name by a function that records its arguments, then calls the original."""
    original = getattr(module, name)

    def recorded(*args: Any, **kwargs: Any) -> Any:
        try:
            record(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - recording must never change what the test sees
            _record("capture_error", name=name, error=repr(e))
        return original(*args, **kwargs)

    recorded.__wrapped__ = original
    setattr(module, name, recorded)


def _sources(sources: Any) -> Any:
    return {k: list(v) for k, v in sources.items()} if sources is not None else None


def _registered(data: bytes | str) -> None:
    blob = data.encode() if isinstance(data, str) else data
    if b'"tables"' in blob or b'"sql"' in blob:
        _record("register_bytes", data_b64=base64.b64encode(blob).decode())


_wrap(contract, "check_table", lambda t, sql, d, s: _record(
    "check_table", table=t, sql=sql, declared=[list(x) for x in d], sources=_sources(s)))
_wrap(contract, "statement_findings", lambda t, sql, s: _record(
    "statement_findings", table=t, sql=sql, sources=_sources(s)))
_wrap(contract, "compare_columns", lambda t, sql, d, a, sources=None: _record(
    "compare_columns", table=t, sql=sql, declared=[list(x) for x in d], actual=[list(x) for x in a],
    sources=_sources(sources)))
_wrap(contract, "infer_columns", lambda sql, s: _record("infer_columns", sql=sql, sources=_sources(s)))
_wrap(sqlparse, "parse", lambda sql: _record("parse", sql=sql))
_wrap(registration, "register_bytes", _registered)
