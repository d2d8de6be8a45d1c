"""docs/reference/json-output.md documents exactly the fields of each command's JSON Schema (pipegen/json_output.py),
which the commands' output is tested against: a field added, renamed or dropped fails here until the page says so."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pipegen.json_output import SCHEMAS
from tests.helpers import ROOT

PAGE = ROOT / "docs" / "reference" / "json-output.md"


def fields(schema: dict[str, Any], prefix: str = "") -> list[str]:
    """Every field's path: `steps[].reasons[].rule` for a list of objects, `machine.gpus` for an object."""
    out = []
    for name, sub in schema.get("properties", {}).items():
        out.append(prefix + name)
        sub = next((s for s in sub.get("anyOf", [sub]) if s.get("type") != "null"), sub)
        if sub.get("type") == "array" and "properties" in sub["items"]:
            out += fields(sub["items"], f"{prefix}{name}[].")
        elif "properties" in sub:
            out += fields(sub, f"{prefix}{name}.")
    return out


def documented(command: str) -> list[str]:
    """The first cells of the field table in the page's section for `command`."""
    sections = re.split(r"^## ", PAGE.read_text(encoding="utf-8"), flags=re.M)
    section = next(s for s in sections if s.startswith(f"`pipegen {command}`"))
    return re.findall(r"^\| `([^`]+)` \|", section, re.M)


def test_fields_are_walked() -> None:
    assert "compare.changes[].lost" in fields(SCHEMAS["audit"]) and "machine.gpus" in fields(SCHEMAS["run"])


@pytest.mark.parametrize("command", sorted(SCHEMAS))
def test_the_page_lists_every_field_once_in_schema_order(command: str) -> None:
    assert documented(command) == fields(SCHEMAS[command])

