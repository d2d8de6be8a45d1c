"""mkdocs hook: the field reference (reference/fields.md) and the JSON Schemas of pipegen's own format
(reference/schema/config.json, steps.json), generated at build time from the tables the loader checks
files with (pipegen/declarations/field.py): never written by hand, so they cannot drift from the code."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import yaml
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

from pipegen.buildkite.step_fields import ALIASES, field_names
from pipegen.declarations.field import UNSET
from pipegen.declarations.field_schema import as_json
from pipegen.declarations.field_types import type_of
from pipegen.declarations.labels import LABEL_FIELDS
from pipegen.declarations.other_steps import KINDS, OWN
from pipegen.declarations.steps_file import MIRROR_FIELDS, STEP_FIELDS
from pipegen.dialects.own import config as own_config
from pipegen.dialects.own import steps as own_steps
from pipegen.dialects.own.schema import KINDS as SCHEMAS
from pipegen.dialects.own.schema import own_format_schema
from pipegen.dialects.vllm import config as vllm_config
from pipegen.dialects.vllm import steps as vllm_steps
from pipegen.hardware.inventory_fields import FAMILY_FIELDS, INVENTORY_FIELDS, ROUTE_FIELDS, TEMPLATE_FIELDS
from pipegen.hardware.schema import inventory_schema
from pipegen.hardware.template_fields import JOB_FIELDS

PAGE = "reference/fields.md"
BUILDKITE_STEP = "https://buildkite.com/docs/pipelines/configure/step-types/command-step"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    files.append(File.generated(config, PAGE, content=page()))
    for kind, schema in [*((kind, own_format_schema(kind)) for kind in SCHEMAS), ("hardware", inventory_schema())]:
        text = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
        files.append(File.generated(config, f"reference/schema/{kind}.json", content=text))
    return files


def page() -> str:
    return "\n".join([
        "# Fields of the config, the steps files and the inventory",
        "",
        "Generated at build time from the field tables pipegen's loader checks every file with (type, default, "
        "description, example): a field listed here is one the loader reads, and every field it reads is listed. "
        "A field not listed is an error with a did-you-mean. Keys starting with `x-` at the top of the config and "
        "of a steps file are the author's own (a place for YAML anchors).",
        "",
        "## Editor support: the JSON Schema",
        "",
        "`pipegen schema config`, `pipegen schema steps` and `pipegen schema hardware` print the JSON Schema "
        "(draft-07) of the config, of a steps file and of the hardware inventory, made from the same tables "
        "([config.json](schema/config.json), [steps.json](schema/steps.json), "
        "[hardware.json](schema/hardware.json)). Save them beside the files and name them on a file's first line; "
        "the YAML language server (VS Code's YAML extension, and editors built on it) then completes, "
        "describes and checks the fields as you type:",
        "",
        "```bash",
        "pipegen schema config > pipegen.schema.json",
        "pipegen schema steps > steps.schema.json",
        "```",
        "",
        "and, at the top of `.buildkite/pipegen.yaml` and of `.buildkite/steps/tests.yaml` (the path is relative "
        "to the file):",
        "",
        "```text",
        "# yaml-language-server: $schema=../pipegen.schema.json",
        "# yaml-language-server: $schema=../../steps.schema.json",
        "```",
        "",
        "The schema refuses an unknown field wherever the loader does. What no schema can say (a glob that does "
        "not compile, a key no step has, a hardware family the inventory lacks) the loader still refuses, "
        "naming the file and line.",
        "",
        *section("## The config: `.buildkite/pipegen.yaml`", own_config.CONFIG_FIELDS),
        *section("### A rule (`rules:` items)", own_config.RULE_FIELDS),
        *section("### A label (`labels:` values)", LABEL_FIELDS,
                 "Each asks for something: `run_all` or `nightly` true, or a non-empty `only` or `add`."),
        *section("## A steps file", own_steps.FILE_FIELDS),
        *section("### A command step", own_steps.STEP_OWN_FIELDS, command_step_note()),
        *section("### `mirror.amd`", MIRROR_FIELDS, "The fields of the AMD copy of a step: what it changes "
                 "(`device` is required); the rest is the step's."),
        "### Wait, block, input and trigger steps",
        "",
        f"Items of `steps:` with a `{'`, `'.join(KINDS)}` key (or `type:`) are Buildkite's step of that type, "
        "with its fields as Buildkite's schema defines them (`waiter` for `wait` too); a trigger step also takes "
        f"`{'` and `'.join(OWN)}`, and is selected like a command step.",
        "",
        *inventory(),
        *vllm(),
    ])


def inventory() -> list[str]:
    return [
        *section("## The hardware inventory: `.buildkite/hardware.yaml`", INVENTORY_FIELDS,
                 "Or the mapping under the config's `hardware:` (which the config's JSON Schema leaves to the "
                 "loader). `pipegen schema hardware` prints the file's JSON Schema; its build context (`build:`) "
                 "is described with `pipegen render`."),
        *section("### A family (`families:` values)", FAMILY_FIELDS),
        *section("### A template (`templates:` values, or a family's `template:`)", TEMPLATE_FIELDS),
        *section("### A template's `job:`", JOB_FIELDS),
        *section("### A route (`routes:` items)", ROUTE_FIELDS),
    ]


def command_step_note() -> str:
    own = set(own_steps.STEP_OWN_FIELDS)
    theirs = sorted(field_names() - own - set(ALIASES))
    aliases = ", ".join(f"`{alias}` (`{name}`)" for alias, name in ALIASES.items())
    return (f"pipegen's fields, below; and every other field of [Buildkite's command step]({BUILDKITE_STEP}), "
            f"as Buildkite's schema defines it: {', '.join(f'`{n}`' for n in theirs)}; with Buildkite's other "
            f"names {aliases} (one of the two). `agents` may not set `queue`: the hardware chooses it. A steps "
            "file's `defaults:` takes any of these but `key`.")


def vllm() -> list[str]:
    own_only = sorted(set(own_steps.STEP_OWN_FIELDS) - set(STEP_FIELDS))
    ignored = ", ".join(f"`{name}`" + (f" (meant: `{meant}`)" if meant else "")
                        for name, meant in vllm_steps.VLLM_IGNORED.items())
    return [
        *section("## vLLM's files: `.buildkite/ci_config.yaml`", vllm_config.CONFIG_FIELDS,
                 "A config with `job_dirs` is read as vLLM's generator reads it; its selection settings are the "
                 "vLLM preset's. A field the generator ignores loads with a warning."),
        *section("### A vLLM steps file", vllm_steps.FILE_FIELDS,
                 "Its steps take the command-step fields above that are vLLM's, and not "
                 f"{', '.join(f'`{n}`' for n in own_only)} nor Buildkite's other fields (each a warning: the "
                 f"generator drops it; so are {ignored}). A step's key comes from its label where it has none."),
    ]


def section(title: str, spec: Mapping[str, Any], note: str = "") -> list[str]:
    lines = [title, ""] + ([note, ""] if note else [])
    lines += ["| Field | Type | Default | Description | Example |", "| --- | --- | --- | --- | --- |"]
    for name, field in spec.items():
        words, _ = type_of(field)
        default = "" if field.default is UNSET else code(field.default)
        example = "" if field.example is UNSET else code_pair(name, field.example)
        lines.append(f"| `{name}` | {cell(words)} | {default} | {cell(field.doc)} | {example} |")
    return [*lines, ""]


def code(value: Any) -> str:
    return f"`{cell(flow(value))}`"


def code_pair(name: str, value: Any) -> str:
    """`name: value` as YAML writes it in a flow mapping (quoted where a plain scalar would not load)."""
    return f"`{cell(flow({name: value})[1:-1])}`"


def flow(value: Any) -> str:
    """A value as YAML in flow style, on one line."""
    text = yaml.safe_dump(as_json(value), default_flow_style=True, width=1000, sort_keys=False).strip()
    return text.removesuffix("...").strip()


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
