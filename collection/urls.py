"""Addresses: resolution, canonicalisation and the origin rules (pure).

One place decides what an address means, so registration, discovery, the egress check
and the ledger can never disagree about whether two addresses are the same page.

Canonicalisation (URL-02 to URL-08, D-54): resolve against the page the link appeared on
(RFC 3986, which removes dot segments), lowercase the scheme and host, convert an IDN host
to lowercase punycode, drop the fragment and an explicit :443. Nothing else changes: the
trailing slash, the path's case, percent-encoding and the query's order are the
publisher's and may be significant.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit, urlunsplit

# WHATWG trims C0 controls and spaces around an href before parsing; a browser and this
# project must agree on which page a link names.
_TRIM = "".join(chr(c) for c in range(0x21))
_WHITESPACE = re.compile(r"[\s\x00-\x1f\x7f]")
_HOST_LABEL = re.compile(r"\A[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\Z")
# The shape nearly every listed link has: https, a lowercase ASCII host, no userinfo, port,
# tab or newline (urlsplit deletes those anywhere). For it, the general path's urlsplit /
# urljoin / urlunsplit round trip reduces to cutting the text at '#' and '?'.
_PLAIN_HTTPS = re.compile(r"https://([a-z0-9.-]+)([/?#][^\t\n\r]*)?", re.DOTALL)
# The shape of nearly every href in an HTML index: a path from the root ("/d/123"), without
# the tab, newline or ';' for which urljoin's round trip does more than keep the base's host.
_ROOT_PATH = re.compile(r"/(?!/)[^\t\n\r;]*", re.DOTALL)


class UrlError(ValueError):
    """An address that cannot be read as an absolute URL at all."""


@dataclass(frozen=True)
class Address:
    """An absolute, canonical address and the reason it may not be fetched, if any."""

    url: str
    unreachable: str | None = None


def _split_netloc(netloc: str) -> tuple[str | None, str, str | None]:
    """(userinfo, host, port) of a netloc, without urllib's lenient guessing."""
    userinfo = None
    if "@" in netloc:
        userinfo, _, netloc = netloc.rpartition("@")
    if netloc.startswith("["):
        end = netloc.find("]")
        if end < 0:
            raise UrlError("unterminated IPv6 literal")
        host, rest = netloc[: end + 1], netloc[end + 1:]
        port = rest[1:] if rest.startswith(":") else None
        if rest and not rest.startswith(":"):
            raise UrlError("text after an IPv6 literal")
        return userinfo, host, port
    host, sep, port = netloc.partition(":")
    return userinfo, host, (port if sep else None)


def _canonical_host(host: str) -> str:
    if host.startswith("["):
        return host.lower()
    try:
        host.encode("ascii")
        return host.lower()
    except UnicodeEncodeError:
        pass
    try:
        return host.encode("idna").decode("ascii").lower()
    except UnicodeError as exc:
        raise UrlError(f"host {host!r} is not a valid internationalised name") from exc


@functools.lru_cache(maxsize=256)
def _base_parses(base: str) -> bool:
    """Whether urljoin can read `base` (it raises ValueError for a broken IPv6 literal)."""
    try:
        urlsplit(base)
    except ValueError:
        return False
    return True


@functools.lru_cache(maxsize=256)
def _plain_base_host(base: str) -> str | None:
    """The host of a base of the plain https shape, else None."""
    plain = _PLAIN_HTTPS.fullmatch(base)
    return plain.group(1) if plain is not None else None


def canonicalise(link: str, base: str | None = None) -> str:
    """The canonical absolute form of `link`, resolved against `base` when it is relative.

    Raises UrlError when the result is not an absolute URL with a host. Whether the address
    may be fetched is a separate question (`unreachable_reason`).
    """
    text = link.strip(_TRIM)
    plain = _PLAIN_HTTPS.fullmatch(text)
    if plain is not None and (base is None or _base_parses(base)):
        # An absolute https link ignores its base, but urljoin's urlparse/urlunparse round
        # trip drops the ';' of an empty last-segment parameter ("/a;"): leave that to it.
        host, rest = plain.group(1), plain.group(2) or ""
        rest = rest.partition("#")[0]
        path, _, query = rest.partition("?")
        if base is None or ";" not in path:
            return _https(host, remove_dot_segments(path), query)
    elif base and _ROOT_PATH.fullmatch(text) is not None and (host := _plain_base_host(base)) is not None:
        path, _, query = text.partition("#")[0].partition("?")
        if "/." not in path:
            # No dot segment (urljoin's own removal of those differs from RFC 3986's on
            # "/..//"): the base's host and the link's path are all urljoin keeps.
            return _https(host, path, query)
    return _canonicalise_general(link, text, base)


