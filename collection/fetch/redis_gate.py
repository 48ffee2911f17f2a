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
"""

from __future__ import annotations

import hashlib
import json
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

_PRELUDE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local function num(v, default) if v then return tonumber(v) else return default end end
local function fmt(v) return string.format('%.6f', v) end
local s = redis.call('HMGET', KEYS[1], 'last_start', 'next_start', 'not_before', 'crawl_delay')
local last, nxt, nb, cd = num(s[1], -1e18), num(s[2], -1e18), num(s[3], -1e18), num(s[4], 0)
"""

# KEYS: state, leases, unsent. ARGV: lease id, interval, margin, ttl, cap, idle expiry, full poll.
# Returns {1, ''} for a lease, {0, seconds to wait} otherwise. While a lease is not yet sent
# (its request not written), no other is granted: the next gap counts from that write.
_ACQUIRE = _PRELUDE + """
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local gap = math.max(tonumber(ARGV[2]), cd) + tonumber(ARGV[3])
local ready = math.max(last + gap, nxt, nb)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) or redis.call('ZCARD', KEYS[3]) > 0 then
  return {0, fmt(math.max(ready - now, tonumber(ARGV[7])))}
end
if ready > now then return {0, fmt(ready - now)} end
redis.call('HSET', KEYS[1], 'last_start', fmt(now), 'next_start', fmt(math.max(nxt, now + gap)))
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[1])
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[4]), ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[6])
redis.call('EXPIRE', KEYS[2], ARGV[6])
redis.call('EXPIRE', KEYS[3], ARGV[6])
return {1, ''}
"""

# KEYS: state, leases, unsent. ARGV: lease id, interval, margin.
_SENT = _PRELUDE + """
redis.call('ZREM', KEYS[3], ARGV[1])
if redis.call('ZSCORE', KEYS[2], ARGV[1]) and now > last then
  local gap = math.max(tonumber(ARGV[2]), cd) + tonumber(ARGV[3])
  redis.call('HSET', KEYS[1], 'last_start', fmt(now), 'next_start', fmt(math.max(nxt, now + gap)))
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

    def _call(self, what: str, fn, *args, **kw):
        try:
            return fn(*args, **kw)
        except self._errors as exc:
            raise GateUnavailable(f"the gate {self.description} failed ({what}): {self._scrub(exc)}") from None

    def _scrub(self, exc: BaseException) -> str:
        return scrub(str(exc), self._secrets)

    @staticmethod
    def _keys(host: str) -> list[str]:
        return [f"collection:gate:{{{host}}}", f"collection:gate:{{{host}}}:leases",
                f"collection:gate:{{{host}}}:unsent"]

    def check(self) -> None:
        self._call("PING", self._redis.ping)

    def acquire(self, host: str, interval: float, ttl: float) -> Lease | float:
        with self._serial_lock:
            self._serial += 1
            lease_id = f"{self._prefix}-{self._serial}"
        interval = max(float(interval), FLOOR_SECONDS)
        granted, wait = self._call("acquire", self._acquire, keys=self._keys(host),
                                   args=[lease_id, interval, self.margin, ttl, PER_ORIGIN_IN_FLIGHT,
                                         IDLE_EXPIRE_SECONDS, _FULL_POLL_SECONDS])
        if int(granted) == 1:
            return Lease(host, lease_id, interval)
        return float(wait)

    def sent(self, lease: Lease) -> None:
        self._call("sent", self._sent, keys=self._keys(lease.host), args=[lease.lease_id, lease.gap, self.margin])

    def release(self, lease: Lease, retry_after: float | None = None) -> None:
        hold = min(float(retry_after), MAX_DELAY_SECONDS) if retry_after and retry_after > 0 else 0
        self._call("release", self._release, keys=self._keys(lease.host),
                   args=[lease.lease_id, hold, IDLE_EXPIRE_SECONDS])

    def set_crawl_delay(self, host: str, seconds: float | None) -> None:
        if seconds is None or not seconds > 0:
            return
        self._call("crawl-delay", self._crawl, keys=self._keys(host)[:1],
                   args=[min(float(seconds), MAX_DELAY_SECONDS), IDLE_EXPIRE_SECONDS])

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
        if not self._call("lock", self._redis.set, key, token, nx=True, px=ttl_ms):
            holder = self._call("lock", self._redis.get, key)
            raise SourceHeld(name, _shown(holder) if holder else "another run (just released)")
        stop = threading.Event()

        def renew() -> None:
            while not stop.wait(SOURCE_LOCK_SECONDS / 3):
                try:
                    self._renew(keys=[key], args=[token, ttl_ms])
                except self._errors:
                    pass        # the next gate call fails and stops the run

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
        self._call("mark-hold", script, keys=self._keys(host)[:1],
                   args=[kind, min(float(seconds), MAX_DELAY_SECONDS), json.dumps(set_by, sort_keys=True),
                         IDLE_EXPIRE_SECONDS])

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
