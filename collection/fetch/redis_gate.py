"""The fleet gate: the politeness state of every origin in Redis or Valkey (collection.fetch.gate).

Every decision is one Lua script, so it is atomic, and it reads the time with the Redis
server's own `TIME`: all servers of a fleet are measured against one clock, and clock skew
between them cannot shorten a gap. Each request in flight is a member of the origin's lease
set scored by its expiry (request timeout plus a margin): a worker that dies frees its slot
when the lease expires, with nobody to clean up.

Keys, per host H (a hash tag keeps both on one Redis Cluster slot):
  collection:gate:{H}          hash: last_start, next_start, not_before, crawl_delay (seconds, server time);
                               hold_by, crawl_delay_by (JSON: the response that set them), cleared
                               (JSON: who lifted them, when) — collection.fetch.holds
  collection:gate:{H}:leases   sorted set: lease id -> expiry
  collection:gate:{H}:unsent   sorted set: the leases whose request is not written yet -> expiry
  collection:source:SHA256     a source's lock (the hash of its identity: dataset, name, allowed origins):
                               the holder's description, with a TTL renewed while it runs
Every key expires after a week without use.

Nothing read back is trusted: the scripts check every key's type and every field's value, the
client every reply's shape and range, and anything odd is GateUnavailable. A record with no
start (lost in a restart, flushed, expired) is fenced: the next start waits a full gap. See
docs/politeness.md, "What the gate's answers are checked for" and "When the gate forgets".
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
import uuid
from contextlib import contextmanager
from typing import Iterator

from collection.fetch.gate import (_HOST, IDLE_EXPIRE_SECONDS, GateUnavailable, Lease, SourceHeld, _FULL_POLL_SECONDS,
                                   describe_origin, holder_description)
from collection.fetch.gate_url import GateAddress, parse_gate_url
from collection.fetch.holds import CRAWL_DELAY, RETRY_AFTER, Hold, finite, utc
from collection.redact import remember, scrub
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
local slack = %(slack)r
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
local seen = tonumber(ARGV[8])
if seen > now + slack then seen = 0 end     -- the server's clock went back: the fence alone decides
if not known or last < seen then
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


def _shown(holder: bytes) -> str:
    """The holder a lock names, as read from Redis (anyone with access could have written it):
    printable, at most 200 characters."""
    text = holder.decode("utf-8", "replace")
    return "".join(c if c.isprintable() else "?" for c in text[:200])


def source_lock_key(identity: str) -> str:
    """`collection:source:` and the SHA-256 of the source's identity: a fixed length whatever
    the names, and the same on every server."""
    return "collection:source:" + hashlib.sha256(identity.encode("utf-8")).hexdigest()


# Holds (issue 24 point 6). Own scripts, no shared prelude: they read the record, they do not pace.
# KEYS: state. ARGV: kind, seconds, setter JSON, idle expiry. Keeps the setter of the hold in force.
_MARK_HOLD = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local s = redis.call('HMGET', KEYS[1], 'not_before', 'crawl_delay')
local nb, cd = tonumber(s[1] or '') or -1e18, tonumber(s[2] or '') or 0
local sec = tonumber(ARGV[2])
if ARGV[1] == 'retry_after' then
  if now + sec >= nb - 1 then
    redis.call('HSET', KEYS[1], 'not_before', string.format('%.6f', math.max(nb, now + sec)), 'hold_by', ARGV[3])
  end
elseif sec >= cd then
  redis.call('HSET', KEYS[1], 'crawl_delay', string.format('%.6f', sec), 'crawl_delay_by', ARGV[3])
end
redis.call('EXPIRE', KEYS[1], ARGV[4])
return 1
"""

# KEYS: state, leases. Returns {server time, the record's fields and values, leases not expired}.
_STATE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
return {string.format('%.6f', now), redis.call('HGETALL', KEYS[1]),
        redis.call('ZCOUNT', KEYS[2], string.format('(%.6f', now), '+inf')}
