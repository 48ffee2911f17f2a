"""The fast paths of sitemap parsing and canonicalisation answer exactly what the general
paths answer: differential properties against the reference implementations.
"""

from __future__ import annotations

import gzip

import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

import collection.discover.sitemap as sitemap
from collection.discover.common import DiscoveryShapeError, ListingUnreadable
from collection.urls import (_TRIM, _WHITESPACE, UrlError, _canonicalise_general, _split_netloc, canonicalise,
                             host_problem, unreachable_reason)

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


# --- canonicalise ------------------------------------------------------------------------

def _reference(link: str, base: str | None) -> str:
    try:
        return _canonicalise_general(link, link.strip(_TRIM), base)
    except UrlError:
        return "UrlError"


def _fast(link: str, base: str | None) -> str:
    try:
        return canonicalise(link, base)
    except UrlError:
        return "UrlError"


path_piece = st.sampled_from(["/", "a", "B", ".", "..", "./", "../", ";", ";p", "?", "#", "&", "=", "%2F",
                              "é", "\t", "\n", "\r", "\x0b", " ", "//", ":", "@", "[", "]", "x.html"])
plain_links = st.builds(
    lambda lead, scheme, host, tail, trail: lead + scheme + host + "".join(tail) + trail,
    st.sampled_from(["", " ", "\t", "\x00"]),
    # Mostly the fast path's own shape, so its edges are what gets explored.
    st.sampled_from(["https://"] * 8 + ["HTTPS://", "http://", "https:", "https:///"]),
    st.sampled_from(["www.example.com"] * 4 + ["a", "a.b-c.d", ".", "h..x"]
                    + ["WWW.example.com", "h:443", "h:", "u@h", "[::1]", "bücher.example", "h_x", ""]),
    st.lists(path_piece, max_size=6),
    st.sampled_from(["", " ", "\n"]),
)
bases = st.sampled_from([None, "", "https://www.example.com/dir/page", "http://www.example.com/",
                         "https://[::1/broken", "https://other.example/a;b/c?q#f"])


@given(plain_links, bases)
@example("https://www.example.com/a;", "https://www.example.com/dir/page")
@example("https://www.example.com/a\tb/../c", None)
@settings(max_examples=3000)
def test_canonicalise_fast_path_equals_general_path(link, base):
    assert _fast(link, base) == _reference(link, base)


root_paths = st.builds(lambda lead, tail, trail: lead + "/" + "".join(tail) + trail,
                       st.sampled_from(["", " ", "\t", "\x00"]), st.lists(path_piece, max_size=6),
                       st.sampled_from(["", " ", "\n"]))
plain_bases = st.sampled_from(["https://www.example.com/dir/page", "https://www.example.com", "https://h.x/a?q",
                               "https://h/a;b/c?q#f", "https://h/..", "https://h:8443/a", "HTTPS://H/a"])


@given(root_paths, plain_bases)
@example("/a/./b/../c?x=1#f", "https://www.example.com/dir/page")
@example("/a;", "https://h/")
@example("//other.example/x", "https://h/")
@settings(max_examples=3000)
def test_canonicalise_root_path_fast_path_equals_general_path(link, base):
    """The HTML index shape ("/d/123" against the listing's address) answers what urljoin does."""
    assert _fast(link, base) == _reference(link, base)


@given(st.text(max_size=40), bases)
@settings(max_examples=500)
def test_canonicalise_fast_path_equals_general_path_on_any_text(text, base):
    assert _fast("https://www.example.com" + text, base) == _reference("https://www.example.com" + text, base)
    assert _fast(text, base) == _reference(text, base)
    assert _fast("/" + text, base) == _reference("/" + text, base)


