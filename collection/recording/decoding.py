"""Content-encodings of stored bodies, removed with a cap on what comes out (shell helpers).

Fixtures store decoded bodies. A web archive from another crawler holds bodies as the origin
sent them: gzip or deflate, and from browsers' crawls `br` (Brotli) and `zstd` as well.
gzip and deflate are zlib's; `br` and `zstd` are decoded by the well-kept `brotli` and
`zstandard` packages (both ship wheels for every zipapp target). warcio's own Brotli path
calls a method the current `brotli` package no longer has, so nothing here goes through it.

Every decoder stops once the output passes `cap` (a gzip bomb in an archive or a fixture
file stays a refusal, not an out-of-memory), and says whether the input ended cleanly: a
stream cut short decodes to the bytes it held and `complete=False`.

`carries_magic` says whether bytes begin as a stream of a coding does (gzip's 1f 8b, zstd's
frame magic, a zlib header). Web archivers such as wabac.js store the body the browser saw —
already decoded — under the origin's `Content-Encoding`; the WARC importer tells those apart
from damaged streams with it (docs/fixtures.md).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

STEP = 1 << 20
ZSTD_SLICE = 256      # zstd's best ratio is ~40,000:1, so a slice yields at most ~10 MiB


class TooLarge(ValueError):
    """The decoded body passed the cap."""


class Undecodable(ValueError):
    """The encoding is unknown, or the bytes are not in it."""


class UnknownCoding(Undecodable):
    """A coding this tool has no decoder for."""


@dataclass(frozen=True)
class Decoded:
    body: bytes
    complete: bool        # False: the encoded stream ended before its end marker


def encodings_of(header: str | None) -> list[str]:
    """The codings of a Content-Encoding value, in the order they were applied."""
    return [t.strip().lower() for t in (header or "").split(",") if t.strip() and t.strip().lower() != "identity"]


def known(coding: str) -> bool:
    return coding in _DECODERS


def carries_magic(raw: bytes, coding: str) -> bool:
    """Whether `raw` begins as a `coding` stream must. False for `br` and raw deflate, which
    have no magic number: for them absence proves nothing, so callers need other evidence."""
    if coding in ("gzip", "x-gzip"):
        return raw[:2] == b"\x1f\x8b"
    if coding == "zstd":
        # a frame (28 b5 2f fd) or a skippable frame (5? 2a 4d 18), little-endian magics
        return raw[:4] == b"\x28\xb5\x2f\xfd" or (len(raw) >= 4 and raw[1:4] == b"\x2a\x4d\x18"
                                                      and raw[0] & 0xF0 == 0x50)
    if coding == "deflate":
        # RFC 1950: method 8, window <= 32 KiB, header checksum a multiple of 31
        return len(raw) >= 2 and raw[0] & 0x0F == 8 and raw[0] >> 4 <= 7 and (raw[0] << 8 | raw[1]) % 31 == 0
    return False


def decode(raw: bytes, header: str | None, cap: int) -> Decoded:
    """`raw` with every coding of `header` removed (last applied, first removed)."""
    body, complete = raw, True
    for coding in reversed(encodings_of(header)):
        decoder = _DECODERS.get(coding)
        if decoder is None:
            raise UnknownCoding(f"content encoding {coding!r} is not one this tool can decode")
        result = decoder(body, cap)
        body, complete = result.body, complete and result.complete
    return Decoded(body, complete)


def _zlib(raw: bytes, cap: int, wbits: int) -> Decoded:
    out = bytearray()
    data = raw
    while True:
        d = zlib.decompressobj(wbits)
        try:
            while data:
                out += d.decompress(data, STEP)
                if len(out) > cap:
                    raise TooLarge(f"decodes to more than {cap} bytes")
                data = d.unconsumed_tail
        except zlib.error as exc:
            raise Undecodable(f"not valid {'gzip' if wbits > 15 else 'deflate'} data: {exc}") from None
        if not d.eof:
            return Decoded(bytes(out), False)
        data = d.unused_data
        if wbits <= 15 or not data.strip(b"\x00"):
            return Decoded(bytes(out), True)
        # another gzip member follows (RFC 1952 allows several): decode it too


def _gzip(raw: bytes, cap: int) -> Decoded:
    return _zlib(raw, cap, 16 + zlib.MAX_WBITS)


def _deflate(raw: bytes, cap: int) -> Decoded:
    # HTTP's "deflate" is zlib-wrapped; some servers send raw deflate. Try both, as browsers do.
    try:
        return _zlib(raw, cap, zlib.MAX_WBITS)
    except Undecodable:
        return _zlib(raw, cap, -zlib.MAX_WBITS)


def _brotli(raw: bytes, cap: int) -> Decoded:
    import brotli

    d = brotli.Decompressor()
    out = bytearray()
    data = raw
    try:
        while True:
            piece = d.process(data, output_buffer_limit=STEP)
            data = b""
            out += piece
            if len(out) > cap:
                raise TooLarge(f"decodes to more than {cap} bytes")
            if d.is_finished():
                return Decoded(bytes(out), True)
            if not piece and d.can_accept_more_data():
                return Decoded(bytes(out), False)       # the stream needs bytes it never got
    except brotli.error as exc:
        raise Undecodable(f"not valid Brotli data: {exc}") from None


def _zstd(raw: bytes, cap: int) -> Decoded:
    import zstandard

    # decompressobj has no output limit, so the input goes in small slices: a slice of
    # ZSTD_SLICE bytes cannot expand past a few MiB, and the cap is checked after each.
    out = bytearray()
    data = raw
    try:
        while data:
            d = zstandard.ZstdDecompressor().decompressobj()
            while data and not d.eof:
                out += d.decompress(data[:ZSTD_SLICE])
                data = data[ZSTD_SLICE:]
                if len(out) > cap:
                    raise TooLarge(f"decodes to more than {cap} bytes")
            if not d.eof:
                return Decoded(bytes(out), False)
            data = d.unused_data + data          # another frame may follow
    except zstandard.ZstdError as exc:
        raise Undecodable(f"not valid zstd data: {exc}") from None
    return Decoded(bytes(out), True)


_DECODERS = {"gzip": _gzip, "x-gzip": _gzip, "deflate": _deflate, "br": _brotli, "zstd": _zstd}
