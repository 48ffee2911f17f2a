"""Resolution and canonicalisation (URL-01 to URL-12, URL-19, D-54)."""

import pytest
from hypothesis import given, strategies as st

from collection.urls import UrlError, address, canonicalise, remove_dot_segments, unreachable_reason

BASE = "https://www.example.com/decisions/2024/index.html?page=2"
ALLOWED = frozenset({"https://www.example.com"})


@pytest.mark.parametrize("link, base, expected", [
    ("item-1", BASE, "https://www.example.com/decisions/2024/item-1"),                     # URL-01
    ("../2023/", BASE, "https://www.example.com/decisions/2023/"),
    ("/a/./b/../c", BASE, "https://www.example.com/a/c"),                                   # D-54
    ("?page=3", BASE, "https://www.example.com/decisions/2024/index.html?page=3"),
    ("//www.example.com/x", BASE, "https://www.example.com/x"),
    ("HTTPS://WWW.Example.COM/Path", None, "https://www.example.com/Path"),                  # URL-02, URL-03, URL-07
    ("https://www.example.com/a#frag", None, "https://www.example.com/a"),                  # URL-04
    ("https://www.example.com:443/a", None, "https://www.example.com/a"),                   # URL-05
    ("https://www.example.com:0443/a", None, "https://www.example.com/a"),
    ("https://www.example.com:/a", None, "https://www.example.com/a"),
    ("https://www.example.com:8443/a", None, "https://www.example.com:8443/a"),
    ("https://www.example.com/a/", None, "https://www.example.com/a/"),                     # URL-06
    ("https://www.example.com/a", None, "https://www.example.com/a"),
    ("https://www.example.com/?b=2&a=1", None, "https://www.example.com/?b=2&a=1"),         # URL-08
    ("https://www.example.com/%7e", None, "https://www.example.com/%7e"),                   # D-54: nothing else
    ("https://h.example/a/../b", BASE, "https://h.example/b"),                              # absolute links too
    ("https://h.example/a/../b", None, "https://h.example/b"),
    ("https://h.example/./a/.", None, "https://h.example/a/"),
    ("https://Bücher.example/x", None, "https://xn--bcher-kva.example/x"),                  # D-54: punycode
    ("  /a\n", BASE, "https://www.example.com/a"),
    ("https:x", BASE, "https://www.example.com/decisions/2024/x"),                          # as a browser reads it
])
def test_canonicalise(link, base, expected):
    assert canonicalise(link, base) == expected


@pytest.mark.parametrize("link, base", [("https://", BASE), ("https:///x", BASE), ("relative", None), ("", None),
                                        ("https://[::1/x", None)])
def test_not_an_address(link, base):
    with pytest.raises(UrlError):
        canonicalise(link, base)


@pytest.mark.parametrize("path, expected", [
    ("/a/b/c/./../../g", "/a/g"), ("mid/content=5/../6", "mid/6"), ("/..", "/"), ("/../a", "/a"),
    ("/a/..", "/"), ("/a/.", "/a/"), ("", ""), ("/", "/"), ("/a.b/c..d", "/a.b/c..d"),
])
def test_remove_dot_segments_rfc3986(path, expected):
    assert remove_dot_segments(path) == expected


@pytest.mark.parametrize("link, reason", [
    ("https://www.example.com/a", None),
    ("http://www.example.com/a", "not https"),                          # URL-09
    ("https://other.example.com/a", "origin not in allowed_origins"),  # URL-10
    ("https://www.example.com:8443/x", "port other than 443"),         # URL-11
    ("https://user:pw@www.example.com/x", "userinfo in address"),      # URL-12
    ("https://127.0.0.1/x", "numeric host"),
])
def test_unreachable(link, reason):
    assert address(link, None, ALLOWED).unreachable == reason


segment = st.sampled_from(["a", "B", ".", "..", "", "%7E", "x.y", "é"])
links = st.builds(
    lambda scheme, host, port, segs, query, frag, relative: (
        "/".join(segs) + query + frag if relative else
        f"{scheme}://{host}{port}/" + "/".join(segs) + query + frag),
    st.sampled_from(["https", "HTTPS", "http"]),
    st.sampled_from(["www.example.com", "WWW.Example.com", "bücher.example", "h.example"]),
    st.sampled_from(["", ":443", ":8443", ":"]),
    st.lists(segment, max_size=5),
    st.sampled_from(["", "?a=1&b=2", "?b=2&a=1", "?"]),
    st.sampled_from(["", "#x", "#"]),
    st.booleans(),
)


@given(links)
def test_canonicalisation_is_idempotent(link):
    """Resolving once and canonicalising again changes nothing (URL-19: comparisons are stable)."""
    once = canonicalise(link, BASE)
    assert canonicalise(once) == once
    assert canonicalise(once, BASE) == once
    assert canonicalise(once, "https://elsewhere.example/deep/path/") == once
    assert unreachable_reason(once, ALLOWED) == unreachable_reason(canonicalise(once), ALLOWED)
