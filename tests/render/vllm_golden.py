"""Job-by-job comparison of two Buildkite pipelines: vLLM's generator's and pipegen's.

`jobs(data)` flattens a parsed pipeline into {key: job}, each job a flat dict
of the fields that matter to Buildkite, with the wrappers taken off so that
the same work compares equal however it is packaged:
  - the docker plugin -> plugin name, image, environment, volumes, options;
  - the kubernetes plugin -> image and the podSpec (or podSpecPatch) without it;
  - vLLM's AMD runner (`run-amd-test.sh` with VLLM_TEST_COMMANDS, or with the
    commands as one quoted argument) -> the commands it runs;
  - vLLM's tracing helper (main builds) -> the command inside, `tracing` counted.
Defaults Buildkite applies anyway are filled in (priority 0, soft_fail false,
no depends_on) and depends_on is compared as a set (Buildkite ignores its
order), so only real differences remain. `diff(a, b)` lists them.
"""

from __future__ import annotations

import copy
import shlex
from typing import Any

AMD_RUNNER = "bash .buildkite/scripts/hardware_ci/run-amd-test.sh"
AMD_COMMANDS_ENV = "VLLM_TEST_COMMANDS"
TRACING_SETUP = "CI_INFRA_OTEL_READY=0; export CI_INFRA_OTEL_READY;"
TRACING_START = 'if [ "$${CI_INFRA_OTEL_READY:-0}" = "1" ]'
FIELDS = ("present", "action", "label", "group", "agents", "commands", "runner", "tracing", "plugin", "image",
          "options", "environment", "volumes", "pod", "env", "timeout_in_minutes", "retry", "soft_fail",
          "parallelism", "priority", "depends_on", "artifact_paths", "concurrency", "concurrency_group", "skip")


def jobs(data: dict) -> dict[str, dict]:
    out: dict[str, dict] = {}
    data = copy.deepcopy(data)  # jobs share nothing with the parsed pipeline
    for entry in data.get("steps") or []:
        group = entry.get("group") if "group" in entry else None
        for step in entry["steps"] if "group" in entry else [entry]:
            job = _block(step, group) if "block" in step else _command(step, group)
            out[step["key"]] = job
    for job in out.values():  # runs or waits for a person
        if job["type"] == "command":
            job["action"] = "block" if any(out.get(d, {}).get("type") == "block" for d in job["depends_on"]) else "run"
    return out


def _block(step: dict, group: str | None) -> dict:
    return {"type": "block", "label": step["block"], "group": group,
            "depends_on": sorted(_list(step.get("depends_on")))}


def _list(value: Any) -> list:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _command(step: dict, group: str | None) -> dict:
    env = dict(step.get("env") or {})
    commands = list(step.get("commands") or ([step["command"]] if "command" in step else []))
    job: dict[str, Any] = {
        "type": "command", "label": step.get("label"), "group": group, "agents": step.get("agents") or {},
        "env": env, "timeout_in_minutes": step.get("timeout_in_minutes"), "retry": step.get("retry"),
        "soft_fail": step.get("soft_fail", False), "parallelism": step.get("parallelism"),
        "priority": step.get("priority", 0), "depends_on": sorted(_list(step.get("depends_on"))),
        "artifact_paths": _list(step.get("artifact_paths")), "concurrency": step.get("concurrency"),
        "concurrency_group": step.get("concurrency_group"), "skip": step.get("skip"),
        "runner": None, "plugin": None, "image": None, "options": {}, "environment": [], "volumes": [], "pod": None,
    }
    if commands == [AMD_RUNNER] and AMD_COMMANDS_ENV in env:
        job["runner"] = AMD_RUNNER
        commands = env.pop(AMD_COMMANDS_ENV).split(" && ")
    elif len(commands) == 1 and commands[0].startswith(AMD_RUNNER + " "):
        job["runner"] = AMD_RUNNER
        commands = " ".join(shlex.split(commands[0])[2:]).split(" && ")
    job["commands"], job["tracing"] = _untraced(commands)
    for plugin in step.get("plugins") or []:
        for name, options in plugin.items():
            _plugin(job, name, copy.deepcopy(options) or {})
    return job


def _untraced(commands: list[str]) -> tuple[list[str], int]:
    """The commands without vLLM's tracing setup and wrapper; how many were wrapped."""
    out, traced = [], 0
    for command in commands:
        if command.startswith(TRACING_SETUP):
            traced += 1
            continue
        if command.startswith(TRACING_START):
            lines = command.split("\n")
            out.append("\n".join(lines[1:-3]))
            traced += 1
            continue
        out.append(command)
    return out, traced


def _plugin(job: dict, name: str, options: dict) -> None:
    job["plugin"] = name
    if name == "kubernetes":
        spec_name = "podSpec" if "podSpec" in options else "podSpecPatch"
        spec = options.pop(spec_name, {}) or {}
        containers = spec.get("containers") or [{}]
        job["image"] = containers[0].pop("image", None)
        job["pod"] = {spec_name: spec, **options}
        return
    job["image"] = options.pop("image", None)
    job["environment"] = options.pop("environment", [])
    job["volumes"] = options.pop("volumes", [])
    job["options"] = options


def diff(expected: dict[str, dict], actual: dict[str, dict]) -> list[tuple[str, str, Any, Any]]:
    """(key, field, expected value, actual value) for every difference, sorted by key."""
    out = []
    for key in sorted(set(expected) | set(actual)):
        a, b = expected.get(key), actual.get(key)
        if a is None or b is None:
            out.append((key, "present", a is not None, b is not None))
            continue
        for field in FIELDS[1:]:
            if a.get(field) != b.get(field):
                out.append((key, field, a.get(field), b.get(field)))
    return out
