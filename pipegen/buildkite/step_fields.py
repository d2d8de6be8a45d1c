"""Buildkite's command-step fields, read from its published schema (vendored: buildkite/schema.py).

The accepted fields are the schema's own `commandStep` properties, so the list
never goes stale. A value is checked against its field's definition through
the compiled schema (`schema.validator()`, about a millisecond); only
when one fails does schema_errors say which part and why.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from pipegen.frozen import frozen

# Buildkite's own aliases in a command step: the second name is pipegen's.
ALIASES = {"command": "commands", "name": "label", "identifier": "key", "id": "key"}


@frozen
class Problem:
    """One field's value that the schema refuses."""

    field: str
    path: tuple[Any, ...]  # inside the value, e.g. ("setup", "os", 0)
    message: str  # what is wrong
    expects: str  # what the schema wants, in words
    hint: str = ""  # did-you-mean for an enum value


@functools.cache
def _root() -> dict[str, Any]:
    from pipegen.buildkite.schema import load_schema

    return load_schema()


def field_schemas() -> dict[str, Any]:
    """Field name -> its definition in the schema's command step."""
    fields: dict[str, Any] = _root()["definitions"]["commandStep"]["properties"]
    return fields


def field_names() -> frozenset[str]:
    return frozenset(field_schemas())


def problems(fields: Mapping[str, Any]) -> list[Problem]:
    """What the schema refuses in these command-step fields (empty when all are valid)."""
    if not fields:
        return []
    import fastjsonschema

    from pipegen.buildkite.schema import validator

    step = {"type": "command", **fields}  # a command step, so no other step type can accept it
    try:
        validator()({"steps": [step]})
        return []
    except fastjsonschema.JsonSchemaException:
        pass
    return [p for name, value in fields.items() for p in _explain(name, value)]


def _explain(name: str, value: Any) -> list[Problem]:
    from pipegen.buildkite.schema_errors import refusal

    best = refusal(("definitions", "commandStep", "properties", name), value)
    if best is None:
        return []
    hint = ""
    if best.rule == "enum" and isinstance(best.value, str) and isinstance(best.rule_value, list):
        import difflib

        close = difflib.get_close_matches(best.value, [str(v) for v in best.rule_value], n=1, cutoff=0.5)
        hint = f"did you mean '{close[0]}'?" if close else ""
    return [Problem(name, best.path, best.message, expects(field_schemas()[name]), hint)]


_TYPES = {"string": "a string", "integer": "a whole number", "number": "a number", "boolean": "true or false",
          "object": "a mapping", "array": "a list", "null": "null"}


def expects(schema: Any, depth: int = 0) -> str:
    """A schema in words: 'a string or a list of strings', 'one of ordered, eager'."""
    if not isinstance(schema, dict):
        return "anything"
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        node: Any = _root()
        for part in ref[2:].split("/"):
            node = node[part]
        return expects(node, depth)
    if "enum" in schema:
        return "one of " + ", ".join(str(v).lower() if isinstance(v, bool) else repr(v) for v in schema["enum"])
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches and depth < 3:
        return " or ".join(dict.fromkeys(expects(b, depth + 1) for b in branches))
    kind = schema.get("type")
    if kind == "array" and depth < 3 and isinstance(schema.get("items"), dict):
        return f"a list of ({expects(schema['items'], depth + 1)})"
    if kind == "object" and schema.get("required"):
        return f"a mapping with {', '.join(schema['required'])}"
    text = _TYPES.get(kind, "anything") if isinstance(kind, str) else "anything"
    if kind == "string" and "maxLength" in schema:
        text += f" of at most {schema['maxLength']} characters"
    if kind == "integer" and "minimum" in schema:
        text += f" >= {schema['minimum']}"
    return text
