"""`collection run` end to end against the loopback HTTPS site (real TLS, real urllib3).

Most runs are in-process on a VirtualClock (politeness waits jump; the network is real);
the subprocess runs at the bottom use the real clock and check what only the wire shows:
exit codes, the JSON record, and the politeness gap where the origin sees it.
"""

from __future__ import annotations

import json
import os

import pytest
from loopback import Reply
from test_run_kit import (COLUMNS, HOST, JSON_PAGE, ORIGIN, Publisher, current, ledger_rows, page_id,
                          page_requests, recipe, relation_rows, run_cli, run_in_process)

from collection.recipe.refusal import RefusedError
from collection.merge.states import COVERAGE_MEMBERS

KINDS = ("json_api", "html_index", "sitemap", "explicit")


@pytest.mark.parametrize("kind", KINDS)
def test_first_run_stops_second_continues_third_is_idle(loopback, tmp_path, kind):
    """COV-01, COV-02, FETCH-12, MERGE-08, MERGE-15, OPS-08."""
    Publisher(loopback, kind).publish("1", "2", "3", "4", "5").install()
    data = recipe(kind, max_fetches=3)
    first = run_in_process(loopback, data, tmp_path)
    cov = first["coverage"]
    assert list(cov) == list(COVERAGE_MEMBERS)
    assert (cov["fetched_this_run"], cov["pending"], cov["budget_exhausted"], cov["complete"]) == \
        (3, 2, "max_fetches_per_run", False)
    # the first three in discovery order were chosen; two workers may deliver them in either order
    assert sorted(page_requests(loopback)) == ["/p/1", "/p/2", "/p/3"]
    assert {r["page_id"] for r in relation_rows(tmp_path)} == {page_id(kind, p) for p in "123"}

    loopback.clear()
    second = run_in_process(loopback, data, tmp_path)
    cov = second["coverage"]
    assert (cov["fetched_this_run"], cov["pending"], cov["budget_exhausted"], cov["complete"]) == (2, 0, None, True)
    assert sorted(page_requests(loopback)) == ["/p/4", "/p/5"]
    second_relation = current(tmp_path, "relation.csv")

    loopback.clear()
    third = run_in_process(loopback, data, tmp_path)
    assert third["coverage"]["fetched_this_run"] == 0 and third["coverage"]["complete"]
    assert page_requests(loopback) == []
    assert current(tmp_path, "relation.csv") == second_relation       # MERGE-15
    assert [third["run_number"], third["generation"]] == [3, "000003"]
    assert sorted(os.listdir(tmp_path / "generations")) == ["000001", "000002", "000003"]


@pytest.mark.parametrize("kind", ("json_api", "sitemap"))
def test_changed_page_is_a_correction(loopback, tmp_path, kind):
    """MERGE-16..19, MERGE-29: the revision hint moved, the page answered differently."""
    pub = Publisher(loopback, kind).publish("1", "2", "3")
    pub.install()
    data = recipe(kind, revisit="revision_hint")
    run_in_process(loopback, data, tmp_path)
    before = ledger_rows(tmp_path)[page_id(kind, "2")]
    pub.change("2", 2)
    pub.install()
    loopback.clear()
    record = run_in_process(loopback, data, tmp_path)
    assert page_requests(loopback) == ["/p/2"]
    cov = record["coverage"]
    assert (cov["fetched_this_run"], cov["changed"], cov["unchanged"]) == (1, 1, 0)
    after = ledger_rows(tmp_path)[page_id(kind, "2")]
    assert after["revision"] == "2" and after["previous_content_sha256"] == before["content_sha256"]
    assert record["corrections"] == [{"page_id": page_id(kind, "2"), "previous_content_sha256": before["content_sha256"],
                                      "content_sha256": after["content_sha256"], "revision": 2,
                                      "at": record["corrections"][0]["at"]}]
    rows = [r for r in relation_rows(tmp_path) if r["page_id"] == page_id(kind, "2")]
    assert {r["page_revision"] for r in rows} == {"2"} and rows[0]["title"].endswith("v2 #1")


