"""A step that runs after a declared wait or block never waits for a step left blocked before it.

Buildkite: a wait (or block) step waits for every step before it in its list, and every step after it
without `depends_on` waits for it (docs: pipelines/configure/depends-on, "Implicit dependencies with wait
and block"). With `unselected: block`, an unselected step before the wait is a block step nobody unblocks:
the step after the wait would stall for ever. So `decide` runs it too (needed-by, naming the wait), and
every command says so. With `skip` (a skipped step counts as finished) or `omit` nothing stalls: nothing
is pulled in.
"""

from __future__ import annotations

import json
import textwrap

from click.testing import CliRunner

from pipegen.cli import cli
from tests.helpers import all_steps, assert_valid, commit_files, git_repo, render
from tests.render.buildkite_order import Graph

A_WAIT_B = """
steps:
  - {label: A, key: a, commands: [a], source_file_dependencies: [a/]}
  - wait
  - {label: B, key: b, commands: [b], source_file_dependencies: [b/]}
"""


def repo(tmp_path, files: dict[str, str], config: str = ""):
    (tmp_path / ".buildkite" / "steps").mkdir(parents=True)
    (tmp_path / ".buildkite" / "pipegen.yaml").write_text("steps: [.buildkite/steps]\n" + config)
    for name, text in files.items():
        (tmp_path / ".buildkite" / "steps" / name).write_text(textwrap.dedent(text))
    return tmp_path


