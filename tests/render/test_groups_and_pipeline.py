"""A group's own fields (key, depends_on, if, notify), depends_on naming a group, file-level depends_on in
every form, and the pipeline-level env, agents and notify: declared, rendered, validated, run."""

from __future__ import annotations

import functools
import textwrap

from tests import helpers
from tests.helpers import assert_valid, by_key, git_repo

CONFIG = """
steps: [.buildkite/steps]
pipeline:
  env: {LANG: C.UTF-8, GREETING: "hello $USER"}
  agents: {queue: default-q}
  notify: [{email: ci@example.com}]
"""
BUILD = """
group: {group: Build, key: build, if: build.branch != "gh-pages", notify: [{slack: "#ci"}]}
steps:
  - label: Compile
    key: compile
    commands: [make]
    source_file_dependencies: [src/]
  - label: Lint
    key: lint
    commands: [make lint]
    source_file_dependencies: [lint/]
"""
TEST = """
group: {group: Test, key: test, depends_on: [{step: build, allow_failure: true}]}
depends_on: [{step: compile, allow_failure: true}]
steps:
  - label: Unit
    key: unit
    commands: [make test]
    source_file_dependencies: [tests/]
  - label: Report
    key: report
    depends_on: build
    commands: [echo "$GREETING"]
    source_file_dependencies: [report/]
"""


def make(tmp_path, config=CONFIG, build=BUILD, test=TEST):
    return git_repo(tmp_path / "repo", {".buildkite/pipegen.yaml": config, ".buildkite/steps/build.yaml": build,
                                        ".buildkite/steps/test.yaml": test, "src/a.c": "", "lint/x": "",
                                        "tests/t.c": "", "report/r": ""})


invoke = functools.partial(helpers.invoke, files="tests/t.c\n")  # the change most tests here make


def test_group_fields_and_pipeline_fields_are_rendered_as_declared(tmp_path):
    result = invoke(make(tmp_path), "render", "--all")
    assert result.exit_code == 0, result.output
    data = assert_valid(result.stdout)
    assert data["env"] == {"LANG": "C.UTF-8", "GREETING": "hello $$USER"}  # the job's shell gets $USER
    assert data["agents"] == {"queue": "default-q"} and data["notify"] == [{"email": "ci@example.com"}]
    build, test = data["steps"]
    assert {k: v for k, v in build.items() if k != "steps"} == {
        "group": "Build", "key": "build", "if": 'build.branch != "gh-pages"', "notify": [{"slack": "#ci"}]}
    assert test["key"] == "test" and test["depends_on"] == [{"step": "build", "allow_failure": True}]
    steps = by_key(data)
    # file-level depends_on in Buildkite's object form, for the steps without their own
    assert steps["unit"]["depends_on"] == [{"step": "compile", "allow_failure": True}]
    assert steps["report"]["depends_on"] == ["build"]  # a group key, kept as written
    # a step without queue or tags has no agents of its own: the pipeline's agents apply
    assert "agents" not in steps["compile"]


def test_depending_on_a_group_runs_the_whole_group(tmp_path):
    root = make(tmp_path)
    data = assert_valid(invoke(root, "render", "--unselected", "omit", files="report/r\n").stdout)
    assert list(by_key(data)) == ["compile", "lint", "report"]  # 'report' needs the whole Build group
    data = assert_valid(invoke(root, "render", "--unselected", "omit", files="lint/x\n").stdout)
    # Build alone: the Test group is omitted, so nothing names it
    assert [s["group"] for s in data["steps"]] == ["Build"]
    assert list(by_key(data)) == ["lint"]


def test_run_orders_by_group_keys_and_sets_the_pipeline_env(tmp_path):
    root = make(tmp_path)
    result = invoke(root, "run", "--dry-run", "--all", files=None, env={"PIPEGEN_HARDWARE": "cpu"})
    assert result.exit_code == 0, result.output
    order = [line.split()[1] for line in result.stdout.splitlines() if line.startswith("[")]
    assert order.index("report") > max(order.index("compile"), order.index("lint"))
    ran = invoke(root, "run", "--step", "report", files=None, env={"PIPEGEN_HARDWARE": "cpu", "USER": "ci"})
    log = (root / ".pipegen" / "logs" / "report.log").read_text()
    # as on the agent: the pipeline's env under the step's, its `$` reaching the job as declared
    assert ran.exit_code == 0 and log.startswith("hello $USER\n"), ran.output


def test_group_and_pipeline_mistakes_name_file_line_and_fix(tmp_path):
    cases = [
        ({"config": CONFIG.replace("notify:", "notfy:")}, "pipegen.yaml:6", "unknown pipeline field 'notfy'"),
        ({"config": CONFIG.replace("agents: {queue: default-q}", "agents: 3")}, "pipegen.yaml:5",
         "pipeline field 'agents'"),
        ({"build": BUILD.replace("key: build,", "key: build, colour: red,")}, "build.yaml:2",
         "unknown group field 'colour'"),
        ({"test": TEST.replace("[{step: compile, allow_failure: true}]", "[{stp: compile}]")}, "test.yaml:3",
         "the steps file's depends_on"),
        ({"test": TEST.replace("depends_on: build\n", "depends_on: test\n")}, "test.yaml",
         "step 'report' depends on its own group 'test'"),
        ({"test": TEST.replace("key: test,", "key: unit,")}, "test.yaml", "duplicate step key 'unit'"),
        ({"test": TEST.replace("group: Test, key: test", "group: Build, key: test2")}, "test.yaml",
         "group 'Build' has fields of its own in two steps files"),
    ]
    for index, (parts, where, message) in enumerate(cases):
        root = make(tmp_path / str(index), **parts)
        result = invoke(root, "select")
        assert result.exit_code == 2, (message, result.output)
        assert where in result.stderr and message in result.stderr, (message, result.stderr)
        assert "Traceback" not in result.stderr


def test_a_group_named_by_a_string_stays_a_plain_group(tmp_path):
    root = make(tmp_path, build=BUILD.replace(textwrap.dedent(BUILD).splitlines()[1], "group: Build"),
                test=TEST.replace("depends_on: build\n", "depends_on: compile\n").replace(
                    "group: {group: Test, key: test, depends_on: [{step: build, allow_failure: true}]}", "group: Test"))
    data = assert_valid(invoke(root, "render", "--all").stdout)
    assert [sorted(e) for e in data["steps"]] == [["group", "steps"], ["group", "steps"]]
