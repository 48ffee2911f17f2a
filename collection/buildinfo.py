"""The commit this copy was built from.

`build_zipapp.py` writes `collection/_commit.txt` into the zipapp; a source checkout asks
git; anything else says "unknown".
"""

from __future__ import annotations

import subprocess
from functools import lru_cache
from importlib import resources
from pathlib import Path


@lru_cache(maxsize=1)
def commit() -> str:
    try:
        text = resources.files("collection").joinpath("_commit.txt").read_text(encoding="utf-8").strip()
        if text:
            return text
    except (FileNotFoundError, OSError):
        pass
    root = Path(__file__).resolve().parent.parent
    if (root / ".git").exists():
        try:
            out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                                 text=True, timeout=5, check=True)
            return out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return "unknown"
