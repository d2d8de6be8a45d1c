"""`pipegen run`, text (pure): the plan, the summary table, the exit status and the JUnit cases."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from pipegen.errors import EXIT_FINDINGS, EXIT_INTERRUPTED, EXIT_OK
from pipegen.hardware.detect import Machine
from pipegen.run.junit import Case, Outcome
from pipegen.run.local_plan import FAILED, Result, RunPlan, Unrunnable


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


def machine_line(machine: Machine) -> str:
    how = machine.source + (f"; {machine.note}" if machine.note else "")
    return f"Machine: {machine} ({how})"


def plan_text(p: RunPlan) -> str:
    lines = [machine_line(p.machine), *p.header, f"Plan: {len(p.runs)} step(s) to run here", ""]
    for n, run in enumerate(p.runs, 1):
        lines.append(run.heading(n, len(p.runs)))
        if run.skip:
            lines.append(f"  left out: {run.skip}")
        if run.plugins:
            lines.append(f"  not run here: its plugins ({run.plugins}); the step cannot pass here")
        if run.needs:
            needs = (job + (" (may fail)" if allowed else "") for job, allowed in run.needs)
            lines.append("  after: " + ", ".join(needs))
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


def summary_text(results: Sequence[Result], unrunnable: Sequence[Unrunnable], changed: Sequence[str] = ()) -> str:
    """The table, what could not run, artifacts, the tracked files the steps changed, the totals."""
    rows = [("step", "hardware", "result", "time")]
    rows += [(r.planned.key, r.planned.hardware, r.outcome,
              duration(r.seconds) if r.status not in ("not run", "skipped") else "-") for r in results]
    rows += [(u.key, "-", "cannot run here", "-") for u in unrunnable]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    # The last column goes unpadded: zip stops at the widths of the others.
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[3] for row in rows]
    counts = Counter([r.status for r in results] + ["cannot run here"] * len(unrunnable))
    totals = ", ".join(f"{n} {status}" for status, n in counts.items())
    artifacts = [f"  {r.planned.key}: {path}" for r in results for path in r.artifacts]
    artifacts = [f"Artifacts ({len(artifacts)}):", *artifacts, ""] if artifacts else []
    edited = [f"Tracked files the steps changed ({len(changed)}; 'git diff' shows how):", *(f"  {p}" for p in changed),
              ""] if changed else []
    incomplete = ["Incomplete: plugins run on Buildkite only, so these steps did not do all their work here; "
                  "the exit status is 1", ""] if counts["incomplete"] else []
    return "\n".join(["", *lines, "", *unrunnable_text(unrunnable), *artifacts, *edited, *incomplete, totals]) + "\n"


def exit_status(results: Sequence[Result], unrunnable: Sequence[Unrunnable]) -> int:
    if any(r.status == "interrupted" for r in results):
        return EXIT_INTERRUPTED
    if any(r.status in FAILED or r.status == "incomplete" for r in results) or any(u.named for u in unrunnable):
        return EXIT_FINDINGS
    return EXIT_OK


def junit_cases(results: Sequence[Result], unrunnable: Sequence[Unrunnable],
                read_log: Callable[[str], str]) -> list[Case]:
    cases = []
    for r in results:
        step = r.planned.step
        outcome: Outcome = "failure" if r.status in FAILED else "passed" if r.status == "passed" else "skipped"
        output = read_log(r.planned.log) if outcome == "failure" else ""
        message = f"{r.status}: {r.detail}" if outcome == "skipped" and r.detail else r.detail
        cases.append(Case(r.planned.key, step.group or "pipegen", r.seconds, outcome, message, r.status, output,
                          step.location.file))
    for u in unrunnable:
        cases.append(Case(u.key, u.step.group or "pipegen", 0.0, "failure" if u.named else "skipped",
                          f"cannot run on this machine: {u.why}", "no hardware", file=u.step.location.file))
    return cases
