"""Buildkite's implicit dependencies on the declared wait and block steps (pure).

A wait or block step waits for every step before it in its list, and every step after it without
`depends_on` waits for it; a step with its own `depends_on` (even `[]`) has no implicit dependency,
and an input step neither has one nor makes one (docs: pipelines/configure/depends-on, "Implicit
dependencies with wait and block"; step_types/input_step). The lists are the pipeline's and each
group's: a wait in a group holds back that group only, and a group placed after a wait waits for it,
every step in it whatever the step's own `depends_on`, unless the group has a `depends_on` of its own.
The lists are built as render places the steps: in declaration order, a group where its first step is
(vLLM's files, the ones rendered in another order, declare no wait or block). A wait or block with
`if` or `branches` may be left out of the build: the steps after it then follow the one before it, so
both count.
"""

from __future__ import annotations

from collections.abc import Sequence

from pipegen.frozen import frozen
from pipegen.model import Declarations, Step

BARRIERS = ("wait", "block")
CONDITIONS = ("if", "branches")  # a wait or block that may be left out of the build


@frozen
class Barrier:
    """A declared wait or block step and the steps it waits for implicitly (none where it has `depends_on`)."""

    step: Step
    waits_for: tuple[str, ...]  # step keys, in declaration order


def implicit_waits(decl: Declarations) -> dict[str, tuple[Barrier, ...]]:
    """Each step with implicit dependencies -> the declared waits and blocks it follows."""
    top: list[Step | str] = []  # the pipeline's list: a step, or a group's name where its first step is
    members: dict[str, list[Step]] = {}
    for step in decl.steps:
        if not step.group:
            top.append(step)
        elif step.group in members:
            members[step.group].append(step)
        else:
            members[step.group] = [step]
            top.append(step.group)
    out: dict[str, tuple[Barrier, ...]] = {}
    for item, outer in zip(top, _one_list(top, members), strict=True):
        if isinstance(item, Step):
            if outer:
                out[item.key] = outer
            continue
        group = decl.group(item)
        if group is not None and group.depends_on:
            outer = ()
        for step, inner in zip(members[item], _one_list(members[item], members), strict=True):
            if outer or inner:
                out[step.key] = (*outer, *inner)
    return out


def _one_list(items: Sequence[Step | str], members: dict[str, list[Step]]) -> list[tuple[Barrier, ...]]:
    """The waits and blocks each item of one list follows (a group's name: the group's own)."""
    before: list[str] = []  # the keys of the steps so far, a group's each
    following: tuple[Barrier, ...] = ()
    out: list[tuple[Barrier, ...]] = []
    for item in items:
        steps = members[item] if isinstance(item, str) else [item]
        if isinstance(item, str):
            out.append(following)
        elif item.kind in BARRIERS:
            out.append(())
            barrier = Barrier(item, () if explicit(item) else tuple(before))
            may_be_absent = any(item.field(name) is not None for name in CONDITIONS)
            following = (*following, barrier) if may_be_absent else (barrier,)
        else:
            out.append(() if item.kind == "input" or explicit(item) else following)
        before += [step.key for step in steps if step.kind != "input"]
    return out


def explicit(step: Step) -> bool:
    """Whether the step has a `depends_on` of its own (`[]` included), which takes the place of the implicit one."""
    return bool(step.depends_on) or step.field("depends_on") is not None
