"""The one redaction rule (pure): what a URL or a message looks like once every credential in
it is shown as `***` (issue 24 point 1, docs/running-many-sources.md "Passwords").

Every place that shows or stores a gate URL, or an error that may hold one, passes it through
here: messages, `--json`, run and dataset records, status, `--log-json` and the INTERNAL_ERROR
line. The rule, for `scheme://USERINFO@HOST...`:

- the userinfo ends at the LAST `@` of the URL (a raw `@`, `/`, `:` inside a password stays
  inside it; wider than a URL parser's authority on purpose, so a malformed URL is masked too):
  `user:pw@` is shown `user:***@`, and `:pw@` or `pw@` (a password alone) `***@`; when what
  comes before that `@` holds a `?` or `#`, everything after the scheme is `***`;
- every query value is `***` except a `db` that is a plain integer; a query member without
  `=` is `***` (it could be a value); a fragment is `#***`;
- text that is not a URL but holds an `@` has everything before its last `@` masked.

A URL that cannot be parsed is redacted by the same rule, so a malformed one never escapes.
Besides URLs, known secret values (a password read from the environment, or one the gate
URL carried) are scrubbed from free text, such as an exception message from the Redis
client, in their raw, percent-decoded and percent-encoded forms.
"""

from __future__ import annotations

import re
from typing import Iterable
from urllib.parse import quote, unquote

MASK = "***"
SAFE_QUERY = frozenset({"db"})      # shown as they are when their value is a plain integer

_URL = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)(\S*)")
_GATE_SCHEMES = re.compile(r"(?i)^(redis|rediss|unix|valkey|valkeys)(\+[a-z0-9.-]+)?://")
_known: set[str] = set()            # the process's secrets (remember); never written anywhere


def _query(query: str) -> str:
    shown = []
    for member in query.split("&"):
        name, eq, value = member.partition("=")
        if not eq:
            shown.append(MASK if member else "")
        elif name.lower() in SAFE_QUERY and value.isdigit() and value.isascii():
            shown.append(member)
        else:
            shown.append(f"{name}={MASK}")
    return "&".join(shown)


def _userinfo(userinfo: str) -> str:
    user, colon, _password = userinfo.partition(":")
    return f"{user}:{MASK}" if colon and user else MASK


def redact_url(text: str) -> str:
    """`text` (a URL, well formed or not) with every credential shown as `***`."""
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest = "", text
    prefix = scheme + sep
    userinfo = None
    if "@" in rest:
        userinfo, rest = rest.rsplit("@", 1)
        if "?" in userinfo or "#" in userinfo:
            # a query or fragment value with an `@`, or a password with a raw `?` or `#`:
            # either way what follows the `@` may be a secret's tail
            return prefix + MASK
    rest, hash_, _fragment = rest.partition("#")
    head, question, query = rest.partition("?")
    shown = prefix + (_userinfo(userinfo) + "@" if userinfo is not None else "") + head
    if question:
        shown += "?" + _query(query)
    if hash_:
        shown += "#" + MASK
    return shown


def _forms(secret: str) -> set[str]:
    return {form for form in (secret, unquote(secret), quote(secret, safe=""), quote(secret)) if form}


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """Free text with every gate URL (and every URL with a userinfo) in it redacted, and every
    form of each of `secrets` (and of the secrets remembered) replaced by `***`; longer
    secrets first, so no part of one is left."""
    forms: set[str] = set()
    for secret in (*secrets, *_known):
        if secret:
            forms |= _forms(secret)
    for form in sorted(forms, key=len, reverse=True):
        text = text.replace(form, MASK)
    return _URL.sub(_redact_match, text)


def _redact_match(match: re.Match) -> str:
    # A gate URL, or any URL with a userinfo; a publisher's https URL with a query stays as it is.
    url = match.group(0)
    return redact_url(url) if _GATE_SCHEMES.match(url) or "@" in match.group(2) else url


def remember(secret: str | None) -> None:
    """Note a secret this process holds, so `scrub` removes it from any text shown later (an
    exception message nobody planned for included)."""
    if secret:
        _known.add(secret)
