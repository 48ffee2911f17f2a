"""The collection conformance suite: language-neutral cases, a harness protocol, a runner.

Standalone: nothing here imports the `collection` package. Implementations are driven
through a harness process (see README.md); this project's own harness lives in
`conformance.harnesses.collection_harness` and imports collection lazily.
"""

from __future__ import annotations

import importlib.util
import json
from functools import lru_cache
from pathlib import Path

PROTOCOL_VERSION = 2          # the newest the runner speaks; v1 harnesses are still driven
PROTOCOL_VERSIONS = (1, 2)
# Capabilities (JSON-Schema-Test-Suite's `optional/`, as a property of each case): a case
# needing only required capabilities must run; one that also needs an optional capability
# may be skipped by a harness that does not announce it. A run that skips a required case
# is not green.
REQUIRED_CAPABILITIES = ("registration", "runs", "inline", "loopback")   # the mode's own one only
OPTIONAL_CAPABILITIES = ("codes:collection-v1", "clock_advance", "deadline", "action_plan", "virtual_clock",
                         "transform:collection-v1")
def _package_root():
    """The package's folder, or (run from collection-conformance.pyz) its place in the zip,
    read through importlib.resources; both answer iterdir, joinpath and read_text."""
    here = Path(__file__).resolve().parent
    if here.is_dir():
        return here
    import importlib.resources

    return importlib.resources.files("conformance")


HERE = _package_root()
CASES_DIR = HERE / "cases"
CLAUSES_FILE = HERE / "clauses.json"
UNOBSERVABLE_FILE = HERE / "unobservable.json"


def schemas_dir() -> Path:
    """The repository's `schemas/` folder, the copy inside collection-conformance.pyz
    (conformance/schemas), or collection's installed copy (collection/schemas), found
    without importing the collection package."""
    if isinstance(HERE, Path):
        repo = HERE.parent / "schemas"
        if (repo / "conformance-case.schema.json").is_file():
            return repo
    own = HERE / "schemas"
    if own.joinpath("conformance-case.schema.json").is_file():
        return own
    spec = importlib.util.find_spec("collection")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            candidate = Path(location) / "schemas"
            if (candidate / "conformance-case.schema.json").is_file():
                return candidate
    raise FileNotFoundError("cannot find the schemas folder (schemas/conformance-case.schema.json)")


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict:
    return json.loads(schemas_dir().joinpath(name).read_text(encoding="utf-8"))