def select(root, *args: str, files: str = "b/x.py\n") -> dict[str, dict]:
    result = CliRunner().invoke(cli, ["select", "--root", str(root), "--files-from", "-", "--format", "json", *args],
                                input=files, env={"PIPEGEN_CACHE_DIR": ""}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return {s["key"]: s for s in json.loads(result.stdout)["steps"]}


def by_key(pipeline: dict) -> dict[str, dict]:
    return {step.get("key"): step for step in all_steps(pipeline)}


def actions(steps: dict[str, dict]) -> dict[str, str]:
    return {key: step["action"] for key, step in steps.items() if not key.startswith("wait-")}


def test_a_step_before_a_wait_runs_when_a_step_after_it_runs(tmp_path):
    root = repo(tmp_path, {"s.yaml": A_WAIT_B})
    steps = select(root)
    assert actions(steps) == {"a": "run", "b": "run"}
    reason = steps["a"]["reasons"][0]
    assert reason["rule"] == "needed-by"
    assert reason["text"].startswith("needed by selected step 'b' (it follows the wait step at "
                                     ".buildkite/steps/s.yaml:4:5, which waits for every step before it); was: ")
    pipeline = assert_valid(render(root, files="b/x.py\n").stdout)
    assert all("block" not in step for step in pipeline["steps"])  # A is a command step, not behind a block
    assert by_key(pipeline)["a"]["commands"] == ["a"] and "depends_on" not in by_key(pipeline)["a"]
    g = Graph(pipeline)
    assert "a" in g.waits_for("b")
    # the text report and `why` tell the same story
    out = CliRunner().invoke(cli, ["why", "--root", str(root), "--files-from", "-", "--step", "a"],
                             input="b/x.py\n", env={"PIPEGEN_CACHE_DIR": ""}).stdout
    assert "needed by selected step 'b'" in out


def test_nothing_is_pulled_in_where_nothing_after_the_wait_runs(tmp_path):
    root = repo(tmp_path, {"s.yaml": A_WAIT_B})
    assert actions(select(root, files="c/x.py\n")) == {"a": "block", "b": "block"}
    assert actions(select(root, files="a/x.py\n")) == {"a": "run", "b": "block"}


def test_skip_and_omit_pull_in_nothing(tmp_path):
    """A skipped step counts as finished and an omitted one is not there: the step after the wait starts."""
    root = repo(tmp_path, {"s.yaml": A_WAIT_B}, "unselected: skip\n")
    assert actions(select(root)) == {"a": "block", "b": "run"}
    pipeline = assert_valid(render(root, files="b/x.py\n").stdout)
    assert "skip" in by_key(pipeline)["a"] and "skip" not in by_key(pipeline)["b"]
    for mode in ("skip", "omit"):  # the option as the config
        root = repo(tmp_path / mode, {"s.yaml": A_WAIT_B})
        assert actions(select(root, "--unselected", mode)) == {"a": "block", "b": "run"}
        assert "block-a" not in render(root, "--unselected", mode, files="b/x.py\n").stdout
    assert actions(select(root, "--unselected", "block")) == {"a": "run", "b": "run"}


def test_a_step_with_its_own_depends_on_pulls_in_nothing(tmp_path):
    """Buildkite: `depends_on` (even `[]`) takes the place of the implicit dependencies; an input step has none."""
    root = repo(tmp_path, {"s.yaml": """
        steps:
          - {label: A, key: a, commands: [a], source_file_dependencies: [a/]}
          - {label: C, key: c, commands: [c], source_file_dependencies: [c/]}
          - wait
          - {label: B, key: b, commands: [b], source_file_dependencies: [b/], depends_on: []}
          - {label: D, key: d, commands: [d], source_file_dependencies: [d/], depends_on: [c]}
          - {input: Notes, key: notes}
        """})
    assert actions(select(root)) == {"a": "block", "b": "run", "c": "block", "d": "block", "notes": "run"}
    assert actions(select(root, files="d/x.py\n")) == {"a": "block", "b": "block", "c": "run", "d": "run",
                                                       "notes": "run"}
    assert "block-a" in render(root, files="b/x.py\n").stdout


def test_a_wait_in_a_group_holds_back_that_group_only(tmp_path):
    root = repo(tmp_path, {
        "1.yaml": "steps: [{label: X, key: x, commands: [x], source_file_dependencies: [x/]}]\n",
        "2.yaml": """
            group: G
            steps:
              - {label: A, key: a, commands: [a], source_file_dependencies: [a/]}
              - wait
              - {label: B, key: b, commands: [b], source_file_dependencies: [b/]}
            """,
        "3.yaml": "group: H\nsteps: [{label: C, key: c, commands: [c], source_file_dependencies: [c/]}]\n",
    })
    assert actions(select(root)) == {"x": "block", "a": "run", "b": "run", "c": "block"}


def test_a_group_after_a_top_level_wait_waits_for_it_with_every_step_in_it(tmp_path):
    """Even a step of the group with `depends_on: []`: the group waits; a group with its own depends_on does not."""
    root = repo(tmp_path, {
        "1.yaml": """
            steps:
              - {label: X, key: x, commands: [x], source_file_dependencies: [x/]}
              - {label: Z, key: z, commands: [z], source_file_dependencies: [z/]}
              - wait
            """,
        "2.yaml": """
            group: G
            steps:
              - {label: B, key: b, commands: [b], source_file_dependencies: [b/], depends_on: []}
            """,
        "3.yaml": """
            group: {group: H, depends_on: [z]}
            steps:
              - {label: C, key: c, commands: [c], source_file_dependencies: [c/]}
            """,
    })
    steps = select(root)
    assert actions(steps) == {"x": "run", "z": "run", "b": "run", "c": "block"}
    assert "(it follows the wait step at .buildkite/steps/1.yaml:5:5," in steps["x"]["reasons"][0]["text"]
    assert actions(select(root, files="c/x.py\n")) == {"x": "block", "z": "run", "b": "block", "c": "run"}


def test_a_wait_that_may_be_left_out_counts_with_the_one_before_it(tmp_path):
    """A wait with `if` may not be in the build: the step after it then follows the wait before it."""
    steps = """
        steps:
          - {label: A, key: a, commands: [a], source_file_dependencies: [a/]}
          - {block: Approve, key: approve}
          - {wait: ~, depends_on: []%s}
          - {label: B, key: b, commands: [b], source_file_dependencies: [b/]}
        """
    assert actions(select(repo(tmp_path / "1", {"s.yaml": steps % ""}))) == {"a": "block", "approve": "run",
                                                                             "b": "run"}
    root = repo(tmp_path / "2", {"s.yaml": steps % ', if: build.branch == "main"'})
    found = select(root)
    assert actions(found) == {"a": "run", "approve": "run", "b": "run"}
    assert "(it follows the block step at .buildkite/steps/s.yaml:4:5," in found["a"]["reasons"][0]["text"]


def test_every_command_says_and_counts_it(tmp_path):
    root = git_repo(tmp_path / "repo", {".buildkite/pipegen.yaml": "steps: [.buildkite/steps]\n",
                                        ".buildkite/steps/s.yaml": A_WAIT_B, "a/x.py": "", "b/x.py": ""})
    commit_files(root, {"b/x.py": "change\n"})

    def pipegen(*args: str) -> str:
        result = CliRunner().invoke(cli, [args[0], "--root", str(root), *args[1:]], env={"PIPEGEN_CACHE_DIR": ""})
        assert result.exit_code == 0, result.output
        return result.stdout

    said = "3 run (1 of them needed by a step that runs: a declared wait or block it follows)"
    assert pipegen("select", "--committed-only", "--base", "HEAD^").startswith(said)
    assert "runs a too: needed by selected step 'b' (it follows the wait step at" in pipegen("why", "b/x.py")
    assert said.replace("3 run", "3    0    0  a, b, wait-s-2") in pipegen("audit", "--last", "1")
    plan = pipegen("run", "--hardware", "cpu", "--dry-run", "--committed-only", "--base", "HEAD^")
    assert "[1/2] a on default" in plan and "[2/2] b on default" in plan, plan
    plan = pipegen("run", "--hardware", "cpu", "--dry-run", "--committed-only", "--base", "HEAD^", "--unselected", "skip")
    assert "[1/1] b on default" in plan, plan
