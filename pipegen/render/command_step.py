"""One command step of the plan: what Buildkite runs for a Step on its hardware.

Commands run in the step's `working_dir`, after the family template's setup;
what else a job gets comes from its template, opt-in (banners, a retry when the
agent is lost: vLLM's preset asks for both); a `skip:` reason fits Buildkite's
70 characters.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pipegen.buildkite.dollars import Dollars, Undeliverable
from pipegen.buildkite.limits import SKIP_MAX
from pipegen.hardware.build_context import BuildContext
from pipegen.hardware.model import Job, Template
from pipegen.model import Step
from pipegen.render.job_commands import job_commands, with_template_fields

# The Kubernetes device-plugin resource of each vendor's GPUs (other accelerators: the pod spec says).
GPU_RESOURCES = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu", "intel": "gpu.intel.com/i915"}
# A step's own Buildkite fields that the template writes in a place of their own (plugins after the
# hardware's, skip where pipegen's skip goes, a declared empty depends_on as no_implicit).
OWN_PLACE = ("plugins", "skip", "depends_on")


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


def _retry(retry: Any, lost_agent: int = 0) -> dict[str, Any]:
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


def command_item(step: Step, job: Job, key: str, depends: list[str], dollars: Dollars, skip: str | None,
                 build: BuildContext | None = None) -> dict[str, Any]:
    """`build`: the build context (hardware.build_context) that may rewrite the commands."""
    template = job.template
    lines = job_commands(step, job, dollars, build)
    plugin = _plugin(template, step) if job.uses_plugin else None  # plain.j2 renders no plugin by default
    item = {
        "type": "command",
        "label": dollars(step.label),
        "key": key,
        "depends_on": depends,
        "no_implicit": step.field("depends_on") is not None,  # declared `depends_on: []`: written so
        "agents": dict(job.agents),
        "commands": lines,
        "env": {dollars(k): dollars(v) for k, v in step.env},
        "timeout_in_minutes": step.timeout_in_minutes,
        "soft_fail": [{"exit_status": s} for s in step.soft_fail] if isinstance(step.soft_fail, tuple)
        else step.soft_fail,
        "retry": _retry(step.retry, template.job.lost_agent_retry),
        "parallelism": step.parallelism,
        "concurrency": step.concurrency,
        "concurrency_group": dollars(step.concurrency_group) if step.concurrency_group else None,
        "skip": skip if skip is not None else escaped(step.field("skip"), dollars),
        "fields": {name: escaped(value, dollars) for name, value in step.buildkite if name not in OWN_PLACE},
        "plugin": plugin,
        "plugins": _plugins(escaped(step.field("plugins"), dollars)),
        "pod_spec": _pod_spec(template, job) if plugin is not None and template.kind == "kubernetes" else None,
        "job": job,
        "step": step,
    }
    return _with_build(with_template_fields(item, step, job), step, build)


def _with_build(item: dict[str, Any], step: Step, build: BuildContext | None) -> dict[str, Any]:
    """What the build sets on its jobs: the fields of a step's declared key, a priority where none is
    set, fields dropped."""
    if build is None:
        return item
    if step.key in build.keyed and not step.derived_key:
        env, timeout = build.keyed[step.key]
        item["env"] = {**item["env"], **env}
        item["timeout_in_minutes"] = timeout if timeout is not None else item["timeout_in_minutes"]
    if build.priority is not None:
        item["fields"].setdefault("priority", build.priority)
    for name in build.omit:
        item["fields"].pop(name, None)
        if name in item:
            item[name] = None
    return item


def _plugin(template: Template, step: Step) -> Template:
    """The family's template, with the agent mounted into a docker container where the step asks."""
    if not (step.mount_buildkite_agent and template.kind == "docker"):
        return template
    options = {**dict(template.options), "mount_buildkite_agent": True}
    return dataclasses.replace(template, options=tuple(options.items()))


def escaped(value: Any, dollars: Dollars) -> Any:
    """A Buildkite field as uploaded text must be: every string (and mapping key) through `dollars`."""
    if isinstance(value, str):
        return dollars(value)
    if isinstance(value, dict):
        return {escaped(k, dollars): escaped(v, dollars) for k, v in value.items()}
    if isinstance(value, list):
        return [escaped(v, dollars) for v in value]
    return value


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
