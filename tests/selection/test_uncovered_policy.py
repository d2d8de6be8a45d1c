"""No silent uncovered change (selection/uncovered.py): a changed file no entry matches and no ignore list
excludes is named on stderr, in the output and in the annotation; `uncovered:` says warn, run_all or fail.
And a step exempt from run-all (`run_all_exempt`): a change to CI glue runs everything but it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import RENDER_HARDWARE, commit_files, git, git_repo, invoke

STEPS = """\
group: Tests
steps:
  - label: Unit
    key: unit
    commands: [pytest tests/unit]
    source_file_dependencies: [src/, tests/unit/]
  - label: Console
    key: console
    commands: [pytest console]
    run_all_exempt: true
    source_file_dependencies: [console/]
"""


def repo(tmp_path: Path, config: str = "") -> Path:
    """A repository on a branch whose change is made by each test (committed: the diff against main)."""
    root = git_repo(tmp_path / "repo", {
        ".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\nhardware: .buildkite/hardware.yaml\n"
                                   "run_all: [ci/]\ndocs_only: [docs/]\n" + config,
        ".buildkite/hardware.yaml": RENDER_HARDWARE,
        ".buildkite/steps/tests.yaml": STEPS,
        "src/a.py": "", "console/c.ts": "", "ci/glue.sh": "", "docs/x.md": "", "tests/unit/test_a.py": "",
    })
    git(root, "checkout", "-q", "-b", "change")
    return root


def select(root: Path, env: dict[str, str] | None = None):
    result = invoke(root, "select", "--format", "json", env={"CI": "true", **(env or {})})
    return result, (json.loads(result.stdout) if result.exit_code == 0 else None)


def actions(data: dict) -> dict[str, str]:
    return {s["key"]: s["action"] for s in data["steps"]}


def test_a_new_file_no_entry_matches_is_named_on_stderr_in_the_output_and_the_annotation(tmp_path):
    root = repo(tmp_path)
    commit_files(root, {"newdir/new_module.py": "x = 1\n", "src/b.py": ""})
    result, data = select(root)
    assert actions(data) == {"unit": "run", "console": "block"}  # warn: the decisions stay
    assert "newdir/new_module.py" in result.stderr and "WARNING" in result.stderr
    assert "src/b.py" not in result.stderr  # an entry covers it
    assert any("newdir/new_module.py" in w for w in data["warnings"])
    annotation = tmp_path / "why.md"
    rendered = invoke(root, "render", "--annotation", str(annotation), env={"CI": "true"})
    assert rendered.exit_code == 0 and "newdir/new_module.py" in annotation.read_text()
    assert "newdir/new_module.py" in rendered.stderr


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_run_names_it_on_stderr_as_select_does(tmp_path, fmt):
    root = repo(tmp_path)
    commit_files(root, {"newdir/new_module.py": "x = 1\n", "src/b.py": ""})
    result = invoke(root, "run", "--dry-run", "--hardware", "cpu", "--format", fmt, env={"CI": "true"})
    assert result.exit_code == 0, result.output
    assert "WARNING: 1 changed file(s) no step's dependency entry matches" in result.stderr, result.stderr
    assert "newdir/new_module.py" in result.stderr


def test_covered_ignored_and_docs_files_say_nothing(tmp_path):
    root = repo(tmp_path, "uncovered_ignore: [LICENSE, '*.txt']\n")
    commit_files(root, {"LICENSE": "MIT", "notes/todo.txt": "", "docs/y.md": "", "src/b.py": ""})
    result, data = select(root)
    assert result.exit_code == 0 and "WARNING" not in result.stderr, result.stderr
    assert not any("no ignore list" in w for w in data["warnings"])


def test_uncovered_run_all_runs_everything_and_says_which_file(tmp_path):
    root = repo(tmp_path, "uncovered: run_all\n")
    commit_files(root, {"newdir/new_module.py": ""})
    result, data = select(root)
    assert data["run_all"] and "newdir/new_module.py" in data["run_all_reason"]
    # an unknown change is a change to glue: the exempt step keeps to its own entries
    assert actions(data) == {"unit": "run", "console": "block"}
    assert "newdir/new_module.py" in result.stderr


def test_uncovered_fail_stops_with_exit_1_naming_the_file_as_a_subprocess(tmp_path):
    root = repo(tmp_path, "uncovered: fail\n")
    commit_files(root, {"newdir/new_module.py": ""})
    env = {**os.environ, "CI": "true", "PIPEGEN_CACHE_DIR": ""}
    done = subprocess.run([sys.executable, "-m", "pipegen", "select"], cwd=root, capture_output=True, text=True,
                          env=env)
    assert done.returncode == 1, done.stderr
    assert "newdir/new_module.py" in done.stderr and "uncovered_ignore" in done.stderr
    assert "Traceback" not in done.stderr
    commit_files(root, {".buildkite/pipegen.yaml": (root / ".buildkite/pipegen.yaml").read_text()
                        + "uncovered_ignore: [newdir/]\n"})
    # the config changed too: that runs everything, and newdir/ is ignored now
    done = subprocess.run([sys.executable, "-m", "pipegen", "select"], cwd=root, capture_output=True, text=True,
                          env=env)
    assert done.returncode == 0, done.stderr


def test_a_bad_policy_is_a_declaration_error_with_the_choices(tmp_path):
    root = repo(tmp_path, "uncovered: sometimes\n")
    result = invoke(root, "select")
    assert result.exit_code == 2 and "warn, run_all, fail" in result.stderr


def test_ci_glue_runs_everything_but_the_exempt_step(tmp_path):
    root = repo(tmp_path)
    commit_files(root, {"ci/glue.sh": "echo changed\n"})
    _, data = select(root)
    assert data["run_all"] and actions(data) == {"unit": "run", "console": "block"}
    console = next(s for s in data["steps"] if s["key"] == "console")
    assert console["reasons"][0]["rule"] == "run-all-exempt" and "ci/glue.sh" in console["reasons"][0]["text"]
    commit_files(root, {"console/c.ts": "changed"})  # its own entry still selects it
    assert actions(select(root)[1]) == {"unit": "run", "console": "run"}


def test_why_of_ci_glue_names_the_exempt_step_it_does_not_run(tmp_path):
    root = repo(tmp_path)
    out = invoke(root, "why", "ci/glue.sh", "console/c.ts").stdout
    assert ("ci/glue.sh:\n  run-all: everything would run (ci/glue.sh matches run-all pattern 'ci/'), but "
            "run_all_exempt keeps console to its own entries\n") in out, out  # not "everything runs"
    assert "console/c.ts:\n  selects console  (entry 'console/')" in out
    row = json.loads(invoke(root, "why", "--format", "json", "ci/glue.sh").stdout)["paths"][0]
    assert row["verdict"] == "run-all" and row["overridden"] == "run_all_exempt keeps console to its own entries"


def test_asking_for_everything_or_an_untrusted_diff_runs_the_exempt_step_too(tmp_path):
    root = repo(tmp_path)
    commit_files(root, {"ci/glue.sh": "echo changed\n"})
    assert actions(select(root, {"RUN_ALL": "1"})[1])["console"] == "run"
    _, data = select(root, {"BUILDKITE_GIT_DIFF_BASE": "nope"})
    assert "cannot be trusted" in data["run_all_reason"]
    assert actions(data)["console"] == "run"


def test_the_vllm_preset_keeps_the_generators_decisions_and_warns(tmp_path):
    from tests.helpers import write_files

    steps = ("group: G\nsteps:\n  - label: Unit\n    key: unit\n    device: h100\n    commands: [pytest tests/unit]\n"
             "    source_file_dependencies: [vllm/core/]\n")
    write_files(tmp_path, {".buildkite/ci_config.yaml": "name: x\njob_dirs: [.buildkite/areas]\n",
                           ".buildkite/areas/a.yaml": steps})
    result = invoke(tmp_path, "select", "--format", "json", files="newdir/new_module.py\nvllm/core/a.py\n")
    data = json.loads(result.stdout)
    assert actions(data) == {"unit": "run"} and not data["run_all"]
    assert data["uncovered"] == ["newdir/new_module.py"]
    assert any("newdir/new_module.py" in w for w in data["warnings"]) and "newdir/new_module.py" in result.stderr
    alone = json.loads(invoke(tmp_path, "select", "--format", "json", files="newdir/new_module.py\n").stdout)
    assert actions(alone) == {"unit": "block"}  # as vLLM's generator decides: nothing runs for it
