"""The graph of declared steps and groups: unique keys, known depends_on targets, no cycles."""

from __future__ import annotations

import graphlib

from pipegen.errors import DeclarationError, suggest
from pipegen.model import Declarations, Group, Step


def validate_graph(decl: Declarations) -> None:
    """Unique keys (steps and groups), known depends_on targets (steps, group keys, or `external_steps`), no
    cycles (a group key stands for its steps, and a group's depends_on holds for each of them)."""
    external = decl.settings.external_steps
    by_key: dict[str | None, Step | Group] = {}
    keyed: tuple[Step | Group, ...] = (*decl.steps, *(g for g in decl.groups if g.key))
    for item in keyed:
        key = item.key
        if key in by_key:
            first = by_key[key]
            raise DeclarationError(f"duplicate step key '{key}' (also at {first.location})", item.location,
                                   "give one of the steps (or groups) a different 'key'")
        by_key[key] = item
        if key in external:
            raise DeclarationError(f"step key '{key}' is also listed in external_steps", item.location,
                                   "rename the step, or remove the key from external_steps")
    items: tuple[Step | Group, ...] = (*decl.steps, *decl.groups)
    for item in items:
        name = f"step '{item.key}'" if isinstance(item, Step) else f"group '{item.name}'"
        for target in item.depends_on:
            if target not in by_key and target not in external:
                known = [*by_key, *external]
                raise DeclarationError(f"{name} depends on unknown step '{target}'", item.location,
                                       (suggest(target, known, "step keys") if known else "remove the depends_on entry")
                                       + "; a step uploaded elsewhere (the bootstrap) goes in the config's "
                                       "external_steps")
            inside = item.group if isinstance(item, Step) else item.name
            if any(g.key == target and g.name == inside for g in decl.groups):
                raise DeclarationError(f"{name} depends on its own group '{target}'", item.location,
                                       "a group's steps cannot wait for the group they are in")
    steps = decl.by_key()
    try:
        graphlib.TopologicalSorter({k: [t for t in decl.needs(step) if t in steps]
                                    for k, step in steps.items()}).prepare()
    except graphlib.CycleError as exc:
        cycle = exc.args[1]
        raise DeclarationError(f"dependency cycle: {' -> '.join(reversed(cycle))}", steps[cycle[0]].location,
                               "remove one of these depends_on entries") from None
