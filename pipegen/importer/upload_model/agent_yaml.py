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
    """PyYAML's safe loader (libyaml's parser where built) with yaml.v3's implicit types."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[tuple[str, str]] = set()
        for key_node, _ in node.value:  # plain keys compared as written (the tag says how each resolves)
            if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
                if (key_node.tag, key_node.value) in seen:
                    raise UploadYamlError(f"line {key_node.start_mark.line + 1}: mapping key "
                                          f"{key_node.value!r} already defined")
                seen.add((key_node.tag, key_node.value))
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        return mapping


AgentLoader.yaml_implicit_resolvers = {}
for tag, pattern, first in (
        ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
        ("int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
        ("float", r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)"
                  r"|\.(?:nan|NaN|NAN))$", "-+0123456789."),
        ("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
        ("merge", r"^(?:<<)$", "<")):
    AgentLoader.add_implicit_resolver(f"tag:yaml.org,2002:{tag}", re.compile(pattern), list(first))


def _int(loader: AgentLoader, node: yaml.ScalarNode) -> int:
    text = str(loader.construct_scalar(node))
    if text.startswith("0o"):
        return int(text[2:], 8)
    return int(text, 16) if text.startswith("0x") else int(text, 10)


AgentLoader.add_constructor("tag:yaml.org,2002:int", _int)


def parse(text: str, name: str) -> Any:
    try:
        return yaml.load(text, Loader=AgentLoader)  # noqa: S506 - a SafeLoader subclass
    except UploadYamlError as exc:
        raise UploadYamlError(f"{name}: {exc}") from None
    except yaml.YAMLError as exc:
        raise UploadYamlError(f"{name}: {str(exc).splitlines()[0]}") from None
