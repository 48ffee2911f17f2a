"""Canonical JSON: the one serialisation used wherever JSON is written or compared.

Sorted keys, no insignificant whitespace, UTF-8 text (non-ASCII kept as is), integers
only (the registered document carries no fractional number, REG-27). For the values this
project handles (strings, integers, booleans, null, arrays, objects) this coincides with
RFC 8785 (JCS) except for the ordering of keys outside the Basic Multilingual Plane.
"""

from __future__ import annotations

import json
from typing import Any


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def ordered_json(value: Any) -> str:
    """Compact JSON that keeps the caller's member order (the coverage block's order is part
    of the specification, D-56)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
