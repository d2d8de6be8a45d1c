"""Buildkite's limits on what one pipeline upload may hold."""

from __future__ import annotations

from typing import Any

from pipegen.buildkite.matrix import size

JOB_LIMIT = 500  # buildkite-agent pipeline upload refuses more jobs in one upload
SKIP_MAX = 70  # a `skip` reason is at most 70 characters


def count_jobs(steps: Any) -> int:
    """Jobs as Buildkite counts them: a group counts itself and its steps; a command step its parallel jobs
    times its matrix combinations."""
    total = 0
    for step in steps or ():
        if isinstance(step, dict) and "group" in step and isinstance(step.get("steps"), list):
            total += 1 + count_jobs(step["steps"])
        elif isinstance(step, dict):
            total += command_jobs(step.get("parallelism"), step.get("matrix"))
        else:
            total += 1
    return total


def command_jobs(parallelism: Any, matrix: Any = None) -> int:
    """The jobs one command step creates: its parallel jobs, times its matrix combinations."""
    jobs = parallelism if isinstance(parallelism, int) and parallelism > 1 else 1
    if matrix is not None:
        jobs *= size(matrix)
    return jobs
