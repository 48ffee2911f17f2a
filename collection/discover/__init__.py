"""Discovery: the listing parsers (HTML index, JSON API, sitemap), the pagination grammars and the
driver that turns listing responses into the corpus of detail pages and the next listing request.

Pure core: a response in, records and the next request out. The run loop does the fetching.
"""
