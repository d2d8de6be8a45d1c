"""The JSON Schema of pipegen's own format (`pipegen schema`) accepts what the loader accepts and refuses what it
refuses: this repository's declarations, the golden fixtures' and imported ones validate; a misspelled field is
refused by both; a table of files and generated field values get one answer from both."""

from __future__ import annotations

import functools
import json
import random
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import fastjsonschema
import jsonschema
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pipegen.buildkite.schema import prepared
from pipegen.cli import cli
from pipegen.declarations import buildkite_step as bk
from pipegen.declarations.field_types import type_of
from pipegen.declarations.fields import minutes
from pipegen.declarations.yamlio import load_text
from pipegen.dialects.load import load
from pipegen.dialects.own.config import CONFIG_FIELDS
from pipegen.dialects.own.schema import own_format_problem, own_format_schema
from pipegen.dialects.own.steps import STEP_OWN_FIELDS
from pipegen.errors import PipegenError
from pipegen.model import Location
from tests.commands.test_import import PIPELINE
from tests.helpers import CLI_CONFIG, CLI_STEPS, RENDER_STEPS, ROOT, git_repo

CONFIG = "steps: [.buildkite/steps]\nhardware: .buildkite/hardware.yaml\n"
HARDWARE = "default: cpu\nfamilies:\n  cpu: {vendor: cpu, queue: q, template: t}\ntemplates:\n  t: {kind: plain}\n"
STEPS = "group: G\nsteps:\n  - label: A\n    commands: [a]\n    source_file_dependencies: [src/]\n"


def both(kind: str, data: Any) -> None:
    """fastjsonschema and the reference implementation (jsonschema) give the same answer: accepted."""
    assert own_format_problem(kind, data) is None
    jsonschema.Draft7Validator(own_format_schema(kind)).validate(data)


def test_the_schemas_are_draft_07_schemas() -> None:
    for kind in ("config", "steps"):
        jsonschema.Draft7Validator.check_schema(own_format_schema(kind))


def test_this_repositorys_declarations_validate() -> None:
    both("config", yaml.safe_load((ROOT / ".buildkite" / "pipegen.yaml").read_text()))
    files = sorted((ROOT / ".buildkite" / "steps").glob("*.yaml"))
    assert len(files) >= 3
    for path in files:
        both("steps", yaml.safe_load(path.read_text()))


def test_the_golden_fixtures_declarations_validate() -> None:
    both("config", yaml.safe_load(CONFIG))
    both("config", yaml.safe_load(CLI_CONFIG))
    both("steps", yaml.safe_load(CLI_STEPS))
    both("steps", yaml.safe_load(textwrap.dedent(RENDER_STEPS)))


def test_the_declarations_pipegen_import_writes_validate(tmp_path: Path) -> None:
    root = git_repo(tmp_path / "r", {".buildkite/pipeline.yml": PIPELINE, "src/a.go": "package a\n"})
    result = CliRunner().invoke(cli, ["import", str(root / ".buildkite/pipeline.yml")], env={"PIPEGEN_CACHE_DIR": ""})
    assert result.exit_code == 0, result.output
    out = root / ".buildkite" / "pipegen"
    both("config", yaml.safe_load((out / "pipegen.yaml").read_text()))
    files = sorted((out / "steps").iterdir())
    assert len(files) >= 2
    for path in files:
        both("steps", yaml.safe_load(path.read_text()))


def test_a_misspelled_field_is_refused_by_the_schema_and_the_loader(tmp_path: Path) -> None:
    assert own_format_problem("config", {"steps": ["s"], "base_brnch": "x"}) == \
        "data must not contain {'base_brnch'} properties"
    step = {"steps": [{"label": "a", "comands": ["x"]}]}
    assert own_format_problem("steps", step) == "data.steps[0] must not contain {'comands'} properties"
    assert not accepted_by_loader(tmp_path, STEPS.replace("commands", "comands"))


def test_pipegen_schema_prints_either_schema() -> None:
    for args, kind in (([], "config"), (["config"], "config"), (["steps"], "steps")):
        result = CliRunner().invoke(cli, ["schema", *args], catch_exceptions=False)
        assert result.exit_code == 0
        assert json.loads(result.stdout) == own_format_schema(kind)
    assert CliRunner().invoke(cli, ["schema", "step"]).exit_code == 2


