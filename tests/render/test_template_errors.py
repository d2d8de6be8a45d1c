"""A --templates override that breaks the output: the error names the template, the step and the schema path."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from pipegen.cli import cli
from pipegen.render.blame import key_at_line
from tests.helpers import ROOT, write_files

STEPS = """\
group: G
steps:
- {label: A, key: a, commands: [x], source_file_dependencies: [src/]}
- {label: B, key: b, commands: [y], source_file_dependencies: [other/]}
"""


@pytest.fixture
def root(tmp_path):
    write_files(tmp_path, {".buildkite/pipegen.yaml": "steps: [.buildkite/steps.yaml]\n", ".buildkite/steps.yaml": STEPS})
    return tmp_path


def render_with(root, replacement):
    shipped = (ROOT / "templates" / "command.j2").read_text()
    assert "  key: {{ item.key }}\n" in shipped
    write_files(root, {"tpl/command.j2": shipped.replace("  key: {{ item.key }}\n", replacement, 1)})
    return CliRunner().invoke(cli, ["render", "--root", str(root), "--templates", str(root / "tpl"),
                                    "--files-from", "-"], input="src/x.py\n")


def test_invalid_yaml_names_the_template_and_the_step(root):
    result = render_with(root, "  key: {{ item.key }}\n  broken: [unclosed\n")
    assert result.exit_code == 1 and not result.stdout and "Traceback" not in result.output
    assert "not valid YAML" in result.stderr and "step 'a' was rendered by" in result.stderr
    assert f"{root / 'tpl' / 'command.j2'}" in result.stderr


def test_an_unknown_field_names_the_field_not_commands(root):
    result = render_with(root, "  key: {{ item.key }}\n  bogus_field: 1\n")
    assert result.exit_code == 1 and not result.stdout
    assert "data.steps[0].steps[0]: the mapping must not contain {'bogus_field'} properties" in result.stderr
    assert "step 'a' was rendered by" in result.stderr and "command.j2" in result.stderr
    assert "commands" not in result.stderr.split("fix:")[0].split("rendered by")[0]


def test_key_at_line():
    text = "steps:\n- group: G\n  steps:\n  - label: A\n    key: a\n    commands: [x]\n  - label: B\n    key: 'b'\n"
    assert [key_at_line(text, n) for n in range(1, 10)] == [None, None, None, "a", "a", "a", "b", "b", "b"]
