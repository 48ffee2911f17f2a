"""robots.txt (pure): an RFC 9309 parser and matcher, and D-58's status rules.

- Lines end at CR, LF or CRLF; `#` starts a comment; a record is `key: value`. Keys are
  case-insensitive and the common misspellings Google and Protego accept are accepted. A
  line that forgot its colon is read as `key value` when it has exactly two words (as
  Google does; RFC 9309's grammar requires the colon, but the author's intent is plain).
- A group is one or more `user-agent` lines followed by its rules; a `user-agent` line
  after a rule starts a new group. Other records (`sitemap`, `crawl-delay`, unknown keys)
  never end a group (§2.2.4: other records MUST NOT interfere with group parsing). Rules
  before the first `user-agent` belong to no group and are ignored.
- A group applies to us when one of its user-agent values, read as a product token (the
  leading run of letters, `-` and `_`, so `Bot/1.0` is `Bot`), equals our token
  case-insensitively. Every group naming us is merged; if none does, every `*` group is
  merged (D-57); if there is none either, everything is allowed.
- Matching (§2.2.2): both the rule's path and the URL's path and query are normalised —
  octets outside ASCII (and characters a URI cannot hold raw) are percent-encoded, a
  percent-encoded unreserved character is decoded, other escapes keep their encoding with
  uppercase hex. `*` matches any run of characters and a final `$` anchors the end, both
  matched greedily left to right without backtracking (linear in practice: one `find` per
  wildcard segment). The longest matching pattern wins; on a tie, Allow wins. An empty
  pattern never matches. `/robots.txt` is always allowed.
- Only the first 500 KiB are parsed (§2.5); a line cut by that limit is dropped, so a
  truncated `Allow: /abc` cannot turn into a broader `Allow: /a`.
- `Crawl-delay` (non-standard) is read as whole or decimal seconds; when several apply,
  the largest wins, because it only ever raises the gap.

Deliberately not done: Google's "`Allow: /dir/index.html` also allows `/dir/`" extension
(RFC 9309 does not have it, and an allow we were not given is the unsafe direction).

`parse_robots` never raises: any text or bytes give some `RobotsRules`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

MAX_PARSE_BYTES = 500 * 1024

PARSED = "parsed"
ALLOW_ALL_BASIS = "allow_all"         # robots.txt unavailable (4xx): crawl freely
DISALLOW_ALL_BASIS = "disallow_all"   # robots.txt unreachable (5xx, network, truncated)

_USER_AGENT_KEYS = {"user-agent", "useragent", "user agent"}
_ALLOW_KEYS = {"allow"}
_DISALLOW_KEYS = {"disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"}
_SITEMAP_KEYS = {"sitemap", "site-map"}
_CRAWL_DELAY_KEYS = {"crawl-delay", "crawldelay", "crawl delay"}

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_PRODUCT_TOKEN = re.compile(r"[A-Za-z_-]+")
_DELAY = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\Z")

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_RESERVED = frozenset(":/?#[]@!$&'()*+,;=")
_RAW_OK = _UNRESERVED | _RESERVED
_HEX = frozenset(b"0123456789abcdefABCDEF")


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    rule: str | None      # the deciding rule as written (comment stripped), None if no rule decided
    line: int | None      # its 1-based line in the file


@dataclass(frozen=True)
class Rule:
    allow: bool
    pattern: str          # normalised; `*` wildcards, a final `$` anchors
    text: str
    line: int
    segments: tuple[str, ...] = field(repr=False, compare=False, default=())
    anchored: bool = field(repr=False, compare=False, default=False)

    @property
    def priority(self) -> int:
        return len(self.pattern)

    def matches(self, path: str) -> bool:
        return _match(self.segments, self.anchored, path)


@dataclass(frozen=True)
class Group:
    agents: tuple[str, ...]       # lowercased product tokens, or "*"
    rules: tuple[Rule, ...]
    crawl_delay: float | None
    line: int                     # the group's first user-agent line


@dataclass(frozen=True)
class RobotsRules:
    groups: tuple[Group, ...] = ()
    sitemaps: tuple[str, ...] = ()
    basis: str = PARSED
    truncated: bool = False       # the file was longer than MAX_PARSE_BYTES

    def groups_for(self, token: str) -> tuple[Group, ...]:
        wanted = token.strip().lower()
        named = tuple(group for group in self.groups if wanted and wanted in group.agents)
        if named:
            return named
        return tuple(group for group in self.groups if "*" in group.agents)

    def verdict(self, token: str, path_and_query: str) -> Verdict:
        path = normalise(path_and_query or "/")
        if not path.startswith("/"):
            path = "/" + path
        if path == "/robots.txt":
            return Verdict(True, None, None)
        if self.basis == DISALLOW_ALL_BASIS:
            return Verdict(False, None, None)
        best: Rule | None = None
        for group in self.groups_for(token):
            for rule in group.rules:
                if best is not None and (rule.priority < best.priority or
                                         (rule.priority == best.priority and (best.allow or not rule.allow))):
                    continue      # cannot beat the current best: skip the match itself
                if rule.matches(path):
                    best = rule
        if best is None:
            return Verdict(True, None, None)
        return Verdict(best.allow, best.text, best.line)

    def crawl_delay(self, token: str) -> float | None:
        delays = [group.crawl_delay for group in self.groups_for(token) if group.crawl_delay is not None]
        return max(delays) if delays else None


ALLOW_ALL = RobotsRules(basis=ALLOW_ALL_BASIS)
DISALLOW_ALL = RobotsRules(basis=DISALLOW_ALL_BASIS)


# --- parsing -----------------------------------------------------------------------------------

def parse_robots(text: str | bytes) -> RobotsRules:
    try:
        return _parse(text)
    except Exception:  # noqa: BLE001 - the contract is "never raises"; a parser bug must not stop a run
        return DISALLOW_ALL


def _parse(text: str | bytes) -> RobotsRules:
    data = text if isinstance(text, bytes) else _to_bytes(text)
    truncated = len(data) > MAX_PARSE_BYTES
    if truncated:
        data = data[:MAX_PARSE_BYTES]
        cut = max(data.rfind(b"\n"), data.rfind(b"\r"))
        data = data[:cut + 1] if cut >= 0 else b""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    # surrogateescape keeps undecodable bytes as themselves, so they are percent-encoded
    # octet for octet, the way the server would see them in a URL.
    body = data.decode("utf-8", "surrogateescape")

    groups: list[Group] = []
    sitemaps: list[str] = []
    agents: list[str] = []
    rules: list[Rule] = []
    delay: float | None = None
    first_line = 0
    in_rules = False          # a rule has been seen since the last user-agent line

    def close() -> None:
        if agents:
            groups.append(Group(tuple(agents), tuple(rules), delay, first_line))

    for number, raw in enumerate(_LINE_BREAK.split(body), start=1):
        content = raw.split("#", 1)[0].strip(" \t\f\v")
        if ":" in content:
            key, value = content.split(":", 1)
        else:
            # Like Google: a forgotten colon is read as whitespace when the line is exactly
            # "key value"; the author's intent is plain, and honouring it errs polite.
            words = content.split()
            if len(words) != 2:
                continue
            key, value = words
        key = " ".join(key.split()).lower()
        value = value.strip(" \t\f\v")
        if key in _USER_AGENT_KEYS:
            if in_rules:
                close()
                agents, rules, delay, in_rules = [], [], None, False
            if not agents:
                first_line = number
            agent = _agent(value)
            if agent:
                agents.append(agent)
            elif not agents:
                agents.append("")        # holds the group open; matches nobody
        elif key in _ALLOW_KEYS or key in _DISALLOW_KEYS:
            if not agents:
                continue
            in_rules = True
            if value:
                rules.append(_rule(key in _ALLOW_KEYS, value, content, number))
        elif key in _CRAWL_DELAY_KEYS:
            if agents and _DELAY.match(value):
                seconds = float(value)
                delay = seconds if delay is None else max(delay, seconds)
        elif key in _SITEMAP_KEYS:
            if value:
                sitemaps.append(value)
    close()
    return RobotsRules(tuple(groups), tuple(sitemaps), PARSED, truncated)


def _agent(value: str) -> str:
    if value.startswith("*") and (len(value) == 1 or value[1] in " \t"):
        return "*"
    match = _PRODUCT_TOKEN.match(value)
    return match.group(0).lower() if match else ""


def _rule(allow: bool, value: str, text: str, line: int) -> Rule:
    pattern = normalise(value, pattern=True)
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    # Collapsing runs of `*` changes nothing about what matches and keeps segments non-empty.
    segments = tuple(re.sub(r"\*+", "*", body).split("*"))
    return Rule(allow, pattern, text, line, segments, anchored)


# --- matching ----------------------------------------------------------------------------------

def _match(segments: tuple[str, ...], anchored: bool, path: str) -> bool:
    first = segments[0]
    if not path.startswith(first):
        return False
    if len(segments) == 1:
        return path == first if anchored else True
    position = len(first)
    # Each middle segment is taken at its leftmost occurrence: with `*` the only wildcard,
    # the earliest match leaves the most room for the rest, so no backtracking is needed.
    for segment in segments[1:-1]:
        found = path.find(segment, position)
        if found < 0:
            return False
        position = found + len(segment)
    last = segments[-1]
    if anchored:
        return len(path) - len(last) >= position and path.endswith(last)
    return path.find(last, position) >= 0


def normalise(text: str, *, pattern: bool = False) -> str:
    """RFC 9309 §2.2.2 normal form of a URL's path and query, or (pattern=True) of a rule.

    In a URL `*` and `$` are ordinary characters, so they become `%2A` and `%24`; in a rule
    `*` is the wildcard and a final `$` the anchor, and a literal one is written `%2A` or
    `%24` (§2.2.3), which then meets the URL's encoded form."""
    data = _to_bytes(text)
    out: list[str] = []
    index = 0
    length = len(data)
    while index < length:
        octet = data[index]
        if octet == 0x25 and index + 2 < length and data[index + 1] in _HEX and data[index + 2] in _HEX:
            char = chr(int(data[index + 1:index + 3], 16))
            out.append(char if char in _UNRESERVED else "%" + data[index + 1:index + 3].decode().upper())
            index += 3
            continue
        char = chr(octet)
        if char == "*" and not pattern:
            out.append("%2A")
        elif char == "$" and not (pattern and index == length - 1):
            out.append("%24")
        elif octet < 0x80 and char in _RAW_OK:
            out.append(char)
        else:
            out.append(f"%{octet:02X}")
        index += 1
    return "".join(out)


