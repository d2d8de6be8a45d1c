"""One command step of the page (page.py): what Buildkite runs for a Step on its hardware.

Commands run in the step's `working_dir`, after the family template's setup;
what else a job gets comes from its template, opt-in (banners, a retry when the
agent is lost: vLLM's preset asks for both); a `skip:` reason fits Buildkite's
70 characters.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pipegen.buildkite.limits import SKIP_MAX
from pipegen.buildkite.upload_escape import Dollars, Undeliverable
from pipegen.hardware.build_context import BuildContext
from pipegen.hardware.types import Job, Template
from pipegen.model import Step
from pipegen.render import job_fields
from pipegen.render.buildkite_steps import CommandStep, Depends, written_depends
from pipegen.render.job_commands import job_commands
from pipegen.render.job_fields import escaped

# The Kubernetes device-plugin resource of each vendor's GPUs (other accelerators: the pod spec says).
GPU_RESOURCES = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu", "intel": "gpu.intel.com/i915"}


def skip_text(reason: str, dollars: Dollars) -> str:
    try:
        text = dollars(reason.replace("\n", " ")) or "not selected"
    except Undeliverable:  # pipegen's own words about a path no escaping delivers
        text = "not selected"
    if len(text) > SKIP_MAX:
        text = text[: SKIP_MAX - 3]
        trailing = len(text) - len(text.rstrip("$"))
        if trailing % 2:  # never split a `$$`
            text = text[:-1]
        text += "..."
    return text


def command_step(step: Step, job: Job, key: str, depends: list[Depends], dollars: Dollars, skip: str | None,
                 build: BuildContext | None = None) -> CommandStep:
    """`build`: the build context (hardware.build_context) that may rewrite the commands and set fields;
    each field is resolved in job_fields.py."""
    template = job.template
    lines = job_commands(step, job, dollars, build)
    plugin = _plugin(template, step) if job.uses_plugin else None  # plain.j2 renders no plugin by default
    return CommandStep(
        label=dollars(step.label), key=key,
        depends_on=written_depends(depends, step.depends_on, step.buildkite),
        agents=dict(job.agents),
        commands=job_fields.commands(step, job, lines),
        env=job_fields.env(step, job, lines, dollars, build),
        timeout_in_minutes=job_fields.timeout(step, job, build),
        soft_fail=job_fields.soft_fail(step, build),
        retry=job_fields.retry(step, job),
        parallelism=step.parallelism,
        concurrency=step.concurrency,
        concurrency_group=dollars(step.concurrency_group) if step.concurrency_group else None,
        skip=skip if skip is not None else escaped(step.field("skip"), dollars),
        fields=job_fields.other_fields(step, job, dollars, build),
        # a runner on the agent is the job (a kubernetes pod still runs it: vLLM's native AMD)
        plugin=None if template.kind == "plain" and job_fields.runs_runner(step, job) else plugin,
        plugins=_plugins(escaped(step.field("plugins"), dollars)),
        pod_spec=_pod_spec(template, job) if plugin is not None and template.kind == "kubernetes" else None,
        job=job, step=step,
    )


def _plugin(template: Template, step: Step) -> Template:
    """The family's template, with the agent mounted into a docker container where the step asks."""
    if not (step.mount_buildkite_agent and template.kind == "docker"):
        return template
    options = {**dict(template.options), "mount_buildkite_agent": True}
    return dataclasses.replace(template, options=tuple(options.items()))


def _plugins(plugins: Any) -> list[Any]:
    """A step's own plugins as a list (Buildkite also takes a mapping of name -> options)."""
    if isinstance(plugins, dict):
        return [{name: options} for name, options in plugins.items()]
    return list(plugins or ())


def _gpus(value: Any, gpus: str) -> Any:
    """A deep copy of plain data with `{gpus}` in its strings the job's GPU count (vLLM's native AMD
    pods ask for it as text)."""
    if isinstance(value, str):
        return value.replace("{gpus}", gpus) if "{" in value else value
    if isinstance(value, dict):
        return {k: _gpus(v, gpus) for k, v in value.items()}
    if isinstance(value, list):
        return [_gpus(v, gpus) for v in value]
    return value


def _pod_spec(template: Template, job: Job) -> Any:
    """The family's podSpec with the job's GPU count in the first container's limits."""
    spec = _gpus(template.pod_spec, str(job.gpus))  # this job's own copy
    containers = spec.get("containers") if isinstance(spec, dict) else None
    first = containers[0] if isinstance(containers, list) and containers else None
    if not isinstance(first, dict):
        return spec
    if job.gpus:
        resources = first.setdefault("resources", {})
        limits = resources.setdefault("limits", {}) if isinstance(resources, dict) else None
        if isinstance(limits, dict):
            resource = GPU_RESOURCES.get(job.vendor)
            if resource:
                limits.setdefault(resource, job.gpus)
    if template.image:
        first.setdefault("image", template.image)
    return spec
