"""A fleet gate's credentials never leave the process (issue 24 point 1), and source locks are
scoped to the same source of the same dataset (issue 24 point 4). D-08, D-09, OPS-04.

Written as an attacker would: every form a password can take in a gate URL (userinfo with and
without a user, a raw `@`, `/` or `:` inside it, percent-encoded, in the query, from the
environment) through every place a gate URL or a gate error is shown or stored (stderr,
`--json`, `--log-json`, run.json, dataset-run.json, `status` human and `--json`), against a
real redis-server with `requirepass`, with an ACL user, and with TLS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pytest
import trustme
from dataset_kit import JSON_HEADERS, HeldPages, dataset_doc, page_body, source_doc
from loopback import Reply
from redis_helper import RedisServer, free_port

from collection.fetch.gate import (PASSWORD_ENV, GateUnavailable, SourceHeld, parse_gate, source_identity)
from collection.fetch.gate_url import GateUrlError, parse_gate_url
from collection.fetch.redis_gate import RedisGate, source_lock_key
from collection.redact import MASK, redact_url, remember, scrub

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLAIN = (("Content-Type", "text/plain"),)

# A password an attacker would pick: a raw `@` and `:` (a URL may carry both raw); its head
# and tail are checked apart, so a password shown in part is caught too.
PW = "s3cr@t:pa55"
PW_ENC = quote(PW, safe="")              # s3cr%40t%3Apa55
SLASHED = "s3cr#t/pa?55"                 # raw only percent-encoded: `/`, `?` and `#` end an authority
# The commands the gate needs of an ACL user (docs/running-many-sources.md, "Passwords, ACL users, TLS")
ACL_RULES = "on >{pw} resetkeys ~collection:* resetchannels -@all +@connection +@scripting +@read +@write +@keyspace +time"


def _absent(text: str, *secrets: str) -> None:
    for secret in secrets or (PW, PW_ENC, "s3cr", "pa55"):
        assert secret not in text, f"{secret!r} leaked in {text!r}"


# --- the rule itself (pure) ---------------------------------------------------------------------

@pytest.mark.parametrize("url", [
    f"redis://:{PW}@gate.internal:6379/0",                 # raw @, : and / inside the password
    f"redis://alice:{PW}@gate.internal:6379/0",
    f"redis://{PW_ENC}@gate.internal/0",                   # a password alone
    f"redis://:{PW_ENC}@gate.internal/0",
    f"rediss://alice:{PW_ENC}@[2001:db8::1]:6380/2",
    f"redis://:{PW}@gate.internal:99999/0",                # malformed: bad port
    f"redis://:{PW}@[::1:6379/0",                          # malformed: unclosed [
    f"redis://gate.internal/0?password={PW}",
    f"redis://gate.internal/0?foo={PW}&db=1",
    f"redis://gate.internal/0?{PW}",
    f"redis://gate.internal/0#{PW}",
    f"unix://:{PW}@/run/redis.sock?db=3",
    f"redis:/:{PW}@gate.internal",                         # not even a scheme
    f"redis://:{SLASHED}@gate.internal:6379/0",            # raw `/`, `?`, `#` in the password
    f"redis://gate.internal/0?password={PW}",              # an `@` in a query value
    f":{PW}@gate.internal:6379",
])
def test_redaction_masks_every_form_of_credential(url):
    """Issue 24 point 1: whatever form the credential takes, `***` is shown, never a part of it."""
    shown = redact_url(url)
    _absent(shown)
    assert MASK in shown
    assert redact_url(shown) == shown                      # redacting twice changes nothing


def test_redaction_keeps_what_is_not_secret():
    assert redact_url("redis://gate.internal:6379/0?db=2") == "redis://gate.internal:6379/0?db=2"
    assert redact_url("rediss://alice:x@gate.internal:6380/1") == "rediss://alice:***@gate.internal:6380/1"
    assert redact_url("local:/var/lib/collection/gate") == "local:/var/lib/collection/gate"


def test_scrub_removes_a_known_secret_in_any_encoding_and_any_url_from_free_text():
    text = f"AUTH {PW} failed; tried {PW_ENC}; see redis://bob:{PW_ENC}@h/0 and rediss://{PW}@h"
    shown = scrub(text, [PW])
    _absent(shown)
    assert shown.count(MASK) >= 4


def test_scrub_leaves_a_publisher_url_alone_but_masks_any_url_with_a_userinfo():
    text = "listing https://a.example.com/list?page=2&q=x failed; proxy http://u:hunter2@p.example/"
    assert scrub(text) == "listing https://a.example.com/list?page=2&q=x failed; proxy http://u:***@p.example/"


def test_the_json_log_scrubs_every_field(tmp_path):
    """--log-json: an error text in any field that quotes the gate URL or the password."""
    import io

    from collection.fetch.clock import SystemClock
    from collection.run.progress import JsonLog

    secret = 'q"uote\\d-9f3'
    remember(secret)
    stream = io.StringIO()
    JsonLog(SystemClock(), stream)("page_internal_error", error=f"at redis://:{PW}@h/0 with {secret}")
    line = stream.getvalue()
    _absent(line, PW, "s3cr", "pa55", "uote")
    assert MASK in json.loads(line)["error"]


def test_a_remembered_secret_is_scrubbed_from_text_nobody_planned_for():
    secret = "zq-remembered-9f2"
    remember(secret)
    assert scrub(f"something quoted {secret} and {quote(secret)}") == f"something quoted {MASK} and {MASK}"


@pytest.mark.parametrize("url, fields", [
    ("redis://gate.internal", ("redis", "gate.internal", 6379, 0, None, None)),
    (f"redis://:{PW}@gate.internal:7000/3", ("redis", "gate.internal", 7000, 3, None, PW)),
    (f"redis://{PW_ENC}@gate.internal/1", ("redis", "gate.internal", 6379, 1, None, PW)),
    (f"redis://alice:{PW_ENC}@10.0.0.7:6379/0", ("redis", "10.0.0.7", 6379, 0, "alice", PW)),
    (f"rediss://alice:{PW}@[2001:db8::1]:6380/2", ("rediss", "2001:db8::1", 6380, 2, "alice", PW)),
    ("redis://gate.internal/?db=4", ("redis", "gate.internal", 6379, 4, None, None)),
    ("REDIS://gate.internal:1/0", ("redis", "gate.internal", 1, 0, None, None)),
])
def test_gate_urls_parse_into_their_parts(url, fields):
    address = parse_gate_url(url)
    assert (address.scheme, address.host, address.port, address.db, address.username, address.password) == fields
    _absent(address.description)
    _absent(repr(address))
    if address.password:
        assert MASK in address.description


def test_a_unix_socket_address_parses():
    address = parse_gate_url(f"unix://:{PW_ENC}@/run/redis/redis.sock?db=2")
    assert (address.scheme, address.path, address.db, address.password) == ("unix", "/run/redis/redis.sock", 2, PW)
    assert address.description == "unix://***@/run/redis/redis.sock?db=2"


@pytest.mark.parametrize("url, names", [
    (f"redis://:{PW}@127.0.0.1:99999/0", "port"),
    (f"redis://:{PW}@127.0.0.1:0/0", "port"),
    (f"redis://:{PW}@127.0.0.1:63a9/0", "port"),
    (f"redis://:{PW}@[::1:6379/0", "]"),
    (f"redis://:{PW}@[not-v6]:6379/0", "IPv6"),
    (f"redis://:{PW}@/0", "host"),
    (f"redis://:{PW}@bad_host!:6379/0", "host"),
    (f"redis://:{PW}@127.0.0.1:6379/zero", "database"),
    (f"redis://:{PW}@127.0.0.1:6379/1?db=2", "once"),
    (f"redis://127.0.0.1:6379/0?password={PW}", "password"),
    (f"redis://127.0.0.1:6379/0?username=alice&x={PW}", "username"),
    (f"redis://127.0.0.1:6379/0?ssl_cert_reqs={PW}", "ssl_cert_reqs"),
    (f"redis://127.0.0.1:6379/0?{PW}", "without `=`"),
    (f"redis://127.0.0.1:6379/0#{PW}", ("fragment", "percent-encoded")),
    (f"redis://127.0.0.1:6379/0#secret", "fragment"),
    (f"redis://alice:@127.0.0.1:6379/0", "empty password"),
    (f"redis://:{PW} @127.0.0.1/0", "whitespace"),
    (f"unix://:{PW}@relative.sock", "no host"),
    (f"unix://:{PW}@", "absolute"),
    (f"redis://:{SLASHED}@127.0.0.1:6379/0", "percent-encoded"),
    (f"redis://:s3cr/t@pa55@127.0.0.1:6379/0", "percent-encoded"),
    (f"memcached://:{PW}@127.0.0.1/0", "scheme"),
])
def test_a_malformed_gate_url_is_refused_naming_what_is_wrong_without_the_password(url, names):
    """Issue 24 point 1: the client's own errors (bad port, unclosed `[`) quoted the URL; ours
    name the fault, and an unknown query parameter by its name only."""
    with pytest.raises(GateUrlError) as caught:
        parse_gate_url(url)
    message = str(caught.value)
    _absent(message)
    assert any(name in message for name in ((names,) if isinstance(names, str) else names)), message


def test_the_password_may_come_from_the_environment_but_not_from_both_places():
    address = parse_gate_url("redis://127.0.0.1:6379/0", password=PW)
    assert address.password == PW and PW not in address.description and MASK in address.description
    address = parse_gate_url("redis://alice@127.0.0.1:6379/0", password=PW)      # then the userinfo is the user
    assert (address.username, address.password) == ("alice", PW)
    assert parse_gate_url("redis://alice@127.0.0.1:6379/0").password == "alice"  # else a password alone
    with pytest.raises(GateUrlError) as caught:
        parse_gate_url(f"redis://:{PW}@127.0.0.1/0", password="other")
    _absent(str(caught.value), PW, "other")


def test_parse_gate_refuses_a_ca_bundle_for_a_gate_without_tls_and_redacts_what_it_does_not_know(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    for value in ("local", f"redis://:{PW}@127.0.0.1/0", "none"):
        with pytest.raises(ValueError):
            parse_gate(value, 0.0, ca_bundle=str(ca))
    with pytest.raises(ValueError) as caught:
        parse_gate(f"rediss://:{PW}@127.0.0.1/0", 0.0, ca_bundle=str(tmp_path / "missing.pem"))
    _absent(str(caught.value))
    with pytest.raises(ValueError) as caught:
        parse_gate(f"redis+sentinel://:{PW}@127.0.0.1/0", 0.0)
    _absent(str(caught.value))


# --- real redis-server: requirepass, ACL user, TLS ---------------------------------------------

@pytest.fixture
def redis_password(tmp_path_factory):
    server = RedisServer(str(tmp_path_factory.mktemp("redis-pw")), password=PW).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_acl(tmp_path_factory):
    server = RedisServer(str(tmp_path_factory.mktemp("redis-acl")),
                         users=("default off", "alice " + ACL_RULES.format(pw=PW))).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def redis_tls(tmp_path_factory):
    server = RedisServer(str(tmp_path_factory.mktemp("redis-tls")), tls=trustme.CA(),
                         users=("default off", "alice " + ACL_RULES.format(pw=PW))).start()
    try:
        yield server
    finally:
        server.stop()


def _exercise(gate) -> None:
    """Every kind of call a run makes of the gate, so an ACL that lacks one command fails."""
    host = f"h{uuid.uuid4().hex[:8]}.example.com"          # a fresh origin: no gap from an earlier call
    gate.check()
    lease = gate.acquire(host, 1, 30)
    if isinstance(lease, float):        # the fleet gate fences an origin it has no record of (issue 24 point 3)
        time.sleep(lease)
        lease = gate.acquire(host, 1, 30)
    assert not isinstance(lease, float)
    gate.sent(lease)
    gate.release(lease, retry_after=0.001)
    gate.set_crawl_delay(host, 1.5)
    assert isinstance(gate.acquire(host, 1, 30), float)       # the gap holds
    with gate.source_lock("decisions", source_identity("decisions", allowed_origins=[f"https://{host}"])):
        pass


@pytest.mark.parametrize("userinfo", [f":{PW}", f":{PW_ENC}", PW_ENC, f"default:{PW_ENC}", f"default:{PW}"])
def test_requirepass_works_with_every_form_of_the_password(redis_password, userinfo):
    gate = parse_gate(redis_password.url_with(userinfo), 0.0)
    _exercise(gate)
    _absent(gate.description)
    assert MASK in gate.description


def test_requirepass_with_the_password_from_the_environment(redis_password):
    gate = parse_gate(redis_password.url, 0.0, environ={PASSWORD_ENV: PW})
    _exercise(gate)
    _absent(gate.description)


def test_a_wrong_password_is_gate_unavailable_and_names_neither_password(redis_password):
    with pytest.raises(GateUnavailable) as caught:
        parse_gate(redis_password.url_with(":wrong-pw-77"), 0.0).check()
    _absent(str(caught.value), PW, "wrong-pw-77")
    with pytest.raises(GateUnavailable) as caught:
        parse_gate(redis_password.url, 0.0).check()                     # none at all
    _absent(str(caught.value))


def test_an_acl_user_with_only_the_gate_commands_and_keys_works(redis_acl):
    """The ACL documented for the gate's user is enough for every call a run makes; the user
    may take its password from COLLECTION_GATE_PASSWORD (`redis://alice@host`)."""
    gate = parse_gate(redis_acl.url_with(f"alice:{PW_ENC}"), 0.0)
    _exercise(gate)
    assert gate.description.startswith("redis://alice:***@")
    from_env = parse_gate(redis_acl.url_with("alice"), 0.0, environ={PASSWORD_ENV: PW})
    _exercise(from_env)
    assert from_env.description.startswith("redis://alice:***@")
    with pytest.raises(GateUnavailable) as caught:
        parse_gate(redis_acl.url_with("alice:nope-nope"), 0.0).check()
    _absent(str(caught.value), PW, "nope-nope")


def test_tls_with_the_ca_bundle_works_and_without_it_is_refused(redis_tls):
    gate = parse_gate(redis_tls.url_with(f"alice:{PW_ENC}"), 0.0, ca_bundle=redis_tls.ca_path)
    _exercise(gate)
    assert gate.description.startswith("rediss://alice:***@")
    from_env = parse_gate(redis_tls.url_with(f"alice:{PW_ENC}", host="localhost"), 0.0,
                          environ={"COLLECTION_GATE_CA_BUNDLE": redis_tls.ca_path})
    from_env.check()
    with pytest.raises(GateUnavailable) as caught:       # the system's CAs do not know trustme's
        parse_gate(redis_tls.url_with(f"alice:{PW_ENC}"), 0.0).check()
    _absent(str(caught.value))
    with pytest.raises(GateUnavailable):                 # plain text to a TLS port
        parse_gate(redis_tls.url_with(f"alice:{PW_ENC}").replace("rediss:", "redis:"), 0.0).check()


def test_tls_checks_the_host_name_in_the_certificate(tmp_path):
    """A certificate from the trusted CA but for another name is refused (ssl_check_hostname)."""
    server = RedisServer(str(tmp_path), tls=trustme.CA(), tls_names=("gate.internal",)).start()
    try:
        with pytest.raises(GateUnavailable):
            parse_gate(server.url, 0.0, ca_bundle=server.ca_path).check()
    finally:
        server.stop()


# --- point 4: source locks are scoped ------------------------------------------------------------

def test_the_source_lock_key_is_the_same_source_of_the_same_dataset():
    """Issue 24 point 4: dataset name, source name and allowed origins identify a source."""
    origins = ["https://b.example.com", "https://a.example.com"]
    key = source_lock_key(source_identity("decisions", dataset="council", allowed_origins=origins))
    assert key == source_lock_key(source_identity("decisions", dataset="council", allowed_origins=origins[::-1]))
    others = [source_identity("decisions", dataset="harbour", allowed_origins=origins),
              source_identity("decisions", allowed_origins=origins),
              source_identity("decisions", dataset="council", allowed_origins=origins[:1]),
              source_identity("minutes", dataset="council", allowed_origins=origins)]
    assert len({key, *(source_lock_key(o) for o in others)}) == 5
    assert key.startswith("collection:source:") and len(key) == len("collection:source:") + 64


def test_source_locks_of_unrelated_datasets_do_not_collide_on_one_redis(redis_server):
    one, two = RedisGate(redis_server.url), RedisGate(redis_server.url)
    origins = ["https://a.example.com"]
    council = source_identity("decisions", dataset="council", allowed_origins=origins)
    with one.source_lock("decisions", council):
        with two.source_lock("decisions", source_identity("decisions", dataset="harbour", allowed_origins=origins)):
            pass
        with two.source_lock("decisions", source_identity("decisions", allowed_origins=["https://z.example.com"])):
            pass
        with pytest.raises(SourceHeld) as held:
            with two.source_lock("decisions", council):
                pass
        assert "dataset council" in held.value.holder and f"pid {os.getpid()}" in held.value.holder


def test_a_lock_holder_planted_in_redis_is_shown_printable_and_bounded(redis_server):
    """The holder's text comes from Redis, where anyone with access may have written it."""
    import redis

    identity = source_identity("decisions", dataset="council", allowed_origins=["https://a.example.com"])
    redis.Redis(port=redis_server.port).set(source_lock_key(identity), "\x1b[2Jevil\n" + "x" * 5000)
    with pytest.raises(SourceHeld) as held:
        with RedisGate(redis_server.url).source_lock("decisions", identity):
            pass
    assert held.value.holder.isprintable() and len(held.value.holder) <= 200


