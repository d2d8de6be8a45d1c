"""pipegen's own format speaks every Buildkite command-step field: validated at load, merged, rendered."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipegen.buildkite.interpolation import interpolate
from pipegen.buildkite.matrix import combinations, size
from pipegen.buildkite.step_fields import ALIASES, field_names, field_schemas
from tests.helpers import assert_fast_dialect, assert_valid, by_key, render, render_repo
from tests.render.schema_values import values

# Fields pipegen reads or writes itself; every other schema field passes through verbatim.
OWN = {"key", "label", "commands", "depends_on", "agents", "env", "retry", "soft_fail", "parallelism",
       "concurrency", "concurrency_group", "timeout_in_minutes", "plugins", "skip", *ALIASES}
PASSED = sorted(field_names() - OWN)


def step_yaml(fields: dict, key: str = "s") -> str:
    """A steps file with one step of these extra fields (JSON is YAML)."""
    step = {"label": "S", "key": key, "hardware": ["cpu"], "commands": ["true"], **fields}
    # Not allow_unicode: PyYAML would write a NEL (\x85) raw, and read it back as a line break.
    return yaml.safe_dump({"group": "G", "steps": [step]}, sort_keys=False)


def rendered_step(tmp_path, fields: dict, *args: str) -> dict:
    result = render(render_repo(tmp_path, step_yaml(fields)), "--all", *args)
    assert result.exit_code == 0, result.output
    return by_key(assert_valid(result.stdout))["s"]


def uploaded(value):
    """What Buildkite reads after upload (its interpolation, no variables set)."""
    if isinstance(value, str):
        return interpolate(value, {})
    if isinstance(value, dict):
        return {uploaded(k): uploaded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [uploaded(v) for v in value]
    return value


EXAMPLES = {
    "artifact_paths": ["out/*.xml", "logs/**/*"],
    "branches": "main release/*",
    "if": 'build.branch == "main" && build.message !~ /skip/',
    "allow_dependency_failure": True,
    "cancel_on_build_failing": True,
    "concurrency_method": "eager",
    "priority": -3,
    "notify": [{"slack": "#ci"}, {"github_commit_status": {"context": "x"}}],
    "matrix": {"setup": {"py": ["3.11", "3.12"], "os": ["linux"]}, "adjustments": [{"with": {"py": "3.13", "os": "linux"}}]},
    "if_changed": ["src/**"],
    "cache": ["node_modules"],
    "image": "python:3.12",
    "type": "command",
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_each_field_round_trips(tmp_path, name):
    step = rendered_step(tmp_path, {name: EXAMPLES[name]})
    assert step[name] == EXAMPLES[name]


def test_merged_with_the_hardware_template_and_the_defaults(tmp_path):
    steps = """
    group: G
    defaults:
      env: {A: "1", B: "default"}
      agents: {os: linux}
      priority: 2
    steps:
      - label: S
        key: s
        hardware: [cpu, h100:2]
        commands: ["true"]
        env: {B: "mine"}
        agents: ["arch=x86"]
        plugins: [{junit-annotate#v2.4.1: {artifacts: "out/*.xml"}}, "other#v1"]
        if: build.branch == "main"
    """
    data = assert_valid(render(render_repo(tmp_path, steps), "--all").stdout)
    steps_by_key = by_key(data)
    for key, queue in (("s-cpu", "cpu-q"), ("s-h100", "h100-2")):
        step = steps_by_key[key]
        assert step["agents"] == {"queue": queue, "os": "linux", "arch": "x86"}
        assert step["env"] == {"A": "1", "B": "mine"}
        assert step["priority"] == 2 and step["if"] == 'build.branch == "main"'
        names = [next(iter(p)) if isinstance(p, dict) else p for p in step["plugins"]]
        assert names[-2:] == ["junit-annotate#v2.4.1", "other#v1"] and len(names) == 3  # the family's first


def test_a_step_cannot_set_its_queue(tmp_path):
    result = render(render_repo(tmp_path, step_yaml({"agents": {"queue": "mine"}})), "--all")
    assert result.exit_code == 2
    assert "steps.yaml:" in result.output and "hardware" in result.output


@pytest.mark.parametrize("fields, said", [
    ({"priority": "high"}, ["'priority'", "a whole number"]),
    ({"concurrency_method": "eagre"}, ["'concurrency_method'", "did you mean 'eager'?"]),
    ({"cancel_on_build_failin": True}, ["unknown step field 'cancel_on_build_failin'",
                                        "did you mean 'cancel_on_build_failing'?"]),
    ({"branches": {"main": 1}}, ["'branches'", "a string or a list of (a string)"]),
    ({"soft_fail": [{"exit_status": "three"}]}, ["'soft_fail[0].exit_status'"]),
    ({"matrix": {"setup": {"py": [[1]]}}}, ["'matrix.setup.py[0]'"]),
    ({"artifact_paths": 3}, ["'artifact_paths'"]),
    ({"if": ["a"]}, ["'if'", "a string"]),
    ({"depends_on": [{"step": "x", "allow_failure": "maybe"}]}, ["'depends_on[0].allow_failure'"]),
    ({"retry": {"automatic": {"limit": 99}}}, ["'retry"]),
    ({"command": "a", "commands": ["b"]}, ["other name for 'commands'"]),
])
def test_malformed_values_are_refused_at_load_with_the_line(tmp_path, fields, said):
    result = render(render_repo(tmp_path, step_yaml(fields)), "--all")
    assert result.exit_code == 2, result.output
    assert re.search(r"\.buildkite/steps/steps\.yaml:\d+:\d+: ", result.output)
    assert "Traceback" not in result.output
    for text in said:
        assert text in result.output


def test_a_nested_error_names_its_own_line(tmp_path):
    steps = "steps:\n  - label: S\n    commands: [x]\n    matrix:\n      setup:\n        py:\n          - [1]\n"
    result = render(render_repo(tmp_path, steps), "--all")
    assert result.exit_code == 2 and "steps.yaml:7:13:" in result.output


def test_key_cannot_be_a_default(tmp_path):
    result = render(render_repo(tmp_path, "defaults: {key: k}\nsteps:\n  - {label: S, commands: [x]}\n"), "--all")
    assert result.exit_code == 2 and "steps.yaml:1:" in result.output


def test_aliases_are_buildkite_s_other_names(tmp_path):
    repo = render_repo(tmp_path, "steps:\n  - {name: Named, identifier: s, command: make, hardware: [cpu]}\n")
    step = by_key(assert_valid(render(repo, "--all").stdout))["s"]
    assert step["label"] == "Named" and step["commands"][-1] == "make"


def test_depends_on_allow_failure_and_external_steps(tmp_path):
    steps = """
    steps:
      - {label: A, key: a, commands: [x]}
      - {label: B, key: b, commands: [x], depends_on: [bootstrap, {step: a, allow_failure: true}]}
    """
    repo = render_repo(tmp_path, steps, config="external_steps: [bootstrap]\n")
    text = render(repo, "--all").stdout
    step = by_key(assert_valid(text))["b"]
    assert step["depends_on"] == ["bootstrap", {"step": "a", "allow_failure": True}]
    assert_fast_dialect(text)  # read back without PyYAML (an item of a flow mapping once sent it there)


def test_an_unknown_dependency_mentions_external_steps(tmp_path):
    repo = render_repo(tmp_path, "steps:\n  - {label: B, key: b, commands: [x], depends_on: bootstrap}\n")
    result = render(repo, "--all")
    assert result.exit_code == 2 and "external_steps" in result.output


def test_matrix_counts_every_combination_toward_the_limit(tmp_path):
    matrix = {"setup": {"a": list(range(10)), "b": list(range(10))},
              "adjustments": [{"with": {"a": "0", "b": "0"}, "skip": True}, {"with": {"a": "x", "b": "y"}}]}
    assert size(matrix) == 100
    assert combinations(matrix)[-1].name == "a=x,b=y"
    first = render(render_repo(tmp_path / "one", step_yaml({"matrix": matrix})), "--all")
    assert "101 of 500 jobs" in first.stdout  # the group and 100 combinations: one skipped, one added
    assert size({"setup": ["a", "b"], "adjustments": [{"with": ["x", "y"]}]}) == 3  # as the schema allows it
    big = {"setup": {"a": list(range(30)), "b": list(range(20))}}
    result = render(render_repo(tmp_path / "two", step_yaml({"matrix": big})), "--all")
    assert result.exit_code == 1 and "601" in result.output


def test_byte_identical_for_the_same_input(tmp_path):
    repo = render_repo(tmp_path, step_yaml(EXAMPLES))
    assert render(repo, "--all").stdout == render(repo, "--all").stdout


# --------------------------------------------------------------------------- drawn from the schema


def _field_values():
    from pipegen.buildkite.step_fields import _root

    return {name: values(field_schemas()[name], _root()) for name in PASSED}


def _small(fields: dict) -> bool:
    """Not too many matrix jobs, and no string that no escaping delivers (a backslash before a `$`:
    test_upload_interpolation.py shows its refusal)."""
    from pipegen.buildkite.upload_escape import Dollars, strings

    return ("matrix" not in fields or size(fields["matrix"]) <= 50) and \
        not any(Dollars().problem(text) for text in strings(fields))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_fields_drawn_from_the_schema_load_render_valid_and_parse_back_equal(tmp_path_factory, data):
    fields = data.draw(st.fixed_dictionaries({}, optional=_field_values()).filter(_small))
    tmp = tmp_path_factory.mktemp("drawn")
    step = rendered_step(tmp, fields)
    for name, value in fields.items():
        assert uploaded(step[name]) == value, name
    assert yaml.safe_load(yaml.safe_dump(step)) == step


def test_select_notes_that_buildkite_may_still_skip_a_conditional_step(tmp_path):
    from click.testing import CliRunner

    from pipegen.cli import cli

    repo = render_repo(tmp_path, step_yaml({"if": 'build.branch == "main"', "branches": ["main", "rel/*"]}))
    result = CliRunner().invoke(cli, ["select", "--root", str(repo), "--all", "--files-from", "-"], input="")
    assert 'Buildkite may still skip it (if: build.branch == "main")' in result.output
    assert "Buildkite may still skip it (branches: main rel/*)" in result.output
    result = CliRunner().invoke(cli, ["select", "--root", str(repo), "--all", "--files-from", "-", "--format",
                                      "json"], input="")
    step = json.loads(result.stdout)["steps"][0]
    assert [r["rule"] for r in step["reasons"]] == ["run-all", "buildkite-condition", "buildkite-condition"]


def test_check_does_not_call_external_steps_dangling(tmp_path):
    from click.testing import CliRunner

    from pipegen.cli import cli

    repo = render_repo(tmp_path, "steps:\n  - {label: B, key: b, commands: [x], depends_on: bootstrap}\n",
                     config="external_steps: [bootstrap]\n")
    listing = tmp_path / "tracked.txt"
    listing.write_text(".buildkite/steps/steps.yaml\n")
    result = CliRunner().invoke(cli, ["check", "--root", str(repo), "--tracked-files", str(listing)])
    assert result.exit_code in (0, 1) and "bootstrap" not in result.output, result.output


BAD = [{"not": {"this": 1}}, 12345, [[{}]], "text", True, None]  # a mapping first: numbers pass as text


def _refused(name: str):
    """A value Buildkite's schema refuses for this field (checked by jsonschema, independently of pipegen)."""
    import jsonschema

    from pipegen.buildkite.step_fields import _root

    check = jsonschema.Draft7Validator({**field_schemas()[name], "definitions": _root()["definitions"]})
    return next((v for v in BAD if not check.is_valid(v)), None)


@pytest.mark.parametrize("name", sorted(n for n in field_names() - set(ALIASES) if _refused(n) is not None))
def test_every_field_refuses_a_malformed_value_at_its_line(tmp_path, name):
    steps = "steps:\n  - label: S\n    commands: [x]\n    " + name + ": " + json.dumps(_refused(name)) + "\n"
    result = render(render_repo(tmp_path, steps), "--all")
    assert result.exit_code == 2, result.output
    assert ".buildkite/steps/steps.yaml:4:" in result.output and name in result.output
    assert "Traceback" not in result.output


def test_render_through_a_subprocess_refuses_a_bad_field_with_exit_2(tmp_path):
    import subprocess
    import sys

    repo = render_repo(tmp_path, step_yaml({"priority": "high"}))
    proc = subprocess.run([sys.executable, "-m", "pipegen", "render", "--all", "--files-from", "-"], cwd=repo,
                          input="", capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert "steps.yaml:" in proc.stderr and "'priority'" in proc.stderr and "Traceback" not in proc.stderr
