"""`collection build` (shell): a dataset's tables, run in an embedded DuckDB over each source's
current relation, written as an atomic generation under DIR/build/ (D-71), the SQL sandboxed
(D-72). `inputs` finds and checks what is read; `engine` runs DuckDB and writes the generation.

Imports DuckDB: only the build file (collection-build-<target>.pyz) and an install with the
`build` extra carry it (D-73); `collection/commands/build.py` says so when it is missing.
"""
