"""One steps file of vLLM's current layout -> Steps, as ci-infra's generator reads it.

Fields the generator drops load with a warning; a file-level depends_on fills the steps without their
own, defaults their working dir and makes the file a dependency; the file's group wins over the
step's; keys come from labels; a step on an AMD device, and each `mirror.amd`, joins the AMD group
behind the AMD image build.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from pipegen.declarations import buildkite_step as bk
from pipegen.declarations.field import Field
from pipegen.declarations.fields import Checker, anything, check_fields, require_mapping, string, string_list
from pipegen.declarations.steps_file import (
    AMD_GROUP,
    MIRROR_FIELDS,
    STEP_FIELDS,
    common_fields,
    derive_key,
    each_step,
    mirror_step,
    steps_list,
)
from pipegen.declarations.yaml_values import LocDict
from pipegen.dialects.vllm.presets import AMD_GPU_DEVICES, AMD_IMAGE_BUILD, GENERATOR, VLLM_MOUNT_AGENT, VLLM_UNGROUPED
from pipegen.errors import DeclarationError
from pipegen.model import DeclarationWarning, Location, Step

# Fields vLLM's generator drops without a word, and what was meant.
VLLM_IGNORED = {"num_gpus": "num_devices", "gpu": "device", "torch_nightly": "", "autorun_on_main": "",
                "fast_check": ""}
FILE_FIELDS: dict[str, Checker] = {
    "group": Field(string, "The group of every step of the file (it wins over a step's own).", example="Kernels"),
    "depends_on": Field(string_list, "Keys the file's steps wait for where they name none; the file also becomes "
                        "their dependency and gives them the working dir /vllm-workspace/tests.",
                        example=["image-build"]),
    "steps": Field(anything, "The command steps (required).", words="list of steps",
                   example=[{"label": "Kernels", "commands": ["pytest -v kernels"]}]),
}


def load_steps_file(data: Any, relpath: str, warnings: list[DeclarationWarning],
                    default_working_dir: str | None) -> list[Step]:
    top, steps = steps_list(data, relpath)
    head = check_fields(top, FILE_FIELDS, "steps-file", lenient=GENERATOR, warnings=warnings)
    group: str = head.get("group", "").strip()
    file_depends: tuple[str, ...] = head.get("depends_on", ())

    def read(raw: Any, where: Location, index: int) -> list[Step]:
        bk.command_step_only(raw, where)
        item = require_mapping(raw, where, "a step")
        fields = check_fields(item, STEP_FIELDS, "step", ignored=VLLM_IGNORED, lenient=GENERATOR, warnings=warnings)
        if "label" not in fields:
            raise DeclarationError("step has no 'label'", item.loc(), "add 'label: <what this step tests>'")
        deps = list(fields.get("source_file_dependencies", ()))
        depends_on = fields.get("depends_on", ())
        working_dir = fields.get("working_dir")
        if file_depends:  # fills steps without their own, defaults the working dir, the file is a dependency
            depends_on = depends_on or file_depends
            working_dir = working_dir or default_working_dir
            deps.append(relpath)
        common = common_fields(fields, item, where, tuple(depends_on), tuple(deps), working_dir)
        return _expand(fields, item, group, common, warnings)

    return each_step(steps, read)


def _expand(fields: dict[str, Any], item: LocDict, file_group: str, common: dict[str, Any],
            warnings: list[DeclarationWarning]) -> list[Step]:
    label = fields["label"]
    key = fields.get("key") or derive_key(label)
    common["mount_buildkite_agent"] = common["mount_buildkite_agent"] or label in VLLM_MOUNT_AGENT
    # The file's group wins over the step's, and a step with neither is in group "ungrouped".
    group = file_group or fields.get("group") or VLLM_UNGROUPED
    device = fields.get("device")
    own = {}
    if device is not None and any(fnmatch.fnmatchcase(device, p) for p in AMD_GPU_DEVICES):
        group = AMD_GROUP  # ci-infra: an AMD test of its own runs as its mirrors do
        own = {"label": f"AMD: {label} ({device})", "depends_on": _amd_depends(common["depends_on"]),
               "block_key": f"block-amd-{key}", "prelude": (f"export VLLM_TEST_GROUP_NAME={key}",),
               "mount_buildkite_agent": False}
    steps = [Step(key=key, group=group, device=device, **{**common, **own})]
    if fields.get("mirror"):
        steps.extend(_mirrors(fields["mirror"], item, key, common, warnings))
    return steps


def _amd_depends(depends_on: tuple[str, ...]) -> tuple[str, ...]:
    """AMD jobs wait for the AMD image, never the CUDA one."""
    out = list(dict.fromkeys(AMD_IMAGE_BUILD if d == "image-build" else d for d in depends_on))
    return tuple(out if AMD_IMAGE_BUILD in out else [AMD_IMAGE_BUILD, *out])


def _mirrors(mirror: Any, item: LocDict, key: str, common: dict[str, Any],
             warnings: list[DeclarationWarning]) -> list[Step]:
    for name in mirror:
        if name != "amd":
            warnings.append(DeclarationWarning(mirror.loc(name), "ignored-field",
                                               f"mirror '{name}' is ignored by {GENERATOR}",
                                               "only 'mirror.amd' creates a step"))
    if "amd" not in mirror:
        return []
    amd = require_mapping(mirror["amd"], item.loc("mirror"), "mirror.amd")
    fields = check_fields(amd, MIRROR_FIELDS, "mirror.amd", lenient=GENERATOR, warnings=warnings)
    # A mirror's block names the declared step, not the device ("Run AMD: X").
    block_label = None if fields.get("label") else f"Run AMD: {common['label']}"
    return [mirror_step(fields, amd, key, common, _amd_depends(fields.get("depends_on", ())), block_label)]
