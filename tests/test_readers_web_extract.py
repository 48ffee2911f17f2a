"""html.web_extract 1.1.0: one row per page — title, story, metadata (READ-03, READ-05, READ-06, READ-11)."""

from __future__ import annotations

import re

import pytest

from collection.readers.base import Decoded, DecodeFailure, Pin, decode

URL = "https://council.example.gov/decisions/2024/117"

COUNCIL_PAGE = """<!DOCTYPE html>
<html lang="en-GB"><head>
<meta charset="utf-8">
<title>Decision 2024/117: Riverside car park tariffs | Example City Council</title>
<meta property="og:title" content="Decision 2024/117: Riverside car park tariffs">
<meta name="description" content="Cabinet approved new tariffs for the Riverside car park.">
<meta property="article:published_time" content="2024-03-05T09:30:00Z">
<meta property="article:modified_time" content="2024-03-07T16:00:00Z">
<link rel="canonical" href="/decisions/2024/117">
<script type="application/ld+json">{"@context":"https://schema.org","@type":"Article","author":{"@type":"Person","name":"Democratic Services"}}</script>
<style>.x{color:red}</style>
</head><body>
<header><nav><ul><li><a href="/">Home</a></li><li><a href="/decisions">Decisions</a></li><li><a href="/contact">Contact us</a></li></ul></nav></header>
<div id="cookie-banner" class="cookie-notice">We use cookies to improve this site. <button>Accept all cookies</button></div>
<main><article class="decision">
<h1>Riverside car park tariffs</h1>
<p class="meta">Decision taken by Cabinet on 5 March 2024.</p>
<h2>Decision</h2>
<p>Cabinet agreed to introduce a new tariff structure at the Riverside car park from 1 April 2024, replacing the flat daily charge with hourly bands.</p>
<p>The first hour will remain free of charge for blue badge holders, and evening parking after six o'clock will cost one pound.</p>
<h2>Reasons for the decision</h2>
<p>Occupancy surveys carried out during the autumn showed that the car park was full by nine o'clock on most weekdays, while long-stay spaces at the park and ride site remained under-used.</p>
<ul><li>Encourage turnover of short-stay spaces for shoppers and visitors.</li>
<li>Move commuter parking to the park and ride service on the eastern edge of the city.</li></ul>
<blockquote>The new bands strike a fair balance between residents, businesses and visitors, said the cabinet member for transport.</blockquote>
<h2>Alternative options considered</h2>
<p>Keeping the flat charge was rejected because it does not address the shortage of short-stay spaces identified in the surveys.</p>
</article>
<aside><h3>Related decisions</h3><ul><li><a href="/d/1">Bus lane enforcement cameras</a></li><li><a href="/d/2">Street lighting upgrade</a></li></ul></aside>
</main>
<form action="/search"><input name="q"><button>Search</button></form>
<footer><p>Copyright Example City Council. All rights reserved. Privacy notice. Accessibility statement.</p></footer>
</body></html>"""

STORY_LINES = [
    "Cabinet agreed to introduce a new tariff structure at the Riverside car park from 1 April 2024, replacing the flat daily charge with hourly bands.",
    "Reasons for the decision",
    "- Encourage turnover of short-stay spaces for shoppers and visitors.",  # list items carry "- "
    "- Move commuter parking to the park and ride service on the eastern edge of the city.",
]
BOILERPLATE = ["Contact us", "Accept all cookies", "Bus lane enforcement", "All rights reserved", "Search", "color:red"]


def run(options: dict, page: str = COUNCIL_PAGE, content_type: str = "text/html; charset=utf-8") -> Decoded | DecodeFailure:
    return decode(Pin("html.web_extract", "1.1.0", options), page.encode("utf-8"), content_type, URL)


def test_council_decision_story_keeps_blocks_and_drops_boilerplate_READ_03() -> None:
    result = run({})
    assert isinstance(result, Decoded)
    assert result.columns == ("title", "story")
    (title, story), = result.rows
    assert title == "Decision 2024/117: Riverside car park tariffs"
    lines = story.split("\n")
    for line in STORY_LINES:
        assert line in lines  # each paragraph, heading and list item is its own line
    for noise in BOILERPLATE:
        assert noise not in story
    # The quote is its own line; the <h1> is the title's, not the story's.
    assert "The new bands strike a fair balance between residents, businesses and visitors, said the cabinet member for transport." in lines
    assert "Riverside car park tariffs" not in lines


PROSE = ("The committee met on Tuesday to review the annual budget, and members agreed that the reserve fund "
         "should be kept at its present level for another year. ")

