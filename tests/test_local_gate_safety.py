"""The machine-local gate on a shared machine (issue 24 point 5, and point 3 for the local gate):
its directory and records are checked before they steer anything, a planted link or FIFO is
refused (GATE_UNAVAILABLE, before any request) and never written through, a record's content
is outside input, a vanished or cut-short record cannot shorten a gap, the documented
several-users directory works for two real uids, and an empty `local:` is a usage error.
FETCH-16, FETCH-18, FETCH-19 (the promise to an origin holds across processes).

Attacks are real files: symlinks, FIFOs, hard links, modes and owners set with chown/chmod,
two unused uids sharing one gid (the test runs as root, as CI does)."""

from __future__ import annotations

import grp
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time

import pytest
from dataset_kit import JSON_HEADERS, page_body, source_doc
from loopback import Reply

from collection.fetch.gate import GateUnavailable, Lease, LocalGate, _boot_id, parse_gate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOST = "a.example.com"
PLAIN = (("Content-Type", "text/plain"),)


def _need_root() -> None:
    if os.geteuid() != 0:
        pytest.fail("this test changes owners and runs processes as other uids: run it as root (CI does)")


def _unused_ids(uids: int) -> tuple[list[int], int, int]:
    """`uids` unused uids, a gid no group has and another one (for a user outside it)."""
    def free_uid(n):
        try:
            pwd.getpwuid(n)
            return False
        except KeyError:
            return True

    def free_gid(n):
        try:
            grp.getgrgid(n)
            return False
        except KeyError:
            return True

    found = [n for n in range(61000, 62000) if free_uid(n)][:uids]
    gids = [n for n in range(61000, 62000) if free_gid(n)][:2]
    return found, gids[0], gids[1]


def _run(loopback, tmp_path, name, urls, gate, **doc):
    recipe = tmp_path / f"{name}.json"
    recipe.write_text(json.dumps(source_doc(name, urls, **doc)))
    args = [sys.executable, "-m", "collection", "run", str(recipe), "--state", str(tmp_path / f"state-{name}"),
            "--ca-bundle", loopback.ca_pem_path, "--json", "--gate", gate]
    for flag in loopback.resolve_flags():
        args += ["--resolve", flag]
    return subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(process, timeout=120):
    out, err = process.communicate(timeout=timeout)
    try:
        return process.returncode, json.loads(out)
    except ValueError:
        raise AssertionError(f"exit {process.returncode}: {err}") from None


def _gaps(loopback, host):
    """Gaps between arrivals at the origin, on the kernel's own receive stamps (CLOCK_REALTIME, one
    clock for every request) when every request has one, so no conversion to the monotonic clock
    made under load enters a gap."""
    records = loopback.requests_for(host=host)
    if records and all(r.kernel_wall is not None for r in records):
        arrivals = sorted(r.kernel_wall for r in records)
    else:
        arrivals = sorted(r.arrived for r in records)
    return [b - a for a, b in zip(arrivals, arrivals[1:])]


# A request whose bytes the TLS layer had already buffered when its handshake ended carries no
# kernel stamp; its arrival is then when the server thread read its request line, which a loaded
# machine delays by milliseconds and so shortens the next gap (CI saw 0.9973 s between two
# separate users' requests, whose gate waits for the earlier request's bytes to have left). 5 ms
# is far below any gate fault worth the name (the audit's subtlest, wire-interval-tolerance, is 10 ms
# early on every request) and far above that measurement's error.
ARRIVAL_SLACK = 0.005


def _ready(tmp_path, name="gate") -> tuple[LocalGate, str]:
    directory = str(tmp_path / name)
    gate = LocalGate(directory)
    gate.check()
    return gate, directory


# --- `local:` with no directory ----------------------------------------------------------------

@pytest.mark.parametrize("value", ["local:", "local: ", " local:\t"])
def test_an_empty_local_directory_is_a_usage_error(value, tmp_path, loopback):
    """Issue 24 point 5: `--gate local:` would put the gate in the job's working directory."""
    with pytest.raises(ValueError):
        parse_gate(value, 0.0)
    process = _run(loopback, tmp_path, "council", [f"https://{HOST}/p/1"], value)
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 2, err
    assert loopback.requests == []
    assert not os.path.exists(tmp_path / "state-council" / "current")


