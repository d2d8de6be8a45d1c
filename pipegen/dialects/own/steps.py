"""One steps file of pipegen's own format -> Steps.

Buildkite's step fields beside pipegen's (declarations/buildkite_step.py), a file's `defaults:`,
a group written with fields of its own, wait/block/input/trigger items, and a fan-out over hardware
families (`hardware:`), each family a Step of its own.
"""

from __future__ import annotations

from typing import Any

from pipegen.buildkite.keys import valid_key
from pipegen.declarations import buildkite_step as bk
from pipegen.declarations.field import Field
from pipegen.declarations.fields import (
    Checker,
    anything,
    as_written,
    check_fields,
    require_mapping,
    step_fields,
    string_list,
)
from pipegen.declarations.other_steps import kind_of, other_step
from pipegen.declarations.steps_file import (
    MIRROR_FIELDS,
    STEP_FIELDS,
    common_fields,
    derive_key,
    described,
    each_step,
    mirror_step,
    steps_list,
)
from pipegen.declarations.yaml_values import LocDict
from pipegen.errors import DeclarationError
from pipegen.model import Group, Location, Step

OWN_WRITTEN = step_fields("own")  # model.Step's fields of this format alone (run_all_exempt, derive, ...)
# and a fan-out over hardware families
STEP_OWN_FIELDS: dict[str, Checker] = {**STEP_FIELDS, **described(OWN_WRITTEN), "hardware": Field(
    string_list, "Hardware targets, FAMILY or FAMILY:GPUS: one job per target (keys <key>-<family>). Not with "
    "device, num_devices, no_gpu or mirror.", example=["cpu", "h100:2", "mi355:8"],
    words="FAMILY or FAMILY:GPUS, or a list of them")}
# defaults: fields every step inherits; the group may carry its own fields, depends_on take every form
FILE_FIELDS: dict[str, Checker] = {
    "group": Field(anything, "The group of the file's steps: a name, or Buildkite's group-step fields without "
                   "steps (`{group: NAME, key, depends_on, if, notify, ...}`; one file per group holds them).",
                   example="Unit tests", words="string, or a mapping of Buildkite's group fields"),
    "depends_on": Field(anything, "Keys the file's steps wait for, where a step names none of its own.",
                        example=["build-image"], words="key, list of keys or of {step: KEY, allow_failure: true}"),
    "steps": Field(anything, "The steps: command steps, and Buildkite's wait, block, input and trigger steps.",
                   example=[{"label": "Unit tests", "commands": ["pytest tests/unit"]}],
                   words="list of steps (required)"),
    "defaults": Field(anything, "Step fields every step of the file inherits where it does not set them (not "
                      "key); env and agents merge, the step's values winning.", example={"timeout_in_minutes": 30},
                      words="mapping of step fields"),
}


def load_steps_file(data: Any, relpath: str, groups: list[Group]) -> list[Step]:
    """Expand one parsed steps file into Steps (a group with fields of its own joins `groups`)."""
    top, steps = steps_list(data, relpath)
    head = check_fields(top, FILE_FIELDS, "steps-file")
    defaults = bk.check_defaults(top.get("defaults"), top.loc("defaults"))
    group, spec = bk.group_fields(head.get("group", ""), top.loc("group"))
    if spec is not None:
        groups.append(spec)
    file_depends: tuple[str, ...] = ()
    file_allowed: tuple[str, ...] = ()
    if "depends_on" in head:
        file_depends, file_allowed = bk.depends_on(head["depends_on"], top.loc("depends_on"),
                                                   "the steps file's depends_on")

    def read(raw: Any, where: Location, index: int) -> list[Step]:
        kind = kind_of(raw)
        if kind is not None:
            return [other_step(raw, where, kind, group, (file_depends, file_allowed), relpath, index)]
        return _command_step(raw, where, relpath, group, defaults, (file_depends, file_allowed))

    return each_step(steps, read)


