"""The fleet gate: the politeness state of every origin in Redis or Valkey (collection.fetch.gate).

Every decision is one Lua script, so it is atomic, and it reads the time with the Redis
server's own `TIME`: all servers of a fleet are measured against one clock, and clock skew
between them cannot shorten a gap. Each request in flight is a member of the origin's lease
set scored by its expiry (request timeout plus a margin): a worker that dies frees its slot
when the lease expires, with nobody to clean up.

Keys, per host H (a hash tag keeps both on one Redis Cluster slot):
  collection:gate:{H}          hash: last_start, next_start, not_before, crawl_delay (seconds, server time)
  collection:gate:{H}:leases   sorted set: lease id -> expiry
  collection:gate:{H}:unsent   sorted set: the leases whose request is not written yet -> expiry
  collection:source:NAME       a source's lock: the holder's description, with a TTL renewed while it runs
Every key expires after a week without use.

Nothing read back is trusted: the scripts check every key's type and every field's value, the
client every reply's shape and range, and anything odd is GateUnavailable. A record with no
start (lost in a restart, flushed, expired) is fenced: the next start waits a full gap. See
docs/politeness.md, "What the gate's answers are checked for" and "When the gate forgets".
"""

from __future__ import annotations

import math
import threading
import uuid
from contextlib import contextmanager
from typing import Iterator

from collection.fetch.gate import (IDLE_EXPIRE_SECONDS, GateUnavailable, Lease, SourceHeld, _FULL_POLL_SECONDS,
                                   holder_description)
from collection.fetch.politeness import FLOOR_SECONDS, MAX_DELAY_SECONDS, PER_ORIGIN_IN_FLIGHT

SOURCE_LOCK_SECONDS = 60.0          # a source lock lives this long unless renewed (every third of it)
# How far the Redis server's clock may step back (NTP, a failover to a replica) before a
# time in a record is taken for corrupt rather than for a record written by a faster clock.
CLOCK_SLACK_SECONDS = 60.0
# The longest wait a record the tool wrote can ask for: interval, Crawl-delay and Retry-After
# are each capped at MAX_DELAY_SECONDS (an hour), plus a second for the arrival margin and the
# clock slack. A longer wait is a corrupt or hostile record: GateUnavailable, never a sleep
# (an infinite one hung a run). A wait below MIN_WAIT_SECONDS is slept as MIN_WAIT_SECONDS,
# so a gate that answers "0" for ever is asked at most 1000 times a second, not spun on.
MAX_WAIT_SECONDS = MAX_DELAY_SECONDS + 1.0 + CLOCK_SLACK_SECONDS
MIN_WAIT_SECONDS = 0.001
# A lease lives request_timeout_seconds (at most 120) plus LEASE_MARGIN_SECONDS: an expiry
# further ahead (a lease planted with +inf) would wedge the origin's two slots for ever.
MAX_LEASE_SECONDS = 120.0 + 30.0 + CLOCK_SLACK_SECONDS

# Every script checks what it reads before it decides anything: each key is of the type the
# tool made (or absent), each field of the state hash a finite number within what the tool
# can have written, each lease expiry within MAX_LEASE_SECONDS. Anything else is an error
# reply `GATE_RECORD ...` naming the key, the field and what kind of value was found (never
# the value itself), which the client raises as GateUnavailable.
_PRELUDE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local function bad(what) error({err = 'GATE_RECORD ' .. what}) end
for i, key in ipairs(KEYS) do
  local want = (i == 1) and 'hash' or 'zset'
  local got = redis.call('TYPE', key)['ok']
  if got ~= 'none' and got ~= want then bad('key ' .. key .. ' is a ' .. got .. ', not a ' .. want) end
end
local function field(v, name, ahead, range)
  if not v then return nil end
  local n = tonumber(v)
  local where = 'field ' .. name .. ' of ' .. KEYS[1]
  if n == nil then bad(where .. ' is not a number') end
  if n ~= n then bad(where .. ' is NaN') end
  if n == math.huge or n == -math.huge then bad(where .. ' is infinite') end
  local high = ahead and now + ahead or range
  if n < 0 or n > high then
    if ahead then bad(where .. ' is negative or more than ' .. string.format('%%.0f', ahead) .. ' s ahead of the server clock') end
    bad(where .. ' is outside 0 to ' .. string.format('%%.0f', range) .. ' s')
  end
  return n
