"""Buildkite's step semantics on this machine (pure): matrix jobs, branch filters, `skip`, soft
failures, and the order and outcome of dependencies.

A matrix step runs each combination as its own job (`KEY[value]`, with
`{{matrix...}}` substituted as Buildkite does). Steps run after what they
`depends_on` (a dependency on any target of a fanned-out step waits for the
target that runs here); one whose dependency failed does not run, unless it
allows the failure (`allow_dependency_failure`, or `allow_failure` on that
dependency). A step that Buildkite would leave out (`branches` not matching
this branch, `skip`) counts as passed for its dependents, as in Buildkite.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from pipegen.buildkite.branches import includes
from pipegen.buildkite.keys import declared_keys
from pipegen.buildkite.matrix import combinations
from pipegen.errors import UsageError
from pipegen.hardware.detect import Machine
from pipegen.hardware.types import Inventory
from pipegen.model import Declarations
from pipegen.run.local_plan import FAILED, Candidates, Planned, RunPlan, log_name, plan_runs

TRUE = (True, "true")


def expand_matrix(planned: Planned) -> list[Planned]:
    """One job per matrix combination (the step itself when it has no matrix)."""
    matrix = planned.step.field("matrix")
    if matrix is None:
        return [planned]
    folder = os.path.dirname(planned.log)
    out = []
    for combo in combinations(matrix):
        job = replace(planned, combination=combo, script=combo.substitute(planned.script),
                      env=tuple((k, combo.substitute(v)) for k, v in planned.env))
        out.append(replace(job, log=os.path.join(folder, log_name(job.key))))
    return out


def leave_out(runs: Sequence[Planned], branch: str | None) -> tuple[list[Planned], list[str]]:
    """Jobs with Buildkite's `skip` or a `branches` filter excluding `branch` marked skipped; notes for `if`."""
    out, notes = [], []
    for run in runs:
        step = run.step
        skip, branches, condition = step.field("skip"), step.field("branches"), step.field("if")
        if skip not in (None, False, "false"):
            run = replace(run, skip="skip: " + (skip if isinstance(skip, str) else "true"))
        elif branches is not None and branch and not includes(branches, branch):
            run = replace(run, skip=f"branches: {_text(branches)} leaves out branch {branch}")
        elif branches is not None and not branch:
            notes.append(f"{run.key}: branches: {_text(branches)} not checked (no current branch); it runs here")
        if condition is not None and not run.skip:
            notes.append(f"{run.key}: Buildkite decides its if: {condition}; pipegen run does not, it runs here")
        if step.field("if_changed") is not None and not run.skip:
            notes.append(f"{run.key}: Buildkite decides its if_changed at upload; pipegen run does not, it runs here")
        plugins = _plugin_names(step.field("plugins"))
        if plugins and not run.skip:  # never "passed": its plugins do work that nothing here does
            run = replace(run, plugins=plugins)
            notes.append(f"{run.key}: its plugins ({plugins}) run on Buildkite only; "
                         + ("its commands run here without them: incomplete at best" if step.commands else
                            "it has no commands: not run here (incomplete)"))
        out.append(run)
    return out, notes


def _plugin_names(plugins: Any) -> str:
    """A step's own plugins (a list of {name: options} or a mapping), by name."""
    items = plugins if isinstance(plugins, list) else [plugins] if isinstance(plugins, dict) else []
    return ", ".join(str(name) for item in items for name in (item if isinstance(item, dict) else [item]))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else " ".join(map(str, value))


def in_dependency_order(runs: Sequence[Planned], decl: Declarations) -> list[Planned]:
    """The jobs with `needs` filled in, each after the jobs it depends on (declaration order otherwise)."""
    origin = {s.key: s.origin or s.key for s in decl.steps}
    jobs_of: dict[str, list[str]] = {}
    for run in runs:
        jobs_of.setdefault(origin[run.step.key], []).append(run.key)
    filled = []
    for run in runs:
        step, own = run.step, origin[run.step.key]
        every = step.field("allow_dependency_failure") in TRUE
        allowed = {m for t in step.allow_failure_on for m in decl.group_members.get(t, (t,))}
        needs = [(job, every or target in allowed) for target in decl.needs(step)
                 if origin.get(target, own) != own for job in jobs_of.get(origin.get(target, ""), ())]
        filled.append(replace(run, needs=tuple(dict.fromkeys(needs))))
    ordered: list[Planned] = []
    done: set[str] = set()
    pending = list(filled)
    while pending:
        ready = next((r for r in pending if all(job in done for job, _ in r.needs)), pending[0])  # [0]: a cycle
        pending.remove(ready)
        ordered.append(ready)
        done.add(ready.key)
    return ordered


