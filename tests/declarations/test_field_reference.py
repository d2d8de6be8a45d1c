"""The field reference (docs/hooks/fields.py) lists every field of every table the loader checks, and each field's
description and example come from its declaration: the example is a value its own checker and the JSON Schema
both accept."""

from __future__ import annotations

import functools
import importlib.util
import re
from typing import Any

import fastjsonschema
import pytest
import yaml

from pipegen.buildkite.schema import prepared
from pipegen.declarations.field import UNSET, Field
from pipegen.declarations.field_schema import described
from pipegen.declarations.labels import LABEL_FIELDS
from pipegen.declarations.steps_file import MIRROR_FIELDS
from pipegen.declarations.yamlio import load_text
from pipegen.dialects.own import config as own_config
from pipegen.dialects.own import steps as own_steps
from pipegen.dialects.own.schema import own_format_schema
from pipegen.dialects.vllm import config as vllm_config
from pipegen.dialects.vllm import steps as vllm_steps
from pipegen.hardware.inventory_fields import FAMILY_FIELDS, INVENTORY_FIELDS, ROUTE_FIELDS, TEMPLATE_FIELDS
from pipegen.hardware.template_fields import JOB_FIELDS
from pipegen.model import Location
from tests.helpers import ROOT

TABLES: dict[str, dict[str, Any]] = {
    "config": own_config.CONFIG_FIELDS, "rule": own_config.RULE_FIELDS, "label": LABEL_FIELDS,
    "steps file": own_steps.FILE_FIELDS, "step": own_steps.STEP_OWN_FIELDS, "mirror.amd": MIRROR_FIELDS,
    "inventory": INVENTORY_FIELDS, "family": FAMILY_FIELDS, "template": TEMPLATE_FIELDS, "job": JOB_FIELDS,
    "route": ROUTE_FIELDS, "vLLM config": vllm_config.CONFIG_FIELDS, "vLLM steps file": vllm_steps.FILE_FIELDS,
}  # in the page's order
FIELDS = [(table, name) for table, spec in TABLES.items() for name in spec]


def hook() -> Any:
    spec = importlib.util.spec_from_file_location("fields_hook", ROOT / "docs" / "hooks" / "fields.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_has_a_row_for_each_field_of_each_table() -> None:
    page = hook().page()
    rows = re.findall(r"^\| `([^`]+)` \|", page, re.M)
    assert len(rows) == sum(len(spec) for spec in TABLES.values())
    assert set(rows) == {name for _table, name in FIELDS}
    assert "| `timeout_in_minutes` | whole number >= 1, or one upload-time variable" in page
    assert "[steps.json](schema/steps.json)" in page and "yaml-language-server: $schema=" in page


def test_each_example_the_page_shows_is_yaml_of_the_declared_example() -> None:
    shown = re.findall(r"^\| `([^`]+)` \|.*\| `(.*)` \|$", hook().page(), re.M)
    declared = [(name, spec[name].example) for spec in TABLES.values() for name in spec]
    for (name, text), (same, example) in zip(shown, declared, strict=True):
        assert name == same and yaml.safe_load("{" + text.replace("\\|", "|") + "}") == {name: example}, text


@pytest.mark.parametrize(("table", "name"), FIELDS, ids=[f"{t}.{n}" for t, n in FIELDS])
def test_each_field_is_described_and_its_example_loads(table: str, name: str) -> None:
    field = TABLES[table][name]
    assert isinstance(field, Field) and field.doc.strip() and field.example is not UNSET
    located = load_text(yaml.safe_dump({name: field.example}), "example.yaml")[name]
    field(located, Location("example.yaml", 1, 1))  # a DeclarationError here: the example does not load
    if not table.startswith("vLLM"):  # the JSON Schema is pipegen's own format's
        examples()({f"{table}.{name}": field.example})


@functools.cache
def examples() -> Any:
    """A validator of each field's property schema, under the name `table.field`."""
    properties = {f"{table}.{name}": described(TABLES[table][name]) for table, name in FIELDS}
    return fastjsonschema.compile(prepared({"definitions": own_format_schema("steps")["definitions"],
                                            "properties": properties}))