def test_404_keeps_rows_fails_and_is_retried_oldest_failure_first(loopback, tmp_path):
    """MERGE-09, MERGE-20, MERGE-23, MERGE-24, D-53, D-62, REF-13."""
    kind = "json_api"
    pub = Publisher(loopback, kind).publish("1", "2", "3", "4")
    pub.pages["4"] = Reply(404, JSON_PAGE, b"{}")
    pub.install()
    data = recipe(kind, revisit="revision_hint", concurrency=1)
    first = run_in_process(loopback, data, tmp_path)
    assert first["coverage"]["failed_this_run"] == 1 and first["failures"]["by_class"]["gone"] == 1
    p2_rows = [r for r in relation_rows(tmp_path) if r["page_id"] == "id-2"]

    # run 2: page 4 still 404 (retried, failed first); page 2's hint moved and it now 404s too
    pub.hints["2"] = "2024-03-01"
    pub.pages["2"] = Reply(404, JSON_PAGE, b"{}")
    pub.install()
    loopback.clear()
    second = run_in_process(loopback, data, tmp_path)
    assert page_requests(loopback) == ["/p/4", "/p/2"]
    assert second["coverage"]["failed"] == 2 and second["coverage"]["complete"] is False
    ledger = ledger_rows(tmp_path)
    assert (ledger["id-2"]["state"], ledger["id-2"]["failure_code"], ledger["id-2"]["failure_class"]) == \
        ("failed", "http_status_404", "gone")
    assert [r for r in relation_rows(tmp_path) if r["page_id"] == "id-2"] == p2_rows     # rows kept

    # run 3: the failures again, oldest failure first (page 4 failed before page 2)
    loopback.clear()
    run_in_process(loopback, data, tmp_path)
    assert page_requests(loopback) == ["/p/4", "/p/2"]


def test_page_gone_from_listing_keeps_rows_and_ledger_row(loopback, tmp_path):
    """MERGE-25, MERGE-26."""
    pub = Publisher(loopback, "sitemap").publish("1", "2", "3")
    pub.install()
    data = recipe("sitemap")
    run_in_process(loopback, data, tmp_path)
    before = [r for r in relation_rows(tmp_path) if r["page_id"].endswith("/p/3")]
    pub.listed.remove("3")
    pub.install()
    record = run_in_process(loopback, data, tmp_path)
    assert record["coverage"]["discovered"] == 2 and record["coverage"]["known"] == 3
    assert [r for r in relation_rows(tmp_path) if r["page_id"].endswith("/p/3")] == before
    assert ledger_rows(tmp_path)[f"{ORIGIN}/p/3"]["state"] == "fetched"


@pytest.mark.parametrize("kind", ("json_api", "html_index"))
def test_listing_failing_on_second_run_is_a_success(loopback, tmp_path, kind):
    """REF-12, COV-07, COV-29."""
    pub = Publisher(loopback, kind).publish("1", "2")
    pub.install()
    data = recipe(kind)
    run_in_process(loopback, data, tmp_path)
    relation = current(tmp_path, "relation.csv")
    pub.listing_reply = Reply(500, JSON_PAGE, b"{}")
    pub.install()
    record = run_in_process(loopback, data, tmp_path)
    cov = record["coverage"]
    first_listing = f"{ORIGIN}/api/items?per_page=100&page=1" if kind == "json_api" else f"{ORIGIN}/index.html"
    assert (cov["discovered"], cov["discovery_complete"], cov["discovery_failure"], cov["known"], cov["complete"]) == \
        (0, False, first_listing, 2, False)
    assert record["requests"]["retry"] == 1                            # pages.retries 1 (D-08)
    assert current(tmp_path, "relation.csv") == relation               # every row kept


