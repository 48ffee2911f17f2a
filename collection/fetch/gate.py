"""The politeness gate: the per-origin state the promise to an origin's operator rests on,
shared by every process that fetches from that origin (docs/politeness.md, "Running many
sources").

What the gate holds per origin (host): the start of the last request and the gap its source
asked for, the requests in flight (each one a *lease*), the Crawl-delay raise and the
Retry-After hold. A process asks the gate before it opens a connection to a host and gets
either a lease (go now) or a number of seconds to wait; it tells the gate when the request
line has been written (`sent`: the next start is counted from there) and when the request
has ended (`release`, with a Retry-After when there was one). While a lease of an origin
has not been `sent`, the origin grants no other: that request's start is not known yet (its
connection may be slow to set up), and the next one must count its gap from it.

Backends:

- `none` (no shared gate): the in-process scheduler (collection.fetch.politeness) alone.
  Replays on the virtual clock always run so; a live run only with `--gate none`, which an
  operator uses only when they know the run is alone.
- `LocalGate` (the default for a live run): a directory of per-origin records under the
  user's runtime or cache directory (or one shared by a group), checked before it is trusted
  and its records read as outside input (collection.fetch.gate_files), each record read and
  rewritten under an exclusive `flock`,
  timed by CLOCK_MONOTONIC (one clock for every process of one machine). A lease names its
  process; a lease whose process is gone (or has passed its TTL) is reclaimed, so a SIGKILL
  never wedges an origin.
- `RedisGate` (collection.fetch.redis_gate): the same state in Redis or Valkey, for a fleet.

Holds (collection.fetch.holds): beside a Retry-After hold and a Crawl-delay each record keeps
the response that set it (`mark_hold`); `hold`, `show` and `clear` (at the end of each gate
class) read and lift them for the fetcher, `collection status` and `collection gate`.

A gate that cannot be reached raises `GateUnavailable`: before the first request that is the
run-level refusal GATE_UNAVAILABLE; mid-run it stops the run, which then refuses (keeping the
pages it had fetched, docs/running-many-sources.md). There is never a silent fallback to a
looser gate.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import socket
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterable, Iterator, Mapping, Protocol

from collection.fetch import gate_files
from collection.fetch.holds import CRAWL_DELAY, RETRY_AFTER, Hold, finite, hold_of, utc, valid_setter
from collection.fetch.politeness import FLOOR_SECONDS, MAX_DELAY_SECONDS, PER_ORIGIN_IN_FLIGHT
from collection.canonical import canonical_json
from collection.redact import redact_url, remember

GATE_ENV = "COLLECTION_GATE"
PASSWORD_ENV = "COLLECTION_GATE_PASSWORD"      # the fleet gate's password, kept off the command line
CA_BUNDLE_ENV = "COLLECTION_GATE_CA_BUNDLE"    # the CA certificates of a rediss:// gate
LOCAL = "local"
NONE = "none"
LEASE_MARGIN_SECONDS = 30.0         # a lease outlives its request's timeout by this much
IDLE_EXPIRE_SECONDS = 7 * 24 * 3600  # an origin's shared record is forgotten after a week unused
_FULL_POLL_SECONDS = 0.05           # how soon to ask again while an origin's two slots are taken


class GateUnavailable(Exception):
    """The shared gate cannot be read or written."""


class SourceHeld(Exception):
    """Another process (maybe on another server) runs this source now."""

    def __init__(self, name: str, holder: str):
        super().__init__(f"source {name} is being run by {holder}")
        self.name = name
        self.holder = holder


@dataclass(frozen=True)
class Lease:
    host: str
    lease_id: str
    gap: float           # the requesting source's own interval (floor applied)


class Gate(Protocol):
    description: str

    def check(self) -> None: ...

    def acquire(self, host: str, interval: float, ttl: float) -> Lease | float: ...

    def sent(self, lease: Lease) -> None: ...

    def release(self, lease: Lease, retry_after: float | None = None) -> None: ...

    def set_crawl_delay(self, host: str, seconds: float | None) -> None: ...

    def source_lock(self, name: str, identity: str | None = None): ...

    def close(self) -> None: ...


# A host as the gate keys it: lowercase ASCII DNS labels (urls.py has refused everything else).
_HOST = re.compile(r"(?=.{1,253}\Z)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*")


def _number(value, default: float) -> float:
    if value is None:
        return default
    try:
        return finite(value, "a gate record member")
    except ValueError as exc:
        raise GateUnavailable(f"the gate record is not one the tool wrote: {exc}") from None


def _setter_of(value):
    if isinstance(value, (bytes, str)):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return valid_setter(value)


def describe_origin(host: str, *, now: float, wall: float, fields: dict, leases: int, margin: float) -> dict:
    """One origin's gate state for people (`gate show`, `status`): times on the gate's clock
    (`now`) are turned into this machine's UTC wall clock (`wall` + seconds from now)."""
    last = _number(fields.get("last_start"), -1e18)
    nxt = _number(fields.get("next_start"), -1e18)
    crawl = _number(fields.get("crawl_delay"), 0.0)
    hold = hold_of(host, now=now, wall=wall, last_start=last, not_before=_number(fields.get("not_before"), -1e18),
                   crawl_delay=crawl, margin=margin, hold_by=_setter_of(fields.get("hold_by")),
                   crawl_by=_setter_of(fields.get("crawl_delay_by")), next_start=nxt)
    cleared = fields.get("cleared")
    if isinstance(cleared, (bytes, str)):
        try:
            cleared = json.loads(cleared)
        except ValueError:
            cleared = None
    if not (isinstance(cleared, dict) and set(cleared) == {"by", "at"}
            and all(isinstance(v, str) and len(v) < 512 for v in cleared.values())):
        cleared = None
    return {
        "origin": f"https://{host}",
        "host": host,
        "last_start": utc(wall - (now - last)) if last > -1e17 else None,
        "next_start": utc(wall + (nxt - now)) if nxt > now else None,
        "crawl_delay": crawl or None,
        "crawl_delay_set_by": _setter_of(fields.get("crawl_delay_by")) if crawl else None,
        "leases": leases,
        "hold": hold,
        "cleared": cleared,
    }


