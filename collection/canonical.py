"""Canonical JSON: the one serialisation used wherever JSON is written or compared.

Sorted keys, no insignificant whitespace, UTF-8 text (non-ASCII kept as is), integers
only (the registered document carries no fractional number, REG-27). For the values this
project handles (strings, integers, booleans, null, arrays, objects) this coincides with
RFC 8785 (JCS) except for the ordering of keys outside the Basic Multilingual Plane.
"""

from __future__ import annotations

import json
import re
from typing import Any

# JSON may escape a lone surrogate ("\\ud800") that no UTF-8 file can hold.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD, as a UTF-8 decoder replaces a
    broken sequence: what a listing or a page says becomes text that every state file,
    the relation and the run record can hold (the Readers do the same)."""
    if text.isascii():
        return text
    return _LONE_SURROGATE.sub("\ufffd", text)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def ordered_json(value: Any) -> str:
    """Compact JSON that keeps the caller's member order (the coverage block's order is part
    of the specification, D-56)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
