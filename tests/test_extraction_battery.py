"""html.web_extract on the extraction battery: short and structured pages in real templates' chrome (issue 18).

One test per page (tests/extraction_battery/, README.md there names each template): the story holds every
must-contain string and none of the page's boilerplate. One page is a known failure of the engine, kept in the
battery so the benchmark counts it and so the test says when it starts to pass (strict xfail).
"""

from __future__ import annotations

import pytest
from extraction_battery import PAGES, Page

from collection.readers.base import Decoded, Pin, decode

# Shapes the engine does not read yet (issue 18's report says why).
KNOWN_FAILURES = {
    "status-service": "a notification banner inside the content is named like a site banner",
}


def story(page: Page) -> str:
    result = decode(Pin("html.web_extract", "1.1.0", {}), page.html(), "text/html; charset=utf-8",
                    f"https://www.example.org/{page.id}")
    assert isinstance(result, Decoded), result
    return result.rows[0][1]


@pytest.mark.parametrize("page", [
    pytest.param(page, id=page.id, marks=[pytest.mark.xfail(strict=True, reason=KNOWN_FAILURES[page.id])]
                 if page.id in KNOWN_FAILURES else []) for page in PAGES])
def test_battery_page_keeps_its_story_and_drops_its_boilerplate_READ_03(page: Page) -> None:
    text = story(page)
    assert [must for must in page.must if must not in text] == []
    assert [bad for bad in page.forbidden() if bad in text] == []


def test_the_battery_covers_the_shapes_of_issue_18() -> None:
    shapes = {page.shape for page in PAGES}
    assert len(PAGES) >= 60 and len({page.id for page in PAGES}) == len(PAGES)
    assert {"notice", "facts", "main", "list", "faq", "table", "figure", "documents", "cjk"} <= shapes
    assert {page.chrome for page in PAGES} == {"govuk", "wordpress", "drupal", "joomla", "municipal", "news"}
