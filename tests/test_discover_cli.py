"""`collection discover RECIPE FILE`: the listing dry-run on saved listings of every kind.

Covers DISC-10 to DISC-23 (what a listing yields), D-27 (records without a usable link are
dropped, each with its reason), PAG-04, PAG-09, PAG-11, PAG-13 (the next request each grammar
makes) and D-24 (a next address outside allowed_origins).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from collection.cli import cli
from recipes_kit import recipe, write

LISTINGS = Path(__file__).resolve().parent / "data" / "listings"

HTML = {"kind": "html_index", "url": "https://www.example.com/minutes",
        "pagination": {"kind": "next_selector", "selector": "a.pager__next"},
        "records": {"selector": "div.views-row h3.title a"}}
WORDPRESS = {"kind": "json_api", "url": "https://www.example.com/wp-json/wp/v2/decisions?per_page=100",
             "pagination": {"kind": "page_parameter", "parameter": "page"},
             "records": {"pointer": ""}, "link": {"pointer": "/link"}, "identity": {"pointer": "/id"},
             "revision": {"pointer": "/modified"}}
CURSOR = {"kind": "json_api", "url": "https://api.example.com/items",
          "pagination": {"kind": "cursor", "parameter": "cursor", "pointer": "/meta/next_cursor"},
          "records": {"pointer": "/data"}, "link": {"pointer": "/url"}, "identity": {"pointer": "/uuid"},
          "revision": {"pointer": "/updated"}}
LINKS = {"kind": "json_api", "url": "https://www.example.com/records",
         "pagination": {"kind": "link_header"}, "records": {"pointer": "/results"}, "link": {"pointer": "/self"}}
SITEMAP = {"kind": "sitemap", "url": "https://www.example.com/sitemap.xml"}


def dry(tmp_path, discovery, listing, *extra, origins=("https://www.example.com",)):
    path = write(tmp_path, recipe(discovery, origins=origins))
    result = CliRunner().invoke(cli, ["discover", str(path), str(LISTINGS / listing), "--json", *extra])
    return result.exit_code, json.loads(result.stdout)


def test_html_index_with_next_selector(tmp_path):
    status, report = dry(tmp_path, HTML, "drupal.html")
    assert status == 0
    assert [r["link"] for r in report["records"]] == [
        "https://www.example.com/minutes/2026-01-12", "https://www.example.com/minutes/2026-01-26",
        "https://www.example.com/minutes/2026-02-09"]
    assert report["records"][0]["page_id"] == report["records"][0]["link"]     # DISC-10: canonical URL
    assert report["next"] == ["https://www.example.com/minutes?page=1"]         # PAG-13
    assert report["dropped"] == [] and report["warning"] is None


def test_html_selector_matching_the_heading_drops_every_record_and_says_why(tmp_path):
    """The classic mistake: the selector names the <h3>, which has no href (D-27)."""
    status, report = dry(tmp_path, {**HTML, "records": {"selector": "div.views-row h3.title"}}, "drupal.html")
    assert status == 0 and report["records"] == []
    assert len(report["dropped"]) == 3 and all("no usable 'href'" in line for line in report["dropped"])
    assert report["warning"].startswith("0 discovered: 3 records dropped, no usable href")
    assert "the <a>" in report["warning"]


def test_json_api_page_parameter_with_identity_and_revision(tmp_path):
    status, report = dry(tmp_path, WORDPRESS, "wordpress.json")
    assert status == 0
    assert [(r["page_id"], r["revision"]) for r in report["records"]] == [
        ("101", "2026-02-01T10:00:00"), ("102", "2026-02-03T09:30:00")]
    assert report["dropped"] == ["https://www.example.com/wp-json/wp/v2/decisions?per_page=100&page=1: "
                                 "record 2: no usable link at '/link'"]
    assert report["next"] == ["https://www.example.com/wp-json/wp/v2/decisions?per_page=100&page=2"]  # PAG-04
    assert report["warning"].startswith("2 discovered: 1 record dropped, no usable link at /link")


def test_json_api_cursor(tmp_path):
    status, report = dry(tmp_path, CURSOR, "cursor.json", origins=("https://api.example.com",))
    assert status == 0 and [r["page_id"] for r in report["records"]] == ["a1", "b2"]
    assert report["next"] == ["https://api.example.com/items?cursor=eyJwIjoyfQ%3D%3D"]   # PAG-11, D-23


def test_json_api_link_header_from_a_given_header(tmp_path):
    status, report = dry(tmp_path, LINKS, "links.json", "--header",
                         'Link: </records?after=2>; rel="next", </records>; rel="first"')
    assert status == 0
    assert [r["link"] for r in report["records"]] == ["https://www.example.com/records/1",
                                                      "https://www.example.com/records/2"]
    assert report["next"] == ["https://www.example.com/records?after=2"]   # PAG-09
    status, report = dry(tmp_path, LINKS, "links.json")
    assert report["next"] == [] and report["stop"]["reason"] == "no_next"


def test_link_header_next_outside_allowed_origins_fails(tmp_path):
    status, report = dry(tmp_path, LINKS, "links.json", "--header", 'Link: <https://cdn.example.net/p2>; rel=next')
    assert status == 1 and report["failure"]["code"] == "next_unreachable"   # D-24


def test_sitemap_urlset_and_index(tmp_path):
    status, report = dry(tmp_path, SITEMAP, "sitemap.xml")
    assert status == 0
    assert [(r["link"], r["revision"]) for r in report["records"]] == [
        ("https://www.example.com/reports/1", "2026-01-05"), ("https://www.example.com/reports/2", "2026-01-07")]
    assert len(report["dropped"]) == 1 and "no <loc>" in report["dropped"][0]
    assert report["stop"]["reason"] == "single_request"
    status, report = dry(tmp_path, SITEMAP, "sitemap_index.xml")
    assert status == 0 and report["records"] == []
    assert report["next"] == ["https://www.example.com/sitemap-1.xml", "https://www.example.com/sitemap-2.xml"]


def test_explicit_lists_members_without_a_file_read(tmp_path):
    explicit = {"kind": "explicit", "members": [{"page_id": "a", "url": "https://www.example.com/a"}]}
    status, report = dry(tmp_path, explicit, "sitemap.xml")
    assert status == 0 and report["records"] == [{"page_id": "a", "link": "https://www.example.com/a",
                                                   "revision": None}]
    assert report["stop"]["reason"] == "explicit"


def test_url_moves_link_resolution_and_pagination(tmp_path):
    status, report = dry(tmp_path, HTML, "drupal.html", "--url", "https://www.example.com/minutes?page=1")
    assert report["url"] == "https://www.example.com/minutes?page=1"
    assert report["next"] == []                    # the next link is the page itself
    assert report["stop"]["reason"] == "repeated_address"


def test_url_of_a_later_numbered_page_continues_from_its_number(tmp_path):
    """PAG-04: a saved page=5 is followed by page=6, not page=2."""
    status, report = dry(tmp_path, WORDPRESS, "wordpress.json", "--url",
                         "https://www.example.com/wp-json/wp/v2/decisions?per_page=100&page=5")
    assert status == 0
    assert report["next"] == ["https://www.example.com/wp-json/wp/v2/decisions?per_page=100&page=6"]


@pytest.mark.parametrize("media,code", [("application/json", "media_type_refused")])
def test_wrong_media_type_and_wrong_shape_are_refused(tmp_path, media, code):
    status, report = dry(tmp_path, HTML, "drupal.html", "--media-type", media)
    assert status == 1 and report["failure"]["code"] == code                  # DISC-30
    status, report = dry(tmp_path, {**WORDPRESS, "records": {"pointer": "/items"}}, "wordpress.json")
    assert status == 1 and report["failure"]["code"] == "COLLECTION_MERGE_INVALID"   # D-13


def test_text_output_and_usage_errors(tmp_path):
    path = write(tmp_path, recipe(WORDPRESS))
    result = CliRunner().invoke(cli, ["discover", str(path), str(LISTINGS / "wordpress.json")])
    assert result.exit_code == 0
    assert "record 101  link https://www.example.com/decisions/101/  revision 2026-02-01T10:00:00" in result.stdout
    assert "dropped https://www.example.com/wp-json/wp/v2/decisions?per_page=100&page=1: record 2" in result.stdout
    assert "next request https://www.example.com/wp-json/wp/v2/decisions?per_page=100&page=2" in result.stdout
    assert CliRunner().invoke(cli, ["discover", str(path), str(tmp_path / "missing")]).exit_code == 2
    assert CliRunner().invoke(cli, ["discover", str(path), str(LISTINGS / "wordpress.json"),
                                    "--header", "nocolon"]).exit_code == 2


def test_the_dropped_count_is_every_dropped_record_not_the_named_ones(tmp_path):
    """D-27: past a hundred, drops are counted rather than each named; the count stays whole."""
    page = tmp_path / "bare.html"
    page.write_text("<div class='views-row'><h3 class='title'><a>x</a></h3></div>" * 150, encoding="utf-8")
    path = write(tmp_path, recipe(HTML, origins=("https://www.example.com",)))
    result = CliRunner().invoke(cli, ["discover", str(path), str(page), "--json"])
    report = json.loads(result.stdout)
    assert report["dropped_records"] == 150 and len(report["dropped"]) == 100
    text = CliRunner().invoke(cli, ["discover", str(path), str(page)])
    assert "0 records found, 150 dropped" in text.stdout


def test_a_sitemap_index_warning_names_its_children_and_a_command_that_reads_one(tmp_path):
    """Issue 26 point 5: the dry-run of a saved sitemap index lists no pages; its warning must not
    send the author back to the command just run, but name the child sitemaps and the dry-run of a
    saved child at its own address, which then lists that child's pages."""
    status, report = dry(tmp_path, SITEMAP, "sitemap_index.xml")
    warning = report["warning"]
    assert status == 0 and warning.startswith("0 discovered: this is a sitemap index; it names 2 child sitemaps")
    assert "https://www.example.com/sitemap-1.xml, https://www.example.com/sitemap-2.xml" in warning
    command = "collection discover RECIPE SAVED_CHILD.xml --url https://www.example.com/sitemap-1.xml"
    assert f"`{command}`" in warning
    # the advice, followed: the child (here the urlset fixture) read at the address the warning names
    status, child = dry(tmp_path, SITEMAP, "sitemap.xml", "--url", "https://www.example.com/sitemap-1.xml")
    assert status == 0 and child["url"] == "https://www.example.com/sitemap-1.xml"
    assert len(child["records"]) == 2 and not (child["warning"] or "").startswith("0 discovered")