def accepted_by_loader(tmp_path: Path, steps: str, config: str = CONFIG) -> bool:
    (tmp_path / ".buildkite" / "steps").mkdir(parents=True, exist_ok=True)
    (tmp_path / ".buildkite" / "pipegen.yaml").write_text(config)
    (tmp_path / ".buildkite" / "hardware.yaml").write_text(HARDWARE)
    (tmp_path / ".buildkite" / "steps" / "s.yaml").write_text(steps)
    try:
        load(str(tmp_path))
    except PipegenError:
        return False
    return True


STEP = "group: G\nsteps:\n  - label: A\n    source_file_dependencies: [src/]\n"
# (what, the config, the steps file, accepted)
CASES = [
    ("plain", CONFIG, STEPS, True),
    ("no steps", "hardware: h.yaml\n", STEPS, False),
    ("empty steps list", "steps: []\n", STEPS, False),
    ("x- key", CONFIG + "x-sets: {a: &a [src/]}\n", STEPS, True),
    ("unselected choice", CONFIG + "unselected: omit\n", STEPS, True),
    ("unselected wrong", CONFIG + "unselected: hide\n", STEPS, False),
    ("label rule", CONFIG + "labels: {perf: {only: [a]}}\n", STEPS, True),
    ("label asks nothing", CONFIG + "labels: {perf: {run_all: false}}\n", STEPS, False),
    ("label unknown field", CONFIG + "labels: {perf: {olny: [a]}}\n", STEPS, False),
    ("rule", CONFIG + "rules: [{name: r, changed: [d/], devices: ['mi*']}]\n", STEPS, True),
    ("rule without changed", CONFIG + "rules: [{name: r}]\n", STEPS, False),
    ("pipeline env", CONFIG + "pipeline: {env: {A: b}}\n", STEPS, True),
    ("pipeline steps", CONFIG + "pipeline: {steps: []}\n", STEPS, False),
    ("dependency set", CONFIG + "dependency_sets: {core: [src/]}\n",
     STEP + "    dependency_sets: [core]\n", True),
    ("globs wrong", CONFIG + "globs: regex\n", STEPS, False),
    ("env number", CONFIG, STEP + "    env: {A: 1, B: true}\n", True),
    ("env null", CONFIG, STEP + "    env: {A: ~}\n", False),
    ("env name with =", CONFIG, STEP + "    env: {'A=B': x}\n", False),
    ("timeout variable", CONFIG, STEP + "    timeout_in_minutes: ${T:-30}\n", True),
    ("timeout zero default", CONFIG, STEP + "    timeout_in_minutes: ${T:-0}\n", False),
    ("timeout offset Buildkite cannot read", CONFIG, STEP + "    timeout_in_minutes: ${T:?}\n", False),
    ("timeout name not a letter", CONFIG, STEP + "    timeout_in_minutes: $_T\n", False),
    ("timeout zero", CONFIG, STEP + "    timeout_in_minutes: 0\n", False),
    ("hardware targets", CONFIG, STEP + "    hardware: [cpu, 'h100:2']\n", True),
    ("hardware zero", CONFIG, STEP + "    hardware: ['h100:0']\n", False),
    ("hardware and device", CONFIG, STEP + "    hardware: [cpu]\n    device: cpu\n", False),
    ("concurrency alone", CONFIG, STEP + "    concurrency: 1\n", False),
    ("concurrency pair", CONFIG, STEP + "    concurrency: 1\n    concurrency_group: g\n", True),
    ("num_nodes alone", CONFIG, STEP + "    num_nodes: 2\n", False),
    ("agents queue", CONFIG, STEP + "    agents: {queue: q}\n", False),
    ("agents tag", CONFIG, STEP + "    agents: {os: linux}\n", True),
    ("buildkite field", CONFIG, STEP + "    if: build.branch == 'main'\n    artifact_paths: [a]\n", True),
    ("buildkite enum wrong", CONFIG, STEP + "    concurrency_method: eagre\n", False),
    ("alias and name", CONFIG, STEP + "    command: x\n    commands: [y]\n", False),
    ("name alias", CONFIG, "steps:\n  - name: A\n    command: x\n", True),
    ("no label", CONFIG, "steps:\n  - command: x\n", False),
    ("a label from defaults", CONFIG, "defaults: {label: L}\nsteps:\n  - {command: x, key: a}\n", True),
    ("a name from defaults", CONFIG, "defaults: {name: L}\nsteps:\n  - {command: x, key: a}\n  - wait\n", True),
    ("no label after a wait", CONFIG, "steps:\n  - wait\n  - {command: x}\n", False),
    ("depends_on allow_failure", CONFIG, STEP + "    depends_on: [{step: b, allow_failure: true}]\n"
     "  - label: B\n    key: b\n", True),
    ("depends_on item without step", CONFIG, STEP + "    depends_on: [{allow_failure: true}]\n", False),
    ("file depends_on item without step", CONFIG, "depends_on: [{allow_failure: true}]\n" + STEP, False),
    ("derive", CONFIG, STEP + "    derive: {python: [src/]}\n", True),
    ("derive no roots", CONFIG, STEP + "    derive: {use: check}\n", False),
    ("mirror", CONFIG, STEP + "    mirror: {amd: {device: mi325_1}}\n", True),
    ("mirror without device", CONFIG, STEP + "    mirror: {amd: {commands: [x]}}\n", False),
    ("mirror unknown", CONFIG, STEP + "    mirror: {intel: {device: x}}\n", False),
    ("wait, block, trigger", CONFIG, STEP + "  - wait\n  - block: Go\n    key: go\n  - trigger: other\n"
     "    source_file_dependencies: [x/]\n", True),
    ("block unknown field", CONFIG, STEP + "  - block: Go\n    comands: x\n", False),
    ("group mapping", CONFIG, "group: {group: G, key: g}\nsteps:\n  - label: A\n", True),
    ("group mapping two names", CONFIG, "group: {group: G, label: H}\nsteps:\n  - label: A\n", False),
    ("defaults", CONFIG, "defaults: {env: {A: b}, timeout_in_minutes: 5}\n" + STEP, True),
    ("defaults key", CONFIG, "defaults: {key: k}\n" + STEP, False),
    ("file unknown field", CONFIG, "gruop: G\n" + STEP[9:], False),
    ("group step in a file", CONFIG, STEP + "  - group: H\n    steps: [{label: B}]\n", False),
    ("empty list item", CONFIG, STEP + "    commands: [a, ~]\n", False),
]


