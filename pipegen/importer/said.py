"""What `pipegen import` says about one place: a note, or a thing it could not carry over.

The place is kept as it was known when the sentence was made (a model.Location, or None where the sentence
is about no place), so the text report (`place: message`) and the JSON (`file`, `line`, `column`) both read
it, and a file name holding `: ` or no `.yml` never blurs into the message.
"""

from __future__ import annotations

from typing import Any

from pipegen.frozen import frozen
from pipegen.model import Location


@frozen
class Said:
    where: Location | None
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.where is not None else self.message

    def as_json(self) -> dict[str, Any]:
        """{file, line, column, message}: the place as place() writes it."""
        return {**place(self.where), "message": self.message}


def place(where: Location | None) -> dict[str, Any]:
    """{file, line, column}: null where no place (or no line) is known, as str() writes it (import --format
    json: a note's, a thing not carried over's, a difference's)."""
    if where is None:
        return {"file": None, "line": None, "column": None}
    line = where.line or None
    return {"file": where.file, "line": line, "column": (where.column or 1) if line else None}


@frozen
class About:
    """A place and what is there (`monorepo-diff step 'x'`): each sentence about it starts with what."""

    where: Location
    what: str

    def __call__(self, text: str) -> Said:
        return Said(self.where, f"{self.what}: {text}")
