"""The authoring guide's three how-to sections, run as written (issue 26 point 5):

- "From saved pages to an offline crawl": the committed saved pages, fixture and recipe; the
  `fixture check --recipe` and `run --replay` commands the guide prints, with the lines it shows;
  the gap a missing page makes (FIX-* replay rules, COV-01 coverage).
- "What a sitemap recipe can and cannot filter": a child sitemap as discovery.url lists only its
  pages (DISC-18, DISC-22), an off-origin <loc> is skipped (D-24, REG-21), and a typed table
  filters rows on page_url (PROV-06).
- "When a page lacks a column": html.tabular table mode fails the page with column_mismatch
  (READ-09), records mode gives "" (READ-09, D-50), and the build fails a bare cast of "" with
  BUILD_ROWS_FAILED but keeps the row with nullif (D-71).
"""

from __future__ import annotations

import copy
import csv
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
GUIDE = (ROOT / "docs" / "authoring.md").read_text(encoding="utf-8")
SAVED = ROOT / "docs" / "examples" / "saved"


def _section(title: str) -> str:
    start = GUIDE.index(title)
    end = GUIDE.find("\n## ", start + len(title))
    return GUIDE[start:end if end > 0 else None]


def _after(text: str, marker: str, fence: str) -> str:
    """The first ```fence block after `<!-- marker -->`."""
    start = text.index(f"<!-- {marker} -->")
    match = re.compile(rf"```{fence}\n(.*?)```", re.S).search(text, start)
    return match.group(1)


def _guide_recipe(fixture_name: str) -> dict:
    return json.loads(_after(GUIDE, f"fixture: docs/examples/{fixture_name}", "json"))