def test_listing_failing_on_first_run_writes_nothing(loopback, tmp_path):
    """REF-03, REF-04: COLLECTION_DISCOVERY_FAILED, no generation, no current."""
    pub = Publisher(loopback, "sitemap").publish("1")
    pub.listing_reply = Reply(503, (("Content-Type", "text/plain"),), b"down")
    pub.install()
    with pytest.raises(RefusedError) as refused:
        run_in_process(loopback, recipe("sitemap"), tmp_path)
    assert refused.value.code == "COLLECTION_DISCOVERY_FAILED"
    assert not os.path.exists(tmp_path / "current") and os.listdir(tmp_path / "generations") == []
    assert page_requests(loopback) == []


def test_resync_refused_by_discovery_leaves_previous_generation(loopback, tmp_path):
    """REF-03 under --resync (the starting ledger is empty) and the old generation stays current."""
    pub = Publisher(loopback, "sitemap").publish("1", "2")
    pub.install()
    data = recipe("sitemap")
    run_in_process(loopback, data, tmp_path)
    before = {n: current(tmp_path, n) for n in ("relation.csv", "ledger.csv", "run.json")}
    pub.listing_reply = Reply(404, (("Content-Type", "text/plain"),), b"")
    pub.install()
    with pytest.raises(RefusedError) as refused:
        run_in_process(loopback, data, tmp_path, resync=True)
    assert refused.value.code == "COLLECTION_DISCOVERY_FAILED"
    assert {n: current(tmp_path, n) for n in before} == before


def test_resync_starts_from_an_empty_ledger(loopback, tmp_path):
    """OPS-05, OPS-06, D-61: rediscovered from the beginning, revisions restart at 1."""
    pub = Publisher(loopback, "json_api").publish("1", "2", "3")
    pub.install()
    data = recipe("json_api", max_fetches=2)
    run_in_process(loopback, data, tmp_path)
    pub.change("1", 2)
    pub.install()
    loopback.clear()
    record = run_in_process(loopback, data, tmp_path, resync=True)
    assert record["mode"] == "resync" and record["corrections"] == []
    assert sorted(page_requests(loopback)) == ["/p/1", "/p/2"]
    assert ledger_rows(tmp_path)["id-1"]["revision"] == "1"
    assert os.path.exists(tmp_path / "generations" / "000001" / "relation.csv")   # previous generation kept


def test_redirect_off_the_allowlist_is_skipped_origin(loopback, tmp_path):
    """URL-13..16, D-26."""
    pub = Publisher(loopback, "explicit").publish("1", "2")
    pub.pages["2"] = Reply(302, (("Location", "https://other.example.org/elsewhere"),))
    pub.install()
    record = run_in_process(loopback, recipe("explicit", ids=("1", "2")), tmp_path)
    assert record["coverage"]["skipped"] == 1 and record["coverage"]["failed"] == 0
    row = ledger_rows(tmp_path)["id-2"]
    assert (row["state"], row["landed_url"]) == ("skipped_origin", "https://other.example.org/elsewhere")
    assert not loopback.requests_for(host="other.example.org")


def test_link_off_the_allowlist_is_never_requested(loopback, tmp_path):
    """URL-10, URL-11, MERGE-31."""
    Publisher(loopback, "explicit").publish("1").install()
    data = recipe("explicit", ids=("1",), extra_members=[{"page_id": "far", "url": "https://other.example.org/p/9"},
                                                         {"page_id": "port", "url": f"{ORIGIN}:8443/p/9"}])
    record = run_in_process(loopback, data, tmp_path)
    # COV-18 does not count skipped pages against completeness
    assert record["coverage"]["skipped"] == 2 and record["coverage"]["complete"] is True
    assert page_requests(loopback) == ["/p/1"] and not loopback.requests_for(host="other.example.org")


def test_robots_disallowed_page_is_failed_without_a_request(loopback, tmp_path):
    """FETCH-22, FETCH-23, D-48."""
    pub = Publisher(loopback, "explicit").publish("1", "2")
    pub.install()
    loopback.route("/robots.txt", Reply(200, (("Content-Type", "text/plain"),), b"User-agent: *\nDisallow: /p/2\n"))
    record = run_in_process(loopback, recipe("explicit", ids=("1", "2")), tmp_path)
    row = ledger_rows(tmp_path)["id-2"]
    assert (row["state"], row["failure_code"], row["failure_class"]) == ("failed", "robots_disallowed", "blocked")
    assert page_requests(loopback) == ["/p/1"] and record["requests"]["robots"] == 1


