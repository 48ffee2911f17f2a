"""html.web_extract inside a run: a page whose story comes out empty is findable (issue 18, item 4).

A real run against the loopback HTTPS site, on the virtual clock: the page that shows text but yields no story is
a failed page with code `story_not_found` in the ledger and counted among the run record's failures, and the page
beside it that has a story is a row of the relation.
"""

from __future__ import annotations

import json

from loopback import Reply
from test_run_kit import ledger_rows, recipe, relation_rows, run_in_process

from collection.canonical import canonical_json

HTML = (("Content-Type", "text/html; charset=utf-8"),)
STORY = (b"<html><head><title>Hall closed</title></head><body><nav><a href='/'>Home</a></nav><main><h1>Hall closed</h1>"
         b"<p>The village hall is closed on Monday.</p></main></body></html>")
NO_STORY = (b"<html><head><title>Hall</title></head><body><nav><a href='/'>Home</a> <a href='/hire'>Hire</a></nav>"
            b"<h1>Hall</h1><footer>Copyright Millbrook Parish Council</footer></body></html>")


def test_a_page_without_a_story_fails_story_not_found_and_is_counted_READ_10_MERGE_21(loopback, tmp_path):
    data = json.loads(recipe("explicit", ids=("1", "2"), concurrency=1))
    data["connector"]["parameters"] = [{"name": "reader.family_id", "value": "html.web_extract"},
                                       {"name": "reader.family_version", "value": "1.1.0"},
                                       {"name": "reader.decode_options", "value": canonical_json({})}]
    loopback.route("/p/1", Reply(200, HTML, STORY))
    loopback.route("/p/2", Reply(200, HTML, NO_STORY))
    record = run_in_process(loopback, json.dumps(data).encode(), tmp_path)
    ledger = ledger_rows(tmp_path)
    assert (ledger["id-2"]["state"], ledger["id-2"]["failure_code"], ledger["id-2"]["failure_class"]) == \
        ("failed", "story_not_found", "error")
    assert ledger["id-1"]["state"] == "fetched"
    assert record["coverage"]["failed_this_run"] == 1 and record["failures"]["by_class"]["error"] == 1
    rows = relation_rows(tmp_path)
    assert [(row["page_id"], row["story"]) for row in rows] == [("id-1", "The village hall is closed on Monday.")]
