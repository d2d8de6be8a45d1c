"""The JSON Schema of a steps file of pipegen's own format (dialects/own/schema.py has the config's).

A step is read as dialects/own/steps.py reads it: a wait, block, input or trigger step by the key
that names its type (other_steps.kind_of, in the same order), checked against Buildkite's definition
of that type; any other item is a command step: pipegen's fields (STEP_OWN_FIELDS) and every other
field of Buildkite's command step, as Buildkite's schema defines it.
"""

from __future__ import annotations

from typing import Any

from pipegen.buildkite.step_fields import ALIASES
from pipegen.declarations import buildkite_step as bk
from pipegen.declarations import other_steps
from pipegen.declarations.field_schema import described, fields_object
from pipegen.declarations.steps_file import MIRROR_FIELDS
from pipegen.dialects.own.steps import FILE_FIELDS, STEP_OWN_FIELDS

STEP = "#/definitions/pipegen-step"
COMMAND = "#/definitions/pipegen-command-step"
# A `hardware:` target: FAMILY or FAMILY:GPUS (a count of 1 or more).
TARGET = {"type": "string", "pattern": "^[^:]+(:(?!0$)[0-9]+)?$"}
HARDWARE_CLASHES = ("device", "num_devices", "no_gpu", "mirror")  # own/steps.py _fan_out


def steps_file(buildkite: dict[str, Any]) -> dict[str, Any]:
    """The schema's body for a steps file (its definitions: the step kinds)."""
    shapes: dict[str, dict[str, Any]] = {
        "group": {"anyOf": [{"type": ["string", "number"]}, _group(buildkite)]},
        "depends_on": {"$ref": "#/definitions/dependsOn"},
        "steps": {"type": "array", "items": {"$ref": STEP}},
        "defaults": {**_command(buildkite, defaults=True), "type": ["object", "null"]},
    }
    return {
        "description": "A steps file of pipegen's format: a group, an optional file-level depends_on and steps. "
                       "Print this schema with `pipegen schema steps`.",
        "type": "object", "properties": {name: described(field, shapes[name]) for name, field in FILE_FIELDS.items()},
        "patternProperties": {"^x-": {"description": "The author's own: a place for YAML anchors."}},
        "additionalProperties": False, "required": ["steps"],
        # A command step needs a label (or Buildkite's `name`), unless the file's defaults give every step one.
        "if": {"required": ["defaults"], "properties": {"defaults": {"type": "object", "anyOf": [
            {"required": ["label"]}, {"required": ["name"]}]}}},
        "else": {"properties": {"steps": {"items": {
            "if": {"type": "object", "not": {"anyOf": [_named(kind) for kind in other_steps.KINDS]}},
            "then": {"if": {"required": ["name"]}, "else": {"required": ["label"]}}}}}},
        "definitions": {"pipegen-step": _step(buildkite), "pipegen-command-step": _command(buildkite)},
    }


def _group(buildkite: dict[str, Any]) -> dict[str, Any]:
    """A group written as a mapping: Buildkite's group-step fields without `steps`, its name once."""
    names = [n for n in buildkite["definitions"]["groupStep"]["properties"] if n != "steps"]
    return {"type": "object", "additionalProperties": False,
            "properties": {n: {"$ref": f"#/definitions/groupStep/properties/{n}"} for n in names},
            "oneOf": [{"required": [n]} for n in bk.GROUP_OWN[:3]]}


def _step(buildkite: dict[str, Any]) -> dict[str, Any]:
    """An item of `steps:`: the step type other_steps.kind_of finds, tried in its order."""
    out: dict[str, Any] = {"$ref": COMMAND}
    for kind in reversed(other_steps.KINDS):
        out = {"if": {"type": "object", **_named(kind)}, "then": _other(buildkite, kind), "else": out}
    return {"if": {"type": "string"}, "then": {"enum": ["wait", "waiter"]}, "else": {"type": "object", **out}}


def _named(kind: str) -> dict[str, Any]:
    """An item of this step type: its key, or `type:` naming it (other_steps.kind_of)."""
    names = ["wait", "waiter"] if kind == "wait" else [kind]
    typed = {"required": ["type"], "properties": {"type": {"enum": names}}}
    return {"anyOf": [{"required": [n]} for n in names] + [typed]}


def _other(buildkite: dict[str, Any], kind: str) -> dict[str, Any]:
    """A wait, block, input or trigger step: its Buildkite fields (a wait's `waiter`, a trigger's own two)."""
    definition = buildkite["definitions"][f"{kind}Step"]
    properties: dict[str, Any] = {n: {"$ref": f"#/definitions/{kind}Step/properties/{n}"}
                                  for n in definition["properties"]}
    out: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": properties}
    if kind == "wait":
        properties["waiter"] = {"$ref": "#/definitions/waitStep/properties/wait"}
        out["not"] = {"required": ["wait", "waiter"]}
    if kind == "trigger":
        properties.update({n: described(STEP_OWN_FIELDS[n]) for n in other_steps.OWN})
    if definition.get("required"):
        out["required"] = definition["required"]
    return out


def _command(buildkite: dict[str, Any], defaults: bool = False) -> dict[str, Any]:
    """A command step (its label: steps_file's rule) or (`defaults`) a steps file's defaults, which name no step."""
    theirs = buildkite["definitions"]["commandStep"]["properties"]
    properties: dict[str, Any] = {name: {"$ref": f"#/definitions/commandStep/properties/{name}"} for name in theirs}
    for name, field in STEP_OWN_FIELDS.items():
        # Buildkite's form of these is read too (depends_on's {step, allow_failure}, soft_fail's statuses)
        properties[name] = described(field, theirs[name] if name in bk.READ else _shape(name))
    properties["agents"] = {"allOf": [{"$ref": "#/definitions/commandStep/properties/agents"}, {"not": {
        "anyOf": [{"type": "object", "required": ["queue"]},  # the hardware's queue is pipegen's to choose
                  {"type": "array", "contains": {"type": "string", "pattern": "^queue(=|$)"}}]}}],
        "description": "Buildkite's agent tags, added to the hardware's (not `queue`: name the hardware)."}
    for alias, name in ALIASES.items():
        properties[alias] = properties[name]
    twice: list[dict[str, Any]] = [{"not": {"required": [alias, name]}} for alias, name in ALIASES.items()]
    clashes = [{"not": {"required": ["hardware", name]}} for name in HARDWARE_CLASHES]
    out: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False,
                           "allOf": twice + clashes,
                           "dependencies": {"concurrency": ["concurrency_group"], "concurrency_group": ["concurrency"],
                                            "num_nodes": ["num_devices"]}}
    if defaults:
        for name in bk.NOT_DEFAULTS:
            del properties[name]
        out["description"] = "Step fields every step of the file inherits where it does not set them."
    return out


def _shape(name: str) -> dict[str, Any] | None:
    """Where a step field's shape is more than its checker's type: the fan-out's targets, the AMD mirror."""
    if name == "hardware":
        return {"anyOf": [TARGET, {"type": "array", "items": {"anyOf": [TARGET, {"type": "number"}]}, "minItems": 1,
                           "uniqueItems": True}]}
    if name == "mirror":
        amd = fields_object(MIRROR_FIELDS, ("device",))
        return {"type": ["object", "null"], "properties": {"amd": amd}, "additionalProperties": False}
    return None
