"""Independent faults: every fault of bench/faults.json implemented as a mutant of collection.

bench/faults.json was written by a helper who never read collection/, from the
specification and its clauses alone (see bench/FAULTS.md for its provenance). Each fault
keeps its id, clauses and text; the function under it seeds that fault into this
project's code as faithfully as the text allows (no fault is weakened to make it killable).
Faults not implemented here are listed by `python bench/mutants_independent.py`.
"""

from __future__ import annotations

import json
from pathlib import Path

from mutation_kit import MUTANTS, mutant

FAULTS = {f["id"]: f for f in json.loads((Path(__file__).resolve().parent / "faults.json").read_text(encoding="utf-8"))}


def fault(fid: str):
    """Register the function below as fault `fid` of faults.json (its text and clauses)."""
    f = FAULTS[fid]
    return mutant(fid, f["family"], f["fault"], clauses=tuple(f["clauses"]), mode=f["mode"], fault_set="independent")


# === the faults ===========================================================================

# === end of the faults ====================================================================

if __name__ == "__main__":
    missing = [fid for fid in FAULTS if fid not in MUTANTS]
    print(f"{len(FAULTS) - len(missing)} of {len(FAULTS)} faults implemented")
    for fid in missing:
        print(f"  not implemented: {fid}: {FAULTS[fid]['fault']}")
