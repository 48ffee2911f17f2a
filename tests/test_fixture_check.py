"""`collection fixture check`: schema errors with pointers, and the gaps a recipe's runs would hit."""

import gzip
import json
import os

import pytest
from click.testing import CliRunner

from collection.cli import cli
from collection.fetch.clock import VirtualClock
from collection.fetch.transport import Request, TransportError
from collection.recording.replay import ReplayTransport, load_fixture

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECIPE = os.path.join(ROOT, "fixtures", "recipes", "council_decisions.json")
LIST = "https://www.example.com/wp-json/wp/v2/decisions?per_page=100&page="
JSON = [["Content-Type", "application/json"]]
HTML = [["Content-Type", "text/html"]]


def _listing(records):
    return {"status": 200, "headers": JSON, "body": {"text": json.dumps(records)}}


def _records(*names):
    return [{"id": i, "link": f"https://www.example.com/d/{n}", "modified": "2024-01-01T00:00:00"}
            for i, n in enumerate(names, start=1)]


PAST = {"status": 400, "headers": JSON, "body": {"text": '{"code":"rest_post_invalid_page_number"}'}}


def _fixture(tmp_path, exchanges, name="f.json"):
    path = tmp_path / name
    path.write_text(json.dumps(exchanges))
    return str(path)


def _check(*args):
    result = CliRunner().invoke(cli, ["fixture", "check", *args, "--json"])
    return result.exit_code, (json.loads(result.output) if result.output.startswith("{") else result.output)


def test_schema_errors_are_listed_with_pointers(tmp_path):
    path = _fixture(tmp_path, [{"request": {"url": "http://x.example/"}, "response": {"status": 200}},
                               {"request": {"url": "https://x.example/b"}, "response": {"status": 99}}])
    code, report = _check(path)
    assert code == 1 and not report["valid"]
    assert {e["pointer"] for e in report["errors"]} == {"/0/request/url", "/1/response/status"}


def test_loader_refusals_and_missing_body_files(tmp_path):
    dup = _fixture(tmp_path, [{"request": {"url": "https://x.example/a"}, "response": {"status": 200}},
                              {"request": {"url": "https://X.example/a#f"}, "response": {"status": 200}}], "dup.json")
    assert [e["pointer"] for e in _check(dup)[1]["errors"]] == ["/1/request/url"]
    missing = _fixture(tmp_path, [{"request": {"url": "https://x.example/a"},
                                   "responses": [{"status": 200}, {"status": 200, "body": {"file": "bodies/nope"}}]}],
                       "missing.json")
    code, report = _check(missing)
    assert code == 1 and [e["pointer"] for e in report["errors"]] == ["/0/responses/1/body/file"]
    (tmp_path / "broken.json.gz").write_bytes(b"\x1f\x8bnot gzip")
    assert _check(str(tmp_path / "broken.json.gz"))[0] == 1


def test_recipe_gaps_per_run(tmp_path):
    exchanges = [
        {"request": {"url": LIST + "1"}, "per": "run",
         "responses": [_listing(_records("a", "b", "c")), _listing(_records("a", "b", "c", "new"))]},
        {"request": {"url": LIST + "2"}, "response": PAST},
        {"request": {"url": "https://www.example.com/d/a"}, "response": {"status": 200, "headers": HTML}},
        {"request": {"url": "https://www.example.com/d/b"},
         "response": {"status": 301, "headers": [["Location", "/d/b/"]]}},          # the hop is missing
    ]
    code, report = _check(_fixture(tmp_path, exchanges), "--recipe", RECIPE)
    assert code == 1 and report["valid"] and report["runs_recorded"] == 2
    run1, run2 = report["runs"]
    assert run1["discovery"] == {"discovered": 3, "requests": 2, "complete": True, "stop_reason": "past_last_page",
                                 "failure": None}
    assert run1["gaps"] == [{"url": "https://www.example.com/d/b/", "role": "page",
                             "redirected_from": "https://www.example.com/d/b"},
                            {"url": "https://www.example.com/d/c", "role": "page"}]
    assert [g["url"] for g in run2["gaps"]][-1] == "https://www.example.com/d/new"
    assert any("robots.txt" in note for note in run1["notes"])
    # --run picks one run; filling the gaps makes the fixture complete
    assert [r["run"] for r in _check(_fixture(tmp_path, exchanges), "--recipe", RECIPE, "--run", "1")[1]["runs"]] == [1]
    exchanges += [{"request": {"url": f"https://www.example.com/d/{n}"}, "response": {"status": 200, "headers": HTML}}
                  for n in ("b/", "c", "new")]
    code, report = _check(_fixture(tmp_path, exchanges, "full.json"), "--recipe", RECIPE)
    assert code == 0 and report["complete"]


def test_a_missing_listing_is_a_gap_and_ends_discovery(tmp_path):
    code, report = _check(_fixture(tmp_path, [{"request": {"url": "https://www.example.com/robots.txt"},
                                               "response": {"status": 200}}]), "--recipe", RECIPE)
    assert code == 1
    assert report["runs"][0]["gaps"] == [{"url": LIST + "1", "role": "listing"}]
    assert report["runs"][0]["discovery"]["failure"] == LIST + "1"


def test_usage_errors(tmp_path):
    path = _fixture(tmp_path, [])
    assert _check(str(tmp_path / "nope.json"))[0] == 2
    assert _check(path, "--recipe", str(tmp_path / "nope.json"))[0] == 2
    (tmp_path / "refused.json").write_text("{}")
    assert _check(path, "--recipe", str(tmp_path / "refused.json"))[0] == 1


def test_human_output_names_the_missing_address(tmp_path):
    path = _fixture(tmp_path, [{"request": {"url": LIST + "1"}, "response": _listing(_records("a"))},
                               {"request": {"url": LIST + "2"}, "response": PAST}])
    result = CliRunner().invoke(cli, ["fixture", "check", path, "--recipe", RECIPE])
    assert result.exit_code == 1
    assert "missing page: https://www.example.com/d/a" in result.output


def test_replay_of_a_gap_names_the_address(tmp_path):
    path = tmp_path / "f.json.gz"
    path.write_bytes(gzip.compress(json.dumps([{"request": {"url": LIST + "1"}, "response": PAST}]).encode()))
    transport = ReplayTransport(load_fixture(str(path)), VirtualClock())
    with pytest.raises(TransportError) as info:
        transport.send(Request("https://www.example.com/d/zz"), 30.0)
    assert info.value.code == "replay_missing"
    assert "https://www.example.com/d/zz" in str(info.value)
