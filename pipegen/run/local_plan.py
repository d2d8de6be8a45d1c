"""`pipegen run`, planning (pure): the selected steps placed on this machine.

Each selected declared step (its fan-out targets and mirrors share an
`origin`) runs on the first of its targets this machine satisfies, or is
listed with why it cannot. Steps run on this machine directly, not in CI's
container: the docker working-directory prefix (`docker_workdir`) maps to
the repository, the template's environment entries are kept where CI's
plugin would set them, and its wrappers (plugin, `setup`, `wrap`) are left
out. A `$` reaches the shell as it reaches CI's (see `script`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pipegen.buildkite.keys import declared_keys
from pipegen.buildkite.upload_escape import Dollars, deliverable, upload_value, upload_variable, uploaded
from pipegen.buildkite.workdir import map_workdir
from pipegen.errors import DeclarationError, UsageError, suggest
from pipegen.frozen import frozen
from pipegen.hardware.detect import GPU_VENDORS, Machine
from pipegen.hardware.placement import place
from pipegen.hardware.types import Inventory
from pipegen.model import Declarations, Selection, Step

# incomplete: its commands passed (or it has none) but its plugins, which do part of its work, ran nowhere.
Status = Literal["passed", "failed", "soft failed", "timed out", "interrupted", "not run", "skipped", "incomplete"]
DEFAULT_LOG_DIR = ".pipegen/logs"  # under the repository root
FAILED = ("failed", "timed out", "interrupted")


@frozen
class Planned:
    """One step placed on this machine, ready to run."""

    step: Step
    hardware: str  # the target chosen, e.g. "mi355 x2"
    cwd: str
    script: str  # the commands as one bash script
    env: tuple[tuple[str, str], ...]  # set on top of this process's environment
    timeout_s: float | None
    log: str
    root: str = "."  # the repository: artifact_paths are relative to it, as to the agent's checkout
    combination: Any = None  # a matrix step's job: its buildkite.matrix.Combination
    needs: tuple[tuple[str, bool], ...] = ()  # (job key, may fail): the jobs it depends on (run/steps.py)
    skip: str = ""  # why it is left out: Buildkite would (skip:, branches:)
    plugins: str = ""  # its own plugins, which run on Buildkite only: it cannot pass here

    @property
    def key(self) -> str:
        """The step's key; a matrix job's is KEY[value] (or KEY[dim=value,...])."""
        return f"{self.step.key}[{self.combination.name}]" if self.combination is not None else self.step.key

    @property
    def soft_fail(self) -> Any:
        combo = self.combination
        return combo.soft_fail if combo is not None and combo.soft_fail is not None else self.step.soft_fail

    def heading(self, n: int, total: int) -> str:
        return f"[{n}/{total}] {self.key} on {self.hardware}"


@frozen
class Unrunnable:
    key: str  # the declared step's key
    step: Step  # its first target, for group and location
    whys: tuple[str, ...]  # one per target
    named: bool  # asked for with --step: not running it fails the run

    @property
    def why(self) -> str:
        return "; ".join(self.whys)


@frozen
class RunPlan:
    machine: Machine
    runs: tuple[Planned, ...]
    unrunnable: tuple[Unrunnable, ...]
    header: tuple[str, ...]  # what was selected, and how


@frozen
class Result:
    planned: Planned
    status: Status
    seconds: float = 0.0
    detail: str = ""  # "exit status 2", "timed out after 30m00s"
    artifacts: tuple[str, ...] = ()  # artifact_paths copied into the log folder

    @property
    def outcome(self) -> str:
        return self.status + (f" ({self.detail})" if self.detail else "")



Candidates = tuple[str, tuple[Step, ...]]  # (declared key, its targets in order)


def by_origin(steps: Sequence[Step]) -> dict[str, list[Step]]:
    """Declared key -> its Steps (one, or one per fan-out target / mirror), in order."""
    out: dict[str, list[Step]] = {}
    for step in steps:
        out.setdefault(step.origin or step.key, []).append(step)
    return out


def buildkite_only(steps: Sequence[Step]) -> str:
    """A header line naming the selected wait, block, input and trigger steps: Buildkite's to run ("" if none)."""
    named = [f"{s.key} ({s.kind})" for s in steps if s.kind != "command"]
    return f"Buildkite's own steps, not run here: {', '.join(named)}" if named else ""


def selected(decl: Declarations, selection: Selection) -> list[Candidates]:
    """Declared command steps with at least one target selected to run, with those targets."""
    chosen = {d.step.key for d in selection.decisions if d.action == "run" and d.step.kind == "command"}
    out: list[Candidates] = []
    for key, steps in by_origin(decl.steps).items():
        targets = tuple(s for s in steps if s.key in chosen)
        if targets:
            out.append((key, targets))
    return out


def named(decl: Declarations, keys: Sequence[str]) -> list[Candidates]:
    """--step KEY: a step's own key, or a fanned-out step's origin key (all its targets); the key as declared
    or as render writes it; `KEY[value]` names one job of a matrix step (steps.pick_jobs keeps it)."""
    groups, by_key = by_origin(decl.steps), decl.by_key()
    rendered = declared_keys(decl.steps)
    out: list[Candidates] = []
    for asked in dict.fromkeys(keys):
        key = asked[: asked.index("[")] if asked.endswith("]") and "[" in asked else asked
        key = key if key in groups or key in by_key else rendered.get(key, key)
        if key in by_key and by_key[key].kind != "command":
            raise UsageError(f"step '{asked}' is a {by_key[key].kind} step: Buildkite's, not run here",
                             fix="name a command step")
        if key in groups:
            out.append((key, tuple(groups[key])))
        elif key in by_key:
            out.append((key, (by_key[key],)))
        else:
            hint = suggest(key, list(by_key) + list(groups))
            fix = hint if hint.startswith("did you mean") else "list keys with 'pipegen select --format json'"
            raise UsageError(f"unknown step key '{asked}'", fix=fix)
    return out