@pytest.mark.parametrize(("what", "config", "steps", "accepted"), CASES, ids=[c[0] for c in CASES])
def test_the_schema_and_the_loader_agree(tmp_path: Path, what: str, config: str, steps: str, accepted: bool) -> None:
    by_loader = accepted_by_loader(tmp_path, steps, config)
    by_schema = (own_format_problem("config", yaml.safe_load(config)) is None
                 and own_format_problem("steps", yaml.safe_load(steps)) is None)
    assert (by_loader, by_schema) == (accepted, accepted)


# Values of every shape YAML gives, with the characters the checkers look at.
SCALARS = st.none() | st.booleans() | st.integers(-2, 40) | st.floats(allow_nan=False, allow_infinity=False) \
    | st.text("ab_=:-+?${}01 #", max_size=8) | st.sampled_from(["${T:-30}", "${T?}", "$T", "${T:-0}", "cpu", "h100:2"])
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.sampled_from(["python", "cargo", "use", "A", "amd", "device"]), inner,
                                        max_size=3), max_leaves=6)
# Fields whose value the loader reads from Buildkite's schema too (bk.READ), or beside other fields: the table
# above has those.
SKIPPED = {*bk.READ, "mirror", "hardware"}


FIELDS = [("config", name) for name in CONFIG_FIELDS if name not in ("steps", "rules", "labels", "pipeline",
                                                                         "hardware")] \
    + [("steps", name) for name in STEP_OWN_FIELDS if name not in SKIPPED]


def integral_float(value: Any) -> bool:
    if isinstance(value, list):
        return any(integral_float(v) for v in value)
    if isinstance(value, dict):
        return any(integral_float(v) for v in value.values())
    return isinstance(value, float) and value.is_integer()


@functools.cache
def field_validator(kind: str) -> Any:
    """Each field's property schema, alone (the pairs a step's fields form are the table's)."""
    schema = own_format_schema(kind)
    fields = schema["properties"] if kind == "config" else schema["definitions"]["pipegen-command-step"]["properties"]
    return fastjsonschema.compile(prepared({"definitions": schema["definitions"], "properties": fields}))


@pytest.mark.parametrize(("name", "value", "accepted"), [
    ("run_all", "#?", False), ("run_all", ["src/", "!#*"], False), ("run_all", "\\#?", True), ("run_all", "#a", True),
    ("run_all_exclude", [["#[ab]"]], False), ("run_all", "a/#?", True),
])
def test_a_glob_starting_with_hash_gets_one_answer(name: str, value: Any, accepted: bool) -> None:
    """gitignore reads a glob that starts with '#' as a comment (found by the property below: '#?')."""
    parsed = load_text(yaml.safe_dump({name: value}), "f.yaml")[name]
    assert _answers(CONFIG_FIELDS[name], parsed, field_validator("config"), {name: value}) == (accepted, accepted)


