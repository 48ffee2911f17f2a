"""The failed pages a generation names, and the failing bodies it keeps (issue 24 point 9).

The ledger keeps a failed page's code, class and latest failure (`failed_at`); an operator
also needs since when it has failed and how often, and for a decode failure the body the
Reader refused, to reproduce it with `collection decode`. Those live in the run record
(`failures.failed_pages`), not in the ledger, so the ledger format (docs/state-formats.md,
read by the conformance suite) stays as it is: each run carries the predecessor's
streaks forward and writes them again.

Bodies are kept only for deterministic decode failures (codes.DECODE_FAILURES), in
`<generation>/failed-bodies/`, bounded in count and bytes: a publisher error's body says
nothing the next run will not say better, and keeping every body would grow without bound.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import threading
from dataclasses import dataclass
from typing import Iterable, Mapping

from collection import codes
from collection.merge.outcomes import FAILED

BODIES_DIR = "failed-bodies"
MAX_BODIES = 10                         # as many as the summary names
MAX_BODY_BYTES = 4 * 1024 * 1024        # a larger page is not kept (the entry says how to fetch it)
MAX_TOTAL_BYTES = 16 * 1024 * 1024      # all of one generation's kept bodies together

_TIMESTAMP = re.compile(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\Z")
_MAX_ATTEMPTS = 10 ** 9


def _media_type(value: object) -> str | None:
    """A Content-Type as the publisher sent it goes into a printed command line: only short
    printable ASCII (no terminal escapes) is kept."""
    if isinstance(value, str) and value and len(value) <= 200 and value.isascii() and value.isprintable():
        return value
    return None


def body_name(page_id: str) -> str:
    """The file a page's failing body is kept in: stable across generations, so a body
    carried forward keeps its name, and free of anything a page_id could smuggle in."""
    return hashlib.sha256(page_id.encode("utf-8", "surrogatepass")).hexdigest()[:24] + ".body"


@dataclass(frozen=True)
class KeptBody:
    body: bytes
    media_type: str | None


class BodyKeeper:
    """The failing bodies of this run's decode failures, bounded (workers add concurrently)."""

    def __init__(self, max_bodies: int = MAX_BODIES, max_body_bytes: int = MAX_BODY_BYTES,
                 max_total_bytes: int = MAX_TOTAL_BYTES):
        self.max_bodies = max_bodies
        self.max_body_bytes = max_body_bytes
        self.max_total_bytes = max_total_bytes
        self.bodies: dict[str, KeptBody] = {}
        self.total = 0
        self._lock = threading.Lock()

    def keep(self, page_id: str, code: str, body: bytes, media_type: str | None) -> bool:
        if code not in codes.DECODE_FAILURES or len(body) > self.max_body_bytes:
            return False
        with self._lock:
            if (len(self.bodies) >= self.max_bodies or self.total + len(body) > self.max_total_bytes
                    or page_id in self.bodies):
                return False
            self.bodies[page_id] = KeptBody(bytes(body), _media_type(media_type))
            self.total += len(body)
            return True


def streaks_of(record: Mapping | None) -> dict[str, dict]:
    """page_id -> {since, attempts, body, media_type} from a predecessor's run record. The
    record is a file on disk, so every entry is checked and a malformed one ignored (that
    page's streak then restarts from its ledger row)."""
    out: dict[str, dict] = {}
    failures = record.get("failures") if isinstance(record, Mapping) else None
    entries = failures.get("failed_pages") if isinstance(failures, Mapping) else None
    if not isinstance(entries, list):
        return out
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        page_id, since, attempts = entry.get("page_id"), entry.get("since"), entry.get("attempts")
        if not (isinstance(page_id, str) and isinstance(since, str) and _TIMESTAMP.match(since)
                and isinstance(attempts, int) and not isinstance(attempts, bool) and 1 <= attempts <= _MAX_ATTEMPTS):
            continue
        body = entry.get("body")
        media_type = entry.get("media_type")
        out[page_id] = {"since": since, "attempts": attempts,
                        "body": body if body == f"{BODIES_DIR}/{body_name(page_id)}" else None,
                        "media_type": _media_type(media_type)}
    return out


def failed_pages(ledger: Mapping, previous_ledger: Mapping, attempted: Iterable[str],
                 streaks: Mapping[str, dict]) -> list[dict]:
    """Every page the new ledger holds as failed, oldest streak first (then page_id).

    `attempts` counts the runs in a row that tried the page and failed (retries within a
    run are one attempt); `since` is the first failure of that unbroken series. A page
    failed before this run whose predecessor record says nothing (a record written before
    these members existed) starts its series at the predecessor's `failed_at`."""
    tried = set(attempted)
    out = []
    for page_id, row in ledger.items():
        if row.state != FAILED:
            continue
        before = previous_ledger.get(page_id)
        was_failed = before is not None and before.state == FAILED
        streak = streaks.get(page_id) if was_failed else None
        if streak is None and was_failed:
            streak = {"since": before.failed_at or row.failed_at, "attempts": 1, "body": None, "media_type": None}
        if page_id in tried or streak is None:
            since = streak["since"] if streak else row.failed_at
            attempts = streak["attempts"] + 1 if streak else 1
        else:
            since, attempts = streak["since"], streak["attempts"]
        if since and row.failed_at and row.failed_at < since:
            since = row.failed_at        # a clock set back: a series never starts after its latest failure
        out.append({"page_id": page_id, "url": row.url, "failure_code": row.failure_code,
                    "failure_class": row.failure_class, "failed_at": row.failed_at, "since": since,
                    "attempts": attempts, "this_run": page_id in tried,
                    "carried_body": None if page_id in tried or streak is None else streak.get("body"),
                    "carried_media_type": None if streak is None else streak.get("media_type")})
    out.sort(key=lambda e: (e["since"] or "", e["page_id"]))
    return out


def write_bodies(generation, entries: list[dict], keeper: BodyKeeper | None, previous_dir: str | None) -> None:
    """Put the kept bodies into the generation (this run's, and the predecessor's for pages
    still failing that this run did not try, hard-linked), and set each entry's `body` and
    `media_type`. Bounded again here, over both kinds together."""
    directory = os.path.join(generation.path, BODIES_DIR)
    made = False
    count = total = 0
    for entry in entries:
        page_id = entry["page_id"]
        carried, carried_type = entry.pop("carried_body"), entry.pop("carried_media_type")
        entry["body"] = entry["media_type"] = None
        if entry["failure_code"] not in codes.DECODE_FAILURES or count >= MAX_BODIES:
            continue
        name = f"{BODIES_DIR}/{body_name(page_id)}"
        fresh = keeper.bodies.get(page_id) if keeper is not None and entry["this_run"] else None
        source = None
        if fresh is None and carried and previous_dir:
            source = os.path.join(previous_dir, carried)
            try:
                info = os.lstat(source)
            except OSError:
                continue
            if not stat.S_ISREG(info.st_mode):
                continue            # only what a run wrote there: never follow a planted link
            size = info.st_size
        else:
            size = len(fresh.body) if fresh else 0
        if (fresh is None and source is None) or total + size > MAX_TOTAL_BYTES:
            continue
        if not made:
            os.mkdir(directory)
            made = True
        if fresh is not None:
            generation.write_bytes(name, fresh.body)
            entry["media_type"] = fresh.media_type
        else:
            try:
                os.link(source, os.path.join(generation.path, name), follow_symlinks=False)
            except OSError:
                continue
            entry["media_type"] = carried_type
        entry["body"] = name
        count += 1
        total += size
    if made and generation.store.sync is None:
        from collection.store.groupsync import fsync_directory

        fsync_directory(directory)
