"""Differential test: our RFC 9309 matcher (collection.fetch.robots) against Protego, on a corpus
of varied robots.txt files. Every disagreement must be listed in EXPECTED_DISAGREEMENTS
with the reason ours is right (RFC 9309, or a documented decision); the test fails on any
unexplained disagreement, and on a listed one that no longer disagrees (a stale entry).

Protego is a test-only dependency; the product never imports it.
"""

from __future__ import annotations

import pytest

import protego  # noqa: E402  (test extra; a missing install must fail, not skip)

from collection.fetch.robots import parse_robots  # noqa: E402

TOKEN = "MostlyRightDataHarness"
ORIGIN = "https://www.example.com"

# name -> (robots.txt, paths to ask about)
CORPUS: dict[str, tuple[str, tuple[str, ...]]] = {
    "empty": ("", ("/", "/a", "/a/b?c=d")),
    "disallow-all-star": ("User-agent: *\nDisallow: /\n", ("/", "/x", "/robots.txt")),
    "allow-all-star": ("User-agent: *\nDisallow:\n", ("/", "/x")),
    "named-disallow": (f"User-agent: {TOKEN}\nDisallow: /private\n", ("/private", "/private/x", "/public", "/privat")),
    "named-beats-star": (f"User-agent: *\nDisallow: /\n\nUser-agent: {TOKEN}\nAllow: /\nDisallow: /admin\n",
                         ("/", "/page", "/admin/x")),
    "other-bot-only": ("User-agent: Googlebot\nDisallow: /\n", ("/", "/x")),
    "two-agents-one-group": (f"User-agent: Googlebot\nUser-agent: {TOKEN}\nDisallow: /shared\n",
                             ("/shared", "/shared/x", "/other")),
    "longest-match": ("User-agent: *\nAllow: /folder/page\nDisallow: /folder/\n",
                      ("/folder/page", "/folder/page2", "/folder/other", "/folder")),
    "tie-allow-wins": ("User-agent: *\nDisallow: /same\nAllow: /same\n", ("/same", "/same/x", "/sam")),
    "wildcard-ext": ("User-agent: *\nDisallow: /*.pdf$\nDisallow: /*?print=\n",
                     ("/doc.pdf", "/doc.pdf?x", "/a/b/c.pdf", "/page?print=1", "/page?x=1&print=1", "/page")),
    "wildcard-middle": ("User-agent: *\nDisallow: /a/*/edit\n", ("/a/b/edit", "/a/b/c/edit", "/a/edit", "/a/b/editor")),
    "anchor-root": ("User-agent: *\nAllow: /$\nDisallow: /\n", ("/", "/index.html", "/x")),
    "many-stars": ("User-agent: *\nDisallow: /**x**y*$\n", ("/axby", "/xy", "/x/y", "/yx")),
    "query-rules": ("User-agent: *\nDisallow: /search?\nAllow: /search?q=public\n",
                    ("/search", "/search?", "/search?q=public", "/search?q=private")),
    "merge-repeated": (f"User-agent: {TOKEN}\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n\n"
                       f"User-agent: {TOKEN}\nDisallow: /c\n", ("/a", "/b", "/c", "/d")),
    "case-keys": ("USER-AGENT: *\nDISALLOW: /Upper\nallow: /Upper/ok\n", ("/Upper", "/upper", "/Upper/ok")),
    "comments": ("# top\nUser-agent: * # all\nDisallow: /x # not /y\n#Disallow: /z\n", ("/x", "/y", "/z")),
    "crlf": ("User-agent: *\r\nDisallow: /crlf\r\nAllow: /crlf/ok\r\n", ("/crlf", "/crlf/ok", "/other")),
    "sitemap-between": (f"User-agent: {TOKEN}\nSitemap: {ORIGIN}/sitemap.xml\nDisallow: /s\n",
                        ("/s", "/t")),
    "rules-before-agent": ("Disallow: /early\nUser-agent: *\nDisallow: /late\n", ("/early", "/late")),
    "encoded-utf8": ("User-agent: *\nDisallow: /caf%C3%A9\nDisallow: /ツ\n",
                     ("/caf%C3%A9", "/café", "/%E3%83%84", "/ツ", "/cafe")),
    "encoded-unreserved": ("User-agent: *\nDisallow: /%7Euser\nDisallow: /a%2db\n", ("/~user", "/%7Euser", "/a-b")),
    "encoded-reserved": ("User-agent: *\nDisallow: /a%3Ab\nDisallow: /c:d\n", ("/a:b", "/a%3Ab", "/c:d", "/c%3Ad")),
    "encoded-slash": ("User-agent: *\nDisallow: /a%2Fb\n", ("/a/b", "/a%2Fb", "/a%2fb")),
    "literal-star-dollar": ("User-agent: *\nDisallow: /file-%2A.html\nDisallow: /price-%24\n",
                            ("/file-*.html", "/file-x.html", "/price-$", "/price-5")),
    "dollar-inside": ("User-agent: *\nDisallow: /a$b\n", ("/a$b", "/a", "/a$bc")),
    "index-html": ("User-agent: *\nAllow: /dir/index.html\nDisallow: /dir/\n", ("/dir/", "/dir/index.html", "/dir/x")),
    "agent-with-version": (f"User-agent: {TOKEN}/1.0\nDisallow: /v\n", ("/v", "/w")),
    "agent-prefix": ("User-agent: MostlyRight\nDisallow: /p\n", ("/p", "/q")),
    "agent-case": (f"User-agent: {TOKEN.upper()}\nDisallow: /u\n", ("/u", "/v")),
    "agent-star-suffix": ("User-agent: Mostly*\nDisallow: /s\n", ("/s",)),
    "unknown-record-between": (f"User-agent: {TOKEN}\nFoo: bar\nUser-agent: Other\nDisallow: /k\n", ("/k", "/l")),
    "crawl-delay-between": (f"User-agent: {TOKEN}\nCrawl-delay: 3\nUser-agent: Other\nDisallow: /cd\n", ("/cd", "/x")),
    "missing-colon": ("User-agent *\nDisallow /nocolon\n", ("/nocolon", "/x")),
    "typos": ("Useragent: *\nDissallow: /t1\nDisalow: /t2\n", ("/t1", "/t2", "/t3")),
    "blank-lines-in-group": ("User-agent: a\n\nUser-agent: *\n\nDisallow: /blank\n", ("/blank", "/x")),
    "long-patterns": ("User-agent: *\nDisallow: /a/b/c/d/e/f/g\nAllow: /a/b/c\nDisallow: /a\n",
                      ("/a", "/a/b/c", "/a/b/c/d", "/a/b/c/d/e/f/g/h", "/b")),
    "space-in-pattern": ("User-agent: *\nDisallow: /a b\n", ("/a%20b", "/a b", "/ab")),
    "absolute-url-pattern": (f"User-agent: *\nDisallow: {ORIGIN}/abs\n", ("/abs", "/x")),
    "star-only": ("User-agent: *\nDisallow: *\nAllow: /ok$\n", ("/", "/ok", "/ok/x")),
    "empty-allow": ("User-agent: *\nAllow:\nDisallow: /e\n", ("/e", "/f")),
    "query-encoded": ("User-agent: *\nDisallow: /q?a=%2F\n", ("/q?a=%2F", "/q?a=/", "/q?a=%2f")),
}

