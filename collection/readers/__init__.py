"""The Readers (json.tabular, html.tabular, xml.tabular, html.web_extract), their registry and
pinned options, the shared text rules and the CSS/XPath selectors they and the HTML index use.

Pure core: bytes and a media type in, rows or a coded failure out.
"""
