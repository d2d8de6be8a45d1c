"""`pipegen run` with Buildkite's step semantics: depends_on order, failed dependencies, soft_fail,
artifact_paths, matrix jobs, branches/if, external steps, output paths and rendered keys."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipegen.buildkite.branches import includes
from tests.helpers import INVENTORY, git_repo, run

CONFIG = "steps: [.buildkite/steps]\nexternal_steps: [bootstrap]\n" + INVENTORY


def make(tmp_path: Path, steps: str, branch: str = "main") -> Path:
    """A git repository with these steps; what the steps write is ignored (it would select steps)."""
    return git_repo(tmp_path / "repo", {".buildkite/pipegen.yaml": CONFIG, ".buildkite/steps/s.yaml": steps,
                                        ".gitignore": "*.txt\nout/\n"}, branch=branch)


ORDER = """\
steps:
  - {label: after, key: after, depends_on: [unit], commands: ["echo after >> order.txt"]}
  - {label: unit, key: unit, depends_on: [bootstrap], commands: ["echo unit >> order.txt", "exit $UNIT_EXIT"]}
  - {label: tolerant, key: tolerant, depends_on: [{step: unit, allow_failure: true}], commands: ["echo t >> order.txt"]}
  - {label: any, key: any, depends_on: [after], allow_dependency_failure: true, commands: ["echo any >> order.txt"]}
"""


def test_steps_run_after_what_they_depend_on(tmp_path):
    repo = make(tmp_path, ORDER)
    code, out = run(repo, "--all", env={"UNIT_EXIT": "0"})
    assert code == 0, out
    assert (repo / "order.txt").read_text().split() == ["unit", "after", "t", "any"]


def test_a_failed_dependency_stops_its_dependents_unless_they_allow_it(tmp_path):
    repo = make(tmp_path, ORDER)
    junit = tmp_path / "junit.xml"
    code, out = run(repo, "--all", "--keep-going", "--junit", str(junit), env={"UNIT_EXIT": "4"})
    assert code == 1
    assert (repo / "order.txt").read_text().split() == ["unit", "t", "any"]
    assert "after: not run (unit failed)" in out
    cases = {c.get("name"): c for c in ET.parse(junit).getroot().iter("testcase")}
    assert cases["after"].find("skipped").get("message") == "not run: unit failed"
    assert cases["tolerant"].find("skipped") is None and cases["tolerant"].find("failure") is None


def test_soft_fail_exit_statuses_are_soft_failures(tmp_path):
    steps = """\
steps:
  - {label: soft, key: soft, soft_fail: [{exit_status: 3}], commands: ["exit 3"]}
  - {label: next, key: next, depends_on: [soft], commands: ["true"]}
  - {label: hard, key: hard, soft_fail: [{exit_status: 3}], commands: ["exit 4"]}
"""
    code, out = run(make(tmp_path, steps), "--step", "soft", "--step", "next")
    assert code == 0, out
    assert "soft failed (exit status 3)" in out and "1 soft failed, 1 passed" in out
    code, out = run(make(tmp_path / "b", steps), "--step", "hard")
    assert code == 1 and "failed (exit status 4)" in out


def test_artifacts_are_copied_into_the_log_folder_and_listed(tmp_path):
    steps = """\
steps:
  - label: makes
    key: makes
    artifact_paths: ["out/**/*.xml", "missing/*"]
    commands: ["mkdir -p out/a", "echo '<x/>' > out/a/r.xml", "echo no > out/skip.txt", "exit 1"]
"""
    repo = make(tmp_path, steps)
    code, out = run(repo, "--step", "makes", "--log-dir", str(tmp_path / "logs"))
    copied = tmp_path / "logs" / "makes-artifacts" / "out" / "a" / "r.xml"
    assert code == 1 and copied.read_text() == "<x/>\n"  # collected whatever the result
    assert f"makes: {copied}" in out and "skip.txt" not in out


MATRIX = """\
steps:
  - label: "py {{matrix.py}}"
    key: m
    matrix:
      setup: {py: ["3.11", "3.12"], os: [linux]}
      adjustments: [{with: {py: "3.13", os: linux}, soft_fail: true}]
    env: {PY: "{{matrix.py}}"}
    commands: ["echo {{matrix.py}}-{{matrix.os}}-$PY >> m.txt", "test {{matrix.py}} != 3.13"]
"""


def test_a_matrix_step_runs_every_combination_with_its_values(tmp_path):
    repo = make(tmp_path, MATRIX)
    code, out = run(repo, "--step", "m")
    assert code == 0, out
    assert (repo / "m.txt").read_text().split() == ["3.11-linux-3.11", "3.12-linux-3.12", "3.13-linux-3.13"]
    assert "m[py=3.13,os=linux]" in out and "soft failed" in out  # the adjustment's soft_fail


def test_one_matrix_job_by_name(tmp_path):
    repo = make(tmp_path, MATRIX)
    code, out = run(repo, "--step", "m[py=3.12,os=linux]")
    assert code == 0, out
    assert (repo / "m.txt").read_text().split() == ["3.12-linux-3.12"]
    code, out = run(repo, "--step", "m[py=2.7]")
    assert code == 2 and "'m[py=3.11,os=linux]'" in out


def test_branches_are_checked_against_this_branch_and_if_is_left_to_buildkite(tmp_path):
    steps = """\
steps:
  - {label: main only, key: main-only, branches: "main release/*", commands: ["echo main >> b.txt"]}
  - {label: not main, key: not-main, branches: ["!main"], commands: ["echo not >> b.txt"]}
  - {label: cond, key: cond, if: 'build.branch == "x"', depends_on: [main-only], commands: ["echo cond >> b.txt"]}
