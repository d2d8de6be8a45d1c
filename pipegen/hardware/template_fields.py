"""The parts of an inventory template that shape its jobs: `setup` and `job:` (see model.JobFields)."""

from __future__ import annotations

from typing import Any

from pipegen.declarations.field import Field
from pipegen.declarations.fields import (
    Checker,
    anything,
    boolean,
    check_fields,
    choice,
    env_map,
    mapping,
    positive_int,
    require_mapping,
    string,
    string_list,
)
from pipegen.errors import DeclarationError
from pipegen.hardware.types import JobFields, SetupCommand
from pipegen.model import Location

JOB_FIELDS: dict[str, Checker] = {
    "env": Field(env_map, "Variables of every job it wraps (`{gpus}`: the job's GPU count).",
                 example={"NUM_GPUS": "{gpus}"}),
    "retry": Field(mapping, "Retry conditions put before the step's own.",
                   example={"automatic": [{"exit_status": -1, "limit": 1}]}),
    "retry_mode": Field(choice("add", "replace"), "replace: its retry replaces the step's.", default="add",
                        example="replace"),
    "priority": Field(anything, "Buildkite's job priority.", example=1, words="whole number"),
    "artifact_paths": Field(string_list, "Artifacts every job uploads.", example=["logs/*.xml"]),
    "default_timeout": Field(positive_int, "Minutes of a job whose step sets no timeout.", example=60),
    "max_timeout": Field(positive_int, "The most minutes a job may take (a longer timeout is cut to it).",
                         example=180),
    "runner": Field(string, "A command the job runs instead, finding the step's commands in commands_env.",
                    example="bash .buildkite/run-amd-test.sh"),
    "commands_env": Field(string, "The variable that holds the commands for runner (joined by ' && ').",
                          example="VLLM_TEST_COMMANDS"),
    "block_waits": Field(boolean, "A block step waits for the job's dependencies.", default=False, example=True),
    "banners": Field(boolean, "An `echo '+++ ...'` log section before each command.", default=False,
                     example=True),
    "lost_agent_retry": Field(positive_int, "One more automatic retry, with this limit, when the agent is lost "
                              "(exit -1).", example=1),
}


def setup_commands(raw: Any, where: Location) -> tuple[SetupCommand, ...]:
    """Setup commands: strings, or {run: COMMAND, min_gpus: N} for jobs with at least N GPUs."""
    out = []
    for index, item in enumerate(raw or ()):
        at = raw.loc(index) if hasattr(raw, "loc") else where
        if isinstance(item, dict):
            fields = check_fields(require_mapping(item, at, "a setup command"),
                                  {"run": string, "min_gpus": positive_int}, "setup command")
            if "run" not in fields:
                raise DeclarationError("a setup command needs 'run'", at, "write '{run: COMMAND, min_gpus: 2}'")
            out.append(SetupCommand(fields["run"], fields.get("min_gpus", 0)))
        else:
            out.append(SetupCommand(string(item, at)))
    return tuple(out)


def job_fields(raw: Any, where: Location, name: str) -> JobFields:
    if raw is None:
        return JobFields()
    fields = check_fields(require_mapping(raw, where, f"'job' of template '{name}'"), JOB_FIELDS, "template job")
    if ("runner" in fields) != ("commands_env" in fields):
        raise DeclarationError(f"'job' of template '{name}' needs 'runner' and 'commands_env' together", where,
                               "add the missing one")
    return JobFields(
        env=fields.get("env", ()), retry=plain(fields.get("retry")), retry_mode=fields.get("retry_mode", "add"),
        priority=fields.get("priority"), artifact_paths=fields.get("artifact_paths", ()),
        default_timeout=fields.get("default_timeout"), max_timeout=fields.get("max_timeout"),
        runner=fields.get("runner"), commands_env=fields.get("commands_env"),
        block_waits=fields.get("block_waits", False), banners=fields.get("banners", False),
        lost_agent_retry=fields.get("lost_agent_retry", 0),
    )


def plain(value: Any) -> Any:
    """LocDict/LocList -> dict/list (plain data for templates): new dicts and lists all the way down, so
    it is also a deep copy of data that is plain already."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value
