"""A gate fault is a gate fault (issue 24 point 2), tried as an attacker would: a hostile Redis
written here (tests/fake_resp.py, a real RESP peer on a loopback socket) that answers the gate's
scripts with wrong types, `nan`, `inf`, `1e300`, negative waits, malformed integers, error and
WRONGTYPE replies; and a real redis-server whose keys are tampered with (HSET a field to `nan`,
the record's key made a string, a lease that never expires).

Every one of them is GATE_UNAVAILABLE: the gate's calls raise GateUnavailable (never another
exception, never a wait that is negative, infinite or beyond MAX_WAIT_SECONDS), and a
`collection run` through such a gate exits 1 with that code, prints no traceback, blames nothing
on the publisher (no robots_disallowed, no page failure), keeps the previous generation when no
page was fetched, and counts exactly the requests the loopback publisher received.
FETCH-16, FETCH-18, FETCH-19, OPS (run-level refusals)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time

import pytest
from dataset_kit import JSON_HEADERS, page_body, source_doc
from fake_resp import FakeResp, Hostile, array, bulk, integer, wait_reply
from loopback import Reply

from collection.fetch.gate import GateUnavailable, Lease
from collection.fetch.redis_gate import MAX_WAIT_SECONDS, MIN_WAIT_SECONDS, RedisGate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLAIN = (("Content-Type", "text/plain"),)
HOST = "a.example.com"

# What a hostile gate may answer acquire with (raw RESP3, as redis-py reads it).
ACQUIRE_REPLIES = {
    "wait nan": wait_reply("nan"),
    "wait inf": wait_reply("inf"),
    "wait 1e300": wait_reply("1e300"),
    "wait -5": wait_reply("-5"),
    "wait not a number": wait_reply("soon"),
    "wait as a RESP double": array(integer(0), b",0.5\r\n", bulk("1")),
    "wait as an integer": array(integer(0), integer(5), bulk("1")),
    "last start nan": wait_reply("0.5", "nan"),
    "last start missing": array(integer(0), bulk("0.5")),
    "granted 7": array(integer(7), bulk(""), bulk("1")),
    "a lease with a wait": array(integer(1), bulk("2"), bulk("1")),
    "malformed integer": b"*3\r\n:zz\r\n$1\r\n1\r\n$1\r\n1\r\n",
    "text, not a list": bulk("OK"),
    "an integer, not a list": integer(1),
    "null": b"_\r\n",
    "error reply": b"-ERR something broke\r\n",
    "WRONGTYPE": b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
}
# sent, release and crawl-delay answer 1; anything else is a fault too.
ONE_REPLIES = {
    "zero": integer(0),
    "text": bulk("1"),
    "a list": array(integer(1)),
    "error reply": b"-ERR nope\r\n",
}


# --- the gate's calls, against the hostile server --------------------------------------------

@pytest.mark.parametrize("kind", sorted(ACQUIRE_REPLIES))
def test_every_odd_acquire_answer_is_gate_unavailable_after_one_call(kind):
    with FakeResp({"acquire": Hostile(ACQUIRE_REPLIES[kind])}) as fake:
        gate = RedisGate(fake.url, timeout=2)
        gate.check()
        with pytest.raises(GateUnavailable):
            gate.acquire(HOST, 1.0, 30)
        assert fake.count("acquire") == 1                      # no retry storm, no spin
        gate.close()


@pytest.mark.parametrize("script", ["sent", "release", "crawl-delay"])
@pytest.mark.parametrize("kind", sorted(ONE_REPLIES))
def test_every_odd_answer_of_the_other_scripts_is_gate_unavailable(script, kind):
    with FakeResp({script: Hostile(ONE_REPLIES[kind])}) as fake:
        gate = RedisGate(fake.url, timeout=2)
        lease = gate.acquire(HOST, 1.0, 30)
        assert isinstance(lease, Lease)
        with pytest.raises(GateUnavailable):
            if script == "sent":
                gate.sent(lease)
            elif script == "release":
                gate.release(lease, 5)
            else:
                gate.set_crawl_delay(HOST, 3)
        gate.close()


def test_a_gate_that_does_not_answer_pong_is_unavailable():
    with FakeResp(ping=b"+OK\r\n") as fake:
        with pytest.raises(GateUnavailable):
            RedisGate(fake.url, timeout=2).check()


def test_waits_are_never_negative_infinite_or_beyond_the_bound():
    """A legitimate wait comes back as it is; 0 is slept as MIN_WAIT_SECONDS (no spin); the
    bound itself is accepted, a hair beyond it is not."""
    for answer, expected in (("0.000000", MIN_WAIT_SECONDS), ("0.25", 0.25), (f"{MAX_WAIT_SECONDS:.6f}", MAX_WAIT_SECONDS)):
        with FakeResp({"acquire": Hostile(wait_reply(answer))}) as fake:
            assert RedisGate(fake.url).acquire(HOST, 1.0, 30) == expected
    with FakeResp({"acquire": Hostile(wait_reply(f"{MAX_WAIT_SECONDS + 0.001:.6f}"))}) as fake:
        with pytest.raises(GateUnavailable):
            RedisGate(fake.url).acquire(HOST, 1.0, 30)


# --- a real redis-server, its keys tampered with ----------------------------------------------

STATE = f"collection:gate:{{{HOST}}}"
LEASES = STATE + ":leases"

TAMPERED_FIELDS = [
    ("last_start", "nan"), ("last_start", "inf"), ("last_start", "-inf"), ("last_start", "1e300"),
    ("last_start", "-5"), ("last_start", "yesterday"), ("last_start", ""),
    ("next_start", "1e300"), ("next_start", "nan"), ("not_before", "inf"), ("not_before", "1e12"),
    ("crawl_delay", "-1"), ("crawl_delay", "1e9"), ("crawl_delay", "nan"),
]


@pytest.fixture
def tampered(redis_server):
    import redis

    client = redis.Redis.from_url(redis_server.url)
    gate = RedisGate(redis_server.url)
    yield gate, client
    gate.close()
    client.close()


@pytest.mark.parametrize("field,value", TAMPERED_FIELDS)
def test_a_tampered_field_is_named_and_stops_every_script(tampered, field, value):
    gate, client = tampered
    lease = _past_the_fence(gate)
    client.hset(STATE, field, value)
    for call in (lambda: gate.acquire(HOST, 1.0, 30), lambda: gate.sent(lease), lambda: gate.release(lease),
                 lambda: gate.set_crawl_delay(HOST, 2)):
        with pytest.raises(GateUnavailable) as raised:
            call()
        assert field in str(raised.value) and STATE in str(raised.value)     # the point is what it names


@pytest.mark.parametrize("key,make", [
    (STATE, lambda c: c.set(STATE, "x")),
    (STATE, lambda c: c.rpush(STATE, "x")),
    (LEASES, lambda c: c.set(LEASES, "x")),
    (LEASES, lambda c: c.hset(LEASES, "a", "1")),
])
def test_a_key_of_the_wrong_type_is_named(tampered, key, make):
    gate, client = tampered
    client.delete(key)
    make(client)
    with pytest.raises(GateUnavailable) as raised:
        gate.acquire(HOST, 1.0, 30)
    assert key in str(raised.value)


def test_a_lease_that_never_expires_is_refused_not_waited_for(tampered):
    """A lease scored +inf (or a year ahead) would hold one of the origin's two places for ever."""
    gate, client = tampered
    for score in (float("inf"), time.time() + 365 * 86400):
        client.delete(LEASES)
        client.zadd(LEASES, {"planted": score})
        with pytest.raises(GateUnavailable):
            gate.acquire(HOST, 1.0, 30)


