"""robots.txt (FETCH-22, FETCH-23, D-57, D-58; RFC 9309). Cases are our own, written in the
categories of google/robotstxt's robots_test.cc, plus the RFC's own examples."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from collection.fetch.robots import (
    ALLOW_ALL, DISALLOW_ALL, MAX_PARSE_BYTES, Verdict, normalise, parse_robots, robots_policy_for_response,
)

BOT = "FooBot"


def allowed(robots: str | bytes, path: str, token: str = BOT) -> bool:
    return parse_robots(robots).verdict(token, path).allowed


# (category, robots.txt, path, token, expected allowed)
CASES = [
    # --- ID_LineSyntax ----------------------------------------------------------------------
    ("line", "user-agent: FooBot\ndisallow: /\n", "/x", BOT, False),
    ("line", "foo: FooBot\nbar: /\n", "/x", BOT, True),                          # unknown keys
    ("line", "user-agent FooBot\ndisallow /\n", "/x", BOT, False),               # forgotten colon, two words: read
    ("line", "user-agent FooBot\ndisallow /x /y\n", "/x", BOT, True),            # three words: not a record
    ("line", "  User-Agent \t:  FooBot  \n\tDisallow :\t/x  \n", "/x", BOT, False),
    ("line", "User-agent: FooBot # a comment\nDisallow: /x # /y\n", "/y", BOT, True),
    ("line", "User-agent: FooBot # a comment\nDisallow: /x # /y\n", "/x", BOT, False),
    ("line", "# Disallow: /\nUser-agent: FooBot\n#Disallow: /x\n", "/x", BOT, True),
    ("line", "User-agent: FooBot\rDisallow: /x\r", "/x", BOT, False),            # CR
    ("line", "User-agent: FooBot\r\nDisallow: /x\r\n", "/x", BOT, False),        # CRLF
    ("line", "User-agent: FooBot\nDisallow: /a\r\nDisallow: /b\rDisallow: /c", "/c", BOT, False),  # mixed, no final EOL
    ("line", "\ufeffUser-agent: FooBot\nDisallow: /x\n", "/x", BOT, False),     # BOM
    ("line", b"\xef\xbb\xbfUser-agent: FooBot\nDisallow: /x\n", "/x", BOT, False),
    ("line", "useragent: FooBot\ndisalow: /x\n", "/x", BOT, False),             # tolerated misspellings
    ("line", "user agent: FooBot\ndissallow: /x\n", "/x", BOT, False),
    ("line", "User-agent: FooBot\nDisallow:\n", "/x", BOT, True),                # empty disallow
    ("line", "User-agent: FooBot\nDisallow: /x:y\n", "/x:y", BOT, False),       # colon inside the value
    # --- grouping (ID_REPMatching) -------------------------------------------------------------
    ("group", "disallow: /\nuser-agent: FooBot\nallow: /x\n", "/y", BOT, True),  # rule before any user-agent
    ("group", "user-agent: FooBot\nuser-agent: BarBot\ndisallow: /x\n", "/x", "BarBot", False),
    ("group", "user-agent: FooBot\ndisallow: /a\nuser-agent: BarBot\ndisallow: /b\nuser-agent: FooBot\ndisallow: /c\n", "/c", BOT, False),
    ("group", "user-agent: FooBot\ndisallow: /a\nuser-agent: BarBot\ndisallow: /b\nuser-agent: FooBot\ndisallow: /c\n", "/a", BOT, False),
    ("group", "user-agent: FooBot\ndisallow: /a\nuser-agent: BarBot\ndisallow: /b\nuser-agent: FooBot\ndisallow: /c\n", "/b", BOT, True),
    ("group", "user-agent: FooBot\nsitemap: https://example.com/s.xml\nuser-agent: BarBot\ndisallow: /\n", "/x", BOT, False),  # sitemap does not end a group
    ("group", "user-agent: FooBot\ncrawl-delay: 5\nuser-agent: BarBot\ndisallow: /\n", "/x", BOT, False),  # nor does crawl-delay
    ("group", "user-agent: FooBot\nunknown: x\nuser-agent: BarBot\ndisallow: /\n", "/x", BOT, False),       # nor an unknown record
    ("group", "user-agent: FooBot\n\n\nuser-agent: *\ndisallow: /\n", "/x", BOT, False),  # blank lines do not separate
    ("group", "user-agent: *\ndisallow: /\nuser-agent: FooBot\nallow: /\n", "/x", BOT, True),   # D-57: named group wins
    ("group", "user-agent: *\ndisallow: /\nuser-agent: FooBot\nallow: /\n", "/x", "Other", False),
    ("group", "user-agent: *\ndisallow: /a\nuser-agent: FooBot\ndisallow: /b\n", "/a", BOT, True),  # * rules not added to a named group
    ("group", "user-agent: *\ndisallow: /a\nuser-agent: *\ndisallow: /b\n", "/b", BOT, False),      # * groups merge
    ("group", "user-agent: FooBot\n", "/x", BOT, True),
    ("group", "", "/x", BOT, True),
    # --- ID_UserAgentValue ---------------------------------------------------------------------
    ("agent", "User-agent: FooBot/1.0\nDisallow: /\n", "/x", BOT, False),
    ("agent", "User-agent: foobot\nDisallow: /\n", "/x", BOT, False),
    ("agent", "User-agent: FOOBOT\nDisallow: /\n", "/x", "foobot", False),
    ("agent", "User-agent: Foo Bot\nDisallow: /\n", "/x", BOT, True),            # product token is "Foo"
    ("agent", "User-agent: Foo Bot\nDisallow: /\n", "/x", "Foo", False),
    ("agent", "User-agent: FooBotX\nDisallow: /\n", "/x", BOT, True),            # no prefix matching
    ("agent", "User-agent: Foo\nDisallow: /\n", "/x", BOT, True),
    ("agent", "User-agent: *   \nDisallow: /\n", "/x", BOT, False),
    ("agent", "User-agent: *Bot\nDisallow: /\n", "/x", BOT, True),               # not the global group
    ("agent", "User-agent: Mostly-Right_Bot\nDisallow: /\n", "/x", "mostly-right_bot", False),
    # --- case sensitivity ----------------------------------------------------------------------
    ("case", "USER-AGENT: FooBot\nDISALLOW: /x\n", "/x", BOT, False),
    ("case", "User-agent: FooBot\nDisallow: /X\n", "/x", BOT, True),             # paths are case-sensitive
    ("case", "User-agent: FooBot\nDisallow: /x\n", "/X", BOT, True),
    # --- longest match ---------------------------------------------------------------------------
    ("longest", "user-agent: FooBot\nallow: /folder/page\ndisallow: /folder/\n", "/folder/page", BOT, True),
    ("longest", "user-agent: FooBot\nallow: /folder/page\ndisallow: /folder/\n", "/folder/other", BOT, False),
    ("longest", "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n", "/page.html", BOT, False),
    ("longest", "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n", "/page", BOT, True),
    ("longest", "user-agent: FooBot\nallow: /$\ndisallow: /\n", "/", BOT, True),
    ("longest", "user-agent: FooBot\nallow: /$\ndisallow: /\n", "/page", BOT, False),
    ("longest", "user-agent: FooBot\ndisallow: /foo\nallow: /foo\n", "/foo", BOT, True),      # tie: allow wins
    ("longest", "user-agent: FooBot\nallow: /foo\ndisallow: /foo\n", "/foo", BOT, True),
    ("longest", "user-agent: FooBot\ndisallow: /a\nuser-agent: FooBot\nallow: /a/b\n", "/a/b/c", BOT, True),  # across merged groups
    ("longest", "user-agent: FooBot\nallow: /a*\ndisallow: /ab\n", "/abc", BOT, True),    # "/a*" and "/ab" tie at 3
    # --- encoding (RFC 9309 §2.2.2) ----------------------------------------------------------------
    ("encoding", "user-agent: FooBot\ndisallow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n",
     "/foo/bar?qux=taz&baz=http://foo.bar?tar&par", BOT, False),
    ("encoding", "user-agent: FooBot\ndisallow: /foo/bar/ツ\n", "/foo/bar/%E3%83%84", BOT, False),
    ("encoding", "user-agent: FooBot\ndisallow: /foo/bar/ツ\n", "/foo/bar/ツ", BOT, False),
    ("encoding", "user-agent: FooBot\ndisallow: /foo/bar/%E3%83%84\n", "/foo/bar/ツ", BOT, False),
    ("encoding", "user-agent: FooBot\ndisallow: /foo/bar/%e3%83%84\n", "/foo/bar/%E3%83%84", BOT, False),  # hex case
    ("encoding", "user-agent: FooBot\ndisallow: /foo/bar/%62%61%7A\n", "/foo/bar/baz", BOT, False),       # unreserved decoded
    ("encoding", "user-agent: FooBot\ndisallow: /foo/bar/baz\n", "/foo/bar/%62%61%7A", BOT, False),
    ("encoding", "user-agent: FooBot\ndisallow: /a%3Ab\n", "/a:b", BOT, True),    # reserved keeps its spelling
    ("encoding", "user-agent: FooBot\ndisallow: /a%2Fb\n", "/a/b", BOT, True),
    ("encoding", "user-agent: FooBot\ndisallow: /a b\n", "/a%20b", BOT, False),
    ("encoding", b"user-agent: FooBot\ndisallow: /caf\xe9\n", "/caf%E9", BOT, False),  # not UTF-8: octet for octet
    # --- special characters (§2.2.3) -----------------------------------------------------------------
    ("special", "user-agent: FooBot\ndisallow: /foo/*/qux\n", "/foo/bar/qux", BOT, False),
    ("special", "user-agent: FooBot\ndisallow: /foo/*/qux\n", "/foo/qux", BOT, True),
    ("special", "user-agent: FooBot\ndisallow: /*.php$\n", "/index.php", BOT, False),
    ("special", "user-agent: FooBot\ndisallow: /*.php$\n", "/index.php?x=1", BOT, True),
    ("special", "user-agent: FooBot\ndisallow: /*.php\n", "/index.php?x=1", BOT, False),
    ("special", "user-agent: FooBot\ndisallow: /this/path/exactly$\n", "/this/path/exactly/", BOT, True),
    ("special", "user-agent: FooBot\ndisallow: *\n", "/anything", BOT, False),
    ("special", "user-agent: FooBot\ndisallow: /***a**b$\n", "/xaxxb", BOT, False),
    ("special", "user-agent: FooBot\ndisallow: /a*b*c$\n", "/abcabc", BOT, False),
    ("special", "user-agent: FooBot\ndisallow: /a*b*c$\n", "/abcab", BOT, True),
    ("special", "user-agent: FooBot\ndisallow: /path/file-with-a-%2A.html\n", "/path/file-with-a-*.html", BOT, False),
    ("special", "user-agent: FooBot\ndisallow: /path/file-with-a-%2A.html\n", "/path/file-with-a-x.html", BOT, True),
    ("special", "user-agent: FooBot\ndisallow: /path/foo-%24\n", "/path/foo-$", BOT, False),
    ("special", "user-agent: FooBot\ndisallow: /foo$bar\n", "/foo$bar", BOT, False),      # a $ inside is literal
    ("special", "user-agent: FooBot\ndisallow: /foo$bar\n", "/foo", BOT, True),
    ("special", "user-agent: FooBot\ndisallow: private\n", "/private", BOT, True),        # not a path: never matches
    # --- index.html: Google's extension is deliberately not applied ---------------------------------
    ("index", "user-agent: FooBot\nallow: /dir/index.html\ndisallow: /dir/\n", "/dir/", BOT, False),
    ("index", "user-agent: FooBot\nallow: /dir/index.html\ndisallow: /dir/\n", "/dir/index.html", BOT, True),
    # --- /robots.txt is always allowed ---------------------------------------------------------------------
    ("robots", "user-agent: *\ndisallow: /\n", "/robots.txt", BOT, True),
    ("robots", "user-agent: *\ndisallow: /\n", "/robots.txt?x", BOT, False),
]


@pytest.mark.parametrize("category, robots, path, token, expected", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_table(category, robots, path, token, expected):
    assert allowed(robots, path, token) is expected


# --- RFC 9309 §5 examples ------------------------------------------------------------------------

RFC_SIMPLE = """User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
"""


@pytest.mark.parametrize("token, path, expected", [
    ("foobot", "/example/page.html", True), ("foobot", "/example/allowed.gif", True),
    ("foobot", "/example/other", False), ("foobot", "/publications/", False),
    ("barbot", "/example/page.html", False), ("bazbot", "/example/page.html", False),
    ("barbot", "/example/other", True), ("barbot", "/x.gif", True),
    ("quxbot", "/example/page.html", True), ("quxbot", "/x.gif", True),
    ("otherbot", "/x.gif", False), ("otherbot", "/example/x", False),
    ("otherbot", "/publications/x", True),
    ("otherbot", "/publications/x.gif", True),    # "/publications/" is longer than "*.gif$"
])
def test_rfc9309_simple_example(token, path, expected):
    assert parse_robots(RFC_SIMPLE).verdict(token, path).allowed is expected


@pytest.mark.parametrize("path, expected", [
    ("/example/page/", True), ("/example/page/disallowed.gif", False), ("/example/page/other.gif", True),
])
def test_rfc9309_longest_match_example(path, expected):
    robots = "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n"
    assert parse_robots(robots).verdict("foobot", path).allowed is expected


@pytest.mark.parametrize("raw, pattern, expected", [
    ("/foo/bar?baz=quz", False, "/foo/bar?baz=quz"),
    ("/foo/bar/ツ", False, "/foo/bar/%E3%83%84"),
    ("/foo/bar/%E3%83%84", False, "/foo/bar/%E3%83%84"),
    ("/foo/bar/%62%61%7A", False, "/foo/bar/baz"),
    ("/a*$", False, "/a%2A%24"),
    ("/a*$", True, "/a*$"),
    ("/a$b$", True, "/a%24b$"),
    ("/100%", False, "/100%25"),
    ("/%zz", False, "/%25zz"),
])
def test_rfc9309_normal_form(raw, pattern, expected):
    assert normalise(raw, pattern=pattern) == expected


# --- the deciding rule and its line -----------------------------------------------------------------

def test_verdict_names_the_deciding_rule_and_line():
    rules = parse_robots("# header\nUser-agent: *\nDisallow: /private   # keep out\nAllow: /private/open\n")
    assert rules.verdict(BOT, "/private/x") == Verdict(False, "Disallow: /private", 3)
    assert rules.verdict(BOT, "/private/open/1") == Verdict(True, "Allow: /private/open", 4)
    assert rules.verdict(BOT, "/public") == Verdict(True, None, None)


def test_equal_length_same_kind_keeps_the_first_line():
    rules = parse_robots("User-agent: *\nDisallow: /a*\nDisallow: /ab\n")
    assert rules.verdict(BOT, "/abc").line == 2


# --- Crawl-delay ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("robots, token, expected", [
    ("User-agent: *\nCrawl-delay: 10\n", BOT, 10.0),
    ("User-agent: *\nCrawl-delay: 2.5\n", BOT, 2.5),
    ("User-agent: *\nCrawl-delay: .5\n", BOT, 0.5),
    ("User-agent: *\nCrawl-delay: abc\n", BOT, None),
    ("User-agent: *\nCrawl-delay: -1\n", BOT, None),
    ("User-agent: *\nCrawl-delay: 1e9\n", BOT, None),
    ("User-agent: *\nCrawl-delay: inf\n", BOT, None),
    ("User-agent: *\nCrawl-delay: 3\nCrawl-delay: 7\nCrawl-delay: 5\n", BOT, 7.0),       # the largest
    ("Crawl-delay: 9\nUser-agent: *\n", BOT, None),                                     # before any user-agent
    # Crawl-delay does not end a group (§2.2.4), so these two lines make one group: the larger wins
    ("User-agent: *\nCrawl-delay: 9\nUser-agent: FooBot\nCrawl-delay: 2\n", BOT, 9.0),
    ("User-agent: *\nDisallow: /x\nCrawl-delay: 9\nUser-agent: FooBot\nDisallow: /y\nCrawl-delay: 2\n", BOT, 2.0),
    ("User-agent: *\nDisallow: /x\nCrawl-delay: 9\nUser-agent: FooBot\nDisallow: /y\nCrawl-delay: 2\n", "Other", 9.0),
    ("User-agent: FooBot\nDisallow: /\n", BOT, None),
    ("crawl delay: 4\n", BOT, None),
])
def test_crawl_delay(robots, token, expected):
    assert parse_robots(robots).crawl_delay(token) == expected


# --- 500 KiB -----------------------------------------------------------------------------------------------

def test_only_the_first_500_kib_are_parsed():
    head = "User-agent: *\nDisallow: /early\n"
    filler = "# " + "x" * 1000 + "\n"
    body = head + filler * (MAX_PARSE_BYTES // len(filler) + 5) + "Disallow: /late\n"
    rules = parse_robots(body)
    assert rules.truncated
    assert not rules.verdict(BOT, "/early").allowed
    assert rules.verdict(BOT, "/late").allowed


def test_a_line_cut_by_the_limit_is_dropped():
    head = "User-agent: *\nDisallow: /\n"
    prefix = head + "#" * (MAX_PARSE_BYTES - len(head) - 12) + "\n"
    body = prefix + "Allow: /abcdefghijklmnop\n"     # the limit falls inside this line
    assert len(body.encode()) > MAX_PARSE_BYTES
    rules = parse_robots(body)
    assert not rules.verdict(BOT, "/a").allowed       # not turned into "Allow: /a"


# --- D-58 -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("status, complete, expected", [
    (200, True, "parsed"), (200, False, "disallow_all"), (204, True, "parsed"),
    (301, True, "allow_all"),                 # redirects not followable: unavailable (RFC 9309 §2.3.1.2)
    (400, True, "allow_all"), (401, True, "allow_all"), (403, True, "allow_all"),
    (404, True, "allow_all"), (410, True, "allow_all"),
    (429, True, "allow_all"),                 # D-58: every 4xx allows all (RFC 9309 §2.3.1.3)
    (500, True, "disallow_all"), (503, True, "disallow_all"), (599, True, "disallow_all"),
    (None, False, "disallow_all"),            # network error
    (100, True, "disallow_all"),
])
def test_d58_status_rules(status, complete, expected):
    rules = robots_policy_for_response(status, b"User-agent: *\nDisallow: /x\n", complete)
    assert rules.basis == expected


def test_allow_all_and_disallow_all():
    assert ALLOW_ALL.verdict(BOT, "/anything").allowed
    assert not DISALLOW_ALL.verdict(BOT, "/anything").allowed
    assert DISALLOW_ALL.verdict(BOT, "/robots.txt").allowed
    assert ALLOW_ALL.crawl_delay(BOT) is None


# --- universal rules -----------------------------------------------------------------------------------------

robots_alphabet = st.sampled_from(["User-agent:", "Disallow:", "Allow:", "Crawl-delay:", "Sitemap:", " ", "\n",
                                   "\r", "#", "*", "$", "/", "%", "2A", "zz", "FooBot", "a", "é", ":", "\x00", "\t"])


@settings(max_examples=300)
@given(st.one_of(st.text(max_size=300), st.binary(max_size=300),
                 st.lists(robots_alphabet, max_size=80).map("".join)),
       st.text(max_size=40))
def test_property_parser_and_matcher_never_raise(text, path):
    rules = parse_robots(text)
    assert rules.basis == "parsed"
    verdict = rules.verdict(BOT, "/" + path)
    assert isinstance(verdict.allowed, bool)
    rules.crawl_delay(BOT)


@settings(max_examples=200)
@given(st.text(alphabet="ab/", max_size=12), st.text(alphabet="ab/", max_size=12))
def test_property_plain_prefix_rule_is_a_prefix_test(pattern, path):
    rules = parse_robots(f"User-agent: *\nDisallow: /{pattern}\n")
    assert rules.verdict(BOT, "/" + path).allowed is (not ("/" + path).startswith("/" + pattern))


def test_wildcards_are_linear_not_exponential():
    pattern = "/" + "*a" * 40 + "$"
    path = "/" + "a" * 20000 + "b"
    rules = parse_robots(f"User-agent: *\nDisallow: {pattern}\n")
    # A backtracking matcher takes astronomically long here; the verdict must be "no match".
    assert rules.verdict(BOT, path).allowed


# --- the robots-check command -----------------------------------------------------------------------------

def test_robots_check_command(tmp_path):
    import json

    from click.testing import CliRunner

    from collection.cli import cli

    robots = tmp_path / "robots.txt"
    robots.write_text("User-agent: *\nDisallow: /private # x\nAllow: /private/open\nCrawl-delay: 2\n")
    runner = CliRunner()
    result = runner.invoke(cli, ["robots-check", "--robots", str(robots), "--agent", "MostlyRightDataHarness", "--json",
                                 "https://www.example.com/private/x", "/private/open?a#frag", "https://www.example.com"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["crawl_delay"] == 2.0
    assert [(v["path"], v["allowed"], v["line"]) for v in out["verdicts"]] == [
        ("/private/x", False, 2), ("/private/open?a", True, 3), ("/", True, None)]
    human = runner.invoke(cli, ["robots-check", "--robots", str(robots), "--agent", "X", "/private/x"])
    assert human.exit_code == 0 and "disallowed" in human.output and "line 2" in human.output
    missing = runner.invoke(cli, ["robots-check", "--robots", str(tmp_path / "nope"), "--agent", "X", "/"])
    assert missing.exit_code == 2
