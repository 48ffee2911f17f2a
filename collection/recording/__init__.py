"""Recorded exchanges: the fixture format, the recording and replay transports, fixture checks and
WARC import/export, so a corpus recorded once replays offline on a virtual clock.

Shell: reads and writes fixture files and WARCs (not the repository's `fixtures/` corpora).
"""
