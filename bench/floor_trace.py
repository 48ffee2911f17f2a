"""`collection` with each request's client-side instants written to a file (bench/floor.py --trace).

Run as `python bench/floor_trace.py run ...` with FLOOR_TRACE=PATH: the command runs as
`python -m collection run ...` would, and at exit PATH holds one JSON object per request:

  host, path
  admitted   the fetcher took the host's politeness slot (Fetcher._wait_ready returned)
  writing    the connection was ready and the request was about to be written (before_write)
  written    the request's bytes had been handed to the kernel (the transport's callback)
  connect    [start, end] of the TCP + TLS set-up when this request opened a connection

all on CLOCK_REALTIME (time.time()), the clock the server's SO_TIMESTAMPNS stamps use, so a
request's client instants and its kernel arrival at the origin can be set side by side.
Instrumentation for the benchmark only: it wraps methods, it changes no decision.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from collection.fetch import fetcher as F  # noqa: E402
from collection.fetch import urllib3_transport as U  # noqa: E402

_records: list[dict] = []
_lock = threading.Lock()
_local = threading.local()


def _wrap() -> None:
    wait_ready, writing = F.Fetcher._wait_ready, F.Fetcher._writing
    connect, request = U._PinnedHTTPSConnection.connect, U._PinnedHTTPSConnection.request

    def traced_wait_ready(self, host):
        slot = wait_ready(self, host)
        _local.record = {"host": host, "admitted": time.time()}
        return slot

    def traced_writing(self, slot):
        record = getattr(_local, "record", None) or {"host": slot.host}
        record["writing"] = time.time()
        done = writing(self, slot)

        def traced_written():
            done()
            record["written"] = time.time()
        return traced_written

    def traced_connect(self):
        started = time.time()
        try:
            return connect(self)
        finally:
            record = getattr(_local, "record", None)
            if record is not None:
                record["connect"] = [started, time.time()]

    def traced_request(self, method, url, *args, **kwargs):
        record = getattr(_local, "record", None)
        if record is not None and "path" not in record:
            record["path"] = url
            with _lock:
                _records.append(record)
        return request(self, method, url, *args, **kwargs)

    F.Fetcher._wait_ready = traced_wait_ready
    F.Fetcher._writing = traced_writing
    U._PinnedHTTPSConnection.connect = traced_connect
    U._PinnedHTTPSConnection.request = traced_request


@atexit.register
def _dump() -> None:
    path = os.environ.get("FLOOR_TRACE")
    if path:
        with _lock, open(path, "w", encoding="utf-8") as handle:
            json.dump(_records, handle)


if __name__ == "__main__":
    _wrap()
    from collection.cli import main

    sys.argv[0] = "collection"
    main()