def test_a_run_whose_index_children_list_nothing_names_them(tmp_path):
    """The run reads the index and each child (DISC-19); when the children hold no <url> the run's
    warning names them and the dry-run of one, not the index."""
    empty = '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"></urlset>'
    xml = [["Content-Type", "application/xml"]]
    exchanges = [{"request": {"url": "https://www.example.com/sitemap.xml"},
                  "response": {"status": 200, "headers": xml,
                               "body": {"text": (LISTINGS / "sitemap_index.xml").read_text()}}}]
    exchanges += [{"request": {"url": f"https://www.example.com/sitemap-{n}.xml"},
                   "response": {"status": 200, "headers": xml, "body": {"text": empty}}} for n in (1, 2)]
    fixture = tmp_path / "site.json"
    fixture.write_text(json.dumps(exchanges))
    path = write(tmp_path, recipe(SITEMAP))
    result = CliRunner().invoke(cli, ["run", str(path), "--state", str(tmp_path / "s"), "--replay", str(fixture),
                                      "--json"])
    record = json.loads(result.stdout)
    assert record["coverage"]["discovered"] == 0 and record["coverage"]["discovery_requests"] == 3
    assert record["discovery"]["warning"] == (
        "0 discovered on a first run: the sitemap index's 2 child sitemaps (https://www.example.com/sitemap-1.xml, "
        "https://www.example.com/sitemap-2.xml) listed no <url> — save one and read it with "
        "`collection discover RECIPE SAVED_CHILD.xml --url https://www.example.com/sitemap-1.xml`")


