#!/usr/bin/env python3
"""Black-box attack battery for issue 24 of `collection` (written without reading the code).

Run:   .venv/bin/python bench/attacks/attack_issue24.py            # every attack, 2 at a time
       .venv/bin/python bench/attacks/attack_issue24.py -k S0 -k H   # ids starting with S0 or H
       .venv/bin/python bench/attacks/attack_issue24.py --list
       .venv/bin/python bench/attacks/attack_issue24.py -j 1         # one at a time

Each attack runs in its own child process (its own session, its own temp dir, its own redis-server /
fake RESP server / loopback HTTPS publisher) under a hard timeout; a hang is a "broke".  Everything
listens on 127.0.0.1 only; the recipe's host www.example.com is routed to the loopback publisher with
--resolve and --ca-bundle.  Results: a table on stdout and JSON lines in bench/attacks/results.jsonl (not committed).

Verdicts: held (the issue's expectation holds), broke (it does not; the reason says how), error (the
attack could not be carried out, e.g. "error: interface missing" for a flag or command not there yet).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import http.server
import json
import os
import pty
import re
import resource
import select
import shutil
import signal
import socket
import socketserver
import ssl
import stat
import subprocess
import sys
import tempfile
import threading
import time
import traceback

MAIN = os.environ.get("COLLECTION_MAIN", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
PY = os.path.join(MAIN, ".venv", "bin", "python")
CLI = [os.path.join(MAIN, ".venv", "bin", "collection")]
HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "results.jsonl")
HOST = "www.example.com"
TB = "Traceback (most recent call last)"
# Arrival stamps are taken when the publisher thread reads the request line, which can lag the
# wire on a loaded machine; a gap counts as broken only when it is shorter than this share of the
# interval (the breakage the issue reports was 9 ms for a 1 s interval).
GAP_TOLERANCE = 0.9
OTHER_UID_A, OTHER_UID_B, OTHER_GID = 4101, 4102, 4100

ATTACKS: dict[str, dict] = {}


def attack(aid, point, title, expect, timeout=120):
    def deco(fn):
        ATTACKS[aid] = dict(id=aid, point=point, title=title, expect=expect, fn=fn, timeout=timeout)
        return fn
    return deco


class Verdict(Exception):
    def __init__(self, verdict, reason):
        super().__init__(reason)
        self.verdict, self.reason = verdict, reason


def held(reason="ok"):
    raise Verdict("held", reason)


def broke(reason):
    raise Verdict("broke", reason)


def missing(what):
    raise Verdict("error", f"error: interface missing ({what})")


def check(cond, reason_if_broken):
    if not cond:
        broke(reason_if_broken)


# --------------------------------------------------------------------------- process helpers

class R:
    def __init__(self, args, rc, out, err, secs, timed_out):
        self.args, self.rc, self.out, self.err, self.secs, self.timed_out = args, rc, out, err, secs, timed_out

    @property
    def all(self):
        return self.out + "\n" + self.err

    def short(self):
        s = (self.err.strip() or self.out.strip()).splitlines()
        return (s[-1] if s else "")[:160]

    def json(self):
        try:
            return json.loads(self.out)
        except Exception:
            return None


def _dbg(r):
    if os.environ.get("ATK_DEBUG"):
        a = " ".join(x.decode("utf-8", "replace") if isinstance(x, bytes) else x for x in r.args)
        print(f"--- $ {a}\n    rc {r.rc} {r.secs:.1f}s{' TIMEOUT' if r.timed_out else ''}\n    out: {r.out[-600:]!r}\n"
              f"    err: {r.err[-600:]!r}", file=sys.stderr, flush=True)
    return r


def _dec(b):
    return b.decode("utf-8", "replace") if isinstance(b, bytes) else (b or "")


class Ctx:
    def __init__(self, aid):
        self.aid = aid
        self.tmp = tempfile.mkdtemp(prefix=f"atk24-{aid}-")
        os.chmod(self.tmp, 0o755)
        self.cleanups = []
        self.xdg = os.path.join(self.tmp, "xdg")
        os.makedirs(self.xdg, mode=0o700)
        self.home = os.path.join(self.tmp, "home")
        os.makedirs(self.home)
        self._ca = None

    def path(self, *p):
        return os.path.join(self.tmp, *p)

    def env(self, extra=None):
        e = {k: v for k, v in os.environ.items() if not k.startswith("COLLECTION_")}
        e.update(XDG_RUNTIME_DIR=self.xdg, HOME=self.home, LC_ALL="C.UTF-8", PYTHONDONTWRITEBYTECODE="1")
        e.pop("PYTHONPATH", None)
        if extra:
            e.update(extra)
        return e

    def cli(self, *args, timeout=60, env=None, cwd=None, stdin=None, user=None, preexec=None, argv0=None):
        cmd = list(argv0 or CLI) + [a if isinstance(a, (str, bytes)) else str(a) for a in args]
        if user is not None:
            uid, gid = user
            cmd = ["setpriv", f"--reuid={uid}", f"--regid={gid}", f"--groups={OTHER_GID}", "--"] + cmd
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                             env=self.env(env), cwd=cwd or self.tmp, preexec_fn=preexec)
        try:
            out, err = p.communicate(stdin, timeout=timeout)
            to = False
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            to = True
        return _dbg(R(cmd, p.returncode, _dec(out), _dec(err), time.monotonic() - t0, to))

    def spawn(self, *args, env=None, cwd=None, user=None):
        """Start a CLI process; lines of its stderr are stamped as they arrive."""
        cmd = CLI + [str(a) for a in args]
        if user is not None:
            uid, gid = user
            cmd = ["setpriv", f"--reuid={uid}", f"--regid={gid}", f"--groups={OTHER_GID}", "--"] + cmd
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             env=self.env(env), cwd=cwd or self.tmp)
        p.t0 = time.monotonic()
        p.err_lines = []
        p.out_chunks = []

        def rd(stream, sink, stamp):
            for line in iter(stream.readline, b""):
                sink.append((time.monotonic() - p.t0, _dec(line)) if stamp else _dec(line))
        p.threads = [threading.Thread(target=rd, args=(p.stderr, p.err_lines, True), daemon=True),
                     threading.Thread(target=rd, args=(p.stdout, p.out_chunks, False), daemon=True)]
        for t in p.threads:
            t.start()
        self.cleanups.append(lambda: p.poll() is None and p.kill())
        return p

    def finish(self, p, timeout=60):
        try:
            p.wait(timeout=timeout)
            to = False
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            to = True
        for t in p.threads:
            t.join(2)
        return _dbg(R(p.args, p.returncode, "".join(p.out_chunks), "".join(l for _, l in p.err_lines),
                      time.monotonic() - p.t0, to))

    @property
    def ca(self):
        if self._ca is None:
            import trustme
            self._ca = trustme.CA()
            self.ca_file = self.path("ca.pem")
            self._ca.cert_pem.write_to_path(self.ca_file)
            os.chmod(self.ca_file, 0o644)
        return self._ca

    def close(self):
        for c in reversed(self.cleanups):
            try:
                c()
            except Exception:
                pass
        shutil.rmtree(self.tmp, ignore_errors=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_for(cond, timeout, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step)
    return cond()


# --------------------------------------------------------------------------- loopback HTTPS publisher

class Publisher:
    """A real HTTPS origin on 127.0.0.1 with a trustme certificate for www.example.com.

    route(path, n) -> (status, headers, body) where n counts requests for that path so far."""

    def __init__(self, ctx, route=None, delay=0.0):
        self.ctx = ctx
        self.arrivals = []          # (monotonic, path)
        self.counts = {}
        self.lock = threading.Lock()
        self.route = route or self.default_route
        self.delay = delay
        cert = ctx.ca.issue_cert(HOST, "api.example.com")
        sctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        cert.configure_cert(sctx)
        pub = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def parse_request(self):
                with pub.lock:
                    pub.arrivals.append((time.monotonic(), self.raw_requestline.split(b" ")[1].decode("latin-1")
                                         if b" " in self.raw_requestline else "?"))
                return super().parse_request()

            def log_message(self, *a):
                pass

            def do_GET(self):
                with pub.lock:
                    n = pub.counts.get(self.path, 0)
                    pub.counts[self.path] = n + 1
                if pub.delay:
                    time.sleep(pub.delay)
                status, headers, body = pub.route(self.path, n)
                if isinstance(body, str):
                    body = body.encode()
                self.send_response(status)
                for k, v in headers:
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

            def get_request(self):
                sock, addr = self.socket.accept()
                return sctx.wrap_socket(sock, server_side=True, do_handshake_on_connect=True), addr

            def handle_error(self, request, client_address):
                pass

        self.server = S(("127.0.0.1", 0), H)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        ctx.cleanups.append(self.server.shutdown)

    @staticmethod
    def default_route(path, n):
        if path == "/robots.txt":
            return 404, [("Content-Type", "text/plain")], "not found"
        return 200, [("Content-Type", "application/json")], json.dumps({"title": "page " + path})

    def args(self):
        return ["--resolve", f"{HOST}:443:127.0.0.1:{self.port}", "--ca-bundle", self.ctx.ca_file]

    def page_arrivals(self):
        with self.lock:
            return [a for a in self.arrivals if a[1] != "/robots.txt"]

    def all_arrivals(self):
        with self.lock:
            return list(self.arrivals)

    def min_gap(self):
        ts = sorted(t for t, _ in self.all_arrivals())
        gaps = [b - a for a, b in zip(ts, ts[1:])]
        return (min(gaps) if gaps else None), len(ts)


def recipe(name, n=3, interval=1, concurrency=1, retries=0, prefix="/p/", host=HOST, reader="json",
           timeout=20):
    if reader == "json":
        params = [{"name": "reader.family_id", "value": "json.tabular"},
                  {"name": "reader.family_version", "value": "1.0.0"},
                  {"name": "reader.decode_options", "value": "{\"columns\":[{\"name\":\"title\",\"pointer\":\"/title\"}]}"}]
    else:  # html.tabular table mode: a page whose table headers differ is column_mismatch
        params = [{"name": "reader.family_id", "value": "html.tabular"},
                  {"name": "reader.family_version", "value": "1.0.0"},
                  {"name": "reader.decode_options", "value": "{\"table\":{\"columns\":[{\"header\":\"Member\",\"name\":\"member\"},{\"header\":\"Meetings attended\",\"name\":\"meetings_attended\"}],\"selector\":\"table.attendance\"}}"}]
    return {
        "name": name,
        "description": "attack recipe",
        "source_class": "user_url",
        "data_classification": "public",
        "locator": {"kind": "https_url", "display_locator": f"https://{host}/list"},
        "rights_claim": {"claimed_basis": "public_domain_asserted"},
        "connector": {"adapter_id": "public.https.collection@2.0.0", "credential_mode": "none",
                      "origin": f"https://{host}", "parameters": params},
        "limits": {"max_requests": 1 + 3 * n + 10},
        "collection": {
            "discovery": {"kind": "explicit",
                          "members": [{"page_id": f"p{i}", "url": f"https://{host}{prefix}{i}"} for i in range(1, n + 1)],
                          "max_requests": 1},
            "pages": {"allowed_origins": [f"https://{host}"], "max_fetches_per_run": n,
                      "min_interval_seconds": interval, "concurrency": concurrency, "retries": retries,
                      "request_timeout_seconds": timeout, "revisit": {"kind": "never"}},
        },
    }


def dataset(name, sources):
    return {"name": name, "sources": sources}


def write_json(ctx, rel, doc):
    p = ctx.path(rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        json.dump(doc, f, indent=1)
    os.chmod(p, 0o644)
    return p


def fixture_for(sources_pages, status_of=None):
    """A replay fixture for explicit recipes: [(prefix, n)] -> exchanges."""
    ex = []
    for prefix, n in sources_pages:
        for i in range(1, n + 1):
            url = f"https://{HOST}{prefix}{i}"
            st = (status_of or {}).get(url, 200)
            ex.append({"request": {"url": url},
                       "response": {"status": st, "headers": [["Content-Type", "application/json"]],
                                    "body": {"text": json.dumps({"title": url})}}})
    return ex


def current_gen(state):
    try:
        return os.readlink(os.path.join(state, "current"))
    except OSError:
        return None


def read_json(p):
    try:
        with open(p) as f:
            return json.load(f)
    except Exception:
        return None


def find_key(obj, key):
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == key:
                return True, v
            ok, val = find_key(v, key)
            if ok:
                return ok, val
    elif isinstance(obj, list):
        for v in obj:
            ok, val = find_key(v, key)
            if ok:
                return ok, val
    return False, None


def files_text(root):
    """Every regular file under root, decoded, as one string (for leak searches)."""
    out = []
    for dp, dns, fns in os.walk(root):
        for fn in fns:
            p = os.path.join(dp, fn)
            try:
                if stat.S_ISREG(os.lstat(p).st_mode) and os.path.getsize(p) < 50_000_000:
                    with open(p, "rb") as f:
                        out.append(p + "\n" + f.read().decode("utf-8", "replace"))
            except OSError:
                pass
    return "\n".join(out)


def no_tb(r, what="stderr"):
    if TB in r.all:
        tail = r.all[r.all.find(TB):].splitlines()[1:]
        exc = next((l for l in tail if l and not l.startswith(" ")), "?")
        broke(f"a traceback in the {what} (ends: {exc[:160]!r})")
    check(r.rc != 70 and "INTERNAL_ERROR" not in r.all, f"INTERNAL_ERROR (rc {r.rc}): {r.short()}")


def publisher_blamed(state):
    """Any failure recorded against pages in any run record under state (gate faults must not be)."""
    blamed = []
    for dp, dns, fns in os.walk(state):
        for fn in fns:
            if fn in ("run.json", "dataset-run.json"):
                d = read_json(os.path.join(dp, fn))
                ok, f = find_key(d, "failures")
                if ok and isinstance(f, dict):
                    bc = f.get("by_class") or {}
                    if any(isinstance(v, int) and v > 0 for v in bc.values()):
                        blamed.append(f"{fn}: {bc}")
            if fn == "ledger.csv":
                with open(os.path.join(dp, fn), errors="replace") as fh:
                    txt = fh.read()
                if ",failed," in txt:
                    blamed.append("ledger has failed pages")
    return blamed


# --------------------------------------------------------------------------- redis helpers

class RedisServer:
    def __init__(self, ctx, extra=(), tls=False, password=None, acl_user=None, port=None):
        self.ctx, self.extra, self.tls, self.password, self.acl_user = ctx, list(extra), tls, password, acl_user
        self.port = port or free_port()
        self.dir = ctx.path(f"redis-{self.port}")
        os.makedirs(self.dir, exist_ok=True)
        self.proc = None
        if tls:
            cert = ctx.ca.issue_cert("127.0.0.1", "localhost")
            self.cert, self.key = ctx.path("redis.crt"), ctx.path("redis.key")
            cert.cert_chain_pems[0].write_to_path(self.cert)
            cert.private_key_pem.write_to_path(self.key)
        self.start()
        ctx.cleanups.append(self.stop)

    def start(self):
        args = ["redis-server", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", self.dir,
                "--protected-mode", "no"]
        if self.tls:
            args += ["--port", "0", "--tls-port", str(self.port), "--tls-cert-file", self.cert,
                     "--tls-key-file", self.key, "--tls-ca-cert-file", self.ctx.ca_file, "--tls-auth-clients", "no"]
        else:
            args += ["--port", str(self.port)]
        if self.password:
            args += ["--requirepass", self.password]
        args += self.extra
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ok = wait_for(self._ping, 10)
        if not ok:
            raise RuntimeError("redis-server did not start")

    def client(self):
        import redis
        kw = dict(host="127.0.0.1", port=self.port, socket_timeout=3)
        if self.acl_user:
            kw.update(username=self.acl_user[0], password=self.acl_user[1])
        elif self.password:
            kw.update(password=self.password)
        if self.tls:
            kw.update(ssl=True, ssl_ca_certs=self.ctx.ca_file)
        return redis.Redis(**kw)

    def _ping(self):
        try:
            return self.client().ping()
        except Exception as e:
            return "NOAUTH" in str(e) or "WRONGPASS" in str(e)

    def url(self, userinfo=""):
        scheme = "rediss" if self.tls else "redis"
        return f"{scheme}://{userinfo}127.0.0.1:{self.port}/0"

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def restart(self):
        self.stop()
        self.start()


# --- RESP ---------------------------------------------------------------------------------------

class RespReader:
    def __init__(self, sock):
        self.sock, self.buf = sock, b""

    def _fill(self):
        d = self.sock.recv(65536)
        if not d:
            raise EOFError
        self.buf += d

    def line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        ln, self.buf = self.buf.split(b"\r\n", 1)
        return ln

    def exact(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        d, self.buf = self.buf[:n], self.buf[n + 2:]
        return d

    def read(self):
        ln = self.line()
        t, rest = ln[:1], ln[1:]
        if t in (b"+", b"-", b":", b",", b"(", b"#", b"_"):
            return (t.decode(), rest)
        if t in (b"$", b"=", b"!"):
            n = int(rest)
            return (t.decode(), None if n < 0 else self.exact(n))
        if t in (b"*", b"~", b">"):
            n = int(rest)
            return (t.decode(), None if n < 0 else [self.read() for _ in range(n)])
        if t == b"%" or t == b"|":
            n = int(rest)
            return (t.decode(), [(self.read(), self.read()) for _ in range(n)])
        raise ValueError(f"bad RESP {ln[:40]!r}")


def resp_dump(v):
    t, x = v
    if t in ("+", "-", ":", ",", "(", "#", "_"):
        return t.encode() + (x if isinstance(x, bytes) else str(x).encode()) + b"\r\n"
    if t in ("$", "=", "!"):
        return b"$-1\r\n" if x is None else t.encode() + str(len(x)).encode() + b"\r\n" + x + b"\r\n"
    if t in ("*", "~", ">"):
        return b"*-1\r\n" if x is None else t.encode() + str(len(x)).encode() + b"\r\n" + b"".join(resp_dump(e) for e in x)
    if t in ("%", "|"):
        return t.encode() + str(len(x)).encode() + b"\r\n" + b"".join(resp_dump(a) + resp_dump(b) for a, b in x)
    raise ValueError(t)


NUMERIC = re.compile(rb"^-?\d+(\.\d+)?([eE][-+]?\d+)?$")
HANDSHAKE = {b"HELLO", b"AUTH", b"CLIENT", b"PING", b"SELECT", b"SCRIPT", b"INFO", b"ECHO", b"COMMAND", b"READONLY"}
SCRIPTS = {b"EVAL", b"EVALSHA", b"EVAL_RO", b"EVALSHA_RO", b"FCALL", b"FCALL_RO"}


def tamper_numeric(hostile):
    """Keep the reply's shape, replace every number in it with `hostile` (bytes)."""
    def walk(v):
        t, x = v
        if t == ":":
            return (":", hostile) if re.fullmatch(rb"-?\d+", hostile) else ("$", hostile)
        if t == "$" and x is not None and NUMERIC.match(x):
            return ("$", hostile)
        if t == ",":
            return ("$", hostile)
        if t in ("*", "~", ">") and x is not None:
            return (t, [walk(e) for e in x])
        return v
    return walk


