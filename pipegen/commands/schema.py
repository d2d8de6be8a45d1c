"""`pipegen schema`: the JSON Schema of pipegen's own format, for editors (the I/O edge)."""

from __future__ import annotations

import json
from typing import TextIO

from pipegen.dialects.own.schema import own_format_schema


def main(kind: str, out: TextIO) -> int:
    out.write(json.dumps(own_format_schema(kind), indent=2, ensure_ascii=False) + "\n")
    return 0
