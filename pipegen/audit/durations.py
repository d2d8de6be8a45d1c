"""`pipegen audit --durations FILE`: step key -> minutes per job, from CSV or JSON. Pure.

CSV: `key,minutes` rows (a first row whose minutes is not a number is a header);
JSON: one object `{"key": minutes}`. A malformed row is an error naming its line.
"""

from __future__ import annotations

import csv
import json
import math

from pipegen.errors import UsageError
from pipegen.model import Location

FIX = "write one 'step-key,minutes' row per step (CSV) or {\"step-key\": minutes} (JSON), minutes >= 0"


def parse_durations(text: str, name: str) -> dict[str, float]:
    if name.endswith(".json") or text.lstrip().startswith("{"):
        return _json(text, name)
    out: dict[str, float] = {}
    for line, row in enumerate(csv.reader(text.splitlines()), start=1):
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        if len(row) != 2:
            raise UsageError(f"expected 2 columns (step key, minutes), found {len(row)}", Location(name, line), FIX)
        key, minutes = row[0].strip(), row[1].strip()
        if line == 1 and not _is_number(minutes):
            continue  # a header
        value = _minutes(minutes)
        if value is None or not key:
            raise UsageError(f"'{minutes}' is not a number of minutes for step '{key}'", Location(name, line), FIX)
        out[key] = value
    return out


def _json(text: str, name: str) -> dict[str, float]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"not valid JSON: {exc.msg}", Location(name, exc.lineno, exc.colno), FIX) from None
    if not isinstance(data, dict):
        raise UsageError("expected one JSON object of step key -> minutes", Location(name, 1), FIX)
    out = {}
    for key, minutes in data.items():
        value = _minutes(str(minutes)) if isinstance(minutes, (int, float)) and not isinstance(minutes, bool) else None
        if value is None:
            raise UsageError(f"{json.dumps(minutes)} is not a number of minutes for step '{key}'", Location(name),
                             FIX)
        out[key] = value
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _minutes(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None
