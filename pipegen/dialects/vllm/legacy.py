"""vLLM's legacy layout: one steps file (`test-pipeline.yaml`, `test-amd.yaml`) given as the config.

The dialect (dialects/interface.py) that claims a config whose `steps:` are mappings. Raw-prefix
dependencies, keys from labels (a label repeated across AMD pools gets its pool), and test-amd.yaml's
mirror tag ($AMD_MIRROR_HW) from the environment.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipegen.declarations.assemble import finish
from pipegen.declarations.fields import (
    as_written,
    boolean,
    check_fields,
    nested_command_list,
    positive_int,
    require_mapping,
    step_fields,
    string,
    string_list,
)
from pipegen.declarations.steps_file import STEP_FIELDS, derive_key
from pipegen.declarations.yaml_values import LocDict, LocList
from pipegen.dialects.interface import Source, any_key
from pipegen.dialects.vllm.presets import GENERATOR, LEGACY_MIRROR_TAG_DEFAULT, LEGACY_MIRROR_TAG_ENV, legacy_settings
from pipegen.dialects.vllm.steps import VLLM_IGNORED
from pipegen.errors import DeclarationError
from pipegen.model import Declarations, DeclarationWarning, Reason, Step

NAME = "legacy"

LEGACY_WRITTEN = step_fields("legacy")  # declared on model.Step
# The legacy file is checked as a steps file is (fields it drops load with a warning), with its own fields.
LEGACY_FIELDS = {
    **{k: v for k, v in STEP_FIELDS.items() if k not in ("mirror", "device", "num_devices")},
    **{key: w.check for key, w in LEGACY_WRITTEN.items()},
    "commands": nested_command_list,
    "source_file_dependencies": string_list,  # raw prefixes: '[' is no glob here
    "agent_pool": string,  # test-amd.yaml's AMD pool ("mi300_2"): the step's device
    "mirror_hardwares": string_list,  # the AMD tags it is mirrored to: others leave it out
    "gpu": string,
    "num_gpus": positive_int,
    "fast_check": boolean,
    "torch_nightly": boolean,
    "autorun_on_main": boolean,
}
# What a hand-written Buildkite pipeline has and vLLM's legacy steps files never do.
PIPELINE_TOP = ("agents", "env", "notify")
PIPELINE_STEP = ("plugins", "wait", "waiter", "block", "input", "trigger", "group", "name")


def claims(top: LocDict) -> bool:
    steps = top.get("steps")
    return isinstance(steps, LocList) and bool(steps) and isinstance(steps[0], dict)



check_keys = any_key

def page_order(steps: Sequence[Step]) -> list[Step]:
    return list(steps)  # as declared

def load(source: Source) -> Declarations:
    top, raw_steps = source.top, source.top["steps"]
    _not_a_pipeline(top, raw_steps, source.path)
    warnings: list[DeclarationWarning] = []
    is_amd = any(isinstance(item, dict) and "agent_pool" in item for item in raw_steps)
    tag = source.environ.get(LEGACY_MIRROR_TAG_ENV, LEGACY_MIRROR_TAG_DEFAULT) if is_amd else None
    settings = legacy_settings()
    made: list[dict[str, Any]] = []  # each step's fields, made a Step once every key is known
    wanted: list[tuple[str, bool]] = []
    # Legacy files repeat labels across agent pools: every repeated label gets its
    # pool in the key, so a key does not depend on which copy comes first.
    label_counts: dict[str, int] = {}
    for raw in raw_steps:
        if isinstance(raw, dict) and isinstance(raw.get("label"), str):
            label_counts[raw["label"]] = label_counts.get(raw["label"], 0) + 1
    for index, raw in enumerate(raw_steps):
        where = raw_steps.loc(index)
        item = require_mapping(raw, where, "a step")
        fields = check_fields(item, LEGACY_FIELDS, "step", ignored=VLLM_IGNORED, lenient=GENERATOR, warnings=warnings)
        if "label" not in fields:
            raise DeclarationError("step has no 'label'", item.loc(), "add 'label: ...'")
        pool = fields.get("agent_pool")
        key = fields.get("key") or derive_key(fields["label"])
        if pool and label_counts.get(fields["label"], 0) > 1 and "key" not in fields:
            key = f"{key}-{pool}"
        wanted.append((key, "key" in fields))
        made.append({
            **as_written(fields, LEGACY_WRITTEN),
            "group": "",
            "location": where,
            "working_dir": fields.get("working_dir", "/vllm-workspace/tests"),
            "dependency_kind": "raw",
            "device": pool or fields.get("gpu"),
            "num_devices": fields.get("num_gpus"),
            "soft_fail": True if is_amd else fields.get("soft_fail", False),
            "dialect_skip": None if tag is None or tag in fields.get("mirror_hardwares", ()) else
            Reason("mirror-tag", f"not mirrored to '{tag}' (mirror_hardwares)"),
        })
    steps = [Step(**{**fields, "key": key}) for fields, key in zip(made, _unique(wanted), strict=True)]
    return finish(source.root, steps, settings, NAME, [source.path], warnings)


def _unique(wanted: list[tuple[str, bool]]) -> list[str]:
    """Each step's key: a declared one as written (two alike are refused by finish); a derived one as derived
    unless another step declares it or derives it first, else with the first suffix -2, -3, ... that no step
    declares or derives ('A 2', 'A', 'A' -> a-2, a, a-3): a derived key never collides."""
    used = {key for key, declared in wanted if declared}
    derived = {key for key, declared in wanted if not declared}
    keys = []
    for key, declared in wanted:
        if not declared and key in used:
            n = 2
            while f"{key}-{n}" in used or f"{key}-{n}" in derived:
                n += 1
            key = f"{key}-{n}"
        used.add(key)
        keys.append(key)
    return keys


def _not_a_pipeline(top: LocDict, steps: LocList, path: str) -> None:
    """A pipeline.yml given as the config reads as a legacy steps file: say what it is instead of
    'step has no label'."""
    if any(k in top for k in PIPELINE_TOP) or any(not isinstance(step, dict) or any(
            k in step for k in PIPELINE_STEP) for step in steps):
        raise DeclarationError(f"{path} is a Buildkite pipeline, not a pipegen config", top.loc(),
                               f"convert it with 'pipegen import {path}' (docs/reference/import.md), and pass the "
                               "config that names its steps files (.buildkite/pipegen/pipegen.yaml)")
