"""Decisions + jobs on hardware -> the pipeline's page: its steps in order, and why each is there (pure).

Each step is run, a block/command pair, a skip step, or omitted, as decided
(`decide` runs every dependency of a step that runs); keys are made valid and
unique, and the 500-job upload limit is kept by omitting unselected steps when needed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pipegen.buildkite.keys import BLOCK_PREFIX, key_map, unique_key, valid_key
from pipegen.buildkite.limits import JOB_LIMIT, command_jobs
from pipegen.buildkite.upload_escape import Dollars, deliverable
from pipegen.dialects.load import dialect
from pipegen.errors import OutputError, UsageError
from pipegen.hardware.build_context import BuildContext
from pipegen.hardware.types import Job
from pipegen.model import Declarations, Group, Selection, Step
from pipegen.render.block_scope import hold_own_steps_only
from pipegen.render.buildkite_steps import BlockStep, DeclaredStep, Depends, Entry, GroupStep, StepItem, written_depends
from pipegen.render.command_step import command_step, skip_text
from pipegen.render.gate import GATE_JOBS, add_gate
from pipegen.render.job_fields import escaped
from pipegen.states import UNSELECTED, StepState, Unselected


class Row:
    """One step as the annotation shows it."""

    __slots__ = ("step", "key", "hardware", "queue", "state", "reason")

    def __init__(self, step: Step, key: str, hardware: str, queue: str, state: StepState, reason: str):
        self.step = step
        self.key = key  # rendered key
        self.hardware = hardware
        self.queue = queue
        self.state = state
        self.reason = reason

    @property
    def action(self) -> str:
        """The state's word, as templates read it (pipeline.j2 counts the rows whose action is "run")."""
        return self.state.value


class Page:
    """What goes into the pipeline: its steps (buildkite_steps.py, for the templates), and why.

    entries: the top-level steps and groups, in order;
    rows: one Row per declared step; jobs: Buildkite jobs in the upload (groups,
    blocks, commands times parallelism); over_limit: keys omitted to stay under the
    limit; renamed: (declared, rendered) keys.
    """

    __slots__ = ("entries", "rows", "selection", "unselected", "jobs", "limit", "over_limit", "renamed", "notes",
                 "pipeline")

    def __init__(self, entries: list[Entry], rows: list[Row], selection: Selection, unselected: Unselected,
                 jobs: int = 0, limit: int = JOB_LIMIT, over_limit: list[str] | None = None,
                 renamed: list[tuple[str, str]] | None = None):
        self.entries = entries
        self.rows = rows
        self.selection = selection
        self.unselected = unselected
        self.jobs = jobs
        self.limit = limit
        self.over_limit = over_limit or []
        self.renamed = renamed or []
        self.notes: list[str] = []
        self.pipeline: dict[str, Any] = {}  # Buildkite's pipeline-level fields (env, agents, notify, ...)


def build_page(decl: Declarations, selection: Selection, placed: Sequence[Job], *,
               unselected: Unselected | None = None, limit: int = JOB_LIMIT, build: BuildContext | None = None) -> Page:
    """Lay out the pipeline's steps. `placed`: one hardware.Job per step, in order; `build`: the
    build context (hardware.build_context) that may rewrite commands."""
    mode = unselected or decl.settings.unselected
    if mode not in UNSELECTED:
        raise UsageError(f"--unselected must be one of {', '.join(UNSELECTED)}, got {mode!r}")
    states = {d.step.key: StepState.of(d.action, mode) for d in selection.decisions}
    # The build's own step (a pull request's pre-commit check); a docs-only change uploads nothing.
    gate = None if selection.skip_all or build is None else build.gate
    over_limit = _omit_over_limit(decl.steps, states, limit - (GATE_JOBS if gate else 0))
    count = _count(decl.steps, states) + (GATE_JOBS if gate else 0)
    entries, rows = _steps_and_rows(decl, selection, placed, states, over_limit, limit, build)
    if gate:
        add_gate(entries, gate, build.priority if build is not None else None)
    notes = hold_own_steps_only(entries)  # a block step for an unselected step holds back no other step
    renamed = [(row.step.key, row.key) for row in rows if row.key != row.step.key]
    result = Page(entries=entries, rows=rows, selection=selection, unselected=mode, jobs=count, limit=limit,
                  over_limit=over_limit, renamed=renamed)
    dollars = Dollars(decl.settings.interpolate)
    result.pipeline = {name: escaped(value, dollars) for name, value in decl.settings.pipeline}
    result.notes += notes
    if selection.skip_all:
        result.notes.append(f"No steps: {selection.skip_reason}. The pipeline is `steps: []`.")
    if count > limit:
        raise LimitError(result)
    return result


def _omit_over_limit(steps: Sequence[Step], states: dict[str, StepState], limit: int) -> list[str]:
    """Over the job limit, omit every unselected step (in place); the keys omitted.

    Only the selected steps alone exceeding the limit is an error (raised by build_page()).
    """
    if _count(steps, states) <= limit:
        return []
    over_limit = [key for key, state in states.items() if state in (StepState.BLOCKED, StepState.SHOWN_SKIPPED)]
    for key in over_limit:
        states[key] = StepState.OMITTED
    return over_limit


