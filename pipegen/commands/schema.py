"""`pipegen schema`: the JSON Schema of pipegen's own format, for editors, or of a command's JSON output
(the I/O edge)."""

from __future__ import annotations

import json
from typing import TextIO

from pipegen.dialects.own.schema import own_format_schema
from pipegen.json_output import SCHEMAS


def main(kind: str, out: TextIO) -> int:
    schema = SCHEMAS[kind.removesuffix("-output")] if kind.endswith("-output") else own_format_schema(kind)
    out.write(json.dumps(schema, indent=2, ensure_ascii=False) + "\n")
    return 0
