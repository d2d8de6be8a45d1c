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
        """{file, line, column, message}: null where no place (or no line) is known, as str() writes it."""
        if self.where is None:
            return {"file": None, "line": None, "column": None, "message": self.message}
        line = self.where.line or None
        return {"file": self.where.file, "line": line, "column": (self.where.column or 1) if line else None,
                "message": self.message}


@frozen
class About:
    """A place and what is there (`monorepo-diff step 'x'`): each sentence about it starts with what."""

    where: Location
    what: str

    def __call__(self, text: str) -> Said:
        return Said(self.where, f"{self.what}: {text}")