def _https(host: str, path: str, query: str) -> str:
    # urlunsplit drops an empty query's '?': "https://h/a?" and "https://h/a" are one page
    return f"https://{host}{path}?{query}" if query else f"https://{host}{path}"


def _canonicalise_general(link: str, text: str, base: str | None) -> str:
    try:
        own = urlsplit(text)
        if own.scheme and not own.netloc and text[len(own.scheme) + 1:].startswith("//"):
            # "https://" or "https:///x" names an empty host; urljoin would quietly answer the
            # base address instead, turning a broken link into a link to the listing itself.
            raise UrlError(f"{link!r} has an empty host")
        absolute = urljoin(base, text) if base else text
        parts = urlsplit(absolute)
    except UrlError:
        raise
    except ValueError as exc:
        # urllib raises a bare ValueError for a broken IPv6 literal; callers catch UrlError.
        raise UrlError(f"{link!r} is not a URL: {exc}") from None
    if not parts.scheme or not parts.netloc:
        raise UrlError(f"{link!r} is not an absolute URL")
    scheme = parts.scheme.lower()
    userinfo, host, port = _split_netloc(parts.netloc)
    if not host:
        raise UrlError(f"{link!r} has no host")
    host = _canonical_host(host)
    if port == "" or (scheme == "https" and port is not None and port.isascii() and port.isdigit()
                      and int(port) == 443):
        # An empty port is no port, and ":0443" is the explicit :443 of URL-05 (WHATWG
        # reads both so); keeping them would give one page two identities.
        port = None
    netloc = host if port is None else f"{host}:{port}"
    if userinfo is not None:
        netloc = f"{userinfo}@{netloc}"
    # RFC 3986 §5.2.2 removes dot segments from every target, absolute ones included;
    # urljoin only does so for relative references, so "https://h/a/../b" and "../b"
    # would otherwise name one page two ways.
    return urlunsplit((scheme, netloc, remove_dot_segments(parts.path), parts.query, ""))


def remove_dot_segments(path: str) -> str:
    """RFC 3986 §5.2.4."""
    if "." not in path:
        return path
    output: list[str] = []
    rest = path
    while rest:
        if rest.startswith("../"):
            rest = rest[3:]
        elif rest.startswith("./"):
            rest = rest[2:]
        elif rest.startswith("/./"):
            rest = rest[2:]
        elif rest == "/.":
            rest = "/"
        elif rest.startswith("/../"):
            rest = rest[3:]
            if output:
                output.pop()
        elif rest == "/..":
            rest = "/"
            if output:
                output.pop()
        elif rest in (".", ".."):
            rest = ""
        else:
            start = 1 if rest.startswith("/") else 0
            end = rest.find("/", start)
            if end < 0:
                end = len(rest)
            output.append(rest[:end])
            rest = rest[end:]
    return "".join(output)


def origin_of(url: str) -> str:
    """`https://host` (or `scheme://host:port`) of a canonical URL."""
    parts = urlsplit(url)
    _, host, port = _split_netloc(parts.netloc)
    return f"{parts.scheme}://{host}" + (f":{port}" if port else "")


@functools.lru_cache(maxsize=4096)
def host_problem(host: str) -> str | None:
    """Why a (lowercase, ASCII) host may not be reached by name, or None."""
    if not host:
        return "empty host"
    if host.endswith("."):
        return "trailing dot in host"
    if host.startswith("["):
        return "numeric host"
    try:
        ipaddress.ip_address(host)
        return "numeric host"
    except ValueError:
        pass
    labels = host.split(".")
    if all(label.isdigit() or label.startswith("0x") for label in labels):
        return "numeric host"  # 2130706433, 0x7f.1, 127.1: inet_aton forms
    if len(host) > 253 or not all(_HOST_LABEL.match(label) for label in labels):
        return "invalid host name"
    if labels[-1].isdigit():
        return "numeric host"
    return None