def _command_step(raw: Any, where: Location, relpath: str, group: str, defaults: Any,
                  file_depends: tuple[tuple[str, ...], tuple[str, ...]]) -> list[Step]:
    bk.command_step_only(raw, where)
    item = bk.with_defaults(defaults, require_mapping(raw, where, "a step"))
    fields, theirs = bk.split(item, STEP_OWN_FIELDS)
    extra = bk.read(theirs, item)
    if "agent_tags" in extra:  # Buildkite's agents and vLLM's agent_tags are both extra tags
        extra["agent_tags"] = fields.get("agent_tags", ()) + extra["agent_tags"]
    fields.update(extra)
    if "label" not in fields:
        raise DeclarationError("step has no 'label'", item.loc(), "add 'label: <what this step tests>'")
    depends_on = fields.get("depends_on", ())
    if not depends_on:
        depends_on, fields["allow_failure_on"] = file_depends
    if not depends_on and "depends_on" in item:  # `[]` or `~`: Buildkite's "no implicit wait"
        fields["buildkite"] = (*fields.get("buildkite", ()), ("depends_on", []))
    deps = (*fields.get("source_file_dependencies", ()), relpath)
    common = {**common_fields(fields, item, where, tuple(depends_on), deps, fields.get("working_dir")),
              **as_written(fields, OWN_WRITTEN)}
    # A key Buildkite accepts as it is, so a label such as ':memo: Docs' never gets a key ('-memo--docs')
    # that the user did not write and check refuses.
    key = fields.get("key") or valid_key(derive_key(fields["label"]))
    group = fields.get("group", group)
    if fields.get("hardware") is not None:
        return _fan_out(fields["hardware"], fields, item, key, group, common)
    steps = [Step(key=key, group=group, device=fields.get("device"), **common)]
    if fields.get("mirror"):
        steps.extend(_mirrors(fields["mirror"], item, key, common))
    return steps


def _fan_out(hardware: tuple[str, ...], fields: dict[str, Any], item: LocDict, key: str, group: str,
             common: dict[str, Any]) -> list[Step]:
    where = item.loc("hardware")
    for clash in ("device", "num_devices", "no_gpu", "mirror"):
        if clash in fields:
            raise DeclarationError(f"'hardware' and '{clash}' cannot be combined", item.loc(clash),
                                   "list every target under 'hardware' as FAMILY or FAMILY:GPUS")
    if not hardware:
        raise DeclarationError("'hardware' is empty", where, "list at least one FAMILY or FAMILY:GPUS")
    targets: list[tuple[str, int | None]] = []
    for text in hardware:
        name, _, gpus = text.partition(":")
        if not name or (gpus and not gpus.isdigit()) or gpus == "0":
            raise DeclarationError(f"hardware target {text!r} is not FAMILY or FAMILY:GPUS", where,
                                   "write e.g. 'cpu', 'h100:2' or 'mi355:8'")
        targets.append((name, int(gpus) if gpus else None))
    if len(set(targets)) != len(targets):
        raise DeclarationError("a hardware target is listed twice", where, "remove the duplicate")
    families = [f for f, _ in targets]
    if len(targets) == 1:
        family, count = targets[0]
        return [Step(key=key, group=group, device=family, **{**common, "num_devices": count})]
    out = []
    for family, count in targets:
        suffix = family if families.count(family) == 1 else f"{family}-x{count or 1}"
        label = f"{common['label']} ({family}" + (f" x{count})" if count else ")")
        out.append(Step(key=f"{key}-{suffix}", group=group, device=family, origin=key,
                        **{**common, "label": label, "num_devices": count}))
    return out


def _mirrors(mirror: Any, item: LocDict, key: str, common: dict[str, Any]) -> list[Step]:
    for name in mirror:
        if name != "amd":
            raise DeclarationError(f"unknown mirror '{name}'", mirror.loc(name), "the only mirror is 'amd'")
    if "amd" not in mirror:
        return []
    amd = require_mapping(mirror["amd"], item.loc("mirror"), "mirror.amd")
    fields = check_fields(amd, MIRROR_FIELDS, "mirror.amd")
    return [mirror_step(fields, amd, key, common, tuple(fields.get("depends_on", common["depends_on"])), None)]
