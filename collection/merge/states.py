"""Protocol tables of the merge: page states, budgets, revisit kinds, coverage members.

Kept in one module (as h11 keeps its state machine in `_state.py`) so that the planner,
the merge engine, the ledger format and the docs all name the same values.
"""

from __future__ import annotations

from collection.merge.outcomes import FAILED, FETCHED, SKIPPED_ORIGIN

PENDING = "pending"
PAGE_STATES = (PENDING, FETCHED, FAILED, SKIPPED_ORIGIN)

# Which states a state may move to in one run. Every state can fall back to pending
# (a clamp clip, a missing-rows repair, a skipped page now allowed), and a page that
# answered once may answer differently the next time.
TRANSITIONS: dict[str, frozenset[str]] = {
    PENDING: frozenset({PENDING, FETCHED, FAILED, SKIPPED_ORIGIN}),
    FETCHED: frozenset({PENDING, FETCHED, FAILED, SKIPPED_ORIGIN}),
    FAILED: frozenset({PENDING, FETCHED, FAILED, SKIPPED_ORIGIN}),
    SKIPPED_ORIGIN: frozenset({PENDING, SKIPPED_ORIGIN}),
}

# The ceilings `budget_exhausted` may name (COV-16), in no particular precedence:
# D-21 names whichever stopped further work first.
MAX_REQUESTS = "max_requests"
MAX_SOURCE_BYTES = "max_source_bytes"
DEADLINE = "deadline"
MAX_PAGES = "max_pages"
MAX_FETCHES_PER_RUN = "max_fetches_per_run"
BUDGETS = (MAX_REQUESTS, MAX_SOURCE_BYTES, DEADLINE, MAX_PAGES, MAX_FETCHES_PER_RUN)

# revisit kinds (REG bounds table, MERGE-28..30)
REVISIT_NEVER = "never"
REVISIT_REVISION_HINT = "revision_hint"
REVISIT_INTERVAL = "interval"
REVISIT_KINDS = (REVISIT_NEVER, REVISIT_REVISION_HINT, REVISIT_INTERVAL)

# Why the planner chose a page: the three queues of step 2, in the order they drain.
WHY_PENDING = "pending"
WHY_FAILED = "failed"
WHY_REVISIT = "revisit"
WORK_QUEUES = (WHY_PENDING, WHY_FAILED, WHY_REVISIT)

# The fifteen coverage members in the specification's order (COV-03, D-56).
COVERAGE_MEMBERS = (
    "discovered",
    "discovery_requests",
    "discovery_complete",
    "discovery_failure",
    "duplicates_dropped",
    "known",
    "fetched_this_run",
    "unchanged",
    "changed",
    "failed_this_run",
    "pending",
    "failed",
    "skipped",
    "budget_exhausted",
    "complete",
)