def blocked_by(run: Planned, status: Mapping[str, str]) -> str:
    """'unit failed' when a dependency that must pass did not; "" when the job may run."""
    for job, allowed in run.needs:
        state = status.get(job)
        if not allowed and (state in FAILED or state == "not run"):
            return f"{job} {state}"
    return ""


def soft_fails(soft_fail: Any, code: int) -> bool:
    """Whether exit status `code` is a soft failure under Buildkite's `soft_fail`."""
    if soft_fail in TRUE:
        return True
    if isinstance(soft_fail, (list, tuple)):
        statuses = [s.get("exit_status") if isinstance(s, dict) else s for s in soft_fail]
        return "*" in statuses or code in statuses
    return False


def pick_jobs(runs: Sequence[Planned], asked: Sequence[str], rendered: Mapping[str, str]) -> list[Planned]:
    """`--step 'KEY[value]'`: of the matrix step KEY, only that job (`--step KEY` keeps them all)."""
    wanted: dict[str, set[str]] = {}
    for name in asked:
        if name.endswith("]") and "[" in name:
            base, combo = name[:-1].split("[", 1)
            wanted.setdefault(rendered.get(base, base), set()).add(combo)
    if not wanted:
        return list(runs)
    out = []
    for base, combos in wanted.items():
        jobs = [r for r in runs if base in (r.step.key, r.step.origin)]
        names = {r.combination.name for r in jobs if r.combination is not None}
        for combo in combos - names:
            known = ", ".join(f"'{base}[{n}]'" for n in sorted(names)) or f"none: step '{base}' has no matrix"
            raise UsageError(f"step '{base}' has no matrix job '{combo}'", fix=f"name one of {known}")
    for run in runs:
        declared = next((b for b in (run.step.key, run.step.origin) if b in wanted), None)
        if declared is None or (run.combination is not None and run.combination.name in wanted[declared]):
            out.append(run)
    return out


def plan_jobs(decl: Declarations, candidates: Sequence[Candidates], machine: Machine, inventory: Inventory, *,
              step_keys: Sequence[str], log_dir: str | None, timeout_scale: float, environ: Mapping[str, str],
              header: Sequence[str], branch: str | None) -> RunPlan:
    """The candidates placed on this machine, as the jobs Buildkite would make of them on `branch`, in
    dependency order, with notes: the whole plan in one pass, from what the command read. `step_keys`: the
    --step keys the candidates were named by (a matrix job's `KEY[value]` picks that job)."""
    the_plan = plan_runs(decl, candidates, machine, inventory, named=bool(step_keys), log_dir=log_dir,
                         timeout_scale=timeout_scale, environ=environ, header=header)
    runs = [job for run in the_plan.runs for job in expand_matrix(run)]
    runs = pick_jobs(runs, step_keys, declared_keys(decl.steps))
    runs, notes = leave_out(runs, branch)
    runs = in_dependency_order(runs, decl)
    return replace(the_plan, runs=tuple(runs), header=(*the_plan.header, *notes, *outside(runs, decl)))


def outside(runs: Sequence[Planned], decl: Declarations) -> list[str]:
    """Notes for dependencies this run leaves out (`--step after` without `unit`): the job runs anyway."""
    origin = {s.key: s.origin or s.key for s in decl.steps}
    here = {origin[r.step.key] for r in runs}
    notes: dict[str, str] = {}  # one per step, not per matrix job
    for run in runs:
        missing = [t for t in decl.needs(run.step) if t in origin and origin[t] not in here]
        if missing:
            notes.setdefault(run.step.key, f"{run.step.key}: depends on {', '.join(missing)}, not part of this "
                                           "run; it runs without it")
    return list(notes.values())
