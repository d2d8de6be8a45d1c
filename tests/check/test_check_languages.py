"""`check` for every language: a step no change selects is a finding whatever runs it, and `--orphans`
covers every source language of the repository (by identify's file types), not a few extensions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import git_repo

CONFIG = "steps: [.buildkite/steps.yaml]\n"
POLYGLOT = {
    "src/Solver.jl": "module Solver end\n", "test/runtests.jl": "using Test\n", "Project.toml": "name = \"Solver\"\n",
    "cmd/main.go": "package main\n", "go.mod": "module x\n", "model/dynamics.F90": "program p\nend program\n",
    "kernels/reduce.cu": "", "kernels/reduce.hip": "", "CMakeLists.txt": "project(x)\n", "web/app.ts": "",
    "crates/core/src/lib.rs": "", "scripts/setup.sh": "", "docs/guide.md": "", "README.md": "", "LICENSE": "",
    "data/table.csv": "", "assets/logo.png": "", ".gitignore": "build/\n",
}


def check(root: Path, *args: str) -> tuple[int, list[dict]]:
    done = subprocess.run([sys.executable, "-m", "pipegen", "check", "--format", "json", *args], cwd=root,
                          capture_output=True, text=True, env={**os.environ, "PIPEGEN_CACHE_DIR": ""})
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)["findings"]


@pytest.mark.parametrize("command, says", [
    ("go test ./...", "runs 'go test ./...'"),
    ("cargo test --workspace", "runs 'cargo test --workspace'"),
    ("cmake --build build && ctest --test-dir build", "runs 'cmake --build build && ctest --test-dir build'"),
    ("npm test", "runs 'npm test'"),
    ("julia --project -e 'using Pkg; Pkg.test()'", "runs 'julia --project -e 'using Pkg; Pkg.test()''"),
    (None, "runs its plugins"),
])
def test_a_step_without_dependencies_is_a_finding_whatever_runs_it(tmp_path, command, says):
    run = f"commands: [{json.dumps(command)}]" if command else "plugins: [{docker-compose#v5.0.0: {run: app}}]"
    root = git_repo(tmp_path / "repo", {**POLYGLOT, ".buildkite/pipegen.yaml": CONFIG,
                                        ".buildkite/steps.yaml": f"steps:\n- {{label: Tests, key: tests, {run}}}\n"})
    code, findings = check(root)
    assert code == 0  # a warning
    assert [(f["code"], f["severity"], f["line"]) for f in findings] == [("no-dependencies", "warning", 2)]
    assert findings[0]["message"] == (f"step 'tests' {says} but has no source_file_dependencies: no change selects "
                                      "it, it waits to be unblocked")


@pytest.mark.parametrize("step, config", [
    ("{label: T, key: t, commands: [go test ./...], optional: true}", ""),  # manual by design
    ("{label: T, key: t, commands: [go test ./...]}", "always_run: [t]\n"),  # runs on every change
    ("{label: T, key: t, commands: [go test ./...]}", "no_dependencies: run\n"),
    ("{label: T, key: t, commands: [go test ./...], source_file_dependencies: [cmd/, go.mod]}", ""),
])
def test_a_step_that_a_change_does_run_is_no_finding(tmp_path, step, config):
    root = git_repo(tmp_path / "repo", {**POLYGLOT, ".buildkite/pipegen.yaml": CONFIG + config,
                                        ".buildkite/steps.yaml": f"steps:\n- {step}\n"})
    assert check(root) == (0, [])


def test_orphans_cover_every_source_language_of_the_repository(tmp_path):
    step = "{label: Julia, key: julia, commands: [julia -e 'using Pkg; Pkg.test()'], source_file_dependencies: [src/]}"
    root = git_repo(tmp_path / "repo", {**POLYGLOT, ".buildkite/pipegen.yaml": CONFIG + "docs_only: [docs/, '*.md']\n",
                                        ".buildkite/steps.yaml": f"steps:\n- {step}\n"})
    code, findings = check(root, "--orphans")
    assert code == 0
    assert sorted(f["file"] for f in findings if f["code"] == "orphan") == [
        "CMakeLists.txt", "cmd/main.go", "crates/core/src/lib.rs", "go.mod", "kernels/reduce.cu", "kernels/reduce.hip",
        "model/dynamics.F90", "scripts/setup.sh", "test/runtests.jl", "web/app.ts"]
