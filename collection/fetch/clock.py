"""The clock the shell injects into the run loop, the fetcher and the replay transport.

The core never reads a clock (GUIDE, "a pure core inside a thin shell"): the scheduler and
the budgets take `now` as an argument, and this module is where `now` comes from.

- `SystemClock`: `time.monotonic`, a real sleep, `time.time`.
- `VirtualClock`: time that jumps to deadlines, so a replayed corpus that takes an hour
  live runs in seconds with the same timestamps.

Threads and the virtual clock
-----------------------------
A virtual clock with one thread is trivial: `sleep_until` sets the time to the deadline.
With several worker threads that is wrong, because one worker sleeping until t=5 would
drag the others (which meant to start at t=1) into its future. So the virtual clock has
a second mode: *participants*. Every thread that takes part in a run is enrolled before
it starts (`enroll()`, from the thread that creates the workers, so no worker can race
ahead of an unregistered sibling), and leaves when it is done (the `Participant` is a
context manager). While there are participants, time advances only when every one of
them is inside `sleep_until`; it then jumps to the earliest deadline among them, and only
the sleepers whose deadline has come wake up. This is the discrete-event rule: no thread
can observe time passing while another thread still has work to do "now".

The contract that keeps this correct: a participant blocks only in `sleep_until`, or on a
mutex held briefly by a participant that is running (a thread waiting for a lock counts as
running, so it holds time still, which is what we want). A participant must never block
on a queue, an event or a join that only a *sleeping* participant can release — that
would deadlock, because the sleeper waits for time and time waits for everyone. A
worker with nothing to do leaves, or sleeps until the next instant it could have work.

With no participants enrolled, `sleep_until` simply jumps (the single-threaded mode the
replay run loop uses when it fetches cooperatively).

Turns (`VirtualClock(turns=True)`, what `run --replay` uses): participants then run one
at a time. A participant runs until it sleeps; the turn then passes to the waiting
participant with the earliest deadline, ties going to the one enrolled first, and time
jumps to that deadline. Since nothing else decides who runs when, a replay on several
workers is deterministic: which page is fetched at which virtual instant, and so every
timestamp in the relation, is the same on every replay (the order of real thread
wake-ups decides nothing). Enroll every participant before starting any of them.
"""

from __future__ import annotations

import heapq
import threading
import time
from typing import Protocol, runtime_checkable

# A fixed, recognisable default epoch for virtual runs: 2024-01-01T00:00:00Z.
DEFAULT_VIRTUAL_WALL = 1_704_067_200.0


@runtime_checkable
class Clock(Protocol):
    def monotonic(self) -> float: ...

    def sleep_until(self, deadline: float) -> None: ...

    def wall(self) -> float: ...


class SystemClock:
    """The real clock. `sleep_until` takes a deadline on the monotonic scale."""

    def monotonic(self) -> float:
        return time.monotonic()

    def wall(self) -> float:
        return time.time()

    def sleep_until(self, deadline: float) -> None:
        # time.sleep may wake early on some platforms; loop until the deadline has passed
        # so a politeness gap is never shortened by a spurious wake-up.
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            time.sleep(remaining)


class Participant:
    """One enrolled thread of a `VirtualClock`; leaving is idempotent."""

    def __init__(self, clock: VirtualClock, index: int = 0) -> None:
        self._clock = clock
        self._index = index              # enrollment order: the tie-break between turns
        self._left = False

    def leave(self) -> None:
        if not self._left:
            self._left = True
            self._clock._leave(threading.get_ident())

    def join(self) -> None:
        """Take part from here on, in the thread that calls it. Until then the thread is
        enrolled but not bound: it holds time still (no turn is handed out before every
        participant has joined) while it does what needs no clock, such as disk work that
        would otherwise run one thread's turn at a time (run/dataset.py)."""
        # Binding the participant to the thread that uses it lets the clock tell a
        # participant's sleep from an outsider's (a supervising thread, a test).
        self._clock._bind(threading.get_ident(), self._index)

    def __enter__(self) -> Participant:
        self.join()
        return self

    def __exit__(self, *exc: object) -> None:
        self.leave()


