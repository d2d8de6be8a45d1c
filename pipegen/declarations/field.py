"""A declared field: the checker the loader calls, and what the JSON Schema and the reference say of it.

The loaders' field tables (`CONFIG_FIELDS`, `STEP_FIELDS`, ...) hold Fields, so the schema
(dialects/own/schema.py) and the generated reference are read from the very tables that
check a file, and cannot list a field the loader refuses or miss one it takes.
"""

from __future__ import annotations

from typing import Any

from pipegen.declarations.fields import Checker
from pipegen.model import Location

UNSET: Any = type("Unset", (), {"__repr__": lambda self: "UNSET"})()  # no default or example to show


class Field:
    """A checker (value, where) -> normalised value, called as the checker itself, with its description.

    `schema` and `words` replace the JSON Schema fragment and the words of `check`'s type
    (declarations/field_types.py) where the field's shape is read elsewhere (`anything`: a rule list)."""

    __slots__ = ("check", "doc", "default", "example", "schema", "words")

    def __init__(self, check: Checker, doc: str, *, default: Any = UNSET, example: Any = UNSET,
                 schema: dict[str, Any] | None = None, words: str = "") -> None:
        self.check, self.doc, self.default, self.example = check, doc, default, example
        self.schema, self.words = schema, words  # the type's fragment and words where `check` does not say

    def __call__(self, value: Any, where: Location) -> Any:
        return self.check(value, where)

    def __repr__(self) -> str:
        return f"Field({getattr(self.check, '__name__', self.check)!r})"