def unreachable_reason(url: str, allowed_origins: frozenset[str] | tuple[str, ...]) -> str | None:
    """Why a canonical URL may not be fetched by this source, or None when it may.

    The origin comparison alone is not the check (URL-11, URL-12): the address must be
    https, carry no userinfo and no port, no whitespace or backslash, and name by DNS name
    exactly one of the allowed origins.
    """
    if "\\" in url:
        return "backslash in address"
    if _WHITESPACE.search(url):
        return "whitespace or control character in address"
    plain = _PLAIN_HTTPS.fullmatch(url)
    if plain is not None:
        # What urlsplit would find: scheme https, and a netloc that is this bare ASCII host.
        host = plain.group(1)
    else:
        refusal, host = _https_host(url)
        if refusal:
            return refusal
    problem = host_problem(host)
    if problem:
        return problem
    if f"https://{host}" not in allowed_origins:
        return "origin not in allowed_origins"
    return None


def _https_host(url: str) -> tuple[str | None, str]:
    """(why not, "") when `url` is not https with a bare ASCII host; else (None, host)."""
    # Non-ASCII in path or query is percent-encoded on the wire; only the host is checked.
    parts = urlsplit(url)
    if parts.scheme != "https":
        return "not https", ""
    userinfo, host, port = _split_netloc(parts.netloc)
    if userinfo is not None:
        return "userinfo in address", ""
    if port is not None:
        return "port other than 443", ""
    try:
        host.encode("ascii")
    except UnicodeEncodeError:
        return "non-ASCII host", ""
    return None, host


def is_canonical_origin(text: str) -> bool:
    """True for exactly `https://<lowercase DNS host>`: no port, path, slash or userinfo (D-40)."""
    if not text.startswith("https://"):
        return False
    host = text[len("https://"):]
    if not host or any(ch in host for ch in "/?#@:\\") or host != host.lower():
        return False
    try:
        host.encode("ascii")
    except UnicodeEncodeError:
        return False
    return host_problem(host) is None


def address(link: str, base: str | None, allowed_origins: frozenset[str] | tuple[str, ...]) -> Address:
    """Resolve and canonicalise `link`, and say whether this source may fetch it."""
    url = canonicalise(link, base)
    return Address(url, unreachable_reason(url, allowed_origins))


def query_parameter_names(url: str) -> list[str]:
    """Names of the query's parameters, percent-decoded, in order."""
    from urllib.parse import parse_qsl

    return [name for name, _ in parse_qsl(urlsplit(url).query, keep_blank_values=True)]


def origin_fix(text: str) -> tuple[tuple[str, ...], str | None]:
    """Why `text` is not a canonical origin, cause by cause, and the canonical origin it most
    likely means (None when no origin this source could use is meant: another port, a
    numeric host). A canonical origin gives ((), text)."""
    if is_canonical_origin(text):
        return (), text
    causes: list[str] = []
    stripped = text.strip()
    if stripped != text:
        causes.append("it has surrounding whitespace")
    scheme, sep, rest = stripped.partition("://")
    if not sep:
        causes.append("it has no https:// scheme")
        scheme, rest = "https", stripped
    elif scheme.lower() != "https":
        causes.append(f"the scheme is {scheme}, and collections fetch only https")
    elif scheme != "https":
        causes.append("the scheme is not lowercase")
    netloc = re.split(r"[/?#]", rest, maxsplit=1)[0]
    tail = rest[len(netloc):]
    if tail == "/":
        causes.append("it ends with a slash")
    elif tail:
        causes.append("it carries a path, query or fragment")
    usable = True
    if "@" in netloc:
        causes.append("it carries userinfo")
        netloc = netloc.rsplit("@", 1)[1]
    host, colon, port = netloc.rpartition(":") if ":" in netloc and not netloc.endswith("]") else (netloc, "", "")
    if colon:
        if port == "443":
            causes.append("it names the default port :443")
        else:
            causes.append(f"it names port {port}; collections reach only port 443")
            usable = False
    if host != host.lower():
        causes.append("the host is not lowercase")
    host = host.lower()
    if host.endswith("."):
        causes.append("the host ends with a dot")
        host = host.rstrip(".")
    try:
        ascii_host = host.encode("idna").decode("ascii") if host else host
    except UnicodeError:
        ascii_host = None
    if ascii_host is not None and ascii_host != host:
        causes.append(f"the host is not written in ASCII (its punycode is {ascii_host})")
    problem = host_problem(ascii_host) if ascii_host is not None else "invalid host name"
    if problem is not None:
        causes.append(f"{problem} {host!r}" if problem != "trailing dot in host" else problem)
        usable = False
    if not causes:
        causes.append("it is not of the form https://<lowercase host>")
    return tuple(causes), (f"https://{ascii_host}" if usable else None)
