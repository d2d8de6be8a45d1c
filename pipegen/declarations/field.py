"""A declared field: the checker the loader calls, and what the JSON Schema and the reference say of it.

The loaders' field tables (`CONFIG_FIELDS`, `STEP_FIELDS`, ...) hold Fields, so the schema
(dialects/own/schema.py) and the generated reference are read from the very tables that
check a file, and cannot list a field the loader refuses or miss one it takes.
"""

from __future__ import annotations

import functools
from typing import Any

from pipegen.declarations.fields import Checker

UNSET: Any = type("Unset", (), {"__repr__": lambda self: "UNSET"})()  # no default or example to show


class Field(functools.partial[Any]):
    """A checker (value, where) -> normalised value, called as the checker itself, with its description.

    A partial of the checker with no arguments bound: calling it adds no Python frame to the checker's
    (the loader calls one per field, 1,459 times for vLLM's declarations). `schema` and `words`
    replace the JSON Schema fragment and the words of the checker's type (declarations/field_types.py)
    where the field's shape is read elsewhere (`anything`: a rule list)."""

    doc: str
    default: Any
    example: Any
    schema: dict[str, Any] | None
    words: str

    def __new__(cls, check: Checker, doc: str, *, default: Any = UNSET, example: Any = UNSET,
                schema: dict[str, Any] | None = None, words: str = "") -> Field:
        self = super().__new__(cls, check)
        self.doc, self.default, self.example, self.schema, self.words = doc, default, example, schema, words
        return self

    @property
    def check(self) -> Checker:
        return self.func

    def __repr__(self) -> str:
        return f"Field({getattr(self.func, '__name__', self.func)!r})"
