"""The output formats of `collection validate --format`: text, json, github, sarif, junit.

Every format renders the same report entries (one per file, refusals in document order), so
a CI job, an editor and a person read the same refusals in the same order. Each renderer is
a function of the entries alone: no clock, no host name, so the output is deterministic.

An entry's `file` is the name as the operating system gave it: on POSIX a str that carries
bytes which are not UTF-8 as lone surrogates (surrogateescape). Every format shows it through
`shown()` (those bytes and control characters as `\\xNN`), and SARIF's URIs percent-encode the
name's bytes, so no file name crashes a format or splits its lines.

- text: `FILE:LINE:COL: CODE at POINTER: message [rule]`, one line per refusal.
- json: the report of schemas/validate-report.schema.json.
- github: GitHub Actions workflow commands (`::error file=…,line=…,col=…,title=CODE::message`),
  escaped as the Actions toolkit escapes them (`%`, CR, LF; and `:` `,` in properties).
- sarif: SARIF 2.1.0, one rule per code with its `explain` text.
- junit: one test case per document, a failure listing its refusals, an error for a file
  that could not be read.
"""

from __future__ import annotations

import json
import os
import re
from typing import Callable
from xml.sax.saxutils import escape, quoteattr

from collection import __version__, codes
from collection.canonical import canonical_json

FORMATS = ("text", "json", "github", "sarif", "junit")
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
INFORMATION_URI = "https://collection.invalid/docs/codes.md"


# C0 and C1 controls, DEL: a name holding one must not break a line of the text or github format.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _name_bytes(path: str) -> bytes:
    try:
        return os.fsencode(path)
    except UnicodeEncodeError:       # a surrogate no file system produced: keep it visible
        return path.encode("utf-8", "surrogatepass")


def shown(path: str) -> str:
    """A file name as printable UTF-8 text: bytes that are not UTF-8 and control characters
    appear as `\\xNN`."""
    text = _name_bytes(path).decode("utf-8", "backslashreplace")
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _where(refusal: dict) -> str:
    return f"{refusal['line']}:{refusal['column']}" if refusal["line"] is not None else "-"


def refusal_line(refusal: dict) -> str:
    """One refusal as the text format (and the JUnit failure body) prints it."""
    return f"{refusal['code']} at {refusal['pointer'] or '/'}: {refusal['message']} [{refusal['rule']}]"


def render_text(entries: list[dict], registrable: bool) -> tuple[str, str]:
    """(stdout, stderr) of the text format."""
    out: list[str] = []
    err: list[str] = []
    for entry in entries:
        if "error" in entry:
            err.append(f"{shown(entry['file'])}: {entry['error']}")
        elif entry["registrable"]:
            out.append(f"{shown(entry['file'])}: registrable {entry['kind']}")
        else:
            out.extend(f"{shown(entry['file'])}:{_where(r)}: {refusal_line(r)}" for r in entry["refusals"])
    return _lines(out), _lines(err)


def render_json(entries: list[dict], registrable: bool) -> tuple[str, str]:
    files = [{**entry, "file": shown(entry["file"])} for entry in entries]
    return canonical_json({"files": files, "registrable": registrable}) + "\n", ""


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(entries: list[dict], registrable: bool) -> tuple[str, str]:
    out: list[str] = []
    for entry in entries:
        name = _escape_property(shown(entry["file"]))
        if "error" in entry:
            out.append(f"::error file={name},title=unreadable::{_escape_data(entry['error'])}")
            continue
        for r in entry["refusals"]:
            where = f",line={r['line']},col={r['column']}" if r["line"] is not None else ""
            message = f"{r['message']} (at {r['pointer'] or '/'}; {r['rule']}; `collection explain {r['code']}`)"
            out.append(f"::error file={name}{where},title={_escape_property(r['code'])}::{_escape_data(message)}")
    return _lines(out), ""


def _rule(code: str) -> dict:
    entry = codes.lookup(code)
    if entry is None:
        return {"id": code, "shortDescription": {"text": code}}
    text = f"{entry.summary} Fix: {entry.fix}" + (f" Clauses: {', '.join(entry.clauses)}." if entry.clauses else "")
    return {"id": code, "shortDescription": {"text": entry.summary}, "fullDescription": {"text": text},
            "help": {"text": entry.fix}, "helpUri": f"{INFORMATION_URI}#{code.lower()}",
            "defaultConfiguration": {"level": "error"},
            "properties": {"kind": entry.kind, "clauses": list(entry.clauses)}}


