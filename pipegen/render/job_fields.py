"""Each field of a command job, resolved in one place from its three sources. Pure.

A job's fields come from the step (as declared), its hardware template's `job:` section
(inventory, hardware/model.JobFields) and the build (hardware/build_context: a variant's
priority and omitted fields, the fields of a declared key). Each function below is the one
place its field is resolved; the precedence, later wins unless it says otherwise:

  env                 the step's, then the template's (values may use {gpus}), then the build's
                      for the step's declared key; a `runner` template adds the commands' variable
                      (a step without its plugin gets neither the template's env nor the runner)
  commands            job_commands.py's lines; a runner's: the runner itself (the lines go in env)
  timeout_in_minutes  the build's for the key; else the step's, or the template's default,
                      capped at the template's maximum
  retry               the step's conditions; then one for a lost agent (the template's
                      lost_agent_retry) unless the step's cover it; then the template's retry
                      put first where not yet covered (or instead, retry_mode: replace)
  fields              the step's own Buildkite fields (if, matrix, priority, ...) win over the
                      template's priority and artifact_paths, which win over the build's priority
  omitted             a field the build omits is written by nobody (timeout, soft_fail, priority, ...)
"""

from __future__ import annotations

from typing import Any

from pipegen.buildkite.upload_escape import Dollars
from pipegen.hardware.build_context import BuildContext
from pipegen.hardware.types import Job
from pipegen.model import Step
from pipegen.render.yaml_writer import Safe

# A step's own Buildkite fields that the template writes in a place of their own (plugins after the
# hardware's, skip where pipegen's skip goes, depends_on in CommandStep.depends_on).
OWN_PLACE = ("plugins", "skip", "depends_on")


def runs_runner(step: Step, job: Job) -> bool:
    """Whether the job runs its template's runner, which finds the commands in an environment variable."""
    return bool(job.template.job.runner) and not step.no_plugin


def commands(step: Step, job: Job, lines: list[str]) -> list[str]:
    runner = job.template.job.runner
    if not runner:
        return lines
    return [runner] if not step.no_plugin else [" && ".join(lines)]  # no plugin: run as they are, on the agent


def env(step: Step, job: Job, lines: list[str], dollars: Dollars, build: BuildContext | None) -> dict[str, str]:
    """`lines`: the job's command lines (job_commands.py), which a runner reads from a variable."""
    fields = job.template.job
    out = {dollars(k): dollars(v) for k, v in step.env}
    if not (fields.runner and step.no_plugin):
        gpus = str(job.gpus)
        out.update((k, v.replace("{gpus}", gpus)) for k, v in fields.env)
    if runs_runner(step, job):
        out[fields.commands_env] = " && ".join(lines)  # type: ignore[index]  # a runner has its variable
    keyed = _keyed(step, build)
    if keyed is not None:
        out.update(keyed[0])
    return out


def timeout(step: Step, job: Job, build: BuildContext | None) -> Any:
    """Minutes, an upload-time variable (Safe: Buildkite fills it in), or None."""
    if _omitted("timeout_in_minutes", build):
        return None
    keyed = _keyed(step, build)
    if keyed is not None and keyed[1] is not None:
        return keyed[1]
    fields = job.template.job
    minutes = step.timeout_in_minutes or fields.default_timeout
    if isinstance(minutes, str):
        return Safe(minutes)
    if minutes and fields.max_timeout:
        return min(minutes, fields.max_timeout)
    return minutes


def soft_fail(step: Step, build: BuildContext | None) -> Any:
    if _omitted("soft_fail", build):
        return None
    return [{"exit_status": s} for s in step.soft_fail] if isinstance(step.soft_fail, tuple) else step.soft_fail


def retry(step: Step, job: Job) -> dict[str, Any]:
    fields = job.template.job
    out = _with_lost_agent(step.retry, fields.lost_agent_retry)
    return out if fields.retry is None else _with_template_retry(out, fields.retry, fields.retry_mode)


def other_fields(step: Step, job: Job, dollars: Dollars, build: BuildContext | None) -> dict[str, Any]:
    """The Buildkite fields written after the others: the step's own, then what its template and build add."""
    fields = job.template.job
    out = {name: escaped(value, dollars) for name, value in step.buildkite if name not in OWN_PLACE}
    if fields.priority is not None:
        out.setdefault("priority", fields.priority)
    if fields.artifact_paths and not (fields.runner and step.no_plugin):
        out.setdefault("artifact_paths", list(fields.artifact_paths))
    if build is not None:
        if build.priority is not None:
            out.setdefault("priority", build.priority)
        for name in build.omit:
            out.pop(name, None)
    return out


def escaped(value: Any, dollars: Dollars) -> Any:
    """A Buildkite field as uploaded text must be: every string (and mapping key) through `dollars`."""
    if isinstance(value, str):
        return dollars(value)
    if isinstance(value, dict):
        return {escaped(k, dollars): escaped(v, dollars) for k, v in value.items()}
    if isinstance(value, list):
        return [escaped(v, dollars) for v in value]
    return value


def _keyed(step: Step, build: BuildContext | None) -> tuple[dict[str, str], int | None] | None:
    """The build's env and timeout for the step's declared key (a key pipegen derived has none)."""
    if build is None or step.derived_key:
        return None
    return build.keyed.get(step.key)


def _omitted(name: str, build: BuildContext | None) -> bool:
    return build is not None and name in build.omit


def _with_lost_agent(retry: Any, lost_agent: int = 0) -> dict[str, Any]:
    """The step's retry conditions; with `lost_agent` (a template's lost_agent_retry), one more automatic
    retry with that limit when the agent is lost (exit -1), unless the step's own conditions cover it."""
    out = dict(retry) if isinstance(retry, dict) else {}
    if not lost_agent:
        return out
    condition = {"exit_status": -1, "limit": lost_agent}
    automatic = out.get("automatic")
    if automatic is None:
        out["automatic"] = [condition]
    elif isinstance(automatic, (dict, list)):
        items = [automatic] if isinstance(automatic, dict) else list(automatic)
        if not any(_covers_lost_agent(item) for item in items):
            items.append(condition)
        out["automatic"] = items
    return out  # automatic: true/false is the step's own choice


def _covers_lost_agent(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    status = item.get("exit_status")
    return status in (-1, "*") or (isinstance(status, list) and -1 in status)


def _with_template_retry(current: dict[str, Any], template: dict[str, Any], mode: str) -> dict[str, Any]:
    """The template's retry instead of the step's, or its conditions put first where not yet covered."""
    if mode == "replace":
        return template
    conditions = template.get("automatic") or []
    automatic = current.get("automatic", [])
    if isinstance(automatic, dict):
        automatic = [automatic]
    if not isinstance(automatic, list):
        return current  # true/false: the step's own choice
    missing = [c for c in conditions if not any(_same(c, own) for own in automatic)]
    return {**current, "automatic": missing + automatic} if missing + automatic else current


def _same(a: Any, b: Any) -> bool:
    """Two retry conditions for the same failure (exit status or signal reason)."""
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return False
    keys = ("exit_status", "signal_reason")
    return any(k in a and a.get(k) == b.get(k) for k in keys)
