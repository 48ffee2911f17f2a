"""The machine-local gate's files (collection.fetch.gate.LocalGate): which directory it trusts,
how it opens a record so that nothing planted there can redirect a write, and what a record
may hold. Shell (files, /proc). Issue 24 point 5; docs/running-many-sources.md.

- The directory: every directory above it must be owned by root or by you and not writable
  by group or others unless sticky (/tmp), so nobody else can swap it; a symlink on the way
  is followed only when root or you own it. The gate directory itself is never a symlink and
  is one of two layouts: *private* (owned by you, not writable by group or others: the
  default) or *shared* (owned by root or you, group-writable and setgid, not writable by
  others; records are then made 0660 and carry the directory's group).
- A record is opened relative to the directory's descriptor, without following a symlink,
  and must be a regular file with one link, of the layout's owner or group and mode.
- A record's content is outside input: `parse` and `host_record` / `directory_record` refuse
  anything the tool would not have written, except a write cut short (empty, or JSON that
  stops or runs on), which the caller restarts with a fence.

Every refusal is `Unsafe`, whose message names the file and what is wrong.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import re
import stat

from collection.fetch.holds import valid_setter
from collection.fetch.politeness import MAX_DELAY_SECONDS

DIRECTORY_RECORD = ".check"          # the directory's own record: the boot, the origins it has records of
MAX_RECORD_BYTES = 1 << 20           # an origin's record is a few hundred bytes
MAX_DIRECTORY_RECORD_BYTES = 16 << 20
MAX_ORIGINS = 200_000
MAX_LEASES = 64                      # live leases are at most two; room for dead ones not yet reclaimed
MAX_LEASE_SECONDS = MAX_DELAY_SECONDS  # a lease's TTL (request timeout + margin) is far below this
MAX_GAP_SECONDS = MAX_DELAY_SECONDS + 60.0  # the largest interval or Crawl-delay, plus any arrival margin
CLOCK_SLACK_SECONDS = 1.0            # one CLOCK_MONOTONIC for every process: a start is never later than now

_O_PATH = getattr(os, "O_PATH", os.O_RDONLY)  # search permission is enough for a directory above
_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,252}")
_LEASE_ID = re.compile(r"[0-9]{1,10}-[0-9]{1,20}")
_TICKS = re.compile(r"[0-9]{1,20}")


class Unsafe(Exception):
    """The gate directory or a record is not what the tool can trust; the message says why."""


def _mode(st: os.stat_result) -> str:
    return f"mode {stat.S_IMODE(st.st_mode):04o}"


def _kind(st: os.stat_result) -> str:
    for test, name in ((stat.S_ISLNK, "a symlink"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device")):
        if test(st.st_mode):
            return name
    return "not a regular file"


def _foreign_links(path: str) -> None:
    """A symlink on the way that someone else owns could be repointed by them: refuse it. One
    that root or you made (~/.cache on another disk) is followed."""
    me = os.geteuid()
    prefix = "/"
    for part in [p for p in path.split("/") if p][:-1]:
        prefix = os.path.join(prefix, part)
        try:
            st = os.lstat(prefix)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(st.st_mode) and st.st_uid not in (0, me):
            raise Unsafe(f"{prefix} is a symlink owned by uid {st.st_uid}, not by you or root")


def _check_above(st: os.stat_result, where: str) -> None:
    if st.st_uid not in (0, os.geteuid()):
        raise Unsafe(f"{where} is owned by uid {st.st_uid}, not by you or root, so its owner could swap the gate")
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        raise Unsafe(f"{where} is writable by group or others ({_mode(st)}) and not sticky: they could swap the gate")


def _member(gid: int) -> bool:
    return os.geteuid() == 0 or gid == os.getegid() or gid in os.getgroups()


class GateDirectory:
    """An open gate directory: its descriptor (records are opened relative to it, so a parent
    swapped later cannot redirect them), its layout and what it was when opened."""

    def __init__(self, path: str, fd: int, st: os.stat_result, shared: bool):
        self.path = path
        self.fd = fd
        self.shared = shared
        self.gid = st.st_gid
        self.identity = (st.st_dev, st.st_ino)
        self.file_mode = 0o660 if shared else 0o600

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def still_there(self) -> None:
        """A directory removed or replaced under a running process would split the gate in two:
        this process would keep its records where no newcomer looks."""
        try:
            st = os.stat(self.path, follow_symlinks=False)
        except OSError:
            st = None
        if st is None or (st.st_dev, st.st_ino) != self.identity:
            raise Unsafe(f"the local gate directory {self.path} was removed or replaced while this run used it")

    # --- records ----------------------------------------------------------------------------
    def _where(self, name: str) -> str:
        return os.path.join(self.path, name)

    def check_entry(self, name: str, st: os.stat_result) -> None:
        where = self._where(name)
        if not stat.S_ISREG(st.st_mode):
            raise Unsafe(f"the gate record {where} is {_kind(st)}, not a regular file")
        if st.st_nlink != 1:
            raise Unsafe(f"the gate record {where} has {st.st_nlink} hard links; the tool makes one")
        if self.shared:
            if st.st_gid != self.gid:
                raise Unsafe(f"the gate record {where} has group {st.st_gid}, not the shared directory's {self.gid}")
            if st.st_mode & 0o002:
                raise Unsafe(f"the gate record {where} is writable by others ({_mode(st)})")
        else:
            if st.st_uid != os.geteuid():
                raise Unsafe(f"the gate record {where} is owned by uid {st.st_uid}, not by you")
            if st.st_mode & 0o022:
                raise Unsafe(f"the gate record {where} is writable by group or others ({_mode(st)})")

    def open_record(self, name: str) -> int:
        """An O_RDWR descriptor of the record `name`, made if missing. Never follows a symlink,
        never opens a FIFO for long (O_NONBLOCK), refuses what check_entry refuses."""
        if not (_NAME.fullmatch(name) or name == DIRECTORY_RECORD):
            raise Unsafe(f"{name!r} cannot name a gate record")
        flags = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        for _attempt in range(8):
            made = False
            try:
                fd = os.open(name, flags, dir_fd=self.fd)
            except FileNotFoundError:
                try:
                    fd = os.open(name, flags | os.O_CREAT | os.O_EXCL, self.file_mode, dir_fd=self.fd)
                    made = True
                except FileExistsError:
                    continue                      # another process made it first: open theirs
            except OSError as exc:
                self._refuse_open(name, exc)
            try:
                st = os.fstat(fd)
                if self.shared and stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() \
                        and (made or stat.S_IMODE(st.st_mode) & 0o660 != 0o660):
                    os.fchmod(fd, self.file_mode)  # the umask must not keep the group out
                    st = os.fstat(fd)
                self.check_entry(name, st)
            except BaseException:
                os.close(fd)
                raise
            return fd
        raise Unsafe(f"the gate record {self._where(name)} keeps appearing and vanishing")

    def _refuse_open(self, name: str, exc: OSError):
        try:
            st = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except OSError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise Unsafe(f"the gate record {self._where(name)} is {_kind(st)}, not a regular file") from None
        raise Unsafe(f"cannot open the gate record {self._where(name)}: {exc.strerror or exc}") from None

    def read_existing(self, name: str, limit: int) -> bytes | None:
        """The bytes of record `name` under a shared flock, or None when it is gone; never makes it."""
        try:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=self.fd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            self._refuse_open(name, exc)
        try:
            self.check_entry(name, os.fstat(fd))
            fcntl.flock(fd, fcntl.LOCK_SH)
            return read(fd, self._where(name), limit)
        finally:
            os.close(fd)

    def record_names(self) -> list[str]:
        return sorted(n for n in os.listdir(self.fd) if not n.startswith("."))

    def check_entries(self) -> None:
        """Every entry of the directory, before a run's first request: one planted link or FIFO
        means the directory is not the tool's alone."""
        for name in sorted(os.listdir(self.fd)):
            self.check_entry(name, os.stat(name, dir_fd=self.fd, follow_symlinks=False))