def test_the_sitemap_index_advice_on_a_real_published_index_and_its_child(tmp_path):
    """D-81 on files nobody here wrote (tests/data/listings/real/SOURCE.md): the saved index names
    its two children; following the printed command with the saved first child lists its 7 pages."""
    real = LISTINGS / "real"
    discovery = {"kind": "sitemap", "url": "https://shiftcodes.tk/sitemap_index.xml"}
    path = write(tmp_path, recipe(discovery, origins=("https://shiftcodes.tk",)))
    index = CliRunner().invoke(cli, ["discover", str(path), str(real / "shiftcodes_sitemap_index.xml"), "--json"])
    report = json.loads(index.stdout)
    assert report["records"] == [] and report["next"] == ["https://shiftcodes.tk/sitemap.xml",
                                                          "https://shiftcodes.tk/help/sitemap.xml"]
    command = re.search(r"`collection discover RECIPE SAVED_CHILD\.xml --url (\S+)`", report["warning"])
    assert command and command.group(1) == "https://shiftcodes.tk/sitemap.xml"
    child = CliRunner().invoke(cli, ["discover", str(path), str(real / "shiftcodes_sitemap.xml"),
                                     "--url", command.group(1), "--json"])
    listed = json.loads(child.stdout)
    assert [r["link"] for r in listed["records"]][:2] == ["https://shiftcodes.tk/", "https://shiftcodes.tk/bl1"]
    assert len(listed["records"]) == 7 and listed["warning"] is None
