"""The transform (core): typed tables declared in a dataset document, checked without data.

Pure: parsing and typing the SQL, and the contract between a table's declared columns and
what its SELECT gives, touch no engine, file or clock. `collection build` (shell) runs the
same contract against the real engine (DuckDB) before any row is written.
"""
