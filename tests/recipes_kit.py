"""Recipes for tests built from the worked example, with one block replaced."""

from __future__ import annotations

import copy
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = json.loads((ROOT / "fixtures" / "recipes" / "council_decisions.json").read_text())


def recipe(discovery: dict, *, origins: tuple[str, ...] = ("https://www.example.com",),
           revisit: str = "never", **top) -> dict:
    """The worked example with `collection.discovery` (and any top-level member) replaced."""
    document = copy.deepcopy(EXAMPLE)
    document["collection"]["discovery"] = discovery
    document["collection"]["pages"]["revisit"] = {"kind": revisit}
    document["collection"]["pages"]["allowed_origins"] = list(origins)
    document["connector"]["origin"] = origins[0]
    document.update(top)
    return document


def write(tmp_path: Path, document: dict, name: str = "recipe.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document, indent=2))
    return path
