"""The coverage block: fifteen members in the specification's order (COV-03, D-16, D-56).

`truncated` is not a member (D-17); it travels next to the block in the run record.
"""

from __future__ import annotations

from dataclasses import dataclass

from collection.merge.states import BUDGETS, COVERAGE_MEMBERS


@dataclass(frozen=True)
class Coverage:
    discovered: int              # distinct pages this run's discovery listed (COV-04)
    discovery_requests: int      # listing requests this run (COV-05)
    discovery_complete: bool     # natural stop without refusal (COV-06)
    discovery_failure: str | None  # first listing request not read (COV-07)
    duplicates_dropped: int      # COV-08
    known: int                   # ledger pages after the merge (COV-09)
    fetched_this_run: int        # new + unchanged + changed (COV-10, D-16)
    unchanged: int               # COV-11
    changed: int                 # COV-11
    failed_this_run: int         # COV-13
    pending: int                 # ledger totals after the merge (COV-13..15)
    failed: int
    skipped: int
    budget_exhausted: str | None  # COV-16, COV-17, D-21
    complete: bool               # COV-18

    def __post_init__(self) -> None:
        if self.budget_exhausted is not None and self.budget_exhausted not in BUDGETS:
            raise ValueError(f"budget_exhausted {self.budget_exhausted!r} is not a budget")

    def as_dict(self) -> dict[str, object]:
        """The members in the specification's order; serialise with canonical JSON (D-56)."""
        return {name: getattr(self, name) for name in COVERAGE_MEMBERS}


def is_complete(*, discovery_complete: bool, pending: int, failed: int, truncated: bool,
                budget_exhausted: str | None = None) -> bool:
    """COV-18's four conditions, and no ceiling left work undone.

    COV-18 says "only when", a necessary condition; COV-02 adds that a run ended by a
    budget reports false. The fifth condition matters when max_pages kept new ids out
    of the ledger, or a ceiling stopped revisits, while nothing was pending or failed.
    """
    return (discovery_complete and pending == 0 and failed == 0 and not truncated
            and budget_exhausted is None)
