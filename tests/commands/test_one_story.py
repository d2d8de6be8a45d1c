"""One story from every command: what `select` runs is what `render` runs, and `audit` replays each commit
as `select` decides its diff.

A step that runs only because a step that runs depends on it is said and counted by select, why and audit
(a docs change once read "1 run" in select while render ran the GPU image build it waits for); a change of
pipegen's own inputs (the config, the inventory) runs what they shape in audit as in select.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipegen.cli import cli
from tests.helpers import DEVICES_HARDWARE, commit_files, declarations, git, git_repo, write_files
from tests.render.buildkite_order import Graph

ENTRIES = ["src/", "src/a/", "lib", "tests/", "!src/a/vendored/", "src/*.py", "docs/", "docker/"]
FILES = ["src/a/x.py", "src/a/vendored/v.py", "src/b.py", "lib/l.py", "tests/t.py", "docs/i.md", "README.md",
         "docker/Dockerfile", "pyproject.toml", "other.txt", ".buildkite/pipegen.yaml", ".buildkite/hardware.yaml",
         ".buildkite/steps/s.yaml"]
DEVICES = ["cpu", "h100:2"]  # DEVICES_HARDWARE's families, one GPU count fixed by the name


def invoke(root: Path, *args: str, files: list[str] | None = None, env: dict[str, str] | None = None) -> str:
    more = ["--files-from", "-"] if files is not None else []
    result = CliRunner().invoke(cli, [args[0], "--root", str(root), *more, *args[1:]],
                                input="".join(f + "\n" for f in files or ()), env={"PIPEGEN_CACHE_DIR": "", **(env or {})})
    assert result.exit_code == 0, result.output
    return result.stdout


def selected(root: Path, files: list[str], env: dict[str, str] | None = None, *args: str) -> set[str]:
    """The steps `select` runs, a declared wait (always in the pipeline) not counted."""
    data = json.loads(invoke(root, "select", "--format", "json", *args, files=files, env=env))
    return {s["key"] for s in data["steps"] if s["action"] == "run" and s["reasons"][0]["rule"] != "structure"}


def command_steps(pipeline: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for item in pipeline["steps"]:
        out += [s for s in item.get("steps", [item]) if "block" not in s]
    return out


def rendered_runs(root: Path, files: list[str], unselected: str, env: dict[str, str] | None = None) -> set[str]:
    """The command steps render uploads that run on their own: no `skip`, and no block step that they wait for,
    directly or through a declared wait (tests/render/buildkite_order.py: when Buildkite starts a step)."""
    graph = Graph(yaml.safe_load(invoke(root, "render", "--unselected", unselected, files=files, env=env)))
    blocks = {name for name, kind in graph.kinds.items() if kind == "block"}
    return {name for name in graph.commands() if "skip" not in graph.steps[name] and not graph.waits_for(name) & blocks}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(declarations(ENTRIES, devices=DEVICES), st.lists(st.sampled_from(FILES), max_size=4, unique=True),
       st.sampled_from(["block", "skip", "omit"]),
       st.sampled_from([{}, {"NIGHTLY": "1"}, {"NOAUTO": "1"}, {"DOCS_ONLY_DISABLE": "1"}]),
       st.integers(0, 6))
def test_select_runs_exactly_what_render_runs(files, changes, unselected, env, wait_at):
    """With the same --unselected, and a declared wait among the steps (`wait_at`; after the last one it holds
    nothing back): with block, the steps before a wait that a running step follows run too, unblocked."""
    steps = yaml.safe_load(files[".buildkite/steps/s.yaml"])["steps"]
    files = {**files, ".buildkite/steps/s.yaml": yaml.safe_dump({"steps": [*steps[:wait_at], "wait", *steps[wait_at:]]})}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write_files(root, files)
        assert selected(root, changes, env, "--unselected", unselected) == rendered_runs(root, changes, unselected,
                                                                                         env)


def replay_equals_select(root: Path, commits: int) -> None:
    """`audit` of the last commits runs, per commit, what `select` runs for that commit's diff (docs/reference/audit.md)."""
    report = json.loads(invoke(root, "audit", "--last", str(commits), "--format", "json"))
    assert len(report["commits"]) == commits
    for row in report["commits"]:
        diff = git(root, "diff", "--name-only", "--no-renames", f"{row['sha']}^", row["sha"]).splitlines()
        assert set(row["run"]) == selected(root, diff), (row, diff)


def edit(path: str, n: int) -> str:
    """New content for one of FILES that keeps the declarations loadable."""
    return f"# edit {n}\n" if path.startswith(".buildkite/") else f"x = {n}\n"


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(declarations(ENTRIES, devices=DEVICES),
       st.lists(st.lists(st.sampled_from(FILES), min_size=1, max_size=3, unique=True), min_size=1, max_size=3))