BLOG_PAGE = f"""<html><head><title>Notes</title></head><body>
<div class="site-wrapper with-sidebar">
<div id="consent-banner"><p>We value your privacy. This site stores cookies on your device so that it can remember you and measure how the site is used.</p><a href="/ok">OK</a></div>
<div class="layout">
<div class="post">
<h1>Budget notes</h1>
<div class="share-bar"><a href="/s/1">Share on Facebook</a> <a href="/s/2">Share by email</a></div>
<p>{PROSE}First   paragraph,&nbsp;with an entity: caf&eacute; &amp; cre\u0300me.</p>
<div class="ad-slot"><span>Advertisement</span></div>
<p>{PROSE}Second paragraph<br>continues after a line break.</p>
<h2>Code</h2>
<pre><code>def total(xs):
    return sum(xs)</code></pre>
<blockquote><p>{PROSE}A quoted paragraph.</p></blockquote>
<ul class="related-links"><li><a href="/a">Another story about the council</a></li><li><a href="/b">Yet another story about parking</a></li></ul>
<p style="display: none">{PROSE}Hidden text.</p>
<p>{PROSE}Last paragraph.</p>
</div>
<div class="comments"><h3>3 comments</h3><p>{PROSE}A reader's comment.</p><p>{PROSE}Another reader's comment.</p></div>
</div>
<div class="sidebar"><h3>Popular</h3><p>{PROSE}A teaser for another page.</p></div>
</div></body></html>"""


def test_story_blocks_each_on_their_own_line_and_named_boilerplate_dropped() -> None:
    story = run({}, BLOG_PAGE).rows[0][1]
    lines = story.split("\n")
    assert lines == [
        PROSE + "First paragraph, with an entity: caf\u00e9 & cr\u00e8me.",  # entities decoded, NFC, spaces collapsed
        PROSE + "Second paragraph",
        "continues after a line break.",
        "Code",
        "def total(xs):",
        "return sum(xs)",
        PROSE + "A quoted paragraph.",
        PROSE + "Last paragraph.",
    ]


def test_the_engine_reads_the_article_even_under_a_boilerplate_name() -> None:
    # "sidebar-layout" names the wrapper of the whole page: a name is a hint, the text decides.
    page = (f'<html><body><div class="sidebar-layout"><nav><a href="/">Home</a></nav><div class="main-col">'
            f'<p>{PROSE}One.</p><p>{PROSE}Two.</p></div><div class="widget"><a href="/x">Elsewhere</a></div>'
            f'</div></body></html>')
    assert run({}, page).rows[0][1] == f"{PROSE}One.\n{PROSE}Two."


def test_a_page_that_shows_text_but_no_story_fails_story_not_found_READ_10() -> None:
    """Issue 18 item 4: an empty story on a page with text is a failed page an operator can find, not a row."""
    for page in ('<html><body><nav><a href="/">Home</a></nav><footer>Copyright</footer></body></html>',
                 '<html><body><h1>Only a heading</h1><ul><li><a href="/a">A link</a></li></ul></body></html>'):
        result = run({}, page)
        assert isinstance(result, DecodeFailure) and result.code == "story_not_found"


def test_a_page_that_shows_no_text_gives_an_empty_story() -> None:
    # Nothing on the page to miss (a script-only shell): an empty story is the truth, not a failure.
    page = '<html><head><title>App</title></head><body><div id="root"></div><script>render()</script></body></html>'
    assert run({}, page).rows[0] == ("App", "")


def test_a_story_selector_matching_nothing_gives_an_empty_story() -> None:
    # The recipe named the story; that it is absent from this page is the page's answer.
    page = '<html><body><p>Some text that is not in an article element.</p></body></html>'
    assert run({"selectors": {"story": "article"}}, page).rows[0][1] == ""


METADATA = [
    ("published_at", "2024-03-05T09:30:00Z"),
    ("modified_at", "2024-03-07T16:00:00Z"),
    ("author", "Democratic Services"),
    ("description", "Cabinet approved new tariffs for the Riverside car park."),
    ("canonical_url", "https://council.example.gov/decisions/2024/117"),
    ("language", "en-GB"),
]


def test_metadata_columns_follow_the_options_order() -> None:
    names = [name for name, _ in METADATA][::-1]
    result = run({"metadata": names})
    assert result.columns == ("title", "story", *names)
    assert result.rows[0][2:] == tuple(dict(METADATA)[name] for name in names)


