"""Fetching: politeness, budgets, retries, robots.txt and media types (pure decisions), and the
shell that acts on them: the fetcher, the transport interface, the urllib3 transport, the egress
guard and the clocks.

Mixed: `politeness`, `budgets`, `retry`, `robots` and `mediatypes` are pure core; `fetcher`,
`transport`, `urllib3_transport`, `egress` and `clock` are shell (sockets, threads, time).
"""
