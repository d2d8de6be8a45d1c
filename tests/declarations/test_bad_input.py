"""Bad input gives one clear error, exit 2, never a traceback: invalid globs and regexes, YAML bombs."""

from __future__ import annotations

import time

import pytest
from click.testing import CliRunner

from pipegen.cli import cli

from ..helpers import write_files


def run(root, *args):
    listing = "--tracked-files" if args[0] == "check" else "--files-from"
    return CliRunner().invoke(cli, [*args, "--root", str(root), listing, "-"], input="src/a.py\n")


def assert_declaration_error(result, where, message):
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit), result.exception
    assert where in result.output and message in result.output, result.output


@pytest.mark.parametrize("command", [["select"], ["render"], ["check"], ["why", "src/a.py"], ["run", "--dry-run"]])
def test_an_invalid_glob_names_its_line_and_column(tmp_path, command):
    write_files(tmp_path, {".buildkite/pipegen.yaml": "steps: [.buildkite/steps.yaml]\n",
                           ".buildkite/steps.yaml": "steps:\n- label: A\n  commands: [x]\n"
                                                    "  source_file_dependencies:\n  - src/\n  - src/[pkg/*.py\n"})
    result = run(tmp_path, *command)
    assert_declaration_error(result, ".buildkite/steps.yaml:6:5", "invalid glob 'src/[pkg/*.py'")
    assert "close the '['" in result.output


def test_an_invalid_config_glob_and_vllm_regex(tmp_path):
    write_files(tmp_path, {".buildkite/pipegen.yaml": "steps: [s.yaml]\nrun_all: ['!x[']\n",
                           "s.yaml": "steps:\n- {label: A, commands: [x]}\n"})
    assert_declaration_error(run(tmp_path, "select"), "pipegen.yaml:2:11", "invalid glob '!x['")
    vllm = tmp_path / "vllm"
    write_files(vllm, {".buildkite/ci_config.yaml": "name: v\njob_dirs: [j]\nrun_all_patterns:\n- '(unclosed'\n",
                       "j/a.yaml": "steps:\n- {label: A, commands: [x]}\n"})
    for command in ("select", "check"):
        assert_declaration_error(run(vllm, command), "ci_config.yaml:4:3", "invalid regular expression '(unclosed'")


BOMB = """\
templates:
  box:
    kind: docker
    image: x
    options:
      a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
      b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
      c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
      d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
      e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
      f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
      g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
      h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
      i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
families:
  cpu: {vendor: cpu, queue: q, template: box}
"""


@pytest.mark.parametrize("inventory, where, message", [
    (BOMB, ".buildkite/hardware.yaml:", "aliases expand to more than"),
    ("families: &f\n  cpu: {vendor: cpu, queue: q, template: plain}\n  gpu: *f\n", ".buildkite/hardware.yaml:",
     "a YAML alias (*name) refers to a mapping or list that contains it"),
    ("families:\n  cpu: {vendor: cpu, queue: q, template: {kind: docker, image: x, options: {o: "
     + "[" * 400 + "]" * 400 + "}}}\n", ".buildkite/hardware.yaml:2:", "nested deeper than"),
])
@pytest.mark.parametrize("command", ["render", "check", "select"])
def test_alias_bombs_and_deep_nesting_are_refused_fast(tmp_path, inventory, where, message, command):
    write_files(tmp_path, {".buildkite/pipegen.yaml": "steps: [.buildkite/steps.yaml]\n",
                           ".buildkite/steps.yaml": "steps:\n- {label: A, commands: [x], source_file_dependencies: [src/]}\n",
                           ".buildkite/hardware.yaml": inventory})
    start = time.perf_counter()
    result = run(tmp_path, command)
    assert time.perf_counter() - start < 1
    if command == "select":  # select never reads the inventory
        assert result.exit_code == 0, result.output
        return
    assert_declaration_error(result, where, message)