SELECTED = [
    # (selectors, field, expected)
    ({"title": "article h1"}, "title", "Riverside car park tariffs"),
    ({"title": "h1, title"}, "title", "Decision 2024/117: Riverside car park tariffs | Example City Council"),
    ({"title": "h4"}, "title", ""),
    ({"story": "article > p.meta"}, "story", "Decision taken by Cabinet on 5 March 2024."),
    ({"story": "aside li"}, "story", "Bus lane enforcement cameras\nStreet lighting upgrade"),
    ({"story": "aside, aside li"}, "story", "Related decisions\nBus lane enforcement cameras\nStreet lighting upgrade"),
    ({"author": "p.meta"}, "author", "Decision taken by Cabinet on 5 March 2024."),
    ({"published_at": "meta[property='article:modified_time']"}, "published_at", "2024-03-07T16:00:00Z"),
    ({"canonical_url": "nav a[href$=contact]"}, "canonical_url", "https://council.example.gov/contact"),
]


@pytest.mark.parametrize("selectors,field,expected", SELECTED)
def test_selectors_per_field(selectors: dict, field: str, expected: str) -> None:
    metadata = [field] if field not in ("title", "story") else []
    result = run({"selectors": selectors, "metadata": metadata})
    assert dict(zip(result.columns, result.rows[0]))[field] == expected


FOUND = [
    # a minimal page, the options, the expected row
    ("<html><head><title> Plain  title </title></head><body><p>x</p></body></html>", {}, ("Plain title",)),
    ("<html><body><h1>Only &amp; heading</h1><p>x</p></body></html>", {}, ("Only & heading",)),
    ("<html><body><p>x</p></body></html>", {"metadata": ["author", "language"]}, ("", None, "", "")),
    ('<html lang="fr"><body><time datetime="2023-01-02">2 Jan</time><a rel="author" href="/a">Jo Bloggs</a><p>x</p></body></html>',
     {"metadata": ["published_at", "author", "language"]}, ("", None, "2023-01-02", "Jo Bloggs", "fr")),
    ('<html><head><meta name="author" content="https://x.example/me"><meta name="byl" content="By Ann Lee">'
     '<link rel="Canonical" href="https://x.example/a?b=1"></head><body></body></html>',
     {"metadata": ["author", "canonical_url"]}, ("", None, "By Ann Lee", "https://x.example/a?b=1")),
]


@pytest.mark.parametrize("page,options,expected", FOUND)
def test_fields_found_without_selectors(page: str, options: dict, expected: tuple) -> None:
    row = run(options, page).rows[0]
    assert len(row) == 2 + len(options.get("metadata", []))
    assert all(want is None or got == want for got, want in zip(row, expected))


def test_charset_from_content_type_beats_meta() -> None:
    page = '<html><head><meta charset="utf-8"><title>Caf\u00e9 cr\u00e8me \u2013 menu</title></head><body></body></html>'
    result = decode(Pin("html.web_extract", "1.1.0", {}), page.encode("cp1252"), "text/html; charset=windows-1252", URL)
    assert result.rows[0][0] == "Caf\u00e9 cr\u00e8me \u2013 menu"
    latin1 = decode(Pin("html.web_extract", "1.1.0", {}), page.encode("cp1252"), "text/html; charset=ISO-8859-1", URL)
    assert latin1 == result  # latin-1 labels read as windows-1252, as browsers do


def test_text_is_nfc() -> None:
    page = '<html><head><title>Cafe\u0301</title></head><body></body></html>'
    assert run({}, page).rows[0][0] == "Caf\u00e9"


EMPTY = [b"", b"   ", b"\xef\xbb\xbf"]


@pytest.mark.parametrize("body", EMPTY)
def test_an_empty_body_is_a_decode_error_READ_10(body: bytes) -> None:
    result = decode(Pin("html.web_extract", "1.1.0", {}), body, "text/html", URL)
    assert result == DecodeFailure("decode_error", result.message)


def test_same_bytes_same_row() -> None:
    assert run({"metadata": ["author"]}) == run({"metadata": ["author"]})
    assert run({}, BLOG_PAGE) == run({}, BLOG_PAGE)


# --- issue 18: short and structured pages, and the smaller defects ---------------------------------------------

def test_a_two_paragraph_council_decision_inside_article_keeps_its_story() -> None:
    """The issue's own example: paragraphs under 80 characters are prose, and the tie never goes to the <h1>."""
    page = ("<html><head><title>Decision 2024/117</title></head><body><nav><a href='/'>Home</a> <a href='/d'>Decisions</a></nav>"
            "<article><h1>Riverside car park tariffs</h1><p>Cabinet approved the new tariffs on 5 March.</p>"
            "<p>They take effect on 1 April.</p></article></body></html>")
    assert run({}, page).rows[0][1] == "Cabinet approved the new tariffs on 5 March.\nThey take effect on 1 April."


