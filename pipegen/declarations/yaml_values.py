"""Values read from YAML that remember where they were written (yamlio reads them, yaml_parse builds them)."""

from __future__ import annotations

from typing import Any, NamedTuple

from pipegen.model import Location


class Mark(NamedTuple):
    """Where a value was written, 0-based as PyYAML counts."""

    line: int
    column: int


class LocDict(dict[Any, Any]):
    """A dict that knows where itself and each key were written."""

    __slots__ = ("file", "mark", "key_marks")
    file: str
    mark: Mark
    key_marks: dict[Any, Mark]

    def loc(self, key: Any = None) -> Location:
        return where(self.file, self.key_marks.get(key, self.mark) if key is not None else self.mark)

    @property
    def line(self) -> int:
        return int(self.mark.line) + 1


class LocList(list[Any]):
    """A list that knows where itself and each item were written."""

    __slots__ = ("file", "mark", "item_marks")
    file: str
    mark: Mark
    item_marks: list[Mark]

    def loc(self, index: int | None = None) -> Location:
        marks = self.item_marks
        return where(self.file, marks[index] if index is not None and index < len(marks) else self.mark)


def where(file: str, mark: Any) -> Location:
    return Location(file, mark.line + 1, mark.column + 1)