class RespProxy:
    """A hostile Redis: a RESP proxy to a real redis-server that rewrites replies.

    mode: 'pass' | 'numeric' (replace numbers, shape kept) | 'whole' (script replies replaced by `value`)
    | 'silent' (accept, never answer) | 'garbage' (answer HTTP) ; `after`: tamperable replies passed first."""

    def __init__(self, ctx, upstream_port=None, mode="pass", value=None, after=0, scripts_only=False, raw_null=False):
        self.mode, self.value, self.after, self.scripts_only = mode, value, after, scripts_only
        self.raw_null = raw_null
        self.upstream_port = upstream_port
        self.seen = 0
        self.commands = []
        self.keys = set()
        self.lock = threading.Lock()
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(64)
        self.port = self.ls.getsockname()[1]
        self.stopped = False
        threading.Thread(target=self._accept, daemon=True).start()
        ctx.cleanups.append(self.stop)

    def url(self, userinfo=""):
        return f"redis://{userinfo}127.0.0.1:{self.port}/0"

    def stop(self):
        self.stopped = True
        try:
            self.ls.close()
        except OSError:
            pass

    def _accept(self):
        while not self.stopped:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        up = None
        try:
            if self.mode == "silent":
                while c.recv(65536):
                    pass
                return
            if self.mode == "garbage":
                c.recv(65536)
                c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi")
                time.sleep(0.5)
                return
            up = socket.create_connection(("127.0.0.1", self.upstream_port))
            cr, ur = RespReader(c), RespReader(up)
            resp3 = False
            while True:
                cmd = cr.read()
                if cmd[0] == "*" and cmd[1] and cmd[1][0][1].upper() == b"HELLO" and len(cmd[1]) > 1 and cmd[1][1][1] == b"3":
                    resp3 = True
                up.sendall(resp_dump(cmd))
                reply = ur.read()
                name = cmd[1][0][1].upper() if cmd[0] == "*" and cmd[1] else b""
                with self.lock:
                    self.commands.append(name)
                    if name in SCRIPTS and len(cmd[1]) > 2:
                        try:
                            nk = int(cmd[1][2][1])
                            for k in cmd[1][3:3 + nk]:
                                self.keys.add(k[1])
                        except Exception:
                            pass
                    tamperable = (name in SCRIPTS) if (self.scripts_only or self.mode == "whole") else (name not in HANDSHAKE)
                    do = False
                    if tamperable and self.mode != "pass" and reply[0] != "-":
                        self.seen += 1
                        do = self.seen > self.after
                if do:
                    if self.mode == "numeric":
                        reply = tamper_numeric(self.value)(reply)
                    elif self.mode == "whole":
                        reply = self.value
                        # a null as the client's negotiated protocol writes it, unless raw_null asks for confusion
                        if resp3 and reply == ("$", None) and not self.raw_null:
                            reply = ("_", b"")
                c.sendall(resp_dump(reply))
        except Exception:
            pass
        finally:
            for s in (c, up):
                try:
                    s and s.close()
                except OSError:
                    pass

    def script_calls(self):
        with self.lock:
            return sum(1 for n in self.commands if n in SCRIPTS)


# =========================================================================== shared attack bodies

def live_run_args(pub, state, rec_path, gate=None, extra=()):
    a = ["run", rec_path, "--state", state] + pub.args()
    if gate is not None:
        a += ["--gate", gate]
    return a + list(extra)


SECRET_FORMS = {
    # id: (userinfo/url builder, fragments that must never appear)
    "userinfo": (lambda host: f"redis://:Zq7PassWd1@{host}/0", ["Zq7PassWd1"]),
    "userpass": (lambda host: f"redis://alice:Kx4PassWd2@{host}/0", ["Kx4PassWd2"]),
    "raw_at": (lambda host: f"redis://:Hx9@Yk8PassWd3@{host}/0", ["Hx9@", "Yk8PassWd3", "Hx9@Yk8"]),
    "pct": (lambda host: f"redis://:Vb5%40Nm2PassWd4@{host}/0", ["Vb5%40Nm2", "Vb5@Nm2", "Nm2PassWd4"]),
    "query": (lambda host: f"redis://{host}/0?password=Qw3PassWd5", ["Qw3PassWd5"]),
    "user_query": (lambda host: f"redis://{host}/0?username=bob&password=Jt6PassWd6", ["Jt6PassWd6"]),
}


def leak_check(texts, frags):
    for name, t in texts.items():
        for f in frags:
            if f in t:
                i = t.find(f)
                broke(f"secret fragment {f!r} in {name}: ...{t[max(0, i - 60):i + 30]!r}")


def secret_unreachable(ctx, form, hostpart, json_flag=False, log_json=False):
    """A gate URL with a credential that cannot be used (nothing listens / bad URL)."""
    build, frags = SECRET_FORMS[form]
    url = build(hostpart)
    pub = Publisher(ctx)
    rp = write_json(ctx, "r.json", recipe("secret_probe", n=2))
    st = ctx.path("state")
    extra = (["--json"] if json_flag else []) + (["--log-json"] if log_json else [])
    r = ctx.cli(*live_run_args(pub, st, rp, gate=url, extra=extra), timeout=60)
    r2 = ctx.cli(*live_run_args(pub, ctx.path("state2"), rp, extra=extra), timeout=60,
                 env={"COLLECTION_GATE": url})
    texts = {"stderr": r.err, "stdout": r.out, "state files": files_text(ctx.tmp) if os.path.exists(st) else "",
             "stderr (COLLECTION_GATE)": r2.err, "stdout (COLLECTION_GATE)": r2.out}
    check(not r.timed_out, "run hung")
    leak_check(texts, frags)
    no_tb(r)
    no_tb(r2)
    check(r.rc in (1, 2), f"exit {r.rc}, expected a refusal (1) or usage error (2)")
    if r.rc == 1:
        check(re.search(r"\b[A-Z][A-Z_]{3,}\b", r.err) is not None, f"no code in stderr: {r.short()}")
    check(len(pub.page_arrivals()) == 0, "pages were requested although the gate is unusable")
    held(f"rc {r.rc}, no fragment of the secret anywhere; {r.short()[:90]}")


def with_real_gate_success(ctx, url_of, frags, redis_kw=None, dataset_run=True):
    """A run that succeeds through a credentialed gate: the secret must be nowhere."""
    red = RedisServer(ctx, **(redis_kw or {}))
    url = url_of(red)
    pub = Publisher(ctx)
    src = recipe("decisions", n=2)
    rp = write_json(ctx, "ds.json", dataset("secret_ds", [src])) if dataset_run else write_json(ctx, "r.json", src)
    st = ctx.path("state")
    r = ctx.cli(*live_run_args(pub, st, rp, gate=url, extra=["--json", "--log-json"]), timeout=90)
    s1 = ctx.cli("status", st, timeout=30)
    s2 = ctx.cli("status", st, "--json", timeout=30)
    texts = {"stderr/--log-json": r.err, "stdout --json": r.out, "state files (run.json, dataset-run.json)": files_text(st),
             "status": s1.all, "status --json": s2.all}
    leak_check(texts, frags)
    no_tb(r)
    check(r.rc == 0, f"run through the credentialed gate failed: rc {r.rc}: {r.short()}")
    check(len(pub.page_arrivals()) >= 2, "pages not fetched")
    return r, red, pub, st


# =========================================================================== point 1: secrets

for _i, (_form, _hp) in enumerate([("userinfo", "127.0.0.1:99999"), ("userpass", "127.0.0.1:99999"),
                                   ("raw_at", "127.0.0.1:99999"), ("pct", "127.0.0.1:99999"),
                                   ("query", "127.0.0.1:99999"), ("userinfo", "[::1"),
                                   ("userpass", "[127.0.0.1"), ("raw_at", "[::1"),
                                   ("userinfo", "127.0.0.1:notaport"), ("query", "[::1")]):
    def _mk(form=_form, hp=_hp):
        return lambda ctx: secret_unreachable(ctx, form, hp, json_flag=True, log_json=True)
    attack(f"S{_i + 1:02d}", 1, f"gate URL {_form} credential with a bad host/port {_hp!r}",
           "password never printed (stderr, --json, --log-json, COLLECTION_GATE); coded refusal; no request",
           timeout=150)(_mk())


@attack("S11", 1, "userinfo password, closed port (gate down)",
        "GATE_UNAVAILABLE, password absent from stderr/--json/--log-json")
def s11(ctx):
    secret_unreachable(ctx, "userinfo", f"127.0.0.1:{free_port()}", json_flag=True, log_json=True)


@attack("S12", 1, "raw '@' in the password, closed port",
        "no part of the password printed")
def s12(ctx):
    secret_unreachable(ctx, "raw_at", f"127.0.0.1:{free_port()}", json_flag=True, log_json=True)


@attack("S13", 1, "?password= against a real Redis without auth: run (dataset)",
        "password shown as *** or refused; never in --json, run.json, dataset-run.json, status, logs")
def s13(ctx):
    red = RedisServer(ctx)
    pub = Publisher(ctx)
    rp = write_json(ctx, "ds.json", dataset("q_ds", [recipe("decisions", n=2)]))
    st = ctx.path("state")
    r = ctx.cli(*live_run_args(pub, st, rp, gate=red.url() + "?password=Qw3PassWd5", extra=["--json", "--log-json"]))
    s = ctx.cli("status", st)
    sj = ctx.cli("status", st, "--json")
    leak_check({"stderr": r.err, "stdout": r.out, "state files": files_text(st), "status": s.all,
                "status --json": sj.all}, ["Qw3PassWd5"])
    no_tb(r)
    held(f"rc {r.rc}; no leak ({r.short()[:80]})")


@attack("S14", 1, "unknown query parameter in the gate URL (real Redis)",
        "refused by name, value not echoed, nothing requested")
def s14(ctx):
    red = RedisServer(ctx)
    pub = Publisher(ctx)
    rp = write_json(ctx, "r.json", recipe("unknown_q", n=2))
    r = ctx.cli(*live_run_args(pub, ctx.path("state"), rp, gate=red.url() + "?frobnicate=Pz8Value7&db=0", extra=["--json"]))
    leak_check({"stderr": r.err, "stdout": r.out}, ["Pz8Value7"])
    no_tb(r)
    check(r.rc in (1, 2), f"unknown parameter accepted (rc {r.rc})")
    check("frobnicate" in r.all, f"refusal does not name the parameter: {r.short()}")
    check(not pub.page_arrivals(), "pages requested")
    held(f"rc {r.rc}: {r.short()[:90]}")


@attack("S15", 1, "requirepass Redis, right password in userinfo, dataset run",
        "run succeeds; the password is in no output, record, status or log")
def s15(ctx):
    r, *_ = with_real_gate_success(ctx, lambda red: red.url(":Rr5GoodPass8@"), ["Rr5GoodPass8"],
                                   redis_kw=dict(password="Rr5GoodPass8"))
    held("ran through requirepass; no leak")


@attack("S16", 1, "requirepass Redis, wrong password",
        "GATE_UNAVAILABLE (exit 1), neither password printed, no traceback, quick")
def s16(ctx):
    red = RedisServer(ctx, password="Tt1RealPass9")
    pub = Publisher(ctx)
    rp = write_json(ctx, "r.json", recipe("wrongpw", n=2))
    r = ctx.cli(*live_run_args(pub, ctx.path("state"), rp, gate=red.url(":Ww2BadPass0@"), extra=["--json", "--log-json"]))
    leak_check({"stderr": r.err, "stdout": r.out}, ["Ww2BadPass0", "Tt1RealPass9"])
    no_tb(r)
    check(r.rc == 1 and "GATE_UNAVAILABLE" in r.all, f"rc {r.rc}: {r.short()}")
    check(not pub.page_arrivals(), "pages requested")
    check(r.secs < 30, f"took {r.secs:.0f}s")
    held(f"GATE_UNAVAILABLE in {r.secs:.1f}s, no leak")


@attack("S17", 1, "ACL user (default user off): alice:pass@",
        "run succeeds as the ACL user; password nowhere")
def s17(ctx):
    acl = ["--user", "default", "off", "--user", "alice", "on", ">Aa3AclPass1", "~*", "&*", "+@all"]
    with_real_gate_success(ctx, lambda red: red.url("alice:Aa3AclPass1@"), ["Aa3AclPass1"],
                           redis_kw=dict(extra=acl, acl_user=("alice", "Aa3AclPass1")))
    held("ran as ACL user alice; no leak")


@attack("S18", 1, "ACL user without scripting/keys rights",
        "GATE_UNAVAILABLE, no traceback, password nowhere, no page requested")
def s18(ctx):
    acl = ["--user", "default", "off", "--user", "carol", "on", ">Cc4AclPass2", "+@connection", "+ping"]
    red = RedisServer(ctx, extra=acl, acl_user=("carol", "Cc4AclPass2"))
    pub = Publisher(ctx)
    rp = write_json(ctx, "r.json", recipe("aclnope", n=2))
    r = ctx.cli(*live_run_args(pub, ctx.path("state"), rp, gate=red.url("carol:Cc4AclPass2@"), extra=["--json"]))
    leak_check({"stderr": r.err, "stdout": r.out}, ["Cc4AclPass2"])
    no_tb(r)
    check(r.rc == 1 and "GATE_UNAVAILABLE" in r.all, f"rc {r.rc}: {r.short()}")
    check(not pub.page_arrivals(), "pages requested")
    held("GATE_UNAVAILABLE, no leak")