def open_directory(path: str, *, private: bool) -> GateDirectory:
    """Walk to `path` from / one directory at a time (each opened relative to the one above,
    without following links), making what is missing (0700), and check each step. `private`:
    the default directory, which must be private even where a shared one would do."""
    path = os.path.abspath(path)
    _foreign_links(path)
    parent, last = os.path.split(path)
    if not last:
        raise Unsafe("/ cannot be the gate directory")
    real = os.path.join(os.path.realpath(parent), last)   # links above: followed once, checked
    parts = [p for p in real.split("/") if p]
    fd = os.open("/", _O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    where = "/"
    try:
        _check_above(os.fstat(fd), where)
        for index, part in enumerate(parts):
            final = index == len(parts) - 1
            flags = (os.O_RDONLY if final else _O_PATH) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
            where = os.path.join(where, part)
            try:
                try:
                    below = os.open(part, flags, dir_fd=fd)
                except FileNotFoundError:
                    try:
                        os.mkdir(part, 0o700, dir_fd=fd)
                    except FileExistsError:
                        pass
                    below = os.open(part, flags, dir_fd=fd)
            except OSError as exc:
                try:
                    st = os.stat(part, dir_fd=fd, follow_symlinks=False)
                except OSError:
                    st = None
                if st is not None and not stat.S_ISDIR(st.st_mode):
                    raise Unsafe(f"{where} is {_kind(st)}, not a directory"
                                 + (" (the gate directory itself is never a symlink)" if final else "")) from None
                raise Unsafe(f"cannot open {where}: {exc.strerror or exc}") from None
            os.close(fd)
            fd = below
            st = os.fstat(fd)
            if final:
                return GateDirectory(path, fd, st, _layout(st, where, private))
            _check_above(st, where)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        raise
    raise Unsafe(f"{path} cannot be the gate directory")   # pragma: no cover - parts is never empty


def _layout(st: os.stat_result, where: str, private: bool) -> bool:
    """True for the shared layout, False for the private one; Unsafe for anything else."""
    mode = st.st_mode
    if mode & 0o002:
        raise Unsafe(f"the gate directory {where} is writable by others ({_mode(st)}): anyone could plant records")
    if not mode & 0o020:
        if st.st_uid != os.geteuid():
            raise Unsafe(f"the gate directory {where} is owned by uid {st.st_uid}, not by you "
                         "(a directory for several users is group-writable and setgid: chmod 2770)")
        return False
    if private:
        raise Unsafe(f"the default gate directory {where} is group-writable ({_mode(st)}); it must be yours alone "
                     "(chmod 700), or name a shared one with --gate local:DIR")
    if not mode & stat.S_ISGID:
        raise Unsafe(f"the gate directory {where} is group-writable but not setgid ({_mode(st)}): "
                     "a shared gate directory is chmod 2770, so every record keeps its group")
    if st.st_uid not in (0, os.geteuid()):
        raise Unsafe(f"the shared gate directory {where} is owned by uid {st.st_uid}, not by root or you")
    if mode & 0o070 != 0o070:
        raise Unsafe(f"the shared gate directory {where} is not readable and searchable by its group ({_mode(st)})")
    if not _member(st.st_gid):
        raise Unsafe(f"you are not in the group {st.st_gid} of the shared gate directory {where}")
    return True


# --- content ----------------------------------------------------------------------------------

def _no_constant(name: str):
    raise ValueError(f"it holds {name}, which the tool never writes")


def read(fd: int, where: str, limit: int) -> bytes:
    raw = b""
    while len(raw) <= limit and (chunk := os.read(fd, 65536)):
        raw += chunk
    if len(raw) > limit:
        raise Unsafe(f"the gate record {where} is larger than {limit} bytes; the tool never writes that much")
    return raw


def parse(raw: bytes, where: str) -> dict | None:
    """The record's members; None for a write cut short (empty, or JSON that stops or runs on)."""
    if not raw.strip(b" \t\r\n\x00"):
        return None
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except json.JSONDecodeError:
        return None
    except (ValueError, RecursionError) as exc:
        raise Unsafe(f"the gate record {where} is not one the tool wrote: {exc}") from None
    if not isinstance(value, dict):
        raise Unsafe(f"the gate record {where} is not one the tool wrote: a JSON {type(value).__name__}, not an object")
    boot = value.get("boot")
    if not isinstance(boot, str) or len(boot) > 64:
        raise Unsafe(f"the gate record {where} is not one the tool wrote: no boot id")
    return value


def _bad(where: str, member: str, what: str) -> Unsafe:
    return Unsafe(f"the gate record {where} is not one the tool wrote: {member} {what}")


def _time(value, where: str, member: str, now: float, ahead: float) -> float:
    """A CLOCK_MONOTONIC instant: a number, finite, not before boot, at most `ahead` past now."""
    if type(value) not in (int, float) or not math.isfinite(value):
        raise _bad(where, member, f"is {value!r}, not a finite number")
    if value < 0 or value > now + ahead:
        raise _bad(where, member, f"is {value!r}, outside 0 .. now + {ahead:g} s (now is {now:.3f})")
    return float(value)


def _lease(value, where: str, lease_id, now: float) -> dict:
    member = f"lease {lease_id!r}"
    if not isinstance(lease_id, str) or not _LEASE_ID.fullmatch(lease_id):
        raise _bad(where, "a lease", f"is named {lease_id!r}, not PID-SERIAL")
    if not isinstance(value, dict) or set(value) != {"pid", "start", "expires", "sent"}:
        raise _bad(where, member, "does not hold exactly pid, start, expires and sent")
    pid, start, sent = value["pid"], value["start"], value["sent"]
    if type(pid) is not int or not 0 < pid < 2 ** 31:
        raise _bad(where, member, f"has pid {pid!r}, not a process id")
    if start is not None and not (isinstance(start, str) and _TICKS.fullmatch(start)):
        raise _bad(where, member, f"has start {start!r}, not a process start tick")
    if type(sent) is not bool:
        raise _bad(where, member, f"has sent {sent!r}, not true or false")
    expires = _time(value["expires"], where, f"{member} expires", now, MAX_LEASE_SECONDS + CLOCK_SLACK_SECONDS)
    return {"pid": pid, "start": start, "expires": expires, "sent": sent}


# What each member of an origin's record may hold: (check, how far past now an instant may be).
_TIMES = {
    "last_start": CLOCK_SLACK_SECONDS,
    "next_start": MAX_GAP_SECONDS + CLOCK_SLACK_SECONDS,
    "not_before": MAX_DELAY_SECONDS + CLOCK_SLACK_SECONDS,
}


def host_record(value: dict, now: float, where: str) -> dict:
    """An origin's record of this boot, checked member by member."""
    record = {"boot": value["boot"]}
    for member, item in value.items():
        if member == "boot":
            continue
        if member in _TIMES:
            record[member] = _time(item, where, member, now, _TIMES[member])
        elif member == "crawl_delay":
            if type(item) not in (int, float) or not math.isfinite(item) or not 0 <= item <= MAX_DELAY_SECONDS:
                raise _bad(where, member, f"is {item!r}, not a number of seconds in 0 .. {MAX_DELAY_SECONDS:g}")
            record[member] = float(item)
        elif member == "leases":
            if not isinstance(item, dict) or len(item) > MAX_LEASES:
                raise _bad(where, member, f"is not an object of at most {MAX_LEASES} leases")
            record[member] = {key: _lease(lease, where, key, now) for key, lease in item.items()}
        elif member in ("hold_by", "crawl_delay_by"):
            # who set the hold (collection.fetch.holds): it steers nothing, it is only shown, so
            # one the tool did not write is dropped (shown as unknown) rather than refusing the gate
            if valid_setter(item) is not None:
                record[member] = item
        elif member == "cleared":
            if isinstance(item, dict) and set(item) == {"by", "at"} \
                    and all(isinstance(v, str) and len(v) < 512 for v in item.values()):
                record[member] = item       # else dropped, as a setter above
        else:
            raise _bad(where, f"member {member!r}", "is not one the tool writes")
    return record


def directory_record(value: dict, now: float, where: str) -> dict:
    """The directory's own record of this boot: the origins it holds records of, and when
    the tool last found that list lost (the fence for an origin it no longer lists)."""
    record = {"boot": value["boot"]}
    for member, item in value.items():
        if member == "boot":
            continue
        if member == "origins":
            if not isinstance(item, list) or len(item) > MAX_ORIGINS \
                    or not all(isinstance(n, str) and _NAME.fullmatch(n) for n in item):
                raise _bad(where, member, f"is not a list of at most {MAX_ORIGINS} record names")
            record[member] = sorted(set(item))
        elif member == "reset_at":
            record[member] = _time(item, where, member, now, CLOCK_SLACK_SECONDS)
        else:
            raise _bad(where, f"member {member!r}", "is not one the tool writes")
    return record


def encode(record: dict) -> bytes:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