def holder_description() -> str:
    """Who holds a lease or a source: the host name and the process id (what an operator
    needs to find it)."""
    return f"{socket.gethostname()} pid {os.getpid()}"


def source_identity(name: str, *, dataset: str | None = None, allowed_origins: Iterable[str] = ()) -> str:
    """What makes two runs "the same source" for the fleet's source lock (issue 24 point 4,
    docs/running-many-sources.md): the dataset's name (None for a source run alone), the
    source's name, and its sorted allowed origins, which tell two unrelated recipes that
    happen to share both names apart. Canonical JSON, so every server computes the same text."""
    return canonical_json({"dataset": dataset, "source": name, "allowed_origins": sorted(set(allowed_origins))})


def parse_gate(value: str | None, margin: float, *, ca_bundle: str | None = None,
               environ: Mapping[str, str] | None = None) -> "Gate | None":
    """The gate a `--gate` value (or COLLECTION_GATE) names: `local` (the default),
    `local:DIR`, `none`, or a fleet gate `redis://`, `rediss://` (TLS) or `unix://` address
    (collection.fetch.gate_url). None means the in-process scheduler alone. ValueError (a
    usage error) for anything else; its message never holds a credential (collection.redact).

    `ca_bundle` (--gate-ca-bundle, else COLLECTION_GATE_CA_BUNDLE): the CA certificates a
    `rediss://` gate's certificate is checked against (else the system's). The password may
    come from COLLECTION_GATE_PASSWORD instead of the URL (which `ps` shows)."""
    environ = os.environ if environ is None else environ
    value = (value or LOCAL).strip()
    redis_gate = value.lower().startswith(("redis://", "rediss://", "unix://"))
    if ca_bundle is not None and not value.lower().startswith("rediss://"):
        raise ValueError("--gate-ca-bundle is only for a rediss:// (TLS) gate")
    if value == NONE:
        return None
    if value == LOCAL:
        return LocalGate(default_directory(), margin=margin, private=True)
    if value.startswith(LOCAL + ":"):
        directory = value[len(LOCAL) + 1:]
        if not directory.strip():
            # An empty path would put the gate in whatever directory the job starts in.
            raise ValueError("--gate local: names no directory: give local:DIR, or `local` for your private default")
        return LocalGate(directory, margin=margin)
    if redis_gate:
        from collection.fetch.gate_url import parse_gate_url
        from collection.fetch.redis_gate import RedisGate

        password = environ.get(PASSWORD_ENV) or None
        remember(password)
        address = parse_gate_url(value, password=password)
        remember(address.password)
        if address.tls:
            ca_bundle = ca_bundle or environ.get(CA_BUNDLE_ENV) or None
            if ca_bundle is not None and not os.path.isfile(ca_bundle):
                raise ValueError(f"--gate-ca-bundle {ca_bundle}: no such file")
        return RedisGate(address, margin=margin, ca_bundle=ca_bundle if address.tls else None)
    raise ValueError(f"--gate {redact_url(value)!r} is not `local`, `local:DIR`, `none` or "
                     "redis://HOST:PORT/DB (rediss:// for TLS, unix:///PATH for a socket)")