# (file, path) -> why ours differs from Protego and why ours is the one to keep.
_RESERVED = ("RFC 9309 §2.2.2: a percent-encoded octet is decoded only when it is an unreserved character; "
             "':' is reserved, so '%3A' and ':' stay different. Protego decodes every escape but %2F/%25.")
_OTHER_RECORDS = ("RFC 9309 §2.2.4: records outside the protocol MUST NOT interfere with group parsing, so the two "
                  "user-agent lines form one group and its Disallow applies to us. Protego lets any record end a group.")

EXPECTED_DISAGREEMENTS: dict[tuple[str, str], str] = {
    ("encoded-reserved", "/a:b"): _RESERVED,
    ("encoded-reserved", "/c%3Ad"): _RESERVED,
    ("index-html", "/dir/"): "Google's 'Allow: /dir/index.html also allows /dir/' extension is not in RFC 9309; "
                             "we do not grant an allow the file does not state (Protego does).",
    ("agent-with-version", "/v"): "RFC 9309 §2.2.1 matches the product token; 'Name/1.0' names the token 'Name' "
                                  "(as Google reads it), so the group is ours. Protego compares the whole value.",
    ("agent-prefix", "/p"): "RFC 9309 §2.2.1: the product token must match, case-insensitively, as a whole; "
                            "'MostlyRight' is not 'MostlyRightDataHarness'. Protego matches it as a substring.",
    ("agent-star-suffix", "/s"): "RFC 9309 has no wildcard inside a user-agent value; 'Mostly*' names the token "
                                 "'Mostly', not us. Protego strips the '*' and matches a prefix.",
    ("unknown-record-between", "/k"): _OTHER_RECORDS,
    ("crawl-delay-between", "/cd"): _OTHER_RECORDS + " Crawl-delay is such a record.",
}


def _ours(robots: str, path: str) -> bool:
    return parse_robots(robots).verdict(TOKEN, path).allowed


def _protego(robots: str, path: str) -> bool:
    return protego.Protego.parse(robots).can_fetch(ORIGIN + path, TOKEN)


def _disagreements() -> dict[tuple[str, str], tuple[bool, bool]]:
    found = {}
    for name, (robots, paths) in CORPUS.items():
        for path in paths:
            ours, theirs = _ours(robots, path), _protego(robots, path)
            if ours != theirs:
                found[(name, path)] = (ours, theirs)
    return found


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 30
    assert sum(len(paths) for _, paths in CORPUS.values()) >= 90


def test_every_disagreement_with_protego_is_explained():
    found = _disagreements()
    unexplained = {key: value for key, value in found.items() if key not in EXPECTED_DISAGREEMENTS}
    assert not unexplained, "unexplained (ours, protego) disagreements: " + repr(unexplained)


def test_no_stale_explanations():
    found = _disagreements()
    stale = [key for key in EXPECTED_DISAGREEMENTS if key not in found]
    assert not stale, f"listed disagreements that no longer occur: {stale}"
