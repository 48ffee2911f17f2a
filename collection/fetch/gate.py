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

A gate that cannot be reached raises `GateUnavailable`: before the first request that is the
run-level refusal GATE_UNAVAILABLE; mid-run it stops the run, which then refuses and writes
nothing. There is never a silent fallback to a looser gate.
"""

from __future__ import annotations

import fcntl
import os
import socket
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Protocol

from collection.fetch import gate_files
from collection.fetch.politeness import FLOOR_SECONDS, MAX_DELAY_SECONDS, PER_ORIGIN_IN_FLIGHT

GATE_ENV = "COLLECTION_GATE"
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

    def source_lock(self, name: str): ...

    def close(self) -> None: ...


def holder_description() -> str:
    """Who holds a lease or a source: the host name and the process id (what an operator
    needs to find it)."""
    return f"{socket.gethostname()} pid {os.getpid()}"


def parse_gate(value: str | None, margin: float) -> "Gate | None":
    """The gate a `--gate` value (or COLLECTION_GATE) names: `local` (the default),
    `local:DIR`, `none`, or `redis://HOST:PORT/DB` (`rediss://` for TLS). None means
    the in-process scheduler alone. ValueError for anything else."""
    value = (value or LOCAL).strip()
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
    if value.startswith(("redis://", "rediss://", "unix://")):
        from collection.fetch.redis_gate import RedisGate

        return RedisGate(value, margin=margin)
    raise ValueError(f"--gate {value!r} is not `local`, `local:DIR`, `none` or redis://HOST:PORT/DB")


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
    def source_lock(self, name: str) -> Iterator[None]:
        # One machine: the state directory's own flock already keeps one run per source.
        yield

    def close(self) -> None:
        with self._serial_lock:
            place, self._place = self._place, None
        if place is not None:
            place.close()