def test_short_paragraphs_in_scripts_without_spaces_count_as_prose() -> None:
    page = ("<html><body><nav><a href='/'>ホーム</a></nav><main><h1>休業のお知らせ</h1><p>市役所は12月29日から休業します。</p>"
            "</main><div class='newsletter'><p>Sign up to hear about every change to council services, delivered every week to your inbox.</p></div>"
            "</body></html>")
    assert run({}, page).rows[0][1] == "市役所は12月29日から休業します。"


def test_a_short_notice_beats_longer_comments_and_teasers_below_it() -> None:
    comments = "".join(f"<li class='comment'><p>{PROSE}Comment {i}.</p></li>" for i in range(3))
    teasers = "".join(f"<div><h3><a href='/n/{i}'>Another story {i}</a></h3><p>{PROSE}</p></div>" for i in range(3))
    page = (f"<html><body><main><h1>Notice</h1><p>The hall is closed on Monday.</p>"
            f"<ol class='comment-list'>{comments}</ol><div>{teasers}</div></main></body></html>")
    assert run({}, page).rows[0][1] == "The hall is closed on Monday."


def test_comments_under_a_heading_that_announces_them_are_left_out_however_they_are_named_issue_27() -> None:
    article = "".join(f"<p>{PROSE}Paragraph {i}.</p>" for i in range(3))
    comments = "".join(f"<div><p>{PROSE}Reader {i} wrote this.</p><p>posted by reader {i}</p></div>" for i in range(4))
    page = f"<html><body><div><h1>Post</h1>{article}<h3>12 Comments</h3>{comments}</div></body></html>"
    story = run({}, page).rows[0][1]
    assert "Paragraph 2." in story and "wrote this" not in story and "12 Comments" not in story
    # The heading alone in a box of its own announces what follows the box.
    boxed = f"<html><body><div><h1>Post</h1>{article}<div class='form'><h2>Comments</h2></div>{comments}</div></body></html>"
    story = run({}, boxed).rows[0][1]
    assert "Paragraph 2." in story and "wrote this" not in story
    # A heading that merely mentions responses names a section of the story, not its comments.
    consultation = f"<h2>Responses to the consultation</h2><p>{PROSE}Most responses agreed.</p>"
    kept = run({}, f"<html><body><div><h1>Report</h1>{article}{consultation}</div></body></html>").rows[0][1]
    assert "Most responses agreed." in kept and "Responses to the consultation" in kept


def test_a_blog_post_inside_a_boilerplate_named_widget_is_read_beside_the_blogs_one_paragraph_description_issue_27() -> None:
    # Blogger's shape: the blog's title (the page's <h1>) and description in the header, each post in "widget Blog".
    description = f"<p class='description'>{PROSE}{PROSE}This blog records my days.</p>"
    post = "".join(f"<p>{PROSE}The barn, part {i}.</p>" for i in range(8))
    page = (f"<html><body><div id='header'><h1>Unity Farm</h1>{description}</div><div class='widget Blog'>"
            f"<h3>Building the barn</h3><div class='post-body'>{post}</div></div></body></html>")
    story = run({}, page).rows[0][1]
    assert all(f"The barn, part {i}." in story for i in range(8))  # (the description may stay beside it)


def test_an_unclosed_header_that_swallows_the_page_does_not_take_the_story_with_it_issue_27() -> None:
    # The template never closes its <header>, so the parser nests the whole page inside it.
    article = "".join(f"<p>{PROSE}Part {i}.</p>" for i in range(4))
    page = (f"<html><body><header><div class='logo'><a href='/'>Site</a></div><div class='content'>"
            f"<h1>A story</h1>{article}</div></body></html>")
    assert all(f"Part {i}." in run({}, page).rows[0][1] for i in range(4))
    # A page header of its own size is still dropped.
    closed = f"<html><body><header><p>{PROSE}Site slogan.</p></header><main><h1>A story</h1>{article}</main></body></html>"
    assert "Site slogan." not in run({}, closed).rows[0][1]