def _tls_gate_attempts(ctx, red, userinfo, pub):
    """Try the ways the CA for rediss:// might be given; returns (r, how) of the first that ran."""
    h = ctx.cli("run", "--help").out
    flags = re.findall(r"(--gate[-\w]*ca[-\w]*|--redis[-\w]*ca[-\w]*)", h)
    tries = []
    for f in dict.fromkeys(flags):
        tries.append((f, [f, ctx.ca_file], red.url(userinfo)))
    tries.append(("--ca-bundle", [], red.url(userinfo)))
    tries.append(("?ssl_ca_certs=", [], red.url(userinfo) + "?ssl_ca_certs=" + ctx.ca_file))
    tries.append(("?ca=", [], red.url(userinfo) + "?ca=" + ctx.ca_file))
    rp = write_json(ctx, "r.json", recipe("tls_gate", n=2))
    last = None
    for i, (how, extra, url) in enumerate(tries):
        r = ctx.cli(*live_run_args(pub, ctx.path(f"state{i}"), rp, gate=url, extra=extra + ["--json"]), timeout=60)
        no_tb(r)
        if r.rc == 0:
            return r, how, flags
        last = (r, how)
    return last[0], None, flags


@attack("S19", 1, "rediss:// to a real TLS redis-server with requirepass (CA given)",
        "runs over TLS; password nowhere", timeout=240)
def s19(ctx):
    _ = ctx.ca
    red = RedisServer(ctx, tls=True, password="Ss7TlsPass3")
    pub = Publisher(ctx)
    r, how, flags = _tls_gate_attempts(ctx, red, ":Ss7TlsPass3@", pub)
    leak_check({"stderr": r.err, "stdout": r.out}, ["Ss7TlsPass3"])
    for d in os.listdir(ctx.tmp):
        if d.startswith("state"):
            leak_check({d: files_text(ctx.path(d))}, ["Ss7TlsPass3"])
    if how is None:
        if not flags:
            missing(f"no gate CA option in run --help and rediss:// with --ca-bundle failed: {r.short()}")
        broke(f"rediss:// failed with every CA form: {r.short()}")
    held(f"rediss:// ran (CA via {how})")


@attack("S20", 1, "rediss:// to a TLS redis whose certificate the CA given does not sign",
        "GATE_UNAVAILABLE, no traceback, no request")
def s20(ctx):
    import trustme
    _ = ctx.ca
    red = RedisServer(ctx, tls=True)
    other = trustme.CA()
    other_ca = ctx.path("other-ca.pem")
    other.cert_pem.write_to_path(other_ca)
    pub = Publisher(ctx)
    rp = write_json(ctx, "r.json", recipe("tls_bad", n=2))
    h = ctx.cli("run", "--help").out
    flags = re.findall(r"(--gate[-\w]*ca[-\w]*)", h)
    extra = [flags[0], other_ca] if flags else []
    r = ctx.cli(*live_run_args(pub, ctx.path("state"), rp, gate=red.url() + ("" if flags else ""), extra=extra))
    no_tb(r)
    if not flags:
        # without a gate CA option the publisher's CA (which signs the redis cert here) would be used;
        # so this attack is only meaningful once a dedicated option exists
        missing("no gate CA option in run --help")
    check(r.rc == 1 and "GATE_UNAVAILABLE" in r.all, f"rc {r.rc}: {r.short()}")
    check(not pub.page_arrivals(), "pages requested")
    held("untrusted TLS gate refused")


@attack("S21", 1, "password gate, Redis killed mid-run (error raised while requests were made)",
        "GATE_UNAVAILABLE message and --json do not carry the password; no traceback", timeout=150)
def s21(ctx):
    red = RedisServer(ctx, password="Kk8MidPass4")
    pub = Publisher(ctx)
    rp = write_json(ctx, "r.json", recipe("midkill", n=8))
    p = ctx.spawn(*live_run_args(pub, ctx.path("state"), rp, gate=red.url(":Kk8MidPass4@"), extra=["--json", "--log-json"]))
    wait_for(lambda: len(pub.page_arrivals()) >= 2, 40)
    red.stop()
    r = ctx.finish(p, 90)
    check(not r.timed_out, "run did not end after Redis died")
    leak_check({"stderr": r.err, "stdout": r.out, "state": files_text(ctx.path("state")) if os.path.exists(ctx.path("state")) else ""},
               ["Kk8MidPass4"])
    no_tb(r)
    check("GATE_UNAVAILABLE" in r.all, f"no GATE_UNAVAILABLE: rc {r.rc} {r.short()}")
    held(f"rc {r.rc}, no leak")


@attack("S22", 1, "`collection gate show` / `gate clear` / `status --gate` with a credentialed gate URL (reachable and not)",
        "the password appears in none of their outputs (text and --json)")
def s22(ctx):
    red = RedisServer(ctx, password="Gg9ShowPass5")
    h = ctx.cli("gate", "--help")
    if "No such command" in h.all:
        missing("`collection gate` command")
    outs = {}
    for label, url in (("reachable", red.url(":Gg9ShowPass5@")), ("closed port", f"redis://:Gg9ShowPass5@127.0.0.1:{free_port()}/0"),
                       ("bad port", "redis://:Gg9ShowPass5@127.0.0.1:99999/0"), ("wrong password", red.url(":Gg9ShowPass5x@"))):
        for args in (["gate", "show", "--gate", url], ["gate", "show", "--gate", url, "--json"],
                     ["gate", "clear", f"https://{HOST}", "--gate", url], ["status", ctx.tmp, "--gate", url]):
            r = ctx.cli(*args, timeout=40)
            no_tb(r)
            outs[f"{' '.join(args[:2])} ({label})"] = r.all
    leak_check(outs, ["Gg9ShowPass5"])
    held(f"{len(outs)} invocations, no leak")


# =========================================================================== point 2: gate faults

def hostile_gate_run(ctx, mode, value, after=0, n=3, scripts_only=False, expect_nothing=True, as_dataset=False,
                     raw_null=False, max_secs=45):
    """A good run first (through a pass-through proxy), then one through the hostile proxy."""
    red = RedisServer(ctx)
    good = RespProxy(ctx, red.port, mode="pass")
    pub = Publisher(ctx)
    if as_dataset:
        rp = write_json(ctx, "r.json", dataset("hostile_ds", [recipe("hostile", n=n)]))
    else:
        rp = write_json(ctx, "r.json", recipe("hostile", n=n))
    st_top = ctx.path("state")
    st = os.path.join(st_top, "hostile") if as_dataset else st_top
    r0 = ctx.cli(*live_run_args(pub, st_top, rp, gate=good.url()), timeout=60)
    if r0.rc != 0:
        raise Verdict("error", f"error: the control run through a pass-through proxy failed: rc {r0.rc} {r0.short()}")
    gen0 = current_gen(st)
    red.client().flushall()
    bad = RespProxy(ctx, red.port, mode=mode, value=value, after=after, scripts_only=scripts_only, raw_null=raw_null)
    before = len(pub.page_arrivals())
    before_all = len(pub.all_arrivals())
    # a run with work: the first run's pages are fetched ("never" revisit), so use --resync
    r = ctx.cli(*live_run_args(pub, st_top, rp, gate=bad.url(), extra=["--resync", "--log-json"]), timeout=max(60, max_secs + 15))
    if as_dataset:
        bl = publisher_blamed(os.path.join(st_top, "dataset-run.json")) if False else []
        d = read_json(os.path.join(st_top, "dataset-run.json")) or {}
        txt = json.dumps(d)
        check("robots_disallowed" not in txt, "dataset-run.json blames the publisher (robots_disallowed)")
    fetched = len(pub.page_arrivals()) - before
    any_req = len(pub.all_arrivals()) - before_all
    check(not r.timed_out, f"hung (>{max(60, max_secs + 15)} s); {bad.script_calls()} script calls seen")
    no_tb(r)
    check("robots_disallowed" not in r.all, "gate fault reported as robots_disallowed")
    calls = bad.script_calls()
    check(calls < 2000, f"{calls} script calls: spinning")
    check("GATE_UNAVAILABLE" in r.all and r.rc != 0, f"rc {r.rc} without GATE_UNAVAILABLE: {r.short()}")
    gen1 = current_gen(st)
    if fetched == 0:
        check(gen1 == gen0, f"nothing fetched but a new generation became current ({gen0} -> {gen1})")
    else:
        if gen1 != gen0:
            bl = publisher_blamed(os.path.join(st, gen1 and "current" or ""))
            check(not bl, f"publisher blamed in the new generation: {bl}")
    m = re.search(r"(\d+) requests?", r.err)
    if re.search(r"nothing was requested|no requests? (was|were) made|\b0 requests", r.err) and any_req > 0:
        broke(f"message says nothing was requested, publisher saw {any_req} requests ({fetched} pages)")
    check(r.secs < max_secs, f"run took {r.secs:.0f}s")
    return r, fetched, calls


HOSTILE = [
    ("F01", "numeric", b"nan", "every number the gate returns is 'nan'"),
    ("F02", "numeric", b"1e300", "every number is 1e300"),
    ("F03", "numeric", b"-5", "every number is -5 (a negative wait)"),
    ("F04", "numeric", b"inf", "every number is 'inf' (an infinite wait)"),
    ("F05", "numeric", b"12abc", "a malformed integer"),
    ("F06", "numeric", b"-inf", "every number is -inf"),
    ("F07", "numeric", b"99999999999999999999999999999", "an integer past every bound"),
    ("F08", "whole", ("$", b"granted"), "script reply replaced by a plain string"),
    ("F09", "whole", ("*", [("*", [(":", 1)]), ("%", [])]) if False else ("*", [("*", [(":", 1)]), ("$", None), ("+", b"x")]),
     "script reply replaced by a nested array of wrong types"),
    ("F10", "whole", ("-", b"WRONGTYPE Operation against a key holding the wrong kind of value"),
     "every script call answers WRONGTYPE"),
    ("F11", "whole", ("$", None), "every script call answers nil"),
    ("F12", "whole", ("*", []), "every script call answers an empty array"),
]
for _aid, _mode, _val, _what in HOSTILE:
    def _mk(mode=_mode, val=_val):
        def fn(ctx):
            r, fetched, calls = hostile_gate_run(ctx, mode, val)
            held(f"GATE_UNAVAILABLE rc {r.rc} in {r.secs:.1f}s, {fetched} pages fetched, {calls} script calls")
        return fn
    attack(_aid, 2, f"hostile fake RESP gate: {_what}",
           "GATE_UNAVAILABLE, no traceback, no robots_disallowed, previous generation kept, no spin, quick",
           timeout=150)(_mk())

for _aid, _val, _after in [("F13", b"nan", 4), ("F14", b"-5", 6), ("F15", b"inf", 4)]:
    def _mk(val=_val, after=_after):
        def fn(ctx):
            r, fetched, calls = hostile_gate_run(ctx, "numeric", val, after=after, n=6)
            held(f"mid-run fault: GATE_UNAVAILABLE rc {r.rc}, {fetched} fetched, truthful")
        return fn
    attack(_aid, 2, f"hostile gate mid-run: numbers become {_val.decode()} after {_after} good replies",
           "GATE_UNAVAILABLE; pages not fetched stay pending; nothing blamed on the publisher; count truthful",
           timeout=150)(_mk())


@attack("F27", 2, "dataset run through a hostile gate answering 'nan'",
        "GATE_UNAVAILABLE; dataset-run.json and the source's record blame nothing on the publisher", timeout=150)
def f27(ctx):
    r, fetched, calls = hostile_gate_run(ctx, "numeric", b"nan", as_dataset=True)
    held(f"GATE_UNAVAILABLE rc {r.rc}")


@attack("F28", 2, "dataset run, hostile gate turns -5 mid-run (after 6 good replies)",
        "GATE_UNAVAILABLE, no spin, no traceback, nothing blamed on the publisher", timeout=150)
def f28(ctx):
    r, fetched, calls = hostile_gate_run(ctx, "numeric", b"-5", after=6, n=6, as_dataset=True)
    held(f"GATE_UNAVAILABLE rc {r.rc}, {fetched} fetched, {calls} script calls")


@attack("F29", 2, "protocol confusion: a RESP2 null ($-1) on the RESP3 connection the client negotiated",
        "GATE_UNAVAILABLE within a bounded time (< 90 s), no traceback, nothing blamed", timeout=200)
def f29(ctx):
    r, fetched, calls = hostile_gate_run(ctx, "whole", ("$", None), raw_null=True, max_secs=90)
    held(f"GATE_UNAVAILABLE rc {r.rc} in {r.secs:.0f}s")


@attack("F16", 2, "fake Redis that accepts and never answers", "GATE_UNAVAILABLE within a bounded time, no request")
def f16(ctx):
    bad = RespProxy(ctx, mode="silent")
    pub = Publisher(ctx)
    rp = write_json(ctx, "r.json", recipe("silent", n=2))
    r = ctx.cli(*live_run_args(pub, ctx.path("state"), rp, gate=bad.url()), timeout=90)
    check(not r.timed_out, "hung > 90 s on a silent gate")
    no_tb(r)
    check(r.rc == 1 and "GATE_UNAVAILABLE" in r.all, f"rc {r.rc}: {r.short()}")
    check(not pub.page_arrivals(), "pages requested")
    held(f"GATE_UNAVAILABLE after {r.secs:.1f}s")


@attack("F17", 2, "fake Redis that speaks HTTP", "GATE_UNAVAILABLE, no traceback, no request")
def f17(ctx):
    bad = RespProxy(ctx, mode="garbage")
    pub = Publisher(ctx)
    rp = write_json(ctx, "r.json", recipe("garbage", n=2))
    r = ctx.cli(*live_run_args(pub, ctx.path("state"), rp, gate=bad.url()), timeout=90)
    check(not r.timed_out, "hung")
    no_tb(r)
    check(r.rc == 1 and "GATE_UNAVAILABLE" in r.all, f"rc {r.rc}: {r.short()}")
    check(not pub.page_arrivals(), "pages requested")
    held("GATE_UNAVAILABLE")


def real_redis_tamper(ctx, tamper):
    red = RedisServer(ctx)
    prox = RespProxy(ctx, red.port, mode="pass")
    pub = Publisher(ctx)
    rp = write_json(ctx, "r.json", recipe("tampered", n=3))
    st = ctx.path("state")
    r0 = ctx.cli(*live_run_args(pub, st, rp, gate=prox.url()), timeout=60)
    if r0.rc != 0:
        raise Verdict("error", f"error: control run failed rc {r0.rc}: {r0.short()}")
    c = red.client()
    keys = set(c.keys("*")) | prox.keys
    gate_keys = [k for k in keys if b"gate" in k or b"source" in k or b"lock" in k]
    if not gate_keys:
        raise Verdict("error", "error: no gate keys found in Redis after a run")
    desc = tamper(c, gate_keys)
    gen0 = current_gen(st)
    before = len(pub.all_arrivals())
    r = ctx.cli(*live_run_args(pub, st, rp, gate=red.url(), extra=["--resync"]), timeout=60)
    check(not r.timed_out, "hung")
    no_tb(r)
    check("robots_disallowed" not in r.all, "tampered record reported as robots_disallowed")
    ok_gate = r.rc == 1 and "GATE_UNAVAILABLE" in r.all
    if not ok_gate:
        # a clean success is acceptable only if the politeness floor held and nothing was blamed
        mg, _ = pub.min_gap()
        check(r.rc == 0 and not publisher_blamed(os.path.join(st, "current")) and (mg is None or mg >= GAP_TOLERANCE),
              f"rc {r.rc}, not GATE_UNAVAILABLE: {r.short()}")
        return f"{desc}: clean run (rc 0, floor held), not GATE_UNAVAILABLE"
    check(current_gen(st) == gen0 or len(pub.all_arrivals()) > before, "new generation with nothing fetched")
    return f"{desc}: GATE_UNAVAILABLE"


def _hset_all(value):
    def t(c, keys):
        n = 0
        for k in keys:
            ty = c.type(k)
            if ty == b"hash":
                for f in c.hkeys(k):
                    c.hset(k, f, value)
                    n += 1
            elif ty == b"string":
                c.set(k, value, keepttl=True)
                n += 1
            elif ty == b"zset":
                for m in c.zrange(k, 0, -1):
                    c.zadd(k, {m: float("inf") if value == b"inf" else -1e300})
                    n += 1
        if n == 0:
            raise Verdict("error", f"error: nothing to tamper in {keys}")
        return f"{n} fields set to {value!r}"
    return t


for _aid, _v in [("F18", b"nan"), ("F19", b"1e300"), ("F20", b"-5"), ("F21", b"not-a-number"), ("F22", b"inf")]:
    def _mk(v=_v):
        return lambda ctx: held(real_redis_tamper(ctx, _hset_all(v)))
    attack(_aid, 2, f"real Redis: every field of the tool's gate keys set to {_v.decode()!r}",
           "GATE_UNAVAILABLE (or a clean run that keeps the floor); never robots_disallowed / traceback",
           timeout=150)(_mk())