def _past_the_fence(gate: RedisGate, host: str = HOST) -> Lease:
    deadline = time.monotonic() + 5
    while not isinstance(answer := gate.acquire(host, 1.0, 30), Lease):
        assert time.monotonic() < deadline
        time.sleep(answer)
    return answer


# --- collection run through a hostile gate --------------------------------------------------

def _run(loopback, tmp_path, gate: str, urls: list[str], state: str, *extra: str, name: str = "council"):
    recipe = tmp_path / f"{name}.json"
    recipe.write_text(json.dumps(source_doc(name, urls)))
    args = [sys.executable, "-m", "collection", "run", str(recipe), "--state", state, "--ca-bundle",
            loopback.ca_pem_path, "--json", "--gate", gate, *extra]
    for flag in loopback.resolve_flags():
        args += ["--resolve", flag]
    done = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    try:
        shown = json.loads(done.stdout)
    except ValueError:
        raise AssertionError(f"exit {done.returncode}: {done.stderr}") from None
    return done.returncode, shown, done.stderr


def _ledger(state: str) -> list[dict]:
    with open(os.path.join(state, "current", "ledger.csv"), newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _generation(state: str) -> str:
    with open(os.path.join(state, "current", "run.json"), "rb") as handle:
        return json.loads(handle.read())["generation"]


def _made(shown: dict) -> int:
    return shown["requests"]["total"] + shown["requests"]["robots"]


@pytest.fixture
def publisher(loopback):
    loopback.route("/robots.txt", Reply(404, PLAIN, b""), host=HOST)
    loopback.route("*", Reply(handler=lambda rec: Reply(200, JSON_HEADERS, page_body(rec.target))), host=HOST)
    return loopback


URLS = [f"https://{HOST}/p/{n}" for n in range(4)]
AT_ONCE = ["wait nan", "wait inf", "wait -5", "wait 1e300", "malformed integer", "WRONGTYPE", "text, not a list",
           "error reply"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", AT_ONCE)
def test_a_hostile_gate_before_any_page_keeps_the_previous_generation(publisher, tmp_path, kind):
    """The gate answers its first acquire (the robots.txt request's) oddly: nothing is requested,
    nothing written, exit 1 GATE_UNAVAILABLE, no traceback, no robots_disallowed."""
    state = str(tmp_path / "state")
    code, first, _ = _run(publisher, tmp_path, "none", URLS[:1], state)
    assert code == 0 and first["generation"] == "000001"
    before = len(publisher.requests)
    with FakeResp({"acquire": Hostile(ACQUIRE_REPLIES[kind])}) as fake:
        started = time.monotonic()
        code, shown, err = _run(publisher, tmp_path, fake.url, URLS, state)
        assert time.monotonic() - started < 60
        assert fake.count("acquire") <= 2                         # asked once (a worker may have asked too)
    assert code == 1 and shown["code"] == "GATE_UNAVAILABLE"
    assert "Traceback" not in err
    assert _made(shown) == len(publisher.requests) - before == 0
    assert "0 requests were made" in shown["refusals"][0]["message"]      # the point is that it is true
    assert shown["record"] is None and _generation(state) == "000001"
    assert [row["state"] for row in _ledger(state)] == ["fetched"]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["wait nan", "wait -5", "malformed integer", "WRONGTYPE"])
def test_a_gate_that_turns_hostile_mid_run_keeps_what_was_fetched(publisher, tmp_path, kind):
    """Decided (issue 24 point 2): the pages fetched before the fault were fetched politely, so
    their generation is written; the pages not reached stay pending, nothing is a page failure,
    the record names the gate fault, and the run still exits 1 GATE_UNAVAILABLE."""
    state = str(tmp_path / "state")
    with FakeResp({"acquire": Hostile(ACQUIRE_REPLIES[kind], after=3)}) as fake:   # robots.txt + 2 pages
        code, shown, err = _run(publisher, tmp_path, fake.url, URLS, state)
        assert fake.count("acquire") <= 5
    assert code == 1 and shown["code"] == "GATE_UNAVAILABLE"
    assert "Traceback" not in err
    assert _made(shown) == len(publisher.requests) == 3
    assert "3 requests were made" in shown["refusals"][0]["message"]
    record = shown["record"]
    assert record["gate_failure"]["code"] == "GATE_UNAVAILABLE" and _generation(state) == record["generation"]
    assert record["coverage"]["fetched_this_run"] == 2 and record["coverage"]["pending"] == 2
    assert record["coverage"]["failed_this_run"] == 0 and record["coverage"]["complete"] is False
    rows = _ledger(state)
    assert sorted(row["state"] for row in rows) == ["fetched", "fetched", "pending", "pending"]
    assert all(row["failure_code"] == "" for row in rows)
    status = subprocess.run([sys.executable, "-m", "collection", "status", state, "--json"], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert "GATE_UNAVAILABLE" in json.loads(status.stdout)["next"][0]      # status says the gate stopped it


@pytest.mark.slow
@pytest.mark.parametrize("script", ["sent", "release"])
def test_a_fault_reporting_a_request_ends_the_run_after_that_request(publisher, tmp_path, script):
    """sent and release fail on the robots.txt request: it was made (and counted), no page is."""
    state = str(tmp_path / "state")
    with FakeResp({script: Hostile(ONE_REPLIES["error reply"])}) as fake:
        code, shown, err = _run(publisher, tmp_path, fake.url, URLS, state)
    assert code == 1 and shown["code"] == "GATE_UNAVAILABLE" and "Traceback" not in err
    assert _made(shown) == len(publisher.requests) == 1 and shown["requests"]["robots"] == 1
    assert shown["record"] is None and not os.path.exists(os.path.join(state, "current"))


@pytest.mark.slow
def test_a_crawl_delay_the_gate_cannot_store_is_not_a_robots_refusal(loopback, tmp_path):
    """robots.txt allows everything and asks Crawl-delay: 2; the gate fails to store it: the
    pages are not robots_disallowed, they stay pending."""
    loopback.route("/robots.txt", Reply(200, PLAIN, b"User-agent: *\nCrawl-delay: 2\n"), host=HOST)
    loopback.route("*", Reply(200, JSON_HEADERS, page_body("x")), host=HOST)
    state = str(tmp_path / "state")
    with FakeResp({"crawl-delay": Hostile(b"-WRONGTYPE Operation against a key holding the wrong kind\r\n")}) as fake:
        code, shown, err = _run(loopback, tmp_path, fake.url, URLS, state)
    assert code == 1 and shown["code"] == "GATE_UNAVAILABLE" and "Traceback" not in err
    assert _made(shown) == len(loopback.requests) == 1
    assert not os.path.exists(os.path.join(state, "current"))


@pytest.mark.slow
def test_a_gate_answering_zero_for_ever_is_not_spun_on(publisher, tmp_path):
    """A gate that never grants but always says "ready now" is asked at most once per
    MIN_WAIT_SECONDS, and the run ends at its --deadline (the 60,000 calls in 15 s of the
    attack were a spin)."""
    state = str(tmp_path / "state")
    with FakeResp({"acquire": Hostile(wait_reply("0.000000"))}) as fake:
        started = time.monotonic()
        code, shown, err = _run(publisher, tmp_path, fake.url, URLS, state, "--deadline", "2")
        took = time.monotonic() - started
        calls = fake.count("acquire")
    assert "Traceback" not in err and len(publisher.requests) == 0
    assert calls <= took / MIN_WAIT_SECONDS
    assert code == 0 and shown["coverage"]["budget_exhausted"] == "deadline"


@pytest.mark.slow
def test_tampered_real_redis_mid_run_is_a_gate_fault(publisher, tmp_path, redis_server):
    """A real redis-server: after the robots.txt request and a page, the origin's record gets
    last_start = nan (and, for a second run, becomes a string): GATE_UNAVAILABLE, no traceback,
    the fetched page kept, the others pending."""
    import redis

    client = redis.Redis.from_url(redis_server.url)
    state = str(tmp_path / "state")
    recipe = tmp_path / "council.json"
    recipe.write_text(json.dumps(source_doc("council", URLS)))
    args = [sys.executable, "-m", "collection", "run", str(recipe), "--state", state, "--ca-bundle",
            publisher.ca_pem_path, "--json", "--gate", redis_server.url]
    for flag in publisher.resolve_flags():
        args += ["--resolve", flag]
    run = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while len(publisher.requests) < 2:
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.01)
    client.hset(STATE, "last_start", "nan")
    out, err = run.communicate(timeout=60)
    shown = json.loads(out)
    assert run.returncode == 1 and shown["code"] == "GATE_UNAVAILABLE" and "Traceback" not in err
    assert _made(shown) == len(publisher.requests)
    rows = _ledger(state)
    assert all(row["failure_code"] == "" for row in rows) and "pending" in {row["state"] for row in rows}
    client.delete(STATE)
    client.set(STATE, "not a hash")
    before = len(publisher.requests)
    code, shown, err = _run(publisher, tmp_path, redis_server.url, URLS, state)
    assert code == 1 and shown["code"] == "GATE_UNAVAILABLE" and "Traceback" not in err
    assert _made(shown) == len(publisher.requests) - before == 0
    client.close()


@pytest.mark.slow
def test_a_dataset_run_whose_gate_turns_hostile_keeps_each_sources_pages(publisher, tmp_path):
    """A dataset run (one pacer, one gate for every source): the fault stops every source; each
    is `refused` GATE_UNAVAILABLE, one that fetched pages carries the record of the generation
    written with them, dataset-run.json is written, and the requests add up to the server's log."""
    from dataset_kit import dataset_doc

    state = str(tmp_path / "state")
    recipe = tmp_path / "council.dataset.json"
    recipe.write_bytes(dataset_doc("council", source_doc("minutes", URLS[:2]), source_doc("agendas", URLS[2:])))
    args = [sys.executable, "-m", "collection", "run", str(recipe), "--state", state, "--ca-bundle",
            publisher.ca_pem_path, "--json"]
    for flag in publisher.resolve_flags():
        args += ["--resolve", flag]
    with FakeResp({"acquire": Hostile(ACQUIRE_REPLIES["wait nan"], after=3)}) as fake:   # robots.txt + 2 pages
        done = subprocess.run(args + ["--gate", fake.url], cwd=ROOT, capture_output=True, text=True, timeout=120)
    shown = json.loads(done.stdout)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert [s["status"] for s in shown["sources"]] == ["refused", "refused"]
    assert {s["code"] for s in shown["sources"]} == {"GATE_UNAVAILABLE"}
    records = [s["record"] for s in shown["sources"] if s["record"] is not None]
    assert sum(r["coverage"]["fetched_this_run"] for r in records) == 2
    assert all(r["coverage"]["failed_this_run"] == 0 and r["gate_failure"] for r in records)
    assert sum(r["requests"]["total"] + r["requests"]["robots"] for r in records) == len(publisher.requests) == 3
    with open(os.path.join(state, "dataset-run.json"), "rb") as handle:
        assert json.loads(handle.read())["dataset_run"] == 1


@pytest.mark.slow
def test_a_source_lock_lost_mid_run_stops_the_run_at_the_next_gate_call(redis_server):
    """The lock of a source in the fleet gate is renewed every 20 s; when a renewal finds it gone
    (deleted by another writer, expired while Redis was away) the source is unguarded, so the
    gate is faulty from then on: the next call is GateUnavailable, and no thread prints a
    traceback (issue 24 point 2: source lock renewal)."""
    import redis

    from collection.fetch.redis_gate import SOURCE_LOCK_SECONDS

    client = redis.Redis.from_url(redis_server.url)
    gate = RedisGate(redis_server.url)
    with gate.source_lock("council_minutes"):
        _past_the_fence(gate)
        locks = list(client.scan_iter("collection:source:*"))          # however the lock's key is scoped
        assert len(locks) == 1
        client.delete(*locks)
        deadline = time.monotonic() + SOURCE_LOCK_SECONDS
        while gate.fault is None:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        with pytest.raises(GateUnavailable):
            gate.acquire(HOST, 1.0, 30)
    client.close()
    gate.close()


@pytest.mark.parametrize("reply", [integer(5), array(integer(1)), b"-ERR locked out\r\n"])
def test_an_odd_answer_to_the_source_lock_is_gate_unavailable(reply):
    with FakeResp({"SET": Hostile(reply)}) as fake:
        gate = RedisGate(fake.url, timeout=2)
        with pytest.raises(GateUnavailable):
            with gate.source_lock("council_minutes"):
                pass
