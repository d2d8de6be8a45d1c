"""`pipegen schema hardware`: the JSON Schema of a hardware inventory, made from the tables the loader checks it
with, accepts this repository's, the vLLM preset's and the tests' inventories, refuses a misspelled field, and
answers as the loader does on a table of inventories."""

from __future__ import annotations

import json

import fastjsonschema
import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from pipegen.buildkite.schema import prepared
from pipegen.cli import cli
from pipegen.declarations.yamlio import load_text
from pipegen.errors import PipegenError
from pipegen.hardware.inventory import parse_inventory
from pipegen.hardware.schema import inventory_schema
from tests.helpers import RENDER_HARDWARE, ROOT

VALIDATE = fastjsonschema.compile(prepared(inventory_schema()))


def accepted(data: object) -> bool:
    try:
        VALIDATE(data)
    except fastjsonschema.JsonSchemaValueException:
        return False
    return True


@pytest.mark.parametrize("path", [ROOT / ".buildkite" / "hardware.yaml",
                                  ROOT / "pipegen" / "dialects" / "vllm" / "hardware.yaml"], ids=["repo", "vllm"])
def test_the_shipped_inventories_validate(path) -> None:
    data = yaml.safe_load(path.read_text())
    jsonschema.Draft7Validator.check_schema(inventory_schema())
    jsonschema.Draft7Validator(inventory_schema()).validate(data)
    assert accepted(data)
    assert accepted(yaml.safe_load(RENDER_HARDWARE))


def test_pipegen_schema_hardware_prints_it_and_a_misspelled_field_is_refused() -> None:
    result = CliRunner().invoke(cli, ["schema", "hardware"], catch_exceptions=False)
    assert result.exit_code == 0 and json.loads(result.stdout) == json.loads(json.dumps(inventory_schema()))
    with pytest.raises(fastjsonschema.JsonSchemaValueException, match=r"must not contain \{'queu'\}"):
        VALIDATE({"families": {"cpu": {"vendor": "cpu", "queu": "q"}}})


FAMILY = "families:\n  cpu: {vendor: cpu, queue: q}\n"
CASES = [
    ("plain", FAMILY, True),
    ("unknown top field", FAMILY + "defualt: cpu\n", False),
    ("vendor wrong", "families:\n  g: {vendor: nvida, queue: q}\n", False),
    ("queue and queues", "families:\n  g: {vendor: amd, queue: q, queues: {1: a}}\n", False),
    ("queues", "families:\n  g: {vendor: amd, queues: {1: a, 8: b}}\n", True),
    ("agents", "families:\n  g: {vendor: nvidia, agents: {queue: x, cuda: '*'}}\n", True),
    ("inline template", "families:\n  g: {vendor: cpu, queue: q, template: {kind: plain, wrap: 'x {commands}'}}\n",
     True),
    ("template kind wrong", FAMILY + "templates:\n  t: {kind: podman}\n", False),
    ("template unknown field", FAMILY + "templates:\n  t: {kind: plain, imag: x}\n", False),
    ("template job", FAMILY + "templates:\n  t: {kind: plain, job: {banners: true, lost_agent_retry: 1}}\n", True),
    ("job runner alone", FAMILY + "templates:\n  t: {kind: plain, job: {runner: r}}\n", False),
    ("job retry_mode wrong", FAMILY + "templates:\n  t: {job: {retry_mode: merge}}\n", False),
    ("setup", FAMILY + "templates:\n  t: {setup: [a, {run: b, min_gpus: 2}]}\n", True),
    ("setup min_gpus zero", FAMILY + "templates:\n  t: {setup: [{run: b, min_gpus: 0}]}\n", False),
    ("route", FAMILY + "routes: [{label: ':docker:*', family: cpu}]\n", True),
    ("route without label or key", FAMILY + "routes: [{family: cpu}]\n", False),
    ("route unknown field", FAMILY + "routes: [{lable: x, family: cpu}]\n", False),
]


@pytest.mark.parametrize(("what", "text", "ok"), CASES, ids=[c[0] for c in CASES])
def test_the_schema_and_the_loader_agree(what: str, text: str, ok: bool) -> None:
    try:
        parse_inventory(load_text(text, "hardware.yaml"), "hardware.yaml")
        by_loader = True
    except PipegenError:
        by_loader = False
    assert (by_loader, accepted(yaml.safe_load(text))) == (ok, ok)
