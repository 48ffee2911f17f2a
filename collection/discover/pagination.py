"""The six pagination grammars' address rules and the RFC 8288 Link header (pure).

What a grammar needs from a response (a Link header, a cursor token, a next match) is
read here or by the listing parsers; the stop rules that every grammar shares (empty page,
repeated address, the ceiling) live in the discovery driver, so they are written once.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

NONE = "none"
PAGE_PARAMETER = "page_parameter"
OFFSET_PARAMETER = "offset_parameter"
LINK_HEADER = "link_header"
CURSOR = "cursor"
NEXT_SELECTOR = "next_selector"
KINDS = (NONE, PAGE_PARAMETER, OFFSET_PARAMETER, LINK_HEADER, CURSOR, NEXT_SELECTOR)

# Grammars that write `pagination.parameter` into the address (PAG-15, PAG-16).
PARAMETER_KINDS = (PAGE_PARAMETER, OFFSET_PARAMETER, CURSOR)


@dataclass(frozen=True)
class PaginationConfig:
    kind: str = NONE
    parameter: str | None = None     # page_parameter, offset_parameter, cursor
    first: int | None = None         # page_parameter (1), offset_parameter (0)
    step: int = 1                    # offset_parameter
    pointer: str | None = None       # cursor: where the token is in the body
    selector: str | None = None      # next_selector

    @property
    def start(self) -> int:
        if self.first is not None:
            return self.first
        return 1 if self.kind == PAGE_PARAMETER else 0


def with_parameter(url: str, name: str, value: str) -> str:
    """D-23: `&name=value` after an existing query, `?name=value` otherwise.

    The name and value are percent-encoded so a token carrying `&`, `=`, `#` or `+` is
    read back by the publisher as the token it sent.
    """
    pair = f"{quote(name, safe='')}={quote(value, safe='')}"
    base, hash_mark, fragment = url.partition("#")
    if "?" in base:
        joined = base + ("" if base.endswith(("?", "&")) else "&") + pair
    else:
        joined = f"{base}?{pair}"
    return joined + (hash_mark + fragment if hash_mark else "")


def numbered_url(config: PaginationConfig, base: str, index: int) -> str:
    """The address of the `index`-th (0-based) request of page_parameter / offset_parameter."""
    if config.kind == PAGE_PARAMETER:
        number = config.start + index            # PAG-04
    elif config.kind == OFFSET_PARAMETER:
        number = config.start + index * config.step   # PAG-07
    else:
        raise ValueError(f"{config.kind} does not number its requests")
    return with_parameter(base, config.parameter or "", str(number))


# --- RFC 8288 -----------------------------------------------------------------------

@dataclass(frozen=True)
class Link:
    target: str                                  # as written, unresolved
    params: tuple[tuple[str, str | None], ...]   # names lowercased, in order

    def param(self, name: str) -> str | None:
        for key, value in self.params:
            if key == name:
                return value   # §3: occurrences after the first are ignored
        return None

    @property
    def rels(self) -> tuple[str, ...]:
        value = self.param("rel")
        # §3.3: rel holds space-separated relation types, compared case-insensitively.
        return tuple(part.lower() for part in value.split()) if value else ()


_OWS = " \t"


def _skip(text: str, i: int) -> int:
    while i < len(text) and text[i] in _OWS:
        i += 1
    return i


def _quoted(text: str, i: int) -> tuple[str, int]:
    """A quoted-string starting at text[i] == '"'; an unterminated one runs to the end."""
    out = []
    i += 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
            continue
        if ch == '"':
            return "".join(out), i + 1
        out.append(ch)
        i += 1
    return "".join(out), i


def parse_link_header(values: list[str] | tuple[str, ...]) -> tuple[Link, ...]:
    """Every link-value of every Link header, in order (RFC 8288 §3).

    Lenient where servers are sloppy (stray spaces, unquoted rel, trailing commas) and
    strict where a misreading would change the target: commas split links only outside
    <…> and quoted strings, and a link-value without <…> is skipped up to the next comma.
    """
    links: list[Link] = []
    for text in values:
        i = 0
        n = len(text)
        while i < n:
            i = _skip(text, i)
            if i < n and text[i] == ",":
                i += 1
                continue
            if i >= n:
                break
            if text[i] != "<":
                # Not a link-value; skip to the next comma outside quotes.
                while i < n and text[i] != ",":
                    if text[i] == '"':
                        _, i = _quoted(text, i)
                    else:
                        i += 1
                continue
            end = text.find(">", i + 1)
            if end < 0:
                break
            target = text[i + 1:end].strip()
            i = end + 1
            params: list[tuple[str, str | None]] = []
            while True:
                i = _skip(text, i)
                if i >= n or text[i] == ",":
                    break
                if text[i] != ";":
                    # Garbage after the target or a parameter: ignore up to the next comma.
                    while i < n and text[i] != ",":
                        if text[i] == '"':
                            _, i = _quoted(text, i)
                        else:
                            i += 1
                    break
                i = _skip(text, i + 1)
                start = i
                while i < n and text[i] not in "=;," + _OWS:
                    i += 1
                name = text[start:i].lower()
                i = _skip(text, i)
                value: str | None = None
                if i < n and text[i] == "=":
                    i = _skip(text, i + 1)
                    if i < n and text[i] == '"':
                        value, i = _quoted(text, i)
                    else:
                        start = i
                        while i < n and text[i] not in ";," + _OWS:
                            i += 1
                        value = text[start:i]
                if name:
                    params.append((name, value))
            links.append(Link(target, tuple(params)))
    return tuple(links)


def next_link_target(header_values: list[str] | tuple[str, ...]) -> str | None:
    """The first rel="next" target (PAG-09), unresolved; None when there is none.

    A link with an `anchor` describes another resource than this response (§3.2), so its
    rel=next is not this listing's next page.
    """
    for link in parse_link_header(header_values):
        if "next" in link.rels and link.param("anchor") is None:
            return link.target
    return None