def test_an_authors_bio_beside_an_article_of_many_paragraphs_is_left_out_issue_27() -> None:
    article = "".join(f"<p>{PROSE}Paragraph {i}.</p>" for i in range(8))
    bio = "<p>Jo Smith is the founder of this site and writes about the council every week.</p>"
    page = f"<html><body><div id='page'><div class='post'>{article}</div><div class='bio'>{bio}</div></div></body></html>"
    story = run({}, page).rows[0][1]
    assert all(f"Paragraph {i}." in story for i in range(8)) and "Jo Smith" not in story


def test_title_skips_an_svg_icons_title_when_the_heads_title_is_empty() -> None:
    page = ("<html><head><title></title></head><body><a href='/'><svg><title>Logo icon</title></svg></a>"
            "<h1>Bin collection days</h1><p>Collections move by one day after a bank holiday.</p></body></html>")
    assert run({}, page).rows[0][0] == "Bin collection days"


def test_raw_text_elements_never_leak_literal_markup() -> None:
    page = ("<html><head><title>T</title></head><body><h1>Plan <noembed><b>x</b></noembed>consultation</h1><noframes><p>Use a frames browser</p></noframes>"
            "<noembed><i>no plugin</i></noembed><xmp><b>bold</b></xmp>"
            "<p>The consultation closes on 30 June, and responses will be published.</p></body></html>")
    story, = run({"selectors": {"title": "h1"}}, page).rows[0][1:]
    assert story == "The consultation closes on 30 June, and responses will be published."
    assert run({"selectors": {"title": "h1"}}, page).rows[0][0] == "Plan consultation"


def test_a_nul_in_the_page_is_dropped_not_replaced() -> None:
    page = "<html><head><title>Caf\x00e</title></head><body><p>The caf\x00e opens at nine on weekdays from May onwards.</p></body></html>"
    assert run({}, page).rows[0] == ("Cafe", "The cafe opens at nine on weekdays from May onwards.")


@pytest.mark.parametrize("depth", [300, 2000])
def test_content_nested_past_libxml2s_default_limit_is_read(depth: int) -> None:
    page = ("<html><body>" + "<div>" * depth + "<p>The deep paragraph is still part of the story of this page.</p>"
            + "</div>" * depth + "</body></html>")
    result = run({}, page)
    assert isinstance(result, Decoded) and "The deep paragraph is still part" in result.rows[0][1]


def test_content_nested_past_the_parsers_limit_fails_page_too_deep() -> None:
    page = "<html><body>" + "<div>" * 3000 + "<p>Lost text.</p>" + "</div>" * 3000 + "</body></html>"
    for pin in (Pin("html.web_extract", "1.1.0", {}), Pin("html.tabular", "1.0.0", {"table": {"selector": "table", "columns": ["a"]}})):
        result = decode(pin, page.encode(), "text/html", URL)
        assert isinstance(result, DecodeFailure) and result.code == "page_too_deep"


@pytest.mark.parametrize("body", [b"", b"   ", b"<html><body>" + b"<div>" * 3000 + b"</body></html>"])
def test_failure_messages_say_what_is_wrong_in_words_not_python_class_names(body: bytes) -> None:
    result = decode(Pin("html.web_extract", "1.1.0", {}), body, "text/html", URL)
    assert isinstance(result, DecodeFailure)
    assert result.message and not re.match(r"[A-Z][A-Za-z]*(Error|Exception)\b", result.message)


def test_a_consent_box_is_dropped_by_its_words_but_a_recipe_about_cookies_is_not() -> None:
    banner = ("<div class='bar'><p>This site uses cookies to remember your choices and measure visits.</p>"
              "<button>OK</button></div>")
    recipe = ("<div class='card'><h2>Oat cookies</h2><button>Print</button><p>Mix the oats, butter and sugar, "
              "then bake the cookies for twelve minutes.</p></div>")
    story = run({}, f"<html><body><main><h1>Baking</h1>{banner}{recipe}</main></body></html>").rows[0][1]
    assert story == "Oat cookies\nMix the oats, butter and sugar, then bake the cookies for twelve minutes."


def test_a_caption_is_the_story_of_a_picture_page_but_an_aside_beside_an_article() -> None:
    figure = "<figure><img src='/m.jpg' alt=''><figcaption>The new footbridge over the Mill Race, seen from the east bank.</figcaption></figure>"
    alone = run({}, f"<html><body><main><h1>Photo</h1>{figure}</main></body></html>").rows[0][1]
    assert alone == "The new footbridge over the Mill Race, seen from the east bank."
    article = run({}, f"<html><body><main><h1>Bridge</h1><p>{PROSE}</p>{figure}<p>{PROSE}</p></main></body></html>").rows[0][1]
    assert article.split("\n") == [PROSE.strip(), PROSE.strip()]
