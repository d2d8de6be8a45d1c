"""The steps' dependency graph: unique keys, known depends_on targets, no cycles. Pure."""

from __future__ import annotations

import graphlib

from pipegen.errors import DeclarationError, suggest
from pipegen.model import Step


def validate_graph(steps: list[Step], external: tuple[str, ...] = ()) -> None:
    """Unique keys, known depends_on targets (steps of this pipeline or `external`), no cycles."""
    by_key: dict[str, Step] = {}
    for step in steps:
        if step.key in by_key:
            first = by_key[step.key]
            raise DeclarationError(f"duplicate step key '{step.key}' (also at {first.location})", step.location,
                                   "give one of the steps a different 'key'")
        by_key[step.key] = step
        if step.key in external:
            raise DeclarationError(f"step key '{step.key}' is also listed in external_steps", step.location,
                                   "rename the step, or remove the key from external_steps")
    for step in steps:
        for target in step.depends_on:
            if target not in by_key and target not in external:
                known = [*by_key, *external]
                raise DeclarationError(f"step '{step.key}' depends on unknown step '{target}'", step.location,
                                       (suggest(target, known, "step keys") if known else "remove the depends_on entry")
                                       + "; a step uploaded elsewhere (the bootstrap) goes in the config's "
                                       "external_steps")
    try:
        graphlib.TopologicalSorter({k: [t for t in step.depends_on if t in by_key]
                                    for k, step in by_key.items()}).prepare()
    except graphlib.CycleError as exc:
        cycle = exc.args[1]
        raise DeclarationError(f"dependency cycle: {' -> '.join(reversed(cycle))}", by_key[cycle[0]].location,
                               "remove one of these depends_on entries") from None