end
local function fmt(v) return string.format('%%.6f', v) end
local s = redis.call('HMGET', KEYS[1], 'last_start', 'next_start', 'not_before', 'crawl_delay')
local last = field(s[1], 'last_start', %(slack)r)
local nxt = field(s[2], 'next_start', %(slack)r + %(delay)r + 1)
local nb = field(s[3], 'not_before', %(slack)r + %(delay)r + 1)
local cd = field(s[4], 'crawl_delay', nil, %(delay)r) or 0
local known = last ~= nil
last, nxt, nb = last or -1e18, nxt or -1e18, nb or -1e18
for i = 2, #KEYS do
  local far = redis.call('ZRANGEBYSCORE', KEYS[i], '(' .. fmt(now + %(lease)r), '+inf', 'LIMIT', 0, 1)
  if #far > 0 then bad('a lease in ' .. KEYS[i] .. ' expires beyond ' .. string.format('%%.0f', %(lease)r) .. ' s') end
end
""" % {"slack": CLOCK_SLACK_SECONDS, "delay": MAX_DELAY_SECONDS, "lease": MAX_LEASE_SECONDS}

# KEYS: state, leases, unsent. ARGV: lease id, interval, margin, ttl, cap, idle expiry, full poll,
# the latest last_start this process has seen for the origin (0: none).
# Returns {1, '', last_start} for a lease, {0, seconds to wait, last_start} otherwise. While a
# lease is not yet sent (its request not written), no other is granted: the next gap counts
# from that write.
# The fence (docs/politeness.md, "When the gate forgets"): a record with no last_start (new,
# expired, flushed, lost in a restart, deleted, or recreated by a release or a Crawl-delay
# after it vanished), or one whose last_start is older than one this process has already
# seen (reset), cannot say when the fleet last started a request. Its start is set to now, as
# if a request had started, and the caller waits a full gap: every start any process made
# before the record was lost is then at least a gap before the next one.
_ACQUIRE = _PRELUDE + """
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local gap = math.max(tonumber(ARGV[2]), cd) + tonumber(ARGV[3])
if not known or last < tonumber(ARGV[8]) then
  last = now
  nxt = math.max(nxt, now + gap)
  redis.call('HSET', KEYS[1], 'last_start', fmt(last), 'next_start', fmt(nxt))
  redis.call('EXPIRE', KEYS[1], ARGV[6])
  return {0, fmt(math.max(last + gap, nxt, nb) - now), fmt(last)}
end
local ready = math.max(last + gap, nxt, nb)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) or redis.call('ZCARD', KEYS[3]) > 0 then
  return {0, fmt(math.max(ready - now, tonumber(ARGV[7]))), fmt(last)}
end
if ready > now then return {0, fmt(ready - now), fmt(last)} end
redis.call('HSET', KEYS[1], 'last_start', fmt(now), 'next_start', fmt(math.max(nxt, now + gap)))
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[1])
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[4]), ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('EXPIRE', KEYS[2], ARGV[6])
redis.call('EXPIRE', KEYS[3], ARGV[6])
return {1, '', fmt(now)}
"""

# KEYS: state, leases, unsent. ARGV: lease id, interval, margin, ttl, idle expiry.
# The write is a start the origin saw, whether or not the record still knows the lease (it may
# have vanished since the grant): the next start counts from it, and a lease set that was lost
# learns this request in flight again, so the connection cap holds for it.
_SENT = _PRELUDE + """
redis.call('ZREM', KEYS[3], ARGV[1])
if now > last then
  local gap = math.max(tonumber(ARGV[2]), cd) + tonumber(ARGV[3])
  redis.call('HSET', KEYS[1], 'last_start', fmt(now), 'next_start', fmt(math.max(nxt, now + gap)))
  redis.call('EXPIRE', KEYS[1], ARGV[5])
end
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[1])
  redis.call('EXPIRE', KEYS[2], ARGV[5])
end
return 1
"""

# KEYS: state, leases, unsent. ARGV: lease id, retry-after seconds (0: none), idle expiry.
_RELEASE = _PRELUDE + """
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
local hold = tonumber(ARGV[2])
if hold > 0 then
  redis.call('HSET', KEYS[1], 'not_before', fmt(math.max(nb, now + hold)))
  redis.call('EXPIRE', KEYS[1], ARGV[3])
