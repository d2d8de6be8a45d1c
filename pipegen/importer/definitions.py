"""A file's own top-level `env` written into the file's references to it, so they mean what they meant.

Buildkite interpolates each uploaded file with its own `env:` first (in order, against the uploader's
environment), then the rest of the file with those values. Once the file's steps live beside other files'
steps, its env is theirs alone (`defaults: env`), and a `$QUEUE` in `agents:` would be read against the
uploader's environment only. So each reference to a variable the file defines is replaced by the
definition's own text (earlier definitions written into it): `$Q` with `Q: ${Q:-linux}` becomes
`${Q:-linux}`, which Buildkite reads against the uploader's environment to the value it had.
`${Q:-word}` and `${Q:?}` take the definition where it is never empty; a substring (`${Q:0:7}`), or a
default over a definition that may be empty, cannot be written so: named, not carried.
"""

from __future__ import annotations

import re
from typing import Any

from pipegen.importer.nodes import Node

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def definitions(env: dict[str, Any], problems: list[str], where: str) -> dict[str, str]:
    """name -> the text that means its value, each with the definitions before it written in."""
    out: dict[str, str] = {}
    for name, raw in env.items():
        text = "true" if raw is True else "false" if raw is False else "" if raw is None else str(raw)
        out[str(name)] = substitute(text, out, problems, where)
    return out


def substitute(text: str, defined: dict[str, str], problems: list[str], where: str) -> str:
    out, index = "", 0
    while index < len(text):
        if text.startswith(("$$", "\\$"), index):
            out, index = out + text[index:index + 2], index + 2
        elif text.startswith("${", index) and (match := NAME.match(text, index + 2)):
            end = _closing(text, match.end())
            if end < 0:
                return out + text[index:]  # not interpolation text Buildkite takes; left for it to refuse
            out += _braced(match[0], text[match.end():end], defined, problems, where)
            index = end + 1
        elif text.startswith("$", index) and (match := NAME.match(text, index + 1)):
            out += defined[match[0]] if match[0] in defined else text[index:match.end()]
            index = match.end()
        else:
            out, index = out + text[index], index + 1
    return out


def _closing(text: str, index: int) -> int:
    depth = 0
    while index < len(text):
        if text.startswith(("$$", "\\$"), index):
            index += 2
            continue
        if text.startswith("${", index):
            depth, index = depth + 1, index + 2
            continue
        if text[index] == "}":
            if depth == 0:
                return index
            depth -= 1
        index += 1
    return -1


def _braced(name: str, rest: str, defined: dict[str, str], problems: list[str], where: str) -> str:
    op = next((o for o in (":-", "-", ":?", "?") if rest.startswith(o)), None)
    word = substitute(rest[len(op):], defined, problems, where) if op else rest
    if name not in defined:
        return f"${{{name}{op or ''}{word}}}"
    known = defined[name]
    if op is None and rest == "" or op in ("-", "?") or op in (":-", ":?") and _never_empty(known):
        return known
    problems.append(f"{where}: '${{{name}{rest}}}' over the file's own env ({name}: '{known}') has no form that "
                    "holds beside other files' steps")
    return f"${{{name}{rest}}}"


def _never_empty(text: str) -> bool:
    """The text has a literal character outside every expansion, or is one `${X:-word}` with a literal word."""
    literal, index = "", 0
    while index < len(text):
        if text.startswith(("$$", "\\$"), index):
            literal, index = literal + "$", index + 2
        elif text.startswith("${", index) and (end := _closing(text, index + 2)) >= 0:
            inner = text[index + 2:end]
            match = NAME.match(inner)
            if match and inner[match.end():].startswith(":-") and _never_empty(inner[match.end() + 2:]):
                literal += "x"
            index = end + 1
        elif text.startswith("$", index) and (match := NAME.match(text, index + 1)):
            index = match.end()
        else:
            literal, index = literal + text[index], index + 1
    return literal != ""


def carry(nodes: list[Node], top: dict[str, Any], problems: list[str], where: str) -> dict[str, Any]:
    """The nodes (and their children) with the file's env written in; the file's env and agents, likewise."""
    if not isinstance(top.get("env"), dict) or not top["env"]:
        return top
    defined = definitions(top["env"], problems, where)
    for item in [n for node in nodes for n in [node, *node.children]]:
        item.fields = rewrite(item.fields, defined, problems, str(item.where))
    return {**top, "env": defined, **({"agents": rewrite(top["agents"], defined, problems, where)}
                                      if "agents" in top else {})}


def rewrite(data: Any, defined: dict[str, str], problems: list[str], where: str) -> Any:
    """Every string of the data (mapping keys too) with the definitions written in."""
    if isinstance(data, str):
        return substitute(data, defined, problems, where)
    if isinstance(data, dict):
        return {rewrite(k, defined, problems, where): rewrite(v, defined, problems, where) for k, v in data.items()}
    if isinstance(data, list):
        return [rewrite(v, defined, problems, where) for v in data]
    return data
