"""Pausing Python's cyclic garbage collector around bulk work (shell helper).

Loading a ledger or merging a relation allocates hundreds of thousands of small objects
that form no reference cycles. Each allocation burst triggers collections that rescan
everything already loaded, so the cost grows faster than the page count. Pausing the
collector for those steps keeps them linear; reference counting still frees memory.
"""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def paused_gc() -> Iterator[None]:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
