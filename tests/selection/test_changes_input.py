"""Changed paths and key lists as users give them: normalised, or refused with a usage error, never silent."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from pipegen.cli import cli
from pipegen.errors import UsageError
from pipegen.selection.relative_paths import repo_relative

from ..helpers import git_repo, write_files

STEPS = """\
steps:
- label: Src
  key: src
  commands: [pytest]
  source_file_dependencies: [src/]
"""


@pytest.fixture
def root(tmp_path):
    write_files(tmp_path, {".buildkite/pipegen.yaml": "steps: [.buildkite/steps.yaml]\n",
                           ".buildkite/steps.yaml": STEPS})
    return tmp_path


def select(root, files, *args, env=None):
    return CliRunner().invoke(cli, ["select", "--root", str(root), "--format", "json", "--files-from", "-", *args],
                              input=files, env=env)


def test_path_forms_are_made_repository_relative(root):
    for given in ("./src/x.py", "src//x.py", f"{root}/src/x.py", "src/../src/x.py"):
        result = select(root, given + "\n")
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["changed_files"] == ["src/x.py"] and data["steps"][0]["action"] == "run", given


def test_a_path_outside_the_repository_is_a_usage_error(root, tmp_path):
    for given in ("../elsewhere.py", "/etc/passwd", "."):
        result = select(root, f"src/a.py\n{given}\n")
        assert result.exit_code == 2 and repr(given) in result.stderr, result.output
        assert "Traceback" not in result.output


def test_an_empty_list_is_a_warning(root):
    result = select(root, "")
    assert result.exit_code == 0
    assert "WARNING: no changed files given" in result.stderr
    assert any("no changed files given" in w for w in json.loads(result.stdout)["warnings"])
    assert "WARNING" not in select(root, "src/a.py\n").stderr


def test_repo_relative_is_pure():
    assert repo_relative(["a//b", "./a/b", "/r/a/b", "c"], "/r") == ["a/b", "c"]
    with pytest.raises(UsageError):
        repo_relative(["/elsewhere/x"], "/r")


@pytest.mark.parametrize("name", ["PIPEGEN_ONLY_STEP_KEYS", "VLLM_CI_ONLY_STEP_KEYS"])
@pytest.mark.parametrize("value, message", [
    ("[]", "non-empty JSON array"), ('"src"', "non-empty JSON array"), ('["src", "src"]', "duplicate step keys: src"),
    ('[""]', "invalid step key"), ("[1]", "invalid step key"), ("[src", "not valid JSON"),
])
def test_a_bad_key_list_is_a_usage_error(root, name, value, message):
    result = select(root, "src/a.py\n", env={name: value})
    assert result.exit_code == 2 and f"{name}" in result.stderr and message in result.stderr, result.output


def test_vllm_keys_follow_vllms_pattern(root):
    result = select(root, "", env={"VLLM_CI_ONLY_STEP_KEYS": '["src:x"]'})
    assert result.exit_code == 2 and "invalid step key" in result.stderr
    result = select(root, "", env={"VLLM_CI_ONLY_STEP_KEYS": '["src"]'})
    assert result.exit_code == 0 and json.loads(result.stdout)["steps"][0]["action"] == "run"


def test_dependency_entries_written_with_dot_slash_select_as_written_without(tmp_path):
    steps = STEPS.replace("[src/]", '["./src//", "!./src/skip.py", "./"]')
    git_repo(tmp_path, {".buildkite/pipegen.yaml": "steps: [.buildkite/steps.yaml]\n", ".buildkite/steps.yaml": steps,
                        "src/a.py": "", "src/skip.py": ""})
    actions = {f: json.loads(select(tmp_path, f + "\n").stdout)["steps"][0]["action"] for f in ("src/a.py", "src/skip.py")}
    assert actions == {"src/a.py": "run", "src/skip.py": "block"}  # './src//' is src/, '!./src/skip.py' excludes
    report = CliRunner().invoke(cli, ["check", "--root", str(tmp_path), "--format", "json"])
    stale = [f for f in json.loads(report.stdout)["findings"] if f["code"] == "stale-entry"]
    assert [(f["message"].split("'")[1], f["line"]) for f in stale] == [("./", 5)]  # a lone './' is kept, at its line