def test_audit_replays_each_commit_as_select_decides_it(files, commits):
    with tempfile.TemporaryDirectory() as folder:
        root = git_repo(Path(folder), {**files, **{f: "x = 0\n" for f in FILES if f not in files}})
        for n, changed in enumerate(commits, 1):
            # A declaration file gains a comment: the work tree's declarations stay those generated.
            commit_files(root, {f: (files[f] + edit(f, n)) if f in files else edit(f, n) for f in changed})
        replay_equals_select(root, len(commits))


STORY = {
    ".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\nhardware: .buildkite/hardware.yaml\n",
    ".buildkite/hardware.yaml": DEVICES_HARDWARE,
    ".buildkite/steps/s.yaml": (
        "steps:\n"
        "- {label: Image, key: image-build, commands: [make], source_file_dependencies: [docker/], "
        "hardware: ['h100:2']}\n"
        "- {label: GPU tests, key: gpu, commands: [pytest], source_file_dependencies: [src/], depends_on: [image-build], "
        "hardware: ['h100:2']}\n"
        "- {label: Docs, key: docs, commands: [mkdocs build], source_file_dependencies: [docs/], "
        "depends_on: [image-build]}\n"),
    "docker/Dockerfile": "FROM x\n", "src/a.py": "", "docs/index.md": "",
}


def pipegen(root: Path, *args: str, stdin: str = "") -> str:
    done = subprocess.run([sys.executable, "-m", "pipegen", *args], cwd=root, input=stdin, capture_output=True,
                          text=True, env={**os.environ, "PIPEGEN_CACHE_DIR": ""})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_step_pulled_in_by_depends_on_is_said_and_counted_by_every_command(tmp_path):
    root = git_repo(tmp_path / "repo", STORY)
    commit_files(root, {"docs/index.md": "more\n"}, "docs change")
    assert pipegen(root, "select", "--committed-only", "--base", "HEAD^") == (
        "2 run (1 of them needed by a step that runs: depends_on), 1 block, 0 skip of 3 steps; 1 changed file(s) "
        f"against HEAD^ (merge base {git(root, 'rev-parse', 'HEAD^')[:12]})\n\n"
        "Run (2):\n"
        "  image-build  needed by selected step 'docs' (depends_on); was: no changed file matches its 2 dependency "
        "entries\n"
        "  docs         docs/index.md matches 'docs/'\n\n"
        "Blocked (wait to be unblocked) (1):\n"
        "  gpu  no changed file matches its 2 dependency entries\n")
    why = pipegen(root, "why", "--step", "image-build", "--committed-only", "--base", "HEAD^")
    assert "  action: run: needed by selected step 'docs' (depends_on)" in why
    assert pipegen(root, "why", "docs/index.md") == (
        "docs/index.md:\n  selects docs  (entry 'docs/')\n  runs image-build too: needed by selected step 'docs' "
        "(depends_on); was: no changed file matches its 2 dependency entries\n")
    report = json.loads(pipegen(root, "audit", "--last", "1", "--format", "json"))
    assert report["commits"][0]["run"] == ["docs", "image-build"] and report["commits"][0]["needed"] == ["image-build"]
    assert "2    1    0  docs, image-build (1 of them needed by a step that runs: depends_on)" in pipegen(
        root, "audit", "--last", "1")
    rendered = yaml.safe_load(pipegen(root, "render", "--committed-only", "--base", "HEAD^"))
    assert {s["key"] for s in command_steps(rendered) if "block-gpu" not in s.get("depends_on", [])} == {
        "image-build", "docs"}


def test_audit_runs_everything_for_an_edit_of_the_config_or_the_inventory(tmp_path):
    root = git_repo(tmp_path / "repo", STORY)
    commit_files(root, {".buildkite/hardware.yaml": DEVICES_HARDWARE + "# a queue renamed\n"}, "inventory")
    commit_files(root, {".buildkite/pipegen.yaml": STORY[".buildkite/pipegen.yaml"] + "base_branch: main\n"}, "config")
    report = json.loads(pipegen(root, "audit", "--last", "2", "--format", "json"))
    config, inventory = report["commits"]
    assert config["run"] == inventory["run"] == ["docs", "gpu", "image-build"]
    assert config["run_all"] == ".buildkite/pipegen.yaml changed: it is the pipegen config, which shapes every step"
    assert inventory["run_all"].startswith(".buildkite/hardware.yaml changed: it is the hardware inventory")
    replay_equals_select(root, 2)
