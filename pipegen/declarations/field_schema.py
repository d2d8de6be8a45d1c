"""A declared field as a JSON Schema property: its type (declarations/field_types.py), description, default
and example; an object of a field table's fields, as check_fields reads it (no other field)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pipegen.declarations.field import UNSET
from pipegen.declarations.field_types import type_of


def described(field: Any, base: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A field's property schema: its type (or `base`), description, default and example."""
    _words, fragment = type_of(field)
    if base is not None:
        fragment = dict(base)
    if "$ref" in fragment:  # draft-07 ignores what stands beside a $ref
        fragment = {"allOf": [fragment]}
    out = {**fragment, "description": field.doc}
    if field.default is not UNSET:
        out["default"] = as_json(field.default)
    if field.example is not UNSET:
        out["examples"] = [as_json(field.example)]
    return out


def as_json(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return [as_json(v) for v in value]
    if isinstance(value, dict):
        return {k: as_json(v) for k, v in value.items()}
    return value


def fields_object(spec: Mapping[str, Any], required: Iterable[str] = (), shapes: Mapping[str, Any] | None = None,
                  **extra: Any) -> dict[str, Any]:
    """An object of exactly `spec`'s fields (the loader's check_fields refuses any other); `shapes`: a field's
    schema where it is more than its checker's type."""
    out = {"type": "object", "additionalProperties": False, **extra,
           "properties": {name: described(field, (shapes or {}).get(name)) for name, field in spec.items()}}
    if required:
        out["required"] = list(required)
    return out