def test_merge_invalid_before_any_request(loopback, tmp_path):
    """REF-05: the stored relation's columns are not this run's; refused before any request."""
    Publisher(loopback, "sitemap").publish("1").install()
    data = recipe("sitemap")
    run_in_process(loopback, data, tmp_path)
    relation = tmp_path / "current" / "relation.csv"
    text = relation.read_text()
    os.chmod(relation, 0o644)
    relation.write_text(text.replace("title,body", "title,summary", 1))
    loopback.clear()
    with pytest.raises(RefusedError) as refused:
        run_in_process(loopback, data, tmp_path)
    assert refused.value.code == "COLLECTION_MERGE_INVALID" and loopback.requests == []


def test_discovery_body_of_the_wrong_shape_is_merge_invalid(loopback, tmp_path):
    """REF-07, D-13."""
    pub = Publisher(loopback, "json_api").publish("1")
    pub.listing_reply = Reply(200, JSON_PAGE, b'{"items": []}')
    pub.install()
    with pytest.raises(RefusedError) as refused:
        run_in_process(loopback, recipe("json_api"), tmp_path)
    assert refused.value.code == "COLLECTION_MERGE_INVALID" and not os.path.exists(tmp_path / "current")


def test_deadline_ends_the_run_as_a_success(loopback, tmp_path):
    """D-19, D-60, FETCH-15: on the virtual clock, 1 s per page, a 2.5 s deadline."""
    Publisher(loopback, "explicit").publish("1", "2", "3", "4", "5").install()
    record = run_in_process(loopback, recipe("explicit", concurrency=1), tmp_path, deadline=2.5)
    cov = record["coverage"]
    assert cov["budget_exhausted"] == "deadline" and cov["complete"] is False
    assert 1 <= cov["fetched_this_run"] < 5 and cov["pending"] == 5 - cov["fetched_this_run"]


def test_max_requests_ends_the_run_as_a_success(loopback, tmp_path):
    """FETCH-09, FETCH-10: every page redirects once, so an exact-sum budget runs short."""
    pub = Publisher(loopback, "explicit").publish("1", "2", "3")
    for pid in "123":
        loopback.route(f"/p/{pid}", Reply(301, (("Location", f"{ORIGIN}/q/{pid}"),)))
        loopback.route(f"/q/{pid}", pub.pages[pid])
    record = run_in_process(loopback, recipe("explicit", ids=("1", "2", "3"), max_fetches=3, max_requests=4,
                                    discovery_max=1),
                            tmp_path)
    cov = record["coverage"]
    assert cov["budget_exhausted"] == "max_requests" and cov["fetched_this_run"] < 3
    assert record["requests"]["total"] == 4 and record["requests"]["redirect"] >= 1   # interleaving decides which hop ran short
    assert ledger_rows(tmp_path)["id-1"]["url"] == f"{ORIGIN}/p/1"


def test_run_record_files_agree_with_the_generation(loopback, tmp_path):
    """run.json names the digests of the relation and ledger it was written with."""
    import hashlib

    Publisher(loopback, "sitemap").publish("1", "2").install()
    record = run_in_process(loopback, recipe("sitemap"), tmp_path)
    stored = json.loads(current(tmp_path, "run.json"))
    assert stored == record
    for name in ("relation.csv", "ledger.csv"):
        assert hashlib.sha256(current(tmp_path, name)).hexdigest() == record["files"][name]["sha256"]
    header = current(tmp_path, "relation.csv").decode().splitlines()[0].split(",")
    assert tuple(header[:2]) == COLUMNS and header[2] == "page_id"


# --- the command line, on the real clock -----------------------------------------------------------------

