"""`pipegen schema`: the JSON Schema of pipegen's own format (config, steps files, hardware inventory), for
editors, or of a command's JSON output (the I/O edge)."""

from __future__ import annotations

import json
from typing import TextIO

from pipegen.dialects.own.schema import own_format_schema
from pipegen.hardware.schema import inventory_schema
from pipegen.json_output import SCHEMAS


def main(kind: str, out: TextIO) -> int:
    if kind.endswith("-output"):
        schema = SCHEMAS[kind.removesuffix("-output")]
    else:
        schema = inventory_schema() if kind == "hardware" else own_format_schema(kind)
    out.write(json.dumps(schema, indent=2, ensure_ascii=False) + "\n")
    return 0