@attack("F23", 2, "real Redis: the tool's keys replaced by keys of the wrong type (WRONGTYPE)",
        "GATE_UNAVAILABLE, no traceback, nothing blamed on the publisher", timeout=150)
def f23(ctx):
    def t(c, keys):
        for k in keys:
            c.delete(k)
            c.rpush(k, "x", "y")
        return f"{len(keys)} keys made lists"
    held(real_redis_tamper(ctx, t))


@attack("F24", 2, "real Redis: extra unknown members planted in the tool's hashes",
        "GATE_UNAVAILABLE or clean; never robots_disallowed", timeout=150)
def f24(ctx):
    def t(c, keys):
        n = 0
        for k in keys:
            if c.type(k) == b"hash":
                c.hset(k, "evil", "nan")
                c.hset(k, "pid", "-1")
                n += 1
        if not n:
            raise Verdict("error", "error: no hash keys")
        return f"{n} hashes got members"
    held(real_redis_tamper(ctx, t))


@attack("F25", 2, "Redis killed mid-run (no password)",
        "GATE_UNAVAILABLE when in-flight requests end; no traceback; count of requests truthful; ends quickly",
        timeout=150)
def f25(ctx):
    red = RedisServer(ctx)
    pub = Publisher(ctx)
    rp = write_json(ctx, "r.json", recipe("killed", n=8))
    st = ctx.path("state")
    p = ctx.spawn(*live_run_args(pub, st, rp, gate=red.url()))
    wait_for(lambda: len(pub.page_arrivals()) >= 2, 40)
    t_kill = time.monotonic()
    red.stop()
    r = ctx.finish(p, 90)
    check(not r.timed_out, "run did not end")
    no_tb(r)
    check("GATE_UNAVAILABLE" in r.all, f"rc {r.rc}: {r.short()}")
    fetched = len(pub.page_arrivals())
    if re.search(r"nothing was requested|no requests? (was|were) made|\b0 requests", r.err):
        broke(f"message says nothing was requested; publisher saw {fetched} page requests")
    nums = [int(x) for x in re.findall(r"(\d+) (?:page )?requests?", r.err)]
    ended = time.monotonic() - t_kill
    check(ended < 40, f"took {ended:.0f}s after the kill to end")
    held(f"GATE_UNAVAILABLE {ended:.1f}s after the kill; message numbers {nums}, publisher saw {fetched}")


@attack("F26", 2, "local gate record overwritten with junk bytes",
        "GATE_UNAVAILABLE (or clean run keeping the floor); never robots_disallowed or traceback")
def f26(ctx):
    gd = ctx.path("gate")
    os.makedirs(gd, mode=0o700)
    pub = Publisher(ctx)
    rp = write_json(ctx, "r.json", recipe("localjunk", n=2))
    st = ctx.path("state")
    r0 = ctx.cli(*live_run_args(pub, st, rp, gate="local:" + gd))
    if r0.rc != 0:
        raise Verdict("error", f"error: control run rc {r0.rc}: {r0.short()}")
    recs = [f for f in os.listdir(gd) if os.path.isfile(os.path.join(gd, f))]
    if not recs:
        raise Verdict("error", "error: no record file in the local gate dir")
    for f in recs:
        with open(os.path.join(gd, f), "wb") as fh:
            fh.write(b'{"last_start": NaN, "gap": -1e309, "leases": "x"}\x00\xff')
    r = ctx.cli(*live_run_args(pub, st, rp, gate="local:" + gd, extra=["--resync"]))
    no_tb(r)
    check("robots_disallowed" not in r.all, "reported as robots_disallowed")
    if r.rc == 1 and "GATE_UNAVAILABLE" in r.all:
        held("GATE_UNAVAILABLE")
    mg, _ = pub.min_gap()
    check(r.rc == 0 and (mg is None or mg >= GAP_TOLERANCE), f"rc {r.rc}: {r.short()}")
    held(f"clean run after junk record (min gap {mg:.3f}s)")


# =========================================================================== point 3: key loss

def fleet_key_loss(ctx, nproc, event, n=7, interval=1, gate_kind="redis"):
    red = RedisServer(ctx) if gate_kind == "redis" else None
    gd = ctx.path("gate")
    if gate_kind == "local":
        os.makedirs(gd, mode=0o700)
    gate = red.url() if red else "local:" + gd
    pub = Publisher(ctx)
    procs = []
    for i in range(nproc):
        rp = write_json(ctx, f"r{i}.json", recipe(f"fleet_{i}", n=n, interval=interval, prefix=f"/s{i}/"))
        procs.append(ctx.spawn(*live_run_args(pub, ctx.path(f"state{i}"), rp, gate=gate)))
    wait_for(lambda: len(pub.all_arrivals()) >= 4, 60)
    t_evt = time.monotonic()
    desc = event(red, gd)
    rs = [ctx.finish(p, 120) for p in procs]
    for r in rs:
        check(not r.timed_out, "a process hung")
        no_tb(r)
    ts = sorted(t for t, _ in pub.all_arrivals())
    gaps = [(b - a, a) for a, b in zip(ts, ts[1:])]
    after = [g for g, a in gaps if a >= t_evt - 3 * interval]
    mg = min(g for g, _ in gaps)
    rcs = [r.rc for r in rs]
    check(len(ts) >= 6, f"only {len(ts)} arrivals (rcs {rcs}: {rs[0].short()})")
    check(mg >= GAP_TOLERANCE * interval,
          f"{desc}: smallest gap {mg * 1000:.0f} ms < interval {interval}s (around the event: "
          f"{min(after) * 1000 if after else float('nan'):.0f} ms); rcs {rcs}")
    check(all(rc in (0, 1) for rc in rcs), f"exit codes {rcs}")
    for r in rs:
        if r.rc == 1:
            check("GATE_UNAVAILABLE" in r.all, f"rc 1 without GATE_UNAVAILABLE: {r.short()}")
    held(f"{desc}: {len(ts)} arrivals, smallest gap {mg:.3f}s, rcs {rcs}")


def _flush(red, gd):
    red.client().flushall()
    return "FLUSHALL"


def _restart(red, gd):
    red.restart()
    return "restart without persistence"


def _rm_local_record(red, gd):
    n = 0
    for f in os.listdir(gd):
        p = os.path.join(gd, f)
        if not f.startswith(".") and os.path.isfile(p) and not os.path.islink(p):
            os.unlink(p)
            n += 1
    return f"{n} per-origin records removed"


def _rm_local(red, gd):
    n = 0
    for f in os.listdir(gd):
        p = os.path.join(gd, f)
        if os.path.isfile(p) and not os.path.islink(p):
            os.unlink(p)
            n += 1
    return f"{n} local records removed"


attack("K01", 3, "Redis FLUSHALL mid-run, 2 processes on one origin",
       "every pair of arrivals at the publisher >= the interval", timeout=200)(lambda ctx: fleet_key_loss(ctx, 2, _flush))
attack("K02", 3, "Redis FLUSHALL mid-run, 3 processes on one origin",
       "every pair of arrivals >= the interval", timeout=200)(lambda ctx: fleet_key_loss(ctx, 3, _flush))
attack("K03", 3, "Redis restarted empty mid-run, 2 processes",
       "every pair of arrivals >= the interval (runs may end GATE_UNAVAILABLE)", timeout=200)(lambda ctx: fleet_key_loss(ctx, 2, _restart))
attack("K04", 3, "Redis restarted empty mid-run, 3 processes, interval 2 s",
       "every pair of arrivals >= 2 s", timeout=240)(lambda ctx: fleet_key_loss(ctx, 3, _restart, n=5, interval=2))
attack("K11", 3, "local gate: every file of the gate directory removed between two sequential runs (a reboot)",
       "the second run's first request >= 5 s after the first run's last one",
       timeout=150)(lambda ctx: k07(ctx, everything=True))
attack("K05", 3, "local gate records deleted mid-run, 2 processes",
       "every pair of arrivals >= the interval", timeout=200)(lambda ctx: fleet_key_loss(ctx, 2, _rm_local, gate_kind="local"))


def _flush_storm(red, gd):
    c = red.client()
    n = 0
    end = time.monotonic() + 6
    while time.monotonic() < end:
        c.flushall()
        n += 1
        time.sleep(0.25)
    return f"{n} FLUSHALLs every 250 ms"


def _restart_twice(red, gd):
    red.restart()
    time.sleep(1.5)
    red.restart()
    return "two restarts 1.5 s apart"


attack("K08", 3, "a storm of FLUSHALLs (every 250 ms for 6 s) under 2 processes",
       "every pair of arrivals >= the interval", timeout=200)(lambda ctx: fleet_key_loss(ctx, 2, _flush_storm, n=8))
attack("K09", 3, "a storm of FLUSHALLs under 3 processes, concurrency 2 each",
       "every pair of arrivals >= the interval", timeout=200)(lambda ctx: fleet_key_loss(ctx, 3, _flush_storm, n=6))
attack("K10", 3, "Redis restarted empty twice mid-run, 3 processes",
       "every pair of arrivals >= the interval", timeout=240)(lambda ctx: fleet_key_loss(ctx, 3, _restart_twice, n=6))


@attack("K06", 3, "FLUSHALL between two sequential runs (interval 5 s)",
        "the second run's first request >= 5 s after the first run's last one", timeout=150)
def k06(ctx):
    red = RedisServer(ctx)
    pub = Publisher(ctx)
    ra = write_json(ctx, "a.json", recipe("seq_a", n=2, interval=5, prefix="/a/"))
    rb = write_json(ctx, "b.json", recipe("seq_b", n=2, interval=5, prefix="/b/"))
    r1 = ctx.cli(*live_run_args(pub, ctx.path("sa"), ra, gate=red.url()), timeout=60)
    if r1.rc != 0:
        raise Verdict("error", f"error: first run rc {r1.rc}: {r1.short()}")
    last_a = max(t for t, _ in pub.all_arrivals())
    red.client().flushall()
    r2 = ctx.cli(*live_run_args(pub, ctx.path("sb"), rb, gate=red.url()), timeout=60)
    no_tb(r2)
    later = [t for t, _ in pub.all_arrivals() if t > last_a]
    check(later, f"second run made no request (rc {r2.rc}: {r2.short()})")
    gap = min(later) - last_a
    check(gap >= GAP_TOLERANCE * 5, f"second run's first request {gap:.2f}s after the first run's last (< 5 s)")
    held(f"gap across the flush {gap:.2f}s")


@attack("K07", 3, "local gate: the per-origin record removed between two sequential runs (interval 5 s)",
        "the second run's first request >= 5 s after the first run's last one", timeout=150)
def k07(ctx, everything=False):
    gd = ctx.path("gate")
    os.makedirs(gd, mode=0o700)
    pub = Publisher(ctx)
    ra = write_json(ctx, "a.json", recipe("seq_a", n=2, interval=5, prefix="/a/"))
    rb = write_json(ctx, "b.json", recipe("seq_b", n=2, interval=5, prefix="/b/"))
    r1 = ctx.cli(*live_run_args(pub, ctx.path("sa"), ra, gate="local:" + gd), timeout=60)
    if r1.rc != 0:
        raise Verdict("error", f"error: first run rc {r1.rc}: {r1.short()}")
    last_a = max(t for t, _ in pub.all_arrivals())
    (_rm_local if everything else _rm_local_record)(None, gd)
    r2 = ctx.cli(*live_run_args(pub, ctx.path("sb"), rb, gate="local:" + gd), timeout=60)
    no_tb(r2)
    later = [t for t, _ in pub.all_arrivals() if t > last_a]
    check(later, f"second run made no request (rc {r2.rc}: {r2.short()})")
    gap = min(later) - last_a
    check(gap >= GAP_TOLERANCE * 5, f"second run's first request {gap:.2f}s after the first's last (< 5 s)")
    held(f"gap across the removal {gap:.2f}s")


# =========================================================================== point 4: source locks

@attack("L01", 4, "two datasets, each with a source named 'decisions', one Redis, concurrently",
        "both exit 0; neither STATE_LOCKED", timeout=150)
def l01(ctx):
    red = RedisServer(ctx)
    pub = Publisher(ctx, delay=0.3)
    da = write_json(ctx, "a.json", dataset("ds_alpha", [recipe("decisions", n=4, prefix="/a/")]))
    db = write_json(ctx, "b.json", dataset("ds_beta", [recipe("decisions", n=4, prefix="/b/")]))
    pa = ctx.spawn(*live_run_args(pub, ctx.path("sa"), da, gate=red.url()))
    pb = ctx.spawn(*live_run_args(pub, ctx.path("sb"), db, gate=red.url()))
    ra, rb = ctx.finish(pa, 100), ctx.finish(pb, 100)
    for r in (ra, rb):
        no_tb(r)
        check("STATE_LOCKED" not in r.all, f"unrelated dataset refused with STATE_LOCKED: {r.short()}")
        check(r.rc == 0, f"rc {r.rc}: {r.short()}")
    held("both datasets ran")


@attack("L02", 4, "two single-source recipes both named 'decisions' reading different origins, one Redis, at once",
        "neither blocks the other (the docs: dataset, name and allowed_origins identify a source)", timeout=150)
def l02(ctx):
    red = RedisServer(ctx)
    pub = Publisher(ctx, delay=0.3)
    a = recipe("decisions", n=4, prefix="/a/")
    b = recipe("decisions", n=4, prefix="/b/", host="api.example.com")
    ra_p, rb_p = write_json(ctx, "a.json", a), write_json(ctx, "b.json", b)
    api = ["--resolve", f"api.example.com:443:127.0.0.1:{pub.port}"]
    pa = ctx.spawn(*live_run_args(pub, ctx.path("sa"), ra_p, gate=red.url(), extra=api))
    pb = ctx.spawn(*live_run_args(pub, ctx.path("sb"), rb_p, gate=red.url(), extra=api))
    ra, rb = ctx.finish(pa, 100), ctx.finish(pb, 100)
    for r in (ra, rb):
        no_tb(r)
        check("STATE_LOCKED" not in r.all, f"a recipe of other origins refused with STATE_LOCKED: {r.short()}")
        check(r.rc == 0, f"rc {r.rc}: {r.short()}")
    held("both ran")


@attack("L05", 4, "same recipe name 'decisions' and same origin, no dataset, two state dirs at once (control)",
        "exactly one STATE_LOCKED (the same source by the documented identity)", timeout=150)
def l05(ctx):
    red = RedisServer(ctx)
    pub = Publisher(ctx, delay=0.3)
    rp = write_json(ctx, "a.json", recipe("decisions", n=5))
    pa = ctx.spawn(*live_run_args(pub, ctx.path("sa"), rp, gate=red.url()))
    time.sleep(0.2)
    pb = ctx.spawn(*live_run_args(pub, ctx.path("sb"), rp, gate=red.url()))
    ra, rb = ctx.finish(pa, 100), ctx.finish(pb, 100)
    for r in (ra, rb):
        no_tb(r)
    locked = [r for r in (ra, rb) if "STATE_LOCKED" in r.all]
    check(len(locked) == 1 and sorted([ra.rc, rb.rc]) == [0, 1], f"rcs {ra.rc},{rb.rc}; {len(locked)} STATE_LOCKED")
    held("one excluded")


@attack("L03", 4, "same dataset, same source, two state dirs (two 'servers') at once on one Redis",
        "exactly one refused with STATE_LOCKED naming the holder; the other exits 0", timeout=150)
def l03(ctx):
    red = RedisServer(ctx)
    pub = Publisher(ctx, delay=0.3)
    d = write_json(ctx, "d.json", dataset("ds_same", [recipe("decisions", n=5)]))
    pa = ctx.spawn(*live_run_args(pub, ctx.path("sa"), d, gate=red.url()))
    time.sleep(0.2)
    pb = ctx.spawn(*live_run_args(pub, ctx.path("sb"), d, gate=red.url()))
    ra, rb = ctx.finish(pa, 100), ctx.finish(pb, 100)
    for r in (ra, rb):
        no_tb(r)
    locked = [r for r in (ra, rb) if "STATE_LOCKED" in r.all]
    check(len(locked) == 1, f"{len(locked)} runs saw STATE_LOCKED (rcs {ra.rc},{rb.rc})")
    check(sorted([ra.rc, rb.rc]) == [0, 1], f"rcs {ra.rc},{rb.rc}")
    held("the same source on two servers excluded once")


@attack("L04", 4, "docs say what identifies a source across servers",
        "docs/running-many-sources.md names the lock key with the dataset in it")
