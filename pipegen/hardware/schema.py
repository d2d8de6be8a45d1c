"""The JSON Schema (draft-07) of a hardware inventory (`.buildkite/hardware.yaml`): `pipegen schema hardware`.

Made from the tables hardware/inventory.py checks an inventory with (inventory_fields.py, template_fields.py),
as dialects/own/schema.py makes the config's. Nothing is required: a repository's inventory over a dialect's
preset (vLLM's) may leave out what the preset gives (a family's vendor, the families). The build context
(`build:`) is left to the loader.
"""

from __future__ import annotations

from typing import Any

from pipegen.declarations.field_schema import fields_object
from pipegen.declarations.field_types import STRING
from pipegen.hardware.inventory_fields import FAMILY_FIELDS, INVENTORY_FIELDS, ROUTE_FIELDS, TEMPLATE_FIELDS
from pipegen.hardware.template_fields import JOB_FIELDS
from pipegen.hardware.types import TEMPLATE_KINDS, VENDORS

DRAFT = "http://json-schema.org/draft-07/schema#"
MAPPING = {"type": ["object", "null"]}


def inventory_schema() -> dict[str, Any]:
    job = fields_object(JOB_FIELDS, dependencies={"runner": ["commands_env"], "commands_env": ["runner"]})
    setup = {"type": "object", "required": ["run"], "additionalProperties": False,
             "properties": {"run": STRING, "min_gpus": {"type": "integer", "minimum": 1}}}
    template = fields_object(TEMPLATE_FIELDS, shapes={
        "kind": {"enum": list(TEMPLATE_KINDS)}, "options": MAPPING, "pod_spec": MAPPING, "podSpec": MAPPING,
        "setup": {"type": ["array", "null"], "items": {"anyOf": [STRING, setup]}},
        "job": {**job, "type": ["object", "null"]},
    })
    family = fields_object(FAMILY_FIELDS, shapes={
        "vendor": {"enum": list(VENDORS)},
        "queues": {"type": "object", "propertyNames": {"pattern": "^[0-9]+$"}, "additionalProperties": STRING},
        "template": {"anyOf": [STRING, template]},
    }, allOf=[{"not": {"required": ["queue", "queues"]}}])
    route = fields_object(ROUTE_FIELDS, anyOf=[{"required": ["label"]}, {"required": ["key"]}])
    return {"$schema": DRAFT, "title": "pipegen hardware inventory (.buildkite/hardware.yaml)",
            "description": "The machines steps run on: families, their queues or agent tags, and the templates "
                           "that wrap their jobs. Print this schema with `pipegen schema hardware`.",
            **fields_object(INVENTORY_FIELDS, shapes={
                "templates": {"type": ["object", "null"], "additionalProperties": template},
                "families": {"type": "object", "additionalProperties": family},
                "routes": {"type": ["array", "null"], "items": route},
                "build": MAPPING,
            })}