"""
    repo = make(tmp_path, steps, branch="feature/x")
    code, out = run(repo, "--all")
    assert code == 0, out
    assert (repo / "b.txt").read_text().split() == ["not", "cond"]  # a left-out step counts as passed
    assert "main-only: skipped (branches: main release/* leaves out branch feature/x)" in out
    assert "Buildkite decides its if" in out
    code, out = run(repo, "--all", env={"BUILDKITE_BRANCH": "release/1"})
    assert "main-only: passed" in out and "not-main: passed" in out


def test_a_step_buildkite_skips_is_skipped_and_counts_as_passed_for_its_dependents(tmp_path):
    steps = """\
steps:
  - {label: flaky, key: flaky, skip: "flaky on main", commands: ["echo flaky >> s.txt"]}
  - {label: next, key: next, depends_on: [flaky], commands: ["echo next >> s.txt"]}
"""
    repo = make(tmp_path, steps)
    code, out = run(repo, "--all")
    assert code == 0, out
    assert (repo / "s.txt").read_text().split() == ["next"]
    assert "flaky: skipped (skip: flaky on main)" in out and "next: passed" in out


def test_the_branch_is_this_repositorys_even_under_a_hooks_git_dir(tmp_path):
    # a git hook exports GIT_DIR: a bare `git rev-parse` read the branch of the repository it names
    repo = make(tmp_path, "steps:\n  - {label: m, key: main-only, branches: main, commands: [echo]}\n",
                branch="feature/x")
    other = git_repo(tmp_path / "other", {"a": ""}, branch="main")
    code, out = run(repo, "--all", env={"GIT_DIR": str(other / ".git")})
    assert "main-only: skipped (branches: main leaves out branch feature/x)" in out, out


@pytest.mark.parametrize("value, branch, expect", [
    ("main", "main", True), ("main", "mainline", False), ("release/*", "release/1.2", True),
    ("*", "x", True), ("!main", "main", False), ("!main", "dev", True), (["feat/*", "!feat/wip"], "feat/wip", False),
    ("main feat/*", "feat/a", True),
])
def test_branch_filter(value, branch, expect):
    assert includes(value, branch) is expect


@pytest.mark.parametrize("make_bad, said", [
    (lambda t: (t / "file").write_text("x") and ["--log-dir", str(t / "file")], "is a file"),
    (lambda t: (t / "file").write_text("x") and ["--log-dir", str(t / "file" / "logs")], "cannot create folders"),
    (lambda t: (t / "dir").mkdir() or ["--junit", str(t / "dir")], "Is a directory"),
    (lambda t: ["--junit", str(t / "missing" / "j.xml")], "No such file or directory"),
])
def test_bad_output_paths_are_refused_before_anything_runs(tmp_path, make_bad, said):
    repo = make(tmp_path, ORDER)
    code, out = run(repo, "--all", *make_bad(tmp_path), env={"UNIT_EXIT": "0"})
    assert code == 2 and said in out and "Traceback" not in out
    assert not (repo / "order.txt").exists()


def test_step_and_only_accept_the_rendered_key(tmp_path):
    steps = "steps:\n  - {label: w, key: 'Weird Key/With:colons', commands: ['echo ran >> w.txt']}\n"
    repo = make(tmp_path, steps)
    for args in (["--step", "Weird-Key-With:colons"], ["--step", "Weird Key/With:colons"],
                 ["--only", "Weird-Key-With:colons"]):
        code, out = run(repo, *args)
        assert code == 0, out
    assert (repo / "w.txt").read_text().split() == ["ran"] * 3


def test_a_dependency_left_out_of_the_run_is_said(tmp_path):
    code, out = run(make(tmp_path, ORDER), "--step", "after")
    assert code == 0, out
    assert "after: depends on unit, not part of this run; it runs without it" in out


# --------------------------------------------------------------------------- the order, as a property


@st.composite
def dags(draw):
    """Steps s0..sN, each depending on some earlier ones (a DAG), declared in a shuffled order."""
    n = draw(st.integers(1, 8))
    deps = {f"s{i}": draw(st.lists(st.sampled_from([f"s{j}" for j in range(i)]), unique=True)) if i else []
            for i in range(n)}
    order = draw(st.permutations(list(deps)))
    return [(key, deps[key]) for key in order]


@settings(max_examples=50, deadline=None)
@given(dags())
def test_every_job_runs_after_what_it_depends_on(steps):
    from pipegen.model import Declarations, Location, Settings, Step
    from pipegen.run.local_plan import Planned
    from pipegen.run.steps import in_dependency_order

    declared = tuple(Step(key=k, label=k, group="", location=Location("f"), depends_on=tuple(d)) for k, d in steps)
    decl = Declarations(steps=declared, settings=Settings(), layout="pipegen")
    runs = [Planned(step=s, hardware="cpu", cwd=".", script="", env=(), timeout_s=None, log="x") for s in declared]
    ordered = [r.key for r in in_dependency_order(runs, decl)]
    assert sorted(ordered) == sorted(k for k, _ in steps)
    for key, deps in steps:
        assert all(ordered.index(d) < ordered.index(key) for d in deps)


def test_through_a_subprocess(tmp_path):
    import os
    import subprocess
    import sys

    repo = make(tmp_path, ORDER)
    env = {**os.environ, "UNIT_EXIT": "5", "PIPEGEN_HARDWARE": "cpu"}
    proc = subprocess.run([sys.executable, "-m", "pipegen", "run", "--all", "--keep-going"], cwd=repo, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "after: not run (unit failed)" in proc.stdout and "Traceback" not in proc.stderr
