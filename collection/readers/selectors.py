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
    """A compiled selector: `xpath` selects from a whole tree; `test` (when the selector can
    be decided as an element starts, see `streamable`) tells whether one element matches.

    `streamable` holds when nothing in the selector looks at following siblings (no
    `:last-child`): then an element's match is settled by its start tag, its ancestors and
    its preceding siblings, all known when a streaming parser reaches it. `siblings_kept` is
    how many preceding siblings that takes (the largest `:nth-child(N)`, 1 for
    `:first-child`, else 0): a streaming reader may drop older ones. `subject_tags` are the
    element names a match can have, or None when `*` admits any."""

    text: str
    xpath: str
    # derived from `text` as `xpath` is; left out of equality so a Selector is its text
    test_xpath: str | None = field(default=None, compare=False)
    siblings_kept: int = field(default=0, compare=False)
    subject_tags: frozenset[str] | None = field(default=None, compare=False)
    _compiled: Any = field(default=None, compare=False, repr=False, hash=False)
    _test: Any = field(default=None, compare=False, repr=False, hash=False)

    def __post_init__(self) -> None:
        if self._compiled is None:
            # smart_strings=False: results are elements only, and lxml's smart strings
            # would keep whole trees alive through a returned value.
            object.__setattr__(self, "_compiled", etree.XPath(self.xpath, smart_strings=False))
        if self._test is None and self.test_xpath is not None:
            object.__setattr__(self, "_test", etree.XPath(self.test_xpath, smart_strings=False))

    @property
    def streamable(self) -> bool:
        return self.test_xpath is not None

    def matches(self, element: Any) -> bool:
        """Whether `element` matches, judged from its start tag, ancestors and preceding
        siblings only (a streamable selector)."""
        if self.subject_tags is not None and element.tag not in self.subject_tags:
            return False
        return bool(self._test(element))

    def select(self, root: Any) -> list:
        """The elements under (and including) `root` that match, in document order."""
        return [node for node in self._compiled(root) if isinstance(node.tag, str)]


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        # each complex selector as [(combinator, compound), ...]; the first combinator is ""
        self.chains: list[list[tuple[str, str]]] = []

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
        first = self.compound()
        chain: list[tuple[str, str]] = [("", first)]
        self.chains.append(chain)
        out = first
        while True:
            had_ws = self.skip_ws()
            c = self.peek()
            if c == "" or c == ",":
                return out
            if c == ">":
                self.i += 1
                self.skip_ws()
                compound = self.compound()
                chain.append((">", compound))
                out += " > " + compound
            elif c in "+~":
                raise self.fail(f"the {c!r} combinator is outside the selector grammar")
            elif had_ws:
                compound = self.compound()
                chain.append((" ", compound))
                out += " " + compound
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


class _Translator(HTMLTranslator):
    """cssselect's HTML translation, with structural pseudo-classes that look at most n
    siblings away instead of counting all of them: `count(preceding-sibling::*) = 0` walks
    every earlier sibling, so `li:first-child` over a list of a million items is quadratic,
    while `not(preceding-sibling::*[1])` stops at the nearest one."""

    def xpath_first_child_pseudo(self, xpath):
        return xpath.add_condition("not(preceding-sibling::*[1])")

    def xpath_last_child_pseudo(self, xpath):
        return xpath.add_condition("not(following-sibling::*[1])")

    def xpath_nth_child_function(self, xpath, function, last=False, add_name_test=True):
        # The grammar admits only :nth-child(N), N a positive integer: the element has
        # exactly N-1 elements before it.
        n = int(function.arguments[0].value)
        if n == 1:
            return xpath.add_condition("not(preceding-sibling::*[1])")
        return xpath.add_condition(f"preceding-sibling::*[{n - 1}] and not(preceding-sibling::*[{n}])")


_TRANSLATOR = _Translator()


def _chain_xpath(chain: list[tuple[str, str]]) -> str:
    """One complex selector as a single location step with its ancestry as predicates:
    `ul > li a` becomes `descendant-or-self::a[ancestor::li[parent::ul]]`.

    cssselect writes it step by step (`descendant-or-self::ul/li/descendant::a`), and
    libxml2 merges the node sets of every step with a duplicate check that is quadratic in
    their size: 1.5 s for 50,000 links, 6.3 s for 100,000, minutes for a million. One step
    from the root yields each element once, in document order, with nothing to merge; the
    predicates walk up the element's own ancestors only."""
    inner = ""
    for combinator, compound in chain:
        test = _TRANSLATOR.css_to_xpath(compound, prefix="")
        if inner:
            axis = "parent" if combinator == ">" else "ancestor"
            test = f"{test}[{axis}::{inner}]"
        inner = test
    return inner


def _xpath(chains: list[list[tuple[str, str]]]) -> str:
    if len(chains) == 1:
        return "descendant-or-self::" + _chain_xpath(chains[0])
    # A union would be merged (quadratically) too: one step whose predicate names each
    # alternative keeps document order and lists an element matched twice once.
    return "descendant-or-self::*[" + " or ".join(f"self::{_chain_xpath(c)}" for c in chains) + "]"


@functools.lru_cache(maxsize=1024)
def compile_selector(text: str) -> Selector:
    """Check `text` against the closed grammar and compile it once to XPath."""
    if not isinstance(text, str):
        raise SelectorError(0, "a selector is a string")
    if len(text) > MAX_SELECTOR_LENGTH:
        raise SelectorError(MAX_SELECTOR_LENGTH, f"a selector is at most {MAX_SELECTOR_LENGTH} characters")
    parser = _Parser(text)
    parser.selector_list()
    chains = parser.chains
    compounds = [compound for chain in chains for _, compound in chain]
    # Conservative on purpose: the text of an attribute value that happens to read
    # ":last-child" only costs the streaming reader, never a wrong match.
    if any(":last-child" in compound for compound in compounds):
        return Selector(text, _xpath(chains))
    kept = max([int(n) for c in compounds for n in _NTH.findall(c)]
               + [1 for c in compounds if ":first-child" in c] + [0])
    subjects = [_SUBJECT.match(chain[-1][1]).group(0) for chain in chains]
    tags = None if any(s in ("", "*") for s in subjects) else frozenset(subjects)
    test = "self::*[" + " or ".join(f"self::{_chain_xpath(c)}" for c in chains) + "]" if len(chains) > 1 \
        else "self::" + _chain_xpath(chains[0])
    return Selector(text, _xpath(chains), test, kept, tags)


_NTH = re.compile(r":nth-child\((\d+)\)")
_SUBJECT = re.compile(r"\*|[^#.\[:]*")
