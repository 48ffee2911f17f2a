"""Where the JSON Schemas shipped with the project are read from.

In a wheel or the zipapp, `schemas/` is installed as the package `collection.schemas`
(pyproject maps it); in a source checkout or an editable install that package does not
exist, so the repository's own `schemas/` folder is read instead.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from pathlib import Path

_CHECKOUT_SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def schema_text(name: str) -> str:
    try:
        return resources.files("collection.schemas").joinpath(name).read_text(encoding="utf-8")
    except ModuleNotFoundError:
        return (_CHECKOUT_SCHEMAS / name).read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict:
    """The parsed schema `schemas/<name>`, cached: schemas never change while a process runs."""
    return json.loads(schema_text(name))
