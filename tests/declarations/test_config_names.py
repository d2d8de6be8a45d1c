"""Declaration mistakes surface: a config name that names no step, a steps folder reached through a link.

An `always_run` key or glob, a label's `only:` key or an `external_steps` key that names no step changed
what runs without a word (the step meant to always run waited for a click). Each is a warning in `select`
and an `unmatched-key` error in `check`, at the line that wrote it. A steps folder that is a symbolic link
is read through the link while git names its files by their target: editing one selects its steps.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from pipegen.cli import cli
from tests.helpers import commit_files, git, git_repo

STEPS = ("steps:\n"
         "- {label: Unit, key: unit, commands: [pytest tests], source_file_dependencies: [src/], "
         "depends_on: [bootstrap], hardware: [cpu, h100]}\n"
         "- {label: Lint, key: lint, commands: [ruff check], source_file_dependencies: [src/]}\n")
INVENTORY = ("hardware:\n  default: cpu\n  families:\n    cpu: {vendor: cpu, queue: cpu-q, template: plain}\n"
             "    h100: {vendor: nvidia, arch: sm_90, template: plain, queues: {1: h100-1}}\n"
             "  templates:\n    plain: {kind: plain}\n")


def repo(tmp_path: Path, config: str) -> Path:
    # tests/t.py, the change, is not uncovered: these tests are about the config's names
    return git_repo(tmp_path / "repo", {".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\n" + INVENTORY + config
                                        + "uncovered_ignore: [tests/]\n",
                                        ".buildkite/steps/s.yaml": STEPS, "src/a.py": "", "tests/t.py": ""})


def pipegen(root: Path, *args: str, stdin: str = "tests/t.py\n") -> subprocess.CompletedProcess:
    """The CLI as a subprocess; the change is a tracked file no entry matches (an unknown path is a warning)."""
    return subprocess.run([sys.executable, "-m", "pipegen", *args], cwd=root, input=stdin, capture_output=True,
                          text=True, env={**os.environ, "PIPEGEN_CACHE_DIR": ""})


def check_json(root: Path) -> tuple[int, list[dict]]:
    result = CliRunner().invoke(cli, ["check", "--root", str(root), "--format", "json"])
    return result.exit_code, json.loads(result.stdout)["findings"]


def test_names_that_name_no_step_are_a_warning_in_select_and_an_error_in_check(tmp_path):
    root = repo(tmp_path, "always_run: [lnt, 'unit-*', 'nightly-*']\nexternal_steps: [bootstrap, upload]\n"
                          "labels:\n  perf: {only: [unit, benchmark]}\n  ci: {run_all: true}\n")
    done = pipegen(root, "select", "--files-from", "-")
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stdout.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: .buildkite/pipegen.yaml:9:14: always_run 'lnt' matches no step's key: no step always runs for it "
        "(did you mean 'lint'?; or remove it from always_run)",
        "warning: .buildkite/pipegen.yaml:9:29: always_run 'nightly-*' matches no step's key: no step always runs for "
        "it (known step keys: lint, unit, unit-cpu, unit-h100; or remove it from always_run)",
        "warning: .buildkite/pipegen.yaml:12:23: label 'perf' only: 'benchmark' names no step: the label does not run "
        "it (known step keys: lint, unit, unit-cpu, unit-h100; or remove it from the label's only:)",
        "warning: .buildkite/pipegen.yaml:10:29: external step 'upload' is named by no step's depends_on (remove it "
        "from external_steps, or add it to the depends_on of the steps that wait for it)"]
    code, findings = check_json(root)
    assert code == 1
    assert [(f["code"], f["severity"], f["line"]) for f in findings if f["code"] == "unmatched-key"] == [
        ("unmatched-key", "error", 9), ("unmatched-key", "error", 9), ("unmatched-key", "error", 10),
        ("unmatched-key", "error", 12)]


def test_names_that_do_name_a_step_are_clean(tmp_path):
    # A fanned-out step's declared key, its targets' keys, globs: each names a step; 'unit' runs both targets.
    root = repo(tmp_path, "always_run: [unit, 'lin*']\nexternal_steps: [bootstrap]\n"
                          "labels:\n  perf: {only: [unit-h100]}\n")
    done = pipegen(root, "select", "--format", "json", "--files-from", "-")
    data = json.loads(done.stdout)
    assert data["warnings"] == []
    assert {s["key"] for s in data["steps"] if s["action"] == "run"} == {"unit-cpu", "unit-h100", "lint"}
    assert [f for f in check_json(root)[1] if f["code"] == "unmatched-key"] == []


def test_a_label_may_name_a_fanned_out_step_by_its_declared_key(tmp_path):
    root = repo(tmp_path, "external_steps: [bootstrap]\nlabels:\n  perf: {only: [unit]}\n")
    result = CliRunner().invoke(cli, ["select", "--root", str(root), "--format", "json", "--files-from", "-"],
                                input="x\n", env={"BUILDKITE_PULL_REQUEST_LABELS": "perf"})
    assert result.exit_code == 0, result.output
    assert {s["key"]: s["action"] for s in json.loads(result.stdout)["steps"]} == {
        "unit-cpu": "run", "unit-h100": "run", "lint": "skip"}


def linked_repo(tmp_path: Path) -> Path:
    """The steps live in shared/ci-steps; .buildkite/steps is a symbolic link to them."""
    root = git_repo(tmp_path / "repo", {".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\n" + INVENTORY,
                                        "shared/ci-steps/s.yaml": STEPS.replace(", depends_on: [bootstrap]", ""),
                                        "shared/more/m.yaml": "steps:\n- {label: More, key: more, commands: [x], "
                                                              "source_file_dependencies: [lib/]}\n",
                                        "src/a.py": ""})
    os.symlink("../shared/ci-steps", root / ".buildkite" / "steps")
    os.symlink("../more", root / "shared" / "ci-steps" / "more")  # a folder linked into the steps folder
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "link the steps")
    return root


def test_editing_a_steps_file_through_a_linked_folder_selects_its_steps(tmp_path):
    root = linked_repo(tmp_path)
    commit_files(root, {".buildkite/steps/s.yaml": STEPS.replace("ruff check", "ruff check .").replace(
        ", depends_on: [bootstrap]", "")}, "edit through the link")
    assert git(root, "diff", "--name-only", "HEAD^", "HEAD") == "shared/ci-steps/s.yaml\n"  # git names the target
    done = pipegen(root, "select", "--base", "HEAD^", "--format", "json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    running = {s["key"]: s["reasons"][0]["text"] for s in data["steps"] if s["action"] == "run"}
    assert running == dict.fromkeys(("unit-cpu", "unit-h100", "lint"), "shared/ci-steps/s.yaml (read as .buildkite/steps/s.yaml) matches '.buildkite/steps/s.yaml'")
    # A folder linked inside the steps folder is read too, and its file selects its step.
    why = pipegen(root, "why", "shared/more/m.yaml").stdout
    assert why == "shared/more/m.yaml:\n  selects more  (entry '.buildkite/steps/more/m.yaml')\n"
    # The same in audit: one replay of the commit, as select decides it.
    report = json.loads(pipegen(root, "audit", "--last", "1", "--format", "json").stdout)
    assert report["commits"][0]["run"] == ["lint", "unit-cpu", "unit-h100"]


def test_retargeting_the_link_selects_the_steps_read_through_it(tmp_path):
    root = linked_repo(tmp_path)
    done = pipegen(root, "select", "--files-from", "-", "--format", "json", stdin=".buildkite/steps\n")
    running = {s["key"] for s in json.loads(done.stdout)["steps"] if s["action"] == "run"}
    assert running == {"unit-cpu", "unit-h100", "lint", "more"}
