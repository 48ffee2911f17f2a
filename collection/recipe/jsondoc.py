"""Reading a recipe's bytes as strict JSON, and finding members by line and column (pure).

A registered document is stricter than JSON: no repeated member names (the document
would be ambiguous), no number written with a fraction or exponent anywhere (REG-27,
D-41 — found at the token level, since `1.0` parses to a value equal to 1), no integer
outside the safe range, no absurd nesting. The fast path is the C parser with hooks;
only when something must be reported does the slower positional scan run, to give every
refusal the line and column of the member it names.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

from collection.recipe.pointer import escape_token

MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
MAX_DEPTH = 64
SAFE_INTEGER = 2**53 - 1


@dataclass(frozen=True)
class Problem:
    """Something wrong with the document as JSON; `code` is from collection.codes."""

    code: str
    pointer: str
    message: str
    line: int | None
    column: int | None


class Unreadable(ValueError):
    """The bytes are not a JSON document at all; nothing else can be said about them."""

    def __init__(self, problem: Problem):
        super().__init__(problem.message)
        self.problem = problem


class _Flags:
    """What the C parser's hooks noticed; the positional scan then says where."""

    def __init__(self) -> None:
        self.suspicious = False

    def pairs(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(pairs)
        if len(result) != len(pairs):
            self.suspicious = True
        return result

    def fraction(self, text: str) -> float:
        self.suspicious = True
        try:
            return float(text)
        except (ValueError, OverflowError):  # pragma: no cover - float() accepts every JSON number
            return 0.0

    def integer(self, text: str) -> int:
        if len(text) > 17:
            self.suspicious = True
            if len(text) > 400:  # past int()'s digit limit; its exact value no longer matters
                return SAFE_INTEGER + 1
        value = int(text)
        if not -SAFE_INTEGER <= value <= SAFE_INTEGER:
            self.suspicious = True
        return value

    @staticmethod
    def constant(name: str) -> float:
        raise ValueError(f"{name} is not JSON")


class LineIndex:
    """Offsets of line starts, to turn a character offset into (line, column), both 1-based."""

    def __init__(self, text: str):
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect_right(self._starts, offset)
        return line, offset - self._starts[line - 1] + 1

    def offset(self, line: int, column: int) -> int:
        """The character offset of a (line, column) that position() gave."""
        return self._starts[line - 1] + column - 1


def _byte_position(data: bytes, offset: int) -> tuple[int, int]:
    line = data.count(b"\n", 0, offset) + 1
    start = data.rfind(b"\n", 0, offset) + 1
    return line, len(data[start:offset].decode("utf-8", "replace")) + 1


def decode_text(data: bytes) -> str:
    """The document's text: UTF-8, an initial BOM ignored (RFC 8259 §8.1 allows it)."""
    if len(data) > MAX_DOCUMENT_BYTES:
        raise Unreadable(Problem("DOCUMENT_TOO_LARGE", "",
                                 f"the file holds {len(data)} bytes; a recipe may hold at most {MAX_DOCUMENT_BYTES}",
                                 None, None))
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = _byte_position(data, exc.start)
        raise Unreadable(Problem("JSON_INVALID", "", f"invalid UTF-8 at byte {exc.start}", line, column)) from None


@dataclass
class Parsed:
    value: Any
    text: str
    problems: list[Problem]
    _positions: dict[str, tuple[int, int]] | None = None

    def position(self, pointer: str) -> tuple[int | None, int | None]:
        """Line and column where the member at `pointer` begins; for a missing member, its
        nearest present ancestor."""
        if self._positions is None:
            self._positions, _ = _scan(self.text)
        probe = pointer
        while True:
            if probe in self._positions:
                return self._positions[probe]
            if not probe:
                return None, None
            probe = probe[: probe.rfind("/")]


def parse(data: bytes | str) -> Parsed:
    """Parse a document strictly. Raises Unreadable when there is no JSON value to check;
    returns the value with any problems (repeated names, fractions, big numbers, depth)."""
    text = decode_text(data) if isinstance(data, bytes) else data
    flags = _Flags()
    try:
        value = json.loads(text, object_pairs_hook=flags.pairs, parse_float=flags.fraction,
                           parse_int=flags.integer, parse_constant=_Flags.constant)
    except json.JSONDecodeError as exc:
        raise Unreadable(Problem("JSON_INVALID", "", f"invalid JSON: {exc.msg}", exc.lineno, exc.colno)) from None
    except RecursionError:
        _, problems = _scan(text)
        deep = [p for p in problems if p.code == "JSON_TOO_DEEP"]
        problem = deep[0] if deep else Problem("JSON_TOO_DEEP", "", "the document nests too deeply", None, None)
        raise Unreadable(problem) from None
    except ValueError as exc:  # NaN / Infinity: json accepts them, JSON does not
        line, column = _first_bad_token(text)
        raise Unreadable(Problem("JSON_INVALID", "", f"invalid JSON: {exc}", line, column)) from None
    parsed = Parsed(value, text, [])
    if flags.suspicious or _deeper_than(value, MAX_DEPTH):
        parsed._positions, parsed.problems = _scan(text)
    return parsed


def _deeper_than(value: Any, limit: int) -> bool:
    level = [value]
    for _ in range(limit):
        children = []
        for item in level:
            if isinstance(item, dict):
                children.extend(item.values())
            elif isinstance(item, list):
                children.extend(item)
        if not children:
            return False
        level = children
    return any(isinstance(item, (dict, list)) for item in level)


_TOKEN = re.compile(r"""
    (?P<ws>[ \t\n\r]+)
  | (?P<string>"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*")
  | (?P<number>-?(?:0|[1-9][0-9]*)(?P<frac>\.[0-9]+)?(?P<exp>[eE][+-]?[0-9]+)?)
  | (?P<literal>true|false|null)
  | (?P<punct>[{}\[\]:,])
""", re.VERBOSE)


def _first_bad_token(text: str) -> tuple[int | None, int | None]:
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            return LineIndex(text).position(pos)
        pos = match.end()
    return None, None


def _scan(text: str) -> tuple[dict[str, tuple[int, int]], list[Problem]]:
    """Every value's pointer → (line, column), and the strictness problems in document order.

    Iterative (an explicit stack), so nesting depth costs memory, not recursion. Only runs
    on text the C parser already accepted, or to locate excessive depth.
    """
    lines = LineIndex(text)
    positions: dict[str, tuple[int, int]] = {}
    problems: list[Problem] = []
    # each frame: [kind, pointer, next array index, seen keys, pending key]
    stack: list[list[Any]] = []
    expecting_key = False
    pending_pointer = ""
    pos = 0
    end = len(text)
    while pos < end:
        match = _TOKEN.match(text, pos)
        if match is None:
            break
        kind = match.lastgroup
        start = match.start()
        pos = match.end()
        if kind == "ws":
            continue
        token = match.group()
        if kind == "punct" and token in ",:":
            continue
        if kind == "punct" and token in "}]":
            if stack:
                stack.pop()
            expecting_key = bool(stack) and stack[-1][0] == "object"
            continue
        frame = stack[-1] if stack else None
        if frame is not None and frame[0] == "object" and expecting_key and kind == "string":
            key = json.loads(token)
            pending_pointer = f"{frame[1]}/{escape_token(key)}"
            if key in frame[3]:
                line, column = lines.position(start)
                problems.append(Problem("JSON_DUPLICATE_KEY", pending_pointer,
                                        f"member {key!r} appears more than once in this object", line, column))
            else:
                frame[3].add(key)
                positions.setdefault(pending_pointer, lines.position(start))
            expecting_key = False
            continue
        if frame is None:
            pointer = ""
        elif frame[0] == "array":
            pointer = f"{frame[1]}/{frame[2]}"
            frame[2] += 1
        else:
            pointer = pending_pointer
            expecting_key = True
        if frame is None or frame[0] == "array":
            positions.setdefault(pointer, lines.position(start))
        if kind == "number":
            if match.group("frac") or match.group("exp"):
                line, column = lines.position(start)
                problems.append(Problem("JSON_FRACTIONAL_NUMBER", pointer,
                                        f"number {token} has a fraction or exponent; write an integer", line, column))
            elif abs(int(token)) > SAFE_INTEGER if len(token) <= 400 else True:
                line, column = lines.position(start)
                shown = token if len(token) <= 40 else token[:20] + "…"
                problems.append(Problem("JSON_NUMBER_OUT_OF_RANGE", pointer,
                                        f"integer {shown} is outside ±{SAFE_INTEGER}", line, column))
        elif kind == "punct" and token in "{[":
            if len(stack) >= MAX_DEPTH:
                line, column = lines.position(start)
                problems.append(Problem("JSON_TOO_DEEP", pointer,
                                        f"nesting deeper than {MAX_DEPTH} levels", line, column))
                # nothing below this point is a recipe; stop before pointers grow quadratically
                return positions, problems
            stack.append(["object" if token == "{" else "array", pointer, 0, set(), None])
            expecting_key = token == "{"
    return positions, problems
