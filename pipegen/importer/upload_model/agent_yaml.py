"""YAML as the agent parses a pipeline file (gopkg.in/yaml.v3 into Go's interface{}): YAML 1.2's core schema.

Unlike PyYAML's YAML 1.1 reading, `yes`, `no`, `on`, `off`, `y`, `n` are strings, `0o17` is an octal int,
`1_000` and `12:30` (sexagesimal) are strings and a date stays text; anchors, aliases and `<<` merges hold;
a key written twice in one mapping is an error (yaml.v3: "mapping key already defined"), so is any tag the
core schema does not know.
"""

from __future__ import annotations

import re
from typing import Any

import yaml


class UploadYamlError(ValueError):
    """Text the agent would not parse (the upload fails)."""


class AgentLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """PyYAML's composer (libyaml's parser where built) with yaml.v3's implicit types; construct() builds
    the values (PyYAML's constructor is the slow half of a load)."""


CORE = "tag:yaml.org,2002:"
PLAIN = "plain"  # an untagged, unquoted scalar: its type is read off its text (_scalar), as yaml.v3 resolves it
RESOLVED = re.compile(r"(?P<null>~|null|Null|NULL|)|(?P<bool>true|True|TRUE|false|False|FALSE)"
                      r"|(?P<int>[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)"
                      r"|(?P<float>[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)"
                      r"|\.(?:nan|NaN|NAN))")


def _resolve(loader: AgentLoader, kind: type, value: str, implicit: tuple[bool, bool]) -> str:
    """One regex at construction instead of PyYAML's resolver lists at composition."""
    if kind is yaml.ScalarNode:
        return PLAIN if implicit[0] else CORE + "str"
    return CORE + ("seq" if kind is yaml.SequenceNode else "map")


AgentLoader.resolve = _resolve


def _scalar(node: yaml.ScalarNode) -> Any:
    text = node.value
    found = RESOLVED.fullmatch(text) if node.tag == PLAIN else None
    tag = (found.lastgroup or "str") if found else "str" if node.tag == PLAIN else node.tag.removeprefix(CORE)
    if tag == "str":
        return text
    if tag == "null":
        return None
    if tag == "bool":
        return text.lower() == "true"
    if tag == "int":
        return int(text[2:], 8) if text.startswith("0o") else int(text, 16) if text.startswith("0x") else int(text)
    if tag == "float":
        return float(text.replace(".inf", "inf").replace(".Inf", "inf").replace(".INF", "inf").lower()
                     .replace(".nan", "nan"))
    raise UploadYamlError(f"line {node.start_mark.line + 1}: the tag {node.tag} (the agent reads the core schema)")


def construct(node: yaml.Node, made: dict[int, Any] | None = None) -> Any:
    """The value of a composed node; an alias is its anchor's node, built once."""
    made = {} if made is None else made
    if id(node) in made:
        return made[id(node)]
    if isinstance(node, yaml.ScalarNode):
        return _scalar(node)
    if isinstance(node, yaml.SequenceNode):
        items: list[Any] = []
        made[id(node)] = items
        items += [construct(item, made) for item in node.value]
        return items
    out: dict[Any, Any] = {}
    made[id(node)] = out
    merged: dict[Any, Any] = {}
    for key_node, value_node in node.value:
        if key_node.tag == PLAIN and key_node.value == "<<":  # `<<: *anchor` or a list: the first one's keys win
            sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            for source in sources:
                merged = {**construct(source, made), **merged}
            continue
        key = construct(key_node, made)
        if not isinstance(key, (str, int, float, bool)) and key is not None:
            raise UploadYamlError(f"line {key_node.start_mark.line + 1}: a mapping key that is not a scalar")
        if key in out:
            raise UploadYamlError(f"line {key_node.start_mark.line + 1}: mapping key {key!r} already defined")
        out[key] = construct(value_node, made)
    for key, value in merged.items():
        out.setdefault(key, value)
    return out


def parse(text: str, name: str) -> Any:
    try:
        node = yaml.compose(text, Loader=AgentLoader)  # noqa: S506 - composing runs no constructor
    except yaml.YAMLError as exc:
        raise UploadYamlError(f"{name}: {str(exc).splitlines()[0]}") from None
    try:
        return None if node is None else construct(node)
    except UploadYamlError as exc:
        raise UploadYamlError(f"{name}: {exc}") from None