def default_directory() -> str:
    """$XDG_RUNTIME_DIR/collection/gate (per user, cleared at boot), else the user's cache."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return os.path.join(runtime, "collection", "gate")
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "collection", "gate")


def _boot_id() -> str:
    # CLOCK_MONOTONIC restarts at boot: a record from an earlier boot is void.
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip()
    except OSError:
        return "unknown"


def _process_start(pid: int) -> str | None:
    """The start tick of `pid` (/proc/PID/stat field 22), so a reused pid is not taken for
    the process that held a lease; None when the process does not exist."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    return stat[stat.rindex(b")") + 2:].split()[19].decode()


def _alive(pid: int, start: str | None) -> bool:
    now_start = _process_start(pid)
    if now_start is None:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return start is None
    return start is None or now_start == start


class LocalGate:
    """Per-origin records in a directory the tool checks, each changed under an exclusive
    flock (collection.fetch.gate_files says what the directory and its records must be).

    A record found missing or cut short while the directory's own record lists its origin
    (a file deleted, a write cut short by a crash) is *fenced*: its first start waits one full
    gap from the moment it was found so, since no start can be later than that moment, the
    gap from the last start any process made still holds (issue 24 point 3). A record of an
    earlier boot starts afresh: its processes died with the boot."""

    def __init__(self, directory: str, *, margin: float = 0.0, private: bool = False):
        self.directory = os.path.abspath(directory)
        self.description = f"local:{self.directory}"
        self.margin = float(margin)
        self.private = private          # the default directory: never the shared layout
        self._boot = _boot_id()
        self._pid = os.getpid()
        self._start = _process_start(self._pid)
        self._serial = 0
        self._serial_lock = threading.Lock()
        self._place: gate_files.GateDirectory | None = None
        # This process's own leases by host: put back into a record found reset, so its own
        # requests in flight still count against the two-connection cap.
        self._mine: dict[str, dict[str, dict]] = {}

    # --- the directory and the record of one origin -----------------------------------------
    def _directory(self) -> gate_files.GateDirectory:
        with self._serial_lock:
            if self._place is None:
                self._place = gate_files.open_directory(self.directory, private=self.private)
            place = self._place
        place.still_there()
        return place

    @contextmanager
    def _open(self, name: str, limit: int) -> Iterator[tuple[gate_files.GateDirectory, int, bytes]]:
        path = os.path.join(self.directory, name)
        try:
            place = self._directory()
            fd = place.open_record(name)
        except gate_files.Unsafe as exc:
            raise GateUnavailable(str(exc)) from None
        except OSError as exc:
            raise GateUnavailable(f"cannot open the local gate {path}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield place, fd, gate_files.read(fd, path, limit)
        except gate_files.Unsafe as exc:
            raise GateUnavailable(str(exc)) from None
        except OSError as exc:
            raise GateUnavailable(f"cannot use the local gate {path}: {exc.strerror or exc}") from None
        finally:
            os.close(fd)           # closing drops the flock

    @staticmethod
    def _write(fd: int, raw: bytes, record: dict) -> None:
        data = gate_files.encode(record)
        if data != raw:
            os.pwrite(fd, data, 0)
            os.ftruncate(fd, len(data))

    @contextmanager
    def _record(self, name: str, interval: float | None = None) -> Iterator[dict]:
        path = os.path.join(self.directory, name)
        with self._open(name, gate_files.MAX_RECORD_BYTES) as (place, fd, raw):
            now = time.monotonic()
            value = gate_files.parse(raw, path)
            if value is None:                      # missing, or a write cut short
                known, reset_at = self._register(name, now)
                record = {"boot": self._boot}
                fence = self._gap({}, interval if interval is not None else FLOOR_SECONDS)
                if known or raw.strip(b" \t\r\n\x00"):
                    record["next_start"] = now + fence
                elif reset_at is not None and reset_at + fence > now:
                    record["next_start"] = reset_at + fence
            elif value["boot"] != self._boot:
                self._register(name, now)
                record = {"boot": self._boot}
            else:
                record = gate_files.host_record(value, now, path)
            self._put_back_mine(name, record)
            yield record
            self._write(fd, raw, record)

    @contextmanager
    def _directory_record(self, registering: str | None = None) -> Iterator[dict]:
        name = gate_files.DIRECTORY_RECORD
        path = os.path.join(self.directory, name)
        with self._open(name, gate_files.MAX_DIRECTORY_RECORD_BYTES) as (place, fd, raw):
            now = time.monotonic()
            value = gate_files.parse(raw, path)
            record = None
            if value is not None and value["boot"] != self._boot:
                record = {"boot": self._boot, "origins": []}
            elif value is not None:
                record = gate_files.directory_record(value, now, path)
                if "origins" not in record:        # written before the list was kept
                    record = None
            if record is None:
                # The list is lost (or never was, in a new directory): every record present is
                # listed, and an origin whose record went with the list is fenced from now. The
                # record being registered was just made empty by this process: it says nothing.
                names = [n for n in place.record_names() if n != registering]
                record = {"boot": self._boot, "origins": names}
                if names or raw.strip(b" \t\r\n\x00"):
                    record["reset_at"] = now
            yield record
            self._write(fd, raw, record)

    def _register(self, name: str, now: float) -> tuple[bool, float | None]:
        """Whether the directory's record already lists `name` (then a missing record of it was
        lost, not new), and when the list itself was last found lost; lists it."""
        with self._directory_record(name) as directory:
            known = name in directory["origins"]
            if not known:
                directory["origins"] = sorted({*directory["origins"], name})
            return known, directory.get("reset_at")

    def _put_back_mine(self, host: str, record: dict) -> None:
        with self._serial_lock:
            mine = dict(self._mine.get(host, {}))
        if mine:
            leases = record.setdefault("leases", {})
            for lease_id, lease in mine.items():
                if lease["expires"] > time.monotonic():
                    leases.setdefault(lease_id, dict(lease))

    def _note_mine(self, host: str, lease_id: str, lease: dict | None) -> None:
        with self._serial_lock:
            held = self._mine.setdefault(host, {})
            if lease is None:
                held.pop(lease_id, None)
            else:
                held[lease_id] = dict(lease)

    def _live_leases(self, record: dict, now: float) -> dict:
        leases = record.get("leases", {})
        live = {k: v for k, v in leases.items()
                if v["expires"] > now and (v["pid"] == self._pid or _alive(v["pid"], v.get("start")))}
        record["leases"] = live
        return live

    def _gap(self, record: dict, interval: float) -> float:
        # Bounded as a recipe's interval is (<= MAX_DELAY_SECONDS), so no record holds an instant
        # a later reader would refuse.
        return min(max(interval, FLOOR_SECONDS, float(record.get("crawl_delay", 0.0))), MAX_DELAY_SECONDS) \
            + min(self.margin, 60.0)

    # --- the gate ---------------------------------------------------------------------------
    def check(self) -> None:
        """The directory, every entry in it, every record's content and the directory's own
        record, before a run's first request: one record that is not the tool's means someone
        else writes here, whichever origin it is for."""
        try:
            place = self._directory()
            place.check_entries()
            now = time.monotonic()
            for name in place.record_names():
                path = os.path.join(self.directory, name)
                raw = place.read_existing(name, gate_files.MAX_RECORD_BYTES)
                value = gate_files.parse(raw, path) if raw is not None else None
                if value is not None and value["boot"] == self._boot:
                    gate_files.host_record(value, now, path)
        except gate_files.Unsafe as exc:
            raise GateUnavailable(str(exc)) from None
        except OSError as exc:
            raise GateUnavailable(f"cannot use the local gate {self.directory}: {exc.strerror or exc}") from None
        with self._directory_record():
            pass

    def acquire(self, host: str, interval: float, ttl: float) -> Lease | float:
        with self._record(host, interval) as record:
            now = time.monotonic()
            live = self._live_leases(record, now)
            gap = self._gap(record, interval)
            ready = max(record.get("last_start", -1e18) + gap, record.get("next_start", -1e18),
                        record.get("not_before", -1e18))
            if len(live) >= PER_ORIGIN_IN_FLIGHT or any(not lease.get("sent", True) for lease in live.values()):
                # both places taken, or a request not yet written: its start is not known
                return max(ready - now, _FULL_POLL_SECONDS)
            if ready > now:
                return ready - now
            with self._serial_lock:
                self._serial += 1
                lease_id = f"{self._pid}-{self._serial}"
            ttl = min(max(float(ttl), 0.0), gate_files.MAX_LEASE_SECONDS)
            live[lease_id] = {"pid": self._pid, "start": self._start, "expires": now + ttl, "sent": False}
            self._note_mine(host, lease_id, live[lease_id])
            record["last_start"] = now
            record["next_start"] = max(record.get("next_start", -1e18), now + gap)
            return Lease(host, lease_id, interval)

    def sent(self, lease: Lease) -> None:
        with self._record(lease.host, lease.gap) as record:
            now = time.monotonic()
            held = record.get("leases", {}).get(lease.lease_id)
            if held is not None:
                held["sent"] = True
                self._note_mine(lease.host, lease.lease_id, held)
            if held is not None and now > record.get("last_start", -1e18):
                record["last_start"] = now
                record["next_start"] = max(record.get("next_start", -1e18), now + self._gap(record, lease.gap))

    def release(self, lease: Lease, retry_after: float | None = None) -> None:
        self._note_mine(lease.host, lease.lease_id, None)
        with self._record(lease.host, lease.gap) as record:
            now = time.monotonic()
            record.get("leases", {}).pop(lease.lease_id, None)
            if retry_after is not None and retry_after > 0:
                hold = now + min(float(retry_after), MAX_DELAY_SECONDS)
                record["not_before"] = max(record.get("not_before", -1e18), hold)

    def set_crawl_delay(self, host: str, seconds: float | None) -> None:
        if seconds is None or not seconds > 0:
            return
        with self._record(host) as record:
            record["crawl_delay"] = max(float(record.get("crawl_delay", 0.0)), min(float(seconds), MAX_DELAY_SECONDS))

    @contextmanager
    def source_lock(self, name: str, identity: str | None = None) -> Iterator[None]:
        # One machine: the state directory's own flock already keeps one run per source.
        yield

    def close(self) -> None:
        with self._serial_lock:
            place, self._place = self._place, None
        if place is not None:
            place.close()

    # --- holds: who set them, what they are, lifting them (issue 24 point 6) -----------------
    # Read-only where they only read: a record that does not exist is never created, and the
    # record is not changed (so `_record` writes nothing back).
    def mark_hold(self, host: str, kind: str, seconds: float, set_by: dict) -> None:
        """Note which response set a Retry-After hold or a Crawl-delay (after `release` /
        `set_crawl_delay` applied it): kept when this response's hold is the one in force."""
        if not seconds or not seconds > 0:
            return
        seconds = min(float(seconds), MAX_DELAY_SECONDS)
        with self._record(host) as record:
            if kind == RETRY_AFTER:
                until = time.monotonic() + seconds
                if until >= _number(record.get("not_before"), -1e18) - 1.0:
                    record["not_before"] = max(_number(record.get("not_before"), -1e18), until)
                    record["hold_by"] = set_by
            elif kind == CRAWL_DELAY and seconds >= _number(record.get("crawl_delay"), 0.0):
                record["crawl_delay"] = seconds
                record["crawl_delay_by"] = set_by

    def hold(self, host: str) -> "Hold | None":
        """The Retry-After or Crawl-delay hold on `host` now, or None."""
        if not os.path.lexists(os.path.join(self.directory, host)):
            return None
        with self._record(host) as record:
            state = self._describe(host, record)
        return state["hold"]

    def show(self) -> list[dict]:
        """Every origin's state, sorted by host (`collection gate show`)."""
        try:
            names = sorted(os.listdir(self.directory))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise GateUnavailable(f"cannot read the local gate {self.directory}: {exc.strerror or exc}") from None
        out = []
        for name in names:
            if not _HOST.fullmatch(name):
                continue            # .check and anything the tool did not write
            with self._record(name) as record:
                out.append(self._describe(name, record))
        return out

    def clear(self, host: str, by: str) -> dict | None:
        """Lift `host`'s Retry-After hold and Crawl-delay (the floor after the last start and
        the leases stay: FETCH-19 and the requests really in flight), noting who cleared it and
        when in the record. None when the gate holds nothing for `host`."""
        if not os.path.lexists(os.path.join(self.directory, host)):
            return None
        with self._record(host) as record:
            lifted = self._describe(host, record)
            last = _number(record.get("last_start"), -1e18)
            nxt = _number(record.get("next_start"), -1e18)
            crawl = _number(record.get("crawl_delay"), 0.0)
            if crawl and nxt - last >= crawl - 0.001:      # 1 ms: float sums of now + gap
                # the next start was the Crawl-delay's: the floor after the last start remains
                record["next_start"] = last + FLOOR_SECONDS + self.margin
            for key in ("not_before", "crawl_delay", "hold_by", "crawl_delay_by"):
                record.pop(key, None)
            record["cleared"] = {"by": by, "at": utc(time.time())}
        return lifted

    def _describe(self, host: str, record: dict) -> dict:
        now, wall = time.monotonic(), time.time()
        leases = record.get("leases")
        live = 0
        if isinstance(leases, dict):
            live = sum(1 for v in leases.values() if isinstance(v, dict) and _number(v.get("expires"), -1e18) > now)
        return describe_origin(host, now=now, wall=wall, fields=record, leases=live, margin=self.margin)

