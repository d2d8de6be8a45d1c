"""pipegen's own format: `.buildkite/pipegen.yaml`, its settings and the steps files it names.

The dialect that claims any config the others do not (dialects/interface.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pipegen.buildkite.keys import valid_key
from pipegen.declarations.assemble import finish, read_steps_files
from pipegen.declarations.discover import DEFAULT_INVENTORY, STEPS_SUFFIXES, steps_files
from pipegen.declarations.field import Field
from pipegen.declarations.fields import (
    Checker,
    anything,
    boolean,
    check_fields,
    choice,
    entry_list,
    env_map,
    require_mapping,
    string,
    string_list,
)
from pipegen.declarations.labels import parse_labels
from pipegen.declarations.pipeline_level import pipeline_fields
from pipegen.declarations.policy import POLICY_FIELDS, policy_settings, with_sets
from pipegen.declarations.references import unmatched_names
from pipegen.declarations.yaml_values import LocDict, LocList
from pipegen.dialects.interface import Source, any_key
from pipegen.dialects.own.steps import load_steps_file
from pipegen.errors import DeclarationError
from pipegen.model import Declarations, DeclarationWarning, Group, Location, Rule, Settings, Step
from pipegen.states import UNSELECTED

NAME = "pipegen"

CONFIG_FIELDS: dict[str, Checker] = {
    "steps": Field(string_list, "Steps files, or folders of them (`*.yaml`, `*.yml`, sorted; no globs), from the "
                   "repository root (required).", example=[".buildkite/steps"]),
    "base_branch": Field(string, "The default diff base: the merge base with origin/BRANCH, then BRANCH.",
                         default="main", example="main"),
    "hardware": Field(anything, "The hardware inventory (families, queues, templates): a file, or the mapping "
                      "inline. Default: .buildkite/hardware.yaml where it exists.", example=".buildkite/hardware.yaml",
                      words="file path, or the inventory mapping", schema={"type": ["string", "object", "null"]}),
    "run_all": Field(entry_list, "A change of a file these match runs every step.", example=["pyproject.toml"]),
    "run_all_exclude": Field(entry_list, "... unless the file also matches one of these.", example=["docs/"]),
    "docs_only": Field(entry_list, "A change only of files these match runs no step.", example=["docs/", "*.md"]),
    "always_run": Field(string_list, "Step keys (fnmatch globs) that run whatever changed.", example=["lint"]),
    "no_dependencies": Field(choice("block", "run"), "What a step that declares no source_file_dependencies "
                             "gets: block (waits to be unblocked) or run.", default="block", example="run"),
    "unselected": Field(choice(*UNSELECTED), "How render shows a step the change does not select: behind a "
                        "block step, skipped, or left out.", default="block", example="skip"),
    "rules": Field(anything, "Selection rules for some hardware: a step they apply to runs when a changed "
                   "file matches `changed`.", example=[{"name": "rocm-base", "changed": ["docker/rocm/"],
                                                        "devices": ["mi*"]}],
                   words="list of rules (fields below)"),
    "interpolate": Field(string_list, "Variables Buildkite interpolates at upload: their `$` stays single.",
                         example=["BUILDKITE_COMMIT"]),
    "docker_workdir": Field(env_map, "A container's working folder -> the repository path it holds (check, run).",
                            example={"/workdir": ""}, words="mapping of container folder: repository path"),
    "external_steps": Field(string_list, "Keys of steps uploaded elsewhere, which depends_on may name.",
                            example=["bootstrap"]),
    "labels": Field(anything, "Pull-request labels ($BUILDKITE_PULL_REQUEST_LABELS) that widen or narrow "
                    "the selection: each a mapping of the fields below.", example={"perf": {"only": ["benchmarks"]}},
                    words="mapping of label name: what it asks for"),
    "run_all_branches": Field(string_list, "Branch filters whose builds (not pull requests) run every step.",
                              example=["main"]),
    "nightly_branches": Field(string_list, "Branch filters whose builds run as nightly (optional steps too).",
                              example=["release/*"]),
    "pipeline": Field(anything, "Buildkite's pipeline-level fields (all but steps: env, agents, notify, ...), "
                      "checked by its schema.", example={"env": {"LANG": "C.UTF-8"}},
                      words="mapping of Buildkite's pipeline fields"),
    **POLICY_FIELDS,
}
RULE_FIELDS: dict[str, Checker] = {
    "name": Field(string, "The rule's name, shown as the reason (required).", example="rocm-base-changed"),
    "changed": Field(entry_list, "A change of a file these match selects the steps it applies to (required).",
                     example=["docker/Dockerfile.rocm_base"]),
    "devices": Field(string_list, "fnmatch globs on the step's device or family; none: any.", example=["mi*"]),
    "mirror": Field(string, "Only mirrors of this kind.", example="amd"),
    "dind": Field(boolean, "Only steps with this dind value.", example=False),
    "overrides_optional": Field(boolean, "Placed before the optional rule: it runs optional steps too.",
                                default=False, example=True),
}


def claims(top: LocDict) -> bool:
    return True



check_keys = any_key

def page_order(steps: Sequence[Step]) -> list[Step]:
    return list(steps)  # as declared

def load(source: Source) -> Declarations:
    root, path, top = source.root, source.path, source.top
    fields = check_fields(top, CONFIG_FIELDS, "config")
    if not fields.get("steps"):
        raise DeclarationError("config has no 'steps'", top.loc(), "add 'steps: [.buildkite/steps]' (files or folders)")
    settings = _settings(top, fields)
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
    steps = read_steps_files(root, files, source.docs, lambda data, name: load_steps_file(data, name, groups))
    steps = with_sets(steps, settings)  # after every file: a set's entries are the config's
    _one_file_per_group(groups)
    warnings += unmatched_names(top, steps, groups)
    return finish(root, steps, settings, NAME, [path, *files], warnings, tuple(groups))


def _settings(top: LocDict, fields: dict[str, Any]) -> Settings:
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
        **policy_settings(fields),
    )
    if hardware is not None and not isinstance(hardware, (str, dict)):
        raise DeclarationError("'hardware' must be a file path or a mapping", top.loc("hardware"))
    return settings


def _one_file_per_group(groups: list[Group]) -> None:
    for group in groups:
        first = next(g for g in groups if g.name == group.name)
        if first is not group:
            raise DeclarationError(f"group '{group.name}' has fields of its own in two steps files (also at "
                                   f"{first.location})", group.location,
                                   "write the group's fields (key, depends_on, if, ...) in one file, "
                                   "its name in the others")


def _external_steps(keys: tuple[str, ...], top: LocDict) -> tuple[str, ...]:
    """Keys of steps uploaded elsewhere: written in the pipeline as they are, so they must be valid there."""

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
