"""The catalogue of codes and `collection explain` (GUIDE: one catalogue; D-45, D-62)."""

import json

import pytest
from click.testing import CliRunner

from collection import codes
from collection.cli import cli


@pytest.mark.parametrize("status, liveness", [
    (404, "gone"), (410, "gone"),                                   # D-62
    (401, "blocked"), (403, "blocked"), (429, "blocked"),
    (500, "error"), (503, "error"), (400, "error"),
])
def test_http_status_codes_carry_liveness_class(status, liveness):
    assert codes.liveness(codes.http_status_code(status)) == liveness


@pytest.mark.parametrize("code, liveness", [
    ("robots_disallowed", "blocked"), ("timeout", "error"), ("decode_error", "error"),
    ("column_mismatch", "error"), ("media_type_refused", "error"), ("skipped_origin", "blocked"),
])
def test_named_page_failures_carry_liveness_class(code, liveness):
    assert codes.liveness(code) == liveness


def test_run_refusals_of_the_guide_are_catalogued():
    for code in ("COLLECTION_DISCOVERY_FAILED", "COLLECTION_MERGE_INVALID", "RESYNC_REQUIRED",
                 "HOSTED_COLLECTION_UNSUPPORTED", "TRANSFORM_COLUMN_TYPE_MISMATCH"):
        assert codes.lookup(code) is not None


def test_liveness_of_a_registration_code_is_an_error():
    with pytest.raises(KeyError):
        codes.liveness("REQUEST_BUDGET_SUM")


def test_explain_prints_a_known_code_and_refuses_an_unknown_one():
    runner = CliRunner()
    result = runner.invoke(cli, ["explain", "--json", "http_status_410"])
    assert result.exit_code == 0
    entry = json.loads(result.output)
    assert entry["liveness"] == "gone" and entry["kind"] == "page"
    result = runner.invoke(cli, ["explain", "NO_SUCH_CODE"])
    assert result.exit_code == 2


def test_every_code_is_documented():
    """docs/codes.md lists every code of the catalogue, so `explain` and the docs agree."""
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "docs" / "codes.md").read_text()
    missing = [code for code in codes.CATALOGUE if f"`{code}`" not in text]
    assert missing == []
