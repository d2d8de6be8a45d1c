"""`pipegen run --format json` (pure): the plan, and after a real run each job's outcome, as one object.

Its fields are pipegen/json_output.py's RUN schema. The same object for a dry run and a real run: a dry
run's jobs have no `status`, `seconds` or outcome yet (null), and the run's totals are null or empty.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from pipegen.frozen import frozen
from pipegen.hardware.detect import Machine
from pipegen.model import Location
from pipegen.run.local_plan import Planned, Result, RunPlan, Unrunnable

NOT_HERE = "cannot run here"  # the status summary_text counts unrunnable steps under
UNTIMED = ("not run", "skipped")  # no time, as the summary table shows them ("-")


@frozen
class Outcome:
    """What a real run adds to its plan (a dry run has none)."""

    results: tuple[Result, ...]
    seconds: float  # the whole run, wall clock
    exit_code: int
    changed: tuple[str, ...] = ()  # tracked files the steps changed
    junit: str | None = None


def run_json(plan: RunPlan | None, selected: Sequence[str], asked: Sequence[str], notes: Sequence[str],
             outcome: Outcome | None = None) -> dict[str, Any]:
    """`plan` is None when nothing was selected (then `notes` says so); `outcome` None for a dry run."""
    results = outcome.results if outcome else ()
    jobs = [_job(r.planned, r) for r in results] if outcome else [_job(p, None) for p in (plan.runs if plan else ())]
    unrunnable = plan.unrunnable if plan else ()
    counts = Counter([r.status for r in results] + [NOT_HERE] * len(unrunnable)) if outcome else Counter()
    return {
        "dry_run": outcome is None,
        "asked": list(asked),
        "notes": list(notes),
        "selected": list(selected),
        "machine": _machine(plan.machine) if plan else None,
        "jobs": jobs,
        "unrunnable": [_unrunnable(u) for u in unrunnable],
        "counts": dict(sorted(counts.items())),
        "changed_files": list(outcome.changed) if outcome else [],
        "junit": outcome.junit if outcome else None,
        "duration_seconds": round(outcome.seconds, 3) if outcome else None,
        "exit_code": outcome.exit_code if outcome else 0,
    }


def _machine(machine: Machine) -> dict[str, Any]:
    return {"description": str(machine), "vendor": machine.vendor, "arch": machine.arch, "gpus": machine.gpus,
            "name": machine.name, "source": machine.source, "note": machine.note}


def _where(location: Location) -> dict[str, Any]:
    return {"file": location.file, "line": location.line or None}


def _job(planned: Planned, result: Result | None) -> dict[str, Any]:
    step = planned.step
    return {
        "key": planned.key,
        "step": step.origin or step.key,
        "target": step.key,
        "matrix": planned.combination.name if planned.combination is not None else None,
        "label": step.label,
        "group": step.group,
        "declared_at": _where(step.location),
        "hardware": planned.hardware,
        "working_dir": planned.cwd,
        "env": dict(sorted(planned.env)),
        "timeout_seconds": planned.timeout_s,
        "log": planned.log,
        "commands": planned.script.splitlines(),
        "after": [{"key": key, "allow_failure": allowed} for key, allowed in planned.needs],
        "skip": planned.skip,
        "plugins": planned.plugins,
        "status": result.status if result else None,
        "detail": result.detail if result else "",
        "seconds": round(result.seconds, 3) if result and result.status not in UNTIMED else None,
        "artifacts": list(result.artifacts) if result else [],
    }


def _unrunnable(u: Unrunnable) -> dict[str, Any]:
    return {"step": u.key, "reasons": list(u.whys), "asked": u.named, "declared_at": _where(u.step.location)}
