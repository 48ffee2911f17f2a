"""The run loop, the one place where the shell drives the core: discovery, fetches, Readers and the
merge for one source; plus `validate --probe`, the progress line and the GC pause used while merging.

Shell: threads, clocks, transports and the state store.
"""
