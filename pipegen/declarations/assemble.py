"""What every dialect's loader shares: its steps files read with every error, the Declarations checked."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from pipegen.declarations.discover import DEFAULT_INVENTORY, link_aliases
from pipegen.declarations.graph import validate_graph
from pipegen.declarations.yamlio import load_file
from pipegen.errors import DeclarationError, raise_all
from pipegen.model import Declarations, DeclarationWarning, Group, Settings, Step


def read_steps_files(root: str, files: list[str], docs: dict[str, Any],
                     read: Callable[[Any, str], list[Step]]) -> list[Step]:
    """`read` of every steps file (its parse, its path); the errors of all of them, not only the first
    (check reports each)."""
    steps: list[Step] = []
    errors: list[DeclarationError] = []
    for name in files:
        try:
            data = docs[name] = load_file(os.path.join(root, name), name)
            steps += read(data, name)
        except DeclarationError as exc:
            errors.append(exc)
    raise_all(errors)
    return steps


def finish(root: str, steps: list[Step], settings: Settings, layout: str, files: list[str],
           warnings: list[DeclarationWarning], groups: tuple[Group, ...] = ()) -> Declarations:
    inventory = [] if settings.hardware_inline is not None else [settings.hardware_file or DEFAULT_INVENTORY]
    decl = Declarations(steps=tuple(steps), settings=settings, layout=layout,
                        files=tuple(files), warnings=tuple(warnings), root=root, groups=groups,
                        aliases=link_aliases(root, [*files, *inventory]))
    validate_graph(decl)
    return decl
