"""`collection robots-check --robots FILE --agent TOKEN URL...`: what robots.txt says.

Prints, for each address, whether the fetcher may request it and which rule (and line)
decided — the same matcher the fetcher uses (collection.fetch.robots). Exit 0 whatever the
verdicts; 2 for usage errors or an unreadable file.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import click

from collection.commands import examples

from collection.canonical import canonical_json
from collection.fetch.robots import parse_robots


def path_and_query(url: str) -> str:
    """The part of an address robots.txt rules are matched against; the fragment never is."""
    without_fragment = url.split("#", 1)[0]
    parts = urlsplit(without_fragment)
    path = parts.path or "/"
    return f"{path}?{parts.query}" if "?" in without_fragment else path


@click.command("robots-check", epilog=examples(
    "collection robots-check --robots robots.txt --agent collection https://www.example.gov/decisions/42",
    "collection robots-check --robots robots.txt --agent collection --json https://www.example.gov/a https://www.example.gov/b",
))
@click.option("--robots", "robots_file", required=True,
              type=click.Path(exists=True, dir_okay=False, readable=True), help="The robots.txt file to read.")
@click.option("--agent", required=True, help="The product token to match user-agent lines against.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdicts as canonical JSON.")
@click.argument("urls", nargs=-1, required=True)
def command(robots_file: str, agent: str, as_json: bool, urls: tuple[str, ...]) -> None:
    """Print each URL's robots.txt verdict for AGENT, with the deciding rule and its line."""
    try:
        with open(robots_file, "rb") as handle:
            data = handle.read()
    except OSError as error:
        raise click.UsageError(f"cannot read {robots_file}: {error.strerror}") from error
    rules = parse_robots(data)
    verdicts = []
    for url in urls:
        try:
            path = path_and_query(url)
        except ValueError as error:         # urlsplit: 'https://[::1' is no address
            raise click.UsageError(f"{url!r} is not an address: {error}") from None
        verdict = rules.verdict(agent, path)
        verdicts.append({"url": url, "path": path, "allowed": verdict.allowed,
                         "rule": verdict.rule, "line": verdict.line})
    delay = rules.crawl_delay(agent)
    if as_json:
        click.echo(canonical_json({"agent": agent, "crawl_delay": delay, "truncated": rules.truncated,
                                   "verdicts": verdicts}))
        return
    width = max(len(v["url"]) for v in verdicts)
    for v in verdicts:
        reason = f"{v['rule']} (line {v['line']})" if v["rule"] is not None else "no rule matches"
        click.echo(f"{'allowed' if v['allowed'] else 'disallowed':<10}  {v['url']:<{width}}  {reason}")
    if delay is not None:
        click.echo(f"crawl-delay: {delay:g} s")
    if rules.truncated:
        click.echo("note: only the first 500 KiB were read")
