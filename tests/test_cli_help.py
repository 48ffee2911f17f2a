"""The command line speaks to users (issue 14): every command's and subcommand's --help ends
with real examples, cites no clause or decision ID (those belong in docs and code comments),
and shows the defaults of its options. Each listed example is checked to be a real invocation:
its command path exists and every option it names is one that command accepts."""

from __future__ import annotations

import re
import shlex

import click
import pytest
from click.testing import CliRunner

from collection.cli import cli

CLAUSE_ID = re.compile(r"\b(?:REG|DISC|PAG|URL|FETCH|READ|PROV|MERGE|COV|REF|OPS|D)-\d+\b")


def _walk(group: click.Group, path: tuple[str, ...] = ()):
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        yield path + (name,), command
        if isinstance(command, click.Group):
            yield from _walk(command, path + (name,))


COMMANDS = [((), cli)] + list(_walk(cli))


def _help(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(cli, [*path, "--help"], prog_name="collection")
    assert result.exit_code == 0, result.output
    return result.output


def _examples(text: str) -> list[str]:
    head, sep, tail = text.partition("xamples:\n")
    assert sep, f"no examples section:\n{text}"
    return [line.strip() for line in tail.splitlines() if line.strip()]


def test_every_command_is_walked():
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"", "run", "validate", "status", "decode", "explain", "robots-check", "conformance",
            "fixture", "fixture check", "fixture import-warc", "fixture export-warc"} <= names


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=lambda p: " ".join(p) or "collection")
def test_help_ends_with_examples_and_cites_no_clause_ids(path):
    text = _help(path)
    assert not CLAUSE_ID.findall(text), CLAUSE_ID.findall(text)
    examples = _examples(text)
    assert 1 <= len(examples)
    for example in examples:
        words = shlex.split(example)
        assert words[0] in ("collection", "python"), example


@pytest.mark.parametrize("path, command", [(p, c) for p, c in COMMANDS if not isinstance(c, click.Group)
                                           and p != ("conformance",)],
                         ids=lambda v: " ".join(v) if isinstance(v, tuple) else "")
def test_examples_name_real_commands_and_options(path, command):
    for example in _examples(_help(path)):
        words = shlex.split(example)[1:]
        assert tuple(words[:len(path)]) == path, example
        known = {opt for param in command.params if isinstance(param, click.Option) for opt in param.opts}
        for word in words[len(path):]:
            if word.startswith("--"):
                assert word in known, (example, word)


@pytest.mark.parametrize("path, command", [(p, c) for p, c in COMMANDS if p != ("conformance",)],
                         ids=lambda v: " ".join(v) if isinstance(v, tuple) else "")
def test_help_shows_defaults(path, command):
    text = " ".join(_help(path).split())
    for param in command.params:
        if not isinstance(param, click.Option) or param.is_flag or param.hidden:
            continue
        # click >= 8.3 marks "no default" with a sentinel, older click with None
        if not isinstance(param.default, (int, float, str)) or param.default == "" or param.multiple:
            continue
        assert f"[default: {param.default}" in text, (param.name, text)


def test_conformance_help_shows_examples_through_the_wrapper():
    text = _help(("conformance",))
    # issue 26: the wrapper's help names the wrapper, not `python -m conformance`
    assert text.startswith("usage: collection conformance") and "collection conformance check" in text
    assert "python -m conformance" not in text
