"""What every dialect's steps file shares: the file's shape, a command step's common fields, the AMD mirror.

A steps file has a file-level `group`, an optional file-level `depends_on` and `steps:`. Each
declared step expands into one Step per hardware target: its AMD mirror (`mirror.amd`) is a Step of
its own, so every later stage sees one unit with one decision and one job. The dialects
(pipegen/dialects/) read the rest their own way.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from pipegen.declarations.field import UNSET, Field
from pipegen.declarations.fields import (
    Checker,
    Written,
    as_written,
    mapping,
    positive_int,
    require_mapping,
    step_fields,
)
from pipegen.declarations.yaml_values import LocDict, LocList
from pipegen.errors import DeclarationError, raise_all
from pipegen.model import Location, Step

WRITTEN = step_fields("steps")  # declared on model.Step
# What each field of a steps file means, and an example: the JSON Schema's and the reference's text.
STEP_DOCS: dict[str, tuple[str, Any]] = {
    "key": ("The step's unique key: depends_on, --only, --step and labels name it. Default: made from the label.",
            "unit-tests"),
    "label": ("What the step tests, as Buildkite shows it (a command step needs one).", "Unit tests"),
    "group": ("The group the step is shown in, instead of its steps file's (vLLM: the file's wins).", "Kernels"),
    "commands": ("The shell commands the job runs, in order.", ["pytest -q tests/unit"]),
    "working_dir": ("The folder the commands run in (`cd` first).", "tests"),
    "depends_on": ("Keys of the steps or groups this step waits for.", ["build-image"]),
    "source_file_dependencies": ("Entries whose change selects the step: a path (a folder: all below it), a "
                                 "gitignore-style glob, '!' to exclude. The steps file itself is one too.",
                                 ["src/", "tests/unit/", "!src/docs/"]),
    "device": ("The hardware family (or vLLM device name) the job runs on. Default: the inventory's default.",
               "h100"),
    "num_devices": ("GPUs the job needs (per node).", 2),
    "num_nodes": ("Nodes of a multi-node job (needs num_devices).", 2),
    "no_gpu": ("The job uses no GPU (on the inventory's no_gpu family where the step names no hardware).", True),
    "agent_tags": ("Agent tags the job adds to its hardware's (NAME: value).", {"arch": "x86_64"}),
    "env": ("Environment variables of the job (NAME: value).", {"PYTHONUNBUFFERED": "1"}),
    "soft_fail": ("A failure does not fail the build: true, or the soft exit statuses ({exit_status: N}).", True),
    "timeout_in_minutes": ("Minutes before the job is cancelled; or one upload-time variable, unquoted.", 30),
    "parallelism": ("Copies of the job Buildkite runs side by side.", 4),
    "concurrency": ("Jobs of the concurrency_group that may run at once (set both).", 1),
    "concurrency_group": ("The name of the limit that concurrency sets (set both).", "gpu/benchmarks"),
    "retry": ("Buildkite's retry settings, as Buildkite writes them.", {"automatic": [{"exit_status": -1,
                                                                                       "limit": 2}]}),
    "optional": ("Runs in a nightly build or when asked for (a label, --only); otherwise waits to be unblocked.",
                 True),
    "no_plugin": ("The commands run on the agent as they are, without the hardware template's plugin.", True),
    "dind": ("false: the family's `native` template wraps the job instead of its usual one (vLLM's native AMD "
             "jobs).", False),
    "mount_buildkite_agent": ("Mount the buildkite-agent binary into the job's container.", True),
    "run_all_exempt": ("A run-all change (run_all, the config, an uncovered file) runs every step but this one, "
                       "which runs when its own entries match.", True),
    "derive": ("Entries computed from the code's graph: python roots (what their imports reach), cargo crate "
               "folders (their path dependencies); `use: check` only compares them with the list.",
               {"python": ["tests/unit/"]}),
    "dependency_sets": ("Names of the config's dependency_sets whose entries the step adds to its own.", ["core"]),
}


def described(written: dict[str, Written]) -> dict[str, Checker]:
    """The fields `written` declares (model.Step), each with its STEP_DOCS text and Step's default."""
    return {key: Field(w.check, *STEP_DOCS[key][:1], example=STEP_DOCS[key][1],
                       default=UNSET if w.default in (dataclasses.MISSING, None, ()) else w.default)
            for key, w in written.items()}


STEP_FIELDS: dict[str, Checker] = {**described(WRITTEN), "mirror": Field(
    mapping, "Copies of the step on other hardware: `amd:` with the fields the copy changes (device required).",
    example={"amd": {"device": "mi325_1"}})}
AMD_GROUP = "Hardware-AMD Tests"  # the group of every AMD mirror

