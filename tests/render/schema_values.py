"""Hypothesis strategies for values of a JSON schema: enough of draft-07 for Buildkite's command-step fields.

(hypothesis-jsonschema does not work with current hypothesis.) Every drawn
value is filtered through jsonschema itself, so a value the generator gets
wrong (a `oneOf` that two branches match) is never used.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

# Short, printable text: values users write; YAML and Buildkite take any text, the writer's tests cover the rest.
TEXT = st.text(st.characters(min_codepoint=32, max_codepoint=0x24F, blacklist_categories=("Cc", "Cs")), max_size=12)
JSON = st.recursive(st.none() | st.booleans() | st.integers(-1000, 1000) | TEXT,
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=6)


def values(schema: dict[str, Any], root: dict[str, Any]) -> st.SearchStrategy[Any]:
    import jsonschema

    validator = jsonschema.Draft7Validator({**schema, "definitions": root["definitions"]})
    return _strategy(schema, root, 0).filter(validator.is_valid)


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        node: Any = root
        for part in schema["$ref"][2:].split("/"):
            node = node[part]
        schema = node
    return schema


def _strategy(schema: Any, root: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    if not isinstance(schema, dict) or depth > 6:
        return st.none()
    schema = _resolve(schema, root)
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    branches = schema.get("anyOf") or schema.get("oneOf")
    if branches:
        return st.one_of([_strategy(b, root, depth + 1) for b in branches])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([_strategy({**schema, "type": k}, root, depth) for k in kind])
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True).filter(lambda s: len(s) <= 20)
        return TEXT.filter(lambda s: len(s) <= schema.get("maxLength", 70))
    if kind == "integer":
        return st.integers(schema.get("minimum", -1000), 1000)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(_strategy(schema.get("items", {}), root, depth + 1) if schema.get("items") else JSON,
                        max_size=3)
    if kind == "object" or "properties" in schema:
        return _object(schema, root, depth)
    return JSON


def _object(schema: dict[str, Any], root: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    properties = {k: _strategy(v, root, depth + 1) for k, v in schema.get("properties", {}).items()}
    required = {k: properties.pop(k) for k in schema.get("required", []) if k in properties}
    extra = schema.get("additionalProperties", True)
    fixed = st.fixed_dictionaries(required, optional=properties)
    if extra is False or (isinstance(extra, dict) and extra.get("not") == {}):
        return fixed
    names = schema.get("propertyNames", {})
    keys = st.from_regex(names["pattern"], fullmatch=True).filter(lambda s: len(s) <= 12) if "pattern" in names \
        else TEXT.filter(bool)
    more = st.dictionaries(keys, _strategy(extra, root, depth + 1) if isinstance(extra, dict) else JSON, max_size=2)
    return st.tuples(fixed, more).map(lambda pair: {**pair[1], **pair[0]})
