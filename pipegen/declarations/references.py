"""Names in the config that must name a step: an `always_run` key or glob, a label's `only:` (and `add:`)
keys, an `external_steps` key that some step's `depends_on` uses. Pure.

One that names none is a typo that changes what runs without a word: the step meant to always run waits
for a click, the label runs nothing it asked for, the external key stands for no step that waits on it.
Each is a warning that `select` prints and `check` reports as `unmatched-key` (an error there).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Sequence
from typing import Any

from pipegen.buildkite.keys import declared_keys
from pipegen.declarations.yamlio import LocDict, LocList
from pipegen.errors import suggest
from pipegen.model import DeclarationWarning, Location, Step

CODE = "unmatched-key"
LABEL_KEYS = ("only", "add")  # a label's fields that list step keys


def unmatched_names(top: LocDict, steps: Sequence[Step], groups: Sequence[Any] = ()) -> list[DeclarationWarning]:
    """`groups`: the groups with fields of their own, whose depends_on may name an external step too."""
    keys = step_names(steps)
    own = step_names([s for s in steps if s.mirror is None])  # always_run never applies to a mirror
    out = []
    for pattern, where in _items(top.get("always_run"), top.loc("always_run")):
        if not any(fnmatch.fnmatchcase(key, pattern) for key in own):
            out.append(DeclarationWarning(where, CODE,
                                          f"always_run '{pattern}' matches no step's key: no step always runs for it",
                                          _fix(pattern, own, "always_run")))
    labels = top.get("labels")
    for label, item in labels.items() if isinstance(labels, LocDict) else ():
        for name in LABEL_KEYS:
            field = item.get(name) if isinstance(item, LocDict) else None
            for key, where in _items(field, item.loc(name) if isinstance(item, LocDict) else top.loc("labels")):
                if key not in keys:
                    out.append(DeclarationWarning(where, CODE,
                                                  f"label '{label}' {name}: '{key}' names no step: the label "
                                                  "does not run it", _fix(key, keys, f"the label's {name}:")))
    used = {target for item in (*steps, *groups) for target in item.depends_on}
    for key, where in _items(top.get("external_steps"), top.loc("external_steps")):
        if key not in used:
            out.append(DeclarationWarning(where, CODE, f"external step '{key}' is named by no step's depends_on",
                                "remove it from external_steps, or add it to the depends_on of the steps that "
                                "wait for it"))
    return out


def step_names(steps: Sequence[Step]) -> set[str]:
    """What names a step: its key, the key render writes for it, a fanned-out step's declared key."""
    return {s.key for s in steps} | set(declared_keys(steps)) | {s.origin for s in steps if s.origin}


def _items(field: Any, where: Location) -> Iterator[tuple[str, Location]]:
    if isinstance(field, LocList):
        for index, value in enumerate(field):
            if isinstance(value, str):
                yield value, field.loc(index)
    elif isinstance(field, str):
        yield field, where


def _fix(name: str, known: Any, field: str) -> str:
    hint = suggest(name, known, "step keys") if known else "this pipeline has no such step"
    return f"{hint}; or remove it from {field}"