@pytest.mark.parametrize("link, base, expected", [
    ("https://h/a/./b/../c?x=1#f", None, "https://h/a/c?x=1"),
    ("https://h?", None, "https://h"),
    ("https://h/a;", "https://h/", "https://h/a"),        # urljoin's round trip, kept as it was
    ("https://h/a;", None, "https://h/a;"),
    ("https://h/a\tb", None, "https://h/ab"),            # urlsplit deletes tabs and newlines
])
def test_canonicalise_corner_cases(link, base, expected):
    assert canonicalise(link, base) == expected == _reference(link, base)


def _unreachable_reference(url: str, allowed) -> str | None:
    """unreachable_reason as it was before its fast path, step by step."""
    from urllib.parse import urlsplit
    if "\\" in url:
        return "backslash in address"
    if _WHITESPACE.search(url):
        return "whitespace or control character in address"
    parts = urlsplit(url)
    if parts.scheme != "https":
        return "not https"
    userinfo, host, port = _split_netloc(parts.netloc)
    if userinfo is not None:
        return "userinfo in address"
    if port is not None:
        return "port other than 443"
    try:
        host.encode("ascii")
    except UnicodeEncodeError:
        return "non-ASCII host"
    problem = host_problem(host)
    if problem:
        return problem
    if f"https://{host}" not in allowed:
        return "origin not in allowed_origins"
    return None


ALLOWED = frozenset({"https://www.example.com", "https://a"})


@given(plain_links, bases)
@example("https://www.example.com\\x", None)
@settings(max_examples=1500)
def test_unreachable_reason_fast_path_equals_general_path(link, base):
    def outcome(check, url):
        try:
            return check(url, ALLOWED)
        except ValueError as exc:   # a broken IPv6 literal; canonical addresses never have one
            return type(exc)
    for url in (link, _fast(link, base)):
        assert outcome(unreachable_reason, url) == outcome(_unreachable_reference, url)


# --- sitemap ---------------------------------------------------------------------------

def _parse(body: bytes, **kw):
    try:
        return sitemap.parse_sitemap(body, **kw)
    except (ListingUnreadable, DiscoveryShapeError) as exc:
        return type(exc).__name__, getattr(exc, "reason", None)


def _parse_entry_by_entry(body: bytes, monkeypatch, **kw):
    with monkeypatch.context() as m:
        m.setattr(sitemap, "_bulk", lambda *a, **k: None)
        return _parse(body, **kw)


loc_text = st.sampled_from(["https://www.example.com/a", "  https://www.example.com/b\n ", "", "   ",
                            "https://www.example.com/c?x=1&amp;y=2", "<![CDATA[https://www.example.com/d&]]>",
                            "https://www.example.com/<!-- split -->e", "https://www.example.com/<?pi x?>f",
                            "https://www.example.com/<b>g</b>h", "&#104;ttps://www.example.com/i",
                            "https://www.example.com/<![CDATA[j]]>k&amp;l&#109;", "https://www.example.com/<b/>"])
lastmod_text = st.sampled_from(["2024-01-01", " 2024-02-02 ", "", "<!-- c -->2024-03-03"])
child = st.one_of(
    loc_text.map(lambda t: f"<loc>{t}</loc>"),
    lastmod_text.map(lambda t: f"<lastmod>{t}</lastmod>"),
    st.sampled_from(["<changefreq>daily</changefreq>", "<priority>0.5</priority>", "<loc/>", "<lastmod/>",
                     '<image:image><image:loc>https://cdn.example.net/i.jpg</image:loc></image:image>',
                     "<!-- note -->", "\n  ", '<x:loc xmlns:x="urn:other">https://www.example.com/other</x:loc>',
                     "<wrap><loc>https://www.example.com/nested</loc></wrap>"]),
)
regular = st.builds(lambda loc, lastmod: f"<loc>{loc}</loc>" + (f"<lastmod>{lastmod}</lastmod>" if lastmod else ""),
                    st.sampled_from(["https://www.example.com/r1", "https://www.example.com/r2"]),
                    st.sampled_from(["", "2024-05-05"]))