# --- real runs: every output -----------------------------------------------------------------------

def _collection(*args: str, env: dict | None = None, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "collection", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def _run_args(loopback, recipe: Path, state: Path, *extra: str) -> list[str]:
    args = ["run", str(recipe), "--state", str(state), "--ca-bundle", loopback.ca_pem_path, "--json", "--log-json"]
    for flag in loopback.resolve_flags():
        args += ["--resolve", flag]
    return args + list(extra)


def _publisher(loopback, host: str = "a.example.com", seconds: float = 0.0) -> None:
    def serve(rec):
        if seconds:
            time.sleep(seconds)
        return Reply(200, JSON_HEADERS, page_body(rec.target))

    loopback.route("/robots.txt", Reply(404, PLAIN, b""), host=host)
    loopback.route("*", Reply(handler=serve), host=host)


def _dataset(tmp_path: Path, name: str, *sources: tuple[str, list[str]]) -> Path:
    path = tmp_path / f"{name}.dataset.json"
    path.write_bytes(dataset_doc(name, *(source_doc(n, urls) for n, urls in sources)))
    return path


def _everything_written(state: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in sorted(state.rglob("*")) if p.is_file())


FORMS = {
    "colon-raw": lambda s: (s.url_with(f":{PW}"), {}),
    "colon-encoded": lambda s: (s.url_with(f":{PW_ENC}"), {}),
    "password-alone": lambda s: (s.url_with(PW_ENC), {}),
    "user-raw": lambda s: (s.url_with(f"default:{PW}"), {}),
    "environment": lambda s: (s.url, {PASSWORD_ENV: PW}),
}


@pytest.mark.slow
@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_dataset_run_with_a_password_shows_it_nowhere(loopback, tmp_path, redis_password, form):
    """Issue 24 point 1, every output of a real dataset run and of status: stdout (--json),
    stderr (--log-json), every file of the state directory (run.json, dataset-run.json),
    `status` human and --json. The address is shown with `***` in dataset-run.json."""
    _publisher(loopback)
    url, env = FORMS[form](redis_password)
    recipe = _dataset(tmp_path, "council", ("decisions", ["https://a.example.com/p/1"]))
    state = tmp_path / "state"
    done = _collection(*_run_args(loopback, recipe, state, "--gate", url), env=env)
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["counts"]["ran"] == 1 and MASK in record["gate"]
    _absent(done.stdout + done.stderr)
    written = _everything_written(state)
    assert MASK in json.loads((state / "dataset-run.json").read_text())["gate"]
    _absent(written)
    for flags in ((), ("--json",)):
        shown = _collection("status", str(state), *flags)
        assert shown.returncode == 0, shown.stderr
        _absent(shown.stdout + shown.stderr)


@pytest.mark.slow
@pytest.mark.parametrize("from_env", [False, True])
def test_a_single_run_with_an_acl_user_shows_the_password_nowhere(loopback, tmp_path, redis_acl, from_env):
    _publisher(loopback)
    recipe = tmp_path / "decisions.json"
    recipe.write_text(json.dumps(source_doc("decisions", ["https://a.example.com/p/1", "https://a.example.com/p/2"])))
    state = tmp_path / "state"
    gate = redis_acl.url_with("alice" if from_env else f"alice:{PW}")
    done = _collection(*_run_args(loopback, recipe, state, "--gate", gate), env={PASSWORD_ENV: PW} if from_env else {})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["coverage"]["fetched_this_run"] == 2
    _absent(done.stdout + done.stderr + _everything_written(state))
    for flags in ((), ("--json",)):
        shown = _collection("status", str(state), *flags)
        _absent(shown.stdout + shown.stderr)


@pytest.mark.slow
def test_a_run_through_a_tls_gate_with_the_ca_flag(loopback, tmp_path, redis_tls):
    """rediss:// with --gate-ca-bundle works; without it the certificate is not trusted
    (GATE_UNAVAILABLE, nothing requested); the flag with a gate that has no TLS is a usage error."""
    _publisher(loopback)
    recipe = tmp_path / "decisions.json"
    recipe.write_text(json.dumps(source_doc("decisions", ["https://a.example.com/p/1"])))
    url = redis_tls.url_with(f"alice:{PW_ENC}")
    refused = _collection(*_run_args(loopback, recipe, tmp_path / "s1", "--gate", url))
    assert refused.returncode == 1 and json.loads(refused.stdout)["code"] == "GATE_UNAVAILABLE"
    assert loopback.requests == []
    _absent(refused.stdout + refused.stderr)
    done = _collection(*_run_args(loopback, recipe, tmp_path / "s2", "--gate", url,
                                  "--gate-ca-bundle", redis_tls.ca_path))
    assert done.returncode == 0, done.stderr
    _absent(done.stdout + done.stderr)
    usage = _collection(*_run_args(loopback, recipe, tmp_path / "s3", "--gate", "local",
                                   "--gate-ca-bundle", redis_tls.ca_path))
    assert usage.returncode == 2


def test_a_wrong_password_refuses_the_run_without_showing_either(loopback, tmp_path, redis_password):
    _publisher(loopback)
    recipe = tmp_path / "decisions.json"
    recipe.write_text(json.dumps(source_doc("decisions", ["https://a.example.com/p/1"])))
    for url, env in ((redis_password.url_with(":wrong-pw-77"), {}),
                     (redis_password.url, {PASSWORD_ENV: "wrong-pw-77"})):
        done = _collection(*_run_args(loopback, recipe, tmp_path / "state", "--gate", url), env=env)
        assert done.returncode == 1 and json.loads(done.stdout)["code"] == "GATE_UNAVAILABLE"
        _absent(done.stdout + done.stderr, PW, "wrong-pw-77")
        assert MASK in json.loads(done.stdout)["refusals"][0]["message"]
    dataset = _dataset(tmp_path, "council", ("decisions", ["https://a.example.com/p/1"]))
    done = _collection(*_run_args(loopback, dataset, tmp_path / "ds", "--gate", redis_password.url_with(":wrong-pw-77")))
    assert done.returncode == 1 and json.loads(done.stdout)["code"] == "GATE_UNAVAILABLE"
    _absent(done.stdout + done.stderr, PW, "wrong-pw-77")
    assert loopback.requests == []
    assert not (tmp_path / "state" / "current").exists() and not (tmp_path / "ds" / "dataset-run.json").exists()


@pytest.mark.parametrize("url, named", [
    (f"redis://:{PW}@127.0.0.1:99999/0", "port"),
    (f"redis://:{PW}@[::1:6379/0", "["),
    (f"redis://127.0.0.1:6379/0?foo={PW}", "foo"),
    (f"redis://127.0.0.1:6379/0?password={PW}", "password"),
    (f"redis://:{PW}@127.0.0.1:6379/0?db=x{PW}", "db"),
])
def test_a_malformed_gate_url_is_a_usage_error_that_shows_no_password(loopback, tmp_path, url, named):
    recipe = tmp_path / "decisions.json"
    recipe.write_text(json.dumps(source_doc("decisions", ["https://a.example.com/p/1"])))
    for args, env in ((("--gate", url), {}), ((), {"COLLECTION_GATE": url})):
        done = _collection(*_run_args(loopback, recipe, tmp_path / "state", *args), env=env)
        assert done.returncode == 2
        _absent(done.stdout + done.stderr)
        assert MASK in done.stderr and named in done.stderr
    assert loopback.requests == []


@pytest.mark.slow
def test_a_gate_lost_mid_run_is_reported_without_the_password(loopback, tmp_path, redis_password):
    _publisher(loopback, seconds=0.05)
    recipe = tmp_path / "decisions.json"
    recipe.write_text(json.dumps(source_doc("decisions", [f"https://a.example.com/p/{n}" for n in range(8)])))
    run = subprocess.Popen([sys.executable, "-m", "collection",
                            *_run_args(loopback, recipe, tmp_path / "state", "--gate", redis_password.url_with(f":{PW}"))],
                           cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while len(loopback.requests_for(host="a.example.com")) < 3:
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.05)
    redis_password.stop()
    out, err = run.communicate(timeout=90)
    assert run.returncode == 1 and json.loads(out)["code"] == "GATE_UNAVAILABLE"
    _absent(out + err)


def test_the_internal_error_line_scrubs_a_known_password(tmp_path):
    """A bug nobody planned for whose message quotes the gate URL and the bare password: the
    INTERNAL_ERROR line (exit 70) shows neither."""
    script = (
        "import click, sys\n"
        "from collection import cli\n"
        "from collection.fetch.gate import parse_gate\n"
        "parse_gate(sys.argv[1], 0.0)\n"
        "@click.command('boom')\n"
        "def boom():\n"
        "    raise RuntimeError(f'failed at {sys.argv[1]} with {sys.argv[2]}')\n"
        "cli.cli.add_command(boom)\n"
        "sys.argv = ['collection', 'boom']\n"
        "cli.main()\n")
    done = subprocess.run([sys.executable, "-c", script, f"redis://:{PW_ENC}@127.0.0.1:{free_port()}/0", PW],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 70 and "INTERNAL_ERROR" in done.stderr
    _absent(done.stdout + done.stderr)


# --- point 4 in real runs --------------------------------------------------------------------------

def _wait_for_requests(loopback, process, host: str, count: int) -> None:
    deadline = time.monotonic() + 30
    while len(loopback.requests_for(host=host)) < count:
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.05)


@pytest.mark.slow
def test_two_unrelated_datasets_sharing_a_source_name_run_at_once(loopback, tmp_path, redis_server):
    """Issue 24 point 4: datasets council and harbour both have a source `decisions` with the same
    allowed origins, on one Redis database; both run, at the same time, and both succeed."""
    _publisher(loopback, seconds=0.2)
    urls = [f"https://a.example.com/p/{n}" for n in range(4)]
    runs = []
    for name in ("council", "harbour"):
        recipe = _dataset(tmp_path, name, ("decisions", urls))
        runs.append(subprocess.Popen([sys.executable, "-m", "collection",
                                      *_run_args(loopback, recipe, tmp_path / name, "--gate", redis_server.url)],
                                     cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        if len(runs) == 1:
            _wait_for_requests(loopback, runs[0], "a.example.com", 2)       # the first holds its lock
    for run in runs:
        out, err = run.communicate(timeout=120)
        assert run.returncode == 0, err
        record = json.loads(out)
        assert record["counts"]["ran"] == 1 and record["sources"][0]["status"] == "ran"
    assert len([r for r in loopback.requests_for(host="a.example.com") if r.path != "/robots.txt"]) == 8


@pytest.mark.slow
def test_two_jobs_of_one_source_of_one_dataset_still_exclude_each_other(loopback, tmp_path, redis_server):
    """The same dataset's same source on two servers (two state directories): one runs, the
    other's source is refused STATE_LOCKED naming the holder. The first job's pages wait until the
    second has been refused, so the first still holds its lock however slowly the second starts."""
    held = HeldPages()
    loopback.route("/robots.txt", Reply(404, PLAIN, b""), host="a.example.com")
    loopback.route("*", Reply(handler=held), host="a.example.com")
    recipe = _dataset(tmp_path, "council", ("decisions", [f"https://a.example.com/p/{n}" for n in range(4)]))
    first = subprocess.Popen([sys.executable, "-m", "collection",
                              *_run_args(loopback, recipe, tmp_path / "server1", "--gate", redis_server.url)],
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_requests(loopback, first, "a.example.com", 2)
    try:
        second = _collection(*_run_args(loopback, recipe, tmp_path / "server2", "--gate", redis_server.url))
    finally:
        held.release()
    assert second.returncode == 1
    source = json.loads(second.stdout)["sources"][0]
    assert source["status"] == "refused" and source["code"] == "STATE_LOCKED"
    assert f"pid {first.pid}" in source["refusals"][0]["message"]
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, err


def test_gate_show_and_clear_reach_a_tls_gate_with_its_ca_bundle_and_never_show_the_password(redis_tls):
    """Issue 24 points 1 and 6: `collection gate show|clear --gate rediss://… --gate-ca-bundle`
    read and lift a hold on a real TLS Redis; the password is in no line they print."""
    url = redis_tls.url_with(f"alice:{PW_ENC}")
    gate = parse_gate(url, 0.0, ca_bundle=redis_tls.ca_path)
    lease = gate.acquire("held.example.com", 1.0, 30)
    while not hasattr(lease, "lease_id"):               # the fence on a fresh origin (point 3)
        time.sleep(lease)
        lease = gate.acquire("held.example.com", 1.0, 30)
    gate.sent(lease)
    gate.release(lease, 600)
    gate.close()
    shown = subprocess.run([sys.executable, "-m", "collection", "gate", "show", "--json", "--gate", url,
                            "--gate-ca-bundle", redis_tls.ca_path], capture_output=True, text=True, timeout=60)
    assert shown.returncode == 0, shown.stderr
    [row] = [r for r in json.loads(shown.stdout)["origins"] if r["origin"] == "https://held.example.com"]
    assert row["hold"] is not None
    cleared = subprocess.run([sys.executable, "-m", "collection", "gate", "clear", "held.example.com", "--gate", url,
                              "--gate-ca-bundle", redis_tls.ca_path], capture_output=True, text=True, timeout=60)
    assert cleared.returncode == 0, cleared.stderr
    refused = subprocess.run([sys.executable, "-m", "collection", "gate", "show", "--gate", url],
                             capture_output=True, text=True, timeout=60)      # no CA: the system's do not know it
    assert refused.returncode == 1 and "GATE_UNAVAILABLE" in refused.stderr
    for out in (shown, cleared, refused):
        _absent(out.stdout + out.stderr, PW)
