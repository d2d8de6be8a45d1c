"""The pipeline's steps as render lays them out, one class per Buildkite step kind (the templates' input).

`CommandStep` (command.j2), `BlockStep` (block.j2: pipegen's block before a step not selected),
`DeclaredStep` (step.j2: a wait, block, input or trigger step written as declared) and `GroupStep`
(pipeline.j2). Every one has its `depends_on` in one attribute, as Buildkite reads it: None writes no
`depends_on` (the step waits for the wait or block before it), `[]` writes `depends_on: []` (it waits
for nothing), a list its targets (a key, or {step, allow_failure: true}). Each class names its template
in `type`. Plain classes with slots, not dataclasses: the templates read their attributes on every
job, and render's later passes (the build's gate, block_scope.py) add to `depends_on` in place.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Literal

if TYPE_CHECKING:
    from pipegen.hardware.types import Job, Template
    from pipegen.model import Step

Depends = str | dict[str, Any]  # a key, or {step: KEY, allow_failure: true}
DeclaredKind = Literal["wait", "block", "input", "trigger"]
DECLARED_KINDS: dict[str, DeclaredKind] = {"wait": "wait", "block": "block", "input": "input", "trigger": "trigger"}


class CommandStep:
    """A command step: a Step's job on its hardware (command_step.py), or the build's gate (gate.py)."""

    type: ClassVar[str] = "command"
    __slots__ = ("label", "key", "depends_on", "agents", "commands", "env", "timeout_in_minutes", "soft_fail",
                 "retry", "parallelism", "concurrency", "concurrency_group", "skip", "fields", "plugin", "plugins",
                 "pod_spec", "job", "step")

    def __init__(self, *, label: str, key: str, depends_on: list[Depends] | None, agents: dict[str, Any],
                 commands: list[str], env: dict[str, str], timeout_in_minutes: Any = None, soft_fail: Any = None,
                 retry: dict[str, Any] | None = None, parallelism: int | None = None, concurrency: int | None = None,
                 concurrency_group: str | None = None, skip: str | None = None, fields: dict[str, Any] | None = None,
                 plugin: Template | None = None, plugins: list[Any] | None = None, pod_spec: Any = None,
                 job: Job | None = None, step: Step | None = None):
        self.label = label
        self.key = key
        self.depends_on = depends_on
        self.agents = agents
        self.commands = commands
        self.env = env
        self.timeout_in_minutes = timeout_in_minutes  # minutes, or an upload-time variable (Safe)
        self.soft_fail = soft_fail  # true, or a list of {exit_status}
        self.retry = retry
        self.parallelism = parallelism
        self.concurrency = concurrency
        self.concurrency_group = concurrency_group
        self.skip = skip
        self.fields = fields if fields is not None else {}  # other Buildkite fields: if, branches, matrix, ...
        self.plugin = plugin  # the hardware family's template, rendered by its own .j2 file
        self.plugins = plugins if plugins is not None else []  # the step's own plugins, after the family's
        self.pod_spec = pod_spec  # a kubernetes family's podSpec with the job's GPUs
        self.job = job
        self.step = step


class BlockStep:
    """pipegen's block step before a step not selected (--unselected block): a person runs the step."""

    type: ClassVar[str] = "block"
    __slots__ = ("key", "block", "depends_on", "step")

    def __init__(self, key: str, block: str, depends_on: list[Depends] | None, step: Step):
        self.key = key
        self.block = block  # the prompt
        self.depends_on = depends_on
        self.step = step


class DeclaredStep:
    """A wait, block, input or trigger step as declared: its Buildkite fields verbatim, the key as render
    writes it, the depends_on targets in the pipeline, pipegen's skip reason."""

    type: ClassVar[str] = "step"
    __slots__ = ("key", "fields", "depends_on", "skip", "named", "step")

    def __init__(self, key: str, fields: dict[str, Any], depends_on: list[Depends] | None, skip: str | None,
                 step: Step):
        self.key = key
        self.fields = fields  # as declared, but depends_on (key, identifier or id: the key render writes)
        self.depends_on = depends_on
        self.skip = skip
        self.named = False  # a depends_on after it names it: its key is written where none was declared
        self.step = step

    @property
    def kind(self) -> DeclaredKind:
        return DECLARED_KINDS[self.step.kind]  # a KeyError here: a loader made a kind Buildkite lacks

    def name_key(self) -> str:
        """The key, written out where none was declared (a depends_on after it names it)."""
        self.named = True
        return self.key

    @property
    def written(self) -> dict[str, Any]:
        """The fields as step.j2 writes them: as declared, then depends_on, pipegen's skip, and the key."""
        out = dict(self.fields)
        if self.depends_on is not None:
            out["depends_on"] = self.depends_on
        if self.skip is not None:
            out["skip"] = self.skip
        if self.named and not any(name in out for name in ("key", "identifier", "id")):
            out["key"] = self.key
        return out


class GroupStep:
    """A group and its steps. `depends_on` goes after the key where the group declared it; where render
    adds it (block_scope.py), after the group's other fields."""

    type: ClassVar[str] = "group"
    __slots__ = ("group", "key", "depends_on", "fields", "steps", "added_depends")

    def __init__(self, group: str, steps: list[StepItem], key: str | None = None,
                 depends_on: list[Depends] | None = None, fields: dict[str, Any] | None = None):
        self.group = group  # its name
        self.key = key
        self.depends_on = depends_on
        self.fields = fields if fields is not None else {}  # its other Buildkite fields: if, notify, ...
        self.steps = steps
        self.added_depends = False

    @property
    def written(self) -> dict[str, Any]:
        """The group's own fields as pipeline.j2 writes them."""
        out: dict[str, Any] = {"key": self.key} if self.key else {}
        if self.depends_on is not None and not self.added_depends:
            out["depends_on"] = self.depends_on
        out.update(self.fields)
        if self.depends_on is not None and self.added_depends:
            out["depends_on"] = self.depends_on
        return out


def written_depends(depends: list[Depends], targets: Iterable[str], declared: Iterable[tuple[str, Any]]
                    ) -> list[Depends] | None:
    """One rule for a step's and a group's depends_on: its targets in the pipeline; where none is, `[]` if it
    declared targets (`targets`, none of them on the page) or `depends_on: []` (among `declared`, its Buildkite
    fields): it waits for no wait or block before it, as Buildkite runs a step whose every dependency is
    absent, and render's passes add none. Else none written: it follows the waits before it."""
    return depends or ([] if any(targets) or any(name == "depends_on" for name, _ in declared) else None)


StepItem = CommandStep | BlockStep | DeclaredStep  # a step of the page or of a group
Entry = GroupStep | CommandStep | BlockStep | DeclaredStep  # a top-level entry of the page