def l04(ctx):
    txt = open(os.path.join(MAIN, "docs", "running-many-sources.md")).read()
    lines = [l for l in txt.splitlines() if "collection:source" in l or "identif" in l.lower()]
    check(any("dataset" in l.lower() for l in lines), f"lock key lines do not mention the dataset: {lines[:2]}")
    held("documented")


# =========================================================================== point 5: the local gate

def learn_record(ctx, gd, pub, name="learn"):
    rp = write_json(ctx, f"{name}.json", recipe(name, n=1))
    r = ctx.cli(*live_run_args(pub, ctx.path(f"st_{name}"), rp, gate="local:" + gd), timeout=60)
    recs = [f for f in os.listdir(gd) if not f.startswith(".")]
    return r, recs


@attack("G01", 5, "a per-origin record planted as a symlink to a victim file",
        "the victim is not changed; the run is refused with a clear code (not INTERNAL_ERROR)")
def g01(ctx):
    gd = ctx.path("gate")
    os.makedirs(gd, mode=0o700)
    pub = Publisher(ctx)
    r0, recs = learn_record(ctx, gd, pub)
    if r0.rc != 0 or not recs:
        raise Verdict("error", f"error: control run rc {r0.rc}, records {recs}: {r0.short()}")
    victim = ctx.path("victim.txt")
    with open(victim, "w") as f:
        f.write("precious\n")
    for f in recs:
        p = os.path.join(gd, f)
        if os.path.isfile(p) and not os.path.islink(p):
            os.unlink(p)
            os.symlink(victim, p)
    rp = write_json(ctx, "r.json", recipe("symlinked", n=2))
    r = ctx.cli(*live_run_args(pub, ctx.path("state"), rp, gate="local:" + gd))
    no_tb(r)
    check(open(victim).read() == "precious\n", "the symlink was followed: the victim file was rewritten")
    check(r.rc != 0 and re.search(r"\b[A-Z][A-Z_]{5,}\b", r.err), f"not refused with a code (rc {r.rc}): {r.short()}")
    held(f"refused rc {r.rc}: {r.short()[:80]}")


@attack("G02", 5, "a record planted as a dangling symlink (to a file that would be created)",
        "the target is not created; refused with a code")
def g02(ctx):
    gd = ctx.path("gate")
    os.makedirs(gd, mode=0o700)
    pub = Publisher(ctx)
    r0, recs = learn_record(ctx, gd, pub)
    if r0.rc != 0 or not recs:
        raise Verdict("error", f"error: control run rc {r0.rc}: {r0.short()}")
    target = ctx.path("created-by-symlink")
    for f in recs:
        p = os.path.join(gd, f)
        if os.path.isfile(p):
            os.unlink(p)
            os.symlink(target, p)
    rp = write_json(ctx, "r.json", recipe("dangling", n=2))
    r = ctx.cli(*live_run_args(pub, ctx.path("state"), rp, gate="local:" + gd))
    no_tb(r)
    check(not os.path.exists(target), "the dangling symlink's target was created")
    check(r.rc != 0, f"rc {r.rc}: the run went on through a symlinked record")
    held(f"refused rc {r.rc}")


@attack("G03", 5, "a world-writable gate directory (0777, no sticky bit)",
        "refused with a clear code before any request")
def g03(ctx):
    gd = ctx.path("gate")
    os.makedirs(gd)
    os.chmod(gd, 0o777)
    pub = Publisher(ctx)
    rp = write_json(ctx, "r.json", recipe("ww", n=2))
    r = ctx.cli(*live_run_args(pub, ctx.path("state"), rp, gate="local:" + gd))
    no_tb(r)
    check(r.rc == 1, f"rc {r.rc}: world-writable gate dir accepted")
    check(not pub.page_arrivals(), "pages requested")
    held(f"refused: {r.short()[:90]}")


@attack("G04", 5, "a gate directory owned by another user (uid 4101, mode 0755) used by root",
        "refused with a clear code (owner check), or documented; no request")
def g04(ctx):
    gd = ctx.path("gate")
    os.makedirs(gd)
    os.chown(gd, OTHER_UID_A, OTHER_GID)
    os.chmod(gd, 0o755)
    pub = Publisher(ctx)
    rp = write_json(ctx, "r.json", recipe("otherowner", n=2))
    r = ctx.cli(*live_run_args(pub, ctx.path("state"), rp, gate="local:" + gd))
    no_tb(r)
    check(r.rc == 1 and not pub.page_arrivals(), f"rc {r.rc}: a gate dir owned by another uid accepted")
    held(f"refused: {r.short()[:90]}")


@attack("G05", 5, "--gate local: (empty path)", "usage error (exit 2); nothing created in the working directory")
def g05(ctx):
    cwd = ctx.path("cwd")
    os.makedirs(cwd)
    pub = Publisher(ctx)
    rp = write_json(ctx, "r.json", recipe("emptylocal", n=1))
    r = ctx.cli(*live_run_args(pub, ctx.path("state"), rp, gate="local:"), cwd=cwd)
    r2 = ctx.cli(*live_run_args(pub, ctx.path("state2"), rp), cwd=cwd, env={"COLLECTION_GATE": "local:"})
    no_tb(r)
    check(os.listdir(cwd) == [], f"files created in cwd: {os.listdir(cwd)}")
    check(r.rc == 2, f"--gate local: rc {r.rc}: {r.short()}")
    check(r2.rc == 2, f"COLLECTION_GATE=local: rc {r2.rc}: {r2.short()}")
    check(not pub.page_arrivals(), "pages requested")
    held("usage error")


@attack("G06", 5, "a FIFO planted as the per-origin record", "no hang; refused with a code", timeout=120)
def g06(ctx):
    gd = ctx.path("gate")
    os.makedirs(gd, mode=0o700)
    pub = Publisher(ctx)
    r0, recs = learn_record(ctx, gd, pub)
    if r0.rc != 0 or not recs:
        raise Verdict("error", f"error: control run rc {r0.rc}")
    for f in recs:
        p = os.path.join(gd, f)
        if os.path.isfile(p):
            os.unlink(p)
            os.mkfifo(p, 0o600)
    rp = write_json(ctx, "r.json", recipe("fifo", n=2))
    r = ctx.cli(*live_run_args(pub, ctx.path("state"), rp, gate="local:" + gd), timeout=60)
    check(not r.timed_out, "hung on a FIFO record")
    no_tb(r)
    check(r.rc == 1, f"rc {r.rc}: {r.short()}")
    held(f"refused: {r.short()[:90]}")


@attack("G07", 5, "a directory planted as the per-origin record", "refused with a code, not INTERNAL_ERROR")
def g07(ctx):
    gd = ctx.path("gate")
    os.makedirs(gd, mode=0o700)
    pub = Publisher(ctx)
    r0, recs = learn_record(ctx, gd, pub)
    if r0.rc != 0 or not recs:
        raise Verdict("error", f"error: control run rc {r0.rc}")
    for f in recs:
        p = os.path.join(gd, f)
        if os.path.isfile(p):
            os.unlink(p)
            os.mkdir(p)
    rp = write_json(ctx, "r.json", recipe("dirrec", n=2))
    r = ctx.cli(*live_run_args(pub, ctx.path("state"), rp, gate="local:" + gd))
    no_tb(r)
    check(r.rc == 1, f"rc {r.rc}: {r.short()}")
    held(f"refused: {r.short()[:90]}")


@attack("G08", 5, "several-users directory: setgid 2770 group dir, two real uids run one after another",
        "both runs succeed (records group-shared 0660), or the docs no longer promise it", timeout=150)
def g08(ctx):
    gd = ctx.path("shared-gate")
    os.makedirs(gd)
    os.chown(gd, 0, OTHER_GID)
    os.chmod(gd, 0o2770)
    pub = Publisher(ctx)
    outs = []
    for uid, nm in ((OTHER_UID_A, "ua"), (OTHER_UID_B, "ub")):
        st = ctx.path(f"state_{nm}")
        os.makedirs(st)
        os.chown(st, uid, OTHER_GID)
        home = ctx.path(f"home_{nm}")
        os.makedirs(home)
        os.chown(home, uid, OTHER_GID)
        xdg = ctx.path(f"xdg_{nm}")
        os.makedirs(xdg, mode=0o700)
        os.chown(xdg, uid, OTHER_GID)
        rp = write_json(ctx, f"{nm}.json", recipe(f"shared_{nm}", n=1))
        r = ctx.cli(*live_run_args(pub, st, rp, gate="local:" + gd), user=(uid, OTHER_GID),
                    env={"HOME": home, "XDG_RUNTIME_DIR": xdg})
        no_tb(r)
        outs.append(r)
    docs = open(os.path.join(MAIN, "docs", "running-many-sources.md")).read()
    promised = re.search(r"\*?(different|several|other)\*? users", docs) is not None
    modes = {f: oct(os.lstat(os.path.join(gd, f)).st_mode & 0o7777) for f in os.listdir(gd)}
    if all(r.rc == 0 for r in outs):
        held(f"both uids ran; records {modes}")
    if not promised:
        held("the docs no longer promise a several-users directory")
    broke(f"second user: rc {outs[1].rc}: {outs[1].short()} (first rc {outs[0].rc}); records {modes}")


@attack("G09", 5, "gate directory path that is itself a symlink to a world-writable dir",
        "refused with a code (the directory check sees through the link)")
def g09(ctx):
    real = ctx.path("ww")
    os.makedirs(real)
    os.chmod(real, 0o777)
    link = ctx.path("gate-link")
    os.symlink(real, link)
    pub = Publisher(ctx)
    rp = write_json(ctx, "r.json", recipe("linkdir", n=1))
    r = ctx.cli(*live_run_args(pub, ctx.path("state"), rp, gate="local:" + link))
    no_tb(r)
    check(r.rc == 1 and not pub.page_arrivals(), f"rc {r.rc}: a symlink to a world-writable dir accepted")
    held(f"refused: {r.short()[:80]}")


# =========================================================================== point 6: holds

def retry_after_route(seconds, hold_paths=("/a/1",)):
    def route(path, n):
        if path == "/robots.txt":
            return 404, [("Content-Type", "text/plain")], "none"
        if path in hold_paths and n == 0:
            return 503, [("Content-Type", "text/plain"), ("Retry-After", str(seconds))], "busy"
        return 200, [("Content-Type", "application/json")], json.dumps({"title": path})
    return route


ISO_UTC = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(:\d\d)?(Z|\+00:00| UTC)")


def hold_setup(ctx, seconds, gate_kind="local", n_a=1, a_timeout=90):
    pub = Publisher(ctx, route=retry_after_route(seconds))
    if gate_kind == "local":
        gd = ctx.path("gate")
        os.makedirs(gd, mode=0o700)
        gate = "local:" + gd
        red = None
    else:
        red = RedisServer(ctx)
        gate = red.url()
    ra = write_json(ctx, "a.json", recipe("hold_a", n=n_a, prefix="/a/"))
    t0 = time.monotonic()
    r = ctx.cli(*live_run_args(pub, ctx.path("sa"), ra, gate=gate, extra=["--json"]), timeout=a_timeout)
    return pub, gate, r, time.monotonic() - t0, red


@attack("H01", 6, "Retry-After 7200 received by run A; run B on that origin right after",
        "B says at once (origin, UTC until), ends without waiting, pages pending, record says held_until",
        timeout=240)
def h01(ctx):
    pub, gate, ra, secs_a, _ = hold_setup(ctx, 7200)
    no_tb(ra)
    check(not ra.timed_out and secs_a < 60, f"run A itself waited {secs_a:.0f}s on the 2-hour hold")
    rb_p = write_json(ctx, "b.json", recipe("hold_b", n=3, prefix="/b/"))
    before = len(pub.page_arrivals())
    p = ctx.spawn(*live_run_args(pub, ctx.path("sb"), rb_p, gate=gate, extra=["--json"]))
    r = ctx.finish(p, 60)
    check(not r.timed_out, "run B sat > 60 s" + ("" if [1 for _, l in p.err_lines if HOST in l] else " in silence (no line naming the origin)"))
    no_tb(r)
    said = [(t, l) for t, l in p.err_lines if HOST in l and re.search(r"hold|held|retry-after", l, re.I)]
    check(said, f"B never said the origin is held (stderr: {r.err[:200]!r})")
    check(said[0][0] < 15, f"B said so only after {said[0][0]:.0f}s")
    check(any(ISO_UTC.search(l) for _, l in said), f"hold line has no UTC time: {said[0][1][:150]!r}")
    hold_txt = " ".join(l for _, l in said)
    check(re.search(r"\b\d+\s*(s|sec|seconds?|m|min|minutes?|h|hours?)\b|\d+h\d*m?|\d+m\d+s", hold_txt),
          f"hold line says not how long: {said[0][1][:150]!r}")
    check(re.search(r"retry-after|503|crawl-delay", hold_txt, re.I), f"hold line says not which response set it: {said[0][1][:150]!r}")
    check(len(pub.page_arrivals()) == before, "B requested pages during the hold")
    rec = read_json(os.path.join(ctx.path("sb"), "current", "run.json")) or r.json()
    ok, hu = find_key(rec, "held_until")
    check(ok and hu, f"B's run record has no held_until (rc {r.rc})")
    ok, pend = find_key(rec, "pending")
    check(pend == 3, f"B's pending is {pend}, expected 3")
    held(f"B said it at {said[0][0]:.1f}s, ended in {r.secs:.1f}s, held_until {hu}")


@attack("H02", 6, "Retry-After 7200 on A's first page, A has a second page", "A ends that origin's work at once: held_until, page pending",
        timeout=200)
def h02(ctx):
    pub, gate, ra, secs_a, _ = hold_setup(ctx, 7200, n_a=2, a_timeout=60)
    no_tb(ra)
    check(not ra.timed_out and secs_a < 60, f"A (2 pages, the first answered Retry-After 7200) sat {secs_a:.0f}s+ in silence")
    rec = read_json(os.path.join(ctx.path("sa"), "current", "run.json")) or ra.json()
    ok, hu = find_key(rec, "held_until")
    check(ok and hu, f"A's record lacks held_until (rc {ra.rc})")
    held(f"held_until {hu}")


@attack("H03", 6, "Retry-After 30 received by A; run B under a pseudo-terminal",
        "B shows the hold on its progress line while it waits, then fetches", timeout=200)
def h03(ctx):
    pub, gate, ra, _, _ = hold_setup(ctx, 30)
    rb_p = write_json(ctx, "b.json", recipe("hold_b", n=2, prefix="/b/"))
    cmd = CLI + live_run_args(pub, ctx.path("sb"), rb_p, gate=gate)
    mfd, sfd = pty.openpty()
    p = subprocess.Popen(cmd, stdin=sfd, stdout=sfd, stderr=sfd, env=ctx.env(), cwd=ctx.tmp, close_fds=True)
    os.close(sfd)
    ctx.cleanups.append(lambda: p.poll() is None and p.kill())
    buf, t0, seen_at = b"", time.monotonic(), None
    while time.monotonic() - t0 < 120:
        rl, _, _ = select.select([mfd], [], [], 0.5)
        if rl:
            try:
                d = os.read(mfd, 65536)
            except OSError:
                break
            if not d:
                break
            buf += d
            if seen_at is None and re.search(rb"(hold|held|retry-after)", buf, re.I):
                seen_at = time.monotonic() - t0
        if p.poll() is not None and not rl:
            break
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    if p.poll() is None:
        p.kill()
        broke(f"B did not end within 120 s (hold shown at {seen_at}); terminal tail {buf.decode('utf-8', 'replace')[-160:]!r}")
    txt = buf.decode("utf-8", "replace")
    check(TB not in txt, "traceback")
    check(seen_at is not None and seen_at < 15, f"no hold on the terminal within 15 s (seen at {seen_at}): {txt[-200:]!r}")
    held(f"hold shown at {seen_at:.1f}s; B rc {p.returncode}")


@attack("H04", 6, "Retry-After 600 received by A; run B with --deadline 5",
        "B never waits past its deadline (ends within deadline + start-up)", timeout=200)
def h04(ctx):
    pub, gate, ra, _, _ = hold_setup(ctx, 600)
    rb_p = write_json(ctx, "b.json", recipe("hold_b", n=2, prefix="/b/"))
    r = ctx.cli(*live_run_args(pub, ctx.path("sb"), rb_p, gate=gate, extra=["--deadline", "5"]), timeout=120)
    check(not r.timed_out, "B hung past its deadline")
    no_tb(r)
    check(r.secs < 5 + 15, f"B took {r.secs:.0f}s with --deadline 5")
    check(r.rc == 0, f"rc {r.rc}: {r.short()}")
    held(f"B ended in {r.secs:.1f}s")


