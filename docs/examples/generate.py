#!/usr/bin/env python3
"""Generate the replay fixtures the recipes of docs/authoring.md run against.

    python docs/examples/generate.py            # rewrites docs/examples/*.fixture.json

One small publisher per recipe (docs/fixtures.md format): its listings, as the recipe's
discovery kind and pagination grammar read them, and a few detail pages its Reader decodes.
tests/test_authoring_guide.py extracts every recipe from the guide, validates it, runs it
against its fixture with `collection run --replay`, and checks that this script still writes
exactly the committed files. Deterministic, standard library only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
WWW = "https://www.example.com"
API = "https://api.example.com"


def exchange(url: str, body: str, media: str, status: int = 200, headers: tuple = ()) -> dict:
    return {"request": {"url": url},
            "response": {"status": status, "headers": [["Content-Type", media], *map(list, headers)],
                         "body": {"text": body}}}


def js(value) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False)


def html_page(title: str, paragraphs: list[str], extra: str = "", head: str = "") -> str:
    body = "".join(f"<p>{p}</p>" for p in paragraphs)
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title} | Example Council</title>"
            f"{head}</head><body><header><nav><a href=\"/\">Home</a></nav></header><main><article><h1>{title}</h1>"
            f"{extra}{body}</article></main><footer>© Example Council</footer></body></html>")


def wordpress_decisions() -> list[dict]:
    listing = f"{WWW}/wp-json/wp/v2/decisions?per_page=2"
    posts = [(101, "Library opening hours extended", "2026-02-01T10:00:00"),
             (102, "Parking permit charges for 2026", "2026-02-03T09:30:00"),
             (103, "Grant to the river trust", "2026-02-04T12:00:00")]

    def record(pid, title, modified):
        return {"id": pid, "modified": modified, "link": f"{WWW}/decisions/{pid}/",
                "_links": {"self": [{"href": f"{WWW}/wp-json/wp/v2/decisions/{pid}"}]}}
    out = [exchange(f"{listing}&page=1", js([record(*p) for p in posts[:2]]), "application/json"),
           exchange(f"{listing}&page=2", js([record(*p) for p in posts[2:]]), "application/json"),
           exchange(f"{listing}&page=3", js({"code": "rest_post_invalid_page_number",
                                              "message": "The page number requested is larger than the number of pages available.",
                                              "data": {"status": 400}}), "application/json", status=400)]
    for pid, title, modified in posts:
        out.append(exchange(f"{WWW}/wp-json/wp/v2/decisions/{pid}",
                            js({"id": pid, "date": modified[:10], "modified": modified,
                                "title": {"rendered": title}, "status": "publish"}), "application/json"))
    return out


def planning_applications() -> list[dict]:
    listing = f"{WWW}/api/applications?limit=2"
    apps = [("24/0101", "Two-storey rear extension, 4 Mill Lane"), ("24/0102", "Change of use to café, 9 High Street"),
            ("24/0103", "Replacement windows, 12 Church Row")]
    out = []
    for offset in (0, 2, 4):
        chunk = apps[offset:offset + 2]
        out.append(exchange(f"{listing}&offset={offset}", js({"count": len(apps), "results": [
            {"reference": ref, "url": f"/applications/{ref.replace('/', '-')}"} for ref, _ in chunk]}), "application/json"))
    for ref, title in apps:
        out.append(exchange(f"{WWW}/applications/{ref.replace('/', '-')}", html_page(
            f"Application {ref}: {title}",
            [f"The application {ref} seeks permission for the following works: {title.lower()}.",
             "Consultation with neighbours closes twenty-one days after the date of this notice."],
            f"<p class=\"byline\">Planning officer: <span class=\"officer\">R. Patel</span></p>"), "text/html; charset=utf-8"))
    return out


def public_notices() -> list[dict]:
    listing = f"{WWW}/api/notices"
    out = [exchange(listing, js({"notices": [{"xml": "/notices/road-closure-17.xml"}, {"xml": "/notices/tree-order-4.xml"}]}),
                    "application/json", headers=(("Link", f'<{listing}?after=2>; rel="next"'),)),
           exchange(f"{listing}?after=2", js({"notices": [{"xml": "/notices/licence-88.xml"}]}), "application/json")]
    for slug, kind, title in (("road-closure-17", "road", "Temporary closure of Bridge Street"),
                              ("tree-order-4", "tree", "Tree preservation order, Elm Walk"),
                              ("licence-88", "licensing", "Premises licence, 3 Market Square")):
        out.append(exchange(f"{WWW}/notices/{slug}.xml",
                            f'<?xml version="1.0" encoding="UTF-8"?>\n<notice ref="{slug}" kind="{kind}">'
                            f"<title>{title}</title><published>2026-01-20</published></notice>", "application/xml"))
    return out


def grant_awards() -> list[dict]:
    items = f"{API}/v1/awards"
    page1 = {"data": [{"uuid": "a1", "url": f"{API}/v1/awards/a1", "updated": 1767225600},
                      {"uuid": "b2", "url": f"{API}/v1/awards/b2", "updated": 1767312000}],
             "meta": {"next_cursor": "eyJwIjoyfQ=="}}
    page2 = {"data": [{"uuid": "c3", "url": f"{API}/v1/awards/c3", "updated": 1767398400}], "meta": {"next_cursor": None}}
    out = [exchange(items, js(page1), "application/json"),
           exchange(f"{items}?cursor=eyJwIjoyfQ%3D%3D", js(page2), "application/json")]
    for uid, org, amount in (("a1", "Riverside Youth Club", 12000), ("b2", "Northgate Food Bank", 8500),
                             ("c3", "Allotment Society", 2400)):
        out.append(exchange(f"{API}/v1/awards/{uid}", js({"award": {"id": uid, "recipient": org, "amount_gbp": amount}}),
                            "application/json"))
    return out


def council_minutes() -> list[dict]:
    meetings = [("2026-01-12", "Full Council, 12 January 2026"), ("2026-01-26", "Cabinet, 26 January 2026"),
                ("2026-02-09", "Full Council, 9 February 2026")]

    def listing(rows, next_href):
        items = "".join(f'<div class="views-row"><h3 class="title"><a href="/minutes/{d}">{t}</a></h3></div>'
                        for d, t in rows)
        pager = f'<nav class="pager"><a class="pager__next" rel="next" href="{next_href}">Next</a></nav>' if next_href else ""
        return f'<!DOCTYPE html><html><body><div class="view-content">{items}</div>{pager}</body></html>'
    out = [exchange(f"{WWW}/minutes", listing(meetings[:2], "/minutes?page=1"), "text/html; charset=utf-8"),
           exchange(f"{WWW}/minutes?page=1", listing(meetings[2:], None), "text/html; charset=utf-8")]
    for date, title in meetings:
        out.append(exchange(f"{WWW}/minutes/{date}", html_page(
            title, ["Present: the Mayor and thirty-one councillors.", "The minutes of the previous meeting were approved."],
            f'<p>Meeting held on <time class="meeting-date" datetime="{date}">{date}</time>.</p>'
            f'<p><a class="download" href="/files/minutes-{date}.pdf">Minutes (PDF)</a></p>'), "text/html; charset=utf-8"))
    return out


def committee_reports() -> list[dict]:
    reports = [("audit-2025", "Audit Committee"), ("scrutiny-2025", "Scrutiny Committee"), ("housing-2025", "Housing Board")]

    def listing(rows):
        items = "".join(f'<li class="report"><a href="/reports/{slug}">{name}</a></li>' for slug, name in rows)
        return f'<!DOCTYPE html><html><body><ul class="reports">{items}</ul></body></html>'
    out = [exchange(f"{WWW}/reports?page=1", listing(reports[:2]), "text/html"),
           exchange(f"{WWW}/reports?page=2", listing(reports[2:]), "text/html"),
           exchange(f"{WWW}/reports?page=3", listing([]), "text/html")]
    for slug, name in reports:
        table = ("<table class=\"attendance\"><thead><tr><th>Member</th><th>Meetings attended</th></tr></thead><tbody>"
                 "<tr><td>Cllr A. Jones</td><td>6</td></tr><tr><td>Cllr B. Singh</td><td>5</td></tr></tbody></table>")
        out.append(exchange(f"{WWW}/reports/{slug}", html_page(f"{name}: annual report", ["Attendance over the year:"], table),
                            "text/html"))
    return out


def annual_reports() -> list[dict]:
    def urlset(entries):
        body = "".join(f"<url><loc>{WWW}/annual/{y}</loc><lastmod>{y + 1}-03-31</lastmod></url>" for y in entries)
        return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{body}</urlset>'
    index = ('<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
             f"<sitemap><loc>{WWW}/sitemap-annual-1.xml</loc></sitemap><sitemap><loc>{WWW}/sitemap-annual-2.xml</loc></sitemap>"
             "</sitemapindex>")
    out = [exchange(f"{WWW}/sitemap-annual.xml", index, "application/xml"),
           exchange(f"{WWW}/sitemap-annual-1.xml", urlset([2023, 2024]), "application/xml"),
           exchange(f"{WWW}/sitemap-annual-2.xml", urlset([2025]), "application/xml")]
    for year in (2023, 2024, 2025):
        out.append(exchange(f"{WWW}/annual/{year}", html_page(
            f"Annual report {year}", [f"In {year} the council answered more enquiries from residents than in any year "
                                      "before, most of them online, and cut the average time to a reply to four days.",
                                      "Spending stayed within the budget agreed by Full Council in February, with the "
                                      "savings from the new waste contract set aside for road repairs next year."],
            head='<meta name="author" content="Chief Executive">'), "text/html; charset=utf-8"))
    return out


def press_feeds() -> list[dict]:
    def feed(topic, items):
        body = "".join(f"<item><title>{t}</title><link>{WWW}/news/{s}</link><guid isPermaLink=\"true\">{WWW}/news/{s}</guid>"
                       f"<pubDate>{d}</pubDate></item>" for s, t, d in items)
        return (f'<?xml version="1.0" encoding="UTF-8"?>\n<rss version="2.0"><channel><title>{topic}</title>'
                f"{body}</channel></rss>")
    return [exchange(f"{WWW}/feeds/news.xml", feed("News", [("bins", "New bin collection days", "Mon, 05 Jan 2026 09:00:00 GMT"),
                                                              ("pool", "Pool reopens", "Tue, 13 Jan 2026 09:00:00 GMT")]),
                     "application/xml"),
            exchange(f"{WWW}/feeds/consultations.xml", feed("Consultations", [("budget", "Budget consultation opens",
                                                                              "Wed, 07 Jan 2026 09:00:00 GMT")]),
                     "text/xml")]


FIXTURES = {
    "wordpress_decisions": wordpress_decisions, "planning_applications": planning_applications,
    "public_notices": public_notices, "grant_awards": grant_awards, "council_minutes": council_minutes,
    "committee_reports": committee_reports, "annual_reports": annual_reports, "press_feeds": press_feeds,
}


def render(name: str) -> str:
    return json.dumps(FIXTURES[name](), indent=1, ensure_ascii=False) + "\n"


def saved_pages() -> dict[str, str]:
    """The guide's "From saved pages to an offline crawl": council_minutes' pages as a browser
    saves them, one file each (saved/<file>: text), named for the address they came from."""
    files = {}
    for x in council_minutes():
        path = x["request"]["url"].removeprefix(f"{WWW}/")
        files[path.replace("/", "-").replace("?", "-").replace("=", "-") + ".html"] = x["response"]["body"]["text"]
    return files


def main(out: Path = HERE) -> None:
    for name in FIXTURES:
        (out / f"{name}.fixture.json").write_text(render(name), encoding="utf-8")
    (out / "saved").mkdir(exist_ok=True)
    for name, text in saved_pages().items():
        (out / "saved" / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE)
