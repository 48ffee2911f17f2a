"""What every fetcher of one process shares (shell): one politeness scheduler, one lock, one
connection cap per host, the waiters' queue per host, and the gate shared with other processes.

A single-source run has one fetcher and one pacer. A dataset run gives the one pacer to every
source's fetcher, so sources that read one origin are paced as one client (FETCH-16, FETCH-18,
FETCH-19, D-10 across sources). With `fair`, the workers waiting for a host are served in the
order they began to wait: a source with more workers, or enrolled earlier on a virtual clock
that breaks ties by enrolment, cannot starve another source of a host they share.
"""

from __future__ import annotations

import math
import threading
from collections import deque

from collection.fetch.gate import Gate, GateUnavailable, Lease
from collection.fetch.holds import HoldBook
from collection.fetch.politeness import Politeness
from collection.fetch.redis_gate import MAX_WAIT_SECONDS, MIN_WAIT_SECONDS

# The stop a fetch reports when the shared gate failed. It is not a budget (never given to
# Budget.record_stop or the planner): the run loop reads `Pacer.failed` instead.
GATE_UNAVAILABLE = "gate_unavailable"


class Pacer:
    def __init__(self, politeness: Politeness, gate: Gate | None = None, *, fair: bool = False):
        self.politeness = politeness
        self.gate = gate
        self.fair = fair
        self.lock = threading.Lock()            # guards the scheduler, the counts below, every budget
        # Requests per host admitted (their politeness ticket taken) and not yet being written:
        # while there is one, the host admits nobody else (Fetcher._wait_ready).
        self.unwritten: dict[str, int] = {}
        self.waiters: dict[str, deque] = {}
        self.gate_failure: str | None = None     # the first gate error: the run refuses
        # robots.txt answers of this run (D-58: once per run), per origin and the allowlist
        # its redirects were judged by (D-66): the sources of a dataset that allow the same
        # origins ask an origin for its robots.txt once, not once each (collection.fetch.fetcher)
        self.robots: dict = {}
        self.robots_lock = threading.Lock()
        # the holds this process met, announced once each (collection.fetch.holds)
        self.holds = HoldBook()

    def is_head(self, host: str, token: object) -> bool:
        queue = self.waiters.get(host)
        return not self.fair or (queue is not None and queue[0] is token)

    def ahead(self, host: str, token: object) -> int:
        """How many waiters are before `token` in the host's line (0 unless fair)."""
        queue = self.waiters.get(host)
        if not self.fair or queue is None:
            return 0
        for position, other in enumerate(queue):
            if other is token:
                return position
        return 0

    def join(self, host: str, token: object) -> None:
        if self.fair:
            self.waiters.setdefault(host, deque()).append(token)

    def leave(self, host: str, token: object) -> None:
        if self.fair:
            queue = self.waiters.get(host)
            if queue is not None and token in queue:
                queue.remove(token)

    # --- the shared gate: every call under `lock`, failures remembered --------------------
    # Whatever a gate backend does wrong — unreachable, a reply of the wrong shape, a wait
    # that is not a finite number within MAX_WAIT_SECONDS, even an exception nobody planned
    # for — is a fault of the gate (GateUnavailable, issue 24 point 2), never a page's
    # failure or a worker thread's traceback.
    @property
    def failed(self) -> str | None:
        """The first gate fault of this run (a lost source lock included), or None."""
        if self.gate_failure is None and self.gate is not None:
            fault = getattr(self.gate, "fault", None)
            if fault:
                self.gate_failure = str(fault)
        return self.gate_failure

    def _fault(self, exc: Exception) -> GateUnavailable:
        if not isinstance(exc, GateUnavailable):
            exc = GateUnavailable(f"the gate {getattr(self.gate, 'description', 'backend')} failed: "
                                  f"{type(exc).__name__}")
        self.gate_failure = self.gate_failure or str(exc)
        return exc

    def gate_acquire(self, host: str, interval: float, ttl: float) -> Lease | float:
        try:
            answer = self.gate.acquire(host, interval, ttl)
        except Exception as exc:  # noqa: BLE001 - see above
            raise self._fault(exc) from None
        if isinstance(answer, Lease):
            return answer
        if isinstance(answer, bool) or not isinstance(answer, (int, float)) or not math.isfinite(answer) \
                or not 0 <= answer <= MAX_WAIT_SECONDS:
            raise self._fault(GateUnavailable(
                f"the gate {getattr(self.gate, 'description', 'backend')} asked for a wait that is not a number "
                f"of seconds from 0 to {MAX_WAIT_SECONDS:g} ({type(answer).__name__})"))
        return max(float(answer), MIN_WAIT_SECONDS)      # never a spin on a gate answering 0

    def gate_ask(self, method: str, *args):
        """A question whose answer steers the run (the hold behind a wait): a failure is the
        run's gate fault, raised as GateUnavailable."""
        try:
            return getattr(self.gate, method)(*args)
        except Exception as exc:  # noqa: BLE001 - see above
            raise self._fault(exc) from None

    def gate_quietly(self, method: str, *args) -> None:
        """sent / release / set_crawl_delay: a failure stops the run (it refuses at the end)
        but never breaks the request it is reported from; a lease not released expires."""
        if self.gate is None:
            return
        try:
            getattr(self.gate, method)(*args)
        except Exception as exc:  # noqa: BLE001 - see above
            self._fault(exc)