def shortfall(machine: Machine, vendor: str, arch: str | None, gpus: int, family: str, nodes: int = 1) -> str:
    """Why this machine cannot run a job ("" when it can)."""
    if nodes > 1:
        return f"needs {nodes} nodes; pipegen run uses this machine only"
    if gpus == 0:
        return ""  # CPU work runs anywhere
    what = f"needs {gpus} GPU{'s' if gpus != 1 else ''} of family {family} ({arch or vendor})"
    if vendor not in GPU_VENDORS and machine.vendor != vendor:
        return (f"{what}; pipegen run detects only NVIDIA and AMD GPUs (on a machine with {vendor} hardware: "
                f"--hardware {vendor}:{arch or 'ARCH'})")
    if not machine.gpus:
        return f"{what}; this machine has 0 GPUs"
    if machine.vendor != vendor or (arch and arch != machine.arch):
        return f"{what}; this machine has {machine}"
    if machine.gpus < gpus:
        return f"{what}; this machine has {machine.gpus}"
    return ""


def script(commands: Sequence[str], dollars: Dollars) -> str:
    """The commands as CI's shell gets them: escaped as render does (`Dollars`), then uploaded."""
    return "\n".join(uploaded(dollars(c)) for c in commands)


def step_env(step: Step, dollars: Dollars, template_environment: Sequence[str] = (),
             pipeline_env: Any = None) -> tuple[tuple[str, str], ...]:
    """The variables CI sets for the job: the pipeline's `env`, the step's, then its template's `KEY=VALUE`
    entries.

    Both as the agent gets them (render escapes the step's env, not the
    template's, which is written in Buildkite's syntax). Template entries
    win, as docker's `--env` does over the propagated environment; a bare
    `KEY` only passes this machine's value through.
    """
    env = {uploaded(dollars(str(k))): uploaded(dollars(str(v))) for k, v in (pipeline_env or {}).items()}
    env.update((uploaded(dollars(k)), uploaded(dollars(v))) for k, v in step.env)
    pairs = (uploaded(entry).partition("=") for entry in template_environment if "=" in entry)
    env.update((key, value) for key, _, value in pairs)
    if step.parallelism:
        # One local job does the work of all parallel jobs: shard 0 of 1.
        env.setdefault("BUILDKITE_PARALLEL_JOB", "0")
        env.setdefault("BUILDKITE_PARALLEL_JOB_COUNT", "1")
    return tuple(env.items())


def log_name(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", key) + ".log"


def run_minutes(minutes: int | str | None, environ: Mapping[str, str]) -> int | None:
    """A step's timeout here: an upload-time variable (`${TIMEOUT:-30}`) read from this environment as
    Buildkite's upload would; None when it gives no whole number (no timeout)."""
    if not isinstance(minutes, str):
        return minutes

    match = upload_variable(minutes)
    value = upload_value(match, environ) if match else None
    return int(value) if value is not None and value.strip().isdigit() and int(value) > 0 else None


def plan_runs(decl: Declarations, candidates: Sequence[Candidates], machine: Machine, inventory: Inventory, *,
              named: bool, log_dir: str | None, timeout_scale: float, environ: Mapping[str, str],
              header: Sequence[str] = ()) -> RunPlan:
    """`named`: the candidates were asked for with --step (not running one fails the run); `environ`: the
    variables an upload-time timeout reads."""
    log_dir = log_dir or os.path.join(decl.root, DEFAULT_LOG_DIR)
    dollars = Dollars(decl.settings.interpolate)
    runs: list[Planned] = []
    unrunnable: list[Unrunnable] = []
    for key, targets in candidates:
        whys: list[str] = []
        for step in targets:
            try:
                job = place(step, inventory)
            except DeclarationError as exc:
                whys.append(exc.message)
                continue
            why = shortfall(machine, job.vendor, job.arch, job.gpus, job.family.name, job.nodes)
            folder = map_workdir(step.working_dir, decl.settings.docker_workdir)
            if not why and folder is None:
                why = f"working directory {step.working_dir} is outside the repository (map it with docker_workdir)"
            if why:
                whys.append(f"{step.key}: {why}" if len(targets) > 1 else why)
                continue
            if any(run.step.key == step.key for run in runs):
                break  # named twice (`--step qr --step qr-h100`): one run, one log
            deliverable(step, dollars)  # as render refuses it: the agent would run something else
            minutes = run_minutes(step.timeout_in_minutes, environ)
            runs.append(Planned(
                step=step,
                hardware=job.hardware,
                cwd=os.path.normpath(os.path.join(os.path.abspath(decl.root), folder or "")),
                script=script(step.commands, dollars),
                env=step_env(step, dollars, job.template.environment if job.uses_plugin else (),
                             dict(decl.settings.pipeline).get("env")),
                timeout_s=minutes * 60 * timeout_scale if minutes else None,
                log=os.path.normpath(os.path.join(log_dir, log_name(step.key))),
                root=os.path.abspath(decl.root),
            ))
            break
        else:
            unrunnable.append(Unrunnable(key, targets[0], tuple(whys), named))
    return RunPlan(machine, tuple(runs), tuple(unrunnable), tuple(header))
