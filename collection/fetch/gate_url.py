"""A fleet gate's address (pure): `redis://`, `rediss://` (TLS) or `unix://` parsed here, not
by the Redis client, so a malformed one is a usage error that names what is wrong and never
echoes the password (the client's own errors quote the URL). docs/running-many-sources.md,
"The gate's address"; issue 24 point 1.

    redis[s]://[[USER]:PASSWORD@]HOST[:PORT][/DB][?db=DB]
    unix://[[USER]:PASSWORD@]/PATH/TO/SOCKET[?db=DB]

- As in every URL parser, the authority ends at the first `/`, `?` or `#`, and its userinfo at
  the authority's LAST `@` (so a password may hold a raw `@`; a `/`, `?` or `#` in it is
  percent-encoded). The userinfo is split at its first `:` (a user name holds no `:`);
  without a `:` it is a password alone (the Redis URI convention, `redis://PASSWORD@HOST`),
  unless the password comes from COLLECTION_GATE_PASSWORD: then it is the user name
  (`redis://alice@HOST`). Both are percent-decoded.
- HOST: a DNS name, an IPv4 address or a bracketed IPv6 address; PORT 1..65535 (6379); DB a
  non-negative integer (0), in the path or as `?db=`, not both.
- Decided: the only query parameter is `db`. Any other is refused by its name (its value is
  never shown); `password` and `username` in the query are refused too, pointing at the
  userinfo and COLLECTION_GATE_PASSWORD, so a secret has one place and one redaction rule.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from urllib.parse import unquote

from collection.redact import redact_url

SCHEMES = ("redis", "rediss", "unix")
DEFAULT_PORT = 6379
MAX_DB = 2**31 - 1
_LABEL = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,40}$")


class GateUrlError(ValueError):
    """A gate URL that cannot be used; the message never holds a credential."""


@dataclass(frozen=True)
class GateAddress:
    scheme: str                        # redis, rediss or unix
    host: str | None                   # None for unix
    port: int | None
    path: str | None                   # the socket of a unix:// address
    db: int
    username: str | None
    password: str | None = field(default=None, repr=False)

    @property
    def tls(self) -> bool:
        return self.scheme == "rediss"

    @property
    def description(self) -> str:
        """The address as shown everywhere: the credentials masked (collection.redact)."""
        user = f"{self.username}:***@" if self.username else ("***@" if self.password is not None else "")
        if self.scheme == "unix":
            return f"unix://{user}{self.path}" + (f"?db={self.db}" if self.db else "")
        host = f"[{self.host}]" if ":" in (self.host or "") else self.host
        return f"{self.scheme}://{user}{host}:{self.port}/{self.db}"


def _fail(text: str, what: str) -> GateUrlError:
    return GateUrlError(f"--gate {redact_url(text)}: {what}")


def _db(text: str, value: str, where: str) -> int:
    if not (value.isascii() and value.isdigit()) or int(value) > MAX_DB:
        raise _fail(text, f"the database {where} is not a non-negative integer")
    return int(value)


def _host(text: str, hostport: str) -> tuple[str, int]:
    if hostport.startswith("["):
        close = hostport.find("]")
        if close < 0:
            raise _fail(text, "an IPv6 address opened with `[` is not closed with `]`")
        host, after = hostport[1:close], hostport[close + 1:]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise _fail(text, "the address in `[...]` is not an IPv6 address") from None
        if after and not after.startswith(":"):
            raise _fail(text, "only `:PORT` may follow `]`")
        port_text = after[1:] if after else None
    else:
        if "[" in hostport or "]" in hostport:
            raise _fail(text, "a `[` or `]` outside a bracketed IPv6 address")
        host, colon, port_text = hostport.partition(":")
        port_text = port_text if colon else None
        if not host:
            raise _fail(text, "no host")
        if not all(_LABEL.match(label) for label in host.rstrip(".").split(".")) or len(host) > 253:
            raise _fail(text, "the host is not a DNS name or an IP address")
    if port_text is None:
        return host, DEFAULT_PORT
    if not (port_text.isascii() and port_text.isdigit()) or not 1 <= int(port_text) <= 65535:
        raise _fail(text, "the port is not an integer from 1 to 65535")
    return host, int(port_text)


def _query(text: str, query: str) -> int | None:
    db = None
    for member in query.split("&") if query else ():
        name, eq, value = member.partition("=")
        if not eq:
            raise _fail(text, "a query member without `=`")
        if not _NAME.match(name):
            raise _fail(text, "a query parameter whose name is not a plain word")
        if name in ("password", "username"):
            raise _fail(text, f"the query parameter {name} is not taken: put the user and password in the "
                              "URL's userinfo (USER:PASSWORD@), or the password in COLLECTION_GATE_PASSWORD")
        if name != "db":
            raise _fail(text, f"unknown query parameter {name} (the only one taken is db)")
        if db is not None:
            raise _fail(text, "db is given twice")
        db = _db(text, value, "in ?db=")
    return db


def parse_gate_url(text: str, *, password: str | None = None) -> GateAddress:
    """The address `text` names; `password` (from COLLECTION_GATE_PASSWORD) is used when the
    URL carries none. GateUrlError naming what is wrong, credentials masked."""
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in text):
        raise _fail(text, "the URL holds whitespace or a control character")
    scheme, sep, rest = text.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        raise _fail(text, "the scheme is not redis://, rediss:// or unix://")
    scheme = scheme.lower()
    # As every URL parser (WHATWG, urllib): the authority ends at the first `/`, `?` or `#`,
    # and its userinfo at the authority's last `@`.
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, tail = rest[:end], rest[end:]
    username = url_password = None
    if "@" in authority:
        userinfo, authority = authority.rsplit("@", 1)
        if not userinfo:
            raise _fail(text, "an empty userinfo before `@`")
        user, colon, secret = userinfo.partition(":")
        if not colon and password:
            username = unquote(user)           # the password is the environment's
        else:
            if not colon:
                user, secret = "", userinfo
            if not secret:
                raise _fail(text, "an empty password")
            username, url_password = (unquote(user) or None), unquote(secret)
    elif "@" in tail and ("#" in tail.split("@", 1)[0] or "?" not in tail.split("@", 1)[0]):
        # not an `@` in a query value (refused below by its parameter's name)
        raise _fail(text, "an `@` after the host: a password holding `/`, `?` or `#` is written "
                          "percent-encoded (%2F, %3F, %23)")
    if "#" in tail:
        raise _fail(text, "a fragment (`#`) has no meaning in a gate URL")
    path, _, query = tail.partition("?")
    query_db = _query(text, query)
    if url_password is not None and password:
        raise _fail(text, "the URL carries a password and COLLECTION_GATE_PASSWORD is set: give it once")
    password = url_password if url_password is not None else (password or None)
    if scheme == "unix":
        if authority:
            raise _fail(text, "a unix:// address has no host: unix:///PATH/TO/SOCKET")
        if not path.startswith("/") or path == "/":
            raise _fail(text, "a unix:// address names the socket's absolute path (unix:///run/redis.sock)")
        return GateAddress(scheme, None, None, path, query_db or 0, username, password)
    host, port = _host(text, authority)
    path = path[1:] if path.startswith("/") else path
    path_db = _db(text, path, "in the path") if path else None
    if path_db is not None and query_db is not None:
        raise _fail(text, "the database is given in the path and as ?db=: give it once")
    db = path_db if path_db is not None else (query_db or 0)
    return GateAddress(scheme, host, port, None, db, username, password)
