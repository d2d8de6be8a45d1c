"""`pipegen run`: plan the selected steps onto this machine, run them, report.

Planning is pure: each selected declared step (its fan-out targets and
mirrors share an `origin`) runs on the first of its targets this machine
satisfies, or is listed with why it cannot. Running and reporting are
the I/O edges: one `bash -e -c` process per step in a session of its own
(so a timeout or Ctrl-C can stop everything it started), output to a
log file, a summary table and optional JUnit XML.

Steps run on this machine directly, not in CI's container: the docker
working-directory prefix (`docker_workdir`) maps to the repository, the
template's environment entries are kept where CI's plugin would set
them, and its wrappers (plugin, `setup`, `wrap`) are left out. A `$`
reaches the shell as it reaches CI's (see `script`).
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from dataclasses import dataclass
from functools import partial
from typing import Callable, Literal, Mapping, Sequence, TextIO

from pipegen.selection import report
from pipegen.render.command_step import uses_plugin
from pipegen.check.test_refs import map_workdir
from pipegen.hardware.detect import GPU_VENDORS, Machine, machine as this_machine
from pipegen.errors import DeclarationError, UsageError
from pipegen.hardware.placement import Inventory, place
from pipegen.hardware.inventory import load_inventory
from pipegen.run.junit import Case, junit_xml
from pipegen.model import Declarations, Selection, Step
from pipegen.selection.chain import SelectArgs, load_declarations, select
from pipegen.declarations.fields import suggest
from pipegen.render.yaml_writer import Dollars

Status = Literal["passed", "failed", "timed out", "interrupted", "not run"]
DEFAULT_LOG_DIR = ".pipegen/logs"  # under the repository root
FAILED = ("failed", "timed out", "interrupted")
JUNIT_LOG_LINES = 200  # of a failed step's log, with its JUnit failure (whole logs can be huge)


@dataclass(frozen=True)
class RunOptions:
    step_keys: tuple[str, ...] = ()  # run exactly these, whatever changed
    hardware: str | None = None  # --hardware; overrides detection
    dry_run: bool = False
    keep_going: bool = False
    log_dir: str | None = None
    junit: str | None = None
    timeout_scale: float = 1.0  # multiplies timeout_in_minutes (tests use small values)


@dataclass(frozen=True)
class Planned:
    """One step placed on this machine, ready to run."""

    step: Step
    hardware: str  # the target chosen, e.g. "mi355 x2"
    cwd: str
    script: str  # the commands as one bash script
    env: tuple[tuple[str, str], ...]  # set on top of this process's environment
    timeout_s: float | None
    log: str

    def heading(self, n: int, total: int) -> str:
        return f"[{n}/{total}] {self.step.key} on {self.hardware}"


@dataclass(frozen=True)
class Unrunnable:
    key: str  # the declared step's key
    step: Step  # its first target, for group and location
    whys: tuple[str, ...]  # one per target
    named: bool  # asked for with --step: not running it fails the run

    @property
    def why(self) -> str:
        return "; ".join(self.whys)


@dataclass(frozen=True)
class Plan:
    machine: Machine
    runs: tuple[Planned, ...]
    unrunnable: tuple[Unrunnable, ...]
    header: tuple[str, ...]  # what was selected, and how


@dataclass(frozen=True)
class Result:
    planned: Planned
    status: Status
    seconds: float = 0.0
    detail: str = ""  # "exit status 2", "timed out after 30m00s"

    @property
    def outcome(self) -> str:
        return self.status + (f" ({self.detail})" if self.detail else "")


# --------------------------------------------------------------------------- planning (pure)

Candidates = tuple[str, tuple[Step, ...]]  # (declared key, its targets in order)


def by_origin(steps: Sequence[Step]) -> dict[str, list[Step]]:
    """Declared key -> its Steps (one, or one per fan-out target / mirror), in order."""
    out: dict[str, list[Step]] = {}
    for step in steps:
        out.setdefault(step.origin or step.key, []).append(step)
    return out


def selected(decl: Declarations, selection: Selection) -> list[Candidates]:
    """Declared steps with at least one target selected to run, with those targets."""
    chosen = {d.step.key for d in selection.decisions if d.action == "run"}
    out: list[Candidates] = []
    for key, steps in by_origin(decl.steps).items():
        targets = tuple(s for s in steps if s.key in chosen)
        if targets:
            out.append((key, targets))
    return out


def named(decl: Declarations, keys: Sequence[str]) -> list[Candidates]:
    """--step KEY: a step's own key, or a fanned-out step's origin key (all its targets)."""
    groups, by_key = by_origin(decl.steps), decl.by_key()
    out: list[Candidates] = []
    for key in dict.fromkeys(keys):
        if key in groups:
            out.append((key, tuple(groups[key])))
        elif key in by_key:
            out.append((key, (by_key[key],)))
        else:
            hint = suggest(key, list(by_key) + list(groups))
            fix = hint if hint.startswith("did you mean") else "list keys with 'pipegen select --format json'"
            raise UsageError(f"unknown step key '{key}'", fix=fix)
    return out


def shortfall(machine: Machine, vendor: str, arch: str | None, gpus: int, family: str, nodes: int = 1) -> str:
    """Why this machine cannot run a job ("" when it can)."""
    if nodes > 1:
        return f"needs {nodes} nodes; pipegen run uses this machine only"
    if gpus == 0:
        return ""  # CPU work runs anywhere
    what = f"needs {gpus} GPU{'s' if gpus != 1 else ''} of family {family} ({arch or vendor})"
    if vendor not in GPU_VENDORS:
        return f"{what}; pipegen run detects only NVIDIA and AMD GPUs"
    if not machine.gpus:
        return f"{what}; this machine has 0 GPUs"
    if machine.vendor != vendor or (arch and arch != machine.arch):
        return f"{what}; this machine has {machine}"
    if machine.gpus < gpus:
        return f"{what}; this machine has {machine.gpus}"
    return ""


def uploaded(text: str) -> str:
    """Rendered text as the agent gets it after `pipeline upload`: `$$` is Buildkite's escape for `$`.

    (A `$VAR` left for upload-time interpolation is left to the shell here.)
    """
    return text.replace("$$", "$")


def script(commands: Sequence[str], dollars: Dollars) -> str:
    """The commands as CI's shell gets them: escaped as render does (`Dollars`), then uploaded."""
    return "\n".join(uploaded(dollars(c)) for c in commands)


