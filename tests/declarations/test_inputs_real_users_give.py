"""Steps folders as users fill them, and several mistakes at once: nothing skipped without a word."""

from __future__ import annotations

import json

from click.testing import CliRunner

from pipegen.cli import cli
from pipegen.dialects.load import load

from ..helpers import write_files

STEP = "steps:\n- label: {name}\n  key: {name}\n  commands: [pytest]\n  source_file_dependencies: [src/{name}/]\n"


def run(root, *args, files=""):
    """The command with `files` on stdin: changed files for select, tracked files for check."""
    listing = "--tracked-files" if args[0] == "check" else "--files-from"
    return CliRunner().invoke(cli, [*args, "--root", str(root), listing, "-"], input=files)


def test_yml_and_yaml_steps_files_both_load(tmp_path):
    write_files(tmp_path, {".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\n",
                           ".buildkite/steps/a.yaml": STEP.format(name="a"),
                           ".buildkite/steps/b.yml": STEP.format(name="b"),
                           ".buildkite/steps/notes.YAML": STEP.format(name="c"), ".buildkite/steps/.gitkeep": "",
                           ".buildkite/steps/build.sh": "make\n", ".buildkite/steps/README": "not steps\n"})
    decl = load(str(tmp_path))
    assert [s.key for s in decl.steps] == ["a", "b"]
    # A script or a note beside the steps files is no declaration (vLLM's image_build/*.sh): no warning.
    assert [(w.code, w.location.file) for w in decl.warnings] == [("ignored-file", ".buildkite/steps/notes.YAML")]
    result = run(tmp_path, "select", "--format", "json", files="src/b/x.py\n")
    assert {s["key"]: s["action"] for s in json.loads(result.stdout)["steps"]} == {"a": "block", "b": "run"}
    result = run(tmp_path, "check", files="src/a/x.py\nsrc/b/x.py\n")
    assert "ignored-file" in result.stdout and "notes.YAML" in result.stdout


def test_vllm_job_dirs_read_only_yaml_like_its_generator_and_say_so(tmp_path):
    write_files(tmp_path, {".buildkite/ci_config.yaml": "name: x\njob_dirs: [.buildkite/areas]\n",
                           ".buildkite/areas/a.yaml": STEP.format(name="a"),
                           ".buildkite/areas/b.yml": STEP.format(name="b")})
    decl = load(str(tmp_path))
    assert [s.key for s in decl.steps] == ["a"]
    assert [(w.code, w.location.file) for w in decl.warnings] == [("ignored-file", ".buildkite/areas/b.yml")]
    assert "rename it to .yaml" in decl.warnings[0].fix


def test_check_reports_every_files_declaration_error_in_one_pass(tmp_path):
    bad = "steps:\n- label: {name}\n  {field}: [pytest]\n"
    write_files(tmp_path, {".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\n",
                           ".buildkite/steps/a.yaml": bad.format(name="a", field="comands"),
                           ".buildkite/steps/b.yaml": bad.format(name="b", field="commnds"),
                           ".buildkite/steps/c.yaml": bad.format(name="c", field="commandz"),
                           ".buildkite/steps/d.yaml": STEP.format(name="d")})
    result = run(tmp_path, "check", "--format", "json", files="src/d/x.py\n")
    assert result.exit_code == 2, result.output
    findings = json.loads(result.stdout)["findings"]
    assert [(f["code"], f["file"], f["line"]) for f in findings] == [
        ("declaration-error", f".buildkite/steps/{n}.yaml", 3) for n in "abc"]
    assert all("did you mean 'command" in f["fix"] for f in findings)  # commands, or Buildkite's alias command
    result = run(tmp_path, "select", files="")
    assert result.exit_code == 2 and "3 declaration errors" in result.stderr
    assert all(f".buildkite/steps/{n}.yaml:3:3" in result.stderr for n in "abc") and "Traceback" not in result.output


def test_check_outside_git_suggests_tracked_files(tmp_path):
    write_files(tmp_path, {".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\n",
                           ".buildkite/steps/a.yaml": STEP.format(name="a")})
    result = CliRunner().invoke(cli, ["check", "--root", str(tmp_path)])
    assert result.exit_code == 2 and "not a git repository" in result.stderr
    assert "--tracked-files" in result.stderr and "--files-from" not in result.stderr


def test_every_steps_error_in_one_file_is_reported(tmp_path):
    write_files(tmp_path, {".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\n",
                           ".buildkite/steps/a.yaml": "steps:\n- {label: a, comands: [x]}\n- {label: b, commands: [y]}\n"
                                                      "- {key: c, commands: [z]}\n- {label: d, timeout_in_minutes: -1}\n"})
    result = run(tmp_path, "check", "--format", "json")
    assert result.exit_code == 2, result.output
    found = [(f["line"], f["message"]) for f in json.loads(result.stdout)["findings"]]
    assert [line for line, _ in found] == [2, 4, 5], found
    assert "no 'label'" in found[1][1]


def test_a_steps_folder_without_steps_files_is_an_error(tmp_path):
    """Steps files moved, the config not updated: every build had run nothing, check clean."""
    write_files(tmp_path, {".buildkite/pipegen.yaml": "steps: [.buildkite/steps, .buildkite/more]\n",
                           ".buildkite/steps/a.yaml": STEP.format(name="a"), ".buildkite/more/build.sh": "make\n"})
    for command in ("select", "check"):
        result = run(tmp_path, command, files="src/a/x.py\n")
        assert result.exit_code == 2 and ".buildkite/pipegen.yaml:1:27:" in result.output, result.output
        assert "steps folder '.buildkite/more' holds no steps file (*.yaml or *.yml)" in result.output
    write_files(tmp_path, {".buildkite/ci_config.yaml": "name: x\njob_dirs: [.buildkite/more]\n"})
    (tmp_path / ".buildkite/pipegen.yaml").unlink()
    result = run(tmp_path, "select", files="src/a/x.py\n")
    assert result.exit_code == 2 and "steps folder '.buildkite/more' holds no steps file (*.yaml)" in result.output