def _steps_and_rows(decl: Declarations, selection: Selection, placed: Sequence[Job], states: Mapping[str, StepState],
                    over_limit: Sequence[str], limit: int,
                    build: BuildContext | None = None) -> tuple[list[Entry], list[Row]]:
    """The steps, grouped by declaration group in order, and one annotation Row per step."""
    dollars = Dollars(decl.settings.interpolate)
    keys = key_map(decl.steps)
    used = set(keys.values())
    block_keys = {s.key: unique_key(valid_key(s.block_key or BLOCK_PREFIX + keys[s.key]), used) for s in decl.steps}
    jobs_by_key = {job.step.key: job for job in placed}
    decisions = {d.step.key: d for d in selection.decisions}
    entries: list[Entry] = []
    groups: dict[str, GroupStep] = {}
    rows: list[Row] = []

    def present(target: str) -> bool:
        """A step in the pipeline, a step uploaded elsewhere, or a group with a step in the pipeline."""
        members = decl.group_members.get(target, (target,)) if decl.groups else (target,)
        return any(t in states and states[t].present for t in members) or target in decl.settings.external_steps

    for step in dialect(decl.layout).page_order(decl.steps):
        job, decision, state = jobs_by_key[step.key], decisions[step.key], states[step.key]
        reason = decision.reasons[0].text if decision.reasons else ""
        if step.key in over_limit:
            reason = f"omitted to stay within {limit} jobs; was: {reason}"
        rows.append(Row(step, keys[step.key], job.hardware, job.queue or "", state, reason))
        if not state.present:
            continue
        deliverable(step, dollars)
        depends = [_depends_entry(step, t, keys.get(t, t)) for t in step.depends_on if present(t)]
        items: list[StepItem] = []
        if state is StepState.BLOCKED:
            waits = (list(depends) or None) if job.template.job.block_waits else None  # the block waits too
            items.append(BlockStep(block_keys[step.key], dollars(step.block_label or f"Run {step.label}"), waits, step))
            depends.insert(0, block_keys[step.key])
        skip = skip_text(reason, dollars) if state is StepState.SHOWN_SKIPPED else None
        if step.kind == "command":
            items.append(command_step(step, job, keys[step.key], depends, dollars, skip=skip, build=build))
        else:
            items.append(declared_step(step, keys[step.key], depends, dollars, skip))
        if step.group:
            if step.group not in groups:
                groups[step.group] = _group_step(decl.group(step.group), dollars(step.group), present, dollars)
                entries.append(groups[step.group])
            groups[step.group].steps.extend(items)
        else:
            entries.extend(items)
    return entries, rows


def declared_step(step: Step, key: str, depends: list[Depends], dollars: Dollars, skip: str | None) -> DeclaredStep:
    """A wait, block, input or trigger step as declared: its Buildkite fields, the key where one was declared
    (as render writes it), the depends_on targets in the pipeline (a declared `[]` kept), pipegen's skip reason."""
    fields: dict[str, Any] = {}
    for name, value in step.buildkite:
        if name != "depends_on":
            fields[name] = key if name in ("key", "identifier", "id") else escaped(value, dollars)
    return DeclaredStep(key, fields, written_depends(depends, step.depends_on, step.buildkite), skip, step)


def _group_step(group: Group | None, title: str, present: Callable[[str], bool], dollars: Dollars) -> GroupStep:
    """A group with its own fields: its key, the depends_on targets in the pipeline (each {step,
    allow_failure} where it accepts the failure), then its other Buildkite fields."""
    if group is None:
        return GroupStep(title, [])
    depends: list[Depends] = [{"step": t, "allow_failure": True} if t in group.allow_failure_on else t
                              for t in group.depends_on if present(t)]
    return GroupStep(title, [], key=group.key or None,
                     depends_on=written_depends(depends, group.depends_on, group.buildkite),
                     fields={name: escaped(value, dollars) for name, value in group.buildkite if name != "depends_on"})


def _depends_entry(step: Step, target: str, key: str) -> Depends:
    """A depends_on entry: the rendered key, or {step, allow_failure} when the step accepts its failure."""
    return {"step": key, "allow_failure": True} if target in step.allow_failure_on else key


class LimitError(OutputError):
    def __init__(self, result: Page):
        selected = sum(1 for r in result.rows if r.state is StepState.RUN)
        super().__init__(
            f"the pipeline needs {result.jobs} Buildkite jobs for {selected} selected steps, more than the "
            f"{result.limit} that one upload may hold (unselected steps are already omitted)",
            fix="select fewer steps (--only KEY, a narrower change), lower 'parallelism', or split the pipeline")
        self.page = result


def _count(steps: Sequence[Step], states: Mapping[str, StepState]) -> int:
    """Jobs as Buildkite counts them: each group, block and command step; parallelism and matrix multiply."""
    total = 0
    groups: set[str] = set()
    for step in steps:
        state = states[step.key]
        if not state.present:
            continue
        if step.group and step.group not in groups:
            groups.add(step.group)
            total += 1
        total += command_jobs(step.parallelism, step.field("matrix")) + (state is StepState.BLOCKED)
    return total