def gate_cmd(ctx, sub, gate, *extra):
    """Run `collection gate SUB` with the gate given the documented ways; None when the command is missing."""
    h = ctx.cli("gate", "--help")
    if h.rc == 2 and "No such command" in h.all:
        return None
    tries = [["gate", sub, "--gate", gate, *extra], ["gate", sub, *extra, "--gate", gate], ["gate", "--gate", gate, sub, *extra]]
    last = None
    for t in tries:
        r = ctx.cli(*t, timeout=30)
        if r.rc != 2:
            return r
        last = r
    r = ctx.cli("gate", sub, *extra, timeout=30, env={"COLLECTION_GATE": gate})
    return r if r.rc != 2 else last


def _gate_show_and_clear(ctx, gate_kind):
    pub, gate, ra, _, _ = hold_setup(ctx, 7200, gate_kind)
    s = gate_cmd(ctx, "show", gate)
    if s is None:
        missing("`collection gate` command")
    no_tb(s)
    check(s.rc == 0, f"gate show rc {s.rc}: {s.short()}")
    check(HOST in s.out and re.search(r"hold|held|until|retry", s.out, re.I), f"gate show does not list the hold: {s.out[:200]!r}")
    c = None
    for origin in (f"https://{HOST}", HOST):
        c = gate_cmd(ctx, "clear", gate, origin)
        if c.rc == 0:
            break
    no_tb(c)
    check(c.rc == 0, f"gate clear rc {c.rc}: {c.short()}")
    s2 = gate_cmd(ctx, "show", gate)
    rb_p = write_json(ctx, "b.json", recipe("after_clear", n=2, prefix="/b/"))
    before = len(pub.page_arrivals())
    r = ctx.cli(*live_run_args(pub, ctx.path("sb"), rb_p, gate=gate), timeout=60)
    no_tb(r)
    check(len(pub.page_arrivals()) - before == 2, f"after clear, B fetched {len(pub.page_arrivals()) - before} of 2 (rc {r.rc})")
    return s, c, s2


@attack("H05", 6, "collection gate show / gate clear ORIGIN on the local gate",
        "show lists the hold (origin, until); clear lifts it; the next run fetches", timeout=240)
def h05(ctx):
    s, c, s2 = _gate_show_and_clear(ctx, "local")
    held("show listed the hold, clear lifted it")


@attack("H06", 6, "collection gate show / gate clear ORIGIN on the Redis gate",
        "show lists the hold; clear lifts it; the next run fetches", timeout=240)
def h06(ctx):
    _gate_show_and_clear(ctx, "redis")
    held("show/clear work on Redis")


@attack("H07", 6, "clearing a hold is recorded", "after `gate clear`, gate show (or its --json) says it was cleared",
        timeout=240)
def h07(ctx):
    s, c, s2 = _gate_show_and_clear(ctx, "local")
    sj = gate_cmd(ctx, "show", s2.args[-1] if False else "local:" + ctx.path("gate"), "--json")
    txt = (s2.all if s2 else "") + (sj.all if sj else "") + c.all + files_text(ctx.path("gate"))
    check(re.search(r"clear", txt, re.I), "nothing says the hold was cleared (gate show, its --json, clear's output, gate dir)")
    held("clearing visible")


@attack("H08", 6, "status lists holds on the source's origins",
        "`collection status` of a source whose origin is held names the origin and the hold", timeout=240)
def h08(ctx):
    pub, gate, ra, _, _ = hold_setup(ctx, 7200)
    if "--gate" in ctx.cli("status", "--help").out:
        s = ctx.cli("status", ctx.path("sa"), "--gate", gate)
    else:
        s = ctx.cli("status", ctx.path("sa"), env={"COLLECTION_GATE": gate})
    no_tb(s)
    check(HOST in s.out and re.search(r"hold|held", s.out, re.I), f"status does not list the hold: {s.out[-300:]!r}")
    held("status lists the hold")


@attack("H10", 6, "status --gate redis lists a Retry-After hold kept in Redis",
        "status names the origin and the hold", timeout=240)
def h10(ctx):
    pub, gate, ra, _, _ = hold_setup(ctx, 7200, gate_kind="redis")
    if "--gate" not in ctx.cli("status", "--help").out:
        missing("status --gate")
    s = ctx.cli("status", ctx.path("sa"), "--gate", gate)
    sj = ctx.cli("status", ctx.path("sa"), "--gate", gate, "--json")
    no_tb(s)
    check(HOST in s.out and re.search(r"hold|held", s.out, re.I), f"status does not list the hold: {s.out[-300:]!r}")
    check(HOST in sj.out, "status --json does not list the hold")
    held("status lists the Redis hold")


@attack("H09", 6, "robots.txt Crawl-delay: 3000 (a 50-minute gap)",
        "the run does not sit for 50 minutes: it says so, ends that origin's work, pages pending, held_until",
        timeout=200)
def h09(ctx):
    def route(path, n):
        if path == "/robots.txt":
            return 200, [("Content-Type", "text/plain")], "User-agent: *\nCrawl-delay: 3000\nAllow: /\n"
        return 200, [("Content-Type", "application/json")], json.dumps({"title": path})
    pub = Publisher(ctx, route=route)
    gd = ctx.path("gate")
    os.makedirs(gd, mode=0o700)
    rp = write_json(ctx, "r.json", recipe("crawl_delay", n=3))
    p = ctx.spawn(*live_run_args(pub, ctx.path("state"), rp, gate="local:" + gd, extra=["--json"]))
    r = ctx.finish(p, 120)
    check(not r.timed_out, "run sat waiting on Crawl-delay 3000 for > 120 s")
    no_tb(r)
    rec = read_json(os.path.join(ctx.path("state"), "current", "run.json")) or r.json()
    ok, hu = find_key(rec, "held_until")
    check(ok and hu, f"no held_until in the run record (rc {r.rc}, pages fetched {len(pub.page_arrivals())})")
    check(re.search(r"crawl-delay|hold|held", r.err, re.I), f"stderr says nothing about the delay: {r.err[:200]!r}")
    held(f"ended in {r.secs:.1f}s, held_until {hu}")


# =========================================================================== point 7: dataset directories

def make_dataset_fixture(ctx, nsrc, npages=2, name="ds_conc"):
    srcs = [recipe(f"src_{i}", n=npages, prefix=f"/s{i}/") for i in range(nsrc)]
    dp = write_json(ctx, "ds.json", dataset(name, srcs))
    fx = write_json(ctx, "fx.json", fixture_for([(f"/s{i}/", npages) for i in range(nsrc)]))
    return dp, fx, [s["name"] for s in srcs]


def concurrent_only(ctx, nsrc, rounds):
    dp, fx, names = make_dataset_fixture(ctx, nsrc)
    st = ctx.path("state")
    total = 0
    for rnd in range(1, rounds + 1):
        ps = [ctx.spawn("run", dp, "--state", st, "--only", nm, "--replay", fx) for nm in names]
        rs = [ctx.finish(p, 150) for p in ps]
        total += len(rs)
        for nm, r in zip(names, rs):
            check(not r.timed_out, f"--only {nm} hung")
            no_tb(r)
            check(r.rc == 0, f"round {rnd}: --only {nm} rc {r.rc}: {r.short()}")
        for nm in names:
            rec = read_json(os.path.join(st, nm, "current", "run.json"))
            check(rec and rec.get("run_number") == rnd, f"{nm}: run_number {rec and rec.get('run_number')} after round {rnd}")
            check(rec["rows"] == 2 if isinstance(rec.get("rows"), int) else True, f"{nm}: rows {rec.get('rows')}")
        d = read_json(os.path.join(st, "dataset-run.json"))
        check(isinstance(d, dict), "dataset-run.json unreadable")
        check(d.get("dataset_run") == total, f"dataset_run is {d.get('dataset_run')} after {total} dataset runs")
        stat_of = {s["name"]: s["status"] for s in d.get("sources", [])}
        lost = [nm for nm in names if stat_of.get(nm) != "ran"]
        check(not lost, f"dataset record lost the runs of {lost} (statuses {stat_of})")
    left = [f for f in os.listdir(st) if "tmp" in f]
    check(not left, f"temp files left: {left}")
    held(f"{nsrc} jobs x {rounds} rounds exact; dataset_run {total}")


attack("D01", 7, "6 concurrent --only jobs on one dataset dir, 3 rounds",
       "all exit 0; every source's generation and the dataset record exact; counter counts every run",
       timeout=300)(lambda ctx: concurrent_only(ctx, 6, 3))
attack("D02", 7, "8 concurrent --only jobs on one dataset dir",
       "all exit 0; dataset record lists every source as ran; dataset_run = 8", timeout=300)(lambda ctx: concurrent_only(ctx, 8, 1))


def _ran_dataset(ctx, nsrc=3):
    dp, fx, names = make_dataset_fixture(ctx, nsrc)
    st = ctx.path("state")
    r = ctx.cli("run", dp, "--state", st, "--replay", fx, timeout=120)
    if r.rc != 0:
        raise Verdict("error", f"error: dataset replay rc {r.rc}: {r.short()}")
    return st, names


def _status_lists_all(ctx, st, names, damaged=None):
    s = ctx.cli("status", st)
    sj = ctx.cli("status", st, "--json")
    for r in (s, sj):
        check(not r.timed_out, "status hung")
        no_tb(r)
    missing_names = [n for n in names if n not in s.out]
    check(not missing_names, f"status (rc {s.rc}) has no line for {missing_names}: {s.all[-200:]!r}")
    check(sj.json() is not None, f"status --json not JSON (rc {sj.rc}): {sj.out[:100]!r}")
    jm = [n for n in names if n not in sj.out]
    check(not jm, f"status --json omits {jm}")
    if damaged:
        line = [l for l in s.out.splitlines() if damaged in l]
        check(any("STATE_DAMAGED" in l for l in line) or "STATE_DAMAGED" in s.out,
              f"damaged source {damaged} not STATE_DAMAGED: {line[:2]}")
    return s, sj


for _aid, _content, _what in [("D03", "[]", "an array"), ("D04", '{"sources": 5, "dataset_run": "x"}', "wrong member types"),
                              ("D05", '"hello"', "a string"), ("D06", '{"record_version": 1}', "an object missing members")]:
    def _mk(content=_content):
        def fn(ctx):
            st, names = _ran_dataset(ctx)
            with open(os.path.join(st, "dataset-run.json"), "w") as f:
                f.write(content)
            s, sj = _status_lists_all(ctx, st, names)
            check("dataset-run.json" in s.all, f"status does not name dataset-run.json: {s.all[-200:]!r}")
            held(f"status rc {s.rc}: all sources listed, record named")
        return fn
    attack(_aid, 7, f"status on a dataset dir whose dataset-run.json is valid JSON of another shape ({_what})",
           "no INTERNAL_ERROR; the damaged record is named; every source still listed", timeout=200)(_mk())


@attack("D07", 7, "status with one damaged source (dangling current)",
        "a line per source; the damaged one says STATE_DAMAGED", timeout=200)
def d07(ctx):
    st, names = _ran_dataset(ctx)
    cur = os.path.join(st, names[1], "current")
    os.unlink(cur)
    os.symlink("generations/999999", cur)
    _status_lists_all(ctx, st, names, damaged=names[1])
    held("damaged source on its line")


@attack("D08", 7, "status with one damaged source (truncated run.json)",
        "a line per source; the damaged one says STATE_DAMAGED", timeout=200)
