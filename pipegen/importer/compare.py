"""The input pipeline against the rendered one, both as Buildkite reads them (view.py): what differs.

Steps are matched by key (the import gives a step without one the key it renders with, which
Buildkite never shows, so a key added is no difference); a label the input left out is not compared
(the import writes the command as the label Buildkite showed). Differences are grouped by field, so
a field pipegen changes on every step reads as one line, not hundreds.
"""

from __future__ import annotations

import json

from pipegen.frozen import frozen
from pipegen.importer.view import Record

SHOWN = 70  # characters of a value shown in a difference


@frozen
class Difference:
    step: str
    field: str  # a field, "step" (missing or added), "depends_on", "group" or "label"
    expected: object  # a field's value as Buildkite reads it; for "step", the step's kind
    got: object


def compare(expected: dict[str, Record], got: dict[str, Record]) -> list[Difference]:
    out: list[Difference] = []
    for ident, want in expected.items():
        have = got.get(ident)
        if have is None:
            out.append(Difference(ident, "step", want.kind, None))
            continue
        out += _fields(ident, want, have)
    out += [Difference(ident, "step", None, have.kind) for ident, have in got.items() if ident not in expected]
    return out


def _fields(ident: str, want: Record, have: Record) -> list[Difference]:
    out: list[Difference] = []
    if want.label is not None and want.label != have.label:
        out.append(Difference(ident, "label", want.label, have.label))
    if want.group != have.group:
        out.append(Difference(ident, "group", want.group, have.group))
    if want.deps != have.deps:
        out.append(Difference(ident, "depends_on", _deps(want.deps), _deps(have.deps)))
    for name in sorted(set(want.fields) | set(have.fields)):
        if want.fields.get(name) != have.fields.get(name):
            out.append(Difference(ident, name, want.fields.get(name), have.fields.get(name)))
    return out


def _deps(deps: dict[str, bool]) -> list[str]:
    return sorted(f"{d} (allow_failure)" if allow else d for d, allow in deps.items())


def summary(differences: list[Difference], limit: int = 40) -> list[str]:
    """One line per field that differs: how many steps, which, and the first step's two values."""
    by_field: dict[str, list[Difference]] = {}
    for difference in differences:
        by_field.setdefault(difference.field, []).append(difference)
    lines: list[str] = []
    for name, items in by_field.items():
        steps = ", ".join(d.step for d in items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")
        first = items[0]
        if name == "step":
            missing = [d for d in items if d.got is None]
            lines += [f"  step '{d.step}' ({d.expected}): not in the rendered pipeline" for d in missing[:limit]]
            lines += [f"  step '{d.step}' ({d.got}): rendered, not in the input" for d in items if d.expected is None]
            continue
        lines.append(f"  {name}: differs on {len(items)} step{'s' * (len(items) != 1)} ({steps}); "
                     f"'{first.step}' had {_show(first.expected)}, renders {_show(first.got)}")
    return lines[:limit] + ([f"  ... and {len(lines) - limit} more lines"] if len(lines) > limit else [])


def _show(value: object) -> str:
    if value is None:
        return "nothing"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    text = text.replace("\n", "\\n")
    return repr(text[:SHOWN] + "...") if len(text) > SHOWN else repr(text)