@settings(max_examples=250, deadline=None)
@given(st.data())
def test_generated_field_values_get_one_answer(data: st.DataObject) -> None:
    kind, name = data.draw(st.sampled_from(FIELDS))
    value = data.draw(VALUES)
    assume(not integral_float(value))  # JSON's 1.0 is the integer 1, YAML's a float that positive_int refuses
    field = (CONFIG_FIELDS if kind == "config" else STEP_OWN_FIELDS)[name]
    parsed = load_text(yaml.safe_dump({name: value}), "f.yaml")[name]  # located, as the loader reads it
    by_loader, by_schema = _answers(field, parsed, field_validator(kind), {name: value})
    assert by_loader == by_schema, (name, value)


# A step of a few fields, each valid or not, alone or in the pairs the loader reads together (a step "b" exists).
STEP_VALUES: dict[str, list[Any]] = {
    "label": ["A", 3, None, ["A"]], "name": ["A"], "key": ["a", "a b"], "command": ["x", ["x", "y"]],
    "commands": [["x"], "x", [None], {"x": 1}], "concurrency": [1, 0], "concurrency_group": ["g", 1.5],
    "num_nodes": [2, 0], "num_devices": [2, -1], "hardware": [["cpu"], ["cpu:0"], [], "cpu:2", ["cpu", "cpu"]],
    "device": ["cpu", None], "agents": [{"os": "linux"}, {"queue": "q"}, ["os=linux"], ["queue=q"], "x"],
    "depends_on": ["b", ["b"], [{"step": "b", "allow_failure": True}], [{"allow_failure": True}], 3],
    "soft_fail": [True, "true", [{"exit_status": 1}], [{"exit_status": "*"}], "yes"],
    "timeout_in_minutes": [5, "${T:-5}", "${T?}", "$T", "${T:-x}", "5 ", -5], "env": [{"A": "b"}, {"A": None}],
    "mirror": [{"amd": {"device": "mi325_1"}}, {"amd": {}}, {"amd": {"device": "x", "num_gpus": 2}}, None],
    "optional": [True, "true"], "if": ["build.branch == 'main'", 3], "comands": [["x"]], "x-a": [1],
}


@settings(max_examples=60, deadline=None)
@given(st.booleans(), st.dictionaries(st.sampled_from(sorted(STEP_VALUES)), st.just(0) | st.integers(0, 6),
                                      min_size=1, max_size=4))
def test_generated_steps_get_one_answer_from_the_schema_and_the_loader(labelled: bool, choice: dict[str, int]) -> None:
    step = {"label": "A"} if labelled else {}  # the first value of each field is valid: a step that loads is drawn
    step.update({name: STEP_VALUES[name][index % len(STEP_VALUES[name])] for name, index in choice.items()})
    steps = {"steps": [step, {"label": "B", "key": "b"}]}
    with tempfile.TemporaryDirectory() as folder:
        by_loader = accepted_by_loader(Path(folder), yaml.safe_dump(steps))
    assert by_loader == (own_format_problem("steps", steps) is None), (step, own_format_problem("steps", steps))


def test_the_timeout_pattern_reads_upload_variables_as_the_loader_does() -> None:
    """A fixed corpus of 20,000 '$...' texts: fields.minutes (upload_variable, Buildkite's parser) and the
    schema's pattern accept the same ones (a change of either shows here, not in an editor)."""
    rng = random.Random(0)
    texts = ["$" + "".join(rng.choice("ab_A:-+?${}01 #\\'") for _ in range(rng.randint(0, 9))) for _ in range(20000)]
    check = fastjsonschema.compile(prepared(type_of(minutes)[1]))
    differ = []
    for text in texts:
        by_loader, by_schema = _answers(minutes, text, check, text)
        if by_loader != by_schema:
            differ.append(text)
    assert differ == [] and sum(1 for t in texts if t.startswith("${")) > 1000


def _answers(checker: Any, value: Any, validate: Any, data: Any) -> tuple[bool, bool]:
    """Whether the loader's checker accepts `value` and whether the schema's validator accepts `data`."""
    try:
        checker(value, Location("f.yaml", 1, 1))
        by_loader = True
    except PipegenError:
        by_loader = False
    try:
        validate(data)
        by_schema = True
    except fastjsonschema.JsonSchemaValueException:
        by_schema = False
    return by_loader, by_schema