def d08(ctx):
    st, names = _ran_dataset(ctx)
    p = os.path.join(st, names[0], "current", "run.json")
    data = open(p).read()
    os.chmod(p, 0o644)
    with open(os.path.realpath(p), "w") as f:
        f.write(data[: len(data) // 3])
    _status_lists_all(ctx, st, names, damaged=names[0])
    held("damaged source on its line")


@attack("D09", 7, "status with one source whose run.json is a FIFO", "no hang; a line per source; STATE_DAMAGED",
        timeout=200)
def d09(ctx):
    st, names = _ran_dataset(ctx)
    p = os.path.realpath(os.path.join(st, names[2], "current", "run.json"))
    os.unlink(p)
    os.mkfifo(p)
    _status_lists_all(ctx, st, names, damaged=names[2])
    held("FIFO source on its line")


# =========================================================================== point 8: names, files, formats

def _base_recipe():
    return json.load(open(os.path.join(MAIN, "fixtures", "recipes", "council_decisions.json")))


def _nl_variants():
    out = []
    r = _base_recipe(); r["name"] += "\n"; out.append(("recipe name", r))
    r = _base_recipe(); r["source_class"] += "\n"; out.append(("source_class", r))
    r = _base_recipe(); r["data_classification"] += "\n"; out.append(("data_classification", r))
    r = _base_recipe(); r["rights_claim"]["claimed_basis"] += "\n"; out.append(("claimed_basis", r))
    r = _base_recipe(); r["rights_claim"]["claim_evidence_digest"] += "\n"; out.append(("claim_evidence_digest", r))
    r = _base_recipe(); r["locator"]["kind"] += "\n"; out.append(("locator.kind", r))
    r = _base_recipe(); r["connector"]["parameters"][0]["name"] += "\n"; out.append(("connector parameter name", r))
    r = _base_recipe(); r["connector"]["parameters"][1]["value"] += "\n"; out.append(("reader.family_version", r))
    j = recipe("colname", n=1)
    j["connector"]["parameters"][2]["value"] = "{\"columns\":[{\"name\":\"title\\n\",\"pointer\":\"/title\"}]}"
    out.append(("json.tabular column name", j))
    d = dataset("ds_ok\n", [_base_recipe()]); out.append(("dataset name", d))
    s = _base_recipe(); s["name"] = "inner\n"; out.append(("source name in a dataset", dataset("ds_ok", [s])))
    return out


@attack("N01", 8, "a trailing newline in every pattern-checked name member (11 members)",
        "each refused by validate (exit 1, a SCHEMA_* code); `run` refuses too")
def n01(ctx):
    passed = []
    for what, doc in _nl_variants():
        p = write_json(ctx, f"nl-{len(passed)}-{abs(hash(what))}.json", doc)
        r = ctx.cli("validate", "--json", p)
        no_tb(r)
        if r.rc != 1:
            passed.append(f"{what} (rc {r.rc})")
    r = write_json(ctx, "nlrun.json", _nl_variants()[0][1])
    rr = ctx.cli("run", r, "--state", ctx.path("st"), "--replay",
                 os.path.join(MAIN, "fixtures", "council_decisions", "council_decisions.fixture.json.gz"))
    if rr.rc != 1:
        passed.append(f"run with name\\n (rc {rr.rc})")
    check(not passed, f"accepted with a trailing newline: {passed}")
    held("all 11 refused; run refused")


@attack("N02", 8, "schema patterns: every `pattern` in schemas/*.json rejects value+'\\n' under jsonschema",
        "the schemas' own patterns cannot be passed by a trailing newline (differential: fast path via validate)")
def n02(ctx):
    import jsonschema
    bad = []
    for fn in sorted(os.listdir(os.path.join(MAIN, "schemas"))):
        s = json.load(open(os.path.join(MAIN, "schemas", fn)))
        pats = set()

        def walk(o):
            if isinstance(o, dict):
                if isinstance(o.get("pattern"), str):
                    pats.add(o["pattern"])
                for v in o.values():
                    walk(v)
            elif isinstance(o, list):
                for v in o:
                    walk(v)
        walk(s)
        for pat in pats:
            # find a sample that matches, then check sample+"\n" is rejected by a python-re search (what
            # jsonschema does) -- a pattern ending in `$` without \Z/(?!\n) lets it through
            m = re.search(r"\$\)?$", pat)
            if m and not pat.endswith("\\Z") and "(?!\\n)" not in pat and "\\z" not in pat:
                try:
                    v = jsonschema.Draft202012Validator({"type": "string", "pattern": pat})
                except Exception:
                    continue
                # a cheap sample generator for the usual name patterns
                for sample in ("a", "a_b", "x1", "abc", "A", "1.0.0", "sha256:" + "a" * 64, "page"):
                    if v.is_valid(sample):
                        if v.is_valid(sample + "\n"):
                            bad.append(f"{fn}: {pat}")
                        break
    check(not bad, f"{len(bad)} patterns accept a trailing newline under jsonschema: {bad[:4]}")
    held("no pattern accepts a trailing newline")


def _bad_dir(ctx, kind):
    d = ctx.path(f"recipes-{kind}")
    os.makedirs(d)
    shutil.copy(os.path.join(MAIN, "fixtures", "recipes", "council_decisions.json"), os.path.join(d, "good.json"))
    if kind == "nonutf8":
        with open(os.path.join(d.encode(), b"bad\xff\xfe.json"), "w") as f:
            f.write("{}")
        return d, None
    if kind == "broken_link":
        os.symlink(os.path.join(d, "missing.json"), os.path.join(d, "dangling.json"))
        return d, "dangling.json"
    if kind == "loop":
        os.symlink(os.path.join(d, "loop-b.json"), os.path.join(d, "loop-a.json"))
        os.symlink(os.path.join(d, "loop-a.json"), os.path.join(d, "loop-b.json"))
        return d, "loop-a.json"
    if kind == "dirloop":
        os.makedirs(os.path.join(d, "sub"))
        os.symlink(d, os.path.join(d, "sub", "up"))
        return d, "up"
    if kind == "fifo":
        os.mkfifo(os.path.join(d, "pipe.json"))
        return d, "pipe.json"
    if kind == "unreadable":
        p = os.path.join(d, "secret.json")
        shutil.copy(os.path.join(d, "good.json"), p)
        os.chmod(p, 0o000)
        os.chmod(d, 0o755)
        return d, "secret.json"
    raise ValueError(kind)


FORMATS = ["text", "json", "github", "sarif", "junit"]


def _parse_format(fmt, out):
    if fmt in ("json", "sarif"):
        json.loads(out)
    elif fmt == "junit":
        import xml.etree.ElementTree as ET
        ET.fromstring(out)


@attack("N03", 8, "validate a directory holding a non-UTF-8 file name, every --format",
        "no crash; a documented exit code; output parseable in json/sarif/junit")
def n03(ctx):
    d, _ = _bad_dir(ctx, "nonutf8")
    probs = []
    for fmt in FORMATS:
        r = ctx.cli("validate", "--format", fmt, d, timeout=60)
        if TB in r.all or r.rc not in (0, 1, 2):
            probs.append(f"{fmt}: rc {r.rc} {r.short()[:60]}")
            continue
        try:
            _parse_format(fmt, r.out)
        except Exception as e:
            probs.append(f"{fmt}: unparseable output ({e})")
    # and the file name as an argument
    for fmt in FORMATS:
        r = ctx.cli("validate", "--format", fmt, os.path.join(d.encode(), b"bad\xff\xfe.json"), timeout=60)
        if TB in r.all or r.rc not in (0, 1, 2):
            probs.append(f"{fmt} (argument): rc {r.rc} {r.short()[:60]}")
            continue
        try:
            _parse_format(fmt, r.out)
        except Exception as e:
            probs.append(f"{fmt} (argument): unparseable ({e})")
    check(not probs, "; ".join(probs))
    held("every format copes")


for _aid, _kind in [("N04", "broken_link"), ("N05", "loop"), ("N06", "fifo"), ("N07", "unreadable"), ("N08", "dirloop")]:
    def _mk(kind=_kind):
        def fn(ctx):
            d, name = _bad_dir(ctx, kind)
            probs = []
            for fmt in FORMATS:
                r = ctx.cli("validate", "--format", fmt, d, timeout=40,
                            user=(OTHER_UID_A, OTHER_GID) if kind == "unreadable" else None)
                if r.timed_out:
                    probs.append(f"{fmt}: hung")
                    continue
                if TB in r.all or r.rc != 2:
                    probs.append(f"{fmt}: rc {r.rc}")
                    continue
                if name not in r.all:
                    probs.append(f"{fmt}: {name} not named")
            check(not probs, "; ".join(probs))
            held(f"exit 2 naming {name} in every format")
        return fn
    attack(_aid, 8, f"validate a directory holding a {_kind.replace('_', ' ')} entry, every --format",
           "exit 2, the entry named in the output, no hang", timeout=300)(_mk())


@attack("N09", 8, "pre-commit hook: a staged recipe whose name starts with '-'",
        "the hook's entry/args end options with `--`, so the file is validated (exit 0), not parsed as an option")
def n09(ctx):
    y = open(os.path.join(MAIN, ".pre-commit-hooks.yaml")).read()
    entry = re.search(r"^\s*entry:\s*(.+)$", y, re.M).group(1).strip().split()
    m = re.search(r"^\s*args:\s*\[(.*)\]\s*$", y, re.M)
    args = [a.strip().strip("'\"") for a in m.group(1).split(",") if a.strip()] if m else []
    d = ctx.path("repo")
    os.makedirs(d)
    shutil.copy(os.path.join(MAIN, "fixtures", "recipes", "council_decisions.json"), os.path.join(d, "--probe.json"))
    shutil.copy(os.path.join(MAIN, "fixtures", "recipes", "council_decisions.json"), os.path.join(d, "-x.json"))
    bin_dir = os.path.dirname(CLI[0])
    cmd = [os.path.join(bin_dir, entry[0])] + entry[1:] + args + ["--probe.json", "-x.json"]
    r = ctx.cli(*cmd[1:], argv0=[cmd[0]], cwd=d)
    check(r.rc == 0, f"hook on '--probe.json' '-x.json': rc {r.rc}: {r.short()} (entry {entry}, args {args})")
    held("validated")


def _deep(n):
    return "{\"name\":\"deep\",\"x\":" + "[" * n + "]" * n + "}"


@attack("N10", 8, "a recipe nested 200,000 deep given to `run`",
        "a coded refusal (JSON_TOO_DEEP-like) naming the file; exit 1/2, never INTERNAL_ERROR")
def n10(ctx):
    p = ctx.path("deep-recipe.json")
    open(p, "w").write(_deep(200_000))
    r = ctx.cli("run", p, "--state", ctx.path("st"), "--replay",
                os.path.join(MAIN, "fixtures", "council_decisions", "council_decisions.fixture.json.gz"))
    v = ctx.cli("validate", p)
    no_tb(r, "run output")
    no_tb(v, "validate output")
    check(r.rc in (1, 2), f"run rc {r.rc}")
    check("deep-recipe.json" in r.all, f"run's refusal does not name the file: {r.short()}")
    held(f"run rc {r.rc}: {r.short()[:80]}")


@attack("N11", 8, "a dataset nested deeply inside a source member, through `run`", "coded refusal naming the file")
def n11(ctx):
    src = _base_recipe()
    txt = json.dumps(dataset("ds_deep", [src]))
    txt = txt.replace('"description": "Published', '"x": ' + "[" * 50000 + "]" * 50000 + ', "description": "Published', 1)
    p = ctx.path("deep-dataset.json")
    open(p, "w").write(txt)
    r = ctx.cli("run", p, "--state", ctx.path("st"), "--replay",
                os.path.join(MAIN, "fixtures", "council_decisions", "council_decisions.fixture.json.gz"))
    no_tb(r)
    check(r.rc in (1, 2) and "deep-dataset.json" in r.all, f"rc {r.rc}: {r.short()}")
    held(f"rc {r.rc}")


def _bomb(path, size):
    with open(path, "wb") as raw:
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1, mtime=0) as g:
            g.write(b"[")
            chunk = b" " * (16 << 20)
            left = size - 2
            while left > 0:
                g.write(chunk[:min(left, len(chunk))])
                left -= len(chunk)
            g.write(b"]")


@attack("N12", 8, "a gzip-bombed fixture (1000 MiB inflated, under the 1 GiB cap) with RLIMIT_AS 1 GiB",
        "a coded refusal naming the fixture (exit 2), never INTERNAL_ERROR/MemoryError", timeout=300)
def n12(ctx):
    lim = 1 << 30

    def pre():
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    probe = ctx.cli("validate", os.path.join(MAIN, "fixtures", "recipes", "council_decisions.json"), preexec=pre)
    if probe.rc != 0:
        raise Verdict("error", f"error: the CLI cannot start under a 1 GiB address-space limit: {probe.short()}")
    fx = ctx.path("bomb.fixture.json.gz")
    _bomb(fx, 1000 << 20)
    r = ctx.cli("run", os.path.join(MAIN, "fixtures", "recipes", "council_decisions.json"), "--state", ctx.path("st"),
                "--replay", fx, preexec=pre, timeout=200)
    check(not r.timed_out, "hung")
    no_tb(r)
    check(r.rc in (1, 2), f"rc {r.rc}")
    check("bomb.fixture.json.gz" in r.all, f"refusal does not name the fixture: {r.short()}")
    r2 = ctx.cli("fixture", "check", fx, preexec=pre, timeout=200)
    no_tb(r2, "fixture check output")
    held(f"run rc {r.rc}, fixture check rc {r2.rc}: {r.short()[:80]}")


@attack("N13", 8, "a gzip bomb past the cap (1.5 GiB) without a memory limit",
        "FixtureError naming the file (exit 2), quick", timeout=300)
def n13(ctx):
    fx = ctx.path("big.fixture.json.gz")
    _bomb(fx, 1536 << 20)
    r = ctx.cli("run", os.path.join(MAIN, "fixtures", "recipes", "council_decisions.json"), "--state", ctx.path("st"),
                "--replay", fx, timeout=200)
    no_tb(r)
    check(r.rc in (1, 2) and "big.fixture.json.gz" in r.all, f"rc {r.rc}: {r.short()}")
    held("refused")


# =========================================================================== point 9: operators

def failing_publisher(ctx, fail):
    def route(path, n):
        if path == "/robots.txt":
            return 404, [("Content-Type", "text/plain")], "none"
        if path in fail:
            return fail[path], [("Content-Type", "text/plain")], "nope"
        return 200, [("Content-Type", "application/json")], json.dumps({"title": path})
    return Publisher(ctx, route=route)


@attack("O01", 9, "12 pages of which 11 fail (404/500/403): the run summary",
        "summary names the first ten failed pages (code, URL); --json lists all 11 with attempts and since when",
        timeout=200)
def o01(ctx):
    fail = {f"/p/{i}": (404 if i % 3 == 0 else 500 if i % 3 == 1 else 403) for i in range(1, 12)}
    pub = failing_publisher(ctx, fail)
    rp = write_json(ctx, "r.json", recipe("failing", n=12, interval=1, concurrency=2))
    st = ctx.path("state")
    r = ctx.cli(*live_run_args(pub, st, rp, gate="none"), timeout=150)
    no_tb(r)
    check(r.rc == 0, f"rc {r.rc}: {r.short()}")
    urls = [f"https://{HOST}/p/{i}" for i in range(1, 12)]
    named = [u for u in urls if re.search(re.escape(u) + r"(?!\d)", r.all)]
    check(len(named) >= 10, f"summary names {len(named)} of the 11 failed pages")
    rec = read_json(os.path.join(st, "current", "run.json"))
    fl = (rec or {}).get("failures", {})
    pages = fl.get("failed_pages") or fl.get("pages", [])
    check(len(pages) == 11, f"run.json failures.(failed_)pages has {len(pages)} entries")
    blob = json.dumps(pages)
    check(all(u in blob for u in urls), "run.json failures.pages lacks some URLs")
    check(re.search(r"attempt", blob), f"no attempts in failures.pages: {blob[:150]}")
    check(re.search(r"since|first_failed|failed_at", blob), f"no since-when in failures.pages: {blob[:150]}")
    held(f"summary names {len(named)}; run.json lists 11")


@attack("O02", 9, "status after failed pages", "status names the failed pages with code and URL", timeout=200)
def o02(ctx):
    fail = {"/p/2": 404, "/p/3": 500}
    pub = failing_publisher(ctx, fail)
    rp = write_json(ctx, "r.json", recipe("failing2", n=3))
    st = ctx.path("state")
    r = ctx.cli(*live_run_args(pub, st, rp, gate="none"), timeout=100)
    s = ctx.cli("status", st)
    no_tb(s)
    for pth, code in fail.items():
        u = f"https://{HOST}{pth}"
        line = [l for l in s.out.splitlines() if u in l]
        check(line, f"status does not name {u}")
        check(any(str(code) in l for l in line), f"status line for {u} lacks its code: {line[0]!r}")
    held("status names failed pages")


def _decode_fail(ctx):
    good = "<html><body><table class='attendance'><tr><th>Member</th><th>Meetings attended</th></tr><tr><td>A</td><td>3</td></tr></table></body></html>"
    bad = "<html><body><table class='attendance'><tr><th>Name</th><th>Count</th><th>Extra</th></tr><tr><td>A</td><td>3</td><td>x</td></tr></table></body></html>"

    def route(path, n):
        if path == "/robots.txt":
            return 404, [("Content-Type", "text/plain")], "none"
        return 200, [("Content-Type", "text/html")], bad if path == "/p/2" else good
    pub = Publisher(ctx, route=route)
    rp = write_json(ctx, "r.json", recipe("mismatch", n=2, reader="html"))
    st = ctx.path("state")
    r = ctx.cli(*live_run_args(pub, st, rp, gate="none"), timeout=100)
    rec = read_json(os.path.join(st, "current", "run.json")) or {}
    codes = [p.get("code") or p.get("failure_code") for p in rec.get("failures", {}).get("pages", [])]
    if not any(c and c in ("column_mismatch", "decode_error") for c in codes):
        raise Verdict("error", f"error: could not provoke a decode failure (codes {codes}, rc {r.rc}: {r.short()})")
    return r, st, rp


@attack("O03", 9, "a deterministic decode failure (column_mismatch): advice in status and summary",
        "says fix the recipe and how to reproduce with `collection decode` (not 'run again')", timeout=200)
def o03(ctx):
    r, st, rp = _decode_fail(ctx)
    s = ctx.cli("status", st)
    no_tb(s)
    adv = [l for l in s.out.splitlines() if "mismatch" in l or "decode" in l.lower() or "recipe" in l.lower()]
    check(re.search(r"collection decode", s.out), f"status gives no `collection decode` advice: {s.out[-300:]!r}")
    check(re.search(r"recipe", s.out, re.I), "status does not say to fix the recipe")
    bad_adv = [l for l in s.out.splitlines() if "column_mismatch" in l and re.search(r"run again|retried", l, re.I)]
    check(not bad_adv, f"advises to run again for column_mismatch: {bad_adv[:1]!r}")
    check(re.search(r"collection decode", r.all), f"the run summary gives no `collection decode` advice")
    held("advice fits")


@attack("O04", 9, "column_mismatch advice: the failing body is findable",
        "the advice names a saved body path that exists, or a command that fetches it", timeout=200)
def o04(ctx):
    r, st, rp = _decode_fail(ctx)
    s = ctx.cli("status", st)
    txt = s.out + r.all
    paths = [p for p in re.findall(r"(/[\w./@+-]+)", txt) if os.path.isfile(p) and not p.endswith((".json",))]
    rec = read_json(os.path.join(st, "current", "run.json")) or {}
    for fp in rec.get("failures", {}).get("failed_pages", []):
        b = fp.get("body")
        if b and os.path.isfile(os.path.join(st, "current", b)):
            paths.append(os.path.join(st, "current", b))
    check(paths or re.search(r"curl|--record|fetch", txt), f"no saved body and no way to get it: {s.out[-250:]!r}")
    held(f"body at {paths[:1] or 'a command'}")


@attack("O05", 9, "advice for a publisher error (500) and a block (403)",
        "500: says it is retried; 403: says robots or the User-Agent", timeout=200)
def o05(ctx):
    pub = failing_publisher(ctx, {"/p/1": 500, "/p/2": 403})
    rp = write_json(ctx, "r.json", recipe("adv", n=2))
    st = ctx.path("state")
    ctx.cli(*live_run_args(pub, st, rp, gate="none"), timeout=100)
    s = ctx.cli("status", st)
    no_tb(s)
    check(re.search(r"retr", s.out, re.I), f"nothing says the 500 is retried: {s.out[-300:]!r}")
    check(re.search(r"robots|user-agent", s.out, re.I), f"nothing about robots/User-Agent for the 403")
    held("advice fits the class")


@attack("O06", 9, "explain accepts codes in any case", "gate_unavailable, Gate_Unavailable, HTTP_STATUS_404, Column_Mismatch all exit 0")
def o06(ctx):
    ref = ctx.cli("explain", "GATE_UNAVAILABLE")
    bad = []
    for c in ("gate_unavailable", "Gate_Unavailable", "request_budget_sum", "HTTP_STATUS_404", "Column_Mismatch",
              "ROBOTS_DISALLOWED", "reg-33"):
        r = ctx.cli("explain", c)
        if r.rc != 0 or TB in r.all:
            bad.append(f"{c} rc {r.rc}")
    l = ctx.cli("explain", "gate_unavailable")
    check(not bad, f"refused: {bad}")
    check(l.out == ref.out, "lower-case explain differs from upper-case")
    held("any case accepted")


# =========================================================================== point 10: metrics

def _metrics_flag(ctx):
    h = ctx.cli("run", "--help").out
    if "--metrics-file" not in h:
        missing("run --metrics-file")


WANT = {
    "pages fetched": r"fetched", "unchanged": r"unchanged", "changed": r"(?<!un)changed", "failed by class": r"fail",
    "pending": r"pending", "requests by kind": r"request", "bytes": r"bytes", "coverage complete": r"complete",
    "truncated": r"truncat", "run seconds": r"(run|duration).*seconds|seconds.*run", "gate wait seconds": r"gate.*wait|wait.*gate",
    "last success timestamp": r"last.*success|success.*timestamp",
}


def _parse_metrics(path):
    from prometheus_client.parser import text_string_to_metric_families
    txt = open(path).read()
    fams = list(text_string_to_metric_families(txt))
    return txt, fams


@attack("M01", 10, "--metrics-file on the demo replay (single source)",
        "Prometheus text parseable by prometheus_client; every figure of the issue; labelled by source; values match --json",
        timeout=200)
def m01(ctx):
    _metrics_flag(ctx)
    mdir = ctx.path("textfile")
    os.makedirs(mdir)
    mp = os.path.join(mdir, "collection.prom")
    st = ctx.path("state")
    r = ctx.cli("run", os.path.join(MAIN, "fixtures", "recipes", "council_decisions.json"), "--state", st, "--replay",
                os.path.join(MAIN, "fixtures", "council_decisions", "council_decisions.fixture.json.gz"),
                "--metrics-file", mp, "--json", timeout=150)
    no_tb(r)
    check(r.rc == 0, f"rc {r.rc}: {r.short()}")
    check(os.path.isfile(mp), "no metrics file written")
    try:
        txt, fams = _parse_metrics(mp)
    except Exception as e:
        broke(f"prometheus_client cannot parse it: {e}")
    names = [f.name for f in fams]
    absent = [k for k, pat in WANT.items() if not any(re.search(pat, n) for n in names)]
    check(not absent, f"figures missing: {absent} (families {names[:12]})")
    labels = {k: v for f in fams for s in f.samples for k, v in s.labels.items()}
    check("council_decisions" in labels.values(), f"no source label: {labels}")
    vals = {s.name: s.value for f in fams for s in f.samples}
    fetched = [v for n, v in vals.items() if re.search(r"fetched", n) and "bytes" not in n and "timestamp" not in n]
    check(500 in fetched, f"no fetched=500 sample: {[(n, v) for n, v in vals.items() if 'fetched' in n][:5]}")
    check(not [f for f in os.listdir(mdir) if f != "collection.prom"], f"leftovers: {os.listdir(mdir)}")
    held(f"{len(fams)} families, parseable, labelled")


@attack("M02", 10, "--metrics-file on a dataset run", "one labelled series per source, parseable", timeout=200)
def m02(ctx):
    _metrics_flag(ctx)
    dp, fx, names = make_dataset_fixture(ctx, 3)
    mp = ctx.path("m.prom")
    r = ctx.cli("run", dp, "--state", ctx.path("state"), "--replay", fx, "--metrics-file", mp, timeout=150)
    no_tb(r)
    check(r.rc == 0 and os.path.isfile(mp), f"rc {r.rc}, file {os.path.isfile(mp)}")
    try:
        txt, fams = _parse_metrics(mp)
    except Exception as e:
        broke(f"unparseable: {e}")
    lv = {v for f in fams for s in f.samples for v in s.labels.values()}
    absent = [n for n in names if n not in lv]
    check(not absent, f"sources without series: {absent}")
    held("each source labelled")


@attack("M03", 10, "--metrics-file is written atomically (write then rename)",
        "the old file is replaced by a new inode, never truncated in place; no temp *.prom left",
        timeout=200)
def m03(ctx):
    _metrics_flag(ctx)
    mdir = ctx.path("tf")
    os.makedirs(mdir)
    mp = os.path.join(mdir, "c.prom")
    open(mp, "w").write("# old\n")
    keep = os.open(mp, os.O_RDONLY)
    ino = os.fstat(keep).st_ino
    dp, fx, names = make_dataset_fixture(ctx, 1)
    r = ctx.cli("run", dp, "--state", ctx.path("state"), "--replay", fx, "--metrics-file", mp, timeout=150)
    no_tb(r)
    old_content = os.pread(keep, 100, 0)
    os.close(keep)
    check(os.stat(mp).st_ino != ino, "same inode: the file was rewritten in place")
    check(old_content == b"# old\n", "the old inode was modified (written in place)")
    leftovers = [f for f in os.listdir(mdir) if f != "c.prom"]
    check(not any(f.endswith(".prom") for f in leftovers), f"temp files a textfile collector would read: {leftovers}")
    check(not leftovers, f"leftovers: {leftovers}")
    held("renamed into place")


@attack("M04", 10, "--metrics-file on a live run with failures and a gate",
        "failed counted by class; gate wait seconds present; parseable", timeout=200)
def m04(ctx):
    _metrics_flag(ctx)
    pub = failing_publisher(ctx, {"/p/2": 404, "/p/3": 500})
    gd = ctx.path("gate")
    os.makedirs(gd, mode=0o700)
    rp = write_json(ctx, "r.json", recipe("mlive", n=3))
    mp = ctx.path("m.prom")
    r = ctx.cli(*live_run_args(pub, ctx.path("state"), rp, gate="local:" + gd, extra=["--metrics-file", mp]), timeout=100)
    no_tb(r)
    check(os.path.isfile(mp), f"no file (rc {r.rc})")
    txt, fams = _parse_metrics(mp)
    cls = {s.labels.get("class") or s.labels.get("failure_class") for f in fams for s in f.samples if "fail" in s.name}
    check({"gone", "error"} <= cls, f"failed by class labels: {cls}")
    held("classes labelled")


@attack("M05", 10, "--metrics-file after a success, then a refused run (gate down) on the same file",
        "the file stays parseable and keeps the last success's timestamp", timeout=200)
def m05(ctx):
    _metrics_flag(ctx)
    pub = Publisher(ctx)
    gd = ctx.path("gate")
    os.makedirs(gd, mode=0o700)
    rp = write_json(ctx, "r.json", recipe("mref", n=1))
    mp = ctx.path("m.prom")
    st = ctx.path("state")
    r1 = ctx.cli(*live_run_args(pub, st, rp, gate="local:" + gd, extra=["--metrics-file", mp]), timeout=60)
    if r1.rc != 0 or not os.path.isfile(mp):
        raise Verdict("error", f"error: first run rc {r1.rc}")
    _, f1 = _parse_metrics(mp)
    ts1 = {s.name: s.value for f in f1 for s in f.samples if re.search(r"last.*success|success.*timestamp", s.name)}
    time.sleep(1.1)
    r2 = ctx.cli(*live_run_args(pub, st, rp, gate=f"redis://127.0.0.1:{free_port()}/0", extra=["--metrics-file", mp]), timeout=60)
    no_tb(r2)
    check(r2.rc == 1, f"second run rc {r2.rc}")
    try:
        _, f2 = _parse_metrics(mp)
    except Exception as e:
        broke(f"metrics file unparseable after a refused run: {e}")
    ts2 = {s.name: s.value for f in f2 for s in f.samples if re.search(r"last.*success|success.*timestamp", s.name)}
    check(ts1 and ts1 == ts2, f"last-success timestamp changed or missing: {ts1} -> {ts2}")
    held("kept the last success")


# =========================================================================== point 11: WARC

def _warc_record(wtype, uri, block, extra=()):
    hdr = [f"WARC/1.0", f"WARC-Type: {wtype}", f"WARC-Record-ID: <urn:uuid:{hashlib.md5((wtype + uri + str(len(block))).encode()).hexdigest()[:8]}-0000-0000-0000-000000000000>",
           "WARC-Date: 2024-01-01T00:00:00Z"]
    if uri:
        hdr.append(f"WARC-Target-URI: {uri}")
    hdr += list(extra)
    hdr += [f"Content-Length: {len(block)}"]
    if wtype in ("response", "request"):
        hdr.append("Content-Type: application/http; msgtype=" + wtype)
    return ("\r\n".join(hdr) + "\r\n\r\n").encode() + block + b"\r\n\r\n"


def _b32sha1(b):
    return "sha1:" + base64.b32encode(hashlib.sha1(b).digest()).decode()


@attack("W01", 11, "WARC import: body stored decoded under Content-Encoding: gzip (wabac.js style)",
        "imports the decoded body, says so (stored_decoded), counts every left-out record with a reason")
def w01(ctx):
    body = b'{"title": "stored decoded"}'
    http_block = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    warc = (_warc_record("warcinfo", "", b"software: attack\r\n")
            + _warc_record("response", f"https://{HOST}/a", http_block, [f"WARC-Payload-Digest: {_b32sha1(body)}"])
            + _warc_record("response", f"http://{HOST}/plain", b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"))
    p = ctx.path("wabac.warc")
    open(p, "wb").write(warc)
    out = ctx.path("out.json")
    r = ctx.cli("fixture", "import-warc", p, "--out", out, "--json")
    no_tb(r)
    check(r.rc == 0, f"rc {r.rc}: {r.short()}")
    j = r.json() or {}
    check(j.get("stored_decoded") == 1 or find_key(j, "stored_decoded")[1] == 1, f"stored_decoded not 1: {r.out[:200]}")
    check(find_key(j, "skipped")[1] == 2, f"skipped {find_key(j, 'skipped')[1]} (expected warcinfo + http)")
    fx = open(out).read()
    check("stored decoded" in fx, "the fixture lacks the decoded body")
    reasons = find_key(j, "skipped_by_reason")[1] or {}
    check(reasons.get("record_type") == 1 and reasons.get("not_https") == 1, f"reasons {reasons}")
    held("stored-decoded body imported and counted")


@attack("W02", 11, "WARC import: stored-decoded body whose payload digest does not match",
        "the record is left out and counted with a reason; exit 1 (nothing importable)")
def w02(ctx):
    body = b'{"title": "x"}'
    http_block = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    warc = _warc_record("response", f"https://{HOST}/a", http_block, [f"WARC-Payload-Digest: {_b32sha1(b'other')}"])
    p = ctx.path("bad.warc")
    open(p, "wb").write(warc)
    r = ctx.cli("fixture", "import-warc", p, "--out", ctx.path("o.json"), "--json")
    no_tb(r)
    j = r.json() or {}
    check(r.rc == 1, f"rc {r.rc}")
    check(find_key(j, "skipped")[1] == 1, f"not counted: {r.out[:200]}")
    held("refused and counted")


@attack("W03", 11, "WARC import: counts add up (records = responses + revisits + requests + skipped)",
        "the identity holds on a mixed archive")
def w03(ctx):
    body = b"<h1>x</h1>"
    gz = gzip.compress(body, mtime=0)
    ok_block = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\nContent-Length: " + str(len(gz)).encode() + b"\r\n\r\n" + gz
    warc = (_warc_record("warcinfo", "", b"x: y\r\n")
            + _warc_record("request", f"https://{HOST}/b", b"GET /b HTTP/1.1\r\nHost: www.example.com\r\n\r\n")
            + _warc_record("response", f"https://{HOST}/b", ok_block)
            + _warc_record("metadata", f"https://{HOST}/b", b"a: b\r\n")
            + _warc_record("response", f"https://{HOST}/c", b"not http at all"))
    p = ctx.path("mixed.warc")
    open(p, "wb").write(warc)
    r = ctx.cli("fixture", "import-warc", p, "--out", ctx.path("o.json"), "--json")
    no_tb(r)
    j = r.json() or {}
    g = lambda k: find_key(j, k)[1] or 0
    check(g("records") == 5, f"records {g('records')}")
    check(g("records") == g("responses") + g("revisits_resolved") + g("requests") + g("skipped"), f"identity broken: {j}")
    held(f"counts {g('responses')}+{g('requests')}+{g('skipped')} = 5")


# =========================================================================== runner

def run_one(aid):
    a = ATTACKS[aid]
    ctx = Ctx(aid)
    t0 = time.monotonic()
    try:
        a["fn"](ctx)
        verdict, reason = "error", "error: attack ended without a verdict"
    except Verdict as v:
        verdict, reason = v.verdict, v.reason
    except Exception as e:
        verdict, reason = "error", f"error: attack crashed: {type(e).__name__}: {e} @ {traceback.format_exc().splitlines()[-3].strip()[:100]}"
    finally:
        ctx.close()
    return dict(id=aid, point=a["point"], title=a["title"], expect=a["expect"], verdict=verdict,
                reason=reason.replace("\n", " ")[:400], seconds=round(time.monotonic() - t0, 1))


def child_main(aid):
    res = run_one(aid)
    sys.stdout.write("@@RESULT@@" + json.dumps(res) + "\n")
    sys.stdout.flush()


def run_child(aid):
    a = ATTACKS[aid]
    t0 = time.monotonic()
    p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--child", aid], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=a["timeout"])
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.communicate()
        _reap_strays(aid)
        return dict(id=aid, point=a["point"], title=a["title"], expect=a["expect"], verdict="broke",
                    reason=f"the attack hung past its {a['timeout']} s timeout (killed)", seconds=round(time.monotonic() - t0, 1))
    # children of the attack (redis-server, CLI runs) share its session: make sure none outlive it
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    _reap_strays(aid)
    for line in out.decode("utf-8", "replace").splitlines():
        if line.startswith("@@RESULT@@"):
            return json.loads(line[len("@@RESULT@@"):])
    return dict(id=aid, point=a["point"], title=a["title"], expect=a["expect"], verdict="error",
                reason="error: attack process died: " + err.decode("utf-8", "replace").strip().splitlines()[-1:][0][:200]
                if err.strip() else "error: no result", seconds=round(time.monotonic() - t0, 1))


def _reap_strays(aid):
    """Processes started under another uid (setpriv) leave the session's group only if they setsid; none do,
    but temp dirs of killed attacks remain: remove them."""
    for d in os.listdir(tempfile.gettempdir()):
        if d.startswith(f"atk24-{aid}-"):
            shutil.rmtree(os.path.join(tempfile.gettempdir(), d), ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child")
    ap.add_argument("-k", action="append", default=[], help="run attacks whose id starts with this (repeatable)")
    ap.add_argument("-j", type=int, default=2, help="attacks at once (default 2)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--results", default=RESULTS)
    a = ap.parse_args()
    if a.child:
        return child_main(a.child)
    ids = [i for i in ATTACKS if not a.k or any(i.startswith(k) for k in a.k)]
    if a.list:
        for i in ids:
            x = ATTACKS[i]
            print(f"{i:4} p{x['point']:<2} {x['title']}  -> {x['expect']}")
        return
    from concurrent.futures import ThreadPoolExecutor
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    results = {}
    with open(a.results, "w") as out, ThreadPoolExecutor(max(1, min(a.j, 2))) as ex:
        futs = {ex.submit(run_child, i): i for i in ids}
        for f in futs:
            pass
        from concurrent.futures import as_completed
        for f in as_completed(futs):
            r = f.result()
            r["battery_started"] = started
            r["target"] = MAIN
            results[r["id"]] = r
            out.write(json.dumps(r) + "\n")
            out.flush()
            print(f"  {r['id']:4} {r['verdict']:6} {r['seconds']:6.1f}s  {r['reason'][:110]}", file=sys.stderr, flush=True)
    print(f"\n{'id':4} {'pt':>3}  {'verdict':7} {'title':62} reason")
    for i in ids:
        r = results[i]
        print(f"{i:4} {r['point']:>3}  {r['verdict']:7} {r['title'][:62]:62} {r['reason'][:150]}")
    n = len(ids)
    h = sum(1 for i in ids if results[i]["verdict"] == "held")
    b = sum(1 for i in ids if results[i]["verdict"] == "broke")
    e = n - h - b
    per = {}
    for i in ids:
        per.setdefault(results[i]["point"], [0, 0])
        per[results[i]["point"]][1] += 1
        per[results[i]["point"]][0] += results[i]["verdict"] == "held"
    print("\nby point: " + ", ".join(f"p{p} {x[0]}/{x[1]}" for p, x in sorted(per.items())))
    print(f"TOTAL: held {h} of {n} (broke {b}, error {e})")


if __name__ == "__main__":
    main()