"""

# KEYS: state. ARGV: the clearing note (JSON), idle expiry, floor + margin. Lifts the hold and
# the Crawl-delay; a next start that was the Crawl-delay's falls back to the floor after the last.
_CLEAR = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local s = redis.call('HMGET', KEYS[1], 'last_start', 'next_start', 'crawl_delay')
local last, nxt, cd = tonumber(s[1] or ''), tonumber(s[2] or ''), tonumber(s[3] or '') or 0
if last and nxt and cd > 0 and nxt - last >= cd - 0.001 then
  redis.call('HSET', KEYS[1], 'next_start', string.format('%.6f', last + tonumber(ARGV[3])))
end
redis.call('HDEL', KEYS[1], 'not_before', 'crawl_delay', 'hold_by', 'crawl_delay_by')
redis.call('HSET', KEYS[1], 'cleared', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
return 1
"""
_STATE_KEY = re.compile(r"collection:gate:\{([^{}]{1,253})\}")


class RedisGate:
    """`address`: a GateAddress (collection.fetch.gate_url), or its URL text. `ca_bundle`: the
    CA certificates a rediss:// server's certificate (and host name) is checked against."""

    def __init__(self, address: "GateAddress | str", *, margin: float = 0.0, timeout: float = 2.0,
                 ca_bundle: str | None = None):
        try:
            import redis
        except ImportError:          # pragma: no cover - redis is a dependency of the package
            raise GateUnavailable("the redis client is not installed") from None
        if isinstance(address, str):
            address = parse_gate_url(address)
        self._errors = (redis.exceptions.RedisError, OSError)
        self._secrets = tuple(s for s in (address.password,) if s)
        remember(address.password)
        self.description = address.description      # the password shown as ***
        self.margin = float(margin)
        # The client gets the parts, never the URL: its own errors quote a URL in full.
        where = ({"unix_socket_path": address.path} if address.scheme == "unix"
                 else {"host": address.host, "port": address.port})
        tls = ({"ssl": True, "ssl_cert_reqs": "required", "ssl_check_hostname": True, "ssl_ca_certs": ca_bundle}
               if address.tls else {})
        try:
            self._redis = redis.Redis(**where, **tls, db=address.db, username=address.username,
                                      password=address.password, socket_timeout=timeout,
                                      socket_connect_timeout=timeout, health_check_interval=0)
        except (ValueError, *self._errors) as exc:
            raise GateUnavailable(f"cannot use the gate {self.description}: {self._scrub(exc)}") from None
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
            raise GateUnavailable(f"the gate {self.description} failed ({what}): {self._scrub(exc)}") from None
        except Exception as exc:  # noqa: BLE001 - a reply the client cannot parse is the gate's fault
            # e.g. a malformed RESP integer (ValueError): the connection may hold the rest of
            # that reply, so it is dropped rather than reused
            self._drop_connections()
            raise GateUnavailable(f"the gate {self.description} gave a reply that cannot be read ({what}): "
                                  f"{type(exc).__name__}") from None

    def _scrub(self, exc: BaseException) -> str:
        return scrub(str(exc), self._secrets)

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
        # The script fenced any record older than what this process had seen, so the record's
        # start is the one to remember now (a later fence after a clock step starts from it).
        self._seen[host] = self._number("acquire (last start)", reply[2], 0.0, math.inf)
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
    def source_lock(self, name: str, identity: str | None = None) -> Iterator[None]:
        """Hold the source's lock while it runs, so two servers never run one source at once;
        renewed every third of its TTL, so a dead holder's lock expires. The key is a hash of
        the source's identity (collection.fetch.gate.source_identity; the bare name when none
        is given), so unrelated datasets that share a source name never refuse each other;
        the value says who holds it and for what."""
        key = source_lock_key(identity if identity is not None else name)
        what = json.loads(identity) if identity is not None else {"source": name}
        scope = f"source {what.get('source')}" + (f" of dataset {what['dataset']}" if what.get("dataset") else "")
        token = f"{holder_description()} ({self._prefix}), running {scope}"
        ttl_ms = int(SOURCE_LOCK_SECONDS * 1000)
        taken = self._call("lock", self._redis.set, key, token, nx=True, px=ttl_ms)
        if taken is not True:
            if taken is not None:               # SET NX answers OK or nil, nothing else
                raise self._bad("the source lock's SET", _kind(taken))
            holder = self._call("lock", self._redis.get, key)
            raise SourceHeld(name, _shown(holder) if isinstance(holder, bytes) and holder
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

    # --- holds: who set them, what they are, lifting them (issue 24 point 6) -----------------
    def mark_hold(self, host: str, kind: str, seconds: float, set_by: dict) -> None:
        """Note which response set a Retry-After hold or a Crawl-delay (docs: LocalGate.mark_hold)."""
        if kind not in (RETRY_AFTER, CRAWL_DELAY) or not seconds or not seconds > 0:
            return
        script = self._script("_mark", _MARK_HOLD)
        self._expect_one("mark-hold", self._call(
            "mark-hold", script, keys=self._keys(host)[:1],
            args=[kind, min(float(seconds), MAX_DELAY_SECONDS), json.dumps(set_by, sort_keys=True),
                  IDLE_EXPIRE_SECONDS]))

    def hold(self, host: str) -> "Hold | None":
        return self._describe(host)["hold"]

    def show(self) -> list[dict]:
        hosts = set()
        for key in self._call("scan", lambda: list(self._redis.scan_iter(match="collection:gate:{*}", count=500))):
            matched = _STATE_KEY.fullmatch(key.decode("utf-8", "replace") if isinstance(key, bytes) else str(key))
            if matched and _HOST.fullmatch(matched.group(1)):
                hosts.add(matched.group(1))
        return [self._describe(host) for host in sorted(hosts)]

    def clear(self, host: str, by: str) -> dict | None:
        lifted = self._describe(host)
        if lifted["last_start"] is None and lifted["hold"] is None and not lifted["crawl_delay"]:
            return None
        note = json.dumps({"by": by, "at": utc(time.time())}, sort_keys=True)
        done = self._call("clear", self._script("_clear", _CLEAR), keys=self._keys(host)[:1],
                          args=[note, IDLE_EXPIRE_SECONDS, FLOOR_SECONDS + self.margin])
        return lifted if done == 1 else None

    def _script(self, name: str, text: str):
        if not hasattr(self, name):
            setattr(self, name, self._redis.register_script(text))
        return getattr(self, name)

    def _describe(self, host: str) -> dict:
        reply = self._call("state", self._script("_state", _STATE), keys=self._keys(host)[:2])
        try:
            server_now, flat, leases = reply
            now = finite(server_now.decode() if isinstance(server_now, bytes) else server_now, "TIME", 0, 1e11)
            if not isinstance(flat, list) or len(flat) % 2 or len(flat) > 64:
                raise ValueError("the record is not a hash the tool wrote")
            fields = {(k.decode("utf-8", "replace") if isinstance(k, bytes) else str(k)): v
                      for k, v in zip(flat[::2], flat[1::2])}
            fields = {k: (v.decode("utf-8", "replace") if isinstance(v, bytes) else v) for k, v in fields.items()}
            count = int(finite(leases, "the lease count", 0, 1e6))
            return describe_origin(host, now=now, wall=time.time(), fields=fields, leases=count, margin=self.margin)
        except (TypeError, ValueError) as exc:
            raise GateUnavailable(f"the gate {self.description} answered what the tool did not write "
                                  f"(state of {host}): {exc}") from None

def _kind(value) -> str:
    """What a reply is, for a message: its type (and length), never its contents."""
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)}"
    if isinstance(value, bytes):
        return f"{len(value)} bytes of text"
    return f"a value of type {type(value).__name__}"