def _cli_args(loopback, recipe_path, state, *extra):
    args = ["run", str(recipe_path), "--state", str(state), "--ca-bundle", loopback.ca_pem_path]
    for flag in loopback.resolve_flags(HOST):
        args += ["--resolve", flag]
    return args + list(extra)


def test_schedule_in_the_action_plan_is_refused_before_any_request(loopback, tmp_path):
    """OPS-02, OPS-03, D-61: RESYNC_REQUIRED, exit 1, the server saw zero requests."""
    Publisher(loopback, "sitemap").publish("1").install()
    recipe_path = tmp_path / "recipe.json"
    recipe_path.write_bytes(recipe("sitemap"))
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"action": "refresh", "schedule": {"every": "P1D"}}))
    done = run_cli(*_cli_args(loopback, recipe_path, tmp_path / "state", "--plan", str(plan), "--json"))
    assert done.returncode == 1, done.stderr
    assert "RESYNC_REQUIRED" in done.stderr and json.loads(done.stdout)["code"] == "RESYNC_REQUIRED"
    assert loopback.requests == []


def test_cli_run_real_clock_exit_codes_json_and_politeness(loopback, tmp_path):
    """Exit 0 with --json (fifteen members in order), then status; gaps >= 1 s at the server."""
    Publisher(loopback, "explicit").publish("1", "2").install()
    recipe_path = tmp_path / "recipe.json"
    recipe_path.write_bytes(recipe("explicit", ids=("1", "2")))
    state = tmp_path / "state"
    done = run_cli(*_cli_args(loopback, recipe_path, state, "--json", "--user-agent-token", "TestBot"))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""                                         # off a terminal: nothing but the result
    record = json.loads(done.stdout)
    assert list(record["coverage"]) == list(COVERAGE_MEMBERS) and record["coverage"]["complete"] is True
    assert record["clock"] == "system"
    arrivals = [r.arrived for r in loopback.requests_for(host=HOST)]
    assert len(arrivals) == 3                                         # robots.txt + 2 pages
    gaps = [b - a for a, b in zip(arrivals, arrivals[1:])]
    assert min(gaps) >= 1.0, gaps
    assert all("TestBot-PublicHttps/1.0" in (r.header("User-Agent") or "") for r in loopback.requests)

    status = run_cli("status", str(state), "--json")
    assert status.returncode == 0, status.stderr
    summary = json.loads(status.stdout)
    assert summary["pages"]["fetched"] == 2 and summary["next"] == ["complete: nothing to do until the publisher changes"]

    bad = run_cli("run", str(recipe_path))                            # no --state
    assert bad.returncode == 2


def test_cli_registration_refusal_and_locked_state(loopback, tmp_path):
    from collection.store.generations import StateStore

    recipe_path = tmp_path / "recipe.json"
    doc = json.loads(recipe("sitemap"))
    doc["connector"]["adapter_id"] = "public.https.collection@1.0.0"
    recipe_path.write_text(json.dumps(doc))
    done = run_cli(*_cli_args(loopback, recipe_path, tmp_path / "state", "--json"))
    assert done.returncode == 1 and json.loads(done.stdout)["code"] == "HOSTED_COLLECTION_UNSUPPORTED"

    recipe_path.write_bytes(recipe("sitemap"))
    with StateStore(str(tmp_path / "state")):
        done = run_cli(*_cli_args(loopback, recipe_path, tmp_path / "state", "--json"))
    assert done.returncode == 1 and json.loads(done.stdout)["code"] == "STATE_LOCKED"
    assert loopback.requests == []


def test_an_unusable_state_directory_is_a_clear_error_not_a_traceback(tmp_path):
    """GUIDE exit codes: 2 with the path named, never a traceback."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = run_cli("run", os.path.join(root, "fixtures", "recipes", "council_decisions.json"),
                   "--state", str(blocker / "state"), "--replay",
                   os.path.join(root, "fixtures", "council_decisions", "council_decisions.fixture.json.gz"))
    assert done.returncode == 2
    assert str(blocker / "state") in done.stderr and "Traceback" not in done.stderr
