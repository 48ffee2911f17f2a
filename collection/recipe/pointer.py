"""RFC 6901 JSON Pointers (pure).

Registration checks a pointer's syntax (D-14); discovery evaluates records, link,
identity, revision and cursor pointers against listing bodies (DISC-07 to DISC-11,
PAG-11). One parser means a pointer that registers is the pointer the run evaluates.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["PointerMissing", "parse_pointer", "resolve", "resolve_or", "escape_token", "MISSING", "pointer_hint"]

# RFC 6901 §4: an array index is "0" or digits without a leading zero; "-" names the
# element after the last one, which never exists when reading.
_ARRAY_INDEX = re.compile(r"(?:0|[1-9][0-9]*)\Z")
_BAD_ESCAPE = re.compile(r"~(?![01])")


class PointerMissing(LookupError):
    """The pointer names nothing in this document."""


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def parse_pointer(text: str) -> tuple[str, ...]:
    """The reference tokens of `text`; `""` (the whole document) is the empty tuple.

    Raises ValueError for text that is not RFC 6901 syntax: a non-empty pointer must start
    with "/", and "~" may only appear as "~0" or "~1".
    """
    if not isinstance(text, str):
        raise ValueError("a JSON Pointer is a string")
    if text == "":
        return ()
    if not text.startswith("/"):
        raise ValueError(f"JSON Pointer {text!r} must be empty or start with '/'")
    if _BAD_ESCAPE.search(text):
        raise ValueError(f"JSON Pointer {text!r} has '~' not followed by 0 or 1")
    # ~1 before ~0, so "~01" stays the literal "~1" (RFC 6901 §4).
    return tuple(token.replace("~1", "/").replace("~0", "~") for token in text[1:].split("/"))


def escape_token(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def resolve(doc: Any, tokens: tuple[str, ...]) -> Any:
    """The value `tokens` names inside `doc` (parsed JSON); raises PointerMissing."""
    value = doc
    for token in tokens:
        if isinstance(value, dict):
            if token not in value:
                raise PointerMissing(token)
            value = value[token]
        elif isinstance(value, list):
            if not _ARRAY_INDEX.match(token):
                raise PointerMissing(token)
            index = int(token)
            if index >= len(value):
                raise PointerMissing(token)
            value = value[index]
        else:
            raise PointerMissing(token)
    return value


def resolve_or(doc: Any, tokens: tuple[str, ...], default: Any = MISSING) -> Any:
    """`resolve`, answering `default` (MISSING unless given) where the pointer names nothing."""
    try:
        return resolve(doc, tokens)
    except PointerMissing:
        return default


_PATH_STEP = re.compile(r"\[(\d+|'[^']*'|\"[^\"]*\")\]|([^.\[\]]+)")


def pointer_hint(text: str) -> str | None:
    """The RFC 6901 pointer a malformed pointer most likely means, or None.

    Authors coming from dlt, jq or JSONPath write `meta.next_cursor`, `.meta.next_cursor`,
    `$.meta.next_cursor` or `data[0].id`; each means `/meta/next_cursor` (`/data/0/id`).
    A pointer with a stray `~` means the same text with `~` escaped as `~0`.
    """
    if not isinstance(text, str) or text == "":
        return None
    if text.startswith("/"):
        return text.replace("~", "~0").replace("~00", "~0").replace("~01", "~1") if _BAD_ESCAPE.search(text) else None
    body = text[1:] if text.startswith("$") else text
    body = body.lstrip(".")
    if not body:
        return ""
    if "/" in body:
        return pointer_hint("/" + body) or "/" + body      # `meta/next_cursor`: the leading / forgotten
    tokens: list[str] = []
    position = 0
    for match in _PATH_STEP.finditer(body):
        if body[position:match.start()].strip("."):
            return None
        position = match.end()
        token = match.group(1) or match.group(2)
        tokens.append(token[1:-1] if token[:1] in "'\"" else token)
    if body[position:].strip("."):
        return None
    return "".join("/" + escape_token(token) for token in tokens)
