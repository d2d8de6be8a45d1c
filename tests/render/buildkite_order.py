"""A small model of when Buildkite lets a step start: explicit `depends_on` plus the implicit
dependencies of wait and block steps, as Buildkite's documentation states them.

Sources (buildkite/docs, pages/pipelines/configure/):
- depends_on.md, "Implicit dependencies with wait and block": a wait step "is dependent on all
  previous steps"; "All steps following the wait step are dependent on this wait step"; a block
  step "performs the same function" and also needs unblocking.
- depends_on.md: a step with `depends_on` "will run immediately after the dependency step has
  completed, without waiting for `block` or `wait` steps unless those are also explicit
  dependencies"; an explicit empty dependency (`~`, `null` or `[]`) makes a step "run immediately
  regardless of implicit dependencies".
- step_types/block_step.md: "explicit dependencies specified by `depends_on` take precedence over
  implicit dependencies"; step_types/input_step.md: an input step "doesn't create any
  dependencies to the steps before and after it".
- step_types/group_step.md, "Using wait steps in job groups": a wait in a group concerns that group
  only ("both groups will operate independently"); a group's `depends_on` holds for its steps.

Where the documentation is silent the model assumes the longer wait, so a test that passes here
cannot stall on Buildkite: a block or wait with its own `depends_on` still holds back the steps
after it that have none (docs issue #1415: "b depends_on [a, block]"), a group placed after a
top-level wait or block waits for it unless the group has its own `depends_on`, and that holds for
every step inside the group whatever the step's own `depends_on` says.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

BARRIERS = ("wait", "block")


def kind(step: Any) -> str:
    if step in ("wait", "waiter") or step is None:
        return "wait"
    for name in ("group", "wait", "waiter", "block", "input", "trigger"):
        if name in step:
            return "wait" if name == "waiter" else name
    return step.get("type", "command")


def _targets(value: Any) -> list[str]:
    items = [] if value is None else [value] if isinstance(value, str) else list(value)
    return [item["step"] if isinstance(item, dict) else item for item in items]


class Graph:
    """Nodes: every step by key (or '#<n>' where it has none); `needs[node]`: what it waits for directly.
    A group is two nodes: the group's key (finished when all its steps are) and '<key>:start' (what every
    step of the group waits for: the group's own dependencies)."""

    def __init__(self, pipeline: dict[str, Any]):
        self.needs: dict[str, set[str]] = {}
        self.kinds: dict[str, str] = {}
        self.steps: dict[str, Any] = {}
        self._count = 0
        self._list(pipeline.get("steps") or [], start=None)

    def _name(self, step: Any) -> str:
        self._count += 1
        key = step.get("key") or step.get("id") or step.get("identifier") if isinstance(step, dict) else None
        if not key and kind(step) == "group":
            return f"#group {step['group']}"
        return key or f"#{self._count}"

    def _list(self, steps: Iterable[Any], start: str | None) -> list[str]:
        """The nodes of one list of steps (the pipeline's, or a group's: `start` is the group's start node)."""
        before: list[str] = []  # the nodes of this list so far
        barrier: str | None = None  # the last wait or block of this list
        for step in steps:
            name, what = self._name(step), kind(step)
            self.kinds[name], self.steps[name] = what, step
            needs: set[str] = set()
            explicit = isinstance(step, dict) and "depends_on" in step
            if explicit:
                needs |= set(_targets(step["depends_on"]))
            elif what in BARRIERS:  # a block too: what follows it waits for it and for what precedes it
                needs |= {n for n in before if self.kinds[n] != "input"}
            elif what != "input" and barrier is not None:
                needs.add(barrier)
            if start is not None:
                needs.add(start)
            if what == "group":
                self.needs[name + ":start"] = needs
                members = self._list(step.get("steps") or [], start=name + ":start")
                self.needs[name] = set(members)
            else:
                self.needs[name] = needs
            if what in BARRIERS:
                barrier = name
            before.append(name)
        return before

    def waits_for(self, node: str, stop: Iterable[str] = ()) -> set[str]:
        """Every node `node` waits for, directly or not; the dependencies of the nodes in `stop` are not
        followed (they are reached, not passed)."""
        stop = set(stop)
        seen: set[str] = set()
        todo = list(self.needs.get(node, ()))
        while todo:
            current = todo.pop()
            if current in seen:
                continue
            seen.add(current)
            if current not in stop:
                todo += self.needs.get(current, ())
        return {n for n in seen if not n.endswith(":start")}

    def commands(self) -> list[str]:
        return [n for n, k in self.kinds.items() if k in ("command", "trigger")]