# What `mirror.amd` may change of its step (vLLM's mirrors also take num_gpus).
MIRROR_FIELDS: dict[str, Checker] = {
    **{key: STEP_FIELDS[key] for key in (
        "device", "depends_on", "timeout_in_minutes", "soft_fail", "commands", "env", "source_file_dependencies",
        "optional", "label", "dind", "no_gpu", "num_devices", "num_nodes", "working_dir", "no_plugin", "concurrency",
        "concurrency_group", "agent_tags")},
    "num_gpus": Field(positive_int, "GPUs of the mirror's job (vLLM's name; num_devices wins).", example=1),
}


def steps_list(data: Any, relpath: str) -> tuple[LocDict, LocList]:
    """A parsed steps file's mapping and its `steps:` list."""

    if data is None:  # a file just created in a steps folder
        raise DeclarationError("the steps file is empty", Location(relpath, 1, 1),
                               "write 'group: <name>' and 'steps:' with '- label: ...' items, or delete the file")
    top = require_mapping(data, Location(relpath, 1, 1), "a steps file")
    steps = top.get("steps")
    if not isinstance(steps, LocList):
        raise DeclarationError("a steps file needs a 'steps:' list", top.loc("steps") if "steps" in top else top.loc(),
                               "add 'steps:' followed by '- label: ...' items")
    return top, steps


def each_step(steps: LocList, read: Callable[[Any, Location, int], list[Step]]) -> list[Step]:
    """`read` of every item (the item, where it is, its index); every step's error in one pass (check reports
    each)."""
    out: list[Step] = []
    errors: list[DeclarationError] = []
    for index, raw in enumerate(steps):
        try:
            out.extend(read(raw, steps.loc(index), index))
        except DeclarationError as exc:
            errors.append(exc)
    raise_all(errors)
    return out


def derive_key(label: str) -> str:
    """A key from a step's label (ci-infra `_generate_step_key`; the dialects each make it their own)."""
    key = label.replace(" ", "-").lower()
    for char in "()%":
        key = key.replace(char, "")
    for char in ",+:./":
        key = key.replace(char, "-")
    return key


def common_fields(fields: dict[str, Any], item: LocDict, where: Location, depends_on: tuple[str, ...],
                  deps: tuple[str, ...], working_dir: str | None) -> dict[str, Any]:
    """A command step's checked fields as Step's attributes, less key, group and device."""
    _check_pairs(fields, item)
    return {
        **{name: value for name, value in as_written(fields, WRITTEN).items()
           if name not in ("key", "group", "device")},
        "location": where,
        "derived_key": not fields.get("key"),
        "working_dir": working_dir,
        "depends_on": depends_on,
        "dependencies": deps,
        "mount_buildkite_agent": fields.get("mount_buildkite_agent", False),
        "allow_failure_on": fields.get("allow_failure_on", ()),
        "buildkite": fields.get("buildkite", ()),
    }


def _check_pairs(fields: dict[str, Any], item: LocDict) -> None:
    if ("concurrency" in fields) != ("concurrency_group" in fields):
        present = "concurrency" if "concurrency" in fields else "concurrency_group"
        raise DeclarationError("'concurrency' and 'concurrency_group' must be set together", item.loc(present),
                               "add the missing one or remove both")
    if fields.get("num_nodes") and not fields.get("num_devices"):
        raise DeclarationError("'num_nodes' requires 'num_devices'", item.loc("num_nodes"),
                               "add 'num_devices: <GPUs per node>'")


def mirror_step(fields: dict[str, Any], amd: LocDict, key: str, common: dict[str, Any],
                depends_on: tuple[str, ...], block_label: str | None) -> Step:
    """The Step of a checked `mirror.amd` (`depends_on` and `block_label` as its dialect reads them)."""
    if "device" not in fields:
        raise DeclarationError("mirror.amd has no 'device'", amd.loc(), "add e.g. 'device: mi325_1'")
    device = fields["device"]
    # The mirror's own entries first, then the step's, without repeats.
    deps = list(fields.get("source_file_dependencies", ()))
    deps += [d for d in common["dependencies"] if d not in deps]
    env = dict(common["env"])
    env.update(fields.get("env", ()))
    return Step(**{
        **common,
        "key": f"amd-{key}",
        "label": fields.get("label") or f"AMD: {common['label']} ({device})",
        "group": AMD_GROUP,
        "location": amd.loc(),
        "device": device,
        "commands": fields.get("commands") or common["commands"],
        "working_dir": fields.get("working_dir", common["working_dir"]),
        "depends_on": depends_on,
        "dependencies": tuple(deps),
        "num_devices": fields.get("num_devices") or fields.get("num_gpus") or common["num_devices"],
        "num_nodes": fields.get("num_nodes", common["num_nodes"]),
        "no_gpu": fields.get("no_gpu", common["no_gpu"]),
        "no_plugin": fields.get("no_plugin", False),
        "dind": fields.get("dind", True),
        "mount_buildkite_agent": False,  # a mirror runs AMD's container, without the agent
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
        "block_label": block_label,
    })
