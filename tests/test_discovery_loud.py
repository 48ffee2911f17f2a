"""Discovery that finds nothing is loud: the text summary, the run record and `status` say
why (D-27 drops, a first run that listed zero), replayed offline from a fixture."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from collection.cli import cli
from recipes_kit import recipe, write

LISTING = (Path(__file__).resolve().parent / "data" / "listings" / "drupal.html").read_text()
HTML = {"kind": "html_index", "url": "https://www.example.com/minutes", "pagination": {"kind": "none"},
        "records": {"selector": "div.views-row h3.title"}}


def _replay(tmp_path, discovery, body=LISTING, *extra):
    fixture = tmp_path / "site.json"
    fixture.write_text(json.dumps([{"request": {"url": "https://www.example.com/minutes"},
                                    "response": {"status": 200, "headers": [["Content-Type", "text/html"]],
                                                 "body": {"text": body}}}]))
    path = write(tmp_path, recipe(discovery))
    state = tmp_path / "state"
    return CliRunner().invoke(cli, ["run", str(path), "--state", str(state), "--replay", str(fixture), *extra]), state


def test_dropped_records_are_said_in_the_summary_record_and_status(tmp_path):
    result, state = _replay(tmp_path, HTML)
    assert result.exit_code == 0, result.output
    assert ("warning: 0 discovered: 3 records dropped, no usable href — does records.selector "
            "'div.views-row h3.title' match the element that carries href (the <a>, not its heading)") in result.stdout
    record = json.loads((state / "current" / "run.json").read_text())
    assert record["discovery"]["dropped_records"] == 3
    assert record["discovery"]["warning"].startswith("0 discovered: 3 records dropped, no usable href")
    status = CliRunner().invoke(cli, ["status", str(state)])
    assert status.exit_code == 0
    assert "→ 0 discovered: 3 records dropped, no usable href" in status.stdout
    assert "nothing to do" not in status.stdout
    report = json.loads(CliRunner().invoke(cli, ["status", str(state), "--json"]).stdout)
    assert report["discovery_warning"] == record["discovery"]["warning"]


def test_zero_records_on_a_first_run_is_said(tmp_path):
    result, state = _replay(tmp_path, HTML, "<html><body><p>No minutes yet</p></body></html>", "--json")
    record = json.loads(result.stdout)
    assert record["coverage"]["discovered"] == 0 and record["coverage"]["complete"] is True
    assert record["discovery"]["warning"].startswith(
        "0 discovered on a first run: records.selector 'div.views-row h3.title' matched nothing")


def test_a_healthy_listing_carries_no_warning(tmp_path):
    result, state = _replay(tmp_path, {**HTML, "records": {"selector": "div.views-row h3.title a"}}, LISTING, "--json")
    assert json.loads(result.stdout)["discovery"]["warning"] is None