def sarif_log(entries: list[dict]) -> dict:
    """The SARIF 2.1.0 log: one run, one rule per code that occurs (in first-seen order)."""
    rule_index: dict[str, int] = {}
    results: list[dict] = []
    notifications: list[dict] = []
    artifacts: list[dict] = []
    for entry in entries:
        artifacts.append({"location": {"uri": _uri(entry["file"])}})
        if "error" in entry:
            notifications.append({"level": "error", "message": {"text": f"{shown(entry['file'])}: {entry['error']}"},
                                  "locations": [{"physicalLocation": {"artifactLocation": {"uri": _uri(entry["file"])}}}]})
            continue
        for r in entry["refusals"]:
            index = rule_index.setdefault(r["code"], len(rule_index))
            physical: dict = {"artifactLocation": {"uri": _uri(entry["file"]), "index": len(artifacts) - 1}}
            if r["line"] is not None:
                physical["region"] = {"startLine": r["line"], "startColumn": r["column"]}
            results.append({
                "ruleId": r["code"], "ruleIndex": index, "level": "error",
                "message": {"text": f"{r['message']} [{r['rule']}]"},
                "locations": [{"physicalLocation": physical,
                               "logicalLocations": [{"fullyQualifiedName": r["pointer"] or "/", "kind": "member"}]}],
                "properties": {"pointer": r["pointer"]},
            })
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "collection", "version": __version__, "informationUri": INFORMATION_URI,
                                "rules": [_rule(code) for code in rule_index]}},
            "invocations": [{"executionSuccessful": not notifications,
                             "toolExecutionNotifications": notifications}],
            "artifacts": artifacts,
            "results": results,
        }],
    }


def render_sarif(entries: list[dict], registrable: bool) -> tuple[str, str]:
    return json.dumps(sarif_log(entries), ensure_ascii=False, indent=2) + "\n", ""


def _uri(path: str) -> str:
    # SARIF wants a URI reference: a relative path with forward slashes, percent-encoded.
    from urllib.parse import quote

    return quote(_name_bytes(path).replace(b"\\", b"/"), safe="/-._~")


# XML 1.0 cannot carry most C0 controls, even escaped; a message quoting one shows it as \xNN.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def render_junit(entries: list[dict], registrable: bool) -> tuple[str, str]:
    failures = sum(1 for e in entries if "error" not in e and not e["registrable"])
    errors = sum(1 for e in entries if "error" in e)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           f'<testsuites name="collection validate" tests="{len(entries)}" failures="{failures}" errors="{errors}">',
           f'  <testsuite name="collection validate" tests="{len(entries)}" failures="{failures}" '
           f'errors="{errors}" skipped="0">']
    for entry in entries:
        head = f'    <testcase classname="collection.validate" name={quoteattr(_xml_text(shown(entry["file"])))}'
        if "error" in entry:
            out.append(f"{head}>")
            out.append(f'      <error type="unreadable" message={quoteattr(_xml_text(entry["error"]))}/>')
            out.append("    </testcase>")
        elif entry["registrable"]:
            out.append(f"{head}/>")
        else:
            refusals = entry["refusals"]
            summary = f"{len(refusals)} refusal{'s' if len(refusals) != 1 else ''}: " + ", ".join(
                r["code"] for r in refusals)
            body = "\n".join(f"{shown(entry['file'])}:{_where(r)}: {refusal_line(r)}" for r in refusals)
            out.append(f"{head}>")
            out.append(f'      <failure type={quoteattr(refusals[0]["code"])} message={quoteattr(_xml_text(summary))}>'
                       f"{escape(_xml_text(body))}</failure>")
            out.append("    </testcase>")
    out += ["  </testsuite>", "</testsuites>"]
    return _lines(out), ""


def _lines(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


RENDERERS: dict[str, Callable[[list[dict], bool], tuple[str, str]]] = {
    "text": render_text, "json": render_json, "github": render_github, "sarif": render_sarif,
    "junit": render_junit,
}