def step_env(step: Step, dollars: Dollars, template_environment: Sequence[str] = ()) -> tuple[tuple[str, str], ...]:
    """The variables CI sets for the job: the step's `env`, then its template's `KEY=VALUE` entries.

    Both as the agent gets them (render escapes the step's env, not the
    template's, which is written in Buildkite's syntax). Template entries
    win, as docker's `--env` does over the propagated environment; a bare
    `KEY` only passes this machine's value through.
    """
    env = {uploaded(dollars(k)): uploaded(dollars(v)) for k, v in step.env}
    env.update(uploaded(entry).split("=", 1) for entry in template_environment if "=" in entry)
    if step.parallelism:
        # One local job does the work of all parallel jobs: shard 0 of 1.
        env.setdefault("BUILDKITE_PARALLEL_JOB", "0")
        env.setdefault("BUILDKITE_PARALLEL_JOB_COUNT", "1")
    return tuple(env.items())


def log_name(key: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", key) + ".log"


def plan(decl: Declarations, candidates: Sequence[Candidates], machine: Machine, inventory: Inventory,
         options: RunOptions, header: Sequence[str] = ()) -> Plan:
    log_dir = options.log_dir or os.path.join(decl.root, DEFAULT_LOG_DIR)
    dollars = Dollars(decl.settings.interpolate)
    was_named = bool(options.step_keys)
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
            minutes = step.timeout_in_minutes
            runs.append(Planned(
                step=step,
                hardware=job.hardware,
                cwd=os.path.normpath(os.path.join(os.path.abspath(decl.root), folder or "")),
                script=script(step.commands, dollars),
                env=step_env(step, dollars, job.template.environment if uses_plugin(step, job) else ()),
                timeout_s=minutes * 60 * options.timeout_scale if minutes else None,
                log=os.path.normpath(os.path.join(log_dir, log_name(step.key))),
            ))
            break
        else:
            unrunnable.append(Unrunnable(key, targets[0], tuple(whys), was_named))
    return Plan(machine, tuple(runs), tuple(unrunnable), tuple(header))


# --------------------------------------------------------------------------- text (pure)


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


def machine_line(machine: Machine) -> str:
    how = machine.source + (f"; {machine.note}" if machine.note else "")
    return f"Machine: {machine} ({how})"


def plan_text(p: Plan) -> str:
    lines = [machine_line(p.machine), *p.header, f"Plan: {len(p.runs)} step(s) to run here", ""]
    for n, run in enumerate(p.runs, 1):
        lines.append(run.heading(n, len(p.runs)))
        lines.append(f"  working dir: {run.cwd}")
        lines += [f"  env: {k}={v}" for k, v in run.env]
        if run.timeout_s is not None:
            lines.append(f"  timeout: {duration(run.timeout_s)}")
        lines.append(f"  log: {run.log}")
        lines.append("  commands:")
        lines += [f"    {line}" for line in run.script.splitlines()]
        lines.append("")
    lines += unrunnable_text(p.unrunnable)
    return "\n".join(lines).rstrip("\n") + "\n"


def unrunnable_text(unrunnable: Sequence[Unrunnable]) -> list[str]:
    if not unrunnable:
        return []
    lines = [f"Cannot run on this machine ({len(unrunnable)}):"]
    for u in unrunnable:
        lines += [f"  {u.key}: {u.whys[0]}"] if len(u.whys) == 1 else [f"  {u.key}:", *(f"    {w}" for w in u.whys)]
    return [*lines, ""]


def summary_text(results: Sequence[Result], unrunnable: Sequence[Unrunnable]) -> str:
    rows = [("step", "hardware", "result", "time")]
    rows += [(r.planned.step.key, r.planned.hardware, r.outcome, duration(r.seconds) if r.status != "not run" else "-")
             for r in results]
    rows += [(u.key, "-", "cannot run here", "-") for u in unrunnable]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[3] for row in rows]
    counts = Counter([r.status for r in results] + ["cannot run here"] * len(unrunnable))
    totals = ", ".join(f"{n} {status}" for status, n in counts.items())
    return "\n".join(["", *lines, "", *unrunnable_text(unrunnable), totals]) + "\n"