def _to_bytes(text: str) -> bytes:
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        # Lone surrogates that are not escaped bytes: keep them as octets all the same.
        return text.encode("utf-8", "surrogatepass")


# --- D-58: what a robots.txt response means -------------------------------------------------------

def robots_policy_for_response(status: int | None, body: str | bytes | None, complete: bool) -> RobotsRules:
    """The rules a robots.txt fetch gives for the run (D-58, RFC 9309 §2.3.1).

    `status` None means the fetch failed (network, TLS, timeout). `complete` is False when
    the body ended early; a transport that stops reading on purpose at MAX_PARSE_BYTES
    passes True. Redirects (at most 5) are the transport's; a 3xx arriving here means
    they could not be followed, and is treated as unavailable (§2.3.1.2)."""
    if status is None:
        return DISALLOW_ALL
    if 200 <= status <= 299:
        if not complete:
            return DISALLOW_ALL
        return parse_robots(body if body is not None else b"")
    if 300 <= status <= 399:
        return ALLOW_ALL
    # 429 included: D-58 is binding ("4xx means allow all", as RFC 9309 §2.3.1.3). An
    # overloaded origin is still protected by the scheduler's gap and its Retry-After.
    if 400 <= status <= 499:
        return ALLOW_ALL
    return DISALLOW_ALL