end
return 1
"""

# KEYS: state. ARGV: crawl delay seconds, idle expiry.
_CRAWL_DELAY = _PRELUDE + """
redis.call('HSET', KEYS[1], 'crawl_delay', fmt(math.max(cd, tonumber(ARGV[1]))))
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
"""

# KEYS: lock. ARGV: holder token, ttl ms. Renew or release only one's own lock.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
_UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisGate:
    def __init__(self, url: str, *, margin: float = 0.0, timeout: float = 2.0):
        try:
            import redis
        except ImportError:          # pragma: no cover - redis is a dependency of the package
            raise GateUnavailable("the redis client is not installed") from None
        self._errors = (redis.exceptions.RedisError, OSError)
        self.description = url.split("@", 1)[-1] if "@" in url else url     # never print a password
        self.margin = float(margin)
        try:
            self._redis = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout,
                                               health_check_interval=0)
        except (ValueError, *self._errors) as exc:
            raise GateUnavailable(f"cannot use the gate {self.description}: {exc}") from None
        self._acquire = self._redis.register_script(_ACQUIRE)
        self._sent = self._redis.register_script(_SENT)
        self._release = self._redis.register_script(_RELEASE)
        self._crawl = self._redis.register_script(_CRAWL_DELAY)
        self._renew = self._redis.register_script(_RENEW)
        self._unlock = self._redis.register_script(_UNLOCK)
        self._prefix = uuid.uuid4().hex[:12]
        self._serial = 0
        self._serial_lock = threading.Lock()
        self._seen: dict[str, float] = {}       # host -> the latest last_start read from the gate
        self._ttls: dict[str, float] = {}       # lease id -> its TTL, for `sent` (_SENT)
        self.fault: str | None = None           # set when the source lock is lost: every call fails

    def _call(self, what: str, fn, *args, **kw):
        if self.fault is not None:
            raise GateUnavailable(self.fault)
        try:
            return fn(*args, **kw)
        except self._errors as exc:
            raise GateUnavailable(f"the gate {self.description} failed ({what}): {exc}") from None
        except Exception as exc:  # noqa: BLE001 - a reply the client cannot parse is the gate's fault
            # e.g. a malformed RESP integer (ValueError): the connection may hold the rest of
            # that reply, so it is dropped rather than reused
            self._drop_connections()
            raise GateUnavailable(f"the gate {self.description} gave a reply that cannot be read ({what}): "
                                  f"{type(exc).__name__}") from None

    def _drop_connections(self) -> None:
        try:
            self._redis.connection_pool.disconnect()
        except Exception:  # noqa: BLE001 - already failing; the run stops either way
            pass

    def _bad(self, what: str, why: str) -> GateUnavailable:
        return GateUnavailable(f"the gate {self.description} answered {what} with {why}")

    def _expect_one(self, what: str, reply) -> None:
        if type(reply) is not int or reply != 1:
            raise self._bad(what, f"{_kind(reply)}, not 1")

    def _number(self, what: str, raw, low: float, high: float) -> float:
        """A number the gate sent as text, checked: finite and within [low, high]."""
        if not isinstance(raw, bytes) or len(raw) > 64:
            raise self._bad(what, f"{_kind(raw)} where a number was expected")
        try:
            value = float(raw.decode("ascii"))
        except (UnicodeDecodeError, ValueError):
            raise self._bad(what, "text that is not a number") from None
        if not math.isfinite(value):
            raise self._bad(what, "a number that is not finite")
        if not low <= value <= high:
            raise self._bad(what, f"a number out of range ({low:g} to {high:g})")
        return value

    @staticmethod
    def _keys(host: str) -> list[str]:
        return [f"collection:gate:{{{host}}}", f"collection:gate:{{{host}}}:leases",
                f"collection:gate:{{{host}}}:unsent"]

    def check(self) -> None:
        if self._call("PING", self._redis.ping) is not True:
            raise self._bad("PING", "something other than PONG")

    def acquire(self, host: str, interval: float, ttl: float) -> Lease | float:
        with self._serial_lock:
            self._serial += 1
            lease_id = f"{self._prefix}-{self._serial}"
        interval = min(max(float(interval), FLOOR_SECONDS), MAX_DELAY_SECONDS)
        reply = self._call("acquire", self._acquire, keys=self._keys(host),
                           args=[lease_id, interval, self.margin, ttl, PER_ORIGIN_IN_FLIGHT,
                                 IDLE_EXPIRE_SECONDS, _FULL_POLL_SECONDS, f"{self._seen.get(host, 0.0):.6f}"])
        if not isinstance(reply, list) or len(reply) != 3 or type(reply[0]) is not int or reply[0] not in (0, 1):
            raise self._bad("acquire", f"{_kind(reply)}, not [0 or 1, wait, last start]")
        last = self._number("acquire (last start)", reply[2], 0.0, math.inf)
        self._seen[host] = max(self._seen.get(host, 0.0), last)
        if reply[0] == 1:
            if reply[1] != b"":
                raise self._bad("acquire", "a lease together with a wait")
            self._ttls[lease_id] = float(ttl)
            return Lease(host, lease_id, interval)
        wait = self._number("acquire (wait)", reply[1], 0.0, MAX_WAIT_SECONDS)
        return max(wait, MIN_WAIT_SECONDS)

    def sent(self, lease: Lease) -> None:
        ttl = self._ttls.get(lease.lease_id, MAX_LEASE_SECONDS - CLOCK_SLACK_SECONDS)
        self._expect_one("sent", self._call("sent", self._sent, keys=self._keys(lease.host),
                                            args=[lease.lease_id, lease.gap, self.margin, ttl, IDLE_EXPIRE_SECONDS]))

    def release(self, lease: Lease, retry_after: float | None = None) -> None:
        self._ttls.pop(lease.lease_id, None)
        hold = min(float(retry_after), MAX_DELAY_SECONDS) if retry_after and retry_after > 0 else 0
        self._expect_one("release", self._call("release", self._release, keys=self._keys(lease.host),
                                               args=[lease.lease_id, hold, IDLE_EXPIRE_SECONDS]))

    def set_crawl_delay(self, host: str, seconds: float | None) -> None:
        if seconds is None or not seconds > 0:
            return
        self._expect_one("crawl-delay", self._call("crawl-delay", self._crawl, keys=self._keys(host)[:1],
                                                   args=[min(float(seconds), MAX_DELAY_SECONDS), IDLE_EXPIRE_SECONDS]))

    @contextmanager
    def source_lock(self, name: str) -> Iterator[None]:
        """Hold `collection:source:NAME` while the source runs, so two servers never run one
        source at once; renewed every third of its TTL, so a dead holder's lock expires."""
        key = f"collection:source:{name}"
        token = f"{holder_description()} ({self._prefix})"
        ttl_ms = int(SOURCE_LOCK_SECONDS * 1000)
        taken = self._call("lock", self._redis.set, key, token, nx=True, px=ttl_ms)
        if taken is not True:
            if taken is not None:               # SET NX answers OK or nil, nothing else
                raise self._bad("the source lock's SET", _kind(taken))
            holder = self._call("lock", self._redis.get, key)
            raise SourceHeld(name, holder.decode("utf-8", "replace") if isinstance(holder, bytes) and holder
                             else "another run (just released)")
        stop = threading.Event()

        def renew() -> None:
            # A renewal that fails, or finds the lock no longer ours (it expired, or was
            # deleted or overwritten), leaves the source unguarded: the gate is marked faulty,
            # so the run's next gate call raises GateUnavailable and the run stops. Never a
            # traceback from this thread.
            while not stop.wait(SOURCE_LOCK_SECONDS / 3):
                try:
                    renewed = self._renew(keys=[key], args=[token, ttl_ms])
                except Exception as exc:  # noqa: BLE001 - any failure of this thread is a gate fault
                    self.fault = f"the gate {self.description} failed (renewing the lock of {name}): " \
                                 f"{type(exc).__name__}"
                    return
                if type(renewed) is not int or renewed != 1:
                    self.fault = f"the gate {self.description} no longer holds this run's lock of {name}"
                    return

        thread = threading.Thread(target=renew, daemon=True, name="collection-source-lock")
        thread.start()
        try:
            yield
        finally:
            stop.set()
            try:
                self._unlock(keys=[key], args=[token])
            except self._errors:
                pass            # it expires by itself

    def close(self) -> None:
        try:
            self._redis.close()
        except self._errors:
            pass


def _kind(value) -> str:
    """What a reply is, for a message: its type (and length), never its contents."""
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)}"
    if isinstance(value, bytes):
        return f"{len(value)} bytes of text"
    return f"a value of type {type(value).__name__}"
