"""`--format json` of every command: one document, `version` first, exactly the fields of its JSON Schema
(pipegen/json_output.py); on a user's error nothing on stdout (check: its report of the error), one message."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from pipegen.cli import SCHEMA_OUTPUTS, cli
from pipegen.json_output import SCHEMAS, VERSION
from tests.helpers import CLI_CONFIG, CLI_STEPS, INVENTORY, commit_files, git_repo, invoke

PIPELINE = """\
steps:
  - label: test
    command: make test
    if_changed: "src/**"
    agents: {queue: gpu}
  - wait
  - label: deploy
    command: ./deploy
    foo: bar
"""


def import_(*args: str) -> Any:
    """`pipegen import` (no --root: the repository is the one --out is in)."""
    return CliRunner().invoke(cli, ["import", *args, "--format", "json"], env={"PIPEGEN_CACHE_DIR": ""},
                              catch_exceptions=False)


def validate(command: str, data: Any) -> dict[str, Any]:
    jsonschema.Draft202012Validator(SCHEMAS[command]).validate(data)
    assert next(iter(data)) == "version" and data["version"] == VERSION
    return data


def as_json(command: str, result: Any, code: int = 0) -> dict[str, Any]:
    assert result.exit_code == code, result.output
    return validate(command, json.loads(result.stdout))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = git_repo(tmp_path / "repo", {".buildkite/pipegen.yaml": CLI_CONFIG + INVENTORY,
                                        ".buildkite/steps/tests.yaml": CLI_STEPS, "src/core/a.py": "",
                                        ".buildkite/pipeline.yml": PIPELINE})
    commit_files(root, {"src/core/a.py": "x = 1\n"}, "touch core")
    return root


@pytest.mark.parametrize("schema", sorted(SCHEMAS))
def test_each_schema_is_a_valid_schema_that_forbids_undocumented_fields(schema: str) -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMAS[schema])
    errors = jsonschema.Draft202012Validator(SCHEMAS[schema]).iter_errors({"version": VERSION, "undocumented": 1})
    assert "additionalProperties" in {error.validator for error in errors}


def test_every_command_prints_its_schema(repo: Path) -> None:
    """All six through the real CLI, on a real repository, each output against its schema."""
    select = as_json("select", invoke(repo, "select", "--base", "HEAD~1", "--format", "json"))
    assert {s["key"]: s["action"] for s in select["steps"]}["core"] == "run"
    why = as_json("why", invoke(repo, "why", "src/core/a.py", "README.md", "pyproject.toml", "--step", "core",
                                "--format", "json"))
    assert [p["verdict"] for p in why["paths"]] == ["steps", "docs-only", "run-all"] and why["steps"][0]["key"] == "core"
    result = invoke(repo, "check", "--format", "json")
    check = validate("check", json.loads(result.stdout))
    assert result.exit_code == (1 if check["errors"] else 0) and check["findings"]
    audit = as_json("audit", invoke(repo, "audit", "--last", "2", "--compare", "HEAD", "--format", "json"))
    assert len(audit["commits"]) == 2 and audit["compare"]["ref"] == "HEAD"
    run = as_json("run", invoke(repo, "run", "--hardware", "cpu", "--base", "HEAD~1", "--dry-run", "--format", "json"))
    assert {job["step"] for job in run["jobs"]} == {"lint", "core"}
    data = as_json("import", import_(str(repo / ".buildkite/pipeline.yml"), "--out", str(repo / "ci")), code=1)
    assert data["not_carried"][0]["file"] == ".buildkite/pipeline.yml" and not data["proven"]  # from outside the repository


def test_why_with_only_steps_has_no_paths_field(repo: Path) -> None:
    data = as_json("why", invoke(repo, "why", "--step", "lint", "--format", "json"))
    assert "paths" not in data and [s["key"] for s in data["steps"]] == ["lint"]


@pytest.mark.parametrize("args", [
    ("select", "--base", "no-such-ref"),
    ("why", "--base", "no-such-ref", "--step", "core"),
    ("run", "--step", "no-such-step", "--dry-run"),
    ("run", "--hardware", "tpu:v5", "--base", "HEAD~1"),
    ("audit", "--range", "nothing..here"),
])
def test_a_users_error_leaves_stdout_empty_and_says_one_thing(repo: Path, args: tuple[str, ...]) -> None:
    result = invoke(repo, *args, "--format", "json")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("pipegen: error:") == 1, result.stderr


def test_import_refusing_to_overwrite_prints_no_json(repo: Path) -> None:
    (repo / "ci").mkdir()
    result = import_(str(repo / ".buildkite/pipeline.yml"), "--out", str(repo / "ci"))
    assert result.exit_code == 2 and result.stdout == "" and "never overwrites" in result.stderr


def test_check_reports_unreadable_declarations_as_json(repo: Path) -> None:
    (repo / ".buildkite/steps/tests.yaml").write_text("steps: [{label: x\n")
    data = as_json("check", invoke(repo, "check", "--format", "json"), code=2)
    assert data["errors"] >= 1 and data["findings"][0]["code"] == "declaration-error"


def test_run_json_through_a_subprocess(repo: Path) -> None:
    """The installed entry point: stdout is one JSON document, the progress is on stderr."""
    done = subprocess.run([sys.executable, "-m", "pipegen", "run", "--hardware", "cpu", "--step", "bare", "--format",
                           "json"], cwd=repo, capture_output=True, text=True, timeout=120, check=False,
                          env={"PATH": "/usr/bin:/bin", "HOME": str(repo), "PIPEGEN_CACHE_DIR": ""})
    data = validate("run", json.loads(done.stdout))
    assert done.returncode == data["exit_code"] == 0 and data["counts"] == {"passed": 1}
    assert [(j["key"], j["status"]) for j in data["jobs"]] == [("bare", "passed")]
    assert "[1/1] bare on cpu: started" in done.stderr and Path(repo, data["jobs"][0]["log"]).is_file()


def test_schema_command_offers_every_output_schema() -> None:
    # cli.py names them itself so that start-up does not import json_output.
    assert tuple(SCHEMAS) == SCHEMA_OUTPUTS


@pytest.mark.parametrize("command", sorted(SCHEMAS))
def test_pipegen_schema_prints_each_output_schema(command: str) -> None:
    result = CliRunner().invoke(cli, ["schema", f"{command}-output"], catch_exceptions=False)
    assert result.exit_code == 0 and json.loads(result.stdout) == SCHEMAS[command]