entry = st.one_of(
    st.lists(child, max_size=5).map(lambda cs: "<url>" + "".join(cs) + "</url>"),
    regular.map(lambda body: f"<url>{body}</url>"),
    st.sampled_from(["<!-- between -->", "<other><loc>https://www.example.com/o</loc></other>", "\n", "<?pi?>",
                     "<url/>"]),
)


def _document(entries: list[str], repeat: int, declaration: bool, root: str) -> bytes:
    head = '<?xml version="1.0" encoding="UTF-8"?>\n' if declaration else ""
    body = "".join(entries) * repeat
    return (f'{head}<{root} xmlns="{NS}" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">'
            f"{body}</{root}>\n").encode()


@given(st.lists(entry, max_size=12), st.sampled_from([1, 400]), st.booleans(), st.sampled_from(["urlset", "sitemapindex"]))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_batch_reading_equals_entry_by_entry_reading(monkeypatch, entries, repeat, declaration, root):
    """Repeated 400 times a document spans several chunks, so batches split anywhere."""
    if root == "sitemapindex":
        entries = [e.replace("<url>", "<sitemap>").replace("</url>", "</sitemap>").replace("<url/>", "<sitemap/>")
                   for e in entries]
    body = _document(entries, repeat, declaration, root)
    assert _parse(body) == _parse_entry_by_entry(body, monkeypatch)
    cap = max(1, len(entries) * repeat // 2)
    assert _parse(body, max_urls=cap) == _parse_entry_by_entry(body, monkeypatch, max_urls=cap)


@pytest.mark.parametrize("split, nodes", [
    ("https://www.example.com/a<!-- c -->b", 3),
    ("https://www.example.com/a<b>x</b>c", 3),
    ("https://www.example.com/a<?pi?>b", 3),
    ("https://www.example.com/<b/>", 2),
])
@pytest.mark.parametrize("empty", ["<loc/>", "<loc></loc>", "", "<loc><!-- only a comment --></loc>"])
def test_a_split_loc_beside_empty_ones_is_read_entry_by_entry(monkeypatch, split, nodes, empty):
    """A <loc> split into `nodes` nodes, followed by `nodes - 1` entries without text in
    theirs, gives as many nodes as entries; the batch must still not be read in bulk, or
    every later link would land on the wrong entry."""
    entries = ([f"<url><loc>{split}</loc><lastmod>2024-01-01</lastmod></url>"]
               + [f"<url>{empty}<lastmod>2024-01-02</lastmod></url>"] * (nodes - 1)
               + ["<url><loc>https://www.example.com/z</loc><lastmod>2024-01-03</lastmod></url>"])
    body = _document(entries, 300, True, "urlset")
    parsed = _parse(body)
    assert parsed == _parse_entry_by_entry(body, monkeypatch)
    joined = split.replace("<!-- c -->", "").replace("<b>x</b>", "").replace("<?pi?>", "").replace("<b/>", "")
    assert parsed.links[:2] == (joined, "https://www.example.com/z")
    assert parsed.revisions[:2] == ("2024-01-01", "2024-01-03")
    assert len(parsed.dropped) == 300 * (nodes - 1)


def test_text_is_one_node_whatever_the_chunks_and_markup_it_comes_in(monkeypatch):
    """The bulk read counts on the parser merging adjacent text into one node: CDATA,
    character and predefined entity references, and text cut by a chunk boundary."""
    pieces = "https://www.example.com/<![CDATA[a]]>b&amp;c&#100;<![CDATA[e]]>"
    filler = "<url><loc>https://www.example.com/f</loc></url>"
    prefix = f'<?xml version="1.0"?><urlset xmlns="{NS}">'
    head = prefix + filler * ((sitemap.CHUNK - 300 - len(prefix)) // len(filler))
    straddled = 0
    for pad in range(0, 300, 7):
        text = " " * pad + pieces
        body = (head + f"<url><loc>{text}</loc></url>" + filler + "</urlset>").encode()
        start = len(head) + len("<url><loc>")
        straddled += start < sitemap.CHUNK < start + len(text)
        with monkeypatch.context() as m:
            results = []
            real = sitemap._bulk
            m.setattr(sitemap, "_bulk", lambda *a, **k: results.append(r := real(*a, **k)) or r)
            parsed = sitemap.parse_sitemap(body)
        assert parsed.links.count("https://www.example.com/ab&cde") == 1
        assert None not in results   # every batch was read in bulk
    assert straddled >= 5


def test_comments_and_foreign_elements_between_entries_keep_the_bulk_read(monkeypatch):
    entries = ["<url><loc>https://www.example.com/a</loc><lastmod>2024-01-01</lastmod></url>",
               "<!-- generated by a plugin -->", "<?pi x?>",
               "<other><loc>https://www.example.com/not-an-entry</loc></other>",
               "<url><loc>https://www.example.com/b</loc><lastmod>2024-01-02</lastmod></url>\n"]
    body = _document(entries, 2000, True, "urlset")
    expected = _parse_entry_by_entry(body, monkeypatch)
    with monkeypatch.context() as m:
        m.setattr(sitemap, "_text", lambda element: pytest.fail("an entry was read one by one"))
        parsed = _parse(body)
    assert parsed == expected
    assert parsed.links[:3] == ("https://www.example.com/a", "https://www.example.com/b", "https://www.example.com/a")
    assert parsed.record_count == 4000


def _regular(n: int, lastmod: bool = True) -> bytes:
    return _document([f"<url><loc>https://www.example.com/p/{i}</loc>"
                      + (f"<lastmod>2024-01-{i % 28 + 1:02d}</lastmod>" if lastmod else "")
                      + "<changefreq>monthly</changefreq></url>\n" for i in range(n)], 1, True, "urlset")


@pytest.mark.parametrize("prefix", [b"", b"\xef\xbb\xbf", b'<?xml-stylesheet href="s.xsl"?>', b"<!-- c -->",
                                    b"\xef\xbb\xbf<!-- c -->\n"])
def test_prologs_with_and_without_a_declaration_read_alike(monkeypatch, prefix):
    body = _regular(3000)
    without = body[body.index(b"?>") + 3:]
    for variant in (prefix + without, body if not prefix.startswith(b"\xef") else prefix[:3] + body):
        parsed = _parse(variant)
        assert parsed == _parse_entry_by_entry(variant, monkeypatch)
        assert [e.link for e in parsed.entries] == [f"https://www.example.com/p/{i}" for i in range(3000)]


def test_gzip_split_anywhere_reads_alike(monkeypatch):
    body = _regular(2000)
    for cut in (5, 30, 39, 40, 41, 100, len(body) // 2):
        split = gzip.compress(body[:cut]) + gzip.compress(body[cut:])
        assert _parse(split) == _parse_entry_by_entry(split, monkeypatch) == _parse(body)


def test_url_cap_in_batches():
    body = _regular(5000, lastmod=False)
    assert len(sitemap.parse_sitemap(body, max_urls=5000).entries) == 5000
    with pytest.raises(ListingUnreadable) as info:
        sitemap.parse_sitemap(body, max_urls=4999)
    assert info.value.reason == "sitemap_too_many_urls"


@pytest.mark.parametrize("head, marked", [
    (b'<?xml version="1.0"?><urlset/>', b'<?xml version="1.0"?>' + sitemap._MARKER + b"<urlset/>"),
    (b"<urlset/>", sitemap._MARKER + b"<urlset/>"),
    (b"\xef\xbb\xbf<urlset/>", b"\xef\xbb\xbf" + sitemap._MARKER + b"<urlset/>"),
    (b'<?xml-stylesheet href="a"?><urlset/>', None),      # not a declaration: left alone
    (b"<?xml version='1.0'", None),                      # declaration cut by the chunk
    (b"<url", None),                                      # too short to tell
])
def test_marker_goes_only_where_the_prolog_allows_it(head, marked):
    assert sitemap._marked(head) == marked