def test_the_default_directory_is_private(tmp_path, monkeypatch):
    """`local` alone is the user's own directory: made 0700 (and its missing parents), its
    records 0600; found group-writable it is refused even in the shared layout."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    (tmp_path / "run").mkdir(mode=0o700)
    gate = parse_gate("local", 0.0)
    gate.check()
    assert isinstance(gate.acquire(HOST, 1.0, 30), Lease)
    directory = tmp_path / "run" / "collection" / "gate"
    for made in (directory.parent, directory):
        assert stat.S_IMODE(os.stat(made).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(directory / HOST).st_mode) == 0o600
    os.chmod(directory, 0o2770)
    with pytest.raises(GateUnavailable):
        parse_gate("local", 0.0).check()


# --- planted links, FIFOs and hard links --------------------------------------------------------

def test_a_planted_symlink_record_is_refused_before_any_request_and_never_written_through(loopback, tmp_path):
    """Issue 24 point 5: the record of the run's origin is a symlink to a file the attacker
    wants overwritten. The run refuses with GATE_UNAVAILABLE before any request, and the
    target keeps its bytes."""
    directory = tmp_path / "gate"
    directory.mkdir(mode=0o700)
    target = tmp_path / "precious"
    target.write_bytes(b"keep me\n")
    os.symlink(target, directory / HOST)
    loopback.route("*", Reply(200, JSON_HEADERS, page_body("x")), host=HOST)
    code, refused = _finish(_run(loopback, tmp_path, "council", [f"https://{HOST}/p/1"], f"local:{directory}"))
    assert code == 1 and refused["code"] == "GATE_UNAVAILABLE"
    assert loopback.requests == []
    assert target.read_bytes() == b"keep me\n"
    assert not os.path.exists(tmp_path / "state-council" / "current")


@pytest.mark.parametrize("plant", ["symlink", "dangling symlink", "fifo", "hard link", "directory"])
def test_a_record_planted_mid_run_is_refused_and_its_target_untouched(tmp_path, plant):
    """Planted after the run's check (between two requests): the next use of that origin is
    GateUnavailable; no link is followed, a FIFO is never waited on, a hard link's other name
    keeps its bytes."""
    gate, directory = _ready(tmp_path)
    target = tmp_path / "precious"
    target.write_bytes(b"keep me\n")
    record = os.path.join(directory, HOST)
    if plant == "symlink":
        os.symlink(target, record)
    elif plant == "dangling symlink":
        os.symlink(tmp_path / "nothing-here", record)
    elif plant == "fifo":
        os.mkfifo(record, 0o600)
    elif plant == "hard link":
        os.link(target, record)
    else:
        os.mkdir(record, 0o700)
    with pytest.raises(GateUnavailable):
        gate.acquire(HOST, 1.0, 30)
    with pytest.raises(GateUnavailable):
        LocalGate(directory).check()                  # the next run refuses before its first request
    assert target.read_bytes() == b"keep me\n"
    assert not os.path.exists(tmp_path / "nothing-here")
    assert isinstance(gate.acquire("b.example.com", 1.0, 30), Lease)   # other origins' records still work


def test_a_record_of_another_owner_or_mode_is_refused(tmp_path):
    _need_root()
    (other,), _gid, _ = _unused_ids(1)
    gate, directory = _ready(tmp_path)
    assert isinstance(gate.acquire(HOST, 1.0, 30), Lease)
    record = os.path.join(directory, HOST)
    os.chmod(record, 0o622)
    with pytest.raises(GateUnavailable):
        gate.acquire(HOST, 1.0, 30)
    os.chmod(record, 0o600)
    os.chown(record, other, -1)
    with pytest.raises(GateUnavailable):
        gate.acquire(HOST, 1.0, 30)


# --- the directory and the directories above it -------------------------------------------------

def test_a_symlinked_gate_directory_is_refused(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    os.symlink(real, tmp_path / "gate")
    with pytest.raises(GateUnavailable):
        LocalGate(str(tmp_path / "gate")).check()
    assert os.listdir(real) == []                      # nothing written where it points


def test_a_parent_link_is_followed_only_when_root_or_you_own_it_and_it_leads_somewhere_safe(tmp_path):
    """~/.cache on another disk (a link you made) still works; a link someone else owns, or
    one leading into a directory someone else owns, is refused before anything is made."""
    _need_root()
    (other,), _gid, _ = _unused_ids(1)
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    os.symlink(mine, tmp_path / "cache")
    gate = LocalGate(str(tmp_path / "cache" / "gate"))
    gate.check()
    assert isinstance(gate.acquire(HOST, 1.0, 30), Lease)
    assert os.path.isfile(mine / "gate" / HOST)

    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    os.chown(theirs, other, other)
    os.symlink(theirs, tmp_path / "into-theirs")
    with pytest.raises(GateUnavailable):
        LocalGate(str(tmp_path / "into-theirs" / "gate")).check()
    assert os.listdir(theirs) == []

    os.symlink(mine, tmp_path / "their-link")
    os.lchown(tmp_path / "their-link", other, other)
    with pytest.raises(GateUnavailable):
        LocalGate(str(tmp_path / "their-link" / "gate")).check()


@pytest.mark.parametrize("case", [
    "gate world-writable", "gate group-writable without setgid", "gate shared but world-writable",
    "gate of another owner", "parent world-writable", "parent of another owner", "gate is a file"])
def test_an_unsafe_directory_refuses_the_run(tmp_path, case):
    """Issue 24 point 5: the directory is checked (owner, mode) before any record is opened."""
    _need_root()
    (other,), gid, _ = _unused_ids(1)
    parent = tmp_path / "parent"
    parent.mkdir(mode=0o755)
    directory = parent / "gate"
    if case == "gate is a file":
        directory.write_bytes(b"")
    else:
        directory.mkdir(mode=0o700)
    if case == "gate world-writable":
        os.chmod(directory, 0o777)
    elif case == "gate group-writable without setgid":
        os.chmod(directory, 0o770)
    elif case == "gate shared but world-writable":
        os.chown(directory, 0, gid)
        os.chmod(directory, 0o2777)
    elif case == "gate of another owner":
        os.chown(directory, other, other)
    elif case == "parent world-writable":
        os.chmod(parent, 0o777)
    elif case == "parent of another owner":
        os.chown(parent, other, other)
    with pytest.raises(GateUnavailable):
        LocalGate(str(directory)).check()
    if directory.is_dir():
        assert os.listdir(directory) == []


def test_a_sticky_world_writable_parent_is_fine_but_a_gate_planted_there_by_another_is_not(tmp_path):
    """/tmp-like parents (1777): only an entry's owner can rename it, so the gate below is safe
    as long as it is yours."""
    _need_root()
    (other,), _gid, _ = _unused_ids(1)
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    gate = LocalGate(str(sticky / "mine"))
    gate.check()
    assert isinstance(gate.acquire(HOST, 1.0, 30), Lease)
    planted = sticky / "planted"
    planted.mkdir(mode=0o700)
    os.chown(planted, other, other)
    with pytest.raises(GateUnavailable):
        LocalGate(str(planted)).check()


def test_a_directory_removed_or_replaced_mid_run_is_unavailable(tmp_path):
    """Records kept on in a removed directory would split the gate in two: refused."""
    gate, directory = _ready(tmp_path)
    assert isinstance(gate.acquire(HOST, 1.0, 30), Lease)
    os.rename(directory, directory + ".old")
    os.mkdir(directory, 0o700)
    with pytest.raises(GateUnavailable):
        gate.acquire(HOST, 1.0, 30)
    shutil.rmtree(directory)
    with pytest.raises(GateUnavailable):
        gate.acquire(HOST, 1.0, 30)


# --- what a record holds ------------------------------------------------------------------------

def _hostile(boot: str, now: float) -> dict[str, bytes]:
    lease = {"pid": os.getpid(), "start": None, "expires": now + 30, "sent": True}
    cases = {
        "nan": {"boot": boot, "last_start": "NaN"},
        "infinity": {"boot": boot, "next_start": "Infinity"},
        "1e300 last_start": {"boot": boot, "last_start": 1e300},
        "1e300 not_before": {"boot": boot, "not_before": 1e300},
        "start in the future": {"boot": boot, "last_start": now + 3600},
        "string time": {"boot": boot, "last_start": "12.5"},
        "bool time": {"boot": boot, "next_start": True},
        "list time": {"boot": boot, "next_start": [1, 2]},
        "negative time": {"boot": boot, "last_start": -5.0},
        "crawl_delay string": {"boot": boot, "crawl_delay": "4"},
        "crawl_delay negative": {"boot": boot, "crawl_delay": -1},
        "crawl_delay huge": {"boot": boot, "crawl_delay": 1e9},
        "leases a list": {"boot": boot, "leases": [lease]},
        "lease negative pid": {"boot": boot, "leases": {"1-1": {**lease, "pid": -1}}},
        "lease pid zero": {"boot": boot, "leases": {"1-1": {**lease, "pid": 0}}},
        "lease pid a string": {"boot": boot, "leases": {"1-1": {**lease, "pid": "1"}}},
        "lease negative expiry": {"boot": boot, "leases": {"1-1": {**lease, "expires": -30.0}}},
        "lease forever": {"boot": boot, "leases": {"1-1": {**lease, "expires": 1e300}}},
        "lease sent a string": {"boot": boot, "leases": {"1-1": {**lease, "sent": "yes"}}},
        "lease extra member": {"boot": boot, "leases": {"1-1": {**lease, "owner": "me"}}},
        "lease badly named": {"boot": boot, "leases": {"../x": lease}},
        "too many leases": {"boot": boot, "leases": {f"1-{n}": lease for n in range(100)}},
        "unknown member": {"boot": boot, "extra": 1},
        "no boot": {"last_start": 1.0},
        "boot a number": {"boot": 7},
        "an array": [boot],
        "a string": "record",
    }
    raw = {name: json.dumps(value).replace('"NaN"', "NaN").replace('"Infinity"', "Infinity").encode()
           for name, value in cases.items()}
    raw["a huge integer"] = b'{"boot": "%s", "last_start": %s}' % (boot.encode(), b"9" * 5000)
    raw["deep nesting"] = b'{"boot": "%s", "leases": ' % boot.encode() + b"[" * 100000 + b"]" * 100000 + b"}"
    raw["not UTF-8"] = b'{"boot": "\xff\xfe"}'
    raw["oversized"] = b'{"boot": "%s", "pad": "%s"}' % (boot.encode(), b"x" * (2 << 20))
    return raw


@pytest.mark.parametrize("case", sorted(_hostile("b", 0.0)))
def test_a_record_the_tool_did_not_write_is_unavailable_and_left_as_found(tmp_path, case):
    """Issue 24 point 5 (and point 2's rule for every backend): every value read from a record
    is checked (types, finite, bounded relative to now, each lease's members); anything else is
    GateUnavailable naming the file, never a grant, a hang or a traceback."""
    gate, directory = _ready(tmp_path)
    raw = _hostile(_boot_id(), time.monotonic())[case]
    record = os.path.join(directory, HOST)
    with open(record, "wb") as handle:
        handle.write(raw)
    for call in (lambda: gate.acquire(HOST, 1.0, 30), lambda: gate.set_crawl_delay(HOST, 5),
                 lambda: gate.release(Lease(HOST, "1-1", 1.0), retry_after=3)):
        with pytest.raises(GateUnavailable) as refused:
            call()
        assert record in str(refused.value)          # the message names the file
    with pytest.raises(GateUnavailable):
        LocalGate(directory).check()                  # the next run refuses before its first request
    with open(record, "rb") as handle:
        assert handle.read() == raw


def test_a_hostile_record_of_another_origin_refuses_the_run_before_any_request(loopback, tmp_path):
    """Issue 24 point 5: one record the tool did not write means someone else writes in the
    directory; the run refuses (GATE_UNAVAILABLE) before its first request, whatever origin it reads."""
    directory = tmp_path / "gate"
    directory.mkdir(mode=0o700)
    (directory / "b.example.com").write_bytes(b'{"boot": "%s", "last_start": NaN}' % _boot_id().encode())
    os.chmod(directory / "b.example.com", 0o600)
    loopback.route("*", Reply(200, JSON_HEADERS, page_body("x")), host=HOST)
    code, refused = _finish(_run(loopback, tmp_path, "council", [f"https://{HOST}/p/1"], f"local:{directory}"))
    assert code == 1 and refused["code"] == "GATE_UNAVAILABLE"
    assert loopback.requests == []


def test_a_hostile_directory_record_is_unavailable(tmp_path):
    gate, directory = _ready(tmp_path)
    check = os.path.join(directory, ".check")
    for raw in (b'{"boot": "%s", "origins": "all"}', b'{"boot": "%s", "origins": ["../../etc"]}',
                b'{"boot": "%s", "reset_at": 1e300}', b'{"boot": "%s", "origins": [], "other": 1}'):
        with open(check, "wb") as handle:
            handle.write(raw % _boot_id().encode())
        with pytest.raises(GateUnavailable):
            LocalGate(directory).check()
        with pytest.raises(GateUnavailable):
            gate.acquire("new.example.com", 1.0, 30)     # a new origin consults the list


# --- a vanished or cut-short record cannot shorten a gap (issue 24 point 3) ---------------------

def _start_now(gate: LocalGate, host: str = HOST) -> Lease:
    lease = gate.acquire(host, 1.0, 30)
    assert isinstance(lease, Lease)
    gate.sent(lease)
    gate.release(lease)
    return lease


@pytest.mark.parametrize("damage", ["deleted", "emptied", "cut short", "runs on", "zero-filled",
                                    "deleted with the directory's list", "list cut short too"])
def test_a_lost_record_is_fenced_one_full_gap(tmp_path, damage):
    """A record deleted, or cut short by a crash, restarts its origin, but its first start
    waits one full gap (interval + margin) from the moment the loss was found, so it cannot
    come sooner than a gap after the last start any process made."""
    gate, directory = _ready(tmp_path)
    _start_now(gate)
    _start_now(gate, "b.example.com")                # a directory in use holds other records
    record = os.path.join(directory, HOST)
    check = os.path.join(directory, ".check")
    with open(record, "rb") as handle:
        written = handle.read()
    if damage.startswith("deleted"):
        os.unlink(record)
    if damage == "deleted with the directory's list":
        os.unlink(check)
    if damage == "emptied":
        open(record, "wb").close()
    if damage in ("cut short", "list cut short too"):
        with open(record, "wb") as handle:
            handle.write(written[: len(written) // 2])
    if damage == "list cut short too":
        with open(check, "r+b") as handle:
            handle.truncate(5)
    if damage == "runs on":
        with open(record, "ab") as handle:
            handle.write(b'00}')
    if damage == "zero-filled":
        with open(record, "wb") as handle:
            handle.write(b"\0" * len(written))
    other = LocalGate(directory)                     # a process that never saw the record
    found = time.monotonic()
    wait = other.acquire(HOST, 1.0, 30)
    assert isinstance(wait, float) and wait > 0.9, wait
    time.sleep(max(0.0, found + 1.0 - time.monotonic()))
    while isinstance(answer := other.acquire(HOST, 1.0, 30), float):
        time.sleep(answer)
    assert time.monotonic() - found >= 1.0


def test_a_new_origin_and_a_new_boot_start_at_once(tmp_path):
    """The fence is for records that existed: an origin never seen in this directory, or a
    record from an earlier boot (its processes died with the boot), starts at once."""
    gate, directory = _ready(tmp_path)
    _start_now(gate)
    assert isinstance(gate.acquire("b.example.com", 1.0, 30), Lease)
    with open(os.path.join(directory, HOST), "w") as handle:
        json.dump({"boot": "an-earlier-boot", "last_start": 1e300, "leases": "whatever"}, handle)
    assert isinstance(LocalGate(directory).acquire(HOST, 1.0, 30), Lease)


def test_a_process_keeps_its_own_leases_when_its_record_is_deleted(tmp_path):
    """FETCH-18 after a loss: this process's two requests in flight are put back into the
    record it finds reset, so a third is not granted beside them."""
    gate, directory = _ready(tmp_path)
    first = gate.acquire(HOST, 1.0, 30)
    gate.sent(first)
    time.sleep(1.0)
    second = gate.acquire(HOST, 1.0, 30)
    assert isinstance(second, Lease)
    gate.sent(second)
    os.unlink(os.path.join(directory, HOST))
    time.sleep(1.05)
    assert isinstance(gate.acquire(HOST, 1.0, 30), float)     # fenced, and both slots still taken
    time.sleep(1.05)
    assert isinstance(gate.acquire(HOST, 1.0, 30), float)
    gate.release(first)
    while isinstance(answer := gate.acquire(HOST, 1.0, 30), float):
        time.sleep(answer)


_WAITER = r"""
import sys, time
from collection.fetch.gate import Lease, LocalGate
gate = LocalGate(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
got = gate.acquire("a.example.com", 1.0, 30)
print("lease" if isinstance(got, Lease) else f"wait {got}", flush=True)
"""


def test_a_record_deleted_between_two_processes_does_not_let_the_second_start_early(tmp_path):
    """Issue 24 point 3 on one machine: one process starts a request, the record is deleted, a
    second process that never saw it asks at once and is told to wait a full gap."""
    gate, directory = _ready(tmp_path)
    waiter = subprocess.Popen([sys.executable, "-c", _WAITER, directory], cwd=ROOT, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert waiter.stdout.readline().strip() == "ready"
        _start_now(gate)
        os.unlink(os.path.join(directory, HOST))
        waiter.stdin.write("go\n")
        waiter.stdin.flush()
        answer = waiter.stdout.readline().split()
    finally:
        waiter.kill()
        waiter.wait()
    assert answer[0] == "wait" and float(answer[1]) > 0.9, answer


@pytest.mark.slow
def test_a_record_deleted_mid_run_keeps_the_gap_at_the_origin(loopback, tmp_path):
    """Where the origin sees it: one run reads a.example.com every 3 s; right after one of its
    requests arrives the record is deleted and a second run starts on the same origin. Every
    two arrivals are still at least the 1 s floor apart, and both runs complete."""
    directory = tmp_path / "gate"
    gate = f"local:{directory}"
    deleted = threading.Event()
    lock = threading.Lock()
    seen = []

    def serve(rec):
        with lock:
            seen.append(rec.path)
            if rec.path == "/first/1" and not deleted.is_set():
                os.unlink(directory / HOST)
                deleted.set()
        return Reply(200, JSON_HEADERS, page_body(rec.target))

    loopback.route("/robots.txt", Reply(404, PLAIN, b""), host=HOST)
    loopback.route("*", Reply(handler=serve), host=HOST)
    first = _run(loopback, tmp_path, "first", [f"https://{HOST}/first/{n}" for n in range(3)], gate,
                 min_interval=3, concurrency=1)
    assert deleted.wait(60), seen
    second = _run(loopback, tmp_path, "second", [f"https://{HOST}/second/{n}" for n in range(2)], gate)
    for run in (first, second):
        code, record = _finish(run)
        assert code == 0 and record["coverage"]["complete"] is True
    gaps = _gaps(loopback, HOST)
    assert len(gaps) == 2 + 3 + 2 - 1                   # two robots.txt, five pages
    assert min(gaps) >= 1.0, gaps


# --- the directory shared by several users (two real uids) --------------------------------------

_SHARED_USER = r"""
import http.client, json, os, socket, ssl, sys, time
import encodings.idna
from collection.fetch.gate import GateUnavailable, Lease, LocalGate

uid, gid, directory, port, ca, tag, count, umask, warm = sys.argv[1:10]
uid, gid, port, count, umask = int(uid), int(gid), int(port), int(count), int(umask, 8)
context = ssl.create_default_context(cafile=ca)


def get(host, path):
    tls = context.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname=host)
    conn = http.client.HTTPSConnection(host, port, context=context)
    conn.sock = tls
    conn.request("GET", path)
    return conn


def fetch(gate, host, path):
    while not isinstance(got := gate.acquire(host, 1.0, 30), Lease):
        time.sleep(got)
    conn = get(host, path)
    gate.sent(got)
    conn.getresponse().read()
    conn.close()
    gate.release(got)


# Load everything while the interpreter's own files can still be read, then become the user.
warm_gate = LocalGate(warm)
warm_gate.check()
fetch(warm_gate, "c.example.com", "/warm")
os.setgroups([gid])
os.setgid(gid)
os.setuid(uid)
os.umask(umask)
gate = LocalGate(directory)
try:
    gate.check()
    for n in range(count):
        fetch(gate, "a.example.com", f"/{tag}/{n}")
except GateUnavailable as exc:
    print(json.dumps({"refused": str(exc)}), flush=True)
    sys.exit(1)
print(json.dumps({"done": count}), flush=True)
"""


@pytest.mark.slow
def test_two_users_share_one_gate_directory_and_one_gap(loopback, tmp_path):
    """Issue 24 point 5, the documented several-users layout: a directory owned by root, of a
    group both users are in, chmod 2770. Two real uids (one with umask 077) read one origin
    through it at once; every record is 0660 with the directory's group, and the origin sees
    every two requests at least the 1 s floor apart. A third uid outside the group is refused."""
    _need_root()
    (one, two, outsider), gid, other_gid = _unused_ids(3)
    base = tempfile.mkdtemp(prefix="collection-shared-gate-", dir="/tmp")   # reachable by other uids
    try:
        os.chmod(base, 0o755)
        directory = os.path.join(base, "gate")
        os.mkdir(directory)
        os.chown(directory, 0, gid)
        os.chmod(directory, 0o2770)
        ca = os.path.join(base, "ca.pem")
        shutil.copy(loopback.ca_pem_path, ca)
        os.chmod(ca, 0o644)
        loopback.route("*", Reply(200, PLAIN, b"ok"), host=HOST)
        loopback.route("*", Reply(200, PLAIN, b"ok"), host="c.example.com")

        def user(uid, group, tag, umask):
            return subprocess.Popen(
                [sys.executable, "-c", _SHARED_USER, str(uid), str(group), directory, str(loopback.port), ca, tag,
                 "3", umask, str(tmp_path / f"warm-{tag}")],
                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

        users = [user(one, gid, "one", "077"), user(two, gid, "two", "022")]
        for process in users:
            out, err = process.communicate(timeout=120)
            assert process.returncode == 0, (out, err)
            assert json.loads(out) == {"done": 3}
        arrivals = loopback.requests_for(host=HOST)
        assert sorted(r.path for r in arrivals) == sorted(f"/{t}/{n}" for t in ("one", "two") for n in range(3))
        assert min(_gaps(loopback, HOST)) >= 1.0 - ARRIVAL_SLACK, _gaps(loopback, HOST)
        owners = set()
        for name in (HOST, ".check"):
            st = os.stat(os.path.join(directory, name))
            assert stat.S_IMODE(st.st_mode) == 0o660 and st.st_gid == gid, (name, oct(st.st_mode), st.st_gid)
            owners.add(st.st_uid)
        assert owners <= {one, two}

        out, err = user(outsider, other_gid, "outsider", "022").communicate(timeout=60)
        assert "refused" in json.loads(out), err
        assert len(loopback.requests_for(host=HOST)) == 6
    finally:
        shutil.rmtree(base, ignore_errors=True)
