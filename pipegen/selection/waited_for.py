"""What a running step waits for runs too (pure): `decide`'s last word, so every command says it and counts it.

Explicitly: Buildkite fails a build whose `depends_on` names a step not in it, and a blocked one would hold
the step for ever. Implicitly: a declared wait or block waits for every step before it in its list
(buildkite/implicit.py); where unselected steps become block steps (`unselected: block`) one of them
before such a wait would hold every step after it for ever, a silent stall. With `skip` a skipped step
counts as finished and with `omit` it is not there: nothing stalls, nothing is pulled in.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pipegen.buildkite.implicit import implicit_waits
from pipegen.model import Decision, Declarations, Reason, Step
from pipegen.states import Unselected

NEEDED = "needed-by"  # the rule of a step that runs because a step that runs waits for it
FOLLOWS = "(it follows the "  # in the text of one needed by a step after a declared wait or block


def with_dependencies(decl: Declarations, decisions: list[Decision], unselected: Unselected) -> list[Decision]:
    """Every step a running step depends_on runs too, transitively, and (`unselected` block) every blocked
    step a declared wait or block it follows waits for. Breadth first in declaration order, so the first
    dependent is named."""
    index = {d.step.key: i for i, d in enumerate(decisions)}
    implicit = implicit_waits(decl) if unselected == "block" else {}
    pending = [d.step.key for d in decisions if d.action == "run"]
    running = set(pending)

    def pull(target: str, why: str) -> None:
        running.add(target)
        pending.append(target)
        was = decisions[index[target]]
        reason = Reason(NEEDED, f"{why}; was: {was.reasons[0].text}")
        decisions[index[target]] = Decision(was.step, "run", (reason, *conditions(was.step, "run")))

    for key in pending:  # grows while it is walked
        for target in decl.needs(decisions[index[key]].step):  # a group key: each step of the group
            if target not in running and target in index:  # an external step is uploaded elsewhere
                pull(target, f"needed by selected step '{key}' (depends_on)")
        for barrier in implicit.get(key, ()):
            wait = barrier.step
            for target in barrier.waits_for:  # a skipped step is not in the pipeline: nothing waits for it
                if target not in running and decisions[index[target]].action == "block":
                    pull(target, f"needed by selected step '{key}' {FOLLOWS}{wait.kind} step at "
                                 f"{wait.location}, which waits for every step before it)")
    return decisions


def needed_how(decisions: Iterable[Decision]) -> str:
    """How the steps that run only because a step that runs waits for them are waited for."""
    texts = [d.reasons[0].text for d in decisions if d.reasons[0].rule == NEEDED]
    ways = ("depends_on" if any(FOLLOWS not in t for t in texts) else "",
            "a declared wait or block it follows" if any(FOLLOWS in t for t in texts) else "")
    return ", ".join(w for w in ways if w)


def conditions(step: Step, action: str) -> tuple[Reason, ...]:
    """A step in the pipeline that carries Buildkite's own `if`, `branches` or `if_changed` (the agent's own
    diff at upload): Buildkite may still skip it."""
    if action == "skip" or not step.buildkite:
        return ()
    out = []
    for name in ("if", "branches", "if_changed"):
        value = step.field(name)
        if value is not None:
            out.append(Reason("buildkite-condition", f"Buildkite may still skip it ({name}: {_text(value)})"))
    return tuple(out)


def _text(value: Any) -> str:
    """A condition as written: a string, a list of them, or if_changed's {include: ..., exclude: ...}."""
    if isinstance(value, dict):
        return " ".join(f"{k}: {_text(v)}" for k, v in value.items())
    return value if isinstance(value, str) else " ".join(map(str, value))
