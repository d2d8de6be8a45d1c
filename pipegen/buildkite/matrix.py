"""Buildkite's build matrix: the combinations a `matrix:` step expands into, and their values in text.

`matrix: [a, b]` (or `setup: [a, b]`) is one dimension, written `{{matrix}}`;
`setup: {os: [...], arch: [...]}` is every combination of the dimensions,
written `{{matrix.os}}`. An adjustment whose `with` is a combination of the
setup changes it (`skip` removes it, `soft_fail` softens it); one that is not
adds it. Every combination left is a job of its own.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from pipegen.frozen import frozen

_REFERENCE = re.compile(r"\{\{\s*matrix(?:\.([A-Za-z0-9_]+))?\s*\}\}")


@frozen
class Combination:
    values: tuple[tuple[str, str], ...]  # (dimension, value); one dimension named "" for {{matrix}}
    soft_fail: Any = None  # an adjustment's soft_fail, verbatim

    @property
    def name(self) -> str:
        """'linux' for one dimension, 'os=linux,arch=arm64' for several."""
        if len(self.values) == 1 and not self.values[0][0]:
            return self.values[0][1]
        return ",".join(f"{k}={v}" for k, v in self.values)

    def substitute(self, text: str) -> str:
        """`text` with `{{matrix}}` / `{{matrix.NAME}}` replaced as Buildkite does."""
        values = dict(self.values)
        return _REFERENCE.sub(lambda m: values.get(m.group(1) or "", m.group()), text)


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _setup(matrix: Any) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """The dimension names ("" alone: one unnamed dimension) and the setup's combinations."""
    setup = matrix.get("setup") if isinstance(matrix, dict) else matrix
    if isinstance(setup, dict):
        names = tuple(setup)
        return names, [tuple(_text(v) for v in combo) for combo in itertools.product(*setup.values())]
    return ("",), [(_text(v),) for v in setup or ()]


def combinations(matrix: Any) -> list[Combination]:
    """Every job a matrix creates, in Buildkite's order (setup first, then added adjustments)."""
    names, combos = _setup(matrix)
    soft: dict[tuple[str, ...], Any] = {}
    adjustments = matrix.get("adjustments") if isinstance(matrix, dict) else None
    for adjustment in adjustments or ():
        given = adjustment.get("with")
        if isinstance(given, dict):
            combo = tuple(_text(given.get(name, "")) for name in names)
        else:
            combo = tuple(_text(v) for v in (given if isinstance(given, list) else [given]))
        skip = adjustment.get("skip")
        if skip not in (None, False, "false"):
            combos = [c for c in combos if c != combo]
            continue
        if combo not in combos:
            combos.append(combo)
        if "soft_fail" in adjustment:
            soft[combo] = adjustment["soft_fail"]
    # Not strict: the schema lets an adjustment's `with` list differ in length from the setup's dimensions
    # (`setup: [a, b]` with `with: [x, y]`); it is still one job.
    return [Combination(tuple(zip(names, combo, strict=False)), soft.get(combo)) for combo in combos]


def size(matrix: Any) -> int:
    """How many jobs a step with this `matrix` creates (1 without one)."""
    return len(combinations(matrix)) if matrix is not None else 1