def exit_status(results: Sequence[Result], unrunnable: Sequence[Unrunnable]) -> int:
    if any(r.status == "interrupted" for r in results):
        return 130
    if any(r.status in FAILED for r in results) or any(u.named for u in unrunnable):
        return 1
    return 0


def junit_cases(results: Sequence[Result], unrunnable: Sequence[Unrunnable],
                read_log: Callable[[str], str]) -> list[Case]:
    cases = []
    for r in results:
        step = r.planned.step
        outcome = "failure" if r.status in FAILED else "skipped" if r.status == "not run" else "passed"
        output = read_log(r.planned.log) if outcome == "failure" else ""
        cases.append(Case(step.key, step.group or "pipegen", r.seconds, outcome, r.detail, r.status, output,
                          step.location.file))
    for u in unrunnable:
        cases.append(Case(u.key, u.step.group or "pipegen", 0.0, "failure" if u.named else "skipped",
                          f"cannot run on this machine: {u.why}", "no hardware", file=u.step.location.file))
    return cases


# --------------------------------------------------------------------------- the command (I/O)


def run_command(args: SelectArgs, options: RunOptions, environ: Mapping[str, str], out: TextIO) -> int:
    if options.step_keys:
        decl = load_declarations(args)
        candidates = named(decl, options.step_keys)
        header = [f"Steps asked for: {', '.join(options.step_keys)}"]
    else:
        decl, selection = select(args, environ)
        candidates = selected(decl, selection)
        header = [*report.banner(selection), f"Selected: {report.summary(selection)}"]
    if not candidates:
        out.write("\n".join(header) + "\nNothing to run: no step is selected for this change "
                  "(use --step KEY to run one anyway).\n")
        if options.junit:
            write_junit(options.junit, [])
        return 0
    machine = this_machine(options.hardware, environ)
    the_plan = plan(decl, candidates, machine, load_inventory(decl), options, header)
    if options.dry_run:
        out.write(plan_text(the_plan))
        return 0
    from pipegen.run.process import Progress, read_log, run_all

    out.write("\n".join([machine_line(machine), *header]) + "\n")
    progress = Progress.for_stream(out, len(the_plan.runs))
    results = run_all(the_plan.runs, progress, options.keep_going, local_env(environ))
    out.write(summary_text(results, the_plan.unrunnable))
    if options.junit:
        write_junit(options.junit, junit_cases(results, the_plan.unrunnable, partial(read_log, lines=JUNIT_LOG_LINES)))
        out.write(f"JUnit XML: {options.junit}\n")
    return exit_status(results, the_plan.unrunnable)


def local_env(environ: Mapping[str, str]) -> dict[str, str]:
    """This process's environment, with its Python's scripts (pytest, torchrun) first on PATH."""
    env = dict(environ)
    bin_dir = os.path.dirname(sys.executable)
    env["PATH"] = os.pathsep.join(p for p in (bin_dir, env.get("PATH", "")) if p)
    return env


def write_junit(path: str, cases: list[Case]) -> None:
    try:
        with open(path, "wb") as f:
            f.write(junit_xml("pipegen run", cases))
    except OSError as exc:
        raise UsageError(f"cannot write --junit {path}: {exc.strerror}") from None