class VirtualClock:
    """Time that jumps to deadlines. See the module docstring for the threading rule."""

    def __init__(self, start_wall: float = DEFAULT_VIRTUAL_WALL, start_monotonic: float = 0.0,
                 turns: bool = False) -> None:
        self._turns = turns
        self._holder: int | None = None                 # turns: the participant running now
        self._index: dict[int, int] = {}                # turns: thread ident -> enrollment order
        self._waiting_turn: dict[int, float] = {}       # turns: ident -> the deadline it waits for
        # turns: (deadline, enrolment order, serial, ident) of every wait, the stale ones
        # dropped lazily, so choosing the next turn costs log(participants), not a scan of
        # them all (a dataset run has hundreds of participants)
        self._turn_heap: list[tuple[float, int, int, int]] = []
        self._turn_serial: dict[int, int] = {}
        self._serials = 0
        self._enrolled = 0
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._turn_conds: dict[int, threading.Condition] = {}   # turns: wake only the one chosen
        self._now = float(start_monotonic)
        self._wall_offset = float(start_wall) - float(start_monotonic)
        self._participants = 0
        self._bound: set[int] = set()
        self._sleepers: dict[object, float] = {}        # participants inside sleep_until
        self._outsiders: dict[object, float] = {}       # other threads inside sleep_until

    # --- reading -------------------------------------------------------------------
    def monotonic(self) -> float:
        with self._cond:
            return self._now

    def wall(self) -> float:
        with self._cond:
            return self._wall_offset + self._now

    @property
    def participants(self) -> int:
        with self._cond:
            return self._participants

    # --- moving time -------------------------------------------------------------------
    def set_wall(self, wall: float) -> None:
        """Make `wall()` read `wall` now, without moving the monotonic scale: where a replayed
        run starts (the start its recording noted). Legal only before the run begins, while
        no thread takes part or sleeps, so nobody sees the wall clock jump."""
        with self._cond:
            if self._participants or self._sleepers or self._outsiders:
                raise RuntimeError("the wall clock can be set only before a run begins")
            self._wall_offset = float(wall) - self._now

    def advance(self, seconds: float) -> None:
        """Move time forward from outside (tests); wakes every sleeper whose deadline came."""
        if seconds < 0:
            raise ValueError("a clock never goes backwards")
        with self._cond:
            self._now += seconds
            self._cond.notify_all()

    def sleep_until(self, deadline: float) -> None:
        with self._cond:
            if deadline <= self._now:
                return
            if self._turns and threading.get_ident() in self._bound:
                self._await_turn(threading.get_ident(), deadline)
                return
            if self._participants == 0:
                self._now = deadline
                self._cond.notify_all()
                return
            # An outsider waits for time like anyone else but never holds it still: only
            # participants count towards "everyone is waiting".
            waiting = self._sleepers if threading.get_ident() in self._bound else self._outsiders
            token = object()
            waiting[token] = deadline
            try:
                self._maybe_advance()
                while self._now < deadline:
                    self._cond.wait()
            finally:
                del waiting[token]

    def enroll(self) -> Participant:
        """Register one participant; call it before starting the thread that will use it."""
        with self._cond:
            self._participants += 1
            index = self._enrolled
            self._enrolled += 1
        return Participant(self, index)

    def _bind(self, ident: int, index: int = 0) -> None:
        with self._cond:
            self._bound.add(ident)
            self._index[ident] = index
            if self._turns:
                self._await_turn(ident, self._now)    # start only when the turn comes

    def _leave(self, ident: int) -> None:
        with self._cond:
            self._participants -= 1
            self._bound.discard(ident)
            self._waiting_turn.pop(ident, None)
            if self._holder == ident:
                self._holder = None
            if self._turns:
                self._pass_turn()
            else:
                self._maybe_advance()

    # --- turns -------------------------------------------------------------------------
    def _await_turn(self, ident: int, deadline: float) -> None:
        """Called with the lock held: give up the turn, wait until it comes back at `deadline`."""
        self._waiting_turn[ident] = deadline
        self._serials += 1
        self._turn_serial[ident] = self._serials
        heapq.heappush(self._turn_heap, (deadline, self._index.get(ident, 0), self._serials, ident))
        if self._holder == ident:
            self._holder = None
        mine = self._turn_conds.get(ident)
        if mine is None:
            mine = self._turn_conds[ident] = threading.Condition(self._lock)
        self._pass_turn()
        while self._holder != ident:
            mine.wait()
        del self._waiting_turn[ident]

    def _pass_turn(self) -> None:
        # Only once every participant waits (none is running or still starting up) is the
        # next one chosen, so the choice never depends on how fast real threads are.
        if self._holder is not None or not self._waiting_turn or len(self._waiting_turn) < self._participants:
            return
        heap = self._turn_heap
        while True:
            _deadline, _index, serial, ident = heap[0]
            if ident in self._waiting_turn and self._turn_serial.get(ident) == serial:
                break
            heapq.heappop(heap)                 # a wait already over (or a participant gone)
        heapq.heappop(heap)
        if self._waiting_turn[ident] > self._now:
            self._now = self._waiting_turn[ident]
            self._cond.notify_all()             # outsiders waiting for time
        self._holder = ident
        self._turn_conds[ident].notify()

    def _maybe_advance(self) -> None:
        # Called with the lock held. A sleeper that was woken but has not yet removed
        # itself still has a deadline <= now, so the minimum below cannot move time past
        # it: stale entries hold time still instead of letting it run ahead.
        if len(self._sleepers) < self._participants:
            return
        deadlines = [*self._sleepers.values(), *self._outsiders.values()]
        if not deadlines:
            return
        earliest = min(deadlines)
        if earliest > self._now:
            self._now = earliest
        self._cond.notify_all()