def _collection(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "collection", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def _output_after(text: str, marker: str) -> str:
    """The ```text block that follows the ```sh command after `<!-- marker -->`."""
    return re.compile(r"```sh\n.*?```\n```text\n(.*?)```", re.S).search(text, text.index(f"<!-- {marker} -->")).group(1)


def _prints_what_is_shown(done: subprocess.CompletedProcess, block: str) -> None:
    printed = done.stdout.splitlines()
    for line in (line for line in block.splitlines() if line.strip()):
        assert line in printed, line


# --- From saved pages to an offline crawl ------------------------------------------------------

SAVED_SECTION = _section("## From saved pages to an offline crawl")


def test_the_committed_saved_pages_fixture_and_recipe_are_the_guides():
    assert json.loads((SAVED / "site.json").read_text()) == json.loads(_after(SAVED_SECTION, "saved-fixture: "
                                                                              "docs/examples/saved/site.json", "json"))
    assert json.loads((SAVED / "council_minutes.json").read_text()) == _guide_recipe("council_minutes.fixture.json")
    listed = re.findall(r"^docs/examples/saved/(\S+)\s+(https://\S+)$", SAVED_SECTION, re.M)
    exchanges = json.loads((SAVED / "site.json").read_text())
    assert [(x["response"]["body"]["file"], x["request"]["url"]) for x in exchanges] == listed
    assert all((SAVED / name).is_file() for name, _ in listed)


def test_fixture_check_prints_what_the_guide_shows_with_and_without_the_last_page(tmp_path):
    command = _after(SAVED_SECTION, "saved-check: complete", "sh").split()
    assert command[:3] == ["collection", "fixture", "check"]
    done = _collection(*command[1:])
    assert done.returncode == 0, done.stderr
    _prints_what_is_shown(done, _output_after(SAVED_SECTION, "saved-check: complete"))

    # drop the fixture's last line, as the guide says: one gap, exit 1, the lines it shows
    partial = tmp_path / "saved"
    shutil.copytree(SAVED, partial)
    exchanges = json.loads((partial / "site.json").read_text())
    (partial / "site.json").write_text(json.dumps(exchanges[:-1]))
    done = _collection("fixture", "check", str(partial / "site.json"), "--recipe", str(partial / "council_minutes.json"))
    assert done.returncode == 1
    _prints_what_is_shown(done, _after(SAVED_SECTION, "saved-check: partial", "text"))


def test_run_replay_of_the_saved_pages_prints_what_the_guide_shows(tmp_path):
    command = _after(SAVED_SECTION, "saved-run", "sh").split()
    state = command.index("--state") + 1
    assert command[state] == "/tmp/minutes"
    command[state] = str(tmp_path / "minutes")
    done = _collection(*command[1:])
    assert done.returncode == 0, done.stderr
    _prints_what_is_shown(done, _output_after(SAVED_SECTION, "saved-run"))
    with open(tmp_path / "minutes" / "current" / "relation.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert sorted(r["page_url"] for r in rows) == [f"https://www.example.com/minutes/{d}"
                                                   for d in ("2026-01-12", "2026-01-26", "2026-02-09")]
    assert all(r["minutes_pdf"].startswith("/files/minutes-") for r in rows)


# --- What a sitemap recipe can and cannot filter -------------------------------------------------

SITEMAP_SECTION = _section("### What a sitemap recipe can and cannot filter")
ANNUAL_FIXTURE = ROOT / "docs" / "examples" / "annual_reports.fixture.json"


def _run_json(tmp_path: Path, recipe: dict, exchanges: list, name: str) -> dict:
    (tmp_path / f"{name}.json").write_text(json.dumps(recipe))
    (tmp_path / f"{name}.fixture.json").write_text(json.dumps(exchanges))
    done = _collection("run", str(tmp_path / f"{name}.json"), "--state", str(tmp_path / name), "--replay",
                       str(tmp_path / f"{name}.fixture.json"), "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_child_sitemap_as_the_discovery_url_lists_only_its_pages(tmp_path):
    recipe = _guide_recipe("annual_reports.fixture.json")
    exchanges = json.loads(ANNUAL_FIXTURE.read_text())
    whole = _run_json(tmp_path, recipe, exchanges, "whole")["coverage"]
    child_url = re.search(r'"url": "(https://www\.example\.com/sitemap-annual-1\.xml)"', SITEMAP_SECTION).group(1)
    recipe["collection"]["discovery"]["url"] = child_url
    child = _run_json(tmp_path, recipe, exchanges, "child")["coverage"]
    said = re.search(r"lists (\d+) reports in (\d+) listing request instead of (\d+) in (\d+)", SITEMAP_SECTION)
    assert (child["discovered"], child["discovery_requests"], whole["discovered"], whole["discovery_requests"]) \
        == tuple(map(int, said.groups()))


def test_a_loc_outside_the_allowed_origins_is_listed_but_skipped(tmp_path):
    recipe = _guide_recipe("annual_reports.fixture.json")
    exchanges = copy.deepcopy(json.loads(ANNUAL_FIXTURE.read_text()))
    child = next(x for x in exchanges if x["request"]["url"].endswith("sitemap-annual-2.xml"))
    body = child["response"]["body"]["text"]
    child["response"]["body"]["text"] = body.replace(
        "</urlset>", "<url><loc>https://elsewhere.example.org/annual/2025</loc></url></urlset>")
    record = _run_json(tmp_path, recipe, exchanges, "origins")
    assert record["coverage"]["skipped"] == 1 and record["coverage"]["discovered"] == 4
    assert not any(r["page_url"].startswith("https://elsewhere") for r in _relation(tmp_path / "origins"))


def _relation(state: Path) -> list[dict]:
    with open(state / "current" / "relation.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def test_a_typed_table_filters_the_sitemaps_rows_on_page_url(tmp_path):
    recipe = _guide_recipe("annual_reports.fixture.json")
    sql = re.search(r"`(select … from annual_reports where page_url like\s+'[^']+')`", SITEMAP_SECTION).group(1)
    sql = " ".join(sql.split()).replace("select …", "select page_url, title")
    dataset = {"name": "annual", "sources": [recipe], "tables": [{
        "name": "reports_2024", "sql": sql,
        "columns": [{"name": "page_url", "type": "string"}, {"name": "title", "type": "string"}]}]}
    path = tmp_path / "annual.dataset.json"
    path.write_text(json.dumps(dataset))
    (tmp_path / "site.json").write_text(ANNUAL_FIXTURE.read_text())
    assert _collection("run", str(path), "--state", str(tmp_path / "s"), "--replay", str(tmp_path / "site.json")
                       ).returncode == 0
    built = _collection("build", str(path), "--state", str(tmp_path / "s"))
    assert built.returncode == 0, built.stderr
    import duckdb
    rows = duckdb.connect(str(tmp_path / "s" / "build" / "current" / "dataset.duckdb"), read_only=True).execute(
        "select page_url from reports_2024").fetchall()
    assert rows == [("https://www.example.com/annual/2024",)]


# --- When a page lacks a column ------------------------------------------------------------------

MISSING_SECTION = _section("## When a page lacks a column")
COMMITTEE_FIXTURE = ROOT / "docs" / "examples" / "committee_reports.fixture.json"


def _without_attendance_column() -> list:
    """The numbered-list fixture with the housing report's table reduced to its Member column."""
    exchanges = json.loads(COMMITTEE_FIXTURE.read_text())
    page = next(x for x in exchanges if x["request"]["url"].endswith("/reports/housing-2025"))
    text = page["response"]["body"]["text"].replace("<th>Meetings attended</th>", "")
    page["response"]["body"]["text"] = re.sub(r"(<tr><td>[^<]*</td>)<td>[^<]*</td>", r"\1", text)
    assert "Meetings attended" not in page["response"]["body"]["text"]
    return exchanges


def test_table_mode_fails_the_page_that_lacks_a_column_as_the_guide_shows(tmp_path):
    recipe = _guide_recipe("committee_reports.fixture.json")
    (tmp_path / "r.json").write_text(json.dumps(recipe))
    (tmp_path / "f.json").write_text(json.dumps(_without_attendance_column()))
    done = _collection("run", str(tmp_path / "r.json"), "--state", str(tmp_path / "s"), "--replay",
                       str(tmp_path / "f.json"))
    assert done.returncode == 0, done.stderr
    _prints_what_is_shown(done, _after(MISSING_SECTION, "missing-column: table", "text"))
    assert "running again will not help" in done.stdout and "collection decode" in done.stdout
    assert {r["page_url"] for r in _relation(tmp_path / "s")} == {
        "https://www.example.com/reports/audit-2025", "https://www.example.com/reports/scrutiny-2025"}


def _records_mode_recipe() -> dict:
    recipe = _guide_recipe("committee_reports.fixture.json")
    options = _after(MISSING_SECTION, "missing-column: records", "json").strip()
    assert json.dumps(json.loads(options), sort_keys=True, separators=(",", ":"), ensure_ascii=False) == options
    recipe["connector"]["parameters"][2]["value"] = options
    return recipe


def test_records_mode_gives_an_empty_cell_where_the_page_lacks_the_column(tmp_path):
    (tmp_path / "r.json").write_text(json.dumps(_records_mode_recipe()))
    (tmp_path / "f.json").write_text(json.dumps(_without_attendance_column()))
    done = _collection("run", str(tmp_path / "r.json"), "--state", str(tmp_path / "s"), "--replay",
                       str(tmp_path / "f.json"), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["coverage"]["failed"] == 0
    cells = {(r["page_url"].rsplit("/", 1)[1], r["member"]): r["meetings_attended"] for r in _relation(tmp_path / "s")}
    assert cells[("housing-2025", "Cllr A. Jones")] == "" and cells[("audit-2025", "Cllr A. Jones")] == "6"


def test_nullif_builds_the_integer_column_and_a_bare_cast_of_an_empty_cell_fails_the_build(tmp_path):
    (tmp_path / "f.json").write_text(json.dumps(_without_attendance_column()))
    sql = " ".join(_after(MISSING_SECTION, "missing-column: sql", "sql").split())
    columns = [{"name": "member", "type": "string"}, {"name": "meetings_attended", "type": "integer"},
               {"name": "page_url", "type": "string"}]
    outcomes = {}
    for name, text in (("nullif", sql), ("bare", sql.replace("cast(nullif(meetings_attended, '') as integer)",
                                                               "cast(meetings_attended as integer)"))):
        assert name == "nullif" or text != sql
        path = tmp_path / f"{name}.dataset.json"
        path.write_text(json.dumps({"name": "committees", "sources": [_records_mode_recipe()],
                                    "tables": [{"name": "attendance", "sql": text, "columns": columns}]}))
        state = tmp_path / name
        assert _collection("validate", str(path)).returncode == 0
        assert _collection("run", str(path), "--state", str(state), "--replay", str(tmp_path / "f.json")).returncode == 0
        outcomes[name] = (_collection("build", str(path), "--state", str(state)), state)
    built, state = outcomes["nullif"]
    assert built.returncode == 0, built.stderr
    import duckdb
    nulls = duckdb.connect(str(state / "build" / "current" / "dataset.duckdb"), read_only=True).execute(
        "select count(*) from attendance where meetings_attended is null").fetchone()
    assert nulls == (2,)
    refused, state = outcomes["bare"]
    assert refused.returncode == 1 and "BUILD_ROWS_FAILED" in refused.stderr
    assert not (state / "build" / "current").exists()
