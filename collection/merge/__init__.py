"""The merge: predecessor ledger + relation + this run's outcomes -> new ledger, relation and
coverage; the page-state tables, the work planner and the state CSV dialect.

Pure core: reads and writes through file-like values handed in by the run loop; never opens a file.
"""
