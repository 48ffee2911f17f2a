"""The closed selector grammar shared by `html_index`, `next_selector` and the HTML Readers.

A fixed, documented subset of CSS (docs/selectors.md). Anything outside it is refused
with a `SelectorError` naming the 0-based position (a Python `str` index, i.e. counted in
Unicode code points) of the first character that is not part of the subset. Registration
turns that into `SELECTOR_UNSUPPORTED` (DISC-13, DISC-04).

The subset is checked by our own parser rather than left to cssselect, because cssselect
accepts far more than the subset (`+`, `~`, `:not()`, `:hover`, …) and a recipe that
validates today must mean the same thing when cssselect grows. Our parser rebuilds a
canonical CSS text from what it accepted and only that text reaches cssselect, which does
the XPath translation it is good at.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from cssselect import HTMLTranslator
from lxml import etree

__all__ = ["SelectorError", "Selector", "compile_selector", "MAX_SELECTOR_LENGTH"]

# The schemas bound every selector at 1024 characters; the parser holds the same line so
# a selector that reaches it from elsewhere (a test, `decode`) cannot be unbounded.
MAX_SELECTOR_LENGTH = 1024

_WS = " \t\n\r\f"
_NAME_START = re.compile(r"-?[A-Za-z_\u0080-\U0010ffff][A-Za-z0-9_\-\u0080-\U0010ffff]*")
_UNQUOTED_VALUE = re.compile(r"[A-Za-z0-9_\-\u0080-\U0010ffff]+")
_POSITIVE_INTEGER = re.compile(r"[1-9][0-9]{0,8}")
_ATTRIBUTE_OPERATORS = ("^=", "$=", "*=", "~=", "=")
_STRUCTURAL = ("first-child", "last-child")


class SelectorError(ValueError):
    """A selector outside the closed grammar; `position` is 0-based in code points."""

    def __init__(self, position: int, message: str) -> None:
        super().__init__(f"{message} (at position {position})")
        self.position = position
        self.message = message


@dataclass(frozen=True)
class Selector:
    text: str
    xpath: str
    _compiled: Any = field(default=None, compare=False, repr=False, hash=False)

    def __post_init__(self) -> None:
        if self._compiled is None:
            # smart_strings=False: results are elements only, and lxml's smart strings
            # would keep whole trees alive through a returned value.
            object.__setattr__(self, "_compiled", etree.XPath(self.xpath, smart_strings=False))

    def select(self, root: Any) -> list:
        """The elements under (and including) `root` that match, in document order."""
        return [node for node in self._compiled(root) if isinstance(node.tag, str)]


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    # --- helpers ---------------------------------------------------------------------
    def peek(self) -> str:
        return self.text[self.i] if self.i < len(self.text) else ""

    def fail(self, message: str, position: int | None = None) -> SelectorError:
        return SelectorError(self.i if position is None else position, message)

    def skip_ws(self) -> bool:
        start = self.i
        while self.i < len(self.text) and self.text[self.i] in _WS:
            self.i += 1
        return self.i > start

    def name(self, what: str) -> str:
        match = _NAME_START.match(self.text, self.i)
        if not match:
            if self.i >= len(self.text):
                raise self.fail(f"expected {what}, found the end of the selector")
            raise self.fail(f"expected {what}, found {self.text[self.i]!r}")
        self.i = match.end()
        if self.peek() == "\\":
            raise self.fail("escapes are outside the selector grammar")
        if self.peek() == "|":
            if self.text.startswith("|=", self.i):
                raise self.fail("the attribute operator '|=' is outside the selector grammar")
            raise self.fail("namespaces are outside the selector grammar")
        return match.group(0)

    # --- grammar ---------------------------------------------------------------------
    def selector_list(self) -> str:
        self.skip_ws()
        parts = [self.complex()]
        while self.i < len(self.text):
            if self.peek() != ",":
                raise self.fail(f"unexpected {self.peek()!r}")
            self.i += 1
            self.skip_ws()
            if self.peek() == ",":
                raise self.fail("empty selector in a comma list")
            parts.append(self.complex())
        return ", ".join(parts)

    def complex(self) -> str:
        out = self.compound()
        while True:
            had_ws = self.skip_ws()
            c = self.peek()
            if c == "" or c == ",":
                return out
            if c == ">":
                self.i += 1
                self.skip_ws()
                out += " > " + self.compound()
            elif c in "+~":
                raise self.fail(f"the {c!r} combinator is outside the selector grammar")
            elif had_ws:
                out += " " + self.compound()
            else:
                raise self.fail(f"unexpected {c!r}")

    def compound(self) -> str:
        start = self.i
        out = ""
        c = self.peek()
        if c == "*":
            self.i += 1
            if self.peek() == "|":
                raise self.fail("namespaces are outside the selector grammar")
            out = "*"
        elif c == "|":
            raise self.fail("namespaces are outside the selector grammar")
        elif _NAME_START.match(self.text, self.i):
            out = self.name("an element name").lower()
        while True:
            c = self.peek()
            if c == "#":
                self.i += 1
                out += "#" + self.name("an id after '#'")
            elif c == ".":
                self.i += 1
                out += "." + self.name("a class name after '.'")
            elif c == "[":
                out += self.attribute()
            elif c == ":":
                out += self.pseudo()
            else:
                break
        if self.i == start:
            if c == "":
                raise self.fail("expected a selector, found the end of the selector")
            if c in ">+~,":
                raise self.fail(f"expected a selector before {c!r}")
            if c == "\\":
                raise self.fail("escapes are outside the selector grammar")
            raise self.fail(f"{c!r} is outside the selector grammar")
        return out

    def attribute(self) -> str:
        self.i += 1  # '['
        self.skip_ws()
        if self.peek() in ("*", "|"):
            raise self.fail("namespaces are outside the selector grammar")
        attr = self.name("an attribute name").lower()
        self.skip_ws()
        if self.peek() == "]":
            self.i += 1
            return f"[{attr}]"
        op = next((o for o in _ATTRIBUTE_OPERATORS if self.text.startswith(o, self.i)), None)
        if op is None:
            if self.i >= len(self.text):
                raise self.fail("expected ']', found the end of the selector")
            raise self.fail(f"the attribute operator at {self.peek()!r} is outside the selector grammar")
        self.i += len(op)
        self.skip_ws()
        value = self.value()
        self.skip_ws()
        if self.peek() != "]":
            if self.i >= len(self.text):
                raise self.fail("expected ']', found the end of the selector")
            raise self.fail(f"expected ']', found {self.peek()!r} (case flags are outside the selector grammar)")
        self.i += 1
        quote = "'" if '"' in value else '"'
        return f"[{attr}{op}{quote}{value}{quote}]"

    def value(self) -> str:
        c = self.peek()
        if c in ("'", '"'):
            start = self.i
            self.i += 1
            while True:
                d = self.peek()
                if d == "":
                    raise self.fail("unterminated string")
                if d == "\\":
                    raise self.fail("escapes are outside the selector grammar")
                if d == "\n" or d == "\r" or d == "\f":
                    raise self.fail("a newline inside a string")
                self.i += 1
                if d == c:
                    return self.text[start + 1:self.i - 1]
        match = _UNQUOTED_VALUE.match(self.text, self.i)
        if not match:
            if c == "":
                raise self.fail("expected an attribute value, found the end of the selector")
            raise self.fail(f"expected an attribute value, found {c!r}")
        self.i = match.end()
        return match.group(0)

    def pseudo(self) -> str:
        colon = self.i
        self.i += 1
        if self.peek() == ":":
            raise self.fail("pseudo-elements are outside the selector grammar", colon)
        match = _NAME_START.match(self.text, self.i)
        if not match:
            raise self.fail("expected a pseudo-class name after ':'")
        name = match.group(0).lower()
        self.i = match.end()
        if name in _STRUCTURAL:
            if self.peek() == "(":
                raise self.fail(f":{name} takes no argument")
            return f":{name}"
        if name == "nth-child" and self.peek() == "(":
            self.i += 1
            self.skip_ws()
            number = _POSITIVE_INTEGER.match(self.text, self.i)
            if not number:
                raise self.fail(":nth-child takes one positive integer (an+b, odd and even are outside the grammar)")
            self.i = number.end()
            self.skip_ws()
            if self.peek() != ")":
                raise self.fail(":nth-child takes one positive integer (an+b, odd and even are outside the grammar)")
            self.i += 1
            return f":nth-child({number.group(0)})"
        raise self.fail(f"the pseudo-class :{name} is outside the selector grammar", colon)


_TRANSLATOR = HTMLTranslator()


@functools.lru_cache(maxsize=1024)
def compile_selector(text: str) -> Selector:
    """Check `text` against the closed grammar and compile it once to XPath."""
    if not isinstance(text, str):
        raise SelectorError(0, "a selector is a string")
    if len(text) > MAX_SELECTOR_LENGTH:
        raise SelectorError(MAX_SELECTOR_LENGTH, f"a selector is at most {MAX_SELECTOR_LENGTH} characters")
    canonical = _Parser(text).selector_list()
    return Selector(text, _TRANSLATOR.css_to_xpath(canonical))
