"""Load a repository's CI declarations into `Declarations`.

Three layouts are understood:
- pipegen's own config (`.buildkite/pipegen.yaml`): settings plus the steps files it names;
- vLLM's current layout (`.buildkite/ci_config.yaml` + steps files under `job_dirs`);
- one legacy vLLM steps file (`test-pipeline.yaml`, `test-amd.yaml`).
The config is `--config PATH`, else `$PIPEGEN_CONFIG`, else the first of the
two default files that exists.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pipegen.declarations.fields import (
    Checker,
    anything,
    as_written,
    boolean,
    check_fields,
    choice,
    entry_list,
    env_map,
    nested_command_list,
    positive_int,
    regex_list,
    require_mapping,
    step_fields,
    string,
    string_list,
)
from pipegen.declarations.graph import validate_graph
from pipegen.declarations.labels import parse_labels
from pipegen.declarations.locate import (
    DEFAULT_INVENTORY,
    STEPS_SUFFIXES,
    VLLM_SUFFIXES,
    find_config,
    link_aliases,
    rel,
    steps_files,
)
from pipegen.declarations.pipeline_level import pipeline_fields
from pipegen.declarations.presets import (
    LEGACY_MIRROR_TAG_DEFAULT,
    LEGACY_MIRROR_TAG_ENV,
    derive_key,
    legacy_settings,
    vllm_settings,
)
from pipegen.declarations.references import unmatched_names
from pipegen.declarations.steps_file import STEP_FIELDS, VLLM_IGNORED, load_steps_file
from pipegen.declarations.yamlio import LocDict, LocList, load_file
from pipegen.errors import DeclarationError, raise_all
from pipegen.model import Declarations, DeclarationWarning, Group, Location, Rule, Settings, Step

PIPEGEN_FIELDS: dict[str, Checker] = {
    "steps": string_list,
    "base_branch": string,
    "hardware": anything,
    "run_all": entry_list,
    "run_all_exclude": entry_list,
    "docs_only": entry_list,
    "always_run": string_list,
    "no_dependencies": choice("block", "run"),
    "unselected": choice("block", "skip", "omit"),
    "rules": anything,
    "interpolate": string_list,
    "docker_workdir": env_map,
    "external_steps": string_list,
    "labels": anything,
    "run_all_branches": string_list,
    "nightly_branches": string_list,
    "pipeline": anything,
}
RULE_FIELDS: dict[str, Checker] = {
    "name": string,
    "changed": entry_list,
    "devices": string_list,
    "mirror": string,
    "dind": boolean,
    "overrides_optional": boolean,
}
VLLM_CONFIG_FIELDS: dict[str, Checker] = {
    "name": string,
    "job_dirs": string_list,
    "run_all_patterns": regex_list,
    "run_all_exclude_patterns": regex_list,
    "registries": anything,
    "repositories": anything,
    "github_repo_name": string,
}
LEGACY_WRITTEN = step_fields("legacy")  # declared on model.Step
# The legacy file is checked as a steps file is (fields it drops load with a warning), with its own fields.
LEGACY_FIELDS: dict[str, Checker] = {
    **{k: v for k, v in STEP_FIELDS.items() if k not in ("mirror", "device", "num_devices")},
    **{key: w.check for key, w in LEGACY_WRITTEN.items()},
    "commands": nested_command_list,
    "source_file_dependencies": string_list,  # raw prefixes: '[' is no glob here
    "gpu": string,
    "num_gpus": positive_int,
    "fast_check": boolean,
    "torch_nightly": boolean,
    "autorun_on_main": boolean,
}


def load(root: str = ".", config: str | None = None, environ: Mapping[str, str] | None = None) -> Declarations:
    """Read the declarations of the repository at `root` (`environ`: $PIPEGEN_CONFIG, the legacy mirror tag)."""
    return load_documents(root, config, environ)[0]


def load_documents(root: str = ".", config: str | None = None,
                   environ: Mapping[str, str] | None = None) -> tuple[Declarations, dict[str, Any]]:
    """The declarations, and the parsed YAML of each of their files (`check` reads entry lines from it)."""
    environ = {} if environ is None else environ
    path = rel(root, find_config(root, config, environ))
    docs: dict[str, Any] = {}
    data = docs[path] = load_file(os.path.join(root, path), path)
    top = require_mapping(data, Location(path, 1, 1), "the config file")
    if "job_dirs" in top:
        return _load_vllm(root, path, top, docs), docs
    steps = top.get("steps")
    if isinstance(steps, LocList) and steps and isinstance(steps[0], dict):
        _not_a_pipeline(top, steps, path)
        return _load_legacy(root, path, top, environ), docs
    return _load_pipegen(root, path, top, docs), docs


# What a hand-written Buildkite pipeline has and vLLM's legacy steps files never do.
PIPELINE_TOP = ("agents", "env", "notify")
PIPELINE_STEP = ("plugins", "wait", "waiter", "block", "input", "trigger", "group", "name")


def _not_a_pipeline(top: LocDict, steps: LocList, path: str) -> None:
    """A pipeline.yml given as the config reads as a legacy steps file: say what it is instead of
    'step has no label'."""
    if any(k in top for k in PIPELINE_TOP) or any(not isinstance(step, dict) or any(
            k in step for k in PIPELINE_STEP) for step in steps):
        raise DeclarationError(f"{path} is a Buildkite pipeline, not a pipegen config", top.loc(),
                               "port its steps to steps files as README's 'From a hand-written pipeline.yml to "
                               "pipegen' shows, and pass the config that names them (.buildkite/pipegen.yaml)")


def _load_steps(root: str, files: list[str], docs: dict[str, Any], *, vllm: bool, warnings: list[DeclarationWarning],
                default_working_dir: str | None = None, groups: list[Group] | None = None) -> list[Step]:
    """Every steps file; the errors of all of them, not only the first (check reports each)."""
    steps: list[Step] = []
    errors: list[DeclarationError] = []
    for name in files:
        try:
            data = docs[name] = load_file(os.path.join(root, name), name)
            steps += load_steps_file(data, name, vllm=vllm, warnings=warnings, default_working_dir=default_working_dir,
                                     groups=groups)
        except DeclarationError as exc:
            errors.append(exc)
    raise_all(errors)
    for group in groups or ():
        first = next(g for g in groups or () if g.name == group.name)
        if first is not group:
            raise DeclarationError(f"group '{group.name}' has fields of its own in two steps files (also at "
                                   f"{first.location})", group.location,
                                   "write the group's fields (key, depends_on, if, ...) in one file, "
                                   "its name in the others")
    return steps


def _load_pipegen(root: str, path: str, top: LocDict, docs: dict[str, Any]) -> Declarations:
    fields = check_fields(top, PIPEGEN_FIELDS, "config")
    if not fields.get("steps"):
        raise DeclarationError("config has no 'steps'", top.loc(), "add 'steps: [.buildkite/steps]' (files or folders)")
    hardware = fields.get("hardware")
    settings = Settings(
        base_branch=fields.get("base_branch", "main"),
        run_all=fields.get("run_all", ()),
        run_all_exclude=fields.get("run_all_exclude", ()),
        docs_only=fields.get("docs_only", ()),
        always_run=fields.get("always_run", ()),
        no_dependencies=fields.get("no_dependencies", "block"),
        unselected=fields.get("unselected", "block"),
        rules=_rules(top.get("rules"), top.loc("rules")),
        interpolate=fields.get("interpolate", ()),
        docker_workdir=fields.get("docker_workdir", ()),
        labels=parse_labels(top.get("labels"), top.loc("labels")),
        hardware_file=hardware if isinstance(hardware, str) else None,
        hardware_inline=hardware if isinstance(hardware, dict) else None,
        external_steps=_external_steps(fields.get("external_steps", ()), top),
        run_all_branches=fields.get("run_all_branches", ()),
        nightly_branches=fields.get("nightly_branches", ()),
        pipeline=pipeline_fields(top.get("pipeline"), top.loc("pipeline")),
    )
    if hardware is not None and not isinstance(hardware, (str, dict)):
        raise DeclarationError("'hardware' must be a file path or a mapping", top.loc("hardware"))
    warnings: list[DeclarationWarning] = []
    files: list[str] = []
    for index, entry in enumerate(fields["steps"]):
        entry_where = top["steps"].loc(index) if isinstance(top["steps"], LocList) else top.loc("steps")
        files += steps_files(root, entry, entry_where, STEPS_SUFFIXES, warnings)
        # `steps: [.buildkite]` would read the config and the inventory as steps files, each an error of its own.
        for own in sorted({path, settings.hardware_file or DEFAULT_INVENTORY} & set(files)):
            raise DeclarationError(f"steps entry '{entry}' holds {own}, which is not a steps file", entry_where,
                                   "put the steps files in a folder of their own (.buildkite/steps) and name it")
    groups: list[Group] = []
    steps = _load_steps(root, files, docs, vllm=False, warnings=warnings, groups=groups)
    warnings += unmatched_names(top, steps, groups)
    return _finish(root, steps, settings, "pipegen", [path, *files], warnings, tuple(groups))


def _external_steps(keys: tuple[str, ...], top: LocDict) -> tuple[str, ...]:
    """Keys of steps uploaded elsewhere: written in the pipeline as they are, so they must be valid there."""
    from pipegen.buildkite.keys import valid_key

    for key in keys:
        if valid_key(key) != key:
            raise DeclarationError(f"external step key '{key}' is not a key Buildkite accepts",
                                   top.loc("external_steps"),
                                   f"write the key as the other pipeline does (e.g. '{valid_key(key)}')")
    return keys


def _rules(raw: Any, where: Location) -> tuple[Rule, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, LocList):
        raise DeclarationError("'rules' must be a list", where)
    rules = []
    for index, item in enumerate(raw):
        rule = check_fields(require_mapping(item, raw.loc(index), "a rule"), RULE_FIELDS, "rule")
        if not rule.get("name") or not rule.get("changed"):
            raise DeclarationError("a rule needs 'name' and 'changed'", raw.loc(index))
        rules.append(Rule(**{**rule, "changed": tuple(rule["changed"]), "devices": tuple(rule.get("devices", ()))}))
    return tuple(rules)


def _load_vllm(root: str, path: str, top: LocDict, docs: dict[str, Any]) -> Declarations:
    warnings: list[DeclarationWarning] = []
    fields = check_fields(top, VLLM_CONFIG_FIELDS, "ci_config", lenient=True, warnings=warnings)
    settings = vllm_settings(
        run_all=fields.get("run_all_patterns", ()),
        run_all_exclude=fields.get("run_all_exclude_patterns", ()),
        build_values=_build_values(fields),
    )
    # vLLM defaults the working dir of steps in files with a group-level depends_on.
    vllm_itself = fields.get("github_repo_name", "vllm-project/vllm") == "vllm-project/vllm"
    working_dir = "/vllm-workspace/tests" if vllm_itself else None
    files: list[str] = []
    job_dirs = top["job_dirs"]
    for index, entry in enumerate(fields.get("job_dirs", ())):
        where = job_dirs.loc(index) if isinstance(job_dirs, LocList) else top.loc("job_dirs")
        files += steps_files(root, entry, where, VLLM_SUFFIXES, warnings)
    steps = _load_steps(root, files, docs, vllm=True, warnings=warnings, default_working_dir=working_dir)
    return _finish(root, steps, settings, "vllm", [path, *files], warnings)


def _build_values(fields: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """ci_config.yaml's name, registries, repositories and github_repo_name, as values for the inventory's
    build context."""
    values = [("config_name", fields["name"])] if isinstance(fields.get("name"), str) else []
    if isinstance(fields.get("registries"), str):
        values.append(("registries", fields["registries"]))
    if isinstance(fields.get("github_repo_name"), str):
        values.append(("github_repo", fields["github_repo_name"]))
    for name, repository in (fields.get("repositories") or {}).items():
        if isinstance(repository, str):
            values.append((f"repositories.{name}", repository))
    return tuple(values)


def _load_legacy(root: str, path: str, top: LocDict, environ: Mapping[str, str]) -> Declarations:
    warnings: list[DeclarationWarning] = []
    raw_steps = top["steps"]
    is_amd = any(isinstance(item, dict) and "agent_pool" in item for item in raw_steps)
    tag = environ.get(LEGACY_MIRROR_TAG_ENV, LEGACY_MIRROR_TAG_DEFAULT) if is_amd else None
    settings = legacy_settings(mirror_tag=tag)
    steps: list[Step] = []
    seen: dict[str, int] = {}
    # Legacy files repeat labels across agent pools: every repeated label gets its
    # pool in the key, so a key does not depend on which copy comes first.
    label_counts: dict[str, int] = {}
    for raw in raw_steps:
        if isinstance(raw, dict) and isinstance(raw.get("label"), str):
            label_counts[raw["label"]] = label_counts.get(raw["label"], 0) + 1
    for index, raw in enumerate(raw_steps):
        where = raw_steps.loc(index)
        item = require_mapping(raw, where, "a step")
        fields = check_fields(item, LEGACY_FIELDS, "step", ignored=VLLM_IGNORED, lenient=True, warnings=warnings)
        if "label" not in fields:
            raise DeclarationError("step has no 'label'", item.loc(), "add 'label: ...'")
        pool = fields.get("agent_pool")
        key = fields.get("key") or derive_key(fields["label"])
        if pool and label_counts.get(fields["label"], 0) > 1 and "key" not in fields:
            key = f"{key}-{pool}"
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            key = f"{key}-{seen[key]}"
            seen[key] = 1
        steps.append(Step(**{
            **as_written(fields, LEGACY_WRITTEN),
            "key": key,
            "group": "",
            "location": where,
            "working_dir": fields.get("working_dir", "/vllm-workspace/tests"),
            "dependency_kind": "raw",
            "device": pool or fields.get("gpu"),
            "num_devices": fields.get("num_gpus"),
            "soft_fail": True if is_amd else fields.get("soft_fail", False),
        }))
    return _finish(root, steps, settings, "legacy", [path], warnings)


def _finish(root: str, steps: list[Step], settings: Settings, layout: str, files: list[str],
            warnings: list[DeclarationWarning], groups: tuple[Group, ...] = ()) -> Declarations:
    inventory = [] if settings.hardware_inline is not None else [settings.hardware_file or DEFAULT_INVENTORY]
    decl = Declarations(steps=tuple(steps), settings=settings, layout=layout,  # type: ignore[arg-type]
                        files=tuple(files), warnings=tuple(warnings), root=root, groups=groups,
                        aliases=link_aliases(root, [*files, *inventory]))
    validate_graph(decl)
    return decl
