"""`collection decode RECIPE FILE`: try a Reader pin on one saved page (GUIDE; READ-05, READ-09, D-37)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from collection.cli import cli

RECIPE = Path(__file__).resolve().parents[1] / "fixtures" / "recipes" / "council_decisions.json"
PAGE = (b"<html><head><title>Decision 7</title></head><body><nav>Home</nav><article><h1>Decision 7</h1>"
        b"<p>The committee approved the application subject to the conditions set out in the officer's report.</p>"
        b"<p>Members noted the objections received from neighbouring residents about parking.</p></article></body></html>")

CASES = [
    # (extra arguments, exit code, failure code in JSON or None)
    ([], 0, None),
    (["--media-type", "text/html; charset=utf-8"], 0, None),
    (["--media-type", "application/json"], 1, "media_type_refused"),
]


@pytest.mark.parametrize("extra,status,failure", CASES)
def test_decode_json(tmp_path: Path, extra: list[str], status: int, failure: str | None) -> None:
    page = tmp_path / "page.html"
    page.write_bytes(PAGE)
    result = CliRunner().invoke(cli, ["decode", str(RECIPE), str(page), "--json", "--url", "https://www.example.com/d/7", *extra])
    assert result.exit_code == status
    report = json.loads(result.stdout.splitlines()[0])
    assert report["columns"] == ["title", "story"]
    if failure is None:
        assert report["failure"] is None and report["rows"][0][0] == "Decision 7"
    else:
        assert report["failure"]["code"] == failure


def test_decode_csv_and_usage_errors(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_bytes(PAGE)
    result = CliRunner().invoke(cli, ["decode", str(RECIPE), str(page)])
    assert result.exit_code == 0 and result.stdout.startswith("title,story\nDecision 7,")
    assert CliRunner().invoke(cli, ["decode", str(RECIPE), str(tmp_path / "missing.html")]).exit_code == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert CliRunner().invoke(cli, ["decode", str(bad), str(page)]).exit_code == 1
