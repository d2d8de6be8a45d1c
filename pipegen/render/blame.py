"""Which step and which template an invalid rendered pipeline comes from.

Only a `--templates` override can make the output invalid, and the check that
finds it sees only the text: this names the step at fault (from the schema
error, or the line of a YAML error) and the template files that rendered it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

from pipegen.errors import OutputError
from pipegen.render.buildkite_steps import CommandStep, Entry, GroupStep, StepItem

_ITEM = re.compile(r"\s*- (?:label|block|group|key|command|commands):")
_KEY = re.compile(r"\s*(?:- )?key:\s*(.+?)\s*$")


def blame(exc: OutputError, text: str, entries: list[Entry], templates: str | None) -> OutputError:
    """`exc`, naming the step's key and its templates (a user's override by its path) when one is at fault."""
    key = exc.step_key or key_at_line(text, exc.line)
    item = next((i for i in _items(entries) if i.key == key), None) if key else None
    if item is None:
        return exc
    names = [f"{item.type}.j2"]
    if isinstance(item, CommandStep) and item.plugin is not None:
        names.append(item.plugin.template_file)
    shown = [_origin(n, templates) for n in ["pipeline.j2", *names] if n != "pipeline.j2" or _overridden(n, templates)]
    overrides = [s for s in shown if not s.endswith("(shipped)")]
    error = OutputError(f"{exc.message}; step '{key}' was rendered by {' and '.join(shown)}",
                        fix=f"fix {(overrides or shown)[0]}: every value must go through a filter, and every field "
                            "must be one Buildkite knows")
    error.step_key, error.line = key, exc.line
    return error


def key_at_line(text: str, line: int) -> str | None:
    """The key of the step item that holds 1-based `line` of the rendered text."""
    if line <= 0:
        return None
    lines = text.splitlines()
    start = next((i for i in range(min(line, len(lines)) - 1, -1, -1) if _ITEM.match(lines[i])), None)
    if start is None:
        return None
    for i in range(start, len(lines)):
        if i > start and _ITEM.match(lines[i]) and not lines[i].lstrip().startswith("- key:"):
            return None
        match = _KEY.match(lines[i])
        if match:
            return match.group(1).strip("'\"")
    return None


def _items(entries: list[Entry]) -> Iterator[StepItem]:
    for entry in entries:
        if isinstance(entry, GroupStep):
            yield from entry.steps
        else:
            yield entry


def _overridden(name: str, templates: str | None) -> bool:
    return bool(templates) and os.path.isfile(os.path.join(templates, name))  # type: ignore[arg-type]


def _origin(name: str, templates: str | None) -> str:
    return os.path.join(templates, name) if _overridden(name, templates) else f"{name} (shipped)"  # type: ignore[arg-type]
