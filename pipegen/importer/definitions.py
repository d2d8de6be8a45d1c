"""A file's own top-level `env` written into the file's references to it, so they mean what they meant.

Buildkite interpolates each uploaded file with its own `env:` first (in order, against the uploader's
environment), then the rest of the file with those values. Once the file's steps live beside other files'
steps, its env is theirs alone (`defaults: env`), and a `$QUEUE` in `agents:` would be read against the
uploader's environment only. So each reference to a variable the file defines is replaced by the
definition's own text (earlier definitions written into it): `$Q` with `Q: ${Q:-linux}` becomes
`${Q:-linux}`, which Buildkite reads against the uploader's environment to the value it had.
`${Q:-word}` takes the definition where it is never empty; a substring (`${Q:0:7}`), or a
default over a definition that may be empty, cannot be written so: named, not carried.
"""

from __future__ import annotations

from typing import Any

from pipegen.buildkite.interpolation import Escaped, Expansion, InterpolationError, Item, parse
from pipegen.importer.nodes import Node
from pipegen.importer.said import Said
from pipegen.model import Location


def definitions(env: dict[str, Any], problems: list[Said], where: Location) -> dict[str, str]:
    """name -> the text that means its value, each with the definitions before it written in."""
    out: dict[str, str] = {}
    for name, raw in env.items():
        text = "true" if raw is True else "false" if raw is False else "" if raw is None else str(raw)
        out[str(name)] = substitute(text, out, problems, where)
    return out


def substitute(text: str, defined: dict[str, str], problems: list[Said], where: Location) -> str:
    """`text` with each reference to a defined name written as its definition, read by Buildkite's own
    grammar (buildkite/interpolation.py); text it does not parse is left for Buildkite to refuse."""
    if "$" not in text:
        return text
    try:
        return _written(parse(text), defined, problems, where)
    except InterpolationError:  # nested past interpolation.MAX_NESTING too: Buildkite's to read, as it is
        return text


def _written(items: tuple[Item, ...], defined: dict[str, str], problems: list[Said], where: Location) -> str:
    return "".join(item if isinstance(item, str) else item.source if isinstance(item, Escaped) else
                   _expansion(item, defined, problems, where) for item in items)


def _expansion(item: Expansion, defined: dict[str, str], problems: list[Said], where: Location) -> str:
    if item.name not in defined:  # the uploader's: kept, a default or message written with the definitions
        return item.source if not item.content else \
            f"${{{item.name}{item.op}{_written(item.content, defined, problems, where)}}}"
    known = defined[item.name]
    if item.op in ("", "-", "?") or item.op == ":-" and _never_empty(known):
        return known
    problems.append(Said(where, f"'{item.source}' over the file's own env ({item.name}: '{known}') has no form "
                         "that holds beside other files' steps"))
    return item.source


def _never_empty(text: str) -> bool:
    """The text has a literal character outside every expansion, or a `${X:-word}` with a literal word."""
    try:
        return _literal(parse(text))
    except InterpolationError:
        return True  # the upload fails on it: it is never empty, it is never uploaded


def _literal(items: tuple[Item, ...]) -> bool:
    return any(not isinstance(item, Expansion) or item.op == ":-" and _literal(item.content) for item in items)


def carry(nodes: list[Node], top: dict[str, Any], problems: list[Said], where: Location) -> dict[str, Any]:
    """The nodes (and their children) with the file's env written in; the file's env and agents, likewise."""
    if not isinstance(top.get("env"), dict) or not top["env"]:
        return top
    defined = definitions(top["env"], problems, where)
    for item in [n for node in nodes for n in [node, *node.children]]:
        item.fields = rewrite(item.fields, defined, problems, item.where)
    return {**top, "env": defined, **({"agents": rewrite(top["agents"], defined, problems, where)}
                                      if "agents" in top else {})}


def rewrite(data: Any, defined: dict[str, str], problems: list[Said], where: Location) -> Any:
    """Every string of the data (mapping keys too) with the definitions written in."""
    if isinstance(data, str):
        return substitute(data, defined, problems, where)
    if isinstance(data, dict):
        return {rewrite(k, defined, problems, where): rewrite(v, defined, problems, where) for k, v in data.items()}
    if isinstance(data, list):
        return [rewrite(v, defined, problems, where) for v in data]
    return data
