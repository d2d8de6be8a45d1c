"""The JSON Schema (draft-07) of pipegen's own format: the config (`pipegen.yaml`) and a steps file.

Made from the loader's own field tables (CONFIG_FIELDS, STEP_OWN_FIELDS, ...: declarations/field.py),
each field's type from its checker (declarations/field_types.py), and from Buildkite's vendored
schema for the fields pipegen takes as Buildkite writes them; so it accepts what the loader accepts
and refuses an unknown field where the loader does. What no schema can say (a glob that does not
compile, a key no step has) the loader still refuses, naming the file and line.

    own_format_schema("config")            # the schema, a dict
    own_format_problem("steps", data)      # why the schema refuses `data` (parsed YAML), or None
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pipegen.buildkite.schema import load_schema
from pipegen.declarations.field_schema import described, fields_object
from pipegen.declarations.field_types import DEFINITIONS, type_of
from pipegen.declarations.labels import LABEL_FIELDS
from pipegen.dialects.own.config import CONFIG_FIELDS, RULE_FIELDS
from pipegen.dialects.own.schema_steps import steps_file

KINDS = ("config", "steps")
DRAFT = "http://json-schema.org/draft-07/schema#"
TITLES = {"config": "pipegen config (.buildkite/pipegen.yaml)", "steps": "pipegen steps file"}
X_KEYS = {"^x-": {"description": "The author's own: a place for YAML anchors."}}


def own_format_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema of pipegen's config ("config") or of one of its steps files ("steps"): a fresh dict."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
    buildkite = load_schema()
    body = _config(buildkite) if kind == "config" else steps_file(buildkite)
    own = body.pop("definitions", {})
    return {"$schema": DRAFT, "title": TITLES[kind], **body,
            "definitions": {**buildkite["definitions"], **DEFINITIONS, "dependsOnList": _depends_on_list(), **own}}


def _depends_on_list() -> dict[str, Any]:
    """Buildkite's list of keys or `{step, allow_failure}` items, where the loader needs an item's `step`
    (Buildkite's schema leaves it optional; an upload without it fails)."""
    item = {"type": "object", "required": ["step"], "additionalProperties": False,
            "properties": {"step": {"type": "string"}, "allow_failure": {"enum": [True, False, "true", "false"]}}}
    return {"type": "array", "items": {"anyOf": [{"type": "string"}, item]}}


def own_format_problem(kind: str, data: Any) -> str | None:
    """Why the schema of `kind` refuses `data` (a parsed config or steps file), or None when it accepts it."""
    import fastjsonschema

    try:
        _validator(kind)(data)
    except fastjsonschema.JsonSchemaValueException as exc:
        return str(exc.message)
    return None


@functools.cache
def _validator(kind: str) -> Callable[[Any], Any]:
    import fastjsonschema

    from pipegen.buildkite.schema import prepared

    return fastjsonschema.compile(prepared(own_format_schema(kind)), use_default=False)


def _config(buildkite: dict[str, Any]) -> dict[str, Any]:
    nonempty = {"anyOf": [{"type": "string"}, {"type": "array", "minItems": 1}]}
    rule = fields_object(RULE_FIELDS, ("name", "changed"), allOf=[{"properties": {"changed": nonempty}}])
    label = fields_object(LABEL_FIELDS, anyOf=[
        {"required": ["run_all"], "properties": {"run_all": {"const": True}}},
        {"required": ["nightly"], "properties": {"nightly": {"const": True}}},
        {"required": ["only"], "properties": {"only": nonempty}},
        {"required": ["add"], "properties": {"add": nonempty}}])
    pipeline = {"type": ["object", "null"], "additionalProperties": False,
                "properties": {k: v for k, v in buildkite["properties"].items() if k != "steps"}}
    shapes = {
        "steps": {**type_of(CONFIG_FIELDS["steps"])[1], "type": ["array", "string"], "minItems": 1},
        "rules": {"type": ["array", "null"], "items": rule},
        "labels": {"type": ["object", "null"], "propertyNames": {"pattern": "\\S"}, "additionalProperties": label},
        "pipeline": pipeline,
    }
    properties = {name: described(field, shapes.get(name)) for name, field in CONFIG_FIELDS.items()}
    return {"description": "pipegen's configuration: where the steps files are, what runs everything, the "
            "selection policy. Print this schema with `pipegen schema config`.", "type": "object",
            "properties": properties, "patternProperties": X_KEYS, "additionalProperties": False,
            "required": ["steps"]}
