"""One steps file -> Steps (current vLLM layout and pipegen's own format).

A steps file has a file-level `group`, an optional file-level `depends_on`
and `steps:`. Each declared step expands here into one Step per hardware
target: its AMD mirror (`mirror.amd`) and each family of a `hardware:`
fan-out become Steps of their own, so every later stage sees one unit
with one decision and one job.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from pipegen.buildkite.keys import valid_key
from pipegen.declarations import buildkite_step as bk
from pipegen.declarations.fields import (
    Checker,
    anything,
    as_written,
    check_fields,
    mapping,
    positive_int,
    require_mapping,
    step_fields,
    string,
    string_list,
)
from pipegen.declarations.other_steps import kind_of, other_step
from pipegen.declarations.presets import (
    AMD_GPU_DEVICES,
    AMD_GROUP,
    AMD_IMAGE_BUILD,
    VLLM_MOUNT_AGENT,
    VLLM_UNGROUPED,
    derive_key,
)
from pipegen.declarations.yamlio import LocDict, LocList
from pipegen.errors import DeclarationError, raise_all
from pipegen.model import DeclarationWarning, Group, Location, Step

WRITTEN = step_fields("steps")  # declared on model.Step
STEP_FIELDS: dict[str, Checker] = {**{key: w.check for key, w in WRITTEN.items()}, "mirror": mapping}
# pipegen's own format adds a fan-out over hardware families.
PIPEGEN_STEP_FIELDS = {**STEP_FIELDS, "hardware": string_list}

# What `mirror.amd` may change of its step (vLLM's mirrors also take num_gpus).
MIRROR_FIELDS: dict[str, Checker] = {
    **{key: STEP_FIELDS[key] for key in (
        "device", "depends_on", "timeout_in_minutes", "soft_fail", "commands", "env", "source_file_dependencies",
        "optional", "label", "dind", "no_gpu", "num_devices", "num_nodes", "working_dir", "no_plugin", "concurrency",
        "concurrency_group", "agent_tags")},
    "num_gpus": positive_int,
}

# Fields vLLM's generator drops without a word, and what was meant.
VLLM_IGNORED = {"num_gpus": "num_devices", "gpu": "device", "torch_nightly": "", "autorun_on_main": "",
                "fast_check": ""}

FILE_FIELDS: dict[str, Checker] = {"group": string, "depends_on": string_list, "steps": anything}
# defaults: fields every step inherits; the group may carry its own fields, depends_on take every form
PIPEGEN_FILE_FIELDS = {**FILE_FIELDS, "defaults": anything, "group": anything, "depends_on": anything}


def load_steps_file(
    data: Any,
    relpath: str,
    *,
    vllm: bool,
    warnings: list[DeclarationWarning],
    default_working_dir: str | None = None,
    groups: list[Group] | None = None,
) -> list[Step]:
    """Expand one parsed steps file into Steps (a group with fields of its own joins `groups`)."""
    if data is None:  # a file just created in a steps folder
        raise DeclarationError("the steps file is empty", Location(relpath, 1, 1),
                               "write 'group: <name>' and 'steps:' with '- label: ...' items, or delete the file")
    top = require_mapping(data, Location(relpath, 1, 1), "a steps file")
    head = check_fields(top, FILE_FIELDS if vllm else PIPEGEN_FILE_FIELDS, "steps-file", lenient=vllm,
                          warnings=warnings)
    defaults = None if vllm else bk.check_defaults(top.get("defaults"), top.loc("defaults"))
    steps = top.get("steps")
    if not isinstance(steps, LocList):
        raise DeclarationError("a steps file needs a 'steps:' list", top.loc("steps") if "steps" in top else top.loc(),
                               "add 'steps:' followed by '- label: ...' items")
    group = head.get("group", "").strip() if vllm else ""
    file_allowed: tuple[str, ...] = ()
    file_depends = head.get("depends_on", ())
    if not vllm:
        group, spec = bk.group_fields(head.get("group", ""), top.loc("group"))
        if spec is not None and groups is not None:
            groups.append(spec)
        if "depends_on" in head:
            file_depends, file_allowed = bk.depends_on(head["depends_on"], top.loc("depends_on"),
                                                       "the steps file's depends_on")
    out: list[Step] = []
    errors: list[DeclarationError] = []
    for index, raw in enumerate(steps):
        where = steps.loc(index)
        try:
            kind = None if vllm else kind_of(raw)
            if kind is not None:
                out.append(other_step(raw, where, kind, group, (tuple(file_depends), file_allowed), relpath, index))
                continue
            item, fields = _step_fields(raw, where, vllm, defaults, warnings)
            deps = list(fields.get("source_file_dependencies", ()))
            depends_on = fields.get("depends_on", ())
            working_dir = fields.get("working_dir")
            if vllm:
                # vLLM: a file-level depends_on fills steps without their own, defaults
                # the working dir, and makes the steps file itself a dependency.
                if file_depends:
                    depends_on = depends_on or file_depends
                    working_dir = working_dir or default_working_dir
                    deps.append(relpath)
            else:
                if not depends_on:
                    depends_on, fields["allow_failure_on"] = file_depends, file_allowed
                if not depends_on and "depends_on" in item:  # `[]` or `~`: Buildkite's "no implicit wait"
                    fields["buildkite"] = (*fields.get("buildkite", ()), ("depends_on", []))
                deps.append(relpath)
            out.extend(_expand(fields, item, where, group, tuple(depends_on), tuple(deps), working_dir, vllm, warnings))
        except DeclarationError as exc:  # every step's error in one pass: check reports each
            errors.append(exc)
    raise_all(errors)
    return out


def _step_fields(raw: Any, where: Location, vllm: bool, defaults: Any,
                 warnings: list[DeclarationWarning]) -> tuple[LocDict, dict[str, Any]]:
    """A step's mapping (with the file's defaults) and its checked fields."""
    bk.command_step_only(raw, where)
    item = require_mapping(raw, where, "a step")
    if vllm:
        fields = check_fields(item, STEP_FIELDS, "step", ignored=VLLM_IGNORED, lenient=True, warnings=warnings)
    else:
        item = bk.with_defaults(defaults, item)
        fields, theirs = bk.split(item, PIPEGEN_STEP_FIELDS)
        extra = bk.read(theirs, item)
        if "agent_tags" in extra:  # Buildkite's agents and vLLM's agent_tags are both extra tags
            extra["agent_tags"] = fields.get("agent_tags", ()) + extra["agent_tags"]
        fields.update(extra)
    if "label" not in fields:
        raise DeclarationError("step has no 'label'", item.loc(), "add 'label: <what this step tests>'")
    return item, fields


def _check_pairs(fields: dict[str, Any], item: LocDict) -> None:
    if ("concurrency" in fields) != ("concurrency_group" in fields):
        present = "concurrency" if "concurrency" in fields else "concurrency_group"
        raise DeclarationError("'concurrency' and 'concurrency_group' must be set together", item.loc(present),
                               "add the missing one or remove both")
    if fields.get("num_nodes") and not fields.get("num_devices"):
        raise DeclarationError("'num_nodes' requires 'num_devices'", item.loc("num_nodes"),
                               "add 'num_devices: <GPUs per node>'")


def _is_amd_gpu(device: str | None) -> bool:
    return device is not None and any(fnmatch.fnmatchcase(device, p) for p in AMD_GPU_DEVICES)


def _expand(
    fields: dict[str, Any], item: LocDict, where: Location, group: str, depends_on: tuple[str, ...],
    deps: tuple[str, ...], working_dir: str | None, vllm: bool, warnings: list[DeclarationWarning],
) -> list[Step]:
    _check_pairs(fields, item)
    label = fields["label"]
    key = fields.get("key") or _derived_key(label, vllm)
    common = {
        **{name: value for name, value in as_written(fields, WRITTEN).items()
           if name not in ("key", "group", "device")},
        "location": where,
        "derived_key": not fields.get("key"),
        "working_dir": working_dir,
        "depends_on": depends_on,
        "dependencies": deps,
        "mount_buildkite_agent": fields.get("mount_buildkite_agent", False) or (vllm and label in VLLM_MOUNT_AGENT),
        "allow_failure_on": fields.get("allow_failure_on", ()),
        "buildkite": fields.get("buildkite", ()),
    }
    # vLLM: the file's group wins over the step's, and a step with neither is in group "ungrouped".
    group = (group or fields.get("group") or VLLM_UNGROUPED) if vllm else fields.get("group", group)
    hardware = fields.get("hardware")
    if hardware is not None:
        return _fan_out(hardware, fields, item, key, group, common)
    device = fields.get("device")
    own = {}
    if vllm and _is_amd_gpu(device):  # ci-infra: an AMD test of its own runs as its mirrors do
        group = AMD_GROUP
        own = {"label": f"AMD: {label} ({device})", "depends_on": _amd_depends(depends_on),
               "block_key": f"block-amd-{key}", "prelude": (f"export VLLM_TEST_GROUP_NAME={key}",),
               "mount_buildkite_agent": False}
    steps = [Step(key=key, group=group, device=device, **{**common, **own})]
    mirror = fields.get("mirror")
    if mirror:
        steps.extend(_mirrors(mirror, item, key, common, vllm, warnings))
    return steps


def _amd_depends(depends_on: tuple[str, ...]) -> tuple[str, ...]:
    """vLLM: AMD jobs wait for the AMD image, never the CUDA one."""
    out = list(dict.fromkeys(AMD_IMAGE_BUILD if d == "image-build" else d for d in depends_on))
    return tuple(out if AMD_IMAGE_BUILD in out else [AMD_IMAGE_BUILD, *out])


def _derived_key(label: str, vllm: bool) -> str:
    """vLLM's key from the label; in pipegen's own format one Buildkite accepts as it is, so a label such
    as ':memo: Docs' never gets a key ('-memo--docs') that the user did not write and check refuses."""
    return derive_key(label) if vllm else valid_key(derive_key(label))


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


def _mirrors(mirror: Any, item: LocDict, key: str, common: dict[str, Any], vllm: bool,
             warnings: list[DeclarationWarning]) -> list[Step]:
    where = item.loc("mirror")
    for name in mirror:
        if name == "amd":
            continue
        if not vllm:
            raise DeclarationError(f"unknown mirror '{name}'", mirror.loc(name), "the only mirror is 'amd'")
        warnings.append(DeclarationWarning(mirror.loc(name), "ignored-field",
                                           f"mirror '{name}' is ignored by vLLM's generator",
                                           "only 'mirror.amd' creates a step"))
    if "amd" not in mirror:
        return []
    amd = require_mapping(mirror["amd"], where, "mirror.amd")
    fields = check_fields(amd, MIRROR_FIELDS, "mirror.amd", lenient=vllm, warnings=warnings)
    if "device" not in fields:
        raise DeclarationError("mirror.amd has no 'device'", amd.loc(), "add e.g. 'device: mi325_1'")
    device = fields["device"]
    # vLLM: the mirror's own entries first, then the step's, without repeats.
    deps = list(fields.get("source_file_dependencies", ()))
    deps += [d for d in common["dependencies"] if d not in deps]
    depends_on = fields.get("depends_on", common["depends_on"] if not vllm else ())
    if vllm:
        depends_on = _amd_depends(depends_on)
    env = dict(common["env"])
    env.update(fields.get("env", ()))
    label = fields.get("label") or f"AMD: {common['label']} ({device})"
    step = Step(
        **{
            **common,
            "key": f"amd-{key}",
            "label": label,
            "group": AMD_GROUP,
            "location": amd.loc(),
            "device": device,
            "commands": fields.get("commands") or common["commands"],
            "working_dir": fields.get("working_dir", common["working_dir"]),
            "depends_on": tuple(depends_on),
            "dependencies": tuple(deps),
            "num_devices": fields.get("num_devices") or fields.get("num_gpus") or common["num_devices"],
            "num_nodes": fields.get("num_nodes", common["num_nodes"]),
            "no_gpu": fields.get("no_gpu", common["no_gpu"]),
            "no_plugin": fields.get("no_plugin", False),
            "dind": fields.get("dind", True),
            "mount_buildkite_agent": False,  # vLLM's mirrors run AMD's container, without the agent
            "env": tuple(env.items()),
            "soft_fail": fields.get("soft_fail", common["soft_fail"]),
            "timeout_in_minutes": fields.get("timeout_in_minutes"),
            "concurrency": fields.get("concurrency", common["concurrency"]),
            "concurrency_group": fields.get("concurrency_group", common["concurrency_group"]),
            "agent_tags": fields.get("agent_tags", ()),
            "optional": fields.get("optional", common["optional"]),
            "origin": key,
            "mirror": "amd",
            "derived_key": True,
            # vLLM: a mirror's block names the declared step, not the device ("Run AMD: X").
            "block_label": None if fields.get("label") or not vllm else f"Run AMD: {common['label']}",
        }
    )
    return [step]
