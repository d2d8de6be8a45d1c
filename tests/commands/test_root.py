"""pipegen finds the repository root from a subfolder, as git does; paths stay repository-relative."""

from __future__ import annotations

import json
import subprocess
import sys

from ..helpers import ROOT, git_repo

STEPS = """\
steps:
- label: Src
  key: src
  commands: [pytest tests/test_x.py]
  source_file_dependencies: [src/, tests/test_x.py]
"""


def pipegen(cwd, *args, stdin=""):
    return subprocess.run([sys.executable, "-m", "pipegen", *args], cwd=cwd, input=stdin, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def test_every_command_works_from_a_subfolder(tmp_path):
    root = git_repo(tmp_path / "repo", {".buildkite/pipegen.yaml": "steps: [.buildkite/steps.yaml]\n",
                                        ".buildkite/steps.yaml": STEPS, "src/pkg/x.py": "", "tests/test_x.py": ""})
    sub = root / "src" / "pkg"
    proc = pipegen(sub, "select", "--format", "json", "--files-from", "-", stdin="src/pkg/x.py\n")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["changed_files"] == ["src/pkg/x.py"] and data["steps"][0]["action"] == "run"
    (sub / "x.py").write_text("edited\n")
    proc = pipegen(sub, "select", "--format", "json", "--base", "main")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["changed_files"] == ["src/pkg/x.py"]
    proc = pipegen(sub, "why", "--step", "src", "--base", "main")
    assert proc.returncode == 0 and "declared at .buildkite/steps.yaml:2:3" in proc.stdout, proc.stderr
    proc = pipegen(sub, "check", "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # --config relative to the root, or to the current folder (as a shell completes it).
    for config in (".buildkite/pipegen.yaml", "../../.buildkite/pipegen.yaml"):
        proc = pipegen(sub, "why", "--config", config, "src/pkg/x.py")
        assert proc.returncode == 0 and "selects src" in proc.stdout, proc.stderr


def test_no_configuration_anywhere_is_still_a_usage_error(tmp_path):
    proc = pipegen(tmp_path, "select", "--files-from", "/dev/null")
    assert proc.returncode == 2 and "no CI configuration found" in proc.stderr and "Traceback" not in proc.stderr
